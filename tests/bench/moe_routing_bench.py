#!/usr/bin/python3
"""What NomicBert v2's expert routing costs at batch 1, against dense layers of the same active
size. Three base-sized demos (12 layers, 768 wide, 12 heads), one server, fp32:
- moe: nomic-embed-text-v2-moe's layout, experts (8, top 2, MLP 3,072 each) in layers 1, 3, ...;
- dense: every layer a plain MLP of 3,072;
- dense2x: every layer a plain MLP of 6,144, the width two experts make.
A layer's routed cost against a dense one of the same active width is
(moe - dense) / ((dense2x - dense) / 2): moe differs from dense in six layers, dense2x in twelve.
One document per request, rounds interleaved, the median of each.

usage: moe_routing_bench.py BUILD_DIR [--words 512] [--rounds 20]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from embedding_client import EmbeddingClient  # noqa: E402
from long_document_bench import THREADS, cpu_isa  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

MODELS = {"moe": ["--moe_every=2", "--intermediate=3072"],
          "dense": ["--moe_every=0", "--intermediate=3072"],
          "dense2x": ["--moe_every=0", "--intermediate=6144"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("--words", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="moe-bench-")
    flags = [f"--threads={THREADS}", "--dtype=fp32"]
    for name, extra in MODELS.items():
        subprocess.run([f"{args.build_dir}/model_store/write_demo_model", f"--out={tmp}/{name}",
                        "--architecture=nomic_bert_moe", "--layers=12", "--hidden=768",
                        "--heads=12", "--max_positions=2048", "--vocab_size=12000", *extra],
                       check=True, capture_output=True)
        flags.append(f"--model={name}={tmp}/{name}")
    seconds = {name: [] for name in MODELS}
    with ServerRunner(f"{args.build_dir}/server/embedding_server", flags) as server:
        client = EmbeddingClient(server.grpc_address)
        text = " ".join(["owls hunt voles in the meadow at night"] * (args.words // 8))
        for _ in range(2):  # warm-up: kernels built per shape
            for name in MODELS:
                tokens = client.embed([text], model=name).documents[0].token_count
        for _ in range(args.rounds):
            for name in MODELS:
                start = time.perf_counter()
                client.embed([text], model=name)
                seconds[name].append(time.perf_counter() - start)
    median = {name: statistics.median(s) * 1000 for name, s in seconds.items()}
    ratio = (median["moe"] - median["dense"]) / ((median["dense2x"] - median["dense"]) / 2)
    print(f"{cpu_isa()}, {THREADS} threads, fp32, one document of {tokens} tokens, "
          f"{args.rounds} interleaved rounds, medians: moe {median['moe']:.1f} ms, dense "
          f"{median['dense']:.1f} ms, dense2x {median['dense2x']:.1f} ms; a routed layer costs "
          f"{ratio:.2f}x a dense layer of the same active width")


if __name__ == "__main__":
    main()
