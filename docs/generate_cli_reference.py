#!/usr/bin/python3
"""Writes docs/cli.md from the binaries' own --helpfull, so the reference cannot drift from them:
every flag the project defines (absl's own flags left out), with its environment variable, its
default and its meaning.

usage: generate_cli_reference.py EMBEDDING_SERVER EMBEDCTL [--check docs/cli.md]
  Without --check it prints the page; with it, it fails naming each flag that differs.
"""
import re
import subprocess
import sys

# Where each binary's flags live in the tree, and the prefix of their environment fallbacks.
BINARIES = [
    ("embedding_server", "server/app/server_options.cc", "EMBEDDING",
     "The server. Every flag falls back to the environment variable beside it (the command line "
     "wins), and `-` and `_` are the same in flag names."),
    ("embedctl", "client/embedctl/embedctl_main.cc", "EMBEDCTL",
     "The command-line client: `embedctl embed|tokenize|models|health|collapse-report|calibrate|"
     "eval|bench|pull [flags]`. Every flag falls back to the environment variable beside it."),
]


def flags_of(binary, source):
    """[(name, help, default)] of the flags `binary` defines in `source`, from --helpfull."""
    text = subprocess.run([binary, "--helpfull"], capture_output=True, text=True).stdout
    flags, section = [], None
    for line in text.splitlines():
        if m := re.match(r"\s*Flags from (\S+):$", line):
            section = m.group(1)
        elif section and section.endswith(source) and line.startswith("    --"):
            flags.append(line.strip())
        elif section and section.endswith(source) and line.startswith("      ") and flags:
            flags[-1] += " " + line.strip()
    out = []
    for entry in flags:
        m = re.fullmatch(r"--(\w+) \((.*)\); default: (.*);", entry, re.S)
        assert m, f"{binary}: cannot read the help entry {entry!r}"
        out.append(m.groups())
    assert out, f"{binary}: no flags from {source} in --helpfull"
    return out


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def page(server, embedctl):
    lines = ["# Command-line reference", "",
             "Generated from the binaries' `--helpfull` by `docs/generate_cli_reference.py` "
             "(`build/server/embedding_server` and `build/client/embedctl`); the suite fails "
             "when a flag changes without this page (`ctest -R cli_reference`). Regenerate "
             "with:", "",
             "<!-- not runnable: rewrites docs/cli.md; the suite runs it with --check -->",
             "```sh",
             "docs/generate_cli_reference.py build/server/embedding_server build/client/embedctl"
             " > docs/cli.md",
             "```", ""]
    for (name, source, prefix, about), binary in zip(BINARIES, (server, embedctl)):
        lines += [f"## {name}", "", about, "",
                  "| flag | environment | default | meaning |", "|---|---|---|---|"]
        for flag, help_text, default in flags_of(binary, source):
            named = re.search(rf"\benv ({prefix}_\w+)", help_text)
            env = named.group(1) if named else f"{prefix}_{flag.upper()}"
            shown = default if default not in ('""', "") else "(empty)"
            lines.append(f"| `--{flag.replace('_', '-')}` | `{env}` | `{cell(shown)}` | "
                         f"{cell(help_text)} |")
        lines.append("")
    return "\n".join(lines)


def main(argv):
    server, embedctl = argv[1:3]
    text = page(server, embedctl)
    if len(argv) > 3 and argv[3] == "--check":
        with open(argv[4]) as f:
            written = f.read()
        if written != text:
            old, new = set(written.splitlines()), set(text.splitlines())
            for line in sorted(old - new):
                print(f"{argv[4]} has, the binaries do not: {line}", file=sys.stderr)
            for line in sorted(new - old):
                print(f"the binaries have, {argv[4]} does not: {line}", file=sys.stderr)
            print(f"{argv[4]} is stale: regenerate it (see its first lines)", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
