#!/usr/bin/python3
"""`embedctl calibrate` and `embedctl eval` on the retrieval demo model and a fixed corpus
(WordNet's noun glosses, from the pinned wordnet-base), through a real server:

- the passkey task's figures (MRR@10 within each pool, paired gains against tau = 1 and their
  standard errors) recomputed here from vectors this test asks for itself;
- the fitted schedule scores at least tau = 1 in every bucket of the calibration split, takes a
  tau below 1 only where its paired gain passes the significance test, never increases, and is
  what the schedule file says; the server reloads it (a new file is a new version), reports it in
  GetModelInfo, and AUTO requests then get the schedule's tau at each sequence's length;
- one bucket and column of `eval` recomputed here from vectors this test asks for itself;
- on a corpus built to break uniqueness (copies, shared 12-token openings, fragments of other
  documents), every task of every kind gives each query exactly one candidate holding its text,
  as the tasks file proves and this test recounts, and the figures are recomputed here;
- the probe stays inside its 4,096-token bound, and `--resume` of a finished run embeds nothing;
- the commands' errors name the flag.

usage: tempscale_calibration_test.py SERVER_BINARY EMBEDCTL_BINARY MODEL_DIR DATA_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
import unittest
import urllib.request
import xml.etree.ElementTree as ElementTree

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, HERE)
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

SERVER, EMBEDCTL, MODEL, DATA = sys.argv[1:5]
GRID = [1.0, 0.8, 0.6]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def reciprocal_ranks(queries, documents, pool):
    """Query i finds document i among its pool's documents; a tie ranks it last."""
    ranks = []
    for i, q in enumerate(queries):
        first = i // pool * pool
        right = dot(q, documents[i])
        rank = 1 + sum(1 for j in range(first, first + pool)
                       if j != i and dot(q, documents[j]) >= right)
        ranks.append(1.0 / rank if rank <= 10 else 0.0)
    return ranks


def normalized(text):
    """The uniqueness rule's text, from Python's own Unicode tables: NFKC, case folded, marks
    stripped, whitespace dropped."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    kept = "".join(c for c in folded if not unicodedata.category(c).startswith("M"))
    return "".join(unicodedata.normalize("NFC", kept).split())


def count(text, span):
    """Occurrences of span in text, overlapping ones included."""
    found, at = 0, text.find(span)
    while at != -1:
        found, at = found + 1, text.find(span, at + 1)
    return found


def documents_embedded(server):
    """The server's embedding_documents_total, over every label."""
    with urllib.request.urlopen(f"http://{server.http_address}/metrics", timeout=30) as answer:
        return sum(float(line.split()[-1]) for line in answer.read().decode().splitlines()
                   if line.startswith("embedding_documents_total"))


def paired(candidate, baseline, which):
    """Mean difference and its standard error (sample deviation / sqrt(n))."""
    diffs = [candidate[i] - baseline[i] for i in which]
    mean = sum(diffs) / len(diffs)
    variance = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)
    return mean, (variance / len(diffs)) ** 0.5


class CalibrationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="calibrate_test_")
        cls.model = os.path.join(cls.tmp, "demo")
        shutil.copytree(MODEL, cls.model)
        cls.corpus = os.path.join(cls.tmp, "wordnet.txt")
        subprocess.run(["/usr/bin/python3", os.path.join(DATA, "make_corpus.py"), "wordnet",
                        cls.corpus], check=True)
        # A shorter corpus keeps the suite quick: enough documents for every bucket's 32.
        with open(cls.corpus) as f:
            lines = f.readlines()[:80]
        with open(cls.corpus, "w") as f:
            f.writelines(lines)
        cls.server = ServerRunner(SERVER, [f"--model=demo={cls.model}",
                                           "--model-poll-interval-s=1",
                                           "--openai-listen=127.0.0.1:0"])
        cls.client = EmbeddingClient(cls.server.grpc_address)
        cls.env = dict(os.environ, EMBEDCTL_ADDRESS=cls.server.grpc_address)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def embedctl(self, *args):
        return subprocess.run([EMBEDCTL, *args], capture_output=True, text=True, env=self.env,
                              timeout=600)

    def test_calibrate_fits_a_schedule_the_server_then_applies(self):
        out = {name: os.path.join(self.tmp, name)
               for name in ("calibration.json", "calibration.svg")}
        schedule_file = os.path.join(self.model, "tempscale.json")
        tasks_path = os.path.join(self.tmp, "calibration_tasks.json")
        run = self.embedctl("calibrate", f"--corpus={self.corpus}", "--docs-per-bucket=32",
                            f"--state-file={self.tmp}/calibrate.state",
                            "--temperatures=" + ",".join(str(t) for t in GRID),
                            f"--json={out['calibration.json']}", f"--tasks-json={tasks_path}",
                            f"--chart={out['calibration.svg']}", f"--schedule-out={schedule_file}")
        self.assertEqual(run.returncode, 0, run.stderr)
        print(run.stdout)
        self.check_probe(run.stderr, tasks_path)
        with open(out["calibration.json"]) as f:
            report = json.load(f)
        buckets = report["buckets"]
        self.assertEqual([b["bucket"] for b in buckets], ["0-63", "64-127", "128-255", "256-511"])
        self.assertEqual((report["task"], report["pool_size"], report["min_gain_se"]),
                         ("passkey", 8, 2))
        self.assertIn(report["best_fixed_tau"], GRID)
        taus = [b["tau"] for b in buckets]
        for b in buckets:
            self.assertIn(b["tau"], GRID)
            self.assertEqual(b["queries"], 32)
            self.assertGreaterEqual(b["schedule"]["mrr_at_10_calibration"],
                                    b["tau_1"]["mrr_at_10_calibration"], b["bucket"])
            gain = b["schedule"]["gain_calibration"]
            if b["tau"] < 1:
                self.assertGreater(gain["mean"], 2 * gain["standard_error"], b["bucket"])
                self.assertTrue(b["schedule"]["significant"])
        self.assertEqual(taus, sorted(taus, reverse=True))

        # The longest bucket at the lowest tau, from this test's own vectors: every pool's 8
        # candidates share one haystack and differ in the pass key alone.
        with open(tasks_path) as f:
            task = json.load(f)["buckets"][-1]
        self.assertEqual((task["bucket"], task["task"], task["pool_size"]), ("256-511", "passkey", 8))
        pool = task["pool_size"]
        for p in range(0, len(task["documents"]), pool):
            keys = {q.split()[-1] for q in task["queries"][p:p + pool]}
            self.assertEqual(len(keys), pool)

        def ranks_at(tau):
            docs = self.client.embed(task["documents"], temperature=tau,
                                     strategy="LONG_TEXT_STRATEGY_TRUNCATE")
            queries = self.client.embed(task["queries"], temperature=tau)
            return reciprocal_ranks([list(d.vector) for d in queries.documents],
                                    [list(d.vector) for d in docs.documents], pool)

        at_one, at_low = ranks_at(1.0), ranks_at(GRID[-1])
        held_out = [i for i in range(len(at_one)) if (i // pool) % 2 == 1]
        calibration = [i for i in range(len(at_one)) if (i // pool) % 2 == 0]
        row = buckets[-1]["grid"][-1]
        self.assertAlmostEqual(row["tau"], GRID[-1], places=6)
        self.assertAlmostEqual(row["mrr_at_10_held_out"],
                               sum(at_low[i] for i in held_out) / len(held_out), places=9)
        for name, which in (("gain_calibration", calibration), ("gain_held_out", held_out)):
            mean, standard_error = paired(at_low, at_one, which)
            self.assertEqual(row[name]["queries"], len(which))
            self.assertAlmostEqual(row[name]["mean"], mean, places=9)
            self.assertAlmostEqual(row[name]["standard_error"], standard_error, places=9)
        # Per depth of the pass key (both halves): the same pairing over that depth's queries.
        depths = sorted(set(task["depths"]))
        self.assertEqual(len(row["gain_by_depth"]), 5)
        for d, depth in enumerate(depths):
            which = [i for i, x in enumerate(task["depths"]) if x == depth]
            mean, standard_error = paired(at_low, at_one, which)
            self.assertEqual(row["gain_by_depth"][d]["queries"], len(which))
            self.assertAlmostEqual(row["gain_by_depth"][d]["mean"], mean, places=9)
            self.assertAlmostEqual(row["gain_by_depth"][d]["standard_error"], standard_error,
                                   places=9)
        # Two panels, retrieval and collapse, in one SVG document.
        root = ElementTree.parse(out["calibration.svg"]).getroot()
        self.assertEqual(len(root.findall("{http://www.w3.org/2000/svg}svg")), 2)

        with open(schedule_file) as f:
            written = json.load(f)
        points = written["schedule"]["points"]
        self.assertEqual(points[0]["min_tokens"], 0)
        by_bucket = {b["min_tokens"]: b["tau"] for b in buckets}
        for p in points[1:]:
            self.assertEqual(by_bucket[p["min_tokens"]], p["tau"])
        self.assertIn("embedctl calibrate", written["source"])
        self.assertEqual((written["measured_up_to_tokens"], written["unmeasured_buckets"]),
                         (510, []))  # the window

        # The server polls its model directories each second: the new file is a new version.
        deadline = time.time() + 60
        while True:
            info = self.client._unary("GetModelInfo",
                                      self.client.messages["embedding.v1.GetModelInfoRequest"](),
                                      "embedding.v1.ModelInfo")
            if info.tempscale_schedule.form != "none" or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(info.tempscale_schedule.form, "piecewise")
        self.assertIn("embedctl calibrate", info.tempscale_schedule.source)
        self.assertEqual([(p.min_tokens, round(p.tau, 6)) for p in info.tempscale_schedule.points],
                         [(p["min_tokens"], round(p["tau"], 6)) for p in points])

        def scheduled(tokens):
            return [p["tau"] for p in points if p["min_tokens"] <= tokens][-1]

        request = self.client.messages["embedding.v1.EmbedRequest"](
            inputs=[" ".join(["garden flower"] * n) for n in (3, 40, 100, 400)],
            temperature_mode=self.client.enums["TEMPERATURE_MODE_AUTO"],
            strategy=self.client.enums["LONG_TEXT_STRATEGY_CHUNK_ALL"], chunk_tokens=300)
        response = self.client._unary("Embed", request, "embedding.v1.EmbedResponse")
        for doc in response.documents:
            for chunk, tau in zip(doc.chunks, doc.sequence_temperatures):
                length = chunk.token_span.end - chunk.token_span.start
                self.assertAlmostEqual(chunk.temperature, scheduled(length), places=6)
                self.assertAlmostEqual(tau, scheduled(length), places=6)

        # The HTTP door: the same AUTO request, the same taus and vectors; the schedule in
        # /v1/models.
        body = json.dumps({"model": "demo", "input": list(request.inputs),
                           "temperature_mode": "auto", "strategy": "chunk_all",
                           "chunk_tokens": 300}).encode()
        http = urllib.request.Request(f"http://{self.server.openai_address}/v1/embeddings",
                                      data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(http, timeout=60) as answer:
            items = json.load(answer)["data"]
        for item, doc in zip(items, response.documents):
            self.assertEqual([round(t, 6) for t in item["details"]["sequence_temperatures"]],
                             [round(t, 6) for t in doc.sequence_temperatures])
            self.assertLess(max(abs(a - b) for a, b in zip(item["embedding"], doc.vector)), 1e-6)
        with urllib.request.urlopen(f"http://{self.server.openai_address}/v1/models",
                                    timeout=30) as answer:
            listed = json.load(answer)["data"][0]["tempscale_schedule"]
        self.assertEqual(listed["form"], "piecewise")
        self.assertEqual([p["min_tokens"] for p in listed["points"]],
                         [p["min_tokens"] for p in points])

    def check_probe(self, plan, tasks_path, batch=16, bound=4096):
        """The probe: the longest bucket's first documents, as many as fit in 4,096 tokens by
        the server's own count (special tokens included), at most a batch."""
        m = re.search(r"the probe \((\d+) (\S+)-token documents, (\d+) tokens\)", plan)
        self.assertIsNotNone(m, plan)
        documents, bucket, tokens = int(m.group(1)), m.group(2), int(m.group(3))
        with open(tasks_path) as f:
            task = json.load(f)["buckets"][-1]
        self.assertEqual(task["bucket"], bucket)
        counts = [len(t.tokens) for t in self.client.tokenize(task["documents"][:batch]).inputs]
        self.assertEqual(tokens, sum(counts[:documents]))
        self.assertLessEqual(tokens, bound)
        if documents < len(counts):
            self.assertGreater(tokens + counts[documents], bound)

    def test_an_interrupted_calibration_resumes_with_the_same_figures(self):
        state = os.path.join(self.tmp, "resume.state")
        report, resumed_report = (os.path.join(self.tmp, n) for n in ("full.json", "resumed.json"))
        args = ["calibrate", f"--corpus={self.corpus}", "--docs-per-bucket=16",
                "--max-bucket=64-127", "--temperatures=1,0.8", f"--state-file={state}"]
        full = self.embedctl(*args, f"--json={report}")
        self.assertEqual(full.returncode, 0, full.stderr)
        self.assertIn("Plan: tau grid 1, 0.8", full.stderr)
        with open(state) as f:
            lines = f.readlines()
        self.assertEqual(len(lines), 1 + 2 * 2)  # the header, then 2 buckets x 2 taus
        # Interrupted during the third (bucket, tau): two saved, the third cut short.
        with open(state, "w") as f:
            f.writelines(lines[:3] + [lines[3][:100]])
        resumed = self.embedctl(*args, "--resume", f"--json={resumed_report}")
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        plan = {line.split()[0]: line.split() for line in resumed.stderr.splitlines()
                if line.split() and line.split()[0] in ("0-63", "64-127")}
        self.assertEqual((plan["0-63"][3], plan["64-127"][3]), ("0", "2"))  # taus to do
        with open(report) as a, open(resumed_report) as b:
            self.assertEqual(json.load(a), json.load(b))
        # The state now holds every bucket and tau: resuming embeds nothing, not even the probe.
        before = documents_embedded(self.server)
        again = self.embedctl(*args, "--resume", f"--json={resumed_report}")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("nothing left to embed (--state-file holds every bucket and tau), so no "
                      "probe", again.stderr)
        self.assertEqual(documents_embedded(self.server), before)
        with open(report) as a, open(resumed_report) as b:
            self.assertEqual(json.load(a), json.load(b))
        # A corpus too short for the longer buckets: they are reported, and the schedule file
        # says where the measured range ends.
        short_corpus, short_report = (os.path.join(self.tmp, n) for n in ("short.txt", "short.json"))
        with open(self.corpus) as f, open(short_corpus, "w") as out:
            out.write(" ".join(f.readline().split()[:100]) + "\n")  # about 120 tokens
        short = self.embedctl("calibrate", f"--corpus={short_corpus}", "--docs-per-bucket=16",
                              "--temperatures=1", f"--state-file={state}.short",
                              f"--json={short_report}")
        self.assertEqual(short.returncode, 0, short.stderr)
        with open(short_report) as f:
            measured = json.load(f)
        self.assertEqual(measured["unmeasured_buckets"], ["128-255", "256-511"])
        last = measured["buckets"][-1]["bucket"]
        self.assertEqual(measured["measured_up_to_tokens"], int(last.split("-")[1]))
        self.assertIn("Not measured (too little text for two pools): ", short.stdout)

        # Another seed is another corpus cut: refused, naming the flag.
        other = self.embedctl(*args, "--resume", "--seed=2")
        self.assertNotEqual(other.returncode, 0)
        self.assertIn("INVALID_ARGUMENT", other.stderr)
        self.assertIn("--resume: ", other.stderr)
        self.assertIn("holds another run", other.stderr)

    def test_a_hostile_corpus_gets_one_right_answer_per_query(self):
        """Built to break uniqueness, as catalogues of error messages, logs and FAQs do: copies
        (exact, and differing only in case and spacing), entries sharing a 12-token opening,
        and documents equal to the opening of another (a haystack's text when that one starts
        the haystack)."""
        with open(self.corpus) as f:
            base = [line.strip() for line in f][:40]
        corpus, copies = [], 0
        for i, doc in enumerate(base):
            words = doc.split()
            corpus.append(doc)
            corpus.append("Error E1001: the upstream server closed the connection before the "
                          "response header was read. " + " ".join(words[i % 7:i % 7 + 60]))
            corpus.append(" ".join(words[:40]))  # the opening of a document: a fragment
            if i % 4 == 0:
                corpus.append(doc)
                copies += 1
            if i % 8 == 1:
                corpus.append("  " + doc.upper().replace(" ", "   \t"))
                copies += 1
        self.assertEqual(len(corpus) - len({normalized(d) for d in corpus}), copies)
        path = os.path.join(self.tmp, "hostile.txt")
        with open(path, "w") as f:
            f.write("\n".join(corpus) + "\n")

        redrawn = {}
        for kind in ("passkey", "needle", "lexical"):
            tasks_path, report_path = (os.path.join(self.tmp, f"hostile_{kind}.{n}.json")
                                       for n in ("tasks", "report"))
            run = self.embedctl("calibrate", f"--corpus={path}", f"--task={kind}",
                                "--docs-per-bucket=16", "--temperatures=1", "--state-file=",
                                "--max-bucket=128-255", f"--tasks-json={tasks_path}",
                                f"--json={report_path}")
            self.assertEqual(run.returncode, 0, run.stderr)
            print(kind, run.stderr.splitlines()[0])
            with open(tasks_path) as f:
                tasks = json.load(f)
            self.assertEqual(tasks["duplicates_dropped"], copies)
            self.assertEqual(tasks["documents"], len(corpus) - copies)
            self.assertIn(f"{copies} duplicates dropped by normalised text", run.stderr)
            redrawn[kind] = sum(b["redrawn"] for b in tasks["buckets"])
            self.assertIn(f"every query has one right answer ({redrawn[kind]} draws redrawn",
                          run.stderr)
            for bucket in tasks["buckets"]:
                pool, docs, queries = bucket["pool_size"], bucket["documents"], bucket["queries"]
                for i, query in enumerate(queries):
                    first = i // pool * pool
                    self.assertEqual(bucket["answers"][i], i)
                    counts = [count(normalized(docs[j]), normalized(query))
                              for j in range(first, first + pool)]
                    self.assertGreaterEqual(counts[i - first], 1, query)
                    self.assertEqual(bucket["answer_counts"][i], counts[i - first])
                    self.assertEqual(counts[:i - first] + counts[i - first + 1:],
                                     [0] * (pool - 1), f"{kind} {bucket['bucket']}: {query!r}")
                    self.assertEqual(bucket["other_counts"][i], [0] * (pool - 1))
                for p in range(0, len(docs), pool):
                    self.assertEqual(len({normalized(d) for d in docs[p:p + pool]}), pool)

            # The last bucket's MRR at tau = 1, from this test's own vectors.
            with open(report_path) as f:
                row = json.load(f)["buckets"][-1]
            task = tasks["buckets"][-1]
            self.assertEqual(row["bucket"], task["bucket"])
            docs = self.client.embed(task["documents"], temperature=1.0,
                                     strategy="LONG_TEXT_STRATEGY_TRUNCATE")
            queries = self.client.embed(task["queries"], temperature=1.0)
            ranks = reciprocal_ranks([list(d.vector) for d in queries.documents],
                                     [list(d.vector) for d in docs.documents], task["pool_size"])
            pool = task["pool_size"]
            for half, parity in (("calibration", 0), ("held_out", 1)):
                which = [ranks[i] for i in range(len(ranks)) if (i // pool) % 2 == parity]
                self.assertAlmostEqual(row["tau_1"][f"mrr_at_10_{half}"],
                                       sum(which) / len(which), places=9)
        # Needles meet the shared openings in every pool; a pass key's sentence is in no
        # haystack, so nothing there is redrawn.
        self.assertGreater(redrawn["needle"], 0)
        self.assertEqual(redrawn["passkey"], 0)

    def test_a_schedule_file_attaches_to_a_served_model(self):
        """--tempscale-schedule=NAME=FILE: a schedule from outside the model's directory (a Hub
        model's cache is not the server's to write), in the version, reloaded when it changes."""
        schedule = os.path.join(self.tmp, "attached.json")

        def write(tau):
            with open(schedule, "w") as f:
                json.dump({"schedule": {"form": "piecewise",
                                        "points": [{"min_tokens": 0, "tau": 1.0},
                                                   {"min_tokens": 64, "tau": tau}]},
                           "source": f"by hand, {tau}"}, f)

        def info(client):
            return client._unary("GetModelInfo",
                                 client.messages["embedding.v1.GetModelInfoRequest"](),
                                 "embedding.v1.ModelInfo")

        write(0.7)
        server = ServerRunner(SERVER, [f"--model=demo={MODEL}", f"--tempscale-schedule=demo={schedule}",
                                       "--model-poll-interval-s=1"])
        try:
            client = EmbeddingClient(server.grpc_address)
            first = info(client)
            self.assertEqual(first.tempscale_schedule.source, f"{schedule}: by hand, 0.7")
            self.assertEqual([(p.min_tokens, round(p.tau, 6)) for p in first.tempscale_schedule.points],
                             [(0, 1.0), (64, 0.7)])
            self.assertIn("+tempscale.", first.version)
            request = client.messages["embedding.v1.EmbedRequest"](
                inputs=[" ".join(["garden flower"] * 40)],
                temperature_mode=client.enums["TEMPERATURE_MODE_AUTO"])
            answer = client._unary("Embed", request, "embedding.v1.EmbedResponse")
            self.assertAlmostEqual(answer.documents[0].sequence_temperatures[0], 0.7, places=6)
            # A changed file is a new version, picked up by the poll.
            time.sleep(1.1)  # a new modification time on coarse clocks
            write(0.8)
            deadline = time.time() + 60
            while info(client).version == first.version and time.time() < deadline:
                time.sleep(0.2)
            second = info(client)
            self.assertNotEqual(second.version, first.version)
            self.assertEqual(second.tempscale_schedule.source, f"{schedule}: by hand, 0.8")
        finally:
            server.stop()
        # Refused at start, naming the flag.
        for flag, message in ((f"--tempscale-schedule=nope={schedule}", "no served model 'nope'"),
                              (f"--tempscale-schedule=demo={self.tmp}/absent.json",
                               "no such schedule file"),
                              ("--tempscale-schedule=demo", "expected NAME=FILE")):
            run = subprocess.run([SERVER, f"--model=demo={MODEL}", "--listen=127.0.0.1:0",
                                  "--http-listen=127.0.0.1:0", flag],
                                 capture_output=True, text=True, timeout=120)
            self.assertNotEqual(run.returncode, 0, flag)
            self.assertIn("--tempscale_schedule=", run.stderr, flag)
            self.assertIn(message, run.stderr, flag)

    def test_eval_figures_are_recomputed_from_the_servers_vectors(self):
        report_path = os.path.join(self.tmp, "eval.json")
        tasks_path = os.path.join(self.tmp, "tasks.json")
        chart_path = os.path.join(self.tmp, "eval.svg")
        run = self.embedctl("eval", f"--corpus={self.corpus}", "--docs-per-bucket=16",
                            "--compare-strategies=truncate,chunk_mean,late_chunking",
                            "--fixed-temperature=0.7", f"--json={report_path}",
                            f"--tasks-json={tasks_path}", f"--chart={chart_path}")
        self.assertEqual(run.returncode, 0, run.stderr)
        print(run.stdout)
        with open(report_path) as f:
            report = json.load(f)
        with open(tasks_path) as f:
            tasks = {t["bucket"]: t for t in json.load(f)["buckets"]}
        columns = [(c["strategy"], c["tau"]) for c in report["columns"]]
        self.assertEqual(len(columns), 9)
        self.assertIn(("late_chunking", "auto"), columns)
        rows = {r["bucket"]: r for r in report["rows"]}
        self.assertIn("512-1023", rows)  # beyond the 510-token window
        ElementTree.parse(chart_path)

        # chunk_mean at the fixed tau, beyond the window: this test's own embeddings and MRR.
        bucket, column = "512-1023", columns.index(("chunk_mean", "0.7"))
        task = tasks[bucket]

        def embed(texts, **options):
            response = self.client.embed(texts, **options)
            return [list(d.vector) for d in response.documents]

        docs = embed(task["documents"], temperature=0.7,
                     strategy="LONG_TEXT_STRATEGY_CHUNK_MEAN")
        queries = embed(task["queries"], temperature=0.7)
        ranks = reciprocal_ranks(queries, docs, task["pool_size"])
        self.assertAlmostEqual(rows[bucket]["mrr_at_10"][column], sum(ranks) / len(ranks),
                               places=9)

    def test_errors_name_the_flag(self):
        missing = self.embedctl("calibrate", f"--corpus={self.tmp}/absent.txt")
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn("--corpus:", missing.stderr)
        self.assertIn("NOT_FOUND", missing.stderr)
        short = os.path.join(self.tmp, "short.txt")
        with open(short, "w") as f:
            f.write("a cat\nthe dog\n")
        too_short = self.embedctl("calibrate", f"--corpus={short}")
        self.assertNotEqual(too_short.returncode, 0)
        self.assertIn("--corpus: too little text for two pools of 8 passkey documents",
                      too_short.stderr)
        bad_grid = self.embedctl("calibrate", f"--corpus={self.corpus}", "--temperatures=1,1.5")
        self.assertNotEqual(bad_grid.returncode, 0)
        self.assertIn("--temperatures: 1.5 is outside (0, 1]", bad_grid.stderr)
        for flag, message in (("--task=haystack", "--task: 'haystack' is not one of"),
                              ("--pool-size=1", "--pool-size: must be in [2, 1000]"),
                              ("--docs-per-bucket=15", "--docs-per-bucket: must be in [2 x"),
                              ("--min-gain-se=-1", "--min-gain-se: must be >= 0"),
                              ("--max-bucket=64-100", "--max-bucket: '64-100' is not one of 0-63"),
                              ("--resume", "--resume: no calibration state in")):
            bad = self.embedctl("calibrate", f"--corpus={self.corpus}", flag,
                                f"--state-file={self.tmp}/absent.state")
            self.assertNotEqual(bad.returncode, 0, flag)
            self.assertIn("INVALID_ARGUMENT", bad.stderr, flag)
            self.assertIn(message, bad.stderr, flag)
        # A prompt the model lacks is refused before any work, as the server refuses it.
        for command in ("calibrate", "eval"):
            no_prompt = self.embedctl(command, f"--corpus={self.corpus}", "--prompt-name=nope")
            self.assertNotEqual(no_prompt.returncode, 0)
            self.assertIn("INVALID_ARGUMENT", no_prompt.stderr)
            self.assertIn("--prompt-name: 'nope' is not one of the model's prompts []",
                          no_prompt.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
