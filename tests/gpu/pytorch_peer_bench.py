#!/usr/bin/env python3
"""PyTorch's figures on this GPU, the peer the service is measured against in the same run:
transformers' models with scaled-dot-product attention, random weights of the real shapes,
one forward pass at a time, under inference_mode. Prints one line per shape (tokens/s, ms per
pass, share of the dtype's dense peak) and writes them as JSON.

usage: pytorch_peer_bench.py [--json=FILE] [--shapes=NAME,...] [--device=cuda]
"""
import argparse
import json
import sys
import time

import torch

# name: (config factory, batch, tokens, dtype)
SHAPES = {
    "bert-base-128x512-bf16": ("bert", 128, 512, torch.bfloat16),
    "bert-base-128x512-fp32": ("bert", 128, 512, torch.float32),
    "bert-base-1x128-bf16": ("bert", 1, 128, torch.bfloat16),
    "modernbert-base-8x8192-bf16": ("modernbert", 8, 8192, torch.bfloat16),
    "qwen3-0.6b-16x2048-bf16": ("qwen3", 16, 2048, torch.bfloat16),
    "qwen3-0.6b-1x32768-bf16": ("qwen3", 1, 32768, torch.bfloat16),
}

# Dense (no sparsity) tensor-core peaks in TFLOP/s, from NVIDIA's data sheets (SXM parts).
PEAK_TFLOPS = {"H100": {torch.bfloat16: 989, torch.float32: 67},
               "H200": {torch.bfloat16: 989, torch.float32: 67}}


def config(kind):
    """The model's config, whether it is causal, and whether its MLP is gated (three matrices)."""
    import transformers as tf
    if kind == "bert":
        return tf.BertConfig(), False, False
    if kind == "modernbert":  # 22 layers, global attention every 3rd, a band of 128
        return tf.ModernBertConfig(max_position_embeddings=8192), False, True
    return tf.Qwen3Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                          num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                          max_position_embeddings=32768, vocab_size=151669), True, True


def flops_per_pass(cfg, batch, tokens, causal, gated):
    """2 x (weights of the layers) per token, plus QK^T and PV per layer (half under a causal
    mask; a band's saving is not counted, so a banded model's share is an upper estimate)."""
    hidden = cfg.hidden_size
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or hidden // heads
    kv = getattr(cfg, "num_key_value_heads", heads) or heads
    ffn = cfg.intermediate_size * (3 if gated else 2)
    per_layer = hidden * head_dim * (heads + 2 * kv) + heads * head_dim * hidden + ffn * hidden
    attention = 4 * tokens * tokens * heads * head_dim * (0.5 if causal else 1)
    return cfg.num_hidden_layers * batch * (2 * per_layer * tokens + attention)


def measure(name, device):
    import transformers as tf
    kind, batch, tokens, dtype = SHAPES[name]
    cfg, causal, gated = config(kind)
    torch.manual_seed(0)
    model = tf.AutoModel.from_config(cfg, attn_implementation="sdpa").to(device, dtype).eval()
    ids = torch.randint(100, cfg.vocab_size - 1, (batch, tokens), device=device)
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        for _ in range(2):
            model(input_ids=ids, attention_mask=mask)
        torch.cuda.synchronize()
        runs, start = 0, time.perf_counter()
        while runs < 3 or time.perf_counter() - start < 2.0:
            model(input_ids=ids, attention_mask=mask)
            torch.cuda.synchronize()
            runs += 1
        seconds = (time.perf_counter() - start) / runs
    flops = flops_per_pass(cfg, batch, tokens, causal, gated)
    gpu = torch.cuda.get_device_name(device)
    peak = next((p[dtype] for k, p in PEAK_TFLOPS.items() if k in gpu), None)
    del model
    torch.cuda.empty_cache()
    return {"shape": name, "gpu": gpu, "tokens_per_s": batch * tokens / seconds,
            "ms_per_pass": seconds * 1e3, "tflops": flops / seconds / 1e12,
            "share_of_peak": flops / seconds / 1e12 / peak if peak else None,
            "torch": torch.__version__, "transformers": tf.__version__}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 stays fp32, as the server keeps it
    results = []
    for name in args.shapes.split(","):
        try:
            r = measure(name, args.device)
            share = f"{100 * r['share_of_peak']:.0f}% of peak" if r["share_of_peak"] else ""
            print(f"pytorch {name}: {r['tokens_per_s']:,.0f} tokens/s, {r['ms_per_pass']:.1f} ms "
                  f"per pass, {r['tflops']:.0f} TFLOP/s {share} ({r['gpu']})", flush=True)
        except Exception as e:  # one shape's failure (memory, an old transformers) is reported
            r = {"shape": name, "error": repr(e)[:300]}
            print(f"pytorch {name}: FAILED {r['error']}", flush=True)
        results.append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
