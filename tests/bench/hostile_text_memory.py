#!/usr/bin/python3
"""What a refused 16 MiB text costs the server: its peak resident set (VmHWM) before and after a
gRPC Tokenize, a TEI /tokenize and an OpenAI /v1/embeddings call, each carrying one 16 MiB text
(refused: once past the token limit after tokenizing it, now past its byte bound before).

usage: hostile_text_memory.py SERVER_BINARY MODEL_DIR
"""
import json
import os
import sys
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402
from bge_m3_outputs_bench import isa  # noqa: E402


def peak_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024


def post(address, path, body):
    request = urllib.request.Request(f"http://{address}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as r:
            return r.status, r.read()[:200]
    except urllib.error.HTTPError as e:
        return e.code, e.read()[:200]


def main():
    binary, model = sys.argv[1], sys.argv[2]
    text = ("word " * (4 << 20))[:16 << 20]
    print(f"CPU: {isa()}")
    doors = [
        ("gRPC Tokenize", lambda server: EmbeddingClient(server.grpc_address, timeout=300)
         .tokenize([text])),
        ("TEI /tokenize", lambda server: post(server.openai_address, "/tokenize",
                                              {"inputs": text})),
        ("OpenAI /v1/embeddings", lambda server: post(server.openai_address, "/v1/embeddings",
                                                      {"model": "m", "input": text})),
    ]
    # A server of its own per door: freed memory the allocator keeps would hide the next peak.
    for name, call in doors:
        server = ServerRunner(binary, [f"--model=m={model}", "--openai-listen=127.0.0.1:0"])
        try:
            before = peak_mib(server.process.pid)
            try:
                answer = call(server)
            except Exception as e:  # the gRPC refusal
                answer = str(e).splitlines()[0][:160]
            after = peak_mib(server.process.pid)
            print(f"{name}: peak RSS {before:.0f} -> {after:.0f} MiB (+{after - before:.0f}); "
                  f"answer: {str(answer)[:160]}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
