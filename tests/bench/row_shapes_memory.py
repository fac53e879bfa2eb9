#!/usr/bin/python3
"""What the encoder's row shapes cost in memory: a real server's resident growth over its idle
self after one document of each length from 6 to 502 tokens in steps of 16 (one request at a
time, so each is a forward of its own rows), then the same documents twice more, with the
seconds of each pass. oneDNN builds its kernels once per linear shape (encoder_layers.cc's
BucketedRows), so the first pass builds them and the later ones reuse them.

usage: row_shapes_memory.py BUILD_DIR MODEL_DIR [--dtype int8] [--binary SERVER]
"""
import argparse
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from long_document_bench import (THREADS, EmbeddingClient, ServerRunner,  # noqa: E402
                                 make_documents, rss_kib, run_service)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("model_dir")
    parser.add_argument("--dtype", default="int8")
    parser.add_argument("--binary", help="the server to measure (default: the build's)")
    args = parser.parse_args()
    binary = args.binary or f"{args.build_dir}/server/embedding_server"
    workdir = tempfile.mkdtemp(prefix="row_shapes_memory.")
    flags = [f"--model=m={args.model_dir}", f"--dtype={args.dtype}", f"--threads={THREADS}",
             "--dtype-cache-dir=off"]
    with ServerRunner(binary, flags) as server:
        client = EmbeddingClient(server.grpc_address, timeout=3600)
        docs = make_documents(client, list(range(6, 510, 16)), random.Random(1))
        idle = rss_kib(server.process.pid, "VmRSS")
        seconds = [run_service(args.build_dir, server, docs, workdir, 1)["seconds"]
                   for _ in range(3)]
        growth = rss_kib(server.process.pid, "VmRSS") - idle
    print(f"{binary} --dtype={args.dtype}: idle {idle / 1024:.0f} MiB, grew {growth / 1024:.0f} "
          f"MiB over {len(docs)} documents of 6-502 tokens; seconds per pass "
          + ", ".join(f"{s:.2f}" for s in seconds))


if __name__ == "__main__":
    main()
