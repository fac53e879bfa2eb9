#!/usr/bin/python3
"""End to end with a real Prometheus (Debian's package): it scrapes the real server's /metrics,
evaluates our rule files, and answers every PromQL expression of the Grafana dashboard and the
rules. The collapse gauge is then checked against the same statistic recomputed here from the
vectors the server returned.

usage: prometheus_test.py SERVER_BINARY MODEL_DIR REPO_ROOT WRITE_DEMO_MODEL
"""
import json
import math
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, HERE)
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, MODEL, ROOT, WRITER = sys.argv[1:5]
WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "big", "red", "sun"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_failing_batch(openai_address):
    """A one-line Batch API job whose line names no served model: it ends in the error file,
    so the batch series exist without a vector joining the collapse windows checked here."""
    base = f"http://{openai_address}"

    def call(path, body, content_type="application/json"):
        request = urllib.request.Request(base + path, data=body, method="POST",
                                         headers={"Content-Type": content_type})
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.loads(r.read())
    line = json.dumps({"custom_id": "c", "method": "POST", "url": "/v1/embeddings",
                       "body": {"model": "nope", "input": "x"}}).encode()
    file = call("/v1/files", b'--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n'
                b'batch\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="l"\r\n'
                b"\r\n" + line + b"\n\r\n--b--\r\n", "multipart/form-data; boundary=b")
    batch = call("/v1/batches", json.dumps({"input_file_id": file["id"], "completion_window": "24h",
                                            "endpoint": "/v1/embeddings"}).encode())
    deadline = time.time() + 30
    while batch["status"] != "completed":
        assert time.time() < deadline, batch
        time.sleep(0.1)
        with urllib.request.urlopen(f"{base}/v1/batches/{batch['id']}", timeout=30) as r:
            batch = json.loads(r.read())
    assert batch["request_counts"]["failed"] == 1, batch


def words(n, rng):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def bucket(tokens):
    upper, name = 64, "0-63"
    while tokens >= upper and upper <= 8192:
        name = f"{upper}-{upper * 2 - 1}" if upper < 8192 else "8192+"
        upper *= 2
    return name


class Prometheus:
    def __init__(self, target, workdir):
        self.port = free_port()
        rules = [os.path.join(ROOT, "deploy/prometheus/rules", f)
                 for f in ("embedding_recording.yml", "embedding_alerts.yml")]
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n")
            f.write("rule_files:\n" + "".join(f"  - {r}\n" for r in rules))
            f.write("scrape_configs:\n  - job_name: embedding\n    static_configs:\n"
                    f"      - targets: ['{target}']\n")
        self.process = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={workdir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(workdir, "prometheus.log"), "w"))
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready")

    def query(self, expr):
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?" +
               urllib.parse.urlencode({"query": expr}))
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        if body["status"] != "success":
            raise AssertionError(f"{expr}: {body}")
        return body["data"]["result"]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def expressions():
    """(origin, PromQL) for every dashboard target and rule, made directly evaluable."""
    out = []
    dashboard = json.load(open(os.path.join(ROOT, "deploy/grafana/dashboards/embedding.json")))
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            # A window spanning the whole test, however slow the machine.
            expr = target["expr"].replace("$__rate_interval", "5m").replace("$model", ".*")
            out.append((f"dashboard '{panel['title']}'", expr))
    import yaml_lite
    for name in ("embedding_recording.yml", "embedding_alerts.yml"):
        for rule in yaml_lite.rules(os.path.join(ROOT, "deploy/prometheus/rules", name)):
            expr = rule["expr"]
            if "alert" in rule:
                # An alert's condition filters to nothing while all is well; `bool` keeps the
                # series (0 or 1) so the expression itself is exercised.
                expr = re.sub(r"(==|!=|>=|<=|>|<)\s*(?=[0-9.])", r"\1 bool ", expr, count=1)
            out.append((f"rule {rule.get('alert') or rule.get('record')}", expr))
    return out


class PrometheusEndToEnd(unittest.TestCase):
    def test_dashboard_rules_and_collapse_gauge(self):
        work = tempfile.mkdtemp(prefix="prom-e2e-")
        # A reranker beside the embedder, for the dashboard's score panels.
        subprocess.run([WRITER, f"--out={work}/rr", "--num_labels=1", "--layers=2",
                        "--hidden=64", "--heads=4", "--max_positions=130"],
                       check=True, capture_output=True)
        with ServerRunner(BINARY, [f"--model=tiny={MODEL}", f"--model=rr={work}/rr",
                                   "--collapse-window=512", "--openai-listen=127.0.0.1:0",
                                   f"--batch-dir={work}/batches"]) as server:
            prometheus = Prometheus(server.http_address, work)
            try:
                self.run_checks(server, prometheus)
            finally:
                prometheus.stop()

    def run_checks(self, server, prometheus):
        # Prometheus applies its targets a few seconds after it is ready. Traffic before the
        # first scrape would leave counters flat inside every window, so wait for it.
        deadline = time.time() + 60
        while not prometheus.query('up{job="embedding"} == 1'):
            self.assertLess(time.time(), deadline, "Prometheus never scraped the server")
            time.sleep(0.5)
        client = EmbeddingClient(server.grpc_address)
        rng = random.Random(7)
        sent = {}  # (bucket, tempscale) -> vectors
        # Every bucket with tau off and on; the 512-1023 bucket with enough documents (>= 32)
        # for the collapse-gap rule's minimum window.
        # Two rounds a few scrapes apart, so every series increases between samples and
        # rate() has something to see.
        plan = [(n, 2) for n in (10, 90, 200, 400, 1500, 3000, 5000, 9000)] + [(600, 17)]
        documents = 0
        for length, count in plan * 2:
            if (length, count) == plan[0] and documents:
                time.sleep(3)
            for tau in (1.0, 0.7):
                for _ in range(count):
                    text = words(length, rng)
                    response = client.embed([text], temperature=tau)
                    doc = response.documents[0]
                    self.assertEqual(doc.length_bucket, bucket(doc.token_count))
                    key = (doc.length_bucket, "off" if tau == 1.0 else "on")
                    sent.setdefault(key, []).append(list(doc.vector))
                    documents += 1
                if length <= 1500:  # short and long pairs, chunked past the 127-token window
                    client.rerank("which document", [words(length, rng)], model="rr",
                                  temperature=tau)
        try:  # one refused request, so error series exist too
            client.embed(["x"], temperature=-1.0)
        except Exception:
            pass
        run_failing_batch(server.openai_address)

        deadline = time.time() + 90
        while time.time() < deadline:
            got = prometheus.query('sum(embedding_documents_total{model="tiny"})')
            gap = prometheus.query("embedding:collapse_gap")
            if got and float(got[0]["value"][1]) == documents and gap:
                break
            time.sleep(1)
        else:
            self.fail("Prometheus never saw all documents and the collapse-gap recording")
        time.sleep(3)  # a few more scrapes so rate() has points on both sides of the traffic

        exprs = expressions()
        self.assertGreater(len(exprs), 20)
        for origin, expr in exprs:
            result = prometheus.query(expr)
            self.assertTrue(result, f"{origin}: empty result for {expr}")
            for series in result:
                value = float(series["value"][1])
                self.assertTrue(math.isfinite(value), f"{origin}: {series} from {expr}")

        for (bucket_name, tempscale), vectors in sent.items():
            n = len(vectors)
            total = [math.fsum(v[d] for v in vectors) for d in range(len(vectors[0]))]
            expected = (math.fsum(x * x for x in total) - n) / (n * (n - 1))
            result = prometheus.query(
                f'embedding_collapse_mean_cosine{{model="tiny",length_bucket="{bucket_name}",'
                f'tempscale="{tempscale}"}}')
            self.assertEqual(len(result), 1, (bucket_name, tempscale))
            self.assertAlmostEqual(float(result[0]["value"][1]), expected, delta=1e-4,
                                   msg=(bucket_name, tempscale))
            size = prometheus.query(
                f'embedding_collapse_window_size{{length_bucket="{bucket_name}",'
                f'tempscale="{tempscale}"}}')
            self.assertEqual(float(size[0]["value"][1]), n)
        print(f"{len(exprs)} PromQL expressions answered; collapse gauge matched "
              f"{len(sent)} series")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
