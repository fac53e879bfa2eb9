#!/usr/bin/python3
"""Checks the C++ byte-level BPE against Hugging Face's own tokenizers (the Rust library through
npm) on tokenizer.json files shaped as the models that use BPE ship them.

Hugging Face's trainer (train_bpe.js) learns a byte-level BPE on text from this machine; its
vocabulary and merges are then written into the layouts of ModernBERT (NFC, ByteLevel with
GPT-2's regex, added runs of spaces, [MASK] with lstrip), Qwen (a Split regex with
case-insensitive contractions, then ByteLevel without its regex), Llama 3 (ignore_merges, a
ByteLevel post-processor trimming offsets), RoBERTa (a prefix space, RobertaProcessing), the
legacy "a b" merge spelling, every Split behaviour, added tokens matched after normalization,
single_word and rstrip, and a BPE with byte fallback and a fused unknown token. For every
variant and text, ids and code-point offsets must equal Hugging Face's.

usage: compare_bpe_tokenizers.py TOKENIZE_TEXTS_BINARY PEER_JS TRAIN_JS
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

from tokenizer_comparison import EXTRA_TEXTS, TEXTS, compare_cases, training_corpus, verdict

BPE_TEXTS = [
    "I'm sure they'll say WE'RE done, can't you? It's 'quoted' and DON'T.",
    "digits 1234567890 3.14159 2024-12-03 ١٢٣ ４５６",
    "runs of spaces:  two,   three,        eight, and\n\n\nnewlines\r\n\ttabs\t\there",
    "[MASK] at start, then   [MASK] after spaces, and x[MASK]y glued",
    "addresses |||IP_ADDRESS||| and <|endoftext|> and |||EMAIL_ADDRESS|||",
    "Hello World, hello world, HELLO WORLD",
    "ok okay ok_ (ok) ok. xok",
    "keep   rstrip<sep>   after",
    "emoji 😀😃 🧑🏽‍💻 and CJK 漢字かなカナ한글 and Devanagari हिन्दी",
    "code: def f(x):\n    return x ** 2  # squared\n",
    "\u00a0nbsp\u2003em space\u3000ideographic \u200bzero width",
]

GPT2_ADDED = ["<|endoftext|>"]
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
                r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_alphabet():
    """GPT-2's byte-to-character table, written out independently of the C++ one."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def added(token_id, content, special=True, **flags):
    entry = {"id": token_id, "content": content, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": not special, "special": special}
    entry.update(flags)
    return entry


def template(prefix, suffix, vocab):
    special = lambda name: {"SpecialToken": {"id": name, "type_id": 0}}
    single = ([special(t) for t in prefix] + [{"Sequence": {"id": "A", "type_id": 0}}] +
              [special(t) for t in suffix])
    return {"type": "TemplateProcessing", "single": single,
            "pair": single + [{"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]}
                               for t in prefix + suffix}}


def with_tokens(trained, contents):
    """The trained file with every byte character and `contents` appended to the vocabulary."""
    result = copy.deepcopy(trained)
    vocab = result["model"]["vocab"]
    for token in byte_alphabet() + contents:
        vocab.setdefault(token, len(vocab))
    return result


def modernbert(trained):
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "<|endoftext|>"]
    plain = ["|||IP_ADDRESS|||", "|||EMAIL_ADDRESS|||"] + [" " * n for n in range(2, 25)]
    result = with_tokens(trained, specials + plain)
    vocab = result["model"]["vocab"]
    result["added_tokens"] = (
        [added(vocab[t], t, lstrip=(t == "[MASK]")) for t in specials] +
        [added(vocab[t], t, special=False) for t in plain])
    result["normalizer"] = {"type": "NFC"}
    result["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False,
                               "trim_offsets": True, "use_regex": True}
    result["post_processor"] = template(["[CLS]"], ["[SEP]"], vocab)
    return result


def split_then_bytes(trained, pattern):
    result = with_tokens(trained, GPT2_ADDED)
    result["added_tokens"] = [added(result["model"]["vocab"][t], t) for t in GPT2_ADDED]
    result["normalizer"] = {"type": "NFC"}
    result["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
         "use_regex": False}]}
    return result


def llama3(trained):
    result = split_then_bytes(trained, LLAMA3_PATTERN)
    result["normalizer"] = None
    result["model"]["ignore_merges"] = True
    # Whole words in the vocabulary that merges alone would never reach.
    for word in ["Ġqu", "Ġmyth", "ĠWORLD", "unreachable"]:
        result["model"]["vocab"].setdefault(word, len(result["model"]["vocab"]))
    result["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        template(["<|endoftext|>"], [], result["model"]["vocab"])]}
    return result


def roberta(trained):
    result = with_tokens(trained, ["<s>", "</s>", "<mask>"])
    vocab = result["model"]["vocab"]
    result["added_tokens"] = [added(vocab["<s>"], "<s>"), added(vocab["</s>"], "</s>"),
                              added(vocab["<mask>"], "<mask>", lstrip=True)]
    result["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True,
                               "trim_offsets": True, "use_regex": True}
    result["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", vocab["</s>"]],
                                "cls": ["<s>", vocab["<s>"]], "trim_offsets": True,
                                "add_prefix_space": True}
    return result


def split_behaviour(trained, behavior, pattern, invert=False):
    result = with_tokens(trained, [])
    result["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
         "use_regex": False}]}
    return result


def normalized_added(trained):
    plain = ["Hello World", "ok", "<sep>"]
    result = with_tokens(trained, plain)
    vocab = result["model"]["vocab"]
    # Matched in normalized text, so its own content is lowercased before matching.
    result["added_tokens"] = [added(vocab["Hello World"], "Hello World", special=False),
                              added(vocab["ok"], "ok", special=False, single_word=True),
                              added(vocab["<sep>"], "<sep>", rstrip=True, lstrip=True)]
    result["normalizer"] = {"type": "Sequence",
                            "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]}
    result["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False,
                               "trim_offsets": False, "use_regex": True}
    return result


def byte_fallback(trained, fallback):
    """A BPE over plain characters (as Llama 2 and Mistral's are): <0xNN> byte tokens when
    `fallback`, else unknown characters fused into one <unk>."""
    result = copy.deepcopy(trained)
    vocab = result["model"]["vocab"]
    for token in ["<unk>"] + [f"<0x{b:02X}>" for b in range(256)]:
        vocab.setdefault(token, len(vocab))
    result["model"].update(unk_token="<unk>", byte_fallback=fallback, fuse_unk=not fallback)
    result["pre_tokenizer"] = {"type": "Metaspace", "replacement": "Ġ",
                               "prepend_scheme": "first", "split": True}
    return result


# Without the byte alphabet, bytes never seen in training are dropped. Hugging Face then counts
# offsets by the lengths of the tokens kept, so every later token's offsets shift back by the
# dropped bytes (its BPE lays offsets end to end); ours keep each token's true place, and this
# case compares ids only.
AS_TRAINED = "as trained (bytes never seen are dropped; ids only)"


def variants(trained):
    legacy = modernbert(trained)
    legacy["model"]["merges"] = [" ".join(pair) for pair in legacy["model"]["merges"]]
    return {
        "modernbert-shaped (NFC, ByteLevel regex, runs of spaces, [MASK] lstrip)":
            modernbert(trained),
        "merges as \"a b\" strings": legacy,
        AS_TRAINED: trained,
        "qwen-shaped (Split regex, ByteLevel without regex)": split_then_bytes(trained,
                                                                               QWEN_PATTERN),
        "llama3-shaped (ignore_merges, ByteLevel post-processor)": llama3(trained),
        "roberta-shaped (prefix space, trimmed offsets)": roberta(trained),
        "split MergedWithPrevious": split_behaviour(trained, "MergedWithPrevious",
                                                    {"String": " "}),
        "split MergedWithNext": split_behaviour(trained, "MergedWithNext", {"Regex": r"\s+"}),
        "split Contiguous inverted": split_behaviour(trained, "Contiguous", {"Regex": r"\p{N}"},
                                                     invert=True),
        "split Removed": split_behaviour(trained, "Removed", {"Regex": r"[\p{P}\s]"}),
        "added tokens after NFKC+Lowercase, single_word, lstrip+rstrip": normalized_added(trained),
        "byte fallback": byte_fallback(trained, True),
        "unknown characters fused": byte_fallback(trained, False),
    }


def speed(binary, peer, workdir, path):
    """Seconds for both libraries on one long multi-script document (informative)."""
    long_text = " ".join((TEXTS + BPE_TEXTS) * 400)
    texts_path = os.path.join(workdir, "long.json")
    with open(texts_path, "w") as f:
        json.dump([long_text], f)
    times = {}
    for name, command in (("ours", [binary, os.path.dirname(path)]),
                          ("Hugging Face", ["node", peer, path, texts_path])):
        start = time.monotonic()
        subprocess.run(command, stdin=open(texts_path), capture_output=True, check=True)
        times[name] = time.monotonic() - start
    return len(long_text.encode()), times


def main():
    binary, peer, train_js = sys.argv[1:4]
    workdir = tempfile.mkdtemp(prefix="compare-bpe-")
    corpus = os.path.join(workdir, "corpus.txt")
    training_corpus(corpus)
    trained_path = os.path.join(workdir, "trained.json")
    subprocess.run(["node", train_js, trained_path, corpus], check=True)
    trained = json.load(open(trained_path))
    merges = len(trained["model"]["merges"])
    texts = TEXTS + EXTRA_TEXTS + BPE_TEXTS
    checked, failures = compare_cases(binary, peer, workdir, variants(trained), texts,
                                        ids_only=(AS_TRAINED,))
    size, times = speed(binary, peer, workdir, os.path.join(workdir, "case0", "tokenizer.json"))
    print(f"{merges} merges learned; one {size / 1e6:.1f} MB document, whole process: "
          + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in times.items()))
    print(f"{checked} tokenizations checked, {failures} mismatches")
    return verdict(failures or merges < 5000)


if __name__ == "__main__":
    sys.exit(main())
