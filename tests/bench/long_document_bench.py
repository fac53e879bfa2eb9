#!/usr/bin/python3
"""Long documents at the speed of the hardware: this service end to end over gRPC, against
peers measured in the same run on the same token sequences and thread count.

Peers: the fp32 and bf16 GEMM peaks of this machine (torch.matmul); a Python eager
baseline: the same BERT built from PyTorch's own nn modules (tests/reference), fp32,
Hugging Face-style padded batches of 32 sequences sorted by length, as sentence-transformers
runs it; and onnxruntime-node fp32 on an ONNX export of that same network, in process, batched
the same way (when tests/bench/node_modules holds it: ./dev.sh bench installs it). Corpora:
mixed lengths (log-uniform 16-4,096 tokens) and long documents.

Every figure is the median of --runs runs; every ratio compares figures of one run.

usage: long_document_bench.py BUILD_DIR MODEL_DIR [--runs N] [--mixed N]
       [--long 512,8192,65536] [--json FILE]
"""
import argparse
import concurrent.futures
import json
import math
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
from compare_encoder import ReferenceBert, read_safetensors  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

THREADS = 2


def gemm_peak(dtype, n=2048, runs=5):
    """GFLOP/s of one n x n x n product, median of `runs`, through the faster of torch's
    default path (BLAS) and oneDNN, which the server uses for fp32 linear layers."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    paths = [lambda: torch.matmul(a, b)]
    if torch.backends.mkldnn.is_available():
        a_onednn, b_onednn = a.to_mkldnn(), b.to_mkldnn()
        paths.append(lambda: torch._C._nn.mkldnn_linear(a_onednn, b_onednn, None))
    best = 0
    with torch.inference_mode():
        for path in paths:
            path()
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                path()
                times.append(time.perf_counter() - start)
            best = max(best, 2 * n ** 3 / statistics.median(times) / 1e9)
    return best


def forward_flops(config, sequences):
    """Forward FLOPs of a BERT encoder over `sequences` (each attends within itself)."""
    h, i, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    return sum(layers * len(s) * (2 * (4 * h * h + 2 * h * i) + 4 * len(s) * h) for s in sequences)


def make_documents(client, lengths, rng):
    """Texts of exactly the given content-token counts, from the system's word list."""
    words = [w.strip() for w in open("/usr/share/dict/words") if w.strip().isalpha()]
    docs = []
    for target in lengths:
        text = " ".join(rng.choice(words) for _ in range(target))
        tokens = client.tokenize([text], add_special_tokens=False).inputs[0].tokens
        docs.append(text[:tokens[min(target, len(tokens)) - 1].byte_span.end])
    return docs


def windows(client, docs, window):
    """The sequences the service encodes for CHUNK_MEAN: windows of `window` content tokens,
    wrapped in the special tokens, so the baseline does exactly the same work."""
    out = []
    for tokenized in client.tokenize(docs, add_special_tokens=True).inputs:
        ids = [t.id for t in tokenized.tokens]
        first, content, last = ids[0], ids[1:-1], ids[-1]
        for start in range(0, max(len(content), 1), window):
            out.append([first] + content[start:start + window] + [last])
    return out


def run_service(client, docs, concurrency=4):
    """Content tokens/s and per-request latencies, one document per Embed request."""
    def one(doc):
        start = time.perf_counter()
        response = client.embed([doc], strategy="LONG_TEXT_STRATEGY_CHUNK_MEAN")
        return response.usage.tokens, time.perf_counter() - start
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, docs))
    seconds = time.perf_counter() - start
    return sum(t for t, _ in results) / seconds, sorted(s for _, s in results), seconds


class PaddedBert(torch.nn.Module):
    """The reference BERT on a padded batch: ids [B, L] and a key padding mask [B, L]."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, ids, pad):
        m = self.bert
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = m.norm(m.word(ids) + m.position(positions) + m.token_type(torch.zeros_like(ids)))
        for layer in m.layers:
            x = layer(x, src_key_padding_mask=pad)
        return x


def run_baseline(model, sequences, batch=32):
    """Tokens/s of the eager baseline: sorted by length, padded batches, key padding mask."""
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    start = time.perf_counter()
    with torch.inference_mode():
        for b in range(0, len(order), batch):
            group = [sequences[i] for i in order[b:b + batch]]
            longest = max(len(s) for s in group)
            ids = torch.tensor([s + [0] * (longest - len(s)) for s in group])
            pad = torch.tensor([[False] * len(s) + [True] * (longest - len(s)) for s in group])
            model(ids, pad)
    return sum(len(s) for s in sequences) / (time.perf_counter() - start)


def export_onnx(model, path):
    ids = torch.randint(5, 100, (2, 16))
    pad = torch.zeros(2, 16, dtype=torch.bool)
    axes = {0: "batch", 1: "length"}
    torch.onnx.export(model, (ids, pad), path, input_names=["ids", "pad"],
                      output_names=["hidden"], opset_version=14,
                      dynamic_axes={"ids": axes, "pad": axes, "hidden": axes})


def run_onnxruntime(onnx_path, sequences, workdir, batch=32):
    """Tokens/s of onnxruntime-node on the same sequences (see onnxruntime_peer.js)."""
    path = os.path.join(workdir, "sequences.json")
    json.dump(sequences, open(path, "w"))
    out = subprocess.run(["node", os.path.join(HERE, "onnxruntime_peer.js"), onnx_path, path,
                          str(THREADS), str(batch)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["tokens_per_second"]


def peak_rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def percentile(values, p):
    return values[min(len(values) - 1, int(math.ceil(p / 100 * len(values))) - 1)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("model_dir")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mixed", type=int, default=60, help="documents in the mixed corpus")
    parser.add_argument("--long", default="512,8192,65536,131072")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    config = json.load(open(f"{args.model_dir}/config.json"))
    window = config["max_position_embeddings"] - 2
    binary = f"{args.build_dir}/server/embedding_server"
    rng = random.Random(7)
    mixed_lengths = [int(math.exp(rng.uniform(math.log(16), math.log(4096))))
                     for _ in range(args.mixed)]
    long_lengths = [int(x) for x in args.long.split(",") if x]
    baseline = PaddedBert(
        ReferenceBert(config, read_safetensors(f"{args.model_dir}/model.safetensors"), 1.0))
    workdir = tempfile.mkdtemp(prefix="long_document_bench.")
    onnx_path = None
    if os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        onnx_path = os.path.join(workdir, "model.onnx")
        export_onnx(baseline, onnx_path)
    else:
        print("onnxruntime-node missing (tests/bench/node_modules): that peer is skipped",
              file=sys.stderr)
    dtypes = ["fp32"] + (["bf16"] if "avx512_bf16" in open("/proc/cpuinfo").read() else [])

    report = {"model": args.model_dir, "threads": THREADS, "runs": []}
    for run in range(args.runs):
        figures = {"gemm_fp32_gflops": gemm_peak(torch.float32),
                   "gemm_bf16_gflops": gemm_peak(torch.bfloat16)}
        for dtype in dtypes:
            with ServerRunner(binary, [f"--model=m={args.model_dir}", f"--dtype={dtype}",
                                       f"--threads={THREADS}"]) as server:
                client = EmbeddingClient(server.grpc_address, timeout=3600)
                mixed = make_documents(client, mixed_lengths, random.Random(run))
                sequences = windows(client, mixed, window)
                if dtype == "fp32":
                    figures["baseline_mixed_tps"] = run_baseline(baseline, sequences)
                    if onnx_path:
                        figures["onnxruntime_mixed_tps"] = run_onnxruntime(onnx_path, sequences,
                                                                           workdir)
                _, latencies, seconds = run_service(client, mixed)
                # Counted as the peers count: every token of every window, special ones too.
                figures[f"{dtype}_mixed_tps"] = sum(len(s) for s in sequences) / seconds
                figures[f"{dtype}_mixed_gflops"] = forward_flops(config, sequences) / seconds / 1e9
                figures[f"{dtype}_mixed_p50_s"] = percentile(latencies, 50)
                figures[f"{dtype}_mixed_p99_s"] = percentile(latencies, 99)
                idle = peak_rss_kib(server.process.pid)
                for length in long_lengths:
                    doc = make_documents(client, [length], random.Random(length))
                    tps, _, _ = run_service(client, doc, concurrency=1)
                    figures[f"{dtype}_long_{length}_tps"] = tps
                    figures[f"{dtype}_long_{length}_rss_growth_mib"] = (
                        peak_rss_kib(server.process.pid) - idle) / 1024
        report["runs"].append(figures)
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)

    median = {k: statistics.median(r[k] for r in report["runs"]) for k in report["runs"][0]}
    ratios = [{k: r[k] for k in r} for r in report["runs"]]
    print(f"{'figure':40s} {'median':>12s}")
    for key, value in median.items():
        print(f"{key:40s} {value:12.2f}")
    print("\nratios (each from one run, then the median over runs)")
    for dtype in dtypes:
        vs_base = statistics.median(r[f"{dtype}_mixed_tps"] / r["baseline_mixed_tps"] for r in ratios)
        if onnx_path:
            vs_ort = statistics.median(r[f"{dtype}_mixed_tps"] / r["onnxruntime_mixed_tps"]
                                       for r in ratios)
            print(f"{dtype}: mixed corpus vs onnxruntime-node fp32 {vs_ort:.2f}x")
        share = statistics.median(r[f"{dtype}_mixed_gflops"] / r[f"gemm_{dtype}_gflops"]
                                  for r in ratios)
        print(f"{dtype}: mixed corpus vs eager baseline {vs_base:.2f}x; "
              f"FLOP rate {share:.0%} of the {dtype} GEMM peak")
        if 512 in long_lengths:
            for length in long_lengths[1:]:
                rel = statistics.median(r[f"{dtype}_long_{length}_tps"] / r[f"{dtype}_long_512_tps"]
                                        for r in ratios)
                print(f"{dtype}: {length}-token document vs 512-token document: {rel:.2f}x per token")
    report["median"] = median
    if args.json:
        json.dump(report, open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
