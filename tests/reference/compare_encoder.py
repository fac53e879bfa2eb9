#!/usr/bin/python3
"""Checks the C++ encoder against a BERT built from PyTorch's own nn modules.

The reference reads model.safetensors with its own parser, builds nn.Embedding, nn.LayerNorm
and post-norm GELU nn.TransformerEncoderLayer blocks, and applies TempScale by scaling the
query projection by 1/tau (the same as dividing the attention logits by tau). Each sequence
runs alone and unpadded there, while the C++ side runs all of them in one padded batch with
mixed temperatures. Prints the maximum absolute difference per tau; fails above 1e-4.

usage: compare_encoder.py ENCODE_IDS_BINARY MODEL_DIR
"""
import json
import random
import struct
import subprocess
import sys

import numpy as np
import torch
from torch import nn

TOLERANCE = 1e-4
TEMPERATURES = (1.0, 0.8, 0.5)
SEQUENCES_PER_TAU = 8  # 24 sequences in all


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[base + begin:base + end], dtype="<f4").reshape(info["shape"])
        tensors[name] = torch.from_numpy(array.copy())
    return tensors


class ReferenceBert(nn.Module):
    def __init__(self, config, weights, tau):
        super().__init__()
        h, eps = config["hidden_size"], config.get("layer_norm_eps", 1e-12)
        self.word = nn.Embedding(config["vocab_size"], h)
        self.position = nn.Embedding(config["max_position_embeddings"], h)
        self.token_type = nn.Embedding(config.get("type_vocab_size", 2), h)
        self.norm = nn.LayerNorm(h, eps=eps)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(
                d_model=h, nhead=config["num_attention_heads"],
                dim_feedforward=config["intermediate_size"], dropout=0.0, activation="gelu",
                layer_norm_eps=eps, batch_first=True, norm_first=False)
            for _ in range(config["num_hidden_layers"])])
        self._load(weights, tau)
        self.eval()

    @torch.no_grad()
    def _load(self, w, tau):
        self.word.weight.copy_(w["embeddings.word_embeddings.weight"])
        self.position.weight.copy_(w["embeddings.position_embeddings.weight"])
        self.token_type.weight.copy_(w["embeddings.token_type_embeddings.weight"])
        self.norm.weight.copy_(w["embeddings.LayerNorm.weight"])
        self.norm.bias.copy_(w["embeddings.LayerNorm.bias"])
        for i, layer in enumerate(self.layers):
            p = f"encoder.layer.{i}."
            attn = layer.self_attn
            attn.in_proj_weight.copy_(torch.cat([
                w[p + "attention.self.query.weight"] / tau,
                w[p + "attention.self.key.weight"],
                w[p + "attention.self.value.weight"]]))
            attn.in_proj_bias.copy_(torch.cat([
                w[p + "attention.self.query.bias"] / tau,
                w[p + "attention.self.key.bias"],
                w[p + "attention.self.value.bias"]]))
            attn.out_proj.weight.copy_(w[p + "attention.output.dense.weight"])
            attn.out_proj.bias.copy_(w[p + "attention.output.dense.bias"])
            layer.norm1.weight.copy_(w[p + "attention.output.LayerNorm.weight"])
            layer.norm1.bias.copy_(w[p + "attention.output.LayerNorm.bias"])
            layer.linear1.weight.copy_(w[p + "intermediate.dense.weight"])
            layer.linear1.bias.copy_(w[p + "intermediate.dense.bias"])
            layer.linear2.weight.copy_(w[p + "output.dense.weight"])
            layer.linear2.bias.copy_(w[p + "output.dense.bias"])
            layer.norm2.weight.copy_(w[p + "output.LayerNorm.weight"])
            layer.norm2.bias.copy_(w[p + "output.LayerNorm.bias"])

    @torch.no_grad()
    def forward(self, ids):
        ids = torch.tensor([ids], dtype=torch.long)
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.norm(self.word(ids) + self.position(positions) + self.token_type(torch.zeros_like(ids)))
        for layer in self.layers:
            x = layer(x)
        return x[0]


def main():
    binary, model_dir = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    config = json.load(open(f"{model_dir}/config.json"))
    weights = read_safetensors(f"{model_dir}/model.safetensors")
    pooling = next(k for k, v in json.load(open(f"{model_dir}/1_Pooling/config.json")).items()
                   if k.startswith("pooling_mode_") and v)
    rng = random.Random(20241031)
    max_len = config["max_position_embeddings"]
    lengths = [1, 2, 3, 17, 64, 129, 256, 511, max_len]
    sequences, taus = [], []
    for tau in TEMPERATURES:
        for i in range(SEQUENCES_PER_TAU):
            k = TEMPERATURES.index(tau)
            n = lengths[(i + 3 * k) % len(lengths)] if i < 6 else rng.randint(1, max_len)
            sequences.append([2] + [rng.randrange(5, config["vocab_size"]) for _ in range(n - 1)])
            taus.append(tau)
    # Interleave temperatures so the batch really mixes them.
    order = list(range(len(sequences)))
    rng.shuffle(order)
    sequences = [sequences[i] for i in order]
    taus = [taus[i] for i in order]

    out = subprocess.run([binary, model_dir], input=json.dumps(
        {"sequences": sequences, "temperatures": taus, "pooling": "mean"}),
        capture_output=True, text=True, check=True)
    cpp = json.loads(out.stdout)
    dim = cpp["dim"]

    models = {tau: ReferenceBert(config, weights, tau) for tau in TEMPERATURES}
    worst = {tau: 0.0 for tau in TEMPERATURES}
    worst_hf = 0.0
    for i, (ids, tau) in enumerate(zip(sequences, taus)):
        ref_hidden = models[tau](ids).numpy().astype(np.float64)
        got_hidden = np.array(cpp["hidden_states"][i], dtype=np.float64).reshape(len(ids), dim)
        ref_pooled = ref_hidden.mean(axis=0)
        got_pooled = np.array(cpp["pooled"][i], dtype=np.float64)
        diff = max(np.abs(ref_hidden - got_hidden).max(), np.abs(ref_pooled - got_pooled).max())
        worst[tau] = max(worst[tau], diff)
        centered = ref_hidden - ref_hidden.mean(axis=0, keepdims=True)
        ref_hf = np.linalg.norm(centered) / np.linalg.norm(ref_hidden)
        worst_hf = max(worst_hf, abs(ref_hf - cpp["high_frequency_ratio"][i]))

    lengths_seen = sorted(len(s) for s in sequences)
    print(f"{len(sequences)} sequences, lengths {lengths_seen[0]}..{lengths_seen[-1]}, "
          f"checkpoint pooling {pooling}")
    for tau in TEMPERATURES:
        print(f"tau={tau}: max |C++ - torch.nn| over hidden states and pooled = {worst[tau]:.3e}")
    print(f"high-frequency ratio: max |C++ - numpy| = {worst_hf:.3e}")
    # A temperature that did nothing would pass the above trivially: insist it matters.
    same_ids = max(sequences, key=len)
    spread = np.abs(models[1.0](same_ids).numpy() - models[0.5](same_ids).numpy()).max()
    print(f"tau=1 vs tau=0.5 on one sequence differ by {spread:.3e} (must be large)")
    failures = [t for t in TEMPERATURES if not worst[t] <= TOLERANCE]
    if failures or not worst_hf <= TOLERANCE or spread < 1e-2:
        print("FAILED")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
