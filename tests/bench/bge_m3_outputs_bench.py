#!/usr/bin/python3
"""What bge-m3's sparse and multi-vector outputs cost beside dense alone: seconds and response
bytes per 1,000 tokens on a base-width bge-m3-shaped model (the XLM-R demo writer at 12 layers
and 768 wide, 512-token windows, with both heads). The configurations run interleaved, round
after round, and each ratio is taken within a round, so the host's drift cancels.

usage: bge_m3_outputs_bench.py SERVER_BINARY WRITE_DEMO_MODEL [--rounds=N] [--documents=N]
"""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from bge_m3_model import make_heads  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402
import torch  # noqa: E402

CONFIGS = [  # name, outputs, multi-vector encoding
    ("dense", ["dense"], None),
    ("dense+sparse", ["dense", "sparse"], None),
    ("dense+multi_vector fp32", ["dense", "multi_vector"], None),
    ("dense+multi_vector fp16", ["dense", "multi_vector"], "float16"),
    ("dense+multi_vector int8", ["dense", "multi_vector"], "int8"),
    ("all three fp32", ["dense", "sparse", "multi_vector"], None),
]


def isa():
    flags = set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    names = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
             if f in flags]
    model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                 if l.startswith("model name"))
    return f"{model}; {' '.join(names)}; {os.cpu_count()} CPUs"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("writer")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--documents", type=int, default=8)
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="bge-m3-bench-")
    try:
        model = os.path.join(tmp, "m3")
        subprocess.run([args.writer, f"--out={model}", "--architecture=xlm-roberta", "--layers=12",
                        "--hidden=768", "--heads=12", "--max_positions=514", "--pooling=cls"],
                       check=True, capture_output=True)
        sparse, colbert = make_heads(768)
        torch.save(sparse.state_dict(), os.path.join(model, "sparse_linear.pt"))
        torch.save(colbert.state_dict(), os.path.join(model, "colbert_linear.pt"))
        with ServerRunner(args.server, [f"--model=m3={model}"]) as server:
            client = EmbeddingClient(server.grpc_address, timeout=600)
            rng = random.Random(5)
            words = [w.strip() for w in open("/usr/share/dict/words") if w.strip().isalpha()]
            # About 450 tokens each: one window, nothing truncated.
            docs = [" ".join(rng.choice(words) for _ in range(160)) for _ in range(args.documents)]
            request = dict(model="m3", strategy="LONG_TEXT_STRATEGY_TRUNCATE")
            client.embed(docs, outputs=["dense", "sparse", "multi_vector"], **request)  # warm-up
            seconds = {name: [] for name, _, _ in CONFIGS}
            ratios = {name: [] for name, _, _ in CONFIGS}
            sizes, tokens = {}, 0
            for _ in range(args.rounds):
                this_round = {}
                for name, outputs, encoding in CONFIGS:
                    start = time.perf_counter()
                    response = client.embed(docs, outputs=outputs,
                                            multi_vector_encoding=encoding, **request)
                    this_round[name] = time.perf_counter() - start
                    seconds[name].append(this_round[name])
                    sizes[name] = response.ByteSize()
                    tokens = response.usage.sequence_tokens  # encoded, special tokens included
                for name in this_round:
                    ratios[name].append(this_round[name] / this_round["dense"])
        print(f"CPU: {isa()}")
        print(f"{args.documents} documents, {tokens} tokens encoded, {args.rounds} interleaved "
              f"rounds; base-width bge-m3-shaped model (12 layers, 768 wide, heads 768 -> 1 and "
              f"768 -> 768)")
        print(f"{'outputs':26} {'s / 1k tokens':>14} {'x dense':>9} {'bytes / 1k tokens':>18}")
        for name, _, _ in CONFIGS:
            per_k = statistics.median(seconds[name]) / tokens * 1000
            print(f"{name:26} {per_k:14.4f} {statistics.median(ratios[name]):9.3f} "
                  f"{sizes[name] / tokens * 1000:18.0f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
