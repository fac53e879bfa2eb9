#!/usr/bin/env python3
"""Fails when a function in the given folders is longer than --max lines, counting from the
first line of its signature (a constructor's initialiser list included) to its closing brace.
Functions are found by their braces: a brace block at namespace or class level that follows a
closing parenthesis (or an initialiser list) is a function body; lambdas count with the
function they sit in. Comments, strings and character literals are skipped.

  function_lengths.py --max=80 server/
"""
import argparse
import pathlib
import re
import sys


def strip_code(text):
    """The text with comments, strings and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, last line) of each function body in `path`."""
    code = strip_code(path.read_text())
    stack = []  # for each open brace: "scope" (namespace, class, enum...) or a function start
    statement_start = 0  # where the text since the last statement at scope level starts
    found = []
    for i, c in enumerate(code):
        in_function = any(kind in ("function", "block") for kind, _ in stack)
        if c == "{":
            if in_function:
                stack.append(("block", None))
                continue
            head = code[statement_start:i]
            # A brace inside a constructor's initialiser list (`Add({})`, `x_{1}`) is not its body.
            in_init = stack and stack[-1][0] == "init"
            if in_init or (re.search(r"\)\s*:(?!:)", head) and re.search(r"[(,{\w]\s*$", head)):
                stack.append(("init", None))
                continue
            squashed = " ".join(head.split())
            is_function = bool(
                re.search(r"\)\s*(const|override|noexcept|final|mutable|->\s*[\w:<>,*& ]+|\s)*$", head)
                or re.search(r"\)\s*:\s*[\s\S]*[)}]\s*$", head) and not re.match(
                    r"(struct|class|enum|union)\b", squashed))
            if is_function and not re.match(r"(namespace|extern)\b", squashed):
                first = code.count("\n", 0, statement_start + len(head) - len(head.lstrip())) + 1
                name = re.findall(r"([\w:~]+)\s*\(", head)
                stack.append(("function", (name[0] if name else "?", first)))
            else:
                stack.append(("scope", None))
            statement_start = i + 1
        elif c == "}":
            kind, info = stack.pop() if stack else ("scope", None)
            if kind == "function":
                found.append((info[0], info[1], code.count("\n", 0, i) + 1))
            if kind != "init" and all(k == "scope" for k, _ in stack):
                statement_start = i + 1
        elif c == ";" and not in_function:
            statement_start = i + 1
        elif c == ":" and not in_function and re.search(r"\b(public|private|protected)\s*$", code[statement_start:i]):
            statement_start = i + 1
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max", type=int, default=80)
    parser.add_argument("folders", nargs="+")
    args = parser.parse_args()
    failures = []
    count = 0
    for folder in args.folders:
        for path in sorted(pathlib.Path(folder).rglob("*")):
            if path.suffix not in (".cc", ".h"):
                continue
            for name, first, last in functions(path):
                count += 1
                if last - first + 1 > args.max:
                    failures.append(f"{path}:{first}: {name} is {last - first + 1} lines")
    for failure in failures:
        print(failure)
    print(f"{count} functions, {len(failures)} over {args.max} lines")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
