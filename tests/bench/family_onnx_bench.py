#!/usr/bin/python3
"""Each long-context family end to end against onnxruntime: a base-sized demo model of GTE
"new", JinaBERT v2 and ModernBERT (12 layers, 768 wide, 12 heads, MLP 3,072; ModernBERT-base's
22 layers, MLP 1,152 and band of +-64) and a Qwen3-Embedding-0.6B-shaped decoder, this service over gRPC (embedctl's load generator,
one document per request) at fp32 and at --dtype=auto, against onnxruntime-node fp32 on an
ONNX export of the family's torch.nn reference (tests/reference/compare_encoder.py), on the
same token windows, 2 threads each. Rounds interleave the three systems; every ratio compares
figures of one round.

usage: family_onnx_bench.py BUILD_DIR
       [--families new,jina_bert,modernbert,qwen3,gemma3,t5,xlm-roberta-flash]
       [--tokens 2046]
       [--docs 3] [--rounds 2]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from compare_encoder import read_safetensors, reference_class  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from long_document_bench import (THREADS, cpu_isa, make_documents, run_onnxruntime,  # noqa: E402
                                 run_service, windows)
from server_runner import ServerRunner  # noqa: E402

# Base models: 12 layers, 768 wide, 12 heads, MLP 4 x 768; ModernBERT-base's depth and MLP
# width; Qwen3-Embedding-0.6B's shape (28 layers, 1,024 wide, 16 query heads on 8 key/value
# heads of 128, MLP 3,072; its vocabulary cut to the demo's 12,000 rows).
BASE = ["--layers=12", "--hidden=768", "--heads=12", "--max_positions=8192"]
SHAPES = {"modernbert": ["--layers=22", "--hidden=768", "--heads=12", "--intermediate=1152",
                         "--max_positions=8192"],
          "qwen3": ["--layers=28", "--hidden=1024", "--heads=16", "--kv_heads=8",
                    "--head_dim=128", "--intermediate=3072", "--max_positions=32768",
                    "--pooling=last_token"],
          # EmbeddingGemma-300m's shape: 24 layers, 768 wide, 3 query heads of 256 on one
          # key/value head, MLP 1,152, 2,048 positions.
          "gemma3": ["--layers=24", "--hidden=768", "--heads=3", "--kv_heads=1",
                     "--head_dim=256", "--intermediate=1152", "--max_positions=2048"],
          "t5": BASE,
          # jina-embeddings-v3's layout at base size; the service also runs with a task adapter
          # (the peer's export has it merged: its cost is the base model's).
          "xlm-roberta-flash": BASE}
# Families whose service also runs with this task adapter, beside the base weights.
TASKS = {"xlm-roberta-flash": "retrieval.passage"}


class OneSequence(torch.nn.Module):
    """A family's reference on the peer's [1, L] ids and key padding mask (none is padded:
    every window has the same length)."""

    def __init__(self, reference):
        super().__init__()
        self.reference = reference

    def forward(self, ids, pad):
        return self.reference(ids[0])[None] * (~pad)[..., None]


def demo_model(build_dir, family):
    path = f"{build_dir}/models/{family}-base-demo"
    if not os.path.exists(f"{path}/model.safetensors"):
        subprocess.run([f"{build_dir}/model_store/write_demo_model", f"--architecture={family}",
                        *SHAPES.get(family, BASE), f"--out={path}"], check=True,
                       capture_output=True)
    return path


def export_onnx(model_dir, length, path):
    config = json.load(open(f"{model_dir}/config.json"))
    reference = reference_class(config)(config, read_safetensors(f"{model_dir}/model.safetensors"),
                                        1.0)
    ids = torch.randint(5, 100, (1, length))
    pad = torch.zeros(1, length, dtype=torch.bool)
    # Unfolded: ALiBi's bias folded into constants is 200 MB a layer at 2,048 tokens, past
    # ONNX's 2 GB file limit; onnxruntime folds it in memory when it loads the model.
    torch.onnx.export(OneSequence(reference), (ids, pad), path, input_names=["ids", "pad"],
                      output_names=["hidden"], opset_version=14, do_constant_folding=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("--families", default="new,jina_bert,modernbert")
    parser.add_argument("--tokens", type=int, default=2046, help="content tokens per document")
    parser.add_argument("--docs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="family-onnx-")
    binary = f"{args.build_dir}/server/embedding_server"
    print(f"{cpu_isa()}, {THREADS} threads, {args.docs} documents of {args.tokens} tokens, "
          f"{args.rounds} interleaved rounds")
    for family in args.families.split(","):
        model_dir = demo_model(args.build_dir, family)
        ratios = {"fp32": [], "auto": []}
        for round_index in range(args.rounds):
            tps = {}
            for dtype in ("fp32", "auto"):
                flags = [f"--model=m={model_dir}", f"--dtype={dtype}", f"--threads={THREADS}",
                         "--dtype-cache-dir=off"]
                with ServerRunner(binary, flags, timeout=600) as server:
                    client = EmbeddingClient(server.grpc_address, timeout=3600)
                    docs = make_documents(client, [args.tokens] * args.docs, random.Random(7))
                    sequences = windows(client, docs, args.tokens)
                    if "onnx" not in tps:
                        onnx = os.path.join(workdir, f"{family}.onnx")
                        if not os.path.exists(onnx):
                            export_onnx(model_dir, len(sequences[0]), onnx)
                        tps["onnx"] = run_onnxruntime(onnx, sequences, workdir, batch=1)
                    report = run_service(args.build_dir, server, docs, workdir, concurrency=1)
                    tps[dtype] = sum(len(s) for s in sequences) / report["seconds"]
                    if dtype == "fp32" and family in TASKS:
                        report = run_service(args.build_dir, server, docs, workdir, concurrency=1,
                                             extra=[f"--adapter={TASKS[family]}"])
                        tps["task"] = sum(len(s) for s in sequences) / report["seconds"]
                    if dtype == "auto":  # what auto picked, as every answer says
                        tps["auto_dtype"] = client.embed([docs[0][:100]], model="m").dtype
            for dtype in ("fp32", "auto"):
                ratios[dtype].append(tps[dtype] / tps["onnx"])
            with_task = f", fp32 with task {TASKS[family]} {tps['task']:.1f}" if "task" in tps else ""
            print(f"{family} round {round_index + 1}: onnxruntime {tps['onnx']:.1f} tokens/s, "
                  f"fp32 {tps['fp32']:.1f}{with_task}, auto ({tps['auto_dtype']}) {tps['auto']:.1f}",
                  flush=True)
        print(f"{family}: against onnxruntime fp32, fp32 {statistics.median(ratios['fp32']):.2f}x "
              f"(rounds {', '.join(f'{r:.2f}' for r in ratios['fp32'])}), auto "
              f"{statistics.median(ratios['auto']):.2f}x "
              f"(rounds {', '.join(f'{r:.2f}' for r in ratios['auto'])})", flush=True)


if __name__ == "__main__":
    main()
