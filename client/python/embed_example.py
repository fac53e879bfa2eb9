#!/usr/bin/python3
"""The cross-language example: two documents with TempScale off and on, and a long document
with CHUNK_ALL. Prints the vectors as JSON. Usage: embed_example.py ADDRESS"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from embedding_client import EmbeddingClient  # noqa: E402


def main():
    client = EmbeddingClient(sys.argv[1])
    docs = ["The quick brown fox.", "jumps over the lazy dog"]
    long = " ".join(["the", "cat", "sat", "on", "a", "mat"][i % 6] for i in range(1500))
    off = client.embed(docs)
    on = client.embed(docs, temperature=0.7)
    doc = client.embed([long], strategy="LONG_TEXT_STRATEGY_CHUNK_ALL", chunk_tokens=200,
                       chunk_overlap_tokens=20).documents[0]
    print(json.dumps({
        "off": [list(d.vector) for d in off.documents],
        "on": [list(d.vector) for d in on.documents],
        "long": list(doc.vector),
        "chunks": [{"vector": list(c.vector), "token_span": [c.token_span.start, c.token_span.end]}
                   for c in doc.chunks],
    }))


if __name__ == "__main__":
    main()
