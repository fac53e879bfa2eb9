#!/usr/bin/python3
"""Memory bounded by the window, not the document: peak resident growth of a real server over
its idle self while one long document goes through each strategy in turn.

The peak counter is reset once the model has loaded (otherwise the load's own peak hides any
growth below it), and growth is measured from the idle resident size, so each figure is the
peak so far: a strategy's figure includes whatever the ones before it kept.

usage: memory_growth.py BUILD_DIR MODEL_DIR [--dtype fp32] [--tokens 65536,131072]
       [--strategies chunk_mean,late_chunking]
"""
import argparse
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from long_document_bench import (EmbeddingClient, ServerRunner, THREADS,  # noqa: E402
                                 make_documents, reset_peak_rss, rss_kib, run_service)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("model_dir")
    parser.add_argument("--dtype", default="fp32")
    parser.add_argument("--tokens", default="65536,131072")
    parser.add_argument("--strategies", default="chunk_mean,late_chunking")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="memory_growth.")
    print(f"{'tokens':>8s} {'strategy':16s} {'idle MiB':>9s} {'growth MiB':>11s} {'seconds':>8s}")
    for tokens in [int(n) for n in args.tokens.split(",")]:
        flags = [f"--model=m={args.model_dir}", f"--dtype={args.dtype}", f"--threads={THREADS}"]
        with ServerRunner(f"{args.build_dir}/server/embedding_server", flags) as server:
            client = EmbeddingClient(server.grpc_address, timeout=3600)
            doc = make_documents(client, [tokens], random.Random(tokens))
            idle = rss_kib(server.process.pid, "VmRSS")
            reset_peak_rss(server.process.pid)
            for strategy in args.strategies.split(","):
                report = run_service(args.build_dir, server, doc, workdir, 1, strategy)
                growth = (rss_kib(server.process.pid) - idle) / 1024
                print(f"{tokens:8d} {strategy:16s} {idle / 1024:9.0f} {growth:11.0f} "
                      f"{report['seconds']:8.1f}", flush=True)


if __name__ == "__main__":
    main()
