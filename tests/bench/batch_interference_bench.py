#!/usr/bin/python3
"""What a running Batch API job costs interactive traffic (docs/apis.md, "Batch jobs"), on one
server in one run. The same open-loop load (embedctl bench --rate, a mix of short and long
documents) runs with no batch and with a batch of the same documents running, interleaved
in --rounds rounds (3); the median over rounds of the interactive p99 with the batch over
the p99 without is the figure (the target is at most 1.2), with the batch lines the server
finished meanwhile. The rate defaults to half of
what the server sustains, measured first, so the batch has idle time to fill.

usage: batch_interference_bench.py SERVER EMBEDCTL MODEL_DIR [--seconds=15] [--load=0.5]
       [--rounds=3]
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from server_runner import ServerRunner  # noqa: E402

WORDS = ("owls hunt voles in the long grass while herons wait by the river for fish and the "
         "market closes early on friday").split()


def documents(count):
    """Lengths from 8 to about 300 words, as a corpus of mixed documents has."""
    return [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(8 + (i * 37) % 300))
            for i in range(count)]


def bench(embedctl, address, corpus, seconds, rate=None):
    load = [f"--rate={rate}"] if rate else ["--concurrency=2"]
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([embedctl, "bench", f"--address={address}", f"--corpus={corpus}",
                        f"--duration_s={seconds}", "--tempscale_share=0", f"--json={out.name}",
                        *load], check=True, stdout=subprocess.DEVNULL)
        report = json.load(open(out.name))
    assert not report["errors"], report["errors"]
    return report


def call(base, method, path, body=None, content_type="application/json"):
    request = urllib.request.Request(base + path, data=body, method=method,
                                     headers={"Content-Type": content_type})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


def start_batch(base, docs, copies):
    lines = "".join(json.dumps({"custom_id": f"d{i}", "method": "POST", "url": "/v1/embeddings",
                                "body": {"input": doc}}) + "\n"
                    for i, doc in enumerate(docs * copies)).encode()
    form = (b'--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
            b'--b\r\nContent-Disposition: form-data; name="file"; filename="c.jsonl"\r\n\r\n'
            + lines + b"\r\n--b--\r\n")
    file = call(base, "POST", "/v1/files", form, "multipart/form-data; boundary=b")
    return call(base, "POST", "/v1/batches",
                json.dumps({"input_file_id": file["id"], "endpoint": "/v1/embeddings",
                            "completion_window": "24h"}).encode())["id"]


def finished(base, batch_id):
    counts = call(base, "GET", f"/v1/batches/{batch_id}")["request_counts"]
    return counts["completed"] + counts["failed"], counts["total"]


def main():
    server_bin, embedctl, model = sys.argv[1:4]
    options = dict(a[2:].split("=", 1) for a in sys.argv[4:])
    seconds, load = int(options.get("seconds", 15)), float(options.get("load", 0.5))
    rounds = int(options.get("rounds", 3))
    work = tempfile.mkdtemp(prefix="batch-bench-")
    docs = documents(200)
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("\n".join(docs) + "\n")
    with ServerRunner(server_bin, [f"--model=m={model}", "--openai-listen=127.0.0.1:0",
                                   f"--batch-dir={work}/batches"]) as server:
        base = f"http://{server.openai_address}"
        capacity = bench(embedctl, server.grpc_address, corpus, seconds)["requests_per_second"]
        rate = max(1.0, round(capacity * load, 1))
        print(f"capacity {capacity:.1f} requests/s closed-loop at concurrency 2; "
              f"open-loop load {rate} requests/s ({load:.0%})")
        rows = []
        for round_ in range(rounds):
            alone = bench(embedctl, server.grpc_address, corpus, seconds, rate)
            # Lines enough to outlast the round at 400 a second (the server does about 200).
            batch_id = start_batch(base, docs, copies=max(20, 2 * seconds))
            time.sleep(1)  # the batch is validated and running
            before, _ = finished(base, batch_id)
            shared = bench(embedctl, server.grpc_address, corpus, seconds, rate)
            after, total = finished(base, batch_id)
            lines = after - before
            assert after < total, "the batch ended inside the round: raise copies"
            call(base, "POST", f"/v1/batches/{batch_id}/cancel", b"")
            while call(base, "GET", f"/v1/batches/{batch_id}")["status"] not in ("cancelled",
                                                                                 "completed"):
                time.sleep(0.2)
            p99 = (alone["latency_seconds"]["p99"], shared["latency_seconds"]["p99"])
            rows.append(p99[1] / p99[0])
            print(f"round {round_ + 1}: p99 alone {p99[0] * 1000:.1f} ms, with the batch "
                  f"{p99[1] * 1000:.1f} ms ({p99[1] / p99[0]:.2f}x); p50 "
                  f"{alone['latency_seconds']['p50'] * 1000:.1f} -> "
                  f"{shared['latency_seconds']['p50'] * 1000:.1f} ms; batch lines finished "
                  f"meanwhile {lines} ({lines / seconds:.1f}/s)")
        rows.sort()
        print(f"p99 with a batch / without: median of {len(rows)} rounds "
              f"{rows[len(rows) // 2]:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
