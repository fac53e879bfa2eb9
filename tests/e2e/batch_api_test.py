#!/usr/bin/python3
"""The Batch API (OpenAI's Files and Batches) against a live server.

- The official `openai` npm SDK (tests/e2e/openai/batch_client.js) uploads a JSONL file,
  creates a batch, polls it and downloads its output and error files. Every output line must
  equal the direct POST /v1/embeddings of its body bit for bit (fp32), every bad line must
  carry the status and error object that call gives, and every custom_id appears once.
- A cancel right after the create ends "cancelled", each unrun line listed once with
  batch_cancelled.
- Refusals name their field or flag: purpose, file, endpoint, completion_window, ids, limit,
  the bearer token; and each bound (--batch-max-file-bytes, -lines, -stored-bytes, -active).
- SIGKILL in the middle of a 2,000-line batch, then a restart on the same --batch-dir: the
  batch completes with every custom_id exactly once. A SIGTERM in the middle of one drains
  and exits 0, and the restarted server finishes it the same way.
- After a cancel, the requests in flight, the queued tokens and the pending lines are all 0.
- `embedctl batch submit --wait`, `status` and `download` over the same routes.

usage: batch_api_test.py SERVER_BINARY EMBEDCTL_BINARY MODEL_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from server_runner import ServerRunner  # noqa: E402

SERVER, EMBEDCTL, MODEL = sys.argv[1:4]
NODE_CLIENT = os.path.join(HERE, "openai", "batch_client.js")
TOKEN = "batch-test-token-4e1d"
LONG = " ".join(["the", "owl", "sat", "on", "a", "branch", "at", "night"][i % 8]
                for i in range(3000))


def request(base, method, path, body=None, content_type="application/json", token=TOKEN):
    """(HTTP status, answer bytes) for one call."""
    headers = {"Content-Type": content_type}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    call = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(call, timeout=120) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def call_json(base, method, path, body=None, **kw):
    status, answer = request(base, method, path, body, **kw)
    return status, json.loads(answer)


def upload(base, content, purpose="batch", **kw):
    """POST /v1/files as a multipart form, built here by hand (the SDK is tested apart)."""
    boundary = "----batch-test-boundary-7"
    parts = []
    if purpose is not None:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n'
                     f"{purpose}\r\n".encode())
    if content is not None:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                     f'filename="corpus.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n'
                     .encode() + content + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return call_json(base, "POST", "/v1/files", body,
                     content_type=f"multipart/form-data; boundary={boundary}", **kw)


HELD = ("embedding_in_flight_requests", "embedding_queued_tokens", "embedding_batch_lines_pending")


def held(http_address, timeout=10):
    """The gauges of what the server holds for calls, once they read 0 or at the timeout: a
    line's completion may reach the gauges a moment after the batch's last update."""
    deadline = time.time() + timeout
    while True:
        text = urllib.request.urlopen(f"http://{http_address}/metrics", timeout=10).read().decode()
        values = {name: sum(float(m) for m in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$",
                                                           text, re.M))
                  for name in HELD}
        if not any(values.values()) or time.time() > deadline:
            return values
        time.sleep(0.05)


def jsonl(lines):
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def embed_line(custom_id, body):
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/embeddings", "body": body}


def wait_for(base, batch_id, done=("completed", "failed", "expired", "cancelled"), timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, batch = call_json(base, "GET", f"/v1/batches/{batch_id}")
        assert status == 200, batch
        if batch["status"] in done:
            return batch
        time.sleep(0.05)
    raise AssertionError(f"batch {batch_id} still {batch['status']}")


def lines_in(path):
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def results(base, batch):
    """{custom_id: result line} over the output and error files; fails on a custom_id twice."""
    by_id = {}
    for key in ("output_file_id", "error_file_id"):
        if batch[key] is None:
            continue
        status, content = request(base, "GET", f"/v1/files/{batch[key]}/content")
        assert status == 200, content
        assert content.endswith(b"\n"), "a torn last line"
        for text in content.decode().splitlines():
            line = json.loads(text)
            assert line["custom_id"] not in by_id, f"{line['custom_id']} twice"
            by_id[line["custom_id"]] = line
    return by_id


class BatchApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="batch-api-")
        cls.token_file = os.path.join(cls.tmp, "tokens")
        with open(cls.token_file, "w") as f:
            f.write(TOKEN + "\n")
        cls.server = ServerRunner(SERVER, [f"--model=tiny={MODEL}", "--openai-listen=127.0.0.1:0",
                                           f"--auth-token-file={cls.token_file}",
                                           f"--batch-dir={cls.tmp}/batches",
                                           "--max-inputs-per-request=8"])
        cls.base = f"http://{cls.server.openai_address}"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def direct(self, body):
        """The same body as a direct /v1/embeddings call: (status, decoded answer)."""
        return call_json(self.base, "POST", "/v1/embeddings", body)

    def run_client(self, lines, mode=""):
        path = os.path.join(self.tmp, f"input{mode}.jsonl")
        with open(path, "wb") as f:
            f.write(jsonl(lines) if isinstance(lines, list) else lines)
        out = subprocess.run(["node", NODE_CLIENT, self.base + "/v1", TOKEN, path, mode],
                             capture_output=True, text=True, timeout=300, cwd=HERE)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_official_client_lifecycle_equals_direct_calls(self):
        good = {
            "one": {"model": "tiny", "input": "Owls hunt at night."},
            "many": {"model": "tiny", "input": ["a heron", "a vole", ""]},
            "tau": {"model": "tiny", "input": [LONG], "temperature": 0.7},
            "chunks": {"model": "tiny", "input": [LONG], "strategy": "chunk_all",
                       "chunk_tokens": 128, "chunk_overlap_tokens": 16},
            "late": {"model": "tiny", "input": [LONG], "strategy": "late_chunking"},
            "dims": {"model": "tiny", "input": ["matryoshka"], "dimensions": 32},
            "b64": {"model": "tiny", "input": ["bytes"], "encoding_format": "base64"},
            "ids": {"model": "tiny", "input": [[5, 6, 7, 8]], "normalize": False},
        }
        bad = {
            "no_model": {"model": "nope", "input": "x"},
            "too_many": {"model": "tiny", "input": ["x"] * 9},
            "bad_tau": {"model": "tiny", "input": "x", "temperature": 0},
            "unknown_field": {"model": "tiny", "input": "x", "colour": "red"},
        }
        lines = [embed_line(k, v) for k, v in {**good, **bad}.items()]
        lines.append({"custom_id": "wrong_url", "method": "POST", "url": "/v1/chat/completions",
                      "body": {"model": "tiny"}})
        content = jsonl(lines) + b"this line is not JSON\n\n"  # and a blank line, skipped
        out = self.run_client(content)

        self.assertEqual(out["file"]["object"], "file")
        self.assertEqual(out["file"]["purpose"], "batch")
        self.assertEqual(out["file"]["bytes"], len(content))
        self.assertEqual(out["retrieved"], out["file"])
        batch = out["batch"]
        self.assertEqual(batch["status"], "completed", batch)
        order = ["validating", "in_progress", "finalizing", "completed"]
        self.assertEqual(out["statuses"], sorted(out["statuses"], key=order.index))
        self.assertEqual(batch["request_counts"],
                         {"total": len(lines) + 1, "completed": len(good),
                          "failed": len(bad) + 2})
        self.assertEqual(batch["metadata"], {"corpus": "e2e"})
        for key in ("in_progress_at", "finalizing_at", "completed_at", "expires_at"):
            self.assertGreaterEqual(batch[key], batch["created_at"], key)
        self.assertIn(batch["id"], out["batches"])
        for file_id in (out["file"]["id"], batch["output_file_id"], batch["error_file_id"]):
            self.assertIn(file_id, out["files"])

        by_id = {}
        for name, text in (("output", out["output"]), ("errors", out["errors"])):
            for line in text.splitlines():
                line = json.loads(line)
                self.assertNotIn(line["custom_id"], by_id)
                by_id[line["custom_id"]] = (name, line)
        self.assertEqual(len(by_id), len(lines) + 1)  # custom_id None: the line that is not JSON
        for custom_id, body in good.items():
            where, line = by_id[custom_id]
            self.assertEqual(where, "output", line)
            self.assertTrue(line["id"].startswith("batch_req_"))
            self.assertIsNone(line["error"])
            self.assertEqual(line["response"]["status_code"], 200)
            status, expected = self.direct(body)
            self.assertEqual(status, 200)
            self.assertEqual(line["response"]["body"]["data"], expected["data"], custom_id)
            self.assertEqual(line["response"]["body"]["usage"], expected["usage"])
        for custom_id, body in bad.items():
            where, line = by_id[custom_id]
            self.assertEqual(where, "errors")
            status, expected = self.direct(body)
            self.assertEqual(line["response"]["status_code"], status, custom_id)
            self.assertEqual(line["response"]["body"], expected, custom_id)
        self.assertEqual(by_id["wrong_url"][1]["response"]["status_code"], 400)
        self.assertEqual(by_id["wrong_url"][1]["response"]["body"]["error"]["param"], "url")
        self.assertEqual(by_id[None][1]["response"]["body"]["error"]["param"], "body")

        with urllib.request.urlopen(f"http://{self.server.http_address}/metrics") as r:
            metrics = r.read().decode()
        self.assertRegex(metrics, r'embedding_batch_requests_total\{state="completed"\} \d+')
        self.assertIn("embedding_batch_lines_pending 0", metrics)

    def test_cancel_lists_every_unrun_line_once(self):
        lines = [embed_line(f"doc-{i}", {"model": "tiny", "input": [LONG]}) for i in range(200)]
        out = self.run_client(lines, "cancel")
        self.assertEqual(out["cancelled"]["status"], "cancelling")
        batch = out["batch"]
        self.assertEqual(batch["status"], "cancelled", batch)
        self.assertIsNotNone(batch["cancelled_at"])
        by_id = results(self.base, batch)
        self.assertEqual(sorted(by_id), sorted(f"doc-{i}" for i in range(200)))
        unrun = [l for l in by_id.values() if l["error"] is not None]
        self.assertGreater(len(unrun), 0)
        for line in unrun:
            self.assertEqual(line["error"]["code"], "batch_cancelled")
            self.assertIsNone(line["response"])
        self.assertEqual(batch["request_counts"]["failed"], len(unrun))
        self.assertEqual(batch["request_counts"]["completed"], 200 - len(unrun))
        self.assertEqual(held(self.server.http_address), dict.fromkeys(HELD, 0.0))

    def test_embedctl_submits_waits_and_downloads(self):
        path = os.path.join(self.tmp, "embedctl.jsonl")
        lines = [embed_line(f"e{i}", {"model": "tiny", "input": f"text {i}"}) for i in range(5)]
        lines.append(embed_line("bad", {"model": "nope", "input": "x"}))
        with open(path, "wb") as f:
            f.write(jsonl(lines))
        flags = [f"--api_url={self.base}", f"--token={TOKEN}", "--poll_s=0.05"]
        run = lambda *args: subprocess.run([EMBEDCTL, "batch", *args, *flags],
                                           capture_output=True, text=True, timeout=120)
        submitted = run("submit", path, "--wait")
        self.assertEqual(submitted.returncode, 0, submitted.stderr)
        batch = json.loads(submitted.stdout.splitlines()[-1])
        self.assertEqual((batch["status"], batch["request_counts"]),
                         ("completed", {"total": 6, "completed": 5, "failed": 1}))
        status = run("status", batch["id"])
        self.assertEqual(json.loads(status.stdout)["id"], batch["id"])
        out_dir = tempfile.mkdtemp(dir=self.tmp)
        downloaded = run("download", batch["id"], f"--out_dir={out_dir}")
        self.assertEqual(downloaded.returncode, 0, downloaded.stderr)
        paths = downloaded.stdout.split()
        self.assertEqual([os.path.basename(p) for p in paths],
                         [f"{batch['id']}_output.jsonl", f"{batch['id']}_error.jsonl"])
        for path, key in zip(paths, ("output_file_id", "error_file_id")):
            with open(path, "rb") as f:
                self.assertEqual(f.read(), request(self.base, "GET",
                                                   f"/v1/files/{batch[key]}/content")[1])
        missing = run("status", "batch_absent")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("batch_id: no batch batch_absent", missing.stderr)
        self.assertEqual(run("submit").returncode, 2)

    def test_refusals_name_their_field(self):
        cases = [
            (upload(self.base, b"{}\n", purpose="fine-tune"), 400, "purpose"),
            (upload(self.base, None), 400, "file"),
            (upload(self.base, b"{}\n", purpose=None), 400, "purpose"),
            (upload(self.base, b""), 400, "file"),
            (call_json(self.base, "POST", "/v1/files", b"x", content_type="text/plain"), 400,
             "Content-Type"),
            (upload(self.base, b"{}\n", token="wrong"), 401, "authorization"),
            (call_json(self.base, "GET", "/v1/batches", token=None), 401, "authorization"),
            (call_json(self.base, "GET", "/v1/files/file-nope"), 404, "file_id"),
            (call_json(self.base, "GET", "/v1/files/file-nope/content"), 404, "file_id"),
            (call_json(self.base, "DELETE", "/v1/files/file-nope"), 404, "file_id"),
            (call_json(self.base, "GET", "/v1/batches/batch_nope"), 404, "batch_id"),
            (call_json(self.base, "POST", "/v1/batches/batch_nope/cancel"), 404, "batch_id"),
            (call_json(self.base, "GET", "/v1/batches?limit=0"), 400, "limit"),
            (call_json(self.base, "GET", "/v1/files?order=sideways"), 400, "order"),
            (call_json(self.base, "GET", "/v1/batches?after=batch_nope"), 400, "after"),
            (call_json(self.base, "POST", "/v1/batches", b"{"), 400, "body"),
        ]
        status, file = upload(self.base, jsonl([embed_line("a", {"input": "x"})]))
        self.assertEqual(status, 200, file)
        create = {"input_file_id": file["id"], "endpoint": "/v1/embeddings",
                  "completion_window": "24h"}
        for change, param in (({"endpoint": "/v1/chat/completions"}, "endpoint"),
                              ({"completion_window": "2d"}, "completion_window"),
                              ({"completion_window": "0h"}, "completion_window"),
                              ({"metadata": {"k": 1}}, "metadata"),
                              ({"priority": 1}, "priority")):
            cases.append((call_json(self.base, "POST", "/v1/batches", {**create, **change}),
                          400, param))
        cases.append((call_json(self.base, "POST", "/v1/batches",
                                {**create, "input_file_id": "file-nope"}), 404, "input_file_id"))
        for (status, answer), expected, param in cases:
            self.assertEqual(status, expected, answer)
            self.assertEqual(answer["error"]["param"], param, answer)

    def test_duplicate_custom_id_fails_the_batch_and_delete_removes_a_file(self):
        content = jsonl([embed_line("same", {"model": "tiny", "input": "x"})] * 2)
        status, file = upload(self.base, content)
        self.assertEqual(status, 200, file)
        status, batch = call_json(self.base, "POST", "/v1/batches",
                                  {"input_file_id": file["id"], "endpoint": "/v1/embeddings",
                                   "completion_window": "24h"})
        self.assertEqual(status, 200, batch)
        batch = wait_for(self.base, batch["id"])
        self.assertEqual(batch["status"], "failed")
        self.assertEqual(batch["errors"]["data"][0]["code"], "duplicate_custom_id")
        self.assertEqual(batch["errors"]["data"][0]["line"], 2)
        status, deleted = call_json(self.base, "DELETE", f"/v1/files/{file['id']}")
        self.assertEqual((status, deleted),
                         (200, {"id": file["id"], "object": "file", "deleted": True}))
        self.assertEqual(call_json(self.base, "GET", f"/v1/files/{file['id']}")[0], 404)


class BatchLimitsTest(unittest.TestCase):
    def test_every_bound_names_its_flag(self):
        tmp = tempfile.mkdtemp(prefix="batch-limits-")
        with ServerRunner(SERVER, [f"--model=tiny={MODEL}", "--openai-listen=127.0.0.1:0",
                                   f"--batch-dir={tmp}", "--batch-max-file-bytes=200000",
                                   "--batch-max-lines=5", "--batch-max-stored-bytes=300000",
                                   "--batch-max-active=1"]) as server:
            base = f"http://{server.openai_address}"
            line = embed_line("x", {"model": "tiny", "input": "x"})
            status, answer = upload(base, jsonl([line] * 6), token=None)
            self.assertEqual(status, 400)
            self.assertIn("--batch-max-lines=5", answer["error"]["message"])
            status, answer = upload(base, b"x" * 200001, token=None)
            self.assertEqual((status, answer["error"]["param"]), (400, "file"))
            self.assertIn("--batch-max-file-bytes", answer["error"]["message"])
            status, answer = upload(base, b"x" * 300000, token=None)  # past the body limit
            self.assertEqual((status, answer["error"]["param"]), (413, "file"))
            # Four lines and a blank one of padding: within --batch-max-lines=5.
            slow = [embed_line(f"s{i}", {"model": "tiny", "input": [LONG] * 2}) for i in range(4)]
            status, first = upload(base, jsonl(slow) + b" " * (150000 - len(jsonl(slow))),
                                   token=None)
            self.assertEqual(status, 200, first)
            status, answer = upload(base, b"x" * 150001, token=None)
            self.assertEqual(status, 429, answer)
            self.assertIn("--batch-max-stored-bytes", answer["error"]["message"])
            create = {"input_file_id": first["id"], "endpoint": "/v1/embeddings",
                      "completion_window": "24h"}
            status, batch = call_json(base, "POST", "/v1/batches", create, token=None)
            self.assertEqual(status, 200, batch)
            status, answer = call_json(base, "POST", "/v1/batches", create, token=None)
            self.assertEqual(status, 429, answer)
            self.assertIn("--batch-max-active=1", answer["error"]["message"])
            self.assertEqual(wait_for(base, batch["id"])["status"], "completed")


class BatchCrashTest(unittest.TestCase):
    def interrupt_then_finish(self, count, stop_after, stop):
        """Runs a `count`-line batch, calls `stop(server)` once `stop_after` results are on
        disk (the runner syncs each line as it writes it), restarts on the same --batch-dir
        and checks the batch completes with each custom_id and result id once, equal to
        direct calls. Returns what `stop` returned."""
        tmp = tempfile.mkdtemp(prefix="batch-crash-")
        args = [f"--model=tiny={MODEL}", "--openai-listen=127.0.0.1:0", f"--batch-dir={tmp}"]
        texts = [f"document {i}: " + " ".join(["owl", "heron", "vole"][i % 3] for _ in range(i % 40))
                 for i in range(count)]
        lines = [embed_line(f"line-{i}", {"model": "tiny", "input": text})
                 for i, text in enumerate(texts)]
        server = ServerRunner(SERVER, args)
        try:
            base = f"http://{server.openai_address}"
            status, file = upload(base, jsonl(lines), token=None)
            self.assertEqual(status, 200, file)
            status, batch = call_json(base, "POST", "/v1/batches",
                                      {"input_file_id": file["id"], "endpoint": "/v1/embeddings",
                                       "completion_window": "24h"}, token=None)
            self.assertEqual(status, 200, batch)
            output = os.path.join(tmp, "batches", f"{batch['id']}.output.jsonl")
            deadline = time.time() + 120
            while time.time() < deadline and lines_in(output) < stop_after:
                time.sleep(0.005)
            stopped = stop(server)
        finally:
            server.stop()
        written = lines_in(output)
        self.assertGreaterEqual(written, stop_after)
        self.assertLess(written, count, "the batch ended before the stop")
        with open(output, "ab") as f:  # a line torn by a crash, as a write cut short leaves it
            f.write(b'{"id":"batch_req_' + batch["id"].encode()[6:] + b'_19')
        with ServerRunner(SERVER, args) as again:
            base = f"http://{again.openai_address}"
            done = wait_for(base, batch["id"])
            self.assertEqual(done["status"], "completed", done)
            self.assertEqual(done["request_counts"],
                             {"total": count, "completed": count, "failed": 0})
            by_id = results(base, done)
            self.assertEqual(sorted(by_id), sorted(f"line-{i}" for i in range(count)))
            self.assertEqual(len({line["id"] for line in by_id.values()}), count)
            for i in (0, stop_after - 1, stop_after, count - 1):
                status, direct = call_json(base, "POST", "/v1/embeddings",
                                           lines[i]["body"], token=None)
                self.assertEqual(by_id[f"line-{i}"]["response"]["body"]["data"], direct["data"])
        return stopped

    def test_sigkill_mid_batch_then_restart_runs_every_line_once(self):
        def kill(server):  # SIGKILL: no drain, no flush
            server.process.kill()
            return server.process.wait()
        self.interrupt_then_finish(2000, 400, kill)

    def test_sigterm_mid_batch_drains_then_restart_runs_every_line_once(self):
        # The lines cut short by the drain are not results: they run again after the restart.
        self.assertEqual(self.interrupt_then_finish(600, 100, ServerRunner.stop), 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
