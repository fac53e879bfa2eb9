#!/usr/bin/python3
"""The commands the README and docs/ show run as shown. Every `sh` and `python` block is marked
on the line before its fence: `<!-- runnable -->`, or `<!-- not runnable: REASON -->` (it needs
a GPU, a cluster, the network, or minutes). Each runnable block runs against a server on the
demo model, named `demo` as ./dev.sh run names it, with the documented addresses (:50051,
:8000, :8080) and `build/` replaced by this run's; shell blocks under `set -euo pipefail` and
curl with --fail-with-body, so an HTTP error fails the block. A failure names the page and line.

usage: documented_commands_test.py REPO_ROOT BUILD_DIR SERVER_BINARY DEMO_MODEL_DIR
       documented_commands_test.py --check-marks PAGE...   (only the marks; no server)
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from server_runner import ServerRunner  # noqa: E402

FENCE = re.compile(r"^```(\w*)\s*$")
RUNNABLE = "<!-- runnable -->"
NOT_RUNNABLE = re.compile(r"^<!-- not runnable: \S.* -->$")
LANGUAGES = ("sh", "python")


def blocks(page):
    """(line of the fence, language, mark, text) of each block of `page`."""
    with open(page) as f:
        lines = f.read().split("\n")
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        mark = lines[i - 1].strip() if i > 0 else ""
        found.append((i + 1, m.group(1), mark, "\n".join(lines[i + 1:end]) + "\n"))
        i = end + 1
    return found


def unmarked(pages):
    """`page:line: ...` for each sh or python block without a valid mark."""
    problems = []
    for page in pages:
        for line, language, mark, _ in blocks(page):
            if language in LANGUAGES and mark != RUNNABLE and not NOT_RUNNABLE.match(mark):
                problems.append(f"{page}:{line}: a {language} block without "
                                f"'{RUNNABLE}' or '<!-- not runnable: REASON -->' above it")
    return problems


def substitute(text, server, build_dir):
    for port, address in (("50051", server.grpc_address), ("8000", server.openai_address),
                          ("8080", server.http_address)):
        text = re.sub(rf"\b(?:localhost|127\.0\.0\.1):{port}\b", address, text)
    return re.sub(r"(?<![\w/.-])build/", build_dir.rstrip("/") + "/", text)


def run_block(language, text, repo, env):
    if language == "sh":
        preamble = ("set -euo pipefail\n"
                    "curl() { command curl --fail-with-body \"$@\"; }\n")
        command = ["bash", "-c", preamble + text]
    else:
        command = ["/usr/bin/python3", "-c", text]
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True,
                          timeout=120)


def main(argv):
    if argv[1] == "--check-marks":
        problems = unmarked(argv[2:])
        print("\n".join(problems + [f"{len(argv) - 2} pages, {len(problems)} unmarked blocks"]))
        return 1 if problems else 0
    repo, build_dir, binary, model = argv[1:5]
    pages = [os.path.join(repo, "README.md")] + sorted(
        os.path.join(repo, "docs", p) for p in os.listdir(os.path.join(repo, "docs"))
        if p.endswith(".md"))
    problems = unmarked(pages)
    ran = 0
    batch_dir = tempfile.mkdtemp(prefix="documented-batches-")
    with ServerRunner(binary, [f"--model=demo={model}", "--openai-listen=127.0.0.1:0",
                               f"--batch-dir={batch_dir}"]) as server:
        env = dict(os.environ, EMBEDCTL_ADDRESS=server.grpc_address)
        for page in pages:
            for line, language, mark, text in blocks(page):
                if language not in LANGUAGES or mark != RUNNABLE:
                    continue
                where = f"{os.path.relpath(page, repo)}:{line}"
                start = time.monotonic()
                done = run_block(language, substitute(text, server, build_dir), repo, env)
                took = time.monotonic() - start
                ran += 1
                print(f"{where}: {language} block, exit {done.returncode}, {took:.2f} s")
                if done.returncode != 0:
                    problems.append(f"{where}: exit {done.returncode}\n{done.stdout[-2000:]}"
                                    f"{done.stderr[-2000:]}")
    print("\n".join(problems))
    print(f"{len(pages)} pages, {ran} runnable blocks run, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
