"""A bge-m3-shaped test model and its torch reference, shared by the bge-m3 and TEI tests: the
XLM-R demo writer's checkpoint (CLS pooling, a 64-token window) plus bge-m3's two heads, written
by python3-torch's torch.save or as safetensors copies; the reference applies FlagEmbedding's
published formulas to torch.nn's encoder (tests/reference/compare_encoder.py)."""
import json
import os
import shutil
import struct
import subprocess
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
from compare_encoder import ReferenceBert, read_safetensors  # noqa: E402

# XLM-R's <s>, <pad>, </s>, <unk>: the ids FlagEmbedding drops from a sparse map.
DROPPED_IDS = (0, 1, 2, 3)


def write_base_model(writer, out, hidden=64, layers=2, heads=4):
    """The XLM-R demo model: 66 positions, so 64 content tokens a window."""
    subprocess.run([writer, f"--out={out}", "--architecture=xlm-roberta", f"--layers={layers}",
                    f"--hidden={hidden}", f"--heads={heads}", "--max_positions=66",
                    "--pooling=cls"], check=True, capture_output=True)


def write_safetensors(path, tensors):
    header, data = {}, b""
    for name, t in tensors.items():
        raw = t.detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    blob = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob + data)


def make_heads(hidden, seed=7):
    """bge-m3's sparse_linear (hidden -> 1) and colbert_linear (hidden -> hidden)."""
    torch.manual_seed(seed)
    sparse, colbert = nn.Linear(hidden, 1), nn.Linear(hidden, hidden)
    with torch.no_grad():
        sparse.bias.fill_(0.05)  # most tokens get a weight > 0, some do not
    return sparse, colbert


def add_heads(base, out, sparse, colbert, kind):
    """A copy of `base` with the heads as torch.save files ("pt") or safetensors copies."""
    shutil.copytree(base, out)
    for name, head in (("sparse_linear", sparse), ("colbert_linear", colbert)):
        if kind == "pt":
            torch.save(head.state_dict(), os.path.join(out, name + ".pt"))
        else:
            write_safetensors(os.path.join(out, name + ".safetensors"), dict(head.state_dict()))
    return out


class Reference:
    """FlagEmbedding's BGEM3 outputs on torch.nn's encoder, one window at a time."""

    def __init__(self, model_dir, sparse, colbert):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.config = json.load(f)
        self.weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.sparse, self.colbert = sparse, colbert
        self.nets = {}

    def states(self, ids, tau=1.0):
        if tau not in self.nets:
            self.nets[tau] = ReferenceBert(self.config, self.weights, tau)
        return self.nets[tau](ids)

    @torch.no_grad()
    def sequence(self, content, prefix, suffix, tau=1.0):
        """(dense CLS vector, per-row sparse weights, per-row ColBERT vectors) of one window."""
        h = self.states(prefix + content + suffix, tau)
        dense = torch.nn.functional.normalize(h[0], dim=-1)
        weights = torch.relu(self.sparse(h)).squeeze(-1)
        vectors = torch.nn.functional.normalize(self.colbert(h), dim=-1)
        return dense, weights, vectors

    @staticmethod
    def sparse_map(ids, weights):
        """Max weight per id, dropped ids and weights <= 0 left out."""
        out = {}
        for i, w in zip(ids, weights.tolist()):
            if i in DROPPED_IDS or w <= 0:
                continue
            out[i] = max(out.get(i, 0.0), w)
        return out
