#!/usr/bin/python3
"""The Python and Node clients against a live server, each compared with the C++ client
(embedctl) on the same requests to 1e-6: two documents with TempScale off and on, and a long
document with CHUNK_ALL.

usage: cross_language_test.py SERVER_BINARY EMBEDCTL_BINARY MODEL_DIR REPO_ROOT
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from server_runner import ServerRunner  # noqa: E402

SERVER, EMBEDCTL, MODEL, ROOT = sys.argv[1:5]
DOCS = ["The quick brown fox.", "jumps over the lazy dog"]
LONG = " ".join(["the", "cat", "sat", "on", "a", "mat"][i % 6] for i in range(1500))


def run(*command):
    out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"{command}: {out.stderr}")
    return out.stdout


class CrossLanguageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerRunner(SERVER, [f"--model=tiny={MODEL}"])
        address = cls.server.grpc_address
        embed = [EMBEDCTL, "embed", f"--address={address}"]
        off = [json.loads(l) for l in run(*embed, *DOCS).splitlines()]
        on = [json.loads(l) for l in run(*embed, "--temperature=0.7", *DOCS).splitlines()]
        long = json.loads(run(*embed, "--strategy=chunk_all", "--chunk-tokens=200",
                              "--chunk-overlap-tokens=20", LONG))
        cls.cpp = {
            "off": [d["vector"] for d in off], "on": [d["vector"] for d in on],
            "long": long["vector"],
            "chunks": [{"vector": c["vector"], "token_span": c["token_span"]} for c in long["chunks"]],
        }

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def assert_same(self, other, language):
        self.assertEqual(len(other["chunks"]), len(self.cpp["chunks"]), language)
        self.assertGreater(len(self.cpp["chunks"]), 5)
        pairs = [(other["off"][i], self.cpp["off"][i]) for i in range(2)]
        pairs += [(other["on"][i], self.cpp["on"][i]) for i in range(2)]
        pairs.append((other["long"], self.cpp["long"]))
        for mine, theirs in zip(other["chunks"], self.cpp["chunks"]):
            self.assertEqual(mine["token_span"], theirs["token_span"], language)
            pairs.append((mine["vector"], theirs["vector"]))
        for a, b in pairs:
            self.assertEqual(len(a), len(b), language)
            self.assertLessEqual(max(abs(x - y) for x, y in zip(a, b)), 1e-6, language)
        # TempScale must have changed the vectors, or the comparison proves little.
        self.assertGreater(max(abs(x - y) for x, y in zip(other["on"][0], other["off"][0])), 1e-3)

    def test_python_client_matches_cpp(self):
        out = run("/usr/bin/python3", os.path.join(ROOT, "client/python/embed_example.py"),
                  self.server.grpc_address)
        self.assert_same(json.loads(out), "python")

    def test_node_client_matches_cpp(self):
        out = run("node", os.path.join(ROOT, "client/node/embed_example.js"),
                  self.server.grpc_address)
        self.assert_same(json.loads(out), "node")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
