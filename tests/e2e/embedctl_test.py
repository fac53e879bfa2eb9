#!/usr/bin/python3
"""embedctl against a real server: output formats, exit codes, and the collapse report's
numbers recomputed here from the server's own vectors.

usage: embedctl_test.py SERVER_BINARY EMBEDCTL_BINARY MODEL_DIR
"""
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, HERE)
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

SERVER, EMBEDCTL, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
BUCKET_TARGETS = [("0-63", 48), ("64-127", 96), ("128-255", 192), ("256-511", 384),
                  ("512-1023", 768), ("1024-2047", 1536)]


def mean_pairwise_cosine(vectors):
    n = len(vectors)
    total = [math.fsum(v[d] for v in vectors) for d in range(len(vectors[0]))]
    return (math.fsum(x * x for x in total) - n) / (n * (n - 1))


class EmbedctlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerRunner(SERVER, [f"--model=tiny={MODEL}"])
        cls.env = dict(os.environ, EMBEDCTL_ADDRESS=cls.server.grpc_address)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def embedctl(self, *args, stdin=None):
        return subprocess.run([EMBEDCTL, *args], capture_output=True, text=True, env=self.env,
                              input=stdin, timeout=300)

    def test_embed_prints_json_lines(self):
        run = self.embedctl("embed", "--temperature=0.7", "--strategy=chunk_all",
                            "--chunk-tokens=8", "one two three four five six seven eight nine ten",
                            "second")
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = [json.loads(l) for l in run.stdout.splitlines()]
        self.assertEqual([l["index"] for l in lines], [0, 1])
        self.assertEqual(len(lines[0]["vector"]), 96)
        self.assertAlmostEqual(lines[0]["temperature"], 0.7, places=6)
        self.assertEqual(len(lines[0]["chunks"]), 2)
        self.assertEqual(lines[0]["chunks"][1]["token_span"], [8, 10])

    def test_embed_reads_stdin_one_document_per_line(self):
        run = self.embedctl("embed", "--input=-", stdin="first\nsecond\nthird\n")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(len(run.stdout.splitlines()), 3)

    def test_errors_print_the_code_and_exit_nonzero(self):
        run = self.embedctl("embed", "--temperature=9", "x")
        self.assertEqual(run.returncode, 1)
        self.assertIn("INVALID_ARGUMENT", run.stderr)
        self.assertIn("temperature", run.stderr)
        run = self.embedctl("embed", "--model=nope", "x")
        self.assertEqual(run.returncode, 1)
        self.assertIn("NOT_FOUND", run.stderr)
        self.assertEqual(self.embedctl("frobnicate").returncode, 2)

    def test_health(self):
        run = self.embedctl("health")
        self.assertEqual((run.returncode, run.stdout.strip()), (0, "SERVING"))
        down = subprocess.run([EMBEDCTL, "health", "--address=127.0.0.1:1", "--timeout-s=2"],
                              capture_output=True, text=True)
        self.assertNotEqual(down.returncode, 0)
        self.assertIn("UNAVAILABLE", down.stderr + down.stdout)

    def bench(self, *args):
        path = os.path.join(tempfile.mkdtemp(), "bench.json")
        run = self.embedctl("bench", f"--json={path}", *args)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("throughput", run.stdout)
        return json.load(open(path))

    def test_bench_report_adds_up(self):
        report = self.bench("--requests=40", "--concurrency=4", "--median-words=50",
                            "--strategies=chunk_mean,chunk_all,late_chunking,truncate",
                            f"--metrics-address={self.server.http_address}")
        self.assertEqual(report["requests"], 40)
        self.assertEqual(report["ok"] + sum(report["errors"].values()), report["requests"])
        self.assertEqual(report["ok"], 40, report["errors"])
        self.assertEqual(report["documents"], 40)
        self.assertGreater(report["tokens"], 40)
        latency = report["latency_seconds"]
        self.assertTrue(0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"])
        self.assertAlmostEqual(report["requests_per_second"], 40 / report["seconds"], places=3)
        self.assertGreater(report["server"]["batches"], 0)
        self.assertTrue(0 <= report["server"]["mean_padding_share"] <= 1)

    def test_bench_counts_injected_deadlines_and_cancellations(self):
        report = self.bench("--requests=60", "--concurrency=6", "--median-words=3000",
                            "--deadline-share=0.4", "--injected-deadline-ms=1",
                            "--cancel-share=0.3")
        self.assertEqual(report["ok"] + sum(report["errors"].values()), 60)
        self.assertGreater(report["errors"].get("DEADLINE_EXCEEDED", 0), 0)
        self.assertGreater(report["errors"].get("CANCELLED", 0), 0)
        self.assertNotIn("WRONG_ANSWER", report["errors"])

    def test_bench_takes_a_corpus_in_order(self):
        words = ["the", "cat", "sat", "on", "a", "mat"]
        corpus = [" ".join(words[i % 6] for i in range(n)) for n in (3, 40, 700, 9, 2500)]
        path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
        open(path, "w").write("\n".join(corpus) + "\n")
        report = self.bench("--requests=5", "--concurrency=2", f"--corpus={path}",
                            "--corpus-in-order")
        client = EmbeddingClient(self.server.grpc_address)
        # Each document exactly once: random draws would repeat some and miss others.
        want = sum(client.embed([doc]).usage.tokens for doc in corpus)
        self.assertEqual(report["ok"], 5, report["errors"])
        self.assertEqual(report["tokens"], want)

    def test_bench_open_loop_keeps_its_rate(self):
        report = self.bench("--rate=40", "--duration-s=1.5", "--median-words=20")
        self.assertTrue(50 <= report["requests"] <= 62, report["requests"])
        self.assertEqual(report["ok"], report["requests"])

    def test_collapse_report_matches_a_recomputation(self):
        rng = random.Random(5)
        words = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "sun", "sky"]
        corpus = [" ".join(rng.choice(words) for _ in range(800)) for _ in range(4)]
        work = tempfile.mkdtemp()
        corpus_path = os.path.join(work, "corpus.txt")
        open(corpus_path, "w").write("\n".join(corpus) + "\n")
        report_path, chart_path = os.path.join(work, "r.json"), os.path.join(work, "r.svg")
        run = self.embedctl("collapse-report", f"--corpus={corpus_path}", "--cut-to-buckets",
                            "--temperatures=0.6,1", "--compare-chunk-tokens=128",
                            f"--json={report_path}", f"--chart={chart_path}")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("recommended tau per bucket", run.stdout)
        report = json.load(open(report_path))
        svg = open(chart_path).read()
        self.assertTrue(svg.startswith("<svg") and "tau = 0.60, native" in svg and
                        "tau = 0.60, chunks of 128" in svg and "polyline" in svg)

        # The same computation, independently.
        client = EmbeddingClient(self.server.grpc_address)
        cut = []
        for doc in corpus:
            tokens = client.tokenize([doc], add_special_tokens=False).inputs[0].tokens
            for _, target in BUCKET_TARGETS:
                if len(tokens) >= target:
                    cut.append(doc.encode()[:tokens[target - 1].byte_span.end].decode())
        groups = {}
        modes = {"native": {}, "chunks of 128": {"strategy": "LONG_TEXT_STRATEGY_CHUNK_MEAN",
                                   "chunk_tokens": 128}}
        for mode, options in modes.items():
            for tau in (0.6, 1.0):
                response = client.embed(cut, temperature=tau, **options)
                for doc in response.documents:
                    group = groups.setdefault((mode, doc.length_bucket, tau), [[], []])
                    group[0].append(list(doc.vector))
                    group[1].append(doc.high_frequency_ratio)
        cells = {(c["mode"], c["length_bucket"], round(c["temperature"], 4)): c
                 for c in report["cells"]}
        self.assertEqual(len(cells), len(groups))
        # Chunks of 128 change every bucket past one chunk: the comparison is not a copy.
        self.assertNotAlmostEqual(cells[("native", "512-1023", 1.0)]["mean_cosine"],
                                  cells[("chunks of 128", "512-1023", 1.0)]["mean_cosine"], 6)
        for (mode, bucket, tau), (vectors, ratios) in groups.items():
            cell = cells[(mode, bucket, tau)]
            self.assertEqual(cell["count"], len(vectors))
            self.assertAlmostEqual(cell["mean_cosine"], mean_pairwise_cosine(vectors), delta=1e-6)
            self.assertAlmostEqual(cell["mean_high_frequency_ratio"],
                                   math.fsum(ratios) / len(ratios), delta=1e-6)
        reference = mean_pairwise_cosine(groups[("native", "0-63", 1.0)][0])
        self.assertAlmostEqual(report["reference"]["mean_cosine"], reference, delta=1e-6)
        for bucket in report["buckets"]:
            best = min((0.6, 1.0), key=lambda t: abs(
                mean_pairwise_cosine(groups[("native", bucket, t)][0]) - reference))
            self.assertAlmostEqual(report["recommended_temperature"][bucket], best, places=5)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
