#!/usr/bin/python3
"""Late interaction on the retrieval demo, through a real server: what token pooling does to
MaxSim retrieval, and what a MaxSim rerank costs against embedding its documents.

The demo model is a single-vector model; its token states under a seeded random projection
(768 -> 128 in ColBERT, 256 -> 128 here: Johnson-Lindenstrauss keeps their dot products) in
PyLate's layout make a ColBERT-shaped model whose MaxSim is a meaningful retrieval signal,
not a trained one. Markers "" (PyLate's "no marker"), so the vocabulary stays as it is.

  1. Pooling: each paraphrase pair's first sentence is a query, every second sentence a
     document; accuracy@1 and mean reciprocal rank of MaxSim over the 41 documents, and the
     vectors kept, at pool_factor 1, 2 and 3.
  2. Cost: Rerank of one query against 100 documents of about 300 tokens, against Embed of the
     same documents plus Embed of the query, interleaved rounds, medians.

usage: late_interaction_bench.py SERVER_BINARY RETRIEVAL_DEMO_DIR DATA_DIR [ROUNDS]
"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from bge_m3_model import write_safetensors  # noqa: E402
from embedding_client import EmbeddingClient, multi_vector_rows  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

import torch  # noqa: E402

SERVER, MODEL, DATA = sys.argv[1], sys.argv[2], sys.argv[3]
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 5
DIM = 128


def write_colbert(out):
    shutil.copytree(MODEL, out)
    with open(os.path.join(out, "config.json")) as f:
        hidden = json.load(f)["hidden_size"]
    os.remove(os.path.join(out, "modules.json"))
    shutil.rmtree(os.path.join(out, "1_Pooling"), ignore_errors=True)
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "",
                    "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"}],
                  f)
    os.makedirs(os.path.join(out, "1_Dense"))
    with open(os.path.join(out, "1_Dense", "config.json"), "w") as f:
        json.dump({"in_features": hidden, "out_features": DIM, "bias": False,
                   "activation_function": "torch.nn.modules.linear.Identity"}, f)
    torch.manual_seed(20261207)
    write_safetensors(os.path.join(out, "1_Dense", "model.safetensors"),
                      {"linear.weight": torch.randn(DIM, hidden) / DIM ** 0.5})
    with open(os.path.join(out, "config_sentence_transformers.json"), "w") as f:
        json.dump({"query_prefix": "", "document_prefix": "", "query_length": 32,
                   "document_length": 320, "do_query_expansion": True,
                   "attend_to_expansion_tokens": False}, f)


def rows(document):
    return np.array(multi_vector_rows(document.multi_vector), dtype=np.float64)


def pooling(client):
    with open(os.path.join(DATA, "paraphrases.tsv")) as f:
        pairs = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
    queries = [rows(d) for d in client.embed([a for a, _ in pairs], model="colbert",
                                             input_role="query").documents]
    print("pool_factor  vectors kept  accuracy@1  MRR")
    for factor in (1, 2, 3):
        docs = [rows(d) for d in client.embed([b for _, b in pairs], model="colbert",
                                              input_role="document",
                                              pool_factor=factor).documents]
        ranks = []
        for i, q in enumerate(queries):
            scores = [float((q @ d.T).max(axis=1).sum()) for d in docs]
            ranks.append(1 + sum(s > scores[i] for s in scores))
        kept = sum(len(d) for d in docs)
        print(f"{factor:11d}  {kept:12d}  {sum(r == 1 for r in ranks) / len(ranks):10.3f}  "
              f"{statistics.fmean(1 / r for r in ranks):.3f}")


def cost(client):
    with open(os.path.join(DATA, "technical_snippets.txt")) as f:
        snippets = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    words = " ".join(snippets).split()
    documents = [" ".join(words[(i * 37) % len(words):][:270] or words[:270])
                 for i in range(100)]
    tokens = [len(t.tokens) for t in client.tokenize(documents, model="colbert",
                                                     add_special_tokens=False).inputs]
    query = "how do I list the files of a directory sorted by time"
    rerank, embed = [], []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        client.rerank(query, documents, model="colbert")
        rerank.append(time.perf_counter() - start)
        start = time.perf_counter()
        client.embed(documents, model="colbert", input_role="document")
        client.embed([query], model="colbert", input_role="query")
        embed.append(time.perf_counter() - start)
    print(f"100 documents of {statistics.mean(tokens):.0f} tokens on average; {ROUNDS} rounds")
    print(f"rerank (MaxSim)           {statistics.median(rerank) * 1e3:8.1f} ms")
    print(f"embed documents + query   {statistics.median(embed) * 1e3:8.1f} ms")
    print(f"ratio                     {statistics.median(rerank) / statistics.median(embed):8.2f}x")


def main():
    tmp = tempfile.mkdtemp(prefix="colbert-bench-")
    try:
        write_colbert(os.path.join(tmp, "colbert"))
        with ServerRunner(SERVER, [f"--model=colbert={tmp}/colbert",
                                   "--max-response-bytes=67108864"]) as server:
            client = EmbeddingClient(server.grpc_address)
            pooling(client)
            cost(client)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
