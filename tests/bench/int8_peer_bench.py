#!/usr/bin/python3
"""This service against what users deploy on CPUs instead: onnxruntime on the model's ONNX
export, in fp32 and quantized dynamically to int8 (quantize_dynamic.py, the graph onnxruntime's
quantize_dynamic writes and fastembed, Optimum and transformers.js ship as "q8").

The model is a BERT-base-shaped demo checkpoint; the ONNX export is its torch.nn reference
(tests/reference/compare_encoder.py). The corpus is `--docs` documents of 8 to 330 content
tokens (one window each). Each round runs every system once, in turn, on the same documents,
2 threads each:
- onnxruntime-node fp32 and int8, one document at a time and in padded batches of 8 and 32
  (sorted by length); the best of the three is the peer's figure;
- this service over gRPC (embedctl bench, one document per request, tokenization included) at
  --dtype fp32, bf16 (where the CPU has it), int8 and auto, at concurrency 1 and 4.
Ratios are taken within a round, then the median over rounds. Before timing: the int8 peer's
pooled cosine to fp32 (so it is a fair int8 model), and this service's per dtype. After: the
share of peak (gemm_peak_bench's matrix kernels on the forward's own shapes against the
forward's linear rate on full windows, encoder_bench 8 x 512).

usage: int8_peer_bench.py BUILD_DIR MODEL_DIR [--docs 120] [--rounds 2]
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
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from compare_encoder import ReferenceBert, read_safetensors  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from long_document_bench import (THREADS, PaddedBert, bare_forward, cpu_isa,  # noqa: E402
                                 embed_vectors, export_onnx, make_documents, min_cosine,
                                 run_service, windows)
from quantize_dynamic import quantize_dynamic  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

PEER_BATCHES = (1, 8, 32)


def onnxruntime(model, sequences, workdir, batch, pooled=None):
    path = os.path.join(workdir, "sequences.json")
    json.dump(sequences, open(path, "w"))
    args = ["node", os.path.join(HERE, "onnxruntime_peer.js"), model, path, str(THREADS),
            str(batch)] + ([pooled] if pooled else [])
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["tokens_per_second"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("model_dir")
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    workdir = tempfile.mkdtemp(prefix="int8_peer_bench.")
    config = json.load(open(f"{args.model_dir}/config.json"))
    binary = f"{args.build_dir}/server/embedding_server"
    dtypes = ["fp32"] + (["bf16"] if "avx512_bf16" in cpu_isa() else []) + ["int8", "auto"]
    servers = {d: ServerRunner(binary, [f"--model=m={args.model_dir}", f"--dtype={d}",
                                        f"--threads={THREADS}", "--dtype-cache-dir=" +
                                        os.path.join(workdir, "dtype-cache")], timeout=900)
               for d in dtypes}
    try:
        clients = {d: EmbeddingClient(s.grpc_address) for d, s in servers.items()}
        rng = random.Random(64)
        docs = make_documents(clients["fp32"], [rng.randint(8, 330) for _ in range(args.docs)], rng)
        sequences = windows(clients["fp32"], docs, config["max_position_embeddings"] - 2)
        chosen = clients["auto"].list_models().models[0].dtype

        fp32_onnx, int8_onnx = (os.path.join(workdir, f) for f in ("fp32.onnx", "int8.onnx"))
        export_onnx(PaddedBert(ReferenceBert(
            config, read_safetensors(f"{args.model_dir}/model.safetensors"), 1.0)), fp32_onnx)
        quantized = quantize_dynamic(fp32_onnx, int8_onnx)
        pooled = {}
        for name, model in (("fp32", fp32_onnx), ("int8", int8_onnx)):
            path = os.path.join(workdir, f"pooled-{name}.json")
            onnxruntime(model, sequences, workdir, 1, path)
            pooled[name] = json.load(open(path))
        print(f"{os.uname().machine} {cpu_isa()}, {THREADS} threads; {len(docs)} documents, "
              f"{sum(len(s) for s in sequences)} tokens; --dtype=auto picks {chosen}")
        print(f"onnxruntime int8 ({quantized} MatMuls quantized): min pooled cosine to its fp32 "
              f"{min_cosine(pooled['int8'], pooled['fp32']):.5f}")
        reference = embed_vectors(clients["fp32"], docs)
        for dtype in dtypes[1:]:
            print(f"this service {dtype}: min cosine to fp32 "
                  f"{min_cosine(embed_vectors(clients[dtype], docs), reference):.5f}")

        tokens = sum(len(s) for s in sequences)
        rounds = []
        for _ in range(args.rounds):
            figures = {}
            for name, model in (("ort_fp32", fp32_onnx), ("ort_int8", int8_onnx)):
                by_batch = {b: onnxruntime(model, sequences, workdir, b) for b in PEER_BATCHES}
                figures[name] = max(by_batch.values())
                for b, tps in by_batch.items():
                    figures[f"{name}_batch{b}"] = tps
            for dtype in dtypes:
                for concurrency in (1, 4):
                    report = run_service(args.build_dir, servers[dtype], docs, workdir,
                                         concurrency, extra=("--tempscale-share=0",))
                    figures[f"{dtype}_c{concurrency}"] = tokens / report["seconds"]
            rounds.append(figures)
    finally:
        for server in servers.values():
            server.stop()

    def median(f):
        return statistics.median(f(r) for r in rounds)

    print("\n| | tokens/s | against ORT fp32 | against ORT int8 |\n|---|---|---|---|")
    for name in ("ort_fp32", "ort_int8"):
        batches = ", ".join(f"{b}: {median(lambda r: r[f'{name}_batch{b}']):,.0f}"
                            for b in PEER_BATCHES)
        print(f"| onnxruntime {name[4:]} (best of batches {batches}) | "
              f"{median(lambda r: r[name]):,.0f} | {median(lambda r: r[name] / r['ort_fp32']):.2f}x"
              f" | {median(lambda r: r[name] / r['ort_int8']):.2f}x |")
    for dtype in dtypes:
        for c in (1, 4):
            key = f"{dtype}_c{c}"
            label = f"{dtype} ({chosen})" if dtype == "auto" else dtype
            print(f"| this service {label}, concurrency {c} | {median(lambda r: r[key]):,.0f} | "
                  f"{median(lambda r: r[key] / r['ort_fp32']):.2f}x | "
                  f"{median(lambda r: r[key] / r['ort_int8']):.2f}x |")
    share_of_peak(args.build_dir, args.model_dir, config, workdir)


def kernel_rates(build_dir, workdir):
    """gemm_peak_bench's rates: {(kernel, rows, in, out): ops/s}, kernel int8, bf16, fp32 or
    layer (the int8 layer the encoder runs, quantization and scaling included)."""
    path = os.path.join(workdir, "gemm_peak_bench.json")
    subprocess.run([f"{build_dir}/tests/gemm_peak_bench", "--benchmark_min_time=0.5",
                    "--benchmark_format=json", f"--benchmark_out={path}"],
                   check=True, capture_output=True)
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if "ops" in b:
            parts = b["name"].split("/")
            kernel = parts[1] if parts[0] == "BM_Kernel" else "layer"
            rows, fan_in, fan_out = (int(x) for x in parts[-4:-1])
            out[(kernel, rows, fan_in, fan_out)] = b["ops"]
    return out


def share_of_peak(build_dir, model_dir, config, workdir):
    """The forward's linear layers on full 512-token windows (encoder_bench, 8 x 512) as a share
    of the matrix kernels' own rate on the same shapes at their best row count; and the part of
    the forward that is not a linear layer's kernel at all."""
    rates = kernel_rates(build_dir, workdir)
    forward = bare_forward(build_dir, model_dir, workdir)
    hidden, inner = config["hidden_size"], config["intermediate_size"]
    shapes = [(hidden, 3 * hidden), (hidden, hidden), (hidden, inner), (inner, hidden)]
    per_token = 2 * config["num_hidden_layers"] * sum(i * o for i, o in shapes)
    print(f"\nlinear layers: {per_token / 1e9:.3f} GOP per token")
    print("| dtype | kernel peak (best rows) | int8 layer | forward 8 x 512 | linear rate in the "
          "forward | share of peak |\n|---|---|---|---|---|---|")
    for dtype in ("int8", "bf16", "fp32"):
        key = (dtype, 8, 512)
        if key not in forward or not any(k[0] == dtype for k in rates):
            continue
        # Each shape at its best row count; the peak is their per-token time-weighted mean.
        best = {shape: max(r for k, r in rates.items() if k[0] == dtype and k[2:] == shape)
                for shape in shapes}
        layer = {shape: max((r for k, r in rates.items() if k[0] == "layer" and k[2:] == shape),
                            default=0) for shape in shapes}
        seconds = sum(2 * i * o / best[(i, o)] for i, o in shapes)
        peak = sum(2 * i * o for i, o in shapes) / seconds
        layer_rate = (sum(2 * i * o for i, o in shapes) /
                      sum(2 * i * o / layer[(i, o)] for i, o in shapes)) if dtype == "int8" else 0
        tokens_per_second = forward[key][0]
        achieved = per_token * tokens_per_second
        print(f"| {dtype} | {peak / 1e9:,.0f} GOP/s | "
              f"{f'{layer_rate / 1e9:,.0f} GOP/s' if layer_rate else ''} | "
              f"{tokens_per_second:,.0f} tokens/s | {achieved / 1e9:,.0f} GOP/s | "
              f"{achieved / peak:.0%} |")
    print("The share of peak is also the share of the forward's time its linear kernels would "
          "take at peak; the rest is attention, norms, activations and the int8 layer's own "
          "passes, which no faster matrix kernel reaches.")


if __name__ == "__main__":
    main()
