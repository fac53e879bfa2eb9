#!/usr/bin/python3
"""Two server binaries, A and B, on the long-document harness's corpora, interleaved: A, B,
B, A, A, B, ... so that the host's drift (up to 1.5x within minutes on these shared machines)
falls on both alike. For a kernel change, A is a build from before it and B from after.

Each round serves one binary at --dtype and runs, through embedctl's load generator, the
harness's mixed corpus (log-uniform 16-4,096 tokens, CHUNK_MEAN, concurrency 4), its long
documents, int8_peer_bench.py's short ones (8-330 tokens, one request at a time), and one
document of each of --lengths tokens sent 20 times, one request at a time.
Prints per round tokens/s of each binary, and the median of B/A over the rounds with the
CPU's ISA.

usage: binary_ab_bench.py BUILD_DIR BINARY_A BINARY_B MODEL_DIR [--dtype int8] [--rounds 6]
       [--mixed 40] [--long 8192] [--short 0] [--lengths 14,100,262]
"""
import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from long_document_bench import (THREADS, EmbeddingClient, ServerRunner, cpu_isa,  # noqa: E402
                                 make_documents, run_service, windows)


def measure(args, binary, corpora, window, workdir):
    """Tokens/s (every token of every window, special ones included) of each corpus."""
    flags = [f"--model=m={args.model_dir}", f"--dtype={args.dtype}", f"--threads={THREADS}",
             "--dtype-cache-dir=off"]
    out = {}
    with ServerRunner(binary, flags) as server:
        client = EmbeddingClient(server.grpc_address, timeout=3600)
        for name, (docs, concurrency) in corpora.items():
            tokens = sum(len(s) for s in windows(client, docs, window))
            out[name] = tokens / run_service(args.build_dir, server, docs, workdir,
                                             concurrency)["seconds"]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("binary_a")
    parser.add_argument("binary_b")
    parser.add_argument("model_dir")
    parser.add_argument("--dtype", default="int8")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--mixed", type=int, default=40)
    parser.add_argument("--long", default="8192")
    parser.add_argument("--short", type=int, default=0)
    parser.add_argument("--lengths", default="")
    args = parser.parse_args()
    config = json.load(open(f"{args.model_dir}/config.json"))
    window = config["max_position_embeddings"] - 2
    rng = random.Random(7)  # the harness's mixed lengths
    mixed_lengths = [int(math.exp(rng.uniform(math.log(16), math.log(4096))))
                     for _ in range(args.mixed)]
    workdir = tempfile.mkdtemp(prefix="binary_ab_bench.")
    # The documents once, tokenised by binary A's server (both share the tokenizer).
    with ServerRunner(args.binary_a, [f"--model=m={args.model_dir}", "--dtype=fp32"]) as server:
        client = EmbeddingClient(server.grpc_address, timeout=3600)
        corpora = {}
        if mixed_lengths:
            corpora["mixed"] = (make_documents(client, mixed_lengths, random.Random(0)), 4)
        if args.short:
            short_rng = random.Random(8)
            corpora["short"] = (make_documents(
                client, [short_rng.randint(8, 330) for _ in range(args.short)], short_rng), 1)
        for n in [int(x) for x in args.lengths.split(",") if x]:
            corpora[f"length_{n}"] = (make_documents(client, [n], random.Random(n)) * 20, 1)
        for n in [int(x) for x in args.long.split(",") if x]:
            corpora[f"long_{n}"] = (make_documents(client, [n], random.Random(n)), 1)

    ratios = {name: [] for name in corpora}
    for r in range(args.rounds):
        order = ["a", "b"] if r % 2 == 0 else ["b", "a"]
        got = {side: measure(args, args.binary_a if side == "a" else args.binary_b, corpora,
                             window, workdir) for side in order}
        for name in corpora:
            ratios[name].append(got["b"][name] / got["a"][name])
            print(f"round {r} {name}: A {got['a'][name]:.0f} tokens/s, B {got['b'][name]:.0f}, "
                  f"B/A {ratios[name][-1]:.3f}", file=sys.stderr)
    cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
               if l.startswith("model name"))
    for name, values in ratios.items():
        print(f"{cpu} ({cpu_isa()}), {THREADS} threads, --dtype={args.dtype}, {name}: B/A median "
              f"{statistics.median(values):.3f} over {len(values)} rounds "
              f"(min {min(values):.3f}, max {max(values):.3f})")


if __name__ == "__main__":
    main()
