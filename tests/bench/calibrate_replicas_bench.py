#!/usr/bin/python3
"""`embedctl calibrate` against one replica and against two (--address given twice): calls
spread over every address, so two replicas should take about half the time. Each replica is a
server with one torch thread pinned to its own core, as two pods of one core each would be;
the runs alternate, and both must print the same table.

usage: calibrate_replicas_bench.py SERVER_BINARY EMBEDCTL MODEL_DIR CORPUS [--rounds 1]
       [--docs-per-bucket 200] [--max-bucket 128-255]
A base-sized random model: build/model_store/write_demo_model --out=/tmp/base --layers=12
--hidden=768 --heads=12 --max_positions=514 --vocab_size=30000; a corpus:
tests/data/retrieval_demo/make_corpus.py wordnet docs.txt.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from bge_m3_outputs_bench import isa  # noqa: E402
from server_runner import ServerRunner  # noqa: E402


def pin(process, cpu):
    for tid in os.listdir(f"/proc/{process.pid}/task"):
        os.sched_setaffinity(int(tid), {cpu})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("embedctl")
    parser.add_argument("model")
    parser.add_argument("corpus")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--docs-per-bucket", default="200")
    parser.add_argument("--max-bucket", default="128-255")
    args = parser.parse_args()
    servers = [ServerRunner(args.server, [f"--model=m={args.model}", "--threads=1",
                                          "--tokenizer-threads=1"], timeout=300)
               for _ in range(2)]
    try:
        for cpu, server in enumerate(servers):
            pin(server.process, cpu % os.cpu_count())
        addresses = [s.grpc_address for s in servers]
        times = {1: [], 2: []}
        tables = {}
        for _ in range(args.rounds):
            for replicas in (1, 2):
                began = time.monotonic()
                run = subprocess.run(
                    [args.embedctl, "--address=" + ",".join(addresses[:replicas]), "calibrate",
                     "--model=m", f"--corpus={args.corpus}", "--temperatures=1,0.7",
                     f"--docs-per-bucket={args.docs_per_bucket}",
                     f"--max-bucket={args.max_bucket}", "--state-file="],
                    capture_output=True, text=True, check=True)
                times[replicas].append(time.monotonic() - began)
                tables[replicas] = run.stdout
        if tables[1] != tables[2]:
            sys.exit("one replica and two gave different tables")
        one, two = statistics.median(times[1]), statistics.median(times[2])
        print(f"CPU: {isa()}")
        print(f"calibrate, one replica: {one:.1f} s; two: {two:.1f} s; speed-up {one / two:.2f}x "
              f"(rounds: {', '.join(f'{a / b:.2f}' for a, b in zip(times[1], times[2]))})")
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
