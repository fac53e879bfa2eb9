"""T5's encoder (transformers' T5EncoderModel, modeling_t5.py), as sentence-transformers ships
gtr-t5 and sentence-t5, in nn modules:

- token embeddings (`shared`), no position table, no scaling;
- per block: x + attn(norm(x)), then x + ff(norm(x)); T5LayerNorm is x / sqrt(mean(x^2) + eps)
  times w, no mean and no bias, in fp32; a final norm;
- attention without biases and WITHOUT 1/sqrt(d) (T5 folds it into its weights); the first
  block's relative_attention_bias [buckets, heads], indexed by _relative_position_bucket(j - i,
  bidirectional, num_buckets, max_distance), is added to every block's logits;
- ff: wo(relu(wi(x))) for feed_forward_proj "relu", wo(gelu_new(wi_0(x)) * wi_1(x)) for
  "gated-gelu".

TempScale as the paper states it, on T5's logit as it is: softmax((QK^T + bias) / tau).
"""
import math

import torch
from torch import nn


def relative_position_bucket(relative_position, num_buckets, max_distance):
    """transformers' T5Attention._relative_position_bucket with bidirectional=True."""
    num_buckets //= 2
    buckets = (relative_position > 0).to(torch.long) * num_buckets
    relative_position = torch.abs(relative_position)
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (torch.log(relative_position.float() / max_exact)
                         / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, relative_position, large)


class T5LayerNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class ReferenceT5(nn.Module):
    def __init__(self, config, weights, tau):
        super().__init__()
        h, heads = config["d_model"], config["num_heads"]
        self.heads, self.d_kv = heads, config["d_kv"]
        inner = heads * self.d_kv
        self.buckets = config.get("relative_attention_num_buckets", 32)
        self.max_distance = config.get("relative_attention_max_distance", 128)
        self.gated = config.get("feed_forward_proj", "relu") == "gated-gelu"
        self.tau = tau
        eps = config.get("layer_norm_epsilon", 1e-6)
        d_ff = config["d_ff"]
        self.shared = nn.Embedding(config["vocab_size"], h)
        self.bias = nn.Embedding(self.buckets, heads)
        self.blocks = nn.ModuleList()
        for _ in range(config["num_layers"]):
            block = {"q": nn.Linear(h, inner, bias=False), "k": nn.Linear(h, inner, bias=False),
                     "v": nn.Linear(h, inner, bias=False), "o": nn.Linear(inner, h, bias=False),
                     "norm0": T5LayerNorm(h, eps), "norm1": T5LayerNorm(h, eps),
                     "wo": nn.Linear(d_ff, h, bias=False)}
            if self.gated:
                block["wi_0"] = nn.Linear(h, d_ff, bias=False)
                block["wi_1"] = nn.Linear(h, d_ff, bias=False)
            else:
                block["wi"] = nn.Linear(h, d_ff, bias=False)
            self.blocks.append(nn.ModuleDict(block))
        self.final_norm = T5LayerNorm(h, eps)
        with torch.no_grad():
            self.shared.weight.copy_(weights["shared.weight"])
            self.bias.weight.copy_(
                weights["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"])
            self.final_norm.weight.copy_(weights["encoder.final_layer_norm.weight"])
            for i, block in enumerate(self.blocks):
                p = f"encoder.block.{i}.layer."
                names = {"q": "0.SelfAttention.q", "k": "0.SelfAttention.k",
                         "v": "0.SelfAttention.v", "o": "0.SelfAttention.o",
                         "norm0": "0.layer_norm", "norm1": "1.layer_norm",
                         "wo": "1.DenseReluDense.wo", "wi": "1.DenseReluDense.wi",
                         "wi_0": "1.DenseReluDense.wi_0", "wi_1": "1.DenseReluDense.wi_1"}
                for key, module in block.items():
                    module.weight.copy_(weights[f"{p}{names[key]}.weight"])
        self.eval()

    def position_bias(self, length):
        context = torch.arange(length)[:, None]
        memory = torch.arange(length)[None, :]
        buckets = relative_position_bucket(memory - context, self.buckets, self.max_distance)
        return self.bias(buckets).permute(2, 0, 1)  # [heads, q, k]

    def attention(self, block, x, bias):
        length = x.shape[0]
        q = block["q"](x).view(length, self.heads, self.d_kv).transpose(0, 1)
        k = block["k"](x).view(length, self.heads, self.d_kv).transpose(0, 1)
        v = block["v"](x).view(length, self.heads, self.d_kv).transpose(0, 1)
        scores = q @ k.transpose(-1, -2) + bias
        context = torch.softmax(scores / self.tau, dim=-1) @ v
        return block["o"](context.transpose(0, 1).reshape(length, -1))

    def feed_forward(self, block, x):
        if self.gated:
            return block["wo"](nn.functional.gelu(block["wi_0"](x), approximate="tanh")
                               * block["wi_1"](x))
        return block["wo"](torch.relu(block["wi"](x)))

    @torch.no_grad()
    def forward(self, ids):
        ids = torch.as_tensor(ids, dtype=torch.long)
        x = self.shared(ids)
        bias = self.position_bias(ids.shape[0])
        for block in self.blocks:
            x = x + self.attention(block, block["norm0"](x), bias)
            x = x + self.feed_forward(block, block["norm1"](x))
        return self.final_norm(x)
