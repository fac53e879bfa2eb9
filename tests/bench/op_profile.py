#!/usr/bin/python3
"""Where a forward pass spends its time, op by op: runs encoder_profile (one forward under
LibTorch's profiler) and prints each op's self time (its time less the ops it called), the
largest first, with its share of the pass.

usage: op_profile.py BUILD_DIR MODEL_DIR DTYPE [BATCH] [LENGTH]
"""
import collections
import json
import os
import subprocess
import sys
import tempfile


def self_times(events):
    """Self time per op name: each event's duration less its direct children's."""
    totals, calls = collections.Counter(), collections.Counter()
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            by_thread[e["tid"]].append(e)
    for spans in by_thread.values():
        spans.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [end, name, child time]
        for e in spans + [None]:
            while stack and (e is None or e["ts"] >= stack[-1][0]):
                end, name, children, dur = stack.pop()
                totals[name] += dur - children
                calls[name] += 1
                if stack:
                    stack[-1][2] += dur
            if e is not None:
                stack.append([e["ts"] + e["dur"], e["name"], 0.0, e["dur"]])
    return totals, calls


def main():
    build, model, dtype = sys.argv[1:4]
    batch = sys.argv[4] if len(sys.argv) > 4 else "8"
    length = sys.argv[5] if len(sys.argv) > 5 else "512"
    trace = os.path.join(tempfile.mkdtemp(), "trace.json")
    subprocess.run([f"{build}/tests/encoder_profile", model, dtype, batch, length, trace],
                   check=True)
    totals, calls = self_times(json.load(open(trace)))
    whole = sum(totals.values())
    print(f"{model} {dtype} {batch}x{length}: {whole / 1e3:.1f} ms in ops")
    print(f"{'op':36s} {'ms':>9s} {'share':>7s} {'calls':>7s}")
    for name, micros in totals.most_common(15):
        print(f"{name:36s} {micros / 1e3:9.1f} {micros / whole:7.1%} {calls[name]:7d}")


if __name__ == "__main__":
    main()
