#!/usr/bin/python3
"""Checks the C++ encoder against networks built from PyTorch's own modules and functional ops.

One reference per architecture, written from the published model definitions, not from the C++:
- bert, roberta, xlm-roberta, camembert, distilbert and mpnet: nn.Embedding, nn.LayerNorm and
  post-norm GELU nn.TransformerEncoderLayer blocks, with each family's weight names; the
  RoBERTa kind's positions (MPNet's too) are Hugging Face's create_position_ids_from_input_ids
  (count the non-padding tokens from padding_idx + 1; a padding token sits at padding_idx);
  DistilBERT and MPNet have no token types; MPNet adds its relative position bias
  (modeling_mpnet.py's relative_position_bucket) to the logits as a float attention mask,
  divided by tau with them.
- nomic_bert: nn.Linear / nn.LayerNorm with a fused Wqkv, rotary positions on queries and keys
  (halves or interleaved pairs, dynamic NTK past max_trained_positions), a SwiGLU MLP
  fc2(fc11(x) * silu(fc12(x))), post-norm or pre-norm as config.json says.
- new (GTE): Alibaba-NLP/new-impl's NewModel (see ReferenceGte).
- bert with position_embedding_type alibi (JinaBERT v2): see ReferenceJinaBert.
TempScale is applied as the paper states it: softmax((QK^T/sqrt(d) + mask) / tau) (for the
nn.TransformerEncoderLayer blocks, by scaling the query projection by 1/tau, the same thing).
Each sequence runs alone and unpadded here, while the C++ side runs all of them in one padded
batch with mixed temperatures. Prints the maximum absolute difference per tau; fails above 1e-4.

usage: compare_encoder.py ENCODE_IDS_BINARY MODEL_DIR [--prenorm] [--interleaved] [--logn]
                          [--logn-clip1] [--head-by-head] [--torch-ops] [--device=D] [--dtype=T]
--prenorm and --interleaved rewrite a copy of a nomic_bert config.json, --logn and --logn-clip1
a copy of a GTE one, to check those layouts too. --head-by-head adds a sequence of 4,100 tokens (a long-window model), whose own rows reach
4,096, from which the encoder projects it one head at a time (kProjectHeadByHeadFromRows in
encoder_layers.cc) beside the batch's shorter sequences. --torch-ops, --device and --dtype go
to encode_ids: --torch-ops runs LibTorch's own ops, the code a GPU runs, on the CPU;
tests/gpu/build_and_check.sh passes --device=cuda.
"""
import json
import math
import random
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from attention_formula import tempscale_attention
from reference_decoder import DECODER_TYPES, ReferenceDecoder, is_causal
from reference_gemma3 import ReferenceGemma3
from reference_jina_v3 import ReferenceJinaV3
from reference_t5 import ReferenceT5

TOLERANCE = 1e-4
HEAD_BY_HEAD_TOKENS = 4100
TEMPERATURES = (1.0, 0.7, 0.5)


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


def copy_layer(layer, names, weights, prefix):
    """Copies checkpoint tensors `prefix + names[key] + ".weight"` (and ".bias") into the
    parameters of module `layer[key]`, for every key."""
    for key, name in names.items():
        for param_name, param in layer[key].named_parameters():
            param.copy_(weights[f"{prefix}{name}.{param_name}"])


# The BERT kind's config keys and weight names, per family, as transformers' modeling_bert.py
# (RoBERTa, XLM-R and CamemBERT keep them) and modeling_distilbert.py spell them.
BERT_NAMES = {
    "hidden": "hidden_size", "layers": "num_hidden_layers", "heads": "num_attention_heads",
    "inner": "intermediate_size", "act": "hidden_act", "layer": "encoder.layer.{}.",
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "out": "attention.output.dense", "norm1": "attention.output.LayerNorm",
    "in": "intermediate.dense", "ffn_out": "output.dense", "norm2": "output.LayerNorm"}
DISTILBERT_NAMES = {
    "hidden": "dim", "layers": "n_layers", "heads": "n_heads", "inner": "hidden_dim",
    "act": "activation", "layer": "transformer.layer.{}.", "q": "attention.q_lin",
    "k": "attention.k_lin", "v": "attention.v_lin", "out": "attention.out_lin",
    "norm1": "sa_layer_norm", "in": "ffn.lin1", "ffn_out": "ffn.lin2",
    "norm2": "output_layer_norm"}
MPNET_NAMES = dict(BERT_NAMES, q="attention.attn.q", k="attention.attn.k",
                   v="attention.attn.v", out="attention.attn.o", norm1="attention.LayerNorm")
# Positions counted from padding_idx + 1 (create_position_ids_from_input_ids).
ROBERTA_TYPES = ("xlm-roberta", "roberta", "camembert", "mpnet")


def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    """modeling_mpnet.py's MPNetEncoder.relative_position_bucket, for j - i."""
    n = -relative_position
    num_buckets //= 2
    ret = (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (torch.log(n.float() / max_exact) / math.log(
        max_distance / max_exact) * (num_buckets - max_exact)).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    return ret + torch.where(is_small, n, val_if_large)


class ReferenceBert(nn.Module):
    """BERT, RoBERTa, XLM-RoBERTa, CamemBERT and DistilBERT: the same post-norm blocks; the
    RoBERTa kind offsets its positions past the padding, DistilBERT has no token types and its
    LayerNorm eps is fixed at 1e-12."""

    def __init__(self, config, weights, tau):
        super().__init__()
        self.names = n = {"distilbert": DISTILBERT_NAMES, "mpnet": MPNET_NAMES}.get(
            config["model_type"], BERT_NAMES)
        self.tau = tau
        h, eps = config[n["hidden"]], config.get("layer_norm_eps", 1e-12)
        self.roberta = config["model_type"] in ROBERTA_TYPES
        self.pad = config.get("pad_token_id", 0)
        self.word = nn.Embedding(config["vocab_size"], h)
        self.position = nn.Embedding(config["max_position_embeddings"], h)
        self.token_type = (nn.Embedding(config.get("type_vocab_size", 2), h)
                           if "embeddings.token_type_embeddings.weight" in weights else None)
        self.norm = nn.LayerNorm(h, eps=eps)
        activation = {"gelu": "gelu", "relu": "relu"}[config.get(n["act"], "gelu")]
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(
                d_model=h, nhead=config[n["heads"]], dim_feedforward=config[n["inner"]],
                dropout=0.0, activation=activation, layer_norm_eps=eps, batch_first=True,
                norm_first=False)
            for _ in range(config[n["layers"]])])
        self._load(weights, tau)
        self.eval()

    @torch.no_grad()
    def _load(self, w, tau):
        n = self.names
        self.word.weight.copy_(w["embeddings.word_embeddings.weight"])
        self.position.weight.copy_(w["embeddings.position_embeddings.weight"])
        if self.token_type is not None:
            self.token_type.weight.copy_(w["embeddings.token_type_embeddings.weight"])
        self.norm.weight.copy_(w["embeddings.LayerNorm.weight"])
        self.norm.bias.copy_(w["embeddings.LayerNorm.bias"])
        # MPNet: one [buckets, heads] table for every layer, added to the scaled logits.
        self.relative_bias = w.get("encoder.relative_attention_bias.weight")
        for i, layer in enumerate(self.layers):
            p = n["layer"].format(i)
            for kind in ("weight", "bias"):
                attn = layer.self_attn
                getattr(attn, f"in_proj_{kind}").copy_(torch.cat([
                    w[f"{p}{n['q']}.{kind}"] / tau, w[f"{p}{n['k']}.{kind}"],
                    w[f"{p}{n['v']}.{kind}"]]))
                for module, key in ((attn.out_proj, "out"), (layer.norm1, "norm1"),
                                    (layer.linear1, "in"), (layer.linear2, "ffn_out"),
                                    (layer.norm2, "norm2")):
                    getattr(module, kind).copy_(w[f"{p}{n[key]}.{kind}"])

    @torch.no_grad()
    def forward(self, ids, types=None, attended=None):
        """`types`: a pair's token type ids (BERT's second segment is 1); None: all 0.
        `attended`: how many leading tokens are keys (transformers' attention_mask of ones then
        zeros: every row, a masked one's included, attends only those); None: all."""
        ids = torch.as_tensor(ids, dtype=torch.long)[None]  # a traced input stays an input
        types = (torch.zeros_like(ids) if types is None
                 else torch.as_tensor(types, dtype=torch.long)[None])
        if self.roberta:
            mask = (ids != self.pad).long()
            positions = torch.cumsum(mask, dim=1) * mask + self.pad
        else:
            positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.word(ids) + self.position(positions)
        if self.token_type is not None:
            x = x + self.token_type(types)
        x = self.norm(x)
        bias = None
        if self.relative_bias is not None:  # compute_position_bias, then / tau with the logit
            positions = torch.arange(ids.shape[1])
            buckets = relative_position_bucket(positions[None, :] - positions[:, None])
            bias = self.relative_bias[buckets].permute(2, 0, 1) / self.tau  # [heads, L, L]
        if attended is not None:  # the extended attention mask: -inf on the masked keys
            hidden = torch.zeros(ids.shape[1], ids.shape[1])
            hidden[:, attended:] = float("-inf")
            bias = hidden if bias is None else bias + hidden
        for layer in self.layers:
            x = layer(x, src_mask=bias)
        return x[0]


def rotate_half(x, interleaved):
    if not interleaved:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class ReferenceNomicBert(nn.Module):
    def __init__(self, config, weights, tau):
        super().__init__()
        h = config["n_embd"]
        self.heads = config["n_head"]
        self.head_dim = h // self.heads
        self.tau = tau
        self.prenorm = config.get("prenorm", False)
        eps = config.get("layer_norm_epsilon", 1e-12)
        inner = config.get("n_inner") or 4 * h
        self.rotary_dim = int(self.head_dim * config.get("rotary_emb_fraction", 1.0))
        self.base = config.get("rotary_emb_base", 10000)
        self.interleaved = config.get("rotary_emb_interleaved", False)
        self.scaling = config.get("rotary_scaling_factor")
        self.trained = config.get("max_trained_positions", 2048)
        self.word = nn.Embedding(config["vocab_size"], h)
        self.token_type = nn.Embedding(config.get("type_vocab_size", 2), h)
        self.emb_ln = nn.LayerNorm(h, eps=eps)
        qkv_bias = config.get("qkv_proj_bias", True)
        fc1_bias, fc2_bias = config.get("mlp_fc1_bias", True), config.get("mlp_fc2_bias", True)
        self.layers = nn.ModuleList()
        for _ in range(config["n_layer"]):
            self.layers.append(nn.ModuleDict({
                "Wqkv": nn.Linear(h, 3 * h, bias=qkv_bias),
                "out_proj": nn.Linear(h, h, bias=qkv_bias),
                "fc11": nn.Linear(h, inner, bias=fc1_bias),
                "fc12": nn.Linear(h, inner, bias=fc1_bias),
                "fc2": nn.Linear(inner, h, bias=fc2_bias),
                "norm1": nn.LayerNorm(h, eps=eps),
                "norm2": nn.LayerNorm(h, eps=eps)}))
        with torch.no_grad():
            self.word.weight.copy_(weights["embeddings.word_embeddings.weight"])
            self.token_type.weight.copy_(weights["embeddings.token_type_embeddings.weight"])
            self.emb_ln.weight.copy_(weights["emb_ln.weight"])
            self.emb_ln.bias.copy_(weights["emb_ln.bias"])
            for i, layer in enumerate(self.layers):
                p = f"encoder.layers.{i}."
                names = {"Wqkv": "attn.Wqkv", "out_proj": "attn.out_proj", "fc11": "mlp.fc11",
                         "fc12": "mlp.fc12", "fc2": "mlp.fc2", "norm1": "norm1", "norm2": "norm2"}
                copy_layer(layer, names, weights, p)
        self.eval()

    def angles(self, length):
        base = self.base
        if self.scaling and length > self.trained:  # dynamic NTK
            base = base * ((self.scaling * length / self.trained) - (self.scaling - 1)) ** (
                self.rotary_dim / (self.rotary_dim - 2))
        inv_freq = 1.0 / (base ** (torch.arange(0, self.rotary_dim, 2, dtype=torch.float32) /
                                   self.rotary_dim))
        freqs = torch.outer(torch.arange(length, dtype=torch.float32), inv_freq)
        if self.interleaved:
            return freqs.cos().repeat_interleave(2, -1), freqs.sin().repeat_interleave(2, -1)
        return freqs.cos().repeat(1, 2), freqs.sin().repeat(1, 2)

    def rotate(self, x, cos, sin):  # x [heads, L, d]
        r = self.rotary_dim
        rotated = x[..., :r] * cos + rotate_half(x[..., :r], self.interleaved) * sin
        return torch.cat([rotated, x[..., r:]], dim=-1)

    def attention(self, layer, x, cos, sin):
        length = x.shape[0]
        q, k, v = layer["Wqkv"](x).view(length, 3, self.heads, self.head_dim).permute(1, 2, 0, 3)
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        context = tempscale_attention(q, k, v, self.tau)  # [heads, L, d]
        return layer["out_proj"](context.transpose(0, 1).reshape(length, -1))

    @staticmethod
    def mlp(layer, x):
        return layer["fc2"](layer["fc11"](x) * F.silu(layer["fc12"](x)))

    @torch.no_grad()
    def forward(self, ids):
        ids = torch.as_tensor(ids, dtype=torch.long)  # a traced input stays an input
        x = self.emb_ln(self.word(ids) + self.token_type(torch.zeros_like(ids)))
        cos, sin = self.angles(len(ids))
        for layer in self.layers:
            if self.prenorm:
                x = x + self.attention(layer, layer["norm1"](x), cos, sin)
                x = x + self.mlp(layer, layer["norm2"](x))
            else:
                x = layer["norm1"](x + self.attention(layer, x, cos, sin))
                x = layer["norm2"](x + self.mlp(layer, x))
        return x


def build_batch(config, max_len, rng):
    """Lengths 1..max_len (the long ones capped at 3,000 to keep the reference quick), every
    temperature at several lengths, shuffled so the batch really mixes them."""
    fixed = [1, 2, 3, 17, 64, 129, 256, 511, 1024, 2048, 2049, 3000]
    lengths = [n for n in fixed if n <= max_len]
    vocab, pad = config["vocab_size"], config.get("pad_token_id", 0)
    sequences, taus = [], []
    for k, tau in enumerate(TEMPERATURES):
        for i in range(len(lengths) + 2):
            n = lengths[(i + 3 * k) % len(lengths)] if i < len(lengths) else rng.randint(1, min(max_len, 700))
            ids = [0] + [rng.randrange(5, vocab) for _ in range(n - 1)]
            sequences.append(ids[:n])
            taus.append(tau)
    # A padding id inside the text: XLM-R gives it the padding position and does not count it.
    sequences.append([0] + [rng.randrange(5, vocab) for _ in range(20)] + [pad] +
                     [rng.randrange(5, vocab) for _ in range(20)])
    taus.append(0.7)
    order = list(range(len(sequences)))
    rng.shuffle(order)
    return [sequences[i] for i in order], [taus[i] for i in order]


class ReferenceNomicBertMoe(ReferenceNomicBert):
    """nomic-embed-text-v2-moe as nomic's contrastors code (and TEI's nomic.rs) computes it:
    NomicBert v1's attention and post-norm blocks, a plain MLP fc2(gelu(fc1(x))), and in layers
    i with i % moe_every_n_layers == 1 a mixture of experts instead: softmax(router(x)) in fp32,
    its top moe_top_k experts e, each w2_e^T gelu(w1_e x) weighted by its probability, summed,
    plus the experts' shared bias."""

    def __init__(self, config, weights, tau):
        nn.Module.__init__(self)
        h = config["n_embd"]
        self.heads, self.head_dim, self.tau = config["n_head"], h // config["n_head"], tau
        self.prenorm = config.get("prenorm", False)
        eps = config.get("layer_norm_epsilon", 1e-12)
        inner = config["n_inner"]
        self.rotary_dim = int(self.head_dim * config.get("rotary_emb_fraction", 1.0))
        self.base = config.get("rotary_emb_base", 10000)
        self.interleaved = config.get("rotary_emb_interleaved", False)
        self.scaling = config.get("rotary_scaling_factor")
        self.trained = config.get("max_trained_positions", 2048)
        self.experts, self.top_k = config["num_experts"], config["moe_top_k"]
        every = config["moe_every_n_layers"]
        self.word = nn.Embedding(config["vocab_size"], h)
        self.token_type = nn.Embedding(config.get("type_vocab_size", 2), h)
        self.emb_ln = nn.LayerNorm(h, eps=eps)
        self.layers = nn.ModuleList()
        self.moe = {}
        with torch.no_grad():
            self.word.weight.copy_(weights["embeddings.word_embeddings.weight"])
            self.token_type.weight.copy_(weights["embeddings.token_type_embeddings.weight"])
            self.emb_ln.weight.copy_(weights["emb_ln.weight"])
            self.emb_ln.bias.copy_(weights["emb_ln.bias"])
            for i in range(config["n_layer"]):
                p = f"encoder.layers.{i}."
                layer = {"Wqkv": nn.Linear(h, 3 * h), "out_proj": nn.Linear(h, h),
                         "norm1": nn.LayerNorm(h, eps=eps), "norm2": nn.LayerNorm(h, eps=eps)}
                names = {"Wqkv": "attn.Wqkv", "out_proj": "attn.out_proj", "norm1": "norm1",
                         "norm2": "norm2"}
                if i % every == 1:
                    self.moe[i] = {
                        "router": weights[p + "mlp.router.layer.weight"],
                        "w1": weights[p + "mlp.experts.mlp.w1"].view(self.experts, inner, h),
                        "w2": weights[p + "mlp.experts.mlp.w2"].view(self.experts, inner, h),
                        "bias": weights[p + "mlp.experts.bias"]}
                else:
                    layer.update({"fc1": nn.Linear(h, inner), "fc2": nn.Linear(inner, h)})
                    names.update({"fc1": "mlp.fc1", "fc2": "mlp.fc2"})
                layer = nn.ModuleDict(layer)
                copy_layer(layer, names, weights, p)
                layer.index = i
                self.layers.append(layer)
        self.eval()

    def mlp(self, layer, x):
        if layer.index not in self.moe:
            return layer["fc2"](F.gelu(layer["fc1"](x)))
        moe = self.moe[layer.index]
        probabilities = torch.softmax((x.float() @ moe["router"].T), dim=-1)
        weights, chosen = probabilities.topk(self.top_k, dim=-1)
        out = torch.zeros_like(x)
        for row in range(x.shape[0]):
            for weight, e in zip(weights[row], chosen[row]):
                out[row] += weight * (F.gelu(x[row] @ moe["w1"][e].T) @ moe["w2"][e])
        return out + moe["bias"]


class ReferenceGte(nn.Module):
    """GTE "new" as Alibaba-NLP/new-impl's NewModel computes it: word (+ token type) embeddings
    and LayerNorm; per layer, post-norm attention with a packed qkv_proj, rotary (rotate-half,
    fixed NTK: base theta * f, inverse frequencies divided by f^(2/d)), queries scaled by
    log(n) / log(max_position_embeddings) (at least 1 with clip1) when logn_attention_scale is
    set; then post-norm down_proj(act(gate) * up) over up_gate_proj = [up; gate]."""

    def __init__(self, config, weights, tau):
        super().__init__()
        h = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.head_dim = h // self.heads
        self.tau = tau
        self.inner = config["intermediate_size"]
        self.max_positions = config["max_position_embeddings"]
        self.logn = config.get("logn_attention_scale", False)
        self.clip1 = config.get("logn_attention_clip1", False)
        scaling = config.get("rope_scaling") or {}
        self.factor = scaling.get("factor", 1.0)
        self.theta = config.get("rope_theta", 10000.0)
        eps = config.get("layer_norm_eps", 1e-12)
        types = config.get("type_vocab_size", 0)
        self.word = nn.Embedding(config["vocab_size"], h)
        self.token_type = nn.Embedding(types, h) if types > 0 else None
        self.norm = nn.LayerNorm(h, eps=eps)
        self.layers = nn.ModuleList()
        for _ in range(config["num_hidden_layers"]):
            self.layers.append(nn.ModuleDict({
                "qkv_proj": nn.Linear(h, 3 * h), "o_proj": nn.Linear(h, h),
                "up_gate_proj": nn.Linear(h, 2 * self.inner, bias=False),
                "down_proj": nn.Linear(self.inner, h),
                "attn_ln": nn.LayerNorm(h, eps=eps), "mlp_ln": nn.LayerNorm(h, eps=eps)}))
        with torch.no_grad():
            self.word.weight.copy_(weights["embeddings.word_embeddings.weight"])
            if self.token_type is not None:
                self.token_type.weight.copy_(weights["embeddings.token_type_embeddings.weight"])
            self.norm.weight.copy_(weights["embeddings.LayerNorm.weight"])
            self.norm.bias.copy_(weights["embeddings.LayerNorm.bias"])
            for i, layer in enumerate(self.layers):
                names = {"qkv_proj": "attention.qkv_proj", "o_proj": "attention.o_proj",
                         "up_gate_proj": "mlp.up_gate_proj", "down_proj": "mlp.down_proj",
                         "attn_ln": "attn_ln", "mlp_ln": "mlp_ln"}
                copy_layer(layer, names, weights, f"encoder.layer.{i}.")
        self.eval()

    def angles(self, length):
        d = self.head_dim
        base = self.theta * (self.factor if self.factor > 1 else 1)
        inv_freq = 1.0 / (base ** (torch.arange(0, d, 2).float() / d))
        if self.factor > 1:
            inv_freq = inv_freq / self.factor ** (2 / d)
        freqs = torch.einsum("i,j->ij", torch.arange(length, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def attention(self, layer, x, cos, sin):
        length = x.shape[0]
        q, k, v = [t.view(length, self.heads, self.head_dim).transpose(0, 1)
                   for t in layer["qkv_proj"](x).split(x.shape[-1], dim=-1)]
        q = q * cos + rotate_half(q, False) * sin
        k = k * cos + rotate_half(k, False) * sin
        if self.logn:
            scale = torch.tensor(float(length)).log() / torch.tensor(
                float(self.max_positions)).log()
            if self.clip1:
                scale = scale.clip(1)
            q = q * scale
        context = tempscale_attention(q, k, v, self.tau)
        return layer["o_proj"](context.transpose(0, 1).reshape(length, -1))

    def mlp(self, layer, x):
        up, gate = torch.split(layer["up_gate_proj"](x), self.inner, dim=-1)
        return layer["down_proj"](F.gelu(gate) * up)

    @torch.no_grad()
    def forward(self, ids, types=None):
        ids = torch.as_tensor(ids, dtype=torch.long)  # a traced input stays an input
        x = self.word(ids)
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(ids) if types is None
                                    else torch.as_tensor(types, dtype=torch.long))
        x = self.norm(x)
        cos, sin = self.angles(len(ids))
        for layer in self.layers:
            x = layer["attn_ln"](x + self.attention(layer, x, cos, sin))
            x = layer["mlp_ln"](x + self.mlp(layer, x))
        return x


def alibi_slopes(n):
    """ALiBi's slopes as its authors' code computes them (ofirpress/attention_with_linear_biases)."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][:n - closest]


class ReferenceJinaBert(nn.Module):
    """JinaBERT v2 as jinaai/jina-bert-implementation computes it: word + token type embeddings
    and LayerNorm (no position table); per layer, BERT's self-attention with the symmetric
    ALiBi bias -m_h |i - j| added to the scaled logits, output dense + LayerNorm(x + .), then
    the GLU feed-forward: layernorm(x + wo(act(gated) * non_gated)) over gated_layers =
    [gated; non_gated]."""

    def __init__(self, config, weights, tau):
        super().__init__()
        h = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.head_dim = h // self.heads
        self.tau = tau
        self.inner = config["intermediate_size"]
        self.act = nn.GELU() if config.get("feed_forward_type", "geglu") == "geglu" else nn.ReLU()
        eps = config.get("layer_norm_eps", 1e-12)
        self.slopes = torch.tensor(alibi_slopes(self.heads), dtype=torch.float32)
        self.word = nn.Embedding(config["vocab_size"], h)
        self.token_type = nn.Embedding(config.get("type_vocab_size", 2), h)
        self.norm = nn.LayerNorm(h, eps=eps)
        self.layers = nn.ModuleList()
        for _ in range(config["num_hidden_layers"]):
            self.layers.append(nn.ModuleDict({
                "query": nn.Linear(h, h), "key": nn.Linear(h, h), "value": nn.Linear(h, h),
                "dense": nn.Linear(h, h), "attention_norm": nn.LayerNorm(h, eps=eps),
                "gated_layers": nn.Linear(h, 2 * self.inner, bias=False),
                "wo": nn.Linear(self.inner, h), "layernorm": nn.LayerNorm(h, eps=eps)}))
        with torch.no_grad():
            self.word.weight.copy_(weights["embeddings.word_embeddings.weight"])
            self.token_type.weight.copy_(weights["embeddings.token_type_embeddings.weight"])
            self.norm.weight.copy_(weights["embeddings.LayerNorm.weight"])
            self.norm.bias.copy_(weights["embeddings.LayerNorm.bias"])
            for i, layer in enumerate(self.layers):
                names = {"query": "attention.self.query", "key": "attention.self.key",
                         "value": "attention.self.value", "dense": "attention.output.dense",
                         "attention_norm": "attention.output.LayerNorm",
                         "gated_layers": "mlp.gated_layers", "wo": "mlp.wo",
                         "layernorm": "mlp.layernorm"}
                copy_layer(layer, names, weights, f"encoder.layer.{i}.")
        self.eval()

    @torch.no_grad()
    def forward(self, ids):
        ids = torch.as_tensor(ids, dtype=torch.long)  # a traced input stays an input
        length = len(ids)
        x = self.norm(self.word(ids) + self.token_type(torch.zeros_like(ids)))
        # Positions from the ids themselves, so an ONNX export computes the [heads, L, L] bias
        # instead of storing it (tests/bench/family_onnx_bench.py).
        positions = torch.cumsum(torch.ones_like(ids), 0) - 1
        distance = (positions[:, None] - positions[None, :]).abs().float()
        alibi = -self.slopes[:, None, None] * distance  # [heads, L, L]
        for layer in self.layers:
            q, k, v = [layer[n](x).view(length, self.heads, self.head_dim).transpose(0, 1)
                       for n in ("query", "key", "value")]
            context = tempscale_attention(q, k, v, self.tau, alibi)
            x = layer["attention_norm"](x + layer["dense"](
                context.transpose(0, 1).reshape(length, -1)))
            gated, non_gated = torch.split(layer["gated_layers"](x), self.inner, dim=-1)
            x = layer["layernorm"](x + layer["wo"](self.act(gated) * non_gated))
        return x


class LayerNormWithoutBias(nn.Module):
    """nn.LayerNorm(h, bias=False) of newer PyTorch; Debian's 1.13 lacks the argument."""

    def __init__(self, h, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, None, self.eps)


class ReferenceModernBert(nn.Module):
    """ModernBERT as transformers' modeling_modernbert.py computes it: token embeddings and a
    LayerNorm without bias; per layer, pre-norm (no attention norm in layer 0) attention with
    a fused Wqkv, rotary (rotate-half) at global_rope_theta on global layers and
    local_rope_theta on the others, which see only keys |i - j| <= local_attention // 2; then
    Wo(gelu(input) * gate) over Wi = [input; gate]; a final LayerNorm. Reads either config
    spelling: global_attn_every_n_layers and *_rope_theta, or layer_types and rope_parameters."""

    def __init__(self, config, weights, tau):
        super().__init__()
        h = config["hidden_size"]
        layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.head_dim = h // self.heads
        self.tau = tau
        self.local_tau = tau  # the sliding layers' (AUTO gives them their own)
        self.half_window = config.get("local_attention", 128) // 2
        eps = config.get("norm_eps", 1e-5)
        every = config.get("global_attn_every_n_layers", 3)
        self.layer_types = config.get("layer_types") or [
            "sliding_attention" if i % every else "full_attention" for i in range(layers)]
        rope = config.get("rope_parameters") or {
            "full_attention": {"rope_theta": config.get("global_rope_theta", 160000.0)},
            "sliding_attention": {"rope_theta": config.get("local_rope_theta", 10000.0)}}
        self.theta = {kind: rope[kind]["rope_theta"] for kind in rope}
        inner = config["intermediate_size"]
        norm = lambda: LayerNormWithoutBias(h, eps)
        self.tok_embeddings = nn.Embedding(config["vocab_size"], h)
        self.embeddings_norm = norm()
        self.layers = nn.ModuleList()
        for i in range(layers):
            self.layers.append(nn.ModuleDict({
                "attn_norm": nn.Identity() if i == 0 else norm(),
                "Wqkv": nn.Linear(h, 3 * h, bias=False), "attn_Wo": nn.Linear(h, h, bias=False),
                "mlp_norm": norm(), "Wi": nn.Linear(h, 2 * inner, bias=False),
                "mlp_Wo": nn.Linear(inner, h, bias=False)}))
        self.final_norm = norm()
        with torch.no_grad():
            self.tok_embeddings.weight.copy_(weights["embeddings.tok_embeddings.weight"])
            self.embeddings_norm.weight.copy_(weights["embeddings.norm.weight"])
            self.final_norm.weight.copy_(weights["final_norm.weight"])
            for i, layer in enumerate(self.layers):
                names = {"Wqkv": "attn.Wqkv", "attn_Wo": "attn.Wo", "mlp_norm": "mlp_norm",
                         "Wi": "mlp.Wi", "mlp_Wo": "mlp.Wo"}
                if i > 0:
                    names["attn_norm"] = "attn_norm"
                copy_layer(layer, names, weights, f"layers.{i}.")
        self.eval()

    def rotary(self, length, theta):
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.int64).float() /
                                    self.head_dim))
        freqs = torch.outer(torch.arange(length).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    @torch.no_grad()
    def forward(self, ids, attended=None):
        """`attended`: as ReferenceBert's (leading keys every row attends); None: all."""
        ids = torch.as_tensor(ids, dtype=torch.long)  # a traced input stays an input
        length = len(ids)
        x = self.embeddings_norm(self.tok_embeddings(ids))
        positions = torch.arange(length)
        outside = (positions[:, None] - positions[None, :]).abs() > self.half_window
        band = torch.zeros(length, length).masked_fill(outside, float("-inf"))
        keys = None
        if attended is not None:  # transformers' padding mask: -inf on the hidden keys
            keys = torch.zeros(length, length)
            keys[:, attended:] = float("-inf")
            band = band + keys
        for layer, kind in zip(self.layers, self.layer_types):
            cos, sin = self.rotary(length, self.theta[kind])
            h = layer["attn_norm"](x)
            q, k, v = layer["Wqkv"](h).view(length, 3, self.heads, self.head_dim).permute(1, 2, 0, 3)
            q = q * cos + rotate_half(q, False) * sin
            k = k * cos + rotate_half(k, False) * sin
            if kind == "sliding_attention":
                context = tempscale_attention(q, k, v, self.local_tau, band)
            else:
                context = tempscale_attention(q, k, v, self.tau, keys)
            x = x + layer["attn_Wo"](context.transpose(0, 1).reshape(length, -1))
            gate_input, gate = layer["Wi"](layer["mlp_norm"](x)).chunk(2, dim=-1)
            x = x + layer["mlp_Wo"](F.gelu(gate_input) * gate)
        return self.final_norm(x)


def v5_spelling(config):
    """The same ModernBERT config in transformers v5's keys: layer_types and rope_parameters."""
    every = config.pop("global_attn_every_n_layers", 3)
    config["layer_types"] = ["sliding_attention" if i % every else "full_attention"
                             for i in range(config["num_hidden_layers"])]
    config["rope_parameters"] = {
        "full_attention": {"rope_type": "default",
                           "rope_theta": config.pop("global_rope_theta", 160000.0)},
        "sliding_attention": {"rope_type": "default",
                              "rope_theta": config.pop("local_rope_theta", 10000.0)}}
    return config


REFERENCES = {"bert": ReferenceBert, "xlm-roberta": ReferenceBert, "roberta": ReferenceBert,
              "camembert": ReferenceBert, "distilbert": ReferenceBert, "mpnet": ReferenceBert,
              "nomic_bert": ReferenceNomicBert, "new": ReferenceGte,
              "jina_bert": ReferenceJinaBert, "modernbert": ReferenceModernBert}


def reference_class(config):
    """The reference network for a config: its model_type, JinaBERT v2 (bert with ALiBi)
    apart."""
    if config.get("position_embedding_type") == "alibi":
        return ReferenceJinaBert
    if config["model_type"] in DECODER_TYPES:
        return ReferenceDecoder
    if config["model_type"] == "gemma3_text":
        return ReferenceGemma3
    if config["model_type"] == "t5":
        return ReferenceT5
    if config["model_type"] == "nomic_bert" and config.get("activation_function") == "gelu":
        return ReferenceNomicBertMoe
    if config.get("position_embedding_type") == "rotary":  # Jina's XLM-R (jina-embeddings-v3)
        return ReferenceJinaV3
    return REFERENCES[config["model_type"]]


# Config rewrites that check a family's optional layouts on a copy of its demo model.
VARIANTS = {"--prenorm": {"prenorm": True}, "--interleaved": {"rotary_emb_interleaved": True},
            "--logn": {"logn_attention_scale": True}, "--logn-clip1": {
                "logn_attention_scale": True, "logn_attention_clip1": True},
            "--bidirectional": {"is_causal": False}}


# --local-tau: banded layers at this tau whatever the sequence's, as AUTO can ask.
LOCAL_TAU = 0.9
RUN_FLAGS = {"--head-by-head", "--local-tau"}  # flags that leave the config alone


def sliding_window_check(binary, model_dir, config, weights, ids):
    """The same weights read as Mistral with a sliding_window of 64 (keys i - 64 < j <= i):
    one 700-token sequence against the reference at tau 0.7."""
    ids = ids[:700]
    scratch = tempfile.mkdtemp(prefix="compare-window-")
    shutil.copytree(model_dir, scratch, dirs_exist_ok=True)
    windowed = dict(config, model_type="mistral", sliding_window=64)
    windowed.pop("attention_bias", None)  # Mistral has none: its reference and ours skip them
    json.dump(windowed, open(f"{scratch}/config.json", "w"))
    out = subprocess.run([*binary, scratch], input=json.dumps(
        {"sequences": [ids], "temperatures": [0.7], "pooling": "last_token"}),
        capture_output=True, text=True, check=True)
    got = np.array(json.loads(out.stdout)["hidden_states"][0]).reshape(len(ids), -1)
    want = ReferenceDecoder(windowed, weights, 0.7)(ids).numpy()
    unwindowed = ReferenceDecoder(dict(windowed, sliding_window=None), weights, 0.7)(ids).numpy()
    diff, effect = np.abs(got - want).max(), np.abs(want - unwindowed).max()
    print(f"mistral sliding_window 64: max |C++ - torch| = {diff:.3e} (the window moves the "
          f"states by {effect:.3e})")
    return diff <= TOLERANCE and effect > 1e-2


def dense_modules(model_dir):
    """sentence-transformers' Dense modules in modules.json's order, as functions of a pooled
    vector: activation(W x + b) (Identity and Tanh here)."""
    try:
        modules = json.load(open(f"{model_dir}/modules.json"))
    except FileNotFoundError:
        return []
    layers = []
    for module in modules:
        if not module["type"].endswith(".Dense"):
            continue
        folder = f"{model_dir}/{module['path']}"
        config = json.load(open(f"{folder}/config.json"))
        w = read_safetensors(f"{folder}/model.safetensors")
        act = {"torch.nn.modules.linear.Identity": lambda x: x,
               "torch.nn.modules.activation.Tanh": np.tanh}[config["activation_function"]]
        weight = w["linear.weight"].double().numpy()
        bias = w["linear.bias"].double().numpy() if config.get("bias", True) else 0.0
        layers.append(lambda x, weight=weight, bias=bias, act=act: act(weight @ x + bias))
    return layers


def band_check(binary, model_dir, config, rng):
    """Gemma3's sliding layers, pinned without any reference: with one layer, which slides, a
    token changed at position p moves the states at p -/+ radius and none further out, where
    the radius is sliding_window // 2 for a bidirectional model (Gemma3TextConfig halves the
    window, its mask keeps |i - j| < window // 2 + 1); for the fixture's window and an odd one.
    With the checkpoint's own layers (full ones among them), states past every band move too."""
    scratch = tempfile.mkdtemp(prefix="compare-band-")
    shutil.copytree(model_dir, scratch, dirs_exist_ok=True)
    vocab = config["vocab_size"]

    def moved(cfg, length, p):
        ids = [2] + [rng.randrange(5, vocab) for _ in range(length - 1)]
        other = list(ids)
        other[p] = 5 + (ids[p] - 5 + 1) % (vocab - 5)
        json.dump(cfg, open(f"{scratch}/config.json", "w"))
        out = subprocess.run([*binary, scratch], input=json.dumps(
            {"sequences": [ids, other], "temperatures": [0.7, 0.7], "pooling": "mean"}),
            capture_output=True, text=True, check=True)
        a, b = (np.array(h).reshape(length, -1) for h in json.loads(out.stdout)["hidden_states"])
        return np.abs(a - b).max(axis=1)

    ok = True
    for window in sorted({config["sliding_window"], 17}):
        radius = window // 2 if config.get("use_bidirectional_attention") else window - 1
        one = dict(config, sliding_window=window, num_hidden_layers=1,
                   layer_types=["sliding_attention"])
        p = radius + 3
        length = p + radius + 4
        d = moved(one, length, p)
        at, past = min(d[p - radius], d[p + radius]), max(d[p - radius - 1], d[p + radius + 1])
        print(f"sliding_window {window}, one sliding layer: a token moves the states {radius} "
              f"away by {at:.3e}, {radius + 1} away by {past:.3e}")
        ok &= at > 1e-4 and past <= 1e-6
    layers, window = config["num_hidden_layers"], config["sliding_window"]
    reach = layers * (window // 2)
    length = min(config["max_position_embeddings"], reach + 40)
    full = moved(config, length, 1)
    print(f"the checkpoint's layers: a token moves states past {layers} bands by "
          f"{full[1 + reach + 1:].max():.3e}")
    return ok and full[1 + reach + 1:].max() > 1e-3


def decoder_checks(binary, model_dir, config, weights, sequences, rng):
    """What only a decoder has: causality in the C++ encoder (changing the tokens after
    position i leaves positions <= i unchanged), Mistral's sliding window (on weights without
    q/k norms) and, with a q/k-norm, where tau goes (folded into the queries before the norm it
    cancels out: the tau = 1 vector back; after it, not)."""
    ok = True
    if is_causal(config):
        prefix = max(sequences, key=len)[:300]
        other = prefix[:150] + [rng.randrange(5, config["vocab_size"]) for _ in range(150)]
        out = subprocess.run([*binary, model_dir], input=json.dumps(
            {"sequences": [prefix, other], "temperatures": [0.7, 0.7], "pooling": "mean"}),
            capture_output=True, text=True, check=True)
        hidden = [np.array(h).reshape(300, -1) for h in json.loads(out.stdout)["hidden_states"]]
        before = np.abs(hidden[0][:150] - hidden[1][:150]).max()
        after = np.abs(hidden[0][150:] - hidden[1][150:]).max()
        print(f"causality: positions < 150 moved by {before:.3e} when tokens 150.. changed "
              f"(those moved by {after:.3e})")
        ok &= before <= 1e-6 and after > 1e-2
    if is_causal(config) and "layers.0.self_attn.q_norm.weight" not in weights:
        ok &= sliding_window_check(binary, model_dir, config, weights, max(sequences, key=len))
    if "layers.0.self_attn.q_norm.weight" in weights:
        ids = max(sequences, key=len)[:500]
        plain = ReferenceDecoder(config, weights, 1.0)(ids).numpy()
        after = np.abs(ReferenceDecoder(config, weights, 0.5)(ids).numpy() - plain).max()
        before = np.abs(ReferenceDecoder(config, weights, 0.5, tau_before_norm=True)(ids).numpy()
                        - plain).max()
        print(f"tau=0.5 placement: after the q-norm moves the states by {after:.3e}, folded in "
              f"before it by {before:.3e}")
        ok &= before < 1e-3 and after > 100 * before
    return ok


def main():
    model_dir = sys.argv[2]
    # Passed on to encode_ids: --torch-ops (the GPU's code path), --device=, --dtype=.
    passed = [f for f in sys.argv[3:] if f == "--torch-ops" or f.startswith(("--device=", "--dtype="))]
    binary = [sys.argv[1], *passed]
    flags = set(sys.argv[3:]) - set(passed)
    torch.manual_seed(0)
    if flags - RUN_FLAGS:
        scratch = tempfile.mkdtemp(prefix="compare-encoder-")
        shutil.copytree(model_dir, scratch, dirs_exist_ok=True)
        model_dir = scratch
        config = json.load(open(f"{model_dir}/config.json"))
        for flag in flags - RUN_FLAGS:
            if flag == "--v5-config":
                config = v5_spelling(config)
            else:
                config.update(VARIANTS[flag])
        json.dump(config, open(f"{model_dir}/config.json", "w"))
    config = json.load(open(f"{model_dir}/config.json"))
    weights = read_safetensors(f"{model_dir}/model.safetensors")
    arch = config["model_type"]
    reference = reference_class(config)
    max_len = config.get("n_positions") or (
        config["max_position_embeddings"] - (config.get("pad_token_id", 0) + 1
                                              if arch in ROBERTA_TYPES else 0))
    rng = random.Random(20241031)
    sequences, taus = build_batch(config, max_len, rng)
    if "--head-by-head" in flags:
        assert max_len >= HEAD_BY_HEAD_TOKENS, f"--head-by-head needs a window of {HEAD_BY_HEAD_TOKENS}"
        sequences.insert(1, [0] + [rng.randrange(5, config["vocab_size"])
                                   for _ in range(HEAD_BY_HEAD_TOKENS - 1)])
        taus.insert(1, TEMPERATURES[1])

    # A causal decoder pools its last token (only it has seen the whole text); the others and a
    # bidirectional decoder the mean.
    last_token = reference is ReferenceDecoder and is_causal(config)
    pooling = "last_token" if last_token else "mean"
    # Task adapters: the sequences cycle through none and every task, mixed in one batch.
    tasks = [None] + list(range(len(config.get("lora_adaptations") or [])))
    adapters = [tasks[i % len(tasks)] for i in range(len(sequences))]
    request = {"sequences": sequences, "temperatures": taus, "pooling": pooling,
               "adapters": [-1 if t is None else t for t in adapters]}
    if "--local-tau" in flags:
        request["local_temperatures"] = [LOCAL_TAU] * len(sequences)
    out = subprocess.run([*binary, model_dir], input=json.dumps(request),
                         capture_output=True, text=True, check=True)
    cpp = json.loads(out.stdout)
    dim = cpp["dim"]

    if reference is ReferenceJinaV3:
        models = {(tau, task): reference(config, weights, tau, task)
                  for tau in TEMPERATURES for task in tasks}
    else:
        models = {(tau, None): reference(config, weights, tau) for tau in TEMPERATURES}
    dense_layers = dense_modules(model_dir)
    if "--local-tau" in flags:
        for model in models.values():
            model.local_tau = LOCAL_TAU
    worst = {tau: 0.0 for tau in TEMPERATURES}
    worst_hf = 0.0
    for i, (ids, tau, task) in enumerate(zip(sequences, taus, adapters)):
        ref_hidden = models[tau, task](ids).numpy().astype(np.float64)
        got_hidden = np.array(cpp["hidden_states"][i], dtype=np.float64).reshape(len(ids), dim)
        ref_pooled = ref_hidden[-1] if last_token else ref_hidden.mean(axis=0)
        for dense in dense_layers:
            ref_pooled = dense(ref_pooled)
        got_pooled = np.array(cpp["pooled"][i], dtype=np.float64)
        diff = max(np.abs(ref_hidden - got_hidden).max(), np.abs(ref_pooled - got_pooled).max())
        worst[tau] = max(worst[tau], diff)
        centered = ref_hidden - ref_hidden.mean(axis=0, keepdims=True)
        ref_hf = np.linalg.norm(centered) / np.linalg.norm(ref_hidden)
        worst_hf = max(worst_hf, abs(ref_hf - cpp["high_frequency_ratio"][i]))

    lengths_seen = sorted(len(s) for s in sequences)
    variant = " ".join(sorted(flags)) or "as written"
    print(f"{reference.__name__} ({variant}): {len(sequences)} sequences in one batch, lengths "
          f"{lengths_seen[0]}..{lengths_seen[-1]}, {sum(lengths_seen)} tokens")
    for tau in TEMPERATURES:
        print(f"tau={tau}: max |C++ - torch| over hidden states and pooled = {worst[tau]:.3e}")
    print(f"high-frequency ratio: max |C++ - numpy| = {worst_hf:.3e}")
    # A temperature that did nothing would pass the above trivially: insist it matters.
    same_ids = max(sequences, key=len)
    spread = np.abs(models[1.0, None](same_ids).numpy() - models[0.5, None](same_ids).numpy()).max()
    print(f"tau=1 vs tau=0.5 on one sequence differ by {spread:.3e} (must be large)")
    for task in tasks[1:]:  # and every adapter must change the vectors
        moved = np.abs(models[1.0, task](same_ids).numpy() - models[1.0, None](same_ids).numpy()).max()
        print(f"task {config['lora_adaptations'][task]} moves the hidden states by {moved:.3e}")
        spread = min(spread, moved)
    failures = [t for t in TEMPERATURES if not worst[t] <= TOLERANCE]
    if reference is ReferenceDecoder and not decoder_checks(binary, model_dir, config, weights,
                                                            sequences, rng):
        failures.append("decoder")
    if reference is ReferenceGemma3 and not band_check(binary, model_dir, config, rng):
        failures.append("band")
    if failures or not worst_hf <= TOLERANCE or spread < 1e-2:
        print("FAILED")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
