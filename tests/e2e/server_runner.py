"""Starts a real embedding_server on 127.0.0.1 (port 0) for a Python test, and stops it; and
posts a JSON body to one of its HTTP routes."""
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request


class ServerRunner:
    def __init__(self, binary, args, timeout=60, env=None):
        # Vectors are compared with fp32 references: pin the exact dtype (the server's default,
        # auto, may pick bf16 or int8 on this CPU) and keep nothing in the user's cache.
        pins = [f for f, name in (("--dtype=fp32", "--dtype="),
                                  ("--dtype-cache-dir=off", "--dtype-cache-dir"))
                if not any(a.startswith(name) for a in args)]
        self.process = subprocess.Popen(
            [binary, "--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0", *pins, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", env=env)
        self.stderr_text = ""
        self.log_text = ""  # stdout: what start-up read, and the rest once stopped
        self.grpc_address = self.http_address = self.openai_address = None
        deadline = time.time() + timeout
        for line in self.process.stdout:
            self.log_text += line
            if line.startswith("{"):  # --log-format=json
                line = "embedding_server: " + json.loads(line)["message"]
            if m := re.search(r"grpc listening on (\S+)", line):
                self.grpc_address = m.group(1)
            if m := re.search(r"http listening on (\S+)", line):
                self.http_address = m.group(1)
            if m := re.search(r"openai listening on (\S+)", line):
                self.openai_address = m.group(1)
            if "embedding_server: ready" in line or time.time() > deadline:
                break
        if self.grpc_address is None or self.process.poll() is not None:
            self.stop()
            raise RuntimeError("server did not start: " + self.stderr_text)

    def stop(self):
        """SIGTERM, then the exit code (0 when it drained cleanly); its log in stderr_text."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self.process.stderr.closed:
            self.log_text += self.process.stdout.read()
            self.stderr_text = self.process.stderr.read()
            self.process.stderr.close()
            self.process.stdout.close()
        return self.process.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def post_json(base, path, body):
    """POSTs `body` as JSON; (HTTP status, the decoded answer), errors included."""
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
