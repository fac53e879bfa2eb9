#!/usr/bin/python3
"""docs/openapi.json describes what the server really answers: GET /openapi.json on both
listeners is that file, every documented operation is called, and each request and each answer
(success and every error reached, per status) validates against the document's schema for its
route, status and media type (python3-jsonschema, draft 2020-12, as OpenAPI 3.1 uses). Then a
client generated from the served document (openapi-typescript, type-checked by tsc, sent by
openapi-fetch) calls the server, and its vectors equal gRPC's. GET /docs serves Swagger UI's
files as --api-docs-dir holds them, and a folder without them is refused at start.

usage: openapi_answers_test.py SERVER_BINARY WRITE_DEMO_MODEL OPENAPI_JSON NPM_DIR SWAGGER_UI_DIR
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

import jsonschema

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, HERE)
from bge_m3_model import add_heads, make_heads, write_base_model  # noqa: E402
from embedding_client import EmbeddingClient, sparse_weights  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, WRITER, DOCUMENT, NPM_DIR, SWAGGER_UI = sys.argv[1:6]
TOKEN = "openapi-test-token-5e21"
TEXTS = ["interest rates at the bank", "owls hunt mice at night"]
LONG = " ".join(["owls and foxes in the moonlit forest"] * 30)  # past the 64-token window

# (listener, method, path, body, with the token, status expected). Bodies are dicts (sent as
# JSON), bytes (sent as they are) or None.
CASES = [
    ("api", "POST", "/v1/embeddings", {"input": TEXTS[0]}, True, 200),
    ("api", "POST", "/v1/embeddings", {"model": "m3", "input": TEXTS, "encoding_format": "base64",
                                       "outputs": ["dense", "sparse", "multi_vector"],
                                       "multi_vector_encoding": "float16", "max_vectors": 4,
                                       "temperature": 0.7}, True, 200),
    ("api", "POST", "/v1/embeddings", {"input": LONG, "strategy": "chunk_all",
                                       "chunk_tokens": 32, "temperature_mode": "auto"}, True, 200),
    ("api", "POST", "/v1/embeddings", {"input": [[5, 6, 7], [8, 9]], "dimensions": 16}, True, 200),
    ("api", "POST", "/v1/embeddings", {"model": "m3", "input": TEXTS, "outputs": ["sparse"],
                                       "sparse_top_k": 2}, True, 200),
    ("api", "POST", "/v1/embeddings", {"input": TEXTS[0], "temperature": 7}, True, 400),
    ("api", "POST", "/v1/embeddings", b"{not json", True, 400),
    ("api", "POST", "/v1/embeddings", {"input": TEXTS[0]}, False, 401),
    ("api", "POST", "/v1/embeddings", {"model": "absent", "input": TEXTS[0]}, True, 404),
    ("api", "POST", "/v1/embeddings", {"input": LONG, "strategy": "reject"}, True, 400),
    # Past the listener's body limit (3 x --max-request-bytes + 64 KiB), before any parsing.
    ("api", "POST", "/v1/embeddings", b'{"input": "' + b"a" * (300 << 10) + b'"}', True, 413),
    ("api", "POST", "/v2/embed", {"texts": TEXTS, "input_type": "search_query",
                                  "embedding_types": ["float", "int8", "uint8", "binary",
                                                      "ubinary", "base64"]}, True, 200),
    ("api", "POST", "/v2/embed", {"inputs": [{"content": [{"type": "text", "text": LONG}]}],
                                  "truncate": "START", "max_tokens": 16, "output_dimension": 8,
                                  "temperature": 0.8, "priority": 1}, True, 200),
    ("api", "POST", "/v2/embed", {"texts": [LONG], "truncate": "NONE"}, True, 400),
    ("api", "POST", "/v2/embed", {"texts": TEXTS}, False, 401),
    ("api", "POST", "/v2/embed", {"model": "absent", "texts": TEXTS}, True, 404),
    ("api", "GET", "/v1/models", None, True, 200),
    ("api", "GET", "/v1/models", None, False, 401),
    ("api", "POST", "/embed", {"inputs": TEXTS[0]}, True, 200),
    ("api", "POST", "/embed", {"inputs": TEXTS, "normalize": False, "dimensions": 32}, True, 200),
    ("api", "POST", "/embed", {"inputs": LONG}, True, 413),
    ("api", "POST", "/embed", {"inputs": []}, True, 422),
    ("api", "POST", "/embed", {"inputs": TEXTS[0]}, False, 401),
    ("api", "POST", "/", {"inputs": TEXTS}, True, 200),
    ("api", "POST", "/embed_sparse", {"inputs": TEXTS}, True, 200),
    ("api", "POST", "/embed_sparse", {"inputs": TEXTS, "sparse_top_k": 3}, True, 200),
    ("api", "POST", "/embed_all", {"inputs": TEXTS[0]}, True, 200),
    ("api", "POST", "/tokenize", {"inputs": TEXTS, "add_special_tokens": False}, True, 200),
    ("api", "POST", "/tokenize", {"inputs": 7}, True, 422),
    ("api", "POST", "/similarity", {"inputs": {"source_sentence": TEXTS[0],
                                               "sentences": TEXTS}}, True, 200),
    ("api", "POST", "/similarity", {"inputs": TEXTS[0]}, True, 422),
    # The reranker "rr" (the first one served answers when no model is named) and the
    # 3-label classifier "labels".
    ("api", "POST", "/rerank", {"query": TEXTS[1], "texts": TEXTS + [LONG],
                                "return_text": True, "temperature": 0.8}, True, 200),
    ("api", "POST", "/rerank", {"query": TEXTS[1], "texts": [LONG], "truncate": True,
                                "truncation_direction": "Left", "raw_scores": True}, True, 200),
    ("api", "POST", "/rerank", {"texts": TEXTS}, True, 422),
    ("api", "POST", "/rerank", {"query": TEXTS[1], "texts": [LONG], "strategy": "reject"},
     True, 413),
    ("api", "POST", "/rerank", {"query": TEXTS[1], "texts": TEXTS}, False, 401),
    ("api", "POST", "/predict", {"inputs": TEXTS[0]}, True, 200),
    ("api", "POST", "/predict", {"inputs": [TEXTS, TEXTS[::-1]], "raw_scores": True}, True, 200),
    ("api", "POST", "/predict", {"inputs": 7}, True, 422),
    ("api", "POST", "/v1/rerank", {"model": "rr", "query": TEXTS[1], "documents": TEXTS,
                                   "top_n": 1}, True, 200),
    ("api", "POST", "/v1/rerank", {"model": "absent", "query": TEXTS[1], "documents": TEXTS},
     True, 404),
    ("api", "POST", "/v2/rerank", {"query": TEXTS[1], "documents": [{"text": LONG}],
                                   "return_chunks": True, "return_documents": False,
                                   "chunk_tokens": 24}, True, 200),
    ("api", "POST", "/v2/rerank", {"model": "m3", "query": TEXTS[1], "documents": TEXTS},
     True, 400),
    ("api", "POST", "/v2/rerank", {"query": TEXTS[1], "documents": TEXTS}, False, 401),
    ("api", "GET", "/info", None, True, 200),
    ("api", "GET", "/info", None, False, 401),
    ("api", "GET", "/openapi.json", None, False, 200),
    ("ops", "GET", "/openapi.json", None, False, 200),
    ("api", "GET", "/docs", None, False, 200),
    ("ops", "GET", "/docs/swagger-ui-bundle.js", None, False, 200),
    ("api", "GET", "/docs/swagger-ui.css", None, False, 200),
    ("ops", "GET", "/metrics", None, False, 200),
    ("ops", "GET", "/healthz", None, False, 200),
    ("ops", "GET", "/readyz", None, False, 200),
    ("ops", "POST", "/admin/reload", None, True, 200),
    ("ops", "POST", "/admin/reload?dtype=sometimes", None, True, 400),
    ("ops", "POST", "/admin/reload", None, False, 401),
    ("ops", "POST", "/admin/reload?model=absent", None, True, 404),
]


def call(base, method, path, body, token, content_type="application/json"):
    """(status, media type, body bytes) of one HTTP call."""
    data = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", content_type)
    if token:
        request.add_header("Authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


class OpenApiAnswersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOCUMENT) as f:
            cls.document = json.load(f)
        cls.tmp = tempfile.mkdtemp(prefix="openapi-")
        base = os.path.join(cls.tmp, "base")
        write_base_model(WRITER, base)
        sparse, colbert = make_heads(64)
        model = add_heads(base, os.path.join(cls.tmp, "m3"), sparse, colbert, "pt")
        reranker = os.path.join(cls.tmp, "rr")
        subprocess.run([WRITER, f"--out={reranker}", "--architecture=xlm-roberta", "--layers=2",
                        "--hidden=64", "--heads=4", "--max_positions=66", "--num_labels=1"],
                       check=True, capture_output=True)
        token_file = os.path.join(cls.tmp, "tokens")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        # The routes on a server with bearer auth (401s, and /admin needs it); gRPC's own
        # answers, to compare with, from a second server on the same files.
        cls.server = ServerRunner(BINARY, [f"--model=m3={model}", f"--model=rr={reranker}",
                                           "--openai-listen=127.0.0.1:0",
                                           f"--auth-token-file={token_file}",
                                           "--max-request-bytes=65536",
                                           f"--batch-dir={cls.tmp}/batches",
                                           f"--api-docs-dir={SWAGGER_UI}"])
        cls.open_server = ServerRunner(BINARY, [f"--model=m3={model}"])
        cls.bases = {"api": f"http://{cls.server.openai_address}",
                     "ops": f"http://{cls.server.http_address}"}
        cls.client = EmbeddingClient(cls.open_server.grpc_address)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.open_server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def validate(self, schema, instance, where):
        """Validates against a schema of the document, its $refs resolved in the document."""
        resolver = jsonschema.RefResolver.from_schema(self.document)
        errors = list(jsonschema.Draft202012Validator(schema, resolver=resolver)
                      .iter_errors(instance))
        self.assertEqual(errors, [], f"{where}: " + "; ".join(
            f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors))

    def test_served_document_is_the_file(self):
        for listener in ("api", "ops"):
            status, media, body = call(self.bases[listener], "GET", "/openapi.json", None, False)
            self.assertEqual((status, media), (200, "application/json"), listener)
            served = json.loads(body)
            self.assertNotEqual(served["info"]["version"], "source")
            served["info"]["version"] = self.document["info"]["version"]
            self.assertEqual(served, self.document, listener)

    def test_every_answer_matches_its_schema(self):
        called = set()
        for listener, method, path, body, token, expected in CASES:
            where = f"{method} {path.split('?')[0]} -> {expected}"
            with self.subTest(where):
                route = path.split("?")[0]
                operation = self.document["paths"][route][method.lower()]
                if expected < 300 and isinstance(body, dict):
                    self.validate(operation["requestBody"]["content"]["application/json"]
                                  ["schema"], body, where + " request")
                status, media, raw = call(self.bases[listener], method, path, body, token)
                self.assertEqual(status, expected, raw[:300])
                responses = operation["responses"]
                self.assertIn(str(status), responses, f"{where}: status not documented")
                content = responses[str(status)]["content"]
                media_type = media.split(";")[0].strip()
                self.assertIn(media_type, content, f"{where}: media type not documented")
                answer = json.loads(raw) if media_type == "application/json" else raw.decode()
                self.validate(content[media_type]["schema"], answer, where)
                called.add((route, method.lower()))
        self.call_batch_routes(called)
        documented = {(p, m) for p, ops in self.document["paths"].items() for m in ops}
        self.assertEqual(documented - called, set(), "documented operations never called")

    def check_answer(self, route, method, expected, answer, called):
        """One answer of a Batch API call (`answer` as `call` returns it) against the document's
        operation for `route` (a path template) and its status; returns the decoded body."""
        where = f"{method} {route} -> {expected}"
        status, media, raw = answer
        self.assertEqual(status, expected, f"{where}: {raw[:300]}")
        content = self.document["paths"][route][method.lower()]["responses"][str(status)]["content"]
        media_type = media.split(";")[0].strip()
        self.assertIn(media_type, content, f"{where}: media type not documented")
        decoded = json.loads(raw) if media_type == "application/json" else raw.decode()
        self.validate(content[media_type]["schema"], decoded, where)
        called.add((route, method.lower()))
        return decoded

    def call_batch_routes(self, called):
        """The Batch API's operations, whose paths carry ids: upload, list, read, run, cancel,
        delete, and an error of each kind the document lists."""
        api = self.bases["api"]
        line = {"custom_id": "a", "method": "POST", "url": "/v1/embeddings",
                "body": {"input": TEXTS[0], "temperature": 0.8}}
        form = (b'--b0\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
                b'--b0\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\n\r\n'
                + json.dumps(line).encode() + b"\n\r\n--b0--\r\n")
        upload = lambda body, token=True: call(api, "POST", "/v1/files", body, token,
                                               "multipart/form-data; boundary=b0")
        check = lambda route, method, expected, answer: self.check_answer(
            route, method, expected, answer, called)
        file = check("/v1/files", "POST", 200, upload(form))
        check("/v1/files", "POST", 400, upload(form.replace(b"\r\nbatch", b"\r\nfine-tune")))
        check("/v1/files", "POST", 401, upload(form, token=False))
        check("/v1/files", "GET", 200, call(api, "GET", "/v1/files?limit=1", None, True))
        check("/v1/files", "GET", 400, call(api, "GET", "/v1/files?limit=0", None, True))
        check("/v1/files", "GET", 401, call(api, "GET", "/v1/files", None, False))
        one = "/v1/files/{file_id}"
        check(one, "GET", 200, call(api, "GET", f"/v1/files/{file['id']}", None, True))
        check(one, "GET", 401, call(api, "GET", f"/v1/files/{file['id']}", None, False))
        check(one, "GET", 404, call(api, "GET", "/v1/files/file-absent", None, True))
        content = "/v1/files/{file_id}/content"
        check(content, "GET", 200, call(api, "GET", f"/v1/files/{file['id']}/content", None, True))
        check(content, "GET", 401, call(api, "GET", f"/v1/files/{file['id']}/content", None, False))
        check(content, "GET", 404, call(api, "GET", "/v1/files/file-absent/content", None, True))
        create = {"input_file_id": file["id"], "endpoint": "/v1/embeddings",
                  "completion_window": "24h", "metadata": {"k": "v"}}
        self.validate(self.document["paths"]["/v1/batches"]["post"]["requestBody"]["content"]
                      ["application/json"]["schema"], create, "POST /v1/batches request")
        batch = check("/v1/batches", "POST", 200, call(api, "POST", "/v1/batches", create, True))
        check("/v1/batches", "POST", 400, call(api, "POST", "/v1/batches",
                                               {**create, "endpoint": "/v1/chat"}, True))
        check("/v1/batches", "POST", 401, call(api, "POST", "/v1/batches", create, False))
        check("/v1/batches", "POST", 404, call(api, "POST", "/v1/batches",
                                               {**create, "input_file_id": "file-absent"}, True))
        check("/v1/batches", "GET", 200, call(api, "GET", "/v1/batches", None, True))
        check("/v1/batches", "GET", 400, call(api, "GET", "/v1/batches?limit=101", None, True))
        check("/v1/batches", "GET", 401, call(api, "GET", "/v1/batches", None, False))
        one = "/v1/batches/{batch_id}"
        check(one, "GET", 401, call(api, "GET", f"/v1/batches/{batch['id']}", None, False))
        check(one, "GET", 404, call(api, "GET", "/v1/batches/batch_absent", None, True))
        cancel = "/v1/batches/{batch_id}/cancel"
        check(cancel, "POST", 401, call(api, "POST", f"/v1/batches/{batch['id']}/cancel", None,
                                        False))
        check(cancel, "POST", 404, call(api, "POST", "/v1/batches/batch_absent/cancel", None, True))
        for _ in range(600):
            batch = check(one, "GET", 200, call(api, "GET", f"/v1/batches/{batch['id']}", None, True))
            if batch["status"] == "completed":
                break
            time.sleep(0.05)
        self.assertEqual(batch["status"], "completed")
        check(cancel, "POST", 200, call(api, "POST", f"/v1/batches/{batch['id']}/cancel", None, True))
        out = check(content, "GET", 200,
                    call(api, "GET", f"/v1/files/{batch['output_file_id']}/content", None, True))
        self.assertEqual(json.loads(out)["custom_id"], "a")
        deleted = "/v1/files/{file_id}"
        check(deleted, "DELETE", 200, call(api, "DELETE", f"/v1/files/{file['id']}", None, True))
        check(deleted, "DELETE", 401, call(api, "DELETE", f"/v1/files/{file['id']}", None, False))
        check(deleted, "DELETE", 404, call(api, "DELETE", f"/v1/files/{file['id']}", None, True))

    def test_docs_page_serves_swagger_ui_as_installed(self):
        _, media, page = call(self.bases["api"], "GET", "/docs", None, False)
        self.assertEqual(media, "text/html; charset=utf-8")
        for reference in (b'"/docs/swagger-ui-bundle.js"', b'"/docs/swagger-ui.css"',
                          b'url: "/openapi.json"'):
            self.assertIn(reference, page)
        for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
            with open(os.path.join(SWAGGER_UI, name), "rb") as f:
                want = f.read()
            for listener in ("api", "ops"):
                status, _, got = call(self.bases[listener], "GET", "/docs/" + name, None, False)
                self.assertEqual((status, got == want), (200, True), f"{listener} {name}")
        # Without --api-docs-dir there is no page: the listener's own 404, as documented.
        status, media, body = call(f"http://{self.open_server.http_address}", "GET", "/docs",
                                   None, False)
        self.assertEqual((status, media), (404, "text/plain"))
        content = self.document["paths"]["/docs"]["get"]["responses"]["404"]["content"]
        self.validate(content["text/plain"]["schema"], body.decode(), "GET /docs -> 404")

    def test_a_folder_without_swagger_ui_is_refused_at_start(self):
        empty = tempfile.mkdtemp(dir=self.tmp)
        done = subprocess.run([BINARY, "--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0",
                               f"--model=m3={os.path.join(self.tmp, 'm3')}",
                               f"--api-docs-dir={empty}"],
                              capture_output=True, text=True, timeout=60)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn(f"--api-docs-dir={empty}: cannot read {empty}/swagger-ui-bundle.js",
                      done.stdout + done.stderr)

    def test_a_schema_violation_is_caught(self):
        # The check can fail: a documented answer with a field the schema does not have.
        status, _, raw = call(self.bases["api"], "GET", "/info", None, True)
        answer = json.loads(raw)
        answer["undocumented"] = 1
        schema = self.document["paths"]["/info"]["get"]["responses"]["200"]["content"][
            "application/json"]["schema"]
        resolver = jsonschema.RefResolver.from_schema(self.document)
        with self.assertRaisesRegex(jsonschema.ValidationError, "undocumented"):
            jsonschema.Draft202012Validator(schema, resolver=resolver).validate(answer)

    def test_generated_client_calls_the_server(self):
        work = tempfile.mkdtemp(dir=self.tmp)
        status, _, served = call(self.bases["api"], "GET", "/openapi.json", None, False)
        with open(os.path.join(work, "openapi.json"), "wb") as f:
            f.write(served)
        with open(os.path.join(work, "package.json"), "w") as f:
            f.write('{"type": "module"}\n')
        os.symlink(os.path.abspath(os.path.join(NPM_DIR, "node_modules")),
                   os.path.join(work, "node_modules"))
        shutil.copy(os.path.join(NPM_DIR, "client.ts"), work)
        bin_dir = os.path.join(NPM_DIR, "node_modules", ".bin")

        def run(*args):
            done = subprocess.run(args, cwd=work, capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            return done.stdout

        run(os.path.join(bin_dir, "openapi-typescript"), "openapi.json", "-o", "schema.d.ts")
        run(os.path.join(bin_dir, "tsc"), "--strict", "--module", "nodenext", "--moduleResolution",
            "nodenext", "--target", "es2022", "--types", "node", "--outDir", "out", "client.ts")
        got = json.loads(run("node", "out/client.js", self.bases["api"], TOKEN))

        want = self.client.embed(TEXTS, outputs=["dense", "sparse"], temperature=0.8).documents
        for item, doc in zip(got["openai"], want):
            self.assertTrue(all(abs(a - b) <= 1e-6 for a, b in zip(item["embedding"], doc.vector)))
            got_sparse = dict(zip(item["sparse"]["token_ids"], item["sparse"]["weights"]))
            want_sparse = sparse_weights(doc.sparse)
            self.assertEqual(set(got_sparse), set(want_sparse))
            self.assertTrue(all(abs(got_sparse[t] - w) <= 1e-6 for t, w in want_sparse.items()))
        plain = self.client.embed(TEXTS).documents
        for vector, doc in zip(got["tei"], plain):
            self.assertTrue(all(abs(a - b) <= 1e-6 for a, b in zip(vector, doc.vector)))
        tokens = self.client.tokenize([TEXTS[0]]).inputs[0].tokens
        self.assertEqual(got["token_ids"], [t.id for t in tokens])
        self.assertEqual(got["refusal"]["status"], 400)
        self.assertTrue(got["refusal"]["message"].startswith("temperature"), got["refusal"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
