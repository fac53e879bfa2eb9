#!/usr/bin/python3
"""TEI's HTTP routes on the API listener answer TEI's shapes, with the same numbers as gRPC:
a request as TEI's documentation shows it, every route and its options, TEI's error object,
and Hugging Face's own client (@huggingface/inference featureExtraction with endpointUrl),
for one input and several, with and without a bearer token.

usage: tei_compat_test.py SERVER_BINARY WRITE_DEMO_MODEL
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, HERE)
from bge_m3_model import Reference, add_heads, make_heads, write_base_model  # noqa: E402
from embedding_client import EmbeddingClient, sparse_weights  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, WRITER = sys.argv[1], sys.argv[2]
NODE_CLIENT = os.path.join(HERE, "tei", "feature_extraction.mjs")
TOKEN = "tei-test-token-31c7"
DOCS = ["What is Deep Learning?", "Owls hunt at night.", "The bank raised its rates."]
LONG = " ".join(["owls and foxes in the moonlit forest"] * 30)  # past the 64-token window


def post(base, path, body, token=None, raw=None):
    """(status, parsed JSON) of a POST."""
    request = urllib.request.Request(base + path, data=raw if raw is not None else
                                     json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def close(a, b, tolerance=1e-6):
    return len(a) == len(b) and all(abs(x - y) <= tolerance for x, y in zip(a, b))


class TeiCompatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tei-")
        base = os.path.join(cls.tmp, "base")
        write_base_model(WRITER, base)
        cls.sparse, cls.colbert = make_heads(64)
        model = add_heads(base, os.path.join(cls.tmp, "m3"), cls.sparse, cls.colbert, "pt")
        cls.reference = Reference(model, cls.sparse, cls.colbert)
        token_file = os.path.join(cls.tmp, "tokens")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        cls.server = ServerRunner(BINARY, [f"--model=m3={model}", "--openai-listen=127.0.0.1:0"])
        cls.guarded = ServerRunner(BINARY, [f"--model=m3={model}", "--openai-listen=127.0.0.1:0",
                                            f"--auth-token-file={token_file}"])
        cls.base = f"http://{cls.server.openai_address}"
        cls.client = EmbeddingClient(cls.server.grpc_address)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.guarded.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def grpc_vectors(self, texts, **options):
        return [list(d.vector) for d in self.client.embed(texts, **options).documents]

    def test_the_request_from_teis_documentation(self):
        # curl 127.0.0.1:8080/embed -X POST -d '{"inputs":"What is Deep Learning?"}'
        #      -H 'Content-Type: application/json'
        status, body = post(self.base, "/embed", None, raw=b'{"inputs":"What is Deep Learning?"}')
        self.assertEqual(status, 200)
        self.assertEqual(len(body), 1)
        self.assertTrue(close(body[0], self.grpc_vectors([DOCS[0]])[0]))

    def test_embed_options_and_the_root_route(self):
        expected = self.grpc_vectors(DOCS, normalize=False, dimensions=32)
        for path in ("/embed", "/"):
            status, body = post(self.base, path, {"inputs": DOCS, "normalize": False,
                                                  "dimensions": 32, "unknown_field": 1})
            self.assertEqual(status, 200, body)
            self.assertEqual(len(body), 3)
            for got, want in zip(body, expected):
                self.assertTrue(close(got, want))

    def test_tempscale_on_every_tei_route(self):
        """temperature on /embed is /v1/embeddings' at the same tau, and the torch reference's;
        /embed_all's states are the reference's at that tau; /rerank and /predict take it too
        (a model without a head refuses them naming the model, after reading the field)."""
        tokens = self.client.tokenize([DOCS[0]]).inputs[0].tokens
        ids = [t.id for t in tokens]
        for tau in (0.5, 0.8):
            status, tei = post(self.base, "/embed", {"inputs": DOCS, "temperature": tau})
            self.assertEqual(status, 200, tei)
            status, openai = post(self.base, "/v1/embeddings",
                                  {"model": "m3", "input": DOCS, "temperature": tau})
            self.assertEqual(status, 200, openai)
            for got, want in zip(tei, openai["data"]):
                self.assertTrue(close(got, want["embedding"]), tau)
            dense, _, _ = self.reference.sequence(ids[1:-1], ids[:1], ids[-1:], tau)
            self.assertTrue(close(tei[0], dense.tolist(), 1e-5), tau)
            status, states = post(self.base, "/embed_all", {"inputs": [DOCS[0]], "temperature": tau})
            self.assertEqual(status, 200, states)
            for got, want in zip(states[0], self.reference.states(ids, tau).tolist()):
                self.assertTrue(close(got, want, 1e-5), tau)
        # tau = 1 is not tau = 0.5: the field is read, not ignored.
        _, plain = post(self.base, "/embed", {"inputs": DOCS[:1]})
        _, cooled = post(self.base, "/embed", {"inputs": DOCS[:1], "temperature": 0.5})
        self.assertFalse(close(plain[0], cooled[0], 1e-3))
        status, body = post(self.base, "/embed", {"inputs": "a", "temperature": 0})
        self.assertEqual((status, body["error"][:12]), (413, "temperature:"))
        status, body = post(self.base, "/embed_sparse", {"inputs": "a", "temperature_mode": "x"})
        self.assertEqual((status, body["error"][:17]), (422, "temperature_mode:"))

    def test_ignored_fields_are_counted_by_route_and_name(self):
        def count(method, field):
            with urllib.request.urlopen(f"http://{self.server.http_address}/metrics") as r:
                text = r.read().decode()
            want = (f'embedding_http_ignored_fields_total{{field="{field}",'
                    f'method="{method}"}} ')
            lines = [line for line in text.splitlines() if line.startswith(want)]
            return float(lines[0].split()[-1]) if lines else 0.0

        def settled(method, field, want):
            # A call is reported just after its answer is sent: wait for the report.
            deadline = time.time() + 5
            while count(method, field) < want and time.time() < deadline:
                time.sleep(0.02)
            return count(method, field)
        before = count("TEI/Embed", "bogus")
        for _ in range(2):
            status, _ = post(self.base, "/embed", {"inputs": "a", "bogus": True})
            self.assertEqual(status, 200)
        self.assertEqual(settled("TEI/Embed", "bogus", before + 2) - before, 2)
        post(self.base, "/similarity", {"inputs": {"source_sentence": "a", "sentences": ["b"]},
                                         "tempreature": 0.5})
        self.assertEqual(settled("TEI/Similarity", "tempreature", 1), 1)

    def test_truncation(self):
        status, body = post(self.base, "/embed", {"inputs": LONG})
        self.assertEqual(status, 413)
        self.assertEqual(body["error_type"], "Validation")
        self.assertTrue(body["error"].startswith("inputs[0]: "), body)
        # The advice names TEI's own field, not another door's strategies.
        self.assertIn('send "truncate": true', body["error"])
        self.assertNotIn("strateg", body["error"].lower())
        for direction, side in (("Right", "TRUNCATION_SIDE_KEEP_START"),
                                ("Left", "TRUNCATION_SIDE_KEEP_END")):
            status, body = post(self.base, "/embed", {"inputs": LONG, "truncate": True,
                                                      "truncation_direction": direction})
            self.assertEqual(status, 200)
            request = self.client.messages["embedding.v1.EmbedRequest"](
                model="m3", inputs=[LONG], strategy=self.client.enums["LONG_TEXT_STRATEGY_TRUNCATE"],
                truncation_side=self.client.enums[side])
            want = self.client._unary("Embed", request, "embedding.v1.EmbedResponse")
            self.assertTrue(close(body[0], list(want.documents[0].vector)), direction)

    def test_truncation_reads_a_document_at_the_byte_bound(self):
        """A 2 MiB document (the per-document byte bound, ~400,000 tokens here: past
        --max-tokens-per-document) with truncation is embedded on every door, as its first (or
        last) window: the same vector as a short piece holding that window."""
        words = ("owls", "hunt", "at", "night", "and", "foxes", "sleep", "in", "dens")
        text = " ".join(words[i % 9] for i in range(2 << 20))[:2 << 20]
        text = text[:text.rfind(" ")]
        head, tail = text[:2048], text[-2048:]
        def grpc(document, side):
            request = self.client.messages["embedding.v1.EmbedRequest"](
                model="m3", inputs=[document],
                strategy=self.client.enums["LONG_TEXT_STRATEGY_TRUNCATE"],
                truncation_side=self.client.enums["TRUNCATION_SIDE_KEEP_" + side.upper()])
            return self.client._unary("Embed", request, "embedding.v1.EmbedResponse").documents[0]

        for side, piece, direction in (("start", head, "Right"), ("end", tail, "Left")):
            want = list(grpc(piece, side).vector)
            got = grpc(text, side)
            self.assertTrue(close(list(got.vector), want), side)
            self.assertTrue(got.truncated)
            self.assertEqual(got.token_count, 64)  # the window's, the rest never tokenised
            status, tei = post(self.base, "/embed", {"inputs": text, "truncate": True,
                                                     "truncation_direction": direction})
            self.assertEqual(status, 200, tei)
            self.assertTrue(close(tei[0], want), side)
            status, openai = post(self.base, "/v1/embeddings",
                                  {"model": "m3", "input": text, "strategy": "truncate",
                                   "truncation_side": side})
            self.assertEqual(status, 200, openai)
            self.assertTrue(close(openai["data"][0]["embedding"], want), side)
        # Without truncation the same document is still refused by its token count.
        status, body = post(self.base, "/v1/embeddings",
                            {"model": "m3", "input": text, "strategy": "chunk_mean"})
        self.assertEqual(status, 400)
        self.assertIn("per-document bound", body["error"]["message"])

    def test_embed_sparse_is_teis_index_value_list(self):
        status, body = post(self.base, "/embed_sparse", {"inputs": DOCS})
        self.assertEqual(status, 200)
        response = self.client.embed(DOCS, outputs=["sparse"])
        for got, doc in zip(body, response.documents):
            want = sparse_weights(doc.sparse)
            self.assertEqual([v["index"] for v in got], sorted(want))
            for v in got:
                self.assertAlmostEqual(v["value"], want[v["index"]], delta=1e-6)

    def test_embed_all_is_every_tokens_final_state(self):
        status, body = post(self.base, "/embed_all", {"inputs": [DOCS[0]]})
        self.assertEqual(status, 200)
        tokens = self.client.tokenize([DOCS[0]]).inputs[0].tokens
        states = self.reference.states([t.id for t in tokens])
        self.assertEqual(len(body[0]), len(tokens))
        for got, want in zip(body[0], states.tolist()):
            self.assertTrue(close(got, want, 1e-5))

    def test_tokenize(self):
        status, body = post(self.base, "/tokenize", {"inputs": DOCS[1]})
        self.assertEqual(status, 200)
        tokens = self.client.tokenize([DOCS[1]]).inputs[0].tokens
        self.assertEqual([t["id"] for t in body[0]], [t.id for t in tokens])
        self.assertTrue(body[0][0]["special"] and body[0][-1]["special"])
        self.assertIsNone(body[0][0]["start"])
        for t in body[0][1:-1]:
            self.assertFalse(t["special"])
            self.assertEqual(t["text"], DOCS[1].encode()[t["start"]:t["stop"]].decode())
        status, body = post(self.base, "/tokenize",
                            {"inputs": [DOCS[1]], "add_special_tokens": False})
        self.assertEqual(len(body[0]), len(tokens) - 2)

    def test_info(self):
        with urllib.request.urlopen(self.base + "/info") as r:
            info = json.loads(r.read())
        self.assertEqual(info["model_id"], "m3")
        self.assertEqual(info["model_type"], {"embedding": {"pooling": "cls"}})
        self.assertEqual(info["max_input_length"], 66)
        self.assertEqual(info["model_dtype"], "float32")
        # The fields TEI always sends (a strict client requires them), the server's own
        # version where TEI puts it, and the model's content hash in model_sha.
        self.assertEqual((info["max_batch_tokens"], info["max_batch_requests"],
                          info["tokenization_workers"]), (2048, 64, 2))
        self.assertRegex(info["version"], r"^\d+\.\d+\.\d+$")
        models = self.client.list_models().models
        self.assertEqual(info["model_sha"], models[0].version)

    def test_errors_are_teis_object(self):
        status, body = post(self.base, "/embed", None, raw=b'{"inputs": ')
        self.assertEqual(status, 422)
        self.assertEqual(body["error_type"], "Validation")
        self.assertTrue(body["error"].startswith("body: "))
        status, body = post(self.base, "/embed", {"inputs": ["a", 7]})
        self.assertEqual((status, body["error"][:10]), (422, "inputs[1]:"))
        status, body = post(self.base, "/embed", {"inputs": "a", "truncate": "yes"})
        self.assertEqual((status, body["error"][:9]), (422, "truncate:"))
        status, body = post(self.base, "/embed", {"inputs": "a", "dimensions": 999})
        self.assertEqual((status, body["error"][:11]), (413, "dimensions:"))
        status, body = post(f"http://{self.guarded.openai_address}", "/embed", {"inputs": "a"})
        self.assertEqual(status, 401)

    def hf_client(self, server, token, inputs):
        result = subprocess.run(["node", NODE_CLIENT, f"http://{server.openai_address}", token,
                                 json.dumps(inputs)], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def test_huggingface_inference_client(self):
        expected = self.grpc_vectors(DOCS)
        for server, token in ((self.server, "-"), (self.guarded, TOKEN)):
            with self.subTest(token=token):
                one = self.hf_client(server, token, DOCS[0])
                self.assertTrue(close(one[0], expected[0]))
                several = self.hf_client(server, token, DOCS)
                self.assertEqual(len(several), 3)
                for got, want in zip(several, expected):
                    self.assertTrue(close(got, want))
        refused = subprocess.run(["node", NODE_CLIENT, f"http://{self.guarded.openai_address}",
                                  "-", json.dumps("x")], capture_output=True, text=True,
                                 timeout=120)
        self.assertNotEqual(refused.returncode, 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
