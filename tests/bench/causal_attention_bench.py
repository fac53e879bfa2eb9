#!/usr/bin/python3
"""What a causal mask saves: one long window through a decoder (encode_ids, one forward each),
causal as the checkpoint is and bidirectional (the same weights with is_causal: false),
interleaved over rounds; the ratio of their medians. On a narrow model (the Qwen3-shaped test
fixture: hidden 64) attention is most of the forward, so the ratio shows the attention work a
causal layer skips (keys past a query block are never read).

usage: causal_attention_bench.py BUILD_DIR MODEL_DIR [--tokens 8190] [--rounds 3]
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from long_document_bench import cpu_isa  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("model_dir")
    parser.add_argument("--tokens", type=int, default=8190)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bidirectional = tempfile.mkdtemp(prefix="bidirectional-")
    shutil.copytree(args.model_dir, bidirectional, dirs_exist_ok=True)
    config = json.load(open(f"{args.model_dir}/config.json"))
    json.dump(dict(config, is_causal=False), open(f"{bidirectional}/config.json", "w"))
    rng = random.Random(1)
    ids = [rng.randrange(5, config["vocab_size"]) for _ in range(args.tokens)]
    binary = f"{args.build_dir}/tests/encode_ids"

    def run(model, sequence):
        request = json.dumps({"sequences": [sequence], "temperatures": [1.0],
                              "pooling": "last_token"})
        began = time.monotonic()
        subprocess.run([binary, model], input=request, capture_output=True, text=True,
                       check=True)
        return time.monotonic() - began

    # Each run less a one-token run of the same model: the forward without process start,
    # load and output.
    seconds = {"causal": [], "bidirectional": []}
    for _ in range(args.rounds):
        for name, model in (("causal", args.model_dir), ("bidirectional", bidirectional)):
            seconds[name].append(run(model, ids) - run(model, ids[:1]))
    causal, full = statistics.median(seconds["causal"]), statistics.median(seconds["bidirectional"])
    print(f"{cpu_isa()}, one window of {args.tokens} tokens, {args.rounds} rounds: causal "
          f"{causal:.2f} s, bidirectional {full:.2f} s (medians of the forward less a one-token "
          f"run): causal/bidirectional {causal / full:.2f}")


if __name__ == "__main__":
    main()
