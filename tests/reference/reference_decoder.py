"""The decoder families (Qwen3, Qwen2, Mistral, Llama) as transformers' modeling_qwen3.py /
modeling_qwen2.py / modeling_mistral.py / modeling_llama.py compute them, in nn modules:

- token embeddings, no norm; per layer x + attn(rms(x)), then x + mlp(rms(x)); a final RMSNorm
  (w * x / sqrt(mean(x^2) + eps), in fp32);
- attention with separate q/k/v/o projections (Qwen2: biases on q, k, v; the others:
  `attention_bias` for all four), num_key_value_heads key/value heads repeated for their group
  of query heads (repeat_kv), head_dim from the config; Qwen3 normalises each head's queries
  and keys with an RMSNorm (q_norm, k_norm) before rotary; rotary rotate-half at rope_theta;
- a causal mask unless the config says use_bidirectional_attention or is_causal: false;
  Mistral's sliding_window keeps keys i - window < j <= i;
- mlp: down(silu(gate(x)) * up(x)).

TempScale as the paper states it: softmax((QK^T / sqrt(d) + mask) / tau). `tau_before_norm`
instead scales the queries by 1 / tau before the q-norm (the placement that cancels out).
Rotary angles: inverse frequencies in fp32 as the published code has them, t x f in fp64.
"""

import torch
from torch import nn

from attention_formula import tempscale_attention

DECODER_TYPES = ("qwen3", "qwen2", "mistral", "llama")
ATTENTION_MODULES = {key: "self_attn." for key in
                     ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm")}


def is_causal(config):
    return not config.get("use_bidirectional_attention", False) and config.get("is_causal", True)


class RMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary_angles(length, head_dim, theta, dtype=torch.float64):
    """cos and sin [L, head_dim] of positions 0..L-1: t x f in `dtype`, f in fp32."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    # t x f by broadcasting (torch.outer exports to ONNX as a MatMul of 1-D tensors, refused).
    freqs = torch.arange(length, dtype=dtype)[:, None] * inv_freq.to(dtype)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().float(), emb.sin().float()


class ReferenceDecoder(nn.Module):
    def __init__(self, config, weights, tau, tau_before_norm=False):
        super().__init__()
        h = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads") or self.heads
        self.head_dim = config.get("head_dim") or h // self.heads
        self.theta = config.get("rope_theta", 10000.0)
        self.causal = is_causal(config)
        self.window = config.get("sliding_window")
        self.tau, self.tau_before_norm = tau, tau_before_norm
        qwen2 = config["model_type"] == "qwen2"
        qkv_bias = True if qwen2 else config.get("attention_bias", False)
        o_bias = False if qwen2 else config.get("attention_bias", False)
        mlp_bias = config.get("mlp_bias", False)
        eps = config.get("rms_norm_eps", 1e-6)
        inner = config["intermediate_size"]
        self.qk_norm = "layers.0.self_attn.q_norm.weight" in weights or \
            "model.layers.0.self_attn.q_norm.weight" in weights
        prefix = "model." if "model.embed_tokens.weight" in weights else ""
        self.embed_tokens = nn.Embedding(config["vocab_size"], h)
        self.layers = nn.ModuleList()
        for _ in range(config["num_hidden_layers"]):
            layer = {
                "input_layernorm": RMSNorm(h, eps),
                "q_proj": nn.Linear(h, self.heads * self.head_dim, bias=qkv_bias),
                "k_proj": nn.Linear(h, self.kv_heads * self.head_dim, bias=qkv_bias),
                "v_proj": nn.Linear(h, self.kv_heads * self.head_dim, bias=qkv_bias),
                "o_proj": nn.Linear(self.heads * self.head_dim, h, bias=o_bias),
                "post_attention_layernorm": RMSNorm(h, eps),
                "gate_proj": nn.Linear(h, inner, bias=mlp_bias),
                "up_proj": nn.Linear(h, inner, bias=mlp_bias),
                "down_proj": nn.Linear(inner, h, bias=mlp_bias)}
            if self.qk_norm:
                layer["q_norm"] = RMSNorm(self.head_dim, eps)
                layer["k_norm"] = RMSNorm(self.head_dim, eps)
            self.layers.append(nn.ModuleDict(layer))
        self.norm = RMSNorm(h, eps)
        with torch.no_grad():
            self.embed_tokens.weight.copy_(weights[prefix + "embed_tokens.weight"])
            self.norm.weight.copy_(weights[prefix + "norm.weight"])
            for i, layer in enumerate(self.layers):
                for key, module in layer.items():
                    where = ATTENTION_MODULES.get(key, "mlp." if key.endswith("_proj") else "")
                    for param_name, param in module.named_parameters():
                        param.copy_(weights[f"{prefix}layers.{i}.{where}{key}.{param_name}"])
        self.eval()

    def attention(self, layer, x, cos, sin, mask):
        length = x.shape[0]
        q = layer["q_proj"](x).view(length, self.heads, self.head_dim).transpose(0, 1)
        k = layer["k_proj"](x).view(length, self.kv_heads, self.head_dim).transpose(0, 1)
        v = layer["v_proj"](x).view(length, self.kv_heads, self.head_dim).transpose(0, 1)
        if self.tau_before_norm:
            q = q / self.tau
        if self.qk_norm:
            q, k = layer["q_norm"](q), layer["k_norm"](k)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = self.heads // self.kv_heads
        # repeat_kv as transformers writes it (expand, then reshape): head h reads kv head
        # h // group.
        k = k[:, None].expand(-1, group, -1, -1).reshape(self.heads, length, self.head_dim)
        v = v[:, None].expand(-1, group, -1, -1).reshape(self.heads, length, self.head_dim)
        context = tempscale_attention(q, k, v, 1.0 if self.tau_before_norm else self.tau, mask)
        return layer["o_proj"](context.transpose(0, 1).reshape(length, -1))

    @torch.no_grad()
    def forward(self, ids):
        ids = torch.as_tensor(ids, dtype=torch.long)
        length = ids.shape[0]  # traced, not a constant: the ONNX export stays dynamic
        x = self.embed_tokens(ids)
        cos, sin = rotary_angles(length, self.head_dim, self.theta)
        positions = torch.arange(length)
        offsets = positions[None, :] - positions[:, None]  # j - i
        hidden = torch.zeros(length, length, dtype=torch.bool)
        if self.causal:
            hidden = hidden | (offsets > 0)  # not |=: the ONNX export has no in-place or
            if self.window:
                hidden = hidden | (offsets <= -self.window)
        mask = torch.zeros(length, length).masked_fill(hidden, float("-inf"))
        for layer in self.layers:
            x = x + self.attention(layer, layer["input_layernorm"](x), cos, sin, mask)
            h = layer["post_attention_layernorm"](x)
            x = x + layer["down_proj"](nn.functional.silu(layer["gate_proj"](h)) * layer["up_proj"](h))
        return self.norm(x)
