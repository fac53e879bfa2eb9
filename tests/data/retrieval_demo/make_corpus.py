#!/usr/bin/python3
"""Writes a corpus for `embedctl calibrate` / `eval`, one document per line.

  make_corpus.py wordnet OUT   WordNet's noun glosses (Debian's pinned wordnet-base), grouped
                               by lexicographer file (animals, foods, artifacts, ...) into
                               documents of about 700 words: a fixed corpus for the tests.
  make_corpus.py stdlib OUT    The docstrings of Python's standard library, one module per
                               document: text the demo model never saw (held out).
"""
import ast
import glob
import sys


def wordnet(words_per_document=700):
    groups = {}
    with open("/usr/share/wordnet/data.noun", encoding="utf-8") as f:
        for line in f:
            if line.startswith("  ") or " | " not in line:
                continue
            fields, gloss = line.split(" | ", 1)
            groups.setdefault(fields.split()[1], []).append(gloss.strip())
    documents = []
    for lexfile in sorted(groups):
        words = " ".join(groups[lexfile]).split()
        for start in range(0, len(words) - words_per_document + 1, words_per_document):
            documents.append(" ".join(words[start:start + words_per_document]))
    # Interleave the topics (every 7th document first, then the next...), so any prefix of the
    # corpus mixes them.
    return [documents[i] for offset in range(7) for i in range(offset, len(documents), 7)]


def stdlib():
    documents = []
    for path in sorted(glob.glob("/usr/lib/python3*/*.py")):
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError):
            continue
        text = " ".join((ast.get_docstring(node) or "").replace("\n", " ")
                        for node in ast.walk(tree)
                        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)))
        text = " ".join(text.split())
        if len(text.split()) >= 40:
            documents.append(text)
    return documents


if __name__ == "__main__":
    kind, out = sys.argv[1], sys.argv[2]
    documents = {"wordnet": wordnet, "stdlib": stdlib}[kind]()
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(documents) + "\n")
    print(f"{out}: {len(documents)} documents", file=sys.stderr)
