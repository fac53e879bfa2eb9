#!/usr/bin/python3
"""sentence-transformers Dense modules through the server: a copy of a demo model with two
Dense modules (Tanh 64 -> 32 as pytorch_model.bin, written by torch.save and read by the
weights-only reader; Identity 32 -> 24 without bias as safetensors) serves, on gRPC and the
OpenAI route, exactly what numpy computes from the plain model's raw vectors: per chunk for
chunk_all, and after pooling each chunk's states for late_chunking; mean-merged, normalised
and Matryoshka-truncated after the last module; ModelInfo names 24 dimensions.

usage: dense_modules_test.py SERVER_BINARY WRITE_DEMO_MODEL
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request

import numpy as np
import torch

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, HERE)
from bge_m3_model import write_safetensors  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, WRITER = sys.argv[1], sys.argv[2]
TEXT = " ".join(["owls and foxes hunt in the moonlit forest near the river bank"] * 12)
DENSE = "sentence_transformers.models.Dense"


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f)


def write_dense_model(base, out):
    """`base` plus 2_Dense and 3_Dense; returns the numpy projection they define."""
    shutil.copytree(base, out)
    torch.manual_seed(11)
    first, second = torch.nn.Linear(64, 32), torch.nn.Linear(32, 24, bias=False)
    os.makedirs(f"{out}/2_Dense")
    torch.save({"linear.weight": first.weight.detach().clone(),
                "linear.bias": first.bias.detach().clone()}, f"{out}/2_Dense/pytorch_model.bin")
    write_json(f"{out}/2_Dense/config.json", {
        "in_features": 64, "out_features": 32, "bias": True,
        "activation_function": "torch.nn.modules.activation.Tanh"})
    os.makedirs(f"{out}/3_Dense")
    write_safetensors(f"{out}/3_Dense/model.safetensors", {"linear.weight": second.weight})
    write_json(f"{out}/3_Dense/config.json", {
        "in_features": 32, "out_features": 24, "bias": False,
        "activation_function": "torch.nn.modules.linear.Identity"})
    with open(f"{out}/modules.json") as f:
        modules = json.load(f)
    normalize = [m for m in modules if m["type"].endswith("Normalize")]
    modules = [m for m in modules if not m["type"].endswith("Normalize")]
    modules += [{"idx": 2, "name": "2", "path": "2_Dense", "type": DENSE},
                {"idx": 3, "name": "3", "path": "3_Dense", "type": DENSE}] + normalize
    write_json(f"{out}/modules.json", modules)
    w1, b1 = first.weight.detach().numpy(), first.bias.detach().numpy()
    w2 = second.weight.detach().numpy()
    return lambda x: (np.tanh(np.asarray(x, np.float64) @ w1.T + b1)) @ w2.T


def unit(v):
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


class DenseModulesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dense-")
        base = os.path.join(cls.tmp, "base")
        subprocess.run([WRITER, f"--out={base}", "--layers=2", "--hidden=64", "--heads=4",
                        "--max_positions=66", "--pooling=mean"], check=True, capture_output=True)
        cls.project = staticmethod(write_dense_model(base, os.path.join(cls.tmp, "dense")))
        cls.plain = ServerRunner(BINARY, [f"--model=m={base}"])
        cls.dense = ServerRunner(BINARY, [f"--model=m={os.path.join(cls.tmp, 'dense')}",
                                          "--openai-listen=127.0.0.1:0"])
        cls.plain_client = EmbeddingClient(cls.plain.grpc_address)
        cls.dense_client = EmbeddingClient(cls.dense.grpc_address)

    @classmethod
    def tearDownClass(cls):
        cls.plain.stop()
        cls.dense.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def raw_chunks(self, client, strategy, **options):
        doc = client.embed([TEXT], strategy=f"LONG_TEXT_STRATEGY_{strategy}", chunk_tokens=24,
                           temperature=0.8, **options).documents[0]
        return doc, [list(c.vector) for c in doc.chunks]

    def test_model_info_names_the_last_modules_width(self):
        info = self.dense_client.list_models().models[0]
        self.assertEqual(info.dimensions, 24)

    def test_each_chunk_and_late_chunk_goes_through_the_modules(self):
        for strategy in ("CHUNK_ALL", "LATE_CHUNKING"):
            _, plain = self.raw_chunks(self.plain_client, strategy, normalize=False)
            doc, dense = self.raw_chunks(self.dense_client, strategy, normalize=False)
            self.assertGreater(len(plain), 3, strategy)
            want = [self.project(v) for v in plain]
            worst = max(np.abs(np.array(d) - w).max() for d, w in zip(dense, want))
            print(f"{strategy}: {len(dense)} chunks, max |server - numpy| = {worst:.2e}")
            self.assertLessEqual(worst, 1e-5, strategy)
            # The document: the chunks' mean; normalised and then cut to 8 dimensions.
            self.assertLessEqual(np.abs(np.array(doc.vector) - np.mean(want, axis=0)).max(), 1e-5)
            cut = self.dense_client.embed([TEXT], strategy=f"LONG_TEXT_STRATEGY_{strategy}",
                                          chunk_tokens=24, temperature=0.8,
                                          dimensions=8).documents[0]
            merged = np.mean([unit(w) for w in want], axis=0)
            self.assertLessEqual(np.abs(np.array(cut.vector) - unit(unit(merged)[:8])).max(),
                                 1e-5, strategy)

    def test_openai_route_and_dimensions_bound(self):
        request = urllib.request.Request(
            f"http://{self.dense.openai_address}/v1/embeddings", method="POST",
            data=json.dumps({"input": "owls at night", "dimensions": 25}).encode(),
            headers={"Content-Type": "application/json"})
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        body = json.loads(refused.exception.read())
        self.assertEqual(refused.exception.code, 400)
        self.assertIn("dimensions: 25 is outside the model's size; allowed [1, 24]",
                      body["error"]["message"])
        request.data = json.dumps({"input": "owls at night"}).encode()
        with urllib.request.urlopen(request, timeout=30) as answer:
            vector = json.loads(answer.read())["data"][0]["embedding"]
        plain = self.plain_client.embed(["owls at night"], normalize=False).documents[0].vector
        self.assertLessEqual(np.abs(np.array(vector) - unit(self.project(plain))).max(), 1e-5)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
