#!/usr/bin/python3
"""Checkpoints laid out as the Hub holds them load, and embed bit-identically to the plain
layout of the same weights on every door (gRPC, OpenAI, TEI); the unsafe and unusable ones are
refused naming their file or tensor. The corpus is written here with python3-torch's own
torch.save (the zip format pytorch_model.bin has used since PyTorch 1.6, and the legacy one).

usage: checkpoint_layouts_test.py SERVER_BINARY WRITE_DEMO_MODEL
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import urllib.request
from collections import OrderedDict

import numpy as np
import torch

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
from compare_encoder import read_safetensors  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, WRITER = sys.argv[1], sys.argv[2]
POSITIONS = 128
DOCS = ["owls hunt at night", "the bank raised its rates", "a river bank in spring"]
# safetensors' dtype names for numpy's, and torch's for the same
NUMPY_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
                "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}
TORCH_DTYPES = {"F64": torch.float64, "I64": torch.int64, "I32": torch.int32, "I16": torch.int16,
                "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}


def write_safetensors(path, tensors):
    """tensors: name -> numpy array (its dtype kept)."""
    header, data = {}, b""
    for name, array in tensors.items():
        kind = next(k for k, v in NUMPY_DTYPES.items() if np.dtype(v) == array.dtype)
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": kind, "shape": list(array.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    blob = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob + data)


def arrays(tensors):
    return {name: t.numpy() for name, t in tensors.items()}


def position_ids(name):
    # Saved buffers held arange; these are reversed, so a server that trusted them would differ.
    return {name: torch.arange(POSITIONS - 1, -1, -1, dtype=torch.int64).reshape(1, POSITIONS)}


def with_prefix(tensors, prefix):
    return OrderedDict((prefix + name, t) for name, t in tensors.items())


class Evil:
    """A pickle that would run code when loaded by Python's pickle."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def post(base, path, body):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.loads(r.read())


def get(base, path):
    with urllib.request.urlopen(base + path, timeout=60) as r:
        return json.loads(r.read())


class Corpus:
    """Model directories that differ from their base only in how the weights are laid out."""

    def __init__(self, root):
        self.root = root
        self.bases = {}
        for arch in ("bert", "xlm-roberta"):
            base = os.path.join(root, "base-" + arch)
            subprocess.run([WRITER, f"--out={base}", f"--architecture={arch}", "--layers=2",
                            "--hidden=64", "--heads=4", f"--max_positions={POSITIONS}",
                            "--pooling=mean"], check=True, capture_output=True)
            self.bases[arch] = base

    def tensors(self, arch):
        return read_safetensors(os.path.join(self.bases[arch], "model.safetensors"))

    def layout(self, name, arch="bert"):
        """A copy of the base without its weights."""
        out = os.path.join(self.root, name)
        shutil.copytree(self.bases[arch], out)
        os.remove(os.path.join(out, "model.safetensors"))
        return out

    def sharded(self, name, tensors, ext):
        out = self.layout(name)
        names = list(tensors)
        weight_map = {}
        for i, part in enumerate((names[::2], names[1::2])):
            shard = f"{'model' if ext == 'safetensors' else 'pytorch_model'}-0000{i + 1}-of-00002.{ext}"
            chunk = OrderedDict((n, tensors[n]) for n in part)
            if ext == "safetensors":
                write_safetensors(os.path.join(out, shard), arrays(chunk))
            else:
                torch.save(chunk, os.path.join(out, shard))
            weight_map.update({n: shard for n in part})
        index = "model.safetensors.index.json" if ext == "safetensors" else \
            "pytorch_model.bin.index.json"
        with open(os.path.join(out, index), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
        return out


class CheckpointLayoutsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="layouts-")
        cls.corpus = Corpus(cls.tmp)
        cls.marker = os.path.join(cls.tmp, "pickle-ran-code")
        cls.plain = {arch: cls.serve(base) for arch, base in cls.corpus.bases.items()}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def serve(cls, model_dir, *flags):
        """Every door's answers for DOCS, the server's log and its model info."""
        with ServerRunner(BINARY, [f"--model=m={model_dir}", "--openai-listen=127.0.0.1:0",
                                   *flags]) as server:
            client = EmbeddingClient(server.grpc_address)
            base = f"http://{server.openai_address}"
            answers = {
                "grpc": [list(d.vector) for d in client.embed(DOCS).documents],
                "openai": [d["embedding"] for d in
                           post(base, "/v1/embeddings", {"model": "m", "input": DOCS})["data"]],
                "tei": post(base, "/embed", {"inputs": DOCS}),
                "info": client.list_models().models[0],
                "tei_info": get(base, "/info"),
                "client": client, "base": base,
            }
            server.stop()
            answers["log"] = server.log_text + server.stderr_text
            return answers

    def assert_same_as_plain(self, model_dir, arch="bert"):
        got, want = self.serve(model_dir), self.plain[arch]
        for door in ("grpc", "openai", "tei"):
            self.assertEqual(got[door], want[door], f"{model_dir}: {door}")
        return got

    def assert_refused(self, model_dir, *needles, flags=()):
        process = subprocess.run([BINARY, f"--model=m={model_dir}", "--listen=127.0.0.1:0",
                                  "--http-listen=127.0.0.1:0", "--dtype=fp32", *flags],
                                 capture_output=True, text=True, timeout=120)
        self.assertNotEqual(process.returncode, 0, process.stdout)
        for needle in needles:
            self.assertIn(needle, process.stderr + process.stdout)
        return process.stderr

    # --- loadable layouts -------------------------------------------------------------------

    def test_integer_position_ids_are_ignored_under_every_prefix(self):
        tensors = self.corpus.tensors("bert")
        for prefix in ("bert.", "", "distilbert."):
            # transformers wrote the buffer under the model's own prefix; a distilbert. one
            # beside BERT weights is just another tensor the model does not read.
            weights = with_prefix(tensors, "bert." if prefix == "bert." else "")
            weights.update(position_ids(prefix + "embeddings.position_ids"))
            out = self.corpus.layout(f"position-ids-{prefix or 'none'}")
            write_safetensors(os.path.join(out, "model.safetensors"), arrays(weights))
            got = self.assert_same_as_plain(out)
            self.assertRegex(got["log"], re.escape(prefix + "embeddings.position_ids (I64 [1, 128])"))
        weights = with_prefix(self.corpus.tensors("xlm-roberta"), "roberta.")
        weights.update(position_ids("roberta.embeddings.position_ids"))
        out = self.corpus.layout("position-ids-roberta", "xlm-roberta")
        write_safetensors(os.path.join(out, "model.safetensors"), arrays(weights))
        self.assert_same_as_plain(out, "xlm-roberta")

    def test_unused_tensors_of_every_dtype_are_listed_and_ignored(self):
        weights = arrays(self.corpus.tensors("bert"))
        for kind, dtype in NUMPY_DTYPES.items():
            weights[f"extra.{kind.lower()}"] = np.ones((2, 3), dtype=dtype)
        out = self.corpus.layout("every-dtype")
        write_safetensors(os.path.join(out, "model.safetensors"), weights)
        log = self.assert_same_as_plain(out)["log"]
        self.assertIn(f"ignores {len(NUMPY_DTYPES)} tensor(s)", log)
        for kind in NUMPY_DTYPES:
            self.assertIn(f"extra.{kind.lower()} ({kind} [2, 3])", log)

    def test_gamma_and_beta_are_layer_norm_weight_and_bias(self):
        renamed = OrderedDict(
            (re.sub(r"LayerNorm\.weight$", "LayerNorm.gamma",
                    re.sub(r"LayerNorm\.bias$", "LayerNorm.beta", name)), t)
            for name, t in self.corpus.tensors("bert").items())
        self.assertTrue(any(n.endswith(".gamma") for n in renamed))
        out = self.corpus.layout("gamma-beta")
        write_safetensors(os.path.join(out, "model.safetensors"), arrays(renamed))
        self.assertNotIn("ignores", self.assert_same_as_plain(out)["log"])

    def test_pytorch_model_bin_as_transformers_saved_it(self):
        # BertForMaskedLM from 2021: bert. prefix, the position_ids buffer, an unused head.
        weights = with_prefix(self.corpus.tensors("bert"), "bert.")
        weights.update(position_ids("bert.embeddings.position_ids"))
        weights["cls.predictions.bias"] = torch.zeros(12000)
        out = self.corpus.layout("bin")
        torch.save(weights, os.path.join(out, "pytorch_model.bin"))
        got = self.assert_same_as_plain(out)
        self.assertIn("weights from pytorch_model.bin", got["log"])
        self.assertIn("cls.predictions.bias (F32 [12000])", got["log"])

    def test_bin_views_share_storage_with_offsets_and_strides(self):
        tensors = self.corpus.tensors("bert")
        weights = OrderedDict(tensors)
        for layer in range(2):
            p = f"encoder.layer.{layer}.attention.self."
            # q, k, v as row slices of one storage (offsets), and the output projection as a
            # transposed view (strides), the way a fused or tied model saves them.
            fused = torch.cat([tensors[p + n + ".weight"] for n in ("query", "key", "value")])
            for i, n in enumerate(("query", "key", "value")):
                weights[p + n + ".weight"] = fused[64 * i:64 * (i + 1)]
            dense = f"encoder.layer.{layer}.attention.output.dense.weight"
            weights[dense] = tensors[dense].t().contiguous().t()
            self.assertFalse(weights[dense].is_contiguous())
        out = self.corpus.layout("bin-views")
        torch.save(weights, os.path.join(out, "pytorch_model.bin"))
        self.assert_same_as_plain(out)

    def test_sharded_bin_and_sharded_safetensors(self):
        weights = self.corpus.tensors("bert")
        for ext, layout in (("bin", "pytorch_model.bin.index.json (2 shards)"),
                            ("safetensors", "model.safetensors.index.json (2 shards)")):
            got = self.assert_same_as_plain(self.corpus.sharded(f"sharded-{ext}", weights, ext))
            self.assertIn(f"weights from {layout}", got["log"])

    def test_max_seq_length_is_the_window(self):
        out = self.corpus.layout("max-seq-length")
        shutil.copy(os.path.join(self.corpus.bases["bert"], "model.safetensors"), out)
        with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
            json.dump({"max_seq_length": 40, "do_lower_case": False}, f)
        got = self.serve(out)
        self.assertEqual(got["info"].max_positions, 40)
        self.assertEqual(got["info"].max_window_tokens, 38)
        self.assertEqual(got["tei_info"]["max_input_length"], 40)
        self.assertEqual(self.plain["bert"]["tei_info"]["max_input_length"], POSITIONS)
        self.assertIn("by sentence_bert_config.json max_seq_length", got["log"])
        # Short texts are untouched.
        for door in ("grpc", "openai", "tei"):
            self.assertEqual(got[door], self.plain["bert"][door], door)
        # A flag may lower it further and is refused above it, naming the flag and the range.
        lowered = self.serve(out, "--max-input-length=20")
        self.assertEqual(lowered["tei_info"]["max_input_length"], 20)
        self.assert_refused(out, "--max_input_length=41", "allowed 3..40",
                            "sentence_bert_config.json max_seq_length",
                            flags=("--max-input-length=41",))

    def test_max_seq_length_windows_truncation_and_chunks(self):
        out = self.corpus.layout("max-seq-chunks")
        shutil.copy(os.path.join(self.corpus.bases["bert"], "model.safetensors"), out)
        with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
            json.dump({"max_seq_length": 40}, f)
        with ServerRunner(BINARY, [f"--model=m={out}", f"--model=plain={self.corpus.bases['bert']}"]
                          ) as server:
            client = EmbeddingClient(server.grpc_address)
            words = self.single_token_words(client, 100)
            text = " ".join(words)
            # The truncated vector is the plain model's vector of the first 38 words.
            truncated = client.embed([text], model="m", strategy="LONG_TEXT_STRATEGY_TRUNCATE"
                                     ).documents[0]
            self.assertTrue(truncated.truncated)
            want = client.embed([" ".join(words[:38])], model="plain").documents[0]
            self.assertEqual(list(truncated.vector), list(want.vector))
            # Every chunk is at most 38 content tokens and is the plain model's vector of them.
            chunks = client.embed([text], model="m", strategy="LONG_TEXT_STRATEGY_CHUNK_ALL"
                                  ).documents[0].chunks
            self.assertGreaterEqual(len(chunks), 3)
            for chunk in chunks:
                span = chunk.token_span
                self.assertLessEqual(span.end - span.start, 38)
                want = client.embed([" ".join(words[span.start:span.end])], model="plain")
                np.testing.assert_allclose(chunk.vector, want.documents[0].vector, atol=1e-6)

    @staticmethod
    def single_token_words(client, n):
        with open(os.path.join(CheckpointLayoutsTest.corpus.bases["bert"], "tokenizer.json")) as f:
            vocab = json.load(f)["model"]["vocab"]
        words = [w for w in vocab if w.isalpha() and w.islower() and len(w) > 2][:4 * n]
        counts = client.tokenize(words, model="plain", add_special_tokens=False)
        single = [w for w, t in zip(words, counts.inputs) if len(t.tokens) == 1]
        assert len(single) >= n, len(single)
        return single[:n]

    # --- refused layouts --------------------------------------------------------------------

    def test_a_pickle_that_would_run_code_is_refused_naming_the_file(self):
        weights = OrderedDict(self.corpus.tensors("bert"))
        weights["evil"] = Evil(self.marker)
        out = self.corpus.layout("evil-bin")
        torch.save(weights, os.path.join(out, "pytorch_model.bin"))
        self.assert_refused(out, os.path.join(out, "pytorch_model.bin"), "global 'posix.system'")
        self.assertFalse(os.path.exists(self.marker))

    def test_a_view_claiming_more_elements_than_its_storage_is_refused(self):
        # One float viewed as 2^31 x 2^31 (zero strides): refused before anything is gathered.
        weights = OrderedDict(self.corpus.tensors("bert"))
        weights["huge"] = torch.zeros(1).expand(2 ** 31, 2 ** 31)
        out = self.corpus.layout("repeating-view")
        torch.save(weights, os.path.join(out, "pytorch_model.bin"))
        self.assert_refused(out, os.path.join(out, "pytorch_model.bin"),
                            "more elements than its storage")

    def test_the_legacy_torch_save_format_is_refused_naming_the_file(self):
        out = self.corpus.layout("legacy-bin")
        torch.save(self.corpus.tensors("bert"), os.path.join(out, "pytorch_model.bin"),
                   _use_new_zipfile_serialization=False)
        self.assert_refused(out, os.path.join(out, "pytorch_model.bin"), "legacy format")

    def test_a_weight_the_model_reads_must_be_floating_point(self):
        for kind in ("I32", "BOOL"):
            weights = arrays(self.corpus.tensors("bert"))
            name = "embeddings.word_embeddings.weight"
            weights[name] = weights[name].astype(NUMPY_DTYPES[kind])
            out = self.corpus.layout(f"integer-weight-{kind}")
            write_safetensors(os.path.join(out, "model.safetensors"), weights)
            self.assert_refused(out, f"tensor '{name}' has dtype {kind}",
                                "must be one of F32, F16, BF16, F64")

    def test_no_weights_names_every_layout_looked_for(self):
        out = self.corpus.layout("no-weights")
        self.assert_refused(out, "model.safetensors, model.safetensors.index.json, "
                                 "pytorch_model.bin, pytorch_model.bin.index.json")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
