#!/usr/bin/python3
"""The HTTP door against the gRPC door on one server, in one run (README: Tests and
benchmarks). Same 30-word document, keep-alive clients, closed loop:
  gRPC: embedctl bench --corpus (one line) --concurrency C
  HTTP: wrk -c C with a POST /v1/embeddings of the same text
at C = 16, 64, 256, the two interleaved, each twice; the server's CPU seconds per request read
from /proc. Then the idle server's thread count, the CPU that 200 idle keep-alive connections
cost, and how long after a client disconnects its slot comes back.

usage: http_door_bench.py SERVER EMBEDCTL MODEL_DIR [--seconds=8]
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from server_runner import ServerRunner  # noqa: E402

TEXT = " ".join(["the quick brown fox jumps over the lazy dog near a river bank today"] * 2)[:160]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^Threads:\s+(\d+)", f.read(), re.M).group(1))


def metric(http, name):
    text = urllib.request.urlopen(f"http://{http}/metrics").read().decode()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def grpc_run(embedctl, address, corpus, concurrency, seconds):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([embedctl, "bench", f"--address={address}", f"--corpus={corpus}",
                        f"--concurrency={concurrency}", f"--duration_s={seconds}",
                        "--tempscale_share=0", f"--json={out.name}"],
                       check=True, stdout=subprocess.DEVNULL)
        report = json.load(open(out.name))
    assert report["errors"] == {} or not report["errors"], report["errors"]
    return report["requests_per_second"], report["ok"]


def http_run(address, lua, concurrency, seconds):
    out = subprocess.run(["wrk", "-t2", f"-c{concurrency}", f"-d{seconds}s", "--latency",
                          "-s", lua, f"http://{address}/v1/embeddings"],
                         check=True, capture_output=True, text=True).stdout
    assert "Non-2xx" not in out, out
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    return rps, total


def main():
    server_bin, embedctl, model = sys.argv[1:4]
    seconds = int(next((a.split("=")[1] for a in sys.argv[4:] if a.startswith("--seconds=")), 8))
    work = tempfile.mkdtemp()
    corpus = os.path.join(work, "corpus.txt")
    open(corpus, "w").write(TEXT + "\n")
    lua = os.path.join(work, "post.lua")
    open(lua, "w").write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                         f"wrk.body = {json.dumps(json.dumps({'input': TEXT}))}\n")
    server = ServerRunner(server_bin, [f"--model=m={model}", "--openai-listen=127.0.0.1:0"])
    pid = server.process.pid
    try:
        grpc_run(embedctl, server.grpc_address, corpus, 4, 2)  # warm up both doors
        http_run(server.openai_address, lua, 4, 2)
        print(f"idle server threads: {threads(pid)}")
        for concurrency in (16, 64, 256):
            rows = {"grpc": [], "http": []}
            for _ in range(2):
                for door in ("grpc", "http"):
                    before = cpu_seconds(pid)
                    if door == "grpc":
                        rps, n = grpc_run(embedctl, server.grpc_address, corpus, concurrency,
                                          seconds)
                    else:
                        rps, n = http_run(server.openai_address, lua, concurrency, seconds)
                    rows[door].append((rps, (cpu_seconds(pid) - before) / max(n, 1)))
            g = sum(r for r, _ in rows["grpc"]) / 2
            h = sum(r for r, _ in rows["http"]) / 2
            gc = sum(c for _, c in rows["grpc"]) / 2 * 1000
            hc = sum(c for _, c in rows["http"]) / 2 * 1000
            print(f"c={concurrency:3d}: gRPC {g:7.1f} req/s ({gc:.2f} ms CPU/req)  "
                  f"HTTP {h:7.1f} req/s ({hc:.2f} ms CPU/req)  HTTP/gRPC {h / g:.2f}  "
                  f"runs {[round(r) for r, _ in rows['grpc']]} / {[round(r) for r, _ in rows['http']]}")
        print(f"threads after load: {threads(pid)}")

        host, port = server.openai_address.rsplit(":", 1)
        while metric(server.http_address, "embedding_in_flight_requests") > 0:
            time.sleep(0.05)  # what the last closed loop left in flight
        time.sleep(1)
        before, t0 = cpu_seconds(pid), time.time()
        time.sleep(3)
        print(f"idle, no connections: {100 * (cpu_seconds(pid) - before) / (time.time() - t0):.2f}%"
              " of a core")
        idle = []
        for _ in range(200):
            s = socket.create_connection((host, int(port)))
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(65536)
            idle.append(s)
        before, t0 = cpu_seconds(pid), time.time()
        time.sleep(3)  # within the 5 s keep-alive idle timeout
        share = (cpu_seconds(pid) - before) / (time.time() - t0)
        print(f"200 idle keep-alive connections: {100 * share:.2f}% of a core, "
              f"{threads(pid)} threads")
        for s in idle:
            s.close()

        body = json.dumps({"input": [" ".join(f"w{i % 97}" for i in range(20000))]}).encode()
        with socket.create_connection((host, int(port))) as s:
            s.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: "
                      + str(len(body)).encode() + b"\r\n\r\n" + body)
            while metric(server.http_address, "embedding_in_flight_requests") < 1:
                time.sleep(0.005)
            time.sleep(0.2)
            closed = time.time()
        while metric(server.http_address, "embedding_in_flight_requests") > 0:
            time.sleep(0.002)
        print(f"slot back {1000 * (time.time() - closed):.1f} ms after the client closed")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
