"""jina-embeddings-v3 in nn modules, written from its published modelling code (Jina's
xlm-roberta-flash-implementation: modeling_lora.py's LoRAParametrization, embedding.py, mha.py,
block.py; transformers' JinaEmbeddingsV3 port computes the same):

- task t's adapter merged into each weight as the parametrization computes it: a linear layer's
  W + (B_t @ A_t) * alpha / rank, an embedding table's E + (A_t @ B_t) * alpha / rank, with
  lora_A and lora_B as the checkpoint stores them; no task: the weights as they are;
- word embeddings + token type 0's, then emb_ln (LayerNorm); no position table;
- post-norm blocks: h = norm1(x + out_proj(attn(x))), then norm2(h + fc2(gelu(fc1(h))));
- the fused Wqkv's rows [q; k; v], heads of hidden / heads; rotary (rotate-half) on queries and
  keys at positions 0, 1, ... with rotary_emb_base, angles in fp32.

TempScale as the paper states it: softmax(q k^T / sqrt(d) / tau).
"""
import torch
from torch import nn
from torch.nn import functional as F

from attention_formula import tempscale_attention


def merged(weights, name, task, scale, table):
    """The weight `name` with task `task`'s adapter merged, as LoRAParametrization.lora_forward."""
    base = name + ".parametrizations.weight."
    w = weights[base + "original"].clone()
    if task is None:
        return w
    a, b = weights[base + "0.lora_A"][task], weights[base + "0.lora_B"][task]
    return w + (a @ b if table else b @ a) * scale


class ReferenceJinaV3(nn.Module):
    def __init__(self, config, weights, tau, task=None):
        super().__init__()
        weights = {k[len("roberta."):] if k.startswith("roberta.") else k: v
                   for k, v in weights.items()}
        h = config["hidden_size"]
        self.heads, self.head_dim, self.tau = (config["num_attention_heads"],
                                               h // config["num_attention_heads"], tau)
        self.base = config.get("rotary_emb_base", 10000.0)
        scale = config.get("lora_alpha", 1) / config.get("lora_rank", 4)
        eps = config.get("layer_norm_eps", 1e-5)
        self.word = merged(weights, "embeddings.word_embeddings", task, scale, True)
        self.type0 = merged(weights, "embeddings.token_type_embeddings", task, scale, True)[0]
        self.emb_ln = nn.LayerNorm(h, eps=eps)
        with torch.no_grad():
            self.emb_ln.weight.copy_(weights["emb_ln.weight"])
            self.emb_ln.bias.copy_(weights["emb_ln.bias"])
        self.layers, self.norms = [], nn.ModuleList()  # the norms registered (ONNX export)
        for i in range(config["num_hidden_layers"]):
            p = f"encoder.layers.{i}."
            layer = {}
            for name in ("mixer.Wqkv", "mixer.out_proj", "mlp.fc1", "mlp.fc2"):
                layer[name] = (merged(weights, p + name, task, scale, False),
                               weights[p + name + ".bias"])
            norms = nn.ModuleDict({name: nn.LayerNorm(h, eps=eps) for name in ("norm1", "norm2")})
            with torch.no_grad():
                for name, norm in norms.items():
                    norm.weight.copy_(weights[p + name + ".weight"])
                    norm.bias.copy_(weights[p + name + ".bias"])
            layer.update(norms)
            self.layers.append(layer)
            self.norms.append(norms)

    def angles(self, length):
        d = self.head_dim
        inv_freq = 1.0 / (self.base ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        freqs = torch.outer(torch.arange(length, dtype=torch.float32), inv_freq)
        return freqs.cos().repeat(1, 2), freqs.sin().repeat(1, 2)

    @staticmethod
    def rotate(x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin

    @torch.no_grad()
    def forward(self, ids):
        ids = torch.as_tensor(ids, dtype=torch.long)
        x = self.emb_ln(self.word[ids] + self.type0)
        length = len(ids)
        cos, sin = self.angles(length)
        for layer in self.layers:
            q, k, v = (F.linear(x, *layer["mixer.Wqkv"])
                       .view(length, 3, self.heads, self.head_dim).permute(1, 2, 0, 3))
            context = tempscale_attention(self.rotate(q, cos, sin), self.rotate(k, cos, sin), v,
                                          self.tau)
            attended = F.linear(context.transpose(0, 1).reshape(length, -1), *layer["mixer.out_proj"])
            h = layer["norm1"](x + attended)
            x = layer["norm2"](h + F.linear(F.gelu(F.linear(h, *layer["mlp.fc1"])), *layer["mlp.fc2"]))
        return x
