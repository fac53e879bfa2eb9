#!/usr/bin/python3
"""A reranker end to end against onnxruntime: a bge-reranker-base-shaped cross-encoder (XLM-R,
12 layers, 768 wide, 12 heads, one label; the demo vocabulary) scores one query against
documents that fit the window, through this service's Rerank (one call, every document) at
fp32 and at --dtype=auto, and through onnxruntime-node fp32 on an ONNX export of the torch.nn
cross-encoder (tests/reference/compare_cross_encoder.py: the encoder reference and
RobertaClassificationHead) over the same pair token ids (Hugging Face's pair encoding, via
npm), 2 threads each. Rounds interleave the systems; each ratio compares one round's figures.
The service's scores are checked against the peer's logits on the first documents.

usage: rerank_onnx_bench.py BUILD_DIR [--docs 48] [--tokens 320] [--rounds 2]
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from compare_cross_encoder import ReferenceCrossEncoder, hf_pairs  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from long_document_bench import THREADS, cpu_isa, make_documents, run_onnxruntime  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

QUERY = "which documents describe how owls hunt at night in the forest"
SHAPE = ["--architecture=xlm-roberta", "--layers=12", "--hidden=768", "--heads=12",
         "--max_positions=512", "--num_labels=1"]


class OnePair(torch.nn.Module):
    """The cross-encoder on the peer's [1, L] ids (no padding: the peer runs one pair at a
    time), its logit as [1, 1]."""

    def __init__(self, reference):
        super().__init__()
        # Train mode, kept through the export (its dropout is 0): PyTorch's fused encoder-layer
        # kernel, which ONNX cannot export, runs only in eval mode.
        self.encoder = reference.encoders[1.0].train()
        self.head = reference.head

    def forward(self, ids, pad):
        return self.head(self.encoder(ids[0]))[None] * (~pad[:, :1])


def reranker(build_dir):
    path = f"{build_dir}/models/xlm-roberta-reranker-base-demo"
    if not os.path.exists(f"{path}/model.safetensors"):
        subprocess.run([f"{build_dir}/model_store/write_demo_model", *SHAPE, f"--out={path}"],
                       check=True, capture_output=True)
    return path


def export_onnx(model_dir, length, path):
    ids = torch.randint(5, 100, (1, length))
    pad = torch.zeros(1, length, dtype=torch.bool)
    torch.onnx.export(OnePair(ReferenceCrossEncoder(model_dir)), (ids, pad), path,
                      input_names=["ids", "pad"], output_names=["hidden"], opset_version=14,
                      dynamic_axes={"ids": {1: "length"}, "pad": {1: "length"}},
                      training=torch.onnx.TrainingMode.PRESERVE)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("--docs", type=int, default=48)
    parser.add_argument("--tokens", type=int, default=320, help="content tokens per document")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="rerank-onnx-")
    binary = f"{args.build_dir}/server/embedding_server"
    model_dir = reranker(args.build_dir)
    print(f"{cpu_isa()}, {THREADS} threads, one query against {args.docs} documents of "
          f"{args.tokens} tokens, {args.rounds} interleaved rounds", flush=True)
    ratios = {"fp32": [], "auto": []}
    docs = pairs = None
    for round_index in range(args.rounds):
        tps = {}
        for dtype in ("fp32", "auto"):
            flags = [f"--model=rr={model_dir}", f"--dtype={dtype}", f"--threads={THREADS}",
                     "--dtype-cache-dir=off"]
            with ServerRunner(binary, flags, timeout=600) as server:
                client = EmbeddingClient(server.grpc_address, timeout=3600)
                if docs is None:
                    docs = make_documents(client, [args.tokens] * args.docs, random.Random(7))
                    pairs = [ids for ids, _, _ in hf_pairs(model_dir, [(QUERY, d) for d in docs])]
                    onnx = os.path.join(workdir, "reranker.onnx")
                    export_onnx(model_dir, len(pairs[0]), onnx)
                if "onnx" not in tps:
                    tps["onnx"] = run_onnxruntime(onnx, pairs, workdir, batch=1)
                # Warm-up on the measured call itself, as the peer warms up on its run: oneDNN
                # builds its kernels once per batch shape, as onnxruntime plans each shape once.
                client.rerank(QUERY, docs, raw_scores=True)
                start = time.perf_counter()
                answer = client.rerank(QUERY, docs, raw_scores=True)
                tps[dtype] = sum(len(p) for p in pairs) / (time.perf_counter() - start)
                if dtype == "fp32" and round_index == 0:
                    reference = ReferenceCrossEncoder(model_dir)
                    got = {r.index: r.score for r in answer.results}
                    worst = max(abs(got[i] - float(reference.logits(pairs[i], [0] * len(pairs[i]),
                                                                    1.0)[0])) for i in range(3))
                    print(f"fp32 logits against the torch.nn cross-encoder: max diff {worst:.2e}")
                if dtype == "auto":
                    tps["auto_dtype"] = answer.dtype
        for dtype in ("fp32", "auto"):
            ratios[dtype].append(tps[dtype] / tps["onnx"])
        print(f"round {round_index + 1}: onnxruntime {tps['onnx']:.1f} tokens/s, "
              f"fp32 {tps['fp32']:.1f}, auto ({tps['auto_dtype']}) {tps['auto']:.1f}", flush=True)
    print(f"reranker against onnxruntime fp32: fp32 {statistics.median(ratios['fp32']):.2f}x "
          f"(rounds {', '.join(f'{r:.2f}' for r in ratios['fp32'])}), auto "
          f"{statistics.median(ratios['auto']):.2f}x "
          f"(rounds {', '.join(f'{r:.2f}' for r in ratios['auto'])})", flush=True)


if __name__ == "__main__":
    main()
