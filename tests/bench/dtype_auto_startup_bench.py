#!/usr/bin/python3
"""What --dtype=auto costs at start-up (target P8 of issue 24): seconds from exec to "ready"
and idle resident memory, for each named dtype and for auto, first with an empty choice cache
(it measures) and then with the choice it cached (it builds only that dtype). Each round starts
every configuration once, in turn, so host drift spreads over all of them; figures are
medians over the rounds, and ratios compare auto with the dtype it picked.

usage: dtype_auto_startup_bench.py SERVER_BINARY MODEL_DIR [--rounds 3]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bge_m3_outputs_bench import isa  # noqa: E402
from long_document_bench import ServerRunner, rss_kib  # noqa: E402


def start(binary, model_dir, dtype, cache_dir):
    """(seconds to ready, idle VmRSS MiB, the log's dtype lines)."""
    began = time.monotonic()
    server = ServerRunner(binary, [f"--model=m={model_dir}", f"--dtype={dtype}",
                                   f"--dtype-cache-dir={cache_dir}", "--log-requests=off"],
                          timeout=900)
    ready = time.monotonic() - began
    time.sleep(2)  # idle: whatever the load left behind
    rss = rss_kib(server.process.pid, "VmRSS") / 1024
    server.stop()
    log = [l for l in server.stderr_text.splitlines() + [""] if "--dtype=auto" in l]
    return ready, rss, log


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("model_dir")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"CPU: {isa()}")
    figures = {}
    chosen_lines = []
    for _ in range(args.rounds):
        cache = tempfile.mkdtemp(prefix="dtype-cache-")
        try:
            for name, dtype in (("fp32", "fp32"), ("bf16", "bf16"), ("int8", "int8"),
                                ("auto, measuring", "auto"), ("auto, cached", "auto")):
                ready, rss, log = start(args.server, args.model_dir, dtype,
                                        cache if dtype == "auto" else "off")
                figures.setdefault(name, []).append((ready, rss))
                chosen_lines += [l for l in log if "chose" in l]
        finally:
            shutil.rmtree(cache)
    for line in chosen_lines[:2]:
        print(line.split("embedding_server: ")[-1])
    picked = chosen_lines[-1].split("--dtype=auto chose ")[1].split()[0]
    median = {k: (statistics.median(r for r, _ in v), statistics.median(m for _, m in v))
              for k, v in figures.items()}
    print(f"{'':18} {'ready s':>8} {'idle MiB':>9}")
    for name, (ready, rss) in median.items():
        print(f"{name:18} {ready:8.2f} {rss:9.0f}")
    for name in ("auto, measuring", "auto, cached"):
        print(f"{name} vs {picked}: start-up {median[name][0] / median[picked][0]:.2f}x, "
              f"idle memory {median[name][1] / median[picked][1]:.2f}x")


if __name__ == "__main__":
    main()
