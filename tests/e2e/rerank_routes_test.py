#!/usr/bin/python3
"""Rerank and Classify on every door, beside an embedder on the same server: gRPC's Rerank and
Classify, TEI's /rerank, /predict and /similarity, and the Cohere/Jina shape on /v1/rerank and
/v2/rerank through Cohere's own SDK (npm cohere-ai, what LangChain's and LlamaIndex's Cohere
rerankers call). Every door gives gRPC's numbers; scores are recomputed from the raw logits
(sigmoid, softmax), orderings and ties, top_n and echoed documents checked; every refusal
asserts its status and the field it names; the score metrics count what was scored and
admission's books return to zero.

The C++ client (embedctl rerank and classify) and the Node client's rerank give the same
numbers.

usage: rerank_routes_test.py SERVER_BINARY WRITE_DEMO_MODEL EMBEDCTL_BINARY
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request

import grpc

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, HERE)
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner, post_json as post  # noqa: E402

BINARY, WRITER, EMBEDCTL = sys.argv[1:4]
NODE_CLIENTS = os.path.join(HERE, "cohere", "rerank_clients.mjs")
NODE_CLIENT = os.path.join(HERE, "..", "..", "client", "node", "embedding_client.js")
QUERY = "where do owls hunt"
DOCS = ["Owls hunt voles at night.", "Markets fell on Friday.", "Owls hunt voles at night.",
        "", "Tawny owls hunt in woodland, barn owls over open fields."]
LONG = " ".join(["herons fish in the shallows below the old mill"] * 20)  # past the window


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


class RerankRoutesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rerank-")
        for name, labels in (("embedder", 0), ("reranker", 1), ("classifier", 3)):
            subprocess.run([WRITER, f"--out={cls.tmp}/{name}", "--layers=2", "--hidden=64",
                            "--heads=4", "--max_positions=64", "--vocab_size=9000",
                            f"--num_labels={labels}"], check=True, capture_output=True)
        cls.server = ServerRunner(BINARY, [f"--model={n}={cls.tmp}/{n}"
                                           for n in ("embedder", "reranker", "classifier")]
                                  + ["--openai-listen=127.0.0.1:0"])
        cls.client = EmbeddingClient(cls.server.grpc_address)
        cls.base = f"http://{cls.server.openai_address}"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def grpc_refusal(self, call, field):
        with self.assertRaises(grpc.RpcError) as refused:
            call()
        self.assertEqual(refused.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(refused.exception.details().startswith(field + ":"),
                        refused.exception.details())
        return refused.exception.details()

    def test_model_info_names_kind_labels_and_head(self):
        info = {m.name: m for m in self.client.list_models().models}
        self.assertEqual(info["embedder"].kind, "embedding")
        self.assertEqual((info["reranker"].kind, list(info["reranker"].labels),
                          info["reranker"].head, info["reranker"].score_function),
                         ("reranker", ["LABEL_0"], "BertForSequenceClassification", "sigmoid"))
        self.assertEqual((info["classifier"].kind, info["classifier"].score_function),
                         ("classifier", "softmax"))
        self.assertEqual(info["classifier"].dimensions, 3)

    def test_grpc_rerank_orders_ties_cuts_and_echoes(self):
        raw = self.client.rerank(QUERY, DOCS, model="reranker", raw_scores=True)
        scored = self.client.rerank(QUERY, DOCS, model="reranker", return_documents=True)
        logits = {r.index: r.score for r in raw.results}
        self.assertEqual(sorted(logits), list(range(len(DOCS))))
        for r in scored.results:
            self.assertAlmostEqual(r.score, sigmoid(logits[r.index]), places=6)
            self.assertEqual(r.document, DOCS[r.index])
        scores = [r.score for r in scored.results]
        self.assertEqual(scores, sorted(scores, reverse=True))
        # Documents 0 and 2 are the same text: equal scores, the earlier index first.
        order = [r.index for r in scored.results]
        self.assertEqual(logits[0], logits[2])
        self.assertLess(order.index(0), order.index(2))
        top = self.client.rerank(QUERY, DOCS, model="reranker", top_n=2)
        self.assertEqual([r.index for r in top.results], order[:2])
        self.assertEqual(top.usage.documents, len(DOCS))
        self.assertEqual(top.strategy, self.client.enums["LONG_TEXT_STRATEGY_CHUNK_MAX"])

    def test_long_document_strategies(self):
        chunked = self.client.rerank(QUERY, [LONG], model="reranker", raw_scores=True,
                                     return_chunks=True).results[0]
        self.assertGreater(chunked.chunk_count, 2)
        self.assertAlmostEqual(chunked.score, max(c.scores[0] for c in chunked.chunks), places=6)
        cut = {side: self.client.rerank(QUERY, [LONG], model="reranker", raw_scores=True,
                                        strategy="LONG_TEXT_STRATEGY_TRUNCATE",
                                        truncation_side=f"TRUNCATION_SIDE_KEEP_{side}").results[0]
               for side in ("START", "END")}
        self.assertTrue(cut["START"].truncated and cut["END"].truncated)
        # The first window is the first chunk; the last window is not the last (shorter) chunk.
        self.assertAlmostEqual(cut["START"].score, chunked.chunks[0].scores[0], places=5)
        self.assertNotAlmostEqual(cut["END"].score, cut["START"].score, places=3)
        refused = self.grpc_refusal(lambda: self.client.rerank(
            QUERY, [LONG], model="reranker", strategy="LONG_TEXT_STRATEGY_REJECT"), "documents[0]")
        self.assertIn("window", refused)

    def test_classify_softmax_and_pairs(self):
        raw = self.client.classify(["owls", "markets"], model="classifier", raw_scores=True)
        scored = self.client.classify(["owls", "markets"], model="classifier")
        for r, s in zip(raw.results, scored.results):
            logits = [l.score for l in r.labels]
            top = max(logits)
            total = sum(math.exp(x - top) for x in logits)
            for label, x in zip(s.labels, logits):
                self.assertAlmostEqual(label.score, math.exp(x - top) / total, places=6)
            self.assertEqual([l.label for l in s.labels], ["LABEL_0", "LABEL_1", "LABEL_2"])
        paired = self.client.classify(["owls"], model="classifier", text_pairs=[QUERY])
        self.assertNotAlmostEqual(paired.results[0].labels[0].score,
                                  scored.results[0].labels[0].score, places=4)

    def test_http_doors_give_grpc_numbers(self):
        want = {r.index: r.score for r in self.client.rerank(QUERY, DOCS, model="reranker").results}
        status, tei = post(self.base, "/rerank", {"query": QUERY, "texts": DOCS,
                                                  "return_text": True})
        self.assertEqual(status, 200)
        self.assertEqual([r["index"] for r in tei],
                         sorted(want, key=lambda i: (-want[i], i)))
        for r in tei:
            self.assertAlmostEqual(r["score"], want[r["index"]], places=6)
            self.assertEqual(r["text"], DOCS[r["index"]])
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"query": QUERY, "documents": DOCS, "top_n": 3}, f)
        out = subprocess.run(["node", NODE_CLIENTS, self.base, "reranker", f.name],
                             capture_output=True, text=True, timeout=120)
        os.unlink(f.name)
        self.assertEqual(out.returncode, 0, out.stderr)
        sdk = json.loads(out.stdout)
        for version in ("v1", "v2"):
            results = sdk[version]["results"]
            self.assertEqual(len(results), 3, version)
            for r in results:
                self.assertAlmostEqual(r["relevanceScore"], want[r["index"]], places=6)
                self.assertEqual(r["document"]["text"], DOCS[r["index"]], version)
        self.assertEqual([r["index"] for r in sdk["tei"]], [r["index"] for r in tei])
        # /predict: one text, one pair, a batch of pairs; by descending score.
        status, one = post(self.base, "/predict", {"inputs": "owls"})
        self.assertEqual(status, 200)
        self.assertAlmostEqual(one[0]["score"], self.client.classify(
            ["owls"], model="reranker").results[0].labels[0].score, places=6)
        status, batch = post(self.base, "/predict", {"inputs": [[QUERY, DOCS[0]], [QUERY, DOCS[1]]]})
        self.assertEqual(status, 200)
        self.assertAlmostEqual(batch[1][0]["score"], want[1], places=6)
        # /similarity on the embedder: each sentence's cosine to the source, from gRPC vectors.
        vectors = [list(d.vector) for d in self.client.embed(["owls", "owls hunt", "markets"],
                                                             model="embedder").documents]
        status, cosines = post(self.base, "/similarity", {"inputs": {
            "source_sentence": "owls", "sentences": ["owls hunt", "markets"]}})
        self.assertEqual(status, 200)
        for got, v in zip(cosines, vectors[1:]):
            self.assertAlmostEqual(got, sum(a * b for a, b in zip(vectors[0], v)), places=5)

    def test_embedctl_and_node_clients(self):
        want = self.client.rerank(QUERY, DOCS, model="reranker", top_n=2)
        out = subprocess.run([EMBEDCTL, "rerank", f"--address={self.server.grpc_address}",
                              "--model=reranker", "--top_n=2", QUERY, *DOCS],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        self.assertEqual([(l["index"], l["document"]) for l in lines],
                         [(r.index, DOCS[r.index]) for r in want.results])
        for line, r in zip(lines, want.results):
            self.assertAlmostEqual(line["score"], r.score, places=6)
        out = subprocess.run([EMBEDCTL, "classify", f"--address={self.server.grpc_address}",
                              "--model=classifier", f"--text_pair={QUERY}", "owls"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        got = json.loads(out.stdout)["labels"]
        paired = self.client.classify(["owls"], model="classifier", text_pairs=[QUERY])
        for label in paired.results[0].labels:
            self.assertAlmostEqual(got[label.label], label.score, places=6)
        script = (f"const c = require({json.dumps(NODE_CLIENT)}).connect("
                  f"{json.dumps(self.server.grpc_address)});"
                  f"c.rerank({{model: 'reranker', query: {json.dumps(QUERY)}, "
                  f"documents: {json.dumps(DOCS)}, top_n: 2}})"
                  ".then(r => { console.log(JSON.stringify(r.results)); c.close(); });")
        out = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        node = json.loads(out.stdout)
        self.assertEqual([n["index"] for n in node], [r.index for r in want.results])
        for n, r in zip(node, want.results):
            self.assertAlmostEqual(n["score"], r.score, places=6)

    def test_rerank_eval_figures_are_recomputed_from_the_servers_scores(self):
        report_path, tasks_path = f"{self.tmp}/rerank-eval.json", f"{self.tmp}/tasks.json"
        corpus = os.path.join(HERE, "..", "data", "retrieval_demo", "technical_snippets.txt")
        out = subprocess.run([EMBEDCTL, "rerank-eval", f"--address={self.server.grpc_address}",
                              "--model=reranker", f"--corpus={corpus}", "--docs-per-bucket=16",
                              "--max-bucket=64-127", "--rerank-temperatures=1,0.8",
                              f"--json={report_path}", f"--tasks-json={tasks_path}"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(report_path) as f:
            report = json.load(f)
        columns = [(c["strategy"], c["tau"]) for c in report["columns"]]
        self.assertEqual(columns, [("truncate", 1.0), ("truncate", 0.8), ("chunk_max", 1.0),
                                   ("chunk_max", 0.8)])
        row = {r["bucket"]: r for r in report["rows"]}["64-127"]  # past the 61-token window
        with open(tasks_path) as f:
            task = {t["bucket"]: t for t in json.load(f)["buckets"]}["64-127"]
        pool, ranks = task["pool_size"], []
        for i, query in enumerate(task["queries"]):
            first = i // pool * pool
            docs = task["documents"][first:first + pool]
            got = self.client.rerank(query, docs, model="reranker", temperature=0.8,
                                     strategy="LONG_TEXT_STRATEGY_CHUNK_MAX", raw_scores=True)
            scores = {r.index: r.score for r in got.results}
            rank = 1 + sum(1 for j in scores if j != i - first and scores[j] >= scores[i - first])
            ranks.append(1.0 / rank if rank <= 10 else 0.0)
        self.assertAlmostEqual(row["mrr_at_10"][3], sum(ranks) / len(ranks), places=9)
        gain = row["gain_over_tau_1"][3]
        self.assertIsNone(row["gain_over_tau_1"][2])
        self.assertGreaterEqual(gain["standard_error"], 0)
        refused = subprocess.run([EMBEDCTL, "rerank-eval", f"--address={self.server.grpc_address}",
                                  "--model=reranker", f"--corpus={corpus}",
                                  "--rerank-temperatures=0.9,0.8"],
                                 capture_output=True, text=True, timeout=60)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("--rerank-temperatures: must include 1, the baseline", refused.stderr)

    def test_refusals_name_their_field(self):
        client = self.client
        self.grpc_refusal(lambda: client.embed(["x"], model="reranker"), "model")
        self.grpc_refusal(lambda: client.rerank(QUERY, ["x"], model="embedder"), "model")
        self.grpc_refusal(lambda: client.classify(["x"], model="embedder"), "model")
        self.grpc_refusal(lambda: client.rerank(QUERY, ["x"], model="reranker", top_n=0), "top_n")
        self.grpc_refusal(lambda: client.rerank(QUERY, ["x"], model="reranker",
                                                strategy="LONG_TEXT_STRATEGY_CHUNK_ALL"),
                          "strategy")
        self.grpc_refusal(lambda: client.rerank(QUERY, [], model="reranker"), "documents")
        details = self.grpc_refusal(lambda: client.rerank(" ".join(["owl"] * 80), ["x"],
                                                          model="reranker"), "query")
        self.assertIn("allowed [0, 60]", details)  # 64 less 3 specials less 1 document token
        self.grpc_refusal(lambda: client.rerank(QUERY, [LONG], model="reranker",
                                                chunk_overlap_tokens=58), "chunk_overlap_tokens")
        self.grpc_refusal(lambda: client.classify(["a", "b"], model="classifier",
                                                  text_pairs=["q"]), "text_pairs")
        # An instruction reaches only a prompted reranker (Qwen3-Reranker's).
        self.assertIn("takes none", self.grpc_refusal(lambda: client.rerank(
            QUERY, ["x"], model="reranker", instruction="Find owls"), "instruction"))
        self.grpc_refusal(lambda: client.classify(["x"], model="classifier", text_pairs=["q"],
                                                  instruction="Find owls"), "instruction")
        for path, body, field in (
                ("/v1/embeddings", {"model": "reranker", "input": "x"}, "model"),
                ("/v2/rerank", {"query": QUERY}, "documents"),
                ("/v2/rerank", {"query": QUERY, "documents": ["x"], "top_n": 0}, "top_n"),
                ("/v1/rerank", {"documents": ["x"]}, "query"),
                ("/v1/rerank", {"query": QUERY, "documents": [{"title": "x"}]}, "documents[0]"),
                ("/v2/rerank", {"model": "embedder", "query": QUERY, "documents": ["x"]}, "model"),
                ("/v2/rerank", {"query": QUERY, "documents": ["x"], "strategy": "late_chunking"},
                 "strategy"),
                ("/v1/rerank", {"query": QUERY, "documents": ["x"], "instruction": "owls"},
                 "instruction"),
                ("/v2/rerank", {"query": QUERY, "documents": ["x"], "instruction": 3},
                 "instruction")):
            status, body = post(self.base, path, body)
            self.assertEqual(status, 400, (path, body))
            self.assertEqual(body["error"]["param"], field, (path, body))
        # TEI's doors answer the core's refusals (past the parse) with 413, as TEI does.
        status, body = post(self.base, "/rerank", {"query": QUERY, "texts": ["x"],
                                                   "instruction": "owls"})
        self.assertEqual((status, body["error_type"]), (413, "Validation"), body)
        self.assertTrue(body["error"].startswith("instruction:"), body)
        for path, body, field in (("/rerank", {"texts": ["x"]}, "query"),
                                  ("/predict", {"inputs": [["a", "b"], "c"]}, "inputs[1]"),
                                  ("/similarity", {"inputs": "x"}, "inputs")):
            status, body = post(self.base, path, body)
            self.assertEqual(status, 422, (path, body))
            self.assertEqual(body["error_type"], "Validation")
            self.assertTrue(body["error"].startswith(field + ":"), body)

    def test_metrics_count_scored_pairs_and_books_return_to_zero(self):
        def scrape():
            with urllib.request.urlopen(f"http://{self.server.http_address}/metrics") as r:
                return r.read().decode()

        def pairs(text):
            return sum(float(v) for v in re.findall(
                r'embedding_scored_pairs_total\{[^}]*method="Rerank"[^}]*model="reranker"[^}]*\}'
                r' (\S+)', text))
        before = pairs(scrape())
        self.client.rerank(QUERY, DOCS + [LONG], model="reranker", top_n=1)
        text = scrape()
        self.assertEqual(pairs(text) - before, len(DOCS) + 1)
        self.assertRegex(text, r'embedding_score_count\{[^}]*model="reranker"')
        self.assertRegex(text, r'embedding_scored_chunks_per_pair_bucket\{[^}]*model="reranker"')
        self.assertRegex(text, r'\nembedding_queued_tokens 0\n')
        self.assertRegex(text, r'\nembedding_in_flight_requests 0\n')


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
