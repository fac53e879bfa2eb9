#!/usr/bin/python3
"""Long documents at the speed of the hardware: this service end to end over gRPC (through
embedctl's load generator), against peers measured in the same run on the same token
sequences and thread count.

Peers: the fp32 and bf16 GEMM peaks of this machine (the faster of torch's BLAS and oneDNN);
the bare forward pass (tests/bench/encoder_bench); a Python eager baseline: the same BERT
built from PyTorch's own nn modules (tests/reference), fp32, Hugging Face-style padded
batches of 32 sequences sorted by length, as sentence-transformers runs it; and
onnxruntime-node fp32 on an ONNX export of that same network, in process, batched the same
way (when tests/bench/node_modules holds it: ./dev.sh bench installs it). Corpora: mixed
lengths (log-uniform 16-4,096 tokens) and long documents, against documents of one full
window.

Every figure is the median of --runs runs; every ratio compares figures of one run.

usage: long_document_bench.py BUILD_DIR MODEL_DIR [--runs N] [--mixed N]
       [--long 65536,131072] [--json FILE]
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
    """Texts of exactly the given content-token counts, from the system's word list.

    Words are counted as they are drawn, each its own input, 512 to a Tokenize call (the most
    inputs a request may hold), so no call holds more tokens than a document may: tokenizing a
    whole draw at once exceeded the server's per-call limit (--max-tokens-per-document) for
    the longest documents. The words are whitespace-separated, so their counts add up; the
    final check holds the text to that. Each word is counted, and joined, after a space: a
    byte-level BPE tokenizes " word" (one piece with its space) apart from "word"."""
    words = [w.strip() for w in open("/usr/share/dict/words") if w.strip().isalpha()]
    docs = []
    for target in lengths:
        chosen, count = [], 0
        while count < target:
            draw = [rng.choice(words) for _ in range(512)]
            spaced = [" " + word for word in draw]
            counts = [len(t.tokens)
                      for t in client.tokenize(spaced, add_special_tokens=False).inputs]
            for word, n in zip(draw, counts):
                if count + n <= target:
                    chosen.append(word)
                    count += n
        text = "".join(" " + word for word in chosen)
        got = len(client.tokenize([text], add_special_tokens=False).inputs[0].tokens)
        if got != target:
            sys.exit(f"make_documents: {got} tokens where the words counted {target}")
        docs.append(text)
    return docs


def windows(client, docs, window):
    """The sequences the service encodes for CHUNK_MEAN: windows of `window` content tokens,
    wrapped in the special tokens, so the baseline does exactly the same work."""
    out = []
    for tokenized in client.tokenize(docs, add_special_tokens=True).inputs:
        tokens = list(tokenized.tokens)
        # The model's own specials: [CLS] ... [SEP], or a decoder's appended end token alone.
        lead = 1 if tokens and tokens[0].special else 0
        tail = 1 if len(tokens) > lead and tokens[-1].special else 0
        ids = [t.id for t in tokens]
        first, content, last = ids[:lead], ids[lead:len(ids) - tail], ids[len(ids) - tail:]
        for start in range(0, max(len(content), 1), window):
            out.append(first + content[start:start + window] + last)
    return out


def run_service(build_dir, server, docs, workdir, concurrency=4, strategy="chunk_mean",
                extra=()):
    """embedctl bench on `docs`, each sent once in order, one document per request, with the
    `extra` flags: its JSON report (seconds, latency percentiles, content tokens)."""
    corpus, report = os.path.join(workdir, "corpus.txt"), os.path.join(workdir, "report.json")
    with open(corpus, "w") as f:
        f.write("".join(doc + "\n" for doc in docs))
    subprocess.run([f"{build_dir}/client/embedctl", f"--address={server.grpc_address}",
                    "--timeout-s=3600", "bench", f"--requests={len(docs)}",
                    f"--concurrency={concurrency}", f"--corpus={corpus}", "--corpus-in-order",
                    "--tempscale-share=0.5", f"--strategies={strategy}", f"--json={report}",
                    *extra],
                   check=True, capture_output=True, text=True)
    result = json.load(open(report))
    if result["ok"] != len(docs):
        raise RuntimeError(f"service errors: {result['errors']}")
    return result


def embed_vectors(client, docs):
    return [list(d.vector) for doc in docs for d in client.embed([doc]).documents]


def min_cosine(a, b):
    return min(float(torch.nn.functional.cosine_similarity(torch.tensor(x), torch.tensor(y), 0))
               for x, y in zip(a, b))


def bare_forward(build_dir, model_dir, workdir):
    """encoder_bench's figures: {(dtype, batch, length): (tokens/s, seconds per forward)}."""
    path = os.path.join(workdir, "encoder_bench.json")
    subprocess.run([f"{build_dir}/tests/encoder_bench", "--benchmark_min_time=1",
                    "--benchmark_format=json", f"--benchmark_out={path}"],
                   env={**os.environ, "BENCH_MODEL_DIR": model_dir}, check=True,
                   capture_output=True)
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if "tokens" in b:  # skipped dtypes carry no counter
            _, dtype, batch, length, _ = b["name"].split("/")
            out[(dtype, int(batch), int(length))] = (b["tokens"], b["real_time"] / 1e3)
    return out


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


def reset_peak_rss(pid):
    """Starts VmHWM afresh (Linux: 5 into clear_refs), so a later peak is not the load's."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def rss_kib(pid, field="VmHWM"):
    """Peak (VmHWM) or current (VmRSS) resident memory of a process."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def percentile(values, p):
    return values[min(len(values) - 1, int(math.ceil(p / 100 * len(values))) - 1)]


def measure_dtype(args, dtype, run, config, window, mixed_lengths, long_lengths, peers, workdir):
    """Every service figure of one dtype in one run; fp32 also runs the peers on its windows."""
    figures = {}
    binary = f"{args.build_dir}/server/embedding_server"
    flags = [f"--model=m={args.model_dir}", f"--dtype={dtype}", f"--threads={THREADS}"]
    with ServerRunner(binary, flags) as server:
        client = EmbeddingClient(server.grpc_address, timeout=3600)
        # P5 first, on an idle server: one 128-token window, one request at a time.
        short = make_documents(client, [128 - 2], random.Random(128)) * 20
        figures["p50_128_s"] = run_service(args.build_dir, server, short, workdir,
                                           1)["latency_seconds"]["p50"]
        mixed = make_documents(client, mixed_lengths, random.Random(run))
        sequences = windows(client, mixed, window)
        if dtype == "fp32":
            figures["baseline_mixed_tps"] = run_baseline(peers["baseline"], sequences)
            if peers["onnx"]:
                figures["onnxruntime_mixed_tps"] = run_onnxruntime(peers["onnx"], sequences,
                                                                   workdir)
        idle = rss_kib(server.process.pid, "VmRSS")
        reset_peak_rss(server.process.pid)
        report = run_service(args.build_dir, server, mixed, workdir)
        # Counted as the peers count: every token of every window, special ones too.
        figures["mixed_tps"] = sum(len(s) for s in sequences) / report["seconds"]
        figures["mixed_p50_s"] = report["latency_seconds"]["p50"]
        figures["mixed_p99_s"] = report["latency_seconds"]["p99"]
        figures["mixed_rss_growth_mib"] = (rss_kib(server.process.pid) - idle) / 1024
        peers.setdefault("vectors", {})[(run, dtype)] = embed_vectors(client, mixed)

    # P2 and P4 on a server of their own, so its peak memory is theirs: documents of one full
    # window, then the long documents, every window full.
    with ServerRunner(binary, flags) as server:
        client = EmbeddingClient(server.grpc_address, timeout=3600)
        # Growth is measured from the idle server's current memory, with the peak reset: the
        # peak so far is the model load's, which would hide any growth below it.
        idle = rss_kib(server.process.pid, "VmRSS")
        reset_peak_rss(server.process.pid)
        figures["idle_rss_mib"] = idle / 1024
        full = make_documents(client, [window] * 16, random.Random(window))

        def measure(name, docs, concurrency):
            report = run_service(args.build_dir, server, docs, workdir, concurrency)
            seqs = windows(client, docs, window)
            tps = sum(len(s) for s in seqs) / report["seconds"]
            return tps, forward_flops(config, seqs) / report["seconds"] / 1e9

        # One-window reference runs between the long ones: the host's speed drifts by up to
        # 1.5x within minutes, so each long document is compared with the mean of the window
        # runs just before and after it, and the drift cancels out of its ratio.
        reference = [measure("window", full, 4)]
        for n in long_lengths:
            tps, gflops = measure(str(n), make_documents(client, [n], random.Random(n)), 1)
            figures[f"long_{n}_tps"], figures[f"long_{n}_gflops"] = tps, gflops
            figures[f"long_{n}_rss_growth_mib"] = (rss_kib(server.process.pid) - idle) / 1024
            reference.append(measure("window", full, 4))
            figures[f"long_{n}_window_tps"] = statistics.mean(t for t, _ in reference[-2:])
        figures["long_window_tps"] = statistics.mean(t for t, _ in reference)
        figures["long_window_gflops"] = statistics.mean(g for _, g in reference)
        figures["long_window_rss_growth_mib"] = (rss_kib(server.process.pid) - idle) / 1024
        figures["peak_rss_mib"] = rss_kib(server.process.pid) / 1024
    return figures


def cpu_isa():
    """The ISA flags that decide which kernels run: what the figures depend on."""
    flags = set(next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split()[2:])
    wanted = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_bf16",
              "amx_int8"]
    return " ".join(f for f in wanted if f in flags) or "no avx2"


def auto_choice(args, workdir):
    """The dtype the server's default (--dtype=auto) picks here, measured afresh, and the seconds
    that first, measuring start takes."""
    binary = f"{args.build_dir}/server/embedding_server"
    flags = [f"--model=m={args.model_dir}", "--dtype=auto", f"--threads={THREADS}",
             f"--dtype-cache-dir={os.path.join(workdir, 'dtype-cache')}"]
    start = time.monotonic()
    with ServerRunner(binary, flags, timeout=600) as server:
        seconds = time.monotonic() - start
        models = EmbeddingClient(server.grpc_address).list_models().models
        return models[0].dtype, seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("model_dir")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mixed", type=int, default=40, help="documents in the mixed corpus")
    parser.add_argument("--long", default="65536,131072")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    config = json.load(open(f"{args.model_dir}/config.json"))
    window = config["max_position_embeddings"] - 2
    rng = random.Random(7)
    mixed_lengths = [int(math.exp(rng.uniform(math.log(16), math.log(4096))))
                     for _ in range(args.mixed)]
    long_lengths = [int(x) for x in args.long.split(",") if x]
    baseline = PaddedBert(
        ReferenceBert(config, read_safetensors(f"{args.model_dir}/model.safetensors"), 1.0))
    workdir = tempfile.mkdtemp(prefix="long_document_bench.")
    peers = {"baseline": baseline, "onnx": None}
    if os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        peers["onnx"] = os.path.join(workdir, "model.onnx")
        export_onnx(baseline, peers["onnx"])
    else:
        print("onnxruntime-node missing (tests/bench/node_modules): that peer is skipped",
              file=sys.stderr)
    dtypes = ["fp32"] + (["bf16"] if "avx512_bf16" in open("/proc/cpuinfo").read() else []) + ["int8"]

    cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    auto, auto_seconds = auto_choice(args, workdir)
    report = {"model": args.model_dir, "cpu": cpu, "isa": cpu_isa(), "threads": THREADS,
              "auto_dtype": auto, "auto_first_start_s": auto_seconds, "runs": []}
    print(f"{cpu} ({cpu_isa()}), {THREADS} threads: --dtype=auto picks {auto} "
          f"(first start, measuring: {auto_seconds:.1f} s)", file=sys.stderr)
    for run in range(args.runs):
        figures = {"gemm_fp32_gflops": gemm_peak(torch.float32),
                   "gemm_bf16_gflops": gemm_peak(torch.bfloat16)}
        for (dtype, batch, length), (tps, seconds) in bare_forward(
                args.build_dir, args.model_dir, workdir).items():
            figures[f"{dtype}_forward_{batch}x{length}_tps"] = tps
            figures[f"{dtype}_forward_{batch}x{length}_s"] = seconds
        for dtype in dtypes:
            for key, value in measure_dtype(args, dtype, run, config, window, mixed_lengths,
                                            long_lengths, peers, workdir).items():
                figures[key if key.startswith(("baseline", "onnx")) else f"{dtype}_{key}"] = value
        for dtype in dtypes[1:]:
            figures[f"{dtype}_min_cosine_to_fp32"] = min_cosine(
                peers["vectors"][(run, dtype)], peers["vectors"][(run, "fp32")])
        report["runs"].append(figures)
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)

    runs = report["runs"]
    median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    report["median"] = median
    ratio = lambda f: statistics.median(f(r) for r in runs)  # noqa: E731
    print(f"{cpu} ({report['isa']}), {THREADS} threads, {args.model_dir}; "
          f"medians of {args.runs} runs; --dtype=auto (the default) picks {auto}\n")
    print(f"{'figure':44s} {'median':>12s}")
    for key, value in median.items():
        print(f"{key:44s} {value:12.4g}")
    print("\ntargets (each ratio from one run, then the median over runs)")
    rows = []
    for dtype in dtypes:
        row = {"dtype": dtype + (" (auto)" if dtype == auto else ""),
               "mixed tok/s": median[f"{dtype}_mixed_tps"]}
        if peers["onnx"]:
            row["P1 vs ORT"] = ratio(lambda r: r[f"{dtype}_mixed_tps"] / r["onnxruntime_mixed_tps"])
        row["P2 % bf16 peak"] = 100 * ratio(
            lambda r: r[f"{dtype}_long_window_gflops"] / r["gemm_bf16_gflops"])
        row["P3 vs eager"] = ratio(lambda r: r[f"{dtype}_mixed_tps"] / r["baseline_mixed_tps"])
        for n in long_lengths:
            row[f"P4 {n}"] = ratio(
                lambda r: r[f"{dtype}_long_{n}_tps"] / r[f"{dtype}_long_{n}_window_tps"])
            row[f"RSS+ {n} MiB"] = median[f"{dtype}_long_{n}_rss_growth_mib"]
        if f"{dtype}_forward_1x128_s" in median:
            row["P5 p50/forward"] = ratio(lambda r: r[f"{dtype}_p50_128_s"] / r[f"{dtype}_forward_1x128_s"])
            row["P6 8x512/1x512"] = ratio(
                lambda r: r[f"{dtype}_forward_8x512_tps"] / r[f"{dtype}_forward_1x512_tps"])
        row["RSS+ mixed MiB"] = median[f"{dtype}_mixed_rss_growth_mib"]
        row["p50 s"] = median[f"{dtype}_mixed_p50_s"]
        row["p99 s"] = median[f"{dtype}_mixed_p99_s"]
        if dtype != "fp32":
            row["min cos"] = median[f"{dtype}_min_cosine_to_fp32"]
        rows.append(row)
    keys = list(dict.fromkeys(k for row in rows for k in row))
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(row.get(k, "") if isinstance(row.get(k, ""), str)
                         else f"{row[k]:.4g}" for k in keys))
    report["targets"] = rows
    if args.json:
        json.dump(report, open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
