"""Gemma3's text model (google/embeddinggemma-300m) as transformers' modeling_gemma3.py computes
it, in nn modules:

- token embeddings times sqrt(hidden_size) (as an fp32 scalar);
- per layer a sandwich: x + post_attention_layernorm(attn(input_layernorm(x))), then
  x + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(x))); every RMSNorm is
  x / sqrt(mean(x^2) + eps) * (1 + w), in fp32;
- attention: q/k/v/o without bias, num_key_value_heads repeated (repeat_kv), q_norm and k_norm
  over each head before rotary (rotate-half, angles t x f in fp32 as its rotary embedding does)
  at rope_theta on full layers and rope_local_base_freq on sliding ones, logits scaled by
  query_pre_attn_scalar^-1/2;
- the window as Gemma3TextConfig.__post_init__ leaves it: with use_bidirectional_attention it
  becomes sliding_window // 2 + 1 ("due to fa we set exclusive bounds"); layer_types, when
  absent, slide except every sliding_window_pattern-th (6) layer;
- masks: with use_bidirectional_attention, every key on full layers and |i - j| < the rewritten
  window on sliding ones (_bidirectional_window_overlay); otherwise causal, and i - window < j
  on sliding ones (sliding_window_overlay);
- mlp: down(gelu_tanh(gate(x)) * up(x)); a final norm.

TempScale as the paper states it: softmax((QK^T x scale + mask) / tau).
"""

import torch
from torch import nn

from reference_decoder import rotate_half


class GemmaRMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(size))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed * (1.0 + self.weight.float())


def gemma_angles(length, head_dim, theta):
    """cos and sin [L, head_dim]: inverse frequencies in fp32, t x f in fp32."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    freqs = torch.arange(length, dtype=torch.float32)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


class ReferenceGemma3(nn.Module):
    def __init__(self, config, weights, tau):
        super().__init__()
        h = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.kv_heads = config["num_key_value_heads"]
        self.head_dim = config["head_dim"]
        self.scale = config["query_pre_attn_scalar"] ** -0.5
        self.embed_scale = torch.tensor(h ** 0.5, dtype=torch.float32)
        self.bidirectional = bool(config.get("use_bidirectional_attention", False))
        self.window = config.get("sliding_window", 4096)
        if self.bidirectional:
            self.window = self.window // 2 + 1
        layers = config["num_hidden_layers"]
        pattern = config.get("sliding_window_pattern", 6)
        self.layer_types = config.get("layer_types") or [
            "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
        self.theta = {"full_attention": config["rope_theta"],
                      "sliding_attention": config["rope_local_base_freq"]}
        self.tau = tau
        eps = config["rms_norm_eps"]
        inner = config["intermediate_size"]
        prefix = "model." if "model.embed_tokens.weight" in weights else ""
        self.embed_tokens = nn.Embedding(config["vocab_size"], h)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "input_layernorm": GemmaRMSNorm(h, eps),
                "q_proj": nn.Linear(h, self.heads * self.head_dim, bias=False),
                "k_proj": nn.Linear(h, self.kv_heads * self.head_dim, bias=False),
                "v_proj": nn.Linear(h, self.kv_heads * self.head_dim, bias=False),
                "o_proj": nn.Linear(self.heads * self.head_dim, h, bias=False),
                "q_norm": GemmaRMSNorm(self.head_dim, eps),
                "k_norm": GemmaRMSNorm(self.head_dim, eps),
                "post_attention_layernorm": GemmaRMSNorm(h, eps),
                "pre_feedforward_layernorm": GemmaRMSNorm(h, eps),
                "gate_proj": nn.Linear(h, inner, bias=False),
                "up_proj": nn.Linear(h, inner, bias=False),
                "down_proj": nn.Linear(inner, h, bias=False),
                "post_feedforward_layernorm": GemmaRMSNorm(h, eps)}))
        self.norm = GemmaRMSNorm(h, eps)
        with torch.no_grad():
            self.embed_tokens.weight.copy_(weights[prefix + "embed_tokens.weight"])
            self.norm.weight.copy_(weights[prefix + "norm.weight"])
            for i, layer in enumerate(self.layers):
                for key, module in layer.items():
                    where = ("self_attn." if key[0] in "qkvo" and key[1] == "_" else
                             "mlp." if key.endswith("_proj") else "")
                    module.weight.copy_(weights[f"{prefix}layers.{i}.{where}{key}.weight"])
        self.eval()

    def mask(self, length, sliding):
        positions = torch.arange(length)
        offsets = positions[None, :] - positions[:, None]  # j - i
        hidden = torch.zeros(length, length, dtype=torch.bool)
        if sliding:
            hidden = offsets.abs() >= self.window if self.bidirectional else offsets <= -self.window
        if not self.bidirectional:
            hidden = hidden | (offsets > 0)
        return torch.zeros(length, length).masked_fill(hidden, float("-inf"))

    def attention(self, layer, x, cos, sin, mask):
        length = x.shape[0]
        q = layer["q_proj"](x).view(length, self.heads, self.head_dim).transpose(0, 1)
        k = layer["k_proj"](x).view(length, self.kv_heads, self.head_dim).transpose(0, 1)
        v = layer["v_proj"](x).view(length, self.kv_heads, self.head_dim).transpose(0, 1)
        q, k = layer["q_norm"](q), layer["k_norm"](k)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = self.heads // self.kv_heads
        k = k[:, None].expand(-1, group, -1, -1).reshape(self.heads, length, self.head_dim)
        v = v[:, None].expand(-1, group, -1, -1).reshape(self.heads, length, self.head_dim)
        logits = (q @ k.transpose(-1, -2)) * self.scale + mask
        context = torch.softmax(logits / self.tau, dim=-1) @ v
        return layer["o_proj"](context.transpose(0, 1).reshape(length, -1))

    @torch.no_grad()
    def forward(self, ids):
        ids = torch.as_tensor(ids, dtype=torch.long)
        length = ids.shape[0]
        x = self.embed_tokens(ids) * self.embed_scale
        angles = {kind: gemma_angles(length, self.head_dim, theta)
                  for kind, theta in self.theta.items()}
        masks = {kind: self.mask(length, kind == "sliding_attention") for kind in self.theta}
        for kind, layer in zip(self.layer_types, self.layers):
            cos, sin = angles[kind]
            attended = self.attention(layer, layer["input_layernorm"](x), cos, sin, masks[kind])
            x = x + layer["post_attention_layernorm"](attended)
            h = layer["pre_feedforward_layernorm"](x)
            mlp = layer["down_proj"](nn.functional.gelu(layer["gate_proj"](h), approximate="tanh")
                                     * layer["up_proj"](h))
            x = x + layer["post_feedforward_layernorm"](mlp)
        return self.norm(x)
