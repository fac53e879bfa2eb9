#!/usr/bin/python3
"""The peer for encoder_bench: the same BERT built from PyTorch's own nn modules (see
tests/reference/compare_encoder.py), timed on one 512-token forward, fp32, 2 threads.
Compare its tokens/s with encoder_bench's fp32 figure from the same run.

usage: torch_nn_peer.py MODEL_DIR
"""
import json
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from compare_encoder import ReferenceBert, read_safetensors  # noqa: E402


def main():
    model_dir = sys.argv[1]
    torch.set_num_threads(2)
    config = json.load(open(f"{model_dir}/config.json"))
    model = ReferenceBert(config, read_safetensors(f"{model_dir}/model.safetensors"), 1.0)
    rng = random.Random(7)
    length = config["max_position_embeddings"]
    ids = [2] + [rng.randrange(5, config["vocab_size"]) for _ in range(length - 2)] + [3]
    with torch.inference_mode():
        model(ids)  # warm-up
        runs, start = 0, time.perf_counter()
        while runs < 3 or time.perf_counter() - start < 5:
            model(ids)
            runs += 1
        seconds = (time.perf_counter() - start) / runs
    print(f"torch.nn peer: {seconds * 1000:.1f} ms per {length}-token forward, "
          f"{length / seconds:.1f} tokens/s (fp32, 2 threads, {runs} runs)")


if __name__ == "__main__":
    main()
