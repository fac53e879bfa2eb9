#!/usr/bin/python3
"""TRUNCATE reads only its window: a document at the per-document byte bound (2 MiB) sent with
truncation, against the same document's first 4 KiB (which hold more than the window), over
TEI's /embed and gRPC, keeping the start and the end. The two should cost about the same, less
the bytes on the wire and in the JSON parser. (Before, the whole 2 MiB was tokenized, then
refused past --max-tokens-per-document.)

usage: truncate_window_bench.py SERVER_BINARY MODEL_DIR [--runs 7]
"""
import argparse
import json
import os
import random
import statistics
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("model_dir")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    words = [w.strip() for w in open("/usr/share/dict/words") if w.strip().isascii()]
    rng = random.Random(5)
    text = " ".join(rng.choice(words) for _ in range(400000))[: 2 << 20]
    text = text[: text.rfind(" ")]
    with ServerRunner(args.server, [f"--model=m={args.model_dir}",
                                    "--openai-listen=127.0.0.1:0"]) as server:
        client = EmbeddingClient(server.grpc_address)

        def tei(body):
            request = urllib.request.Request(f"http://{server.openai_address}/embed",
                                             json.dumps(body).encode(),
                                             {"Content-Type": "application/json"})
            urllib.request.urlopen(request).read()

        def grpc(document, side):
            request = client.messages["embedding.v1.EmbedRequest"](
                model="m", inputs=[document],
                strategy=client.enums["LONG_TEXT_STRATEGY_TRUNCATE"],
                truncation_side=client.enums["TRUNCATION_SIDE_KEEP_" + side])
            client._unary("Embed", request, "embedding.v1.EmbedResponse")

        cases = [("TEI /embed, 2 MiB, keep start", lambda: tei({"inputs": text, "truncate": True})),
                 ("TEI /embed, first 4 KiB", lambda: tei({"inputs": text[:4096], "truncate": True})),
                 ("TEI /embed, 2 MiB, keep end",
                  lambda: tei({"inputs": text, "truncate": True, "truncation_direction": "Left"})),
                 ("gRPC, 2 MiB, keep start", lambda: grpc(text, "START")),
                 ("gRPC, first 4 KiB", lambda: grpc(text[:4096], "START")),
                 ("gRPC, 2 MiB, keep end", lambda: grpc(text, "END")),
                 ("gRPC, last 4 KiB", lambda: grpc(text[-4096:], "END"))]
        for name, run in cases:
            run()
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            print(f"{name}: median {statistics.median(times) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
