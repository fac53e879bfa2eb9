#!/usr/bin/python3
"""Where a forward pass spends its time, op by op: runs encoder_profile (one forward under
LibTorch's profiler) and prints each op's self time (its time less the ops it called), the
largest first, with its share of the pass. Then attention's rate against this machine's fp32
GEMM peak, measured in the same run (the host's speed drifts by up to 1.5x within minutes).

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
    attention_rate(model, int(batch), int(length), totals["embedding::attention"])


def attention_rate(model, batch, length, micros):
    """Attention's GFLOP/s (Q K^T and P V: 4 L^2 hidden per layer and sequence) beside the
    fp32 GEMM peak of long_document_bench.py, measured now."""
    with open(os.path.join(model, "config.json")) as f:
        config = json.load(f)
    # BERT's names, NomicBert's or T5's (whose attention width is heads x d_kv).
    hidden = config.get("hidden_size") or config.get("n_embd") or config["num_heads"] * config["d_kv"]
    layers = config.get("num_hidden_layers") or config.get("n_layer") or config["num_layers"]
    flop = 4 * length ** 2 * hidden * layers * batch
    rate = flop / micros / 1e3
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from long_document_bench import gemm_peak
    import torch
    torch.set_num_threads(2)  # the server's intra-op threads in every benchmark here
    peak = gemm_peak(torch.float32)
    print(f"attention: {flop / 1e9:.0f} GFLOP in {micros / 1e3:.0f} ms = {rate:.0f} GFLOP/s; "
          f"fp32 GEMM peak now {peak:.0f} GFLOP/s; attention at {rate / peak:.0%} of it")


if __name__ == "__main__":
    main()
