#!/usr/bin/python3
"""The OpenAI-compatible endpoint against a live server, from two ecosystems.

- The official `openai` npm SDK (tests/e2e/openai/openai_client.js), with baseURL pointing at
  the server: a string, an array, token ids and arrays of token ids; base64 and `dimensions`;
  every extension field. Each result must equal the gRPC result (embedctl) to 1e-6.
- Python's standard library (urllib, json) posting the same requests gets the same results.
- Every error status with its OpenAI error object; hostile bodies; a client that disconnects
  mid-request frees its admission slot.

usage: openai_compat_test.py SERVER_BINARY EMBEDCTL_BINARY MODEL_DIR SMALL_MODEL_DIR REPO_ROOT
"""
import base64
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from server_runner import ServerRunner  # noqa: E402

SERVER, EMBEDCTL, MODEL, SMALL_MODEL, ROOT = sys.argv[1:6]
NODE_CLIENT = os.path.join(HERE, "openai", "openai_client.js")
TOKEN = "openai-test-token-9f2c"
DOCS = ["The quick brown fox.", "jumps over the lazy dog"]
LONG = " ".join(["the", "cat", "sat", "on", "a", "mat"][i % 6] for i in range(1500))

# name: (OpenAI request body, the embedctl flags and texts that mean the same over gRPC)
CASES = {
    "string": ({"model": "tiny", "input": DOCS[0]}, [], [DOCS[0]]),
    "array": ({"model": "tiny", "input": DOCS}, [], DOCS),
    "dimensions": ({"model": "tiny", "input": DOCS, "dimensions": 32}, ["--dimensions=32"], DOCS),
    "extensions": ({"model": "tiny", "input": [LONG], "temperature": 0.7, "strategy": "chunk_all",
                    "chunk_tokens": 200, "chunk_overlap_tokens": 20, "normalize": False,
                    "prompt_name": "query", "user": "someone"},
                   ["--temperature=0.7", "--strategy=chunk_all", "--chunk_tokens=200",
                    "--chunk_overlap_tokens=20", "--normalize=false", "--prompt_name=query"],
                   [LONG]),
    "truncate_end": ({"model": "tiny", "input": [LONG], "strategy": "truncate",
                      "truncation_side": "end"},
                     ["--strategy=truncate", "--truncation_side=end"], [LONG]),
    "late_chunking": ({"model": "tiny", "input": [LONG], "strategy": "late_chunking",
                       "chunk_tokens": 128},
                      ["--strategy=late_chunking", "--chunk_tokens=128"], [LONG]),
}


def run(*command, stdin=None):
    out = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise AssertionError(f"{command}: {out.stderr}")
    return out.stdout


def post(base, path, body, token=TOKEN, headers=None, raw=None):
    """(status, parsed JSON body, headers) of a POST with the standard library."""
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {token}"} if token else {}),
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers


def metric(http_address, name):
    text = urllib.request.urlopen(f"http://{http_address}/metrics", timeout=10).read().decode()
    m = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def decode_base64(vector):
    raw = base64.b64decode(vector)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def floats(vector):
    # The SDK asks for base64 when not told otherwise and decodes `embedding` only; the
    # chunks in `details` then stay base64 too.
    return decode_base64(vector) if isinstance(vector, str) else vector


def openai_vectors(response):
    """Documents' vectors, and the chunks' (with token spans), from an OpenAI-shaped answer."""
    docs = []
    for item in sorted(response["data"], key=lambda d: d["index"]):
        chunks = [{"vector": floats(c["embedding"]), "token_span": c["token_span"]}
                  for c in item["details"].get("chunks", [])]
        docs.append({"vector": floats(item["embedding"]), "chunks": chunks})
    return docs


class OpenAiCompatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.token_file = os.path.join(cls.tmp, "tokens")
        with open(cls.token_file, "w") as f:
            f.write(TOKEN + "\n")
        cls.server = ServerRunner(SERVER, [f"--model=tiny={MODEL}", "--openai-listen=127.0.0.1:0",
                                           f"--auth-token-file={cls.token_file}",
                                           "--max-inputs-per-request=64"])
        cls.base = f"http://{cls.server.openai_address}"
        embed = [EMBEDCTL, "embed", f"--address={cls.server.grpc_address}", f"--token={TOKEN}"]
        cls.grpc = {}
        for name, (_, flags, texts) in CASES.items():
            lines = run(*embed, *flags, *texts).splitlines()
            cls.grpc[name] = [{"vector": d["vector"],
                               "chunks": [{"vector": c["vector"], "token_span": c["token_span"]}
                                          for c in d.get("chunks", [])]}
                              for d in map(json.loads, lines)]
        tokens = json.loads(run(EMBEDCTL, "tokenize", f"--address={cls.server.grpc_address}",
                                f"--token={TOKEN}", DOCS[1]))
        cls.ids = [t["id"] for t in tokens[1:-1]]  # content tokens, without [CLS] and [SEP]

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def assert_close(self, mine, theirs, what):
        self.assertEqual(len(mine), len(theirs), what)
        for a, b in zip(mine, theirs):
            self.assertEqual(len(a["vector"]), len(b["vector"]), what)
            self.assertLess(max(abs(x - y) for x, y in zip(a["vector"], b["vector"])), 1e-6, what)
            self.assertEqual([c["token_span"] for c in a["chunks"]],
                             [c["token_span"] for c in b["chunks"]], what)
            for ca, cb in zip(a["chunks"], b["chunks"]):
                self.assertLess(max(abs(x - y) for x, y in zip(ca["vector"], cb["vector"])), 1e-6)

    def node_results(self, calls):
        return json.loads(run("node", NODE_CLIENT, self.base + "/v1", TOKEN,
                              stdin=json.dumps(calls)))

    def test_official_client_equals_grpc(self):
        calls = {name: body for name, (body, _, _) in CASES.items()}
        calls["base64"] = {**CASES["array"][0], "encoding_format": "base64"}
        calls["token_ids"] = {"model": "tiny", "input": self.ids}
        calls["token_id_arrays"] = {"model": "tiny", "input": [self.ids, self.ids[:2]]}
        results = self.node_results(calls)
        for name in CASES:
            self.assertNotIn("error", results[name], name)
            self.assert_close(openai_vectors(results[name]), self.grpc[name], name)
        self.assertEqual(results["string"]["object"], "list")
        self.assertEqual(results["string"]["model"], "tiny")
        self.assertEqual(results["string"]["data"][0]["object"], "embedding")
        self.assertGreater(results["array"]["usage"]["prompt_tokens"], 0)
        self.assertEqual(len(results["dimensions"]["data"][0]["embedding"]), 32)
        details = results["extensions"]["data"][0]["details"]
        self.assertGreater(details["chunk_count"], 5)
        self.assertAlmostEqual(details["temperature"], 0.7, places=6)
        self.assertTrue(results["truncate_end"]["data"][0]["details"]["truncated"])
        # base64 asked for by name: the SDK hands the string over, little-endian float32.
        b64 = [{"vector": decode_base64(d["embedding"]), "chunks": []}
               for d in results["base64"]["data"]]
        self.assert_close(b64, self.grpc["array"], "base64")
        # Token ids of DOCS[1] embed as DOCS[1] does.
        self.assert_close(openai_vectors(results["token_ids"]), self.grpc["array"][1:], "ids")
        self.assertEqual(len(results["token_id_arrays"]["data"]), 2)
        self.assert_close(openai_vectors(results["token_id_arrays"])[:1], self.grpc["array"][1:],
                          "id arrays")
        self.assertEqual([m["id"] for m in results["models"]], ["tiny"])

    def test_standard_library_equals_grpc(self):
        for name, (body, _, _) in CASES.items():
            status, answer, _ = post(self.base, "/v1/embeddings", body)
            self.assertEqual(status, 200, (name, answer))
            self.assert_close(openai_vectors(answer), self.grpc[name], name)
        status, answer, _ = post(self.base, "/v1/embeddings",
                                 {**CASES["array"][0], "encoding_format": "base64"})
        self.assertEqual(status, 200)
        self.assert_close([{"vector": decode_base64(d["embedding"]), "chunks": []}
                           for d in answer["data"]], self.grpc["array"], "base64")

    def assert_error(self, status, answer, want_status, param, *words):
        self.assertEqual(status, want_status, answer)
        error = answer["error"]
        self.assertEqual(set(error), {"message", "type", "param", "code"}, answer)
        self.assertEqual(error["param"], param, answer)
        for word in words:
            self.assertIn(word, error["message"], answer)

    def test_errors_are_openai_error_objects(self):
        s, a, _ = post(self.base, "/v1/embeddings", {"input": "x", "temperature": 9})
        self.assert_error(s, a, 400, "temperature", "[0.05, 4]")
        s, a, _ = post(self.base, "/v1/embeddings", {"input": "x", "strategy": "sideways"})
        self.assert_error(s, a, 400, "strategy", "sideways")
        s, a, _ = post(self.base, "/v1/embeddings",
                       {"input": ["x", "word " * 600], "strategy": "reject"})
        self.assert_error(s, a, 400, "input[1]", "window", '"strategy": "truncate"', "chunk_*")
        self.assertNotIn("LONG_TEXT_STRATEGY", a["error"]["message"])
        s, a, _ = post(self.base, "/v1/embeddings", {"input": "x", "dimensions": 0})
        self.assert_error(s, a, 400, "dimensions")
        s, a, _ = post(self.base, "/v1/embeddings", {"input": [1, 2, 10 ** 9]})
        self.assert_error(s, a, 400, "input[0][2]", "outside the vocabulary")
        s, a, _ = post(self.base, "/v1/embeddings", {"input": "x", "tempreature": 0.5})
        self.assert_error(s, a, 400, "tempreature", "unknown field")
        s, a, _ = post(self.base, "/v1/embeddings", {"input": "x"}, token=None)
        self.assert_error(s, a, 401, "authorization")
        s, a, _ = post(self.base, "/v1/embeddings", {"input": "x"}, token="wrong-token")
        self.assert_error(s, a, 401, "authorization")
        self.assertNotIn("wrong-token", a["error"]["message"])
        s, a, _ = post(self.base, "/v1/embeddings", {"input": "x", "model": "nope"})
        self.assert_error(s, a, 404, "model", "nope")
        s, a, _ = post(self.base, "/v1/embeddings", None, raw=b"{" + b" " * (100 << 20) + b"}")
        self.assert_error(s, a, 413, "body", "larger than")
        s, a, _ = post(self.base, "/v1/embeddings", {"input": "x"},
                       headers={"X-Request-Timeout": "soon"})
        self.assert_error(s, a, 400, "X-Request-Timeout")

    def test_hostile_bodies_get_400_and_the_server_stays_healthy(self):
        hostile = {
            "malformed": (b'{"input": "x",', "body", "not valid JSON"),
            "not an object": (b'["x"]', "body", "must be a JSON object"),
            "wrong type": (b'{"input": 42}', "input", "must be a string"),
            "mixed array": (b'{"input": ["a", 1]}', "input[1]", "must be a string"),
            "too many inputs": (json.dumps({"input": ["a"] * 65}).encode(), "input", "[1, 64]"),
            "deep nesting": (b'{"input": ' + b"[" * 5000 + b"]" * 5000 + b"}", "body",
                             "nests deeper"),
            "invalid utf-8": (b'{"input": "bad \xc3\x28"}', "body", "UTF-8"),
            "negative id": (b'{"input": [[1, -2]]}', "input[0][1]", "token id"),
            "no input": (b'{"model": "tiny"}', "input", "required"),
        }
        for name, (body, param, word) in hostile.items():
            s, a, _ = post(self.base, "/v1/embeddings", None, raw=body)
            self.assert_error(s, a, 400, param, word)
        health = urllib.request.urlopen(f"http://{self.server.http_address}/healthz", timeout=10)
        self.assertEqual(health.status, 200)
        s, _, _ = post(self.base, "/v1/embeddings", {"input": "still fine"})
        self.assertEqual(s, 200)


class OpenAiLoadTest(unittest.TestCase):
    """Overload (429 with Retry-After), draining (503), and a client that disconnects: on a
    one-slot server with the slower small model."""

    def setUp(self):
        self.server = ServerRunner(SERVER, [f"--model=small={SMALL_MODEL}",
                                            "--openai-listen=127.0.0.1:0",
                                            "--max-concurrent-requests=1"])
        self.base = f"http://{self.server.openai_address}"
        self.long = {"input": [" ".join(f"word{i % 89}" for i in range(15000))],
                     "strategy": "chunk_mean"}

    def tearDown(self):
        self.server.stop()

    def in_background(self, body):
        result = {}
        thread = threading.Thread(target=lambda: result.update(
            answer=post(self.base, "/v1/embeddings", body, token=None)))
        thread.start()
        deadline = time.time() + 30
        while metric(self.server.http_address, "embedding_in_flight_requests") < 1:
            self.assertLess(time.time(), deadline, "the long request never started")
            time.sleep(0.02)
        return thread, result

    def test_overload_is_429_with_retry_after_and_draining_is_503(self):
        thread, result = self.in_background(self.long)
        s, a, headers = post(self.base, "/v1/embeddings", {"input": "x"}, token=None)
        self.assertEqual(s, 429, a)
        self.assertEqual(a["error"]["type"], "rate_limit_error")
        self.assertEqual(headers["Retry-After"], "1")
        self.server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        s, a, _ = post(self.base, "/v1/embeddings", {"input": "x"}, token=None)
        self.assertEqual(s, 503, a)
        self.assertIn("draining", a["error"]["message"])
        thread.join()
        self.assertEqual(result["answer"][0], 200, "admitted work finishes while draining")
        self.assertEqual(self.server.stop(), 0)

    def test_a_client_that_disconnects_frees_its_slot(self):
        address, port = self.server.openai_address.rsplit(":", 1)
        body = json.dumps(self.long).encode()
        started = time.time()
        with socket.create_connection((address, int(port))) as sock:
            sock.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            deadline = time.time() + 30
            while metric(self.server.http_address, "embedding_in_flight_requests") < 1:
                self.assertLess(time.time(), deadline)
                time.sleep(0.02)
        # The socket is closed: the event loop sees it and cancels the job, so the slot comes
        # back at once, long before the work would have finished.
        closed = time.time()
        deadline = closed + 5
        while metric(self.server.http_address, "embedding_in_flight_requests") > 0:
            self.assertLess(time.time(), deadline, "the slot was not freed")
            time.sleep(0.01)
        freed_after = time.time() - started
        self.assertLess(time.time() - closed, 0.5, "the slot came back late after the close")
        s, a, _ = post(self.base, "/v1/embeddings", self.long, token=None)
        full = time.time() - started - freed_after
        self.assertEqual(s, 200, a)
        print(f"slot freed {freed_after:.2f} s after a disconnect; the whole request takes "
              f"{full:.2f} s", file=sys.stderr)
        # Held to the end, the slot would come back only after about `full` seconds.
        self.assertLess(freed_after, full / 3)
        self.assertEqual(metric(self.server.http_address, "embedding_queued_tokens"), 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
