#!/usr/bin/env python3
"""Every family's reference check on a device, and its bf16 and fp16 against its fp32 there.

Reads the suite's own lists from tests/CMakeLists.txt, so nothing is listed twice: the demo
models its fixtures write (add_demo_model_fixture) and the reference checks it runs
(add_reference_test, less the --torch-ops ones, which a device takes anyway). Writes each model
with write_demo_model, runs tests/reference/compare_encoder.py on it with --device=D (fp32: the
CPU's torch.nn references, at tau 1, 0.7 and 0.5, within 1e-4), then encodes one mixed batch in
fp32, bf16 and fp16 on the device, and each of its texts alone: the worst |alone - batched| per
dtype (batch invariance) and the lowest bf16- and fp16-to-fp32 cosine of the pooled vectors (the
bound: 0.999).
Prints one line per check and exits 1 if any failed.

usage: reference_checks.py BUILD_DIR MODELS_DIR [--device=cuda] [--torch-ops] [--only=NAME,...]
--torch-ops runs the GPU's code path on the CPU (--device=cpu), as the suite does. A dtype the
device refuses (fp16 on a CPU; bf16 on a CPU without native bf16) is skipped, saying so.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "..", "CMakeLists.txt")


def suite_lists():
    """(fixtures {dir variable: write_demo_model args}, checks [(name, dir variable, flags)])."""
    text = open(SUITE).read()
    calls = lambda fn: [m.group(1).split() for m in re.finditer(fn + r"\(([^)]*)\)", text)]
    fixtures = {}
    for args in calls("add_demo_model_fixture"):
        if args[0] == "name":  # the function's own definition
            continue
        fixtures[args[1][2:-1]] = ["--max_positions=512"] + args[2:]
    checks = [(args[0], args[1][2:-1], args[2:]) for args in calls("add_reference_test")
              if args[0] != "name" and "--torch-ops" not in args]
    return fixtures, checks


def encode(encode_ids, model_dir, dtype, sequences, taus):
    """Pooled vectors of one batch; None where the device refuses the dtype (fp16 on a CPU, bf16
    on a CPU without native bf16)."""
    request = json.dumps({"sequences": sequences, "temperatures": taus, "pooling": "mean"})
    out = subprocess.run([*encode_ids, f"--dtype={dtype}", model_dir], input=request,
                         capture_output=True, text=True)
    if out.returncode != 0 and ("bf16 needs a CPU with" in out.stderr or
                                "fp16 runs on a CUDA device only" in out.stderr):
        return None
    if out.returncode != 0:
        raise RuntimeError(f"encode_ids --dtype={dtype} {model_dir}: {out.stderr.strip()}")
    return np.array(json.loads(out.stdout)["pooled"])


def dtype_checks(encode_ids, model_dir):
    """Per dtype, the worst |alone - batched| over one mixed batch's pooled vectors (the same
    text alone and among others: 0 is bit-identical); and bf16's and fp16's lowest cosine to
    fp32. Returns (text, ok)."""
    config = json.load(open(os.path.join(model_dir, "config.json")))
    rng = random.Random(7)
    sequences = [[rng.randrange(5, config["vocab_size"]) for _ in range(n)]
                 for n in (3, 40, 200, 511)]
    taus = [1.0, 0.7, 0.5, 1.0]
    batched, parts = {}, []
    for dtype in ("fp32", "bf16", "fp16"):
        batched[dtype] = encode(encode_ids, model_dir, dtype, sequences, taus)
        if batched[dtype] is None:
            parts.append(f"{dtype}: not on this device")
            continue
        alone = np.concatenate([encode(encode_ids, model_dir, dtype, [s], [t])
                                for s, t in zip(sequences, taus)])
        parts.append(f"{dtype} |alone - batched| {np.abs(alone - batched[dtype]).max():.3e}")
    a, ok = batched["fp32"], True
    for dtype in ("bf16", "fp16"):
        b = batched[dtype]
        if b is None:
            continue
        cosine = float(((a * b).sum(1) / np.linalg.norm(a, axis=1) /
                        np.linalg.norm(b, axis=1)).min())
        parts.append(f"{dtype} vs fp32 cosine >= {cosine:.5f}")
        ok = ok and cosine >= 0.999
    return "; ".join(parts), ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("models")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--only", default="")
    parser.add_argument("--torch-ops", action="store_true")
    args = parser.parse_args()
    writer = os.path.join(args.build, "model_store", "write_demo_model")
    passed = [f"--device={args.device}"] + (["--torch-ops"] if args.torch_ops else [])
    encode_ids = [os.path.join(args.build, "tests", "gpu", "encode_ids"), *passed]
    fixtures, checks = suite_lists()
    only = set(filter(None, args.only.split(",")))
    failed = 0
    for name, variable, flags in checks:
        if only and name not in only:
            continue
        model_dir = os.path.join(args.models, variable)
        if not os.path.exists(os.path.join(model_dir, "config.json")):
            subprocess.run([writer, f"--out={model_dir}", *fixtures[variable]], check=True,
                           capture_output=True)
        run = subprocess.run([sys.executable, os.path.join(HERE, "..", "reference",
                                                           "compare_encoder.py"),
                              encode_ids[0], model_dir, *flags, *passed],
                             capture_output=True, text=True)
        worst = re.findall(r"tau=([0-9.]+): max \|C\+\+ - torch\|[^=]*= ([0-9.e+-]+)", run.stdout)
        line = f"{name} fp32 on {args.device}: " + (
            ", ".join(f"tau {t} {d}" for t, d in worst) if worst else "no figures")
        if run.returncode != 0:
            failed += 1
            line += " FAILED: " + (run.stderr.strip().splitlines() or ["?"])[-1]
        elif "--" not in " ".join(flags):  # the dtype checks once per model, as laid out
            text, ok = dtype_checks(encode_ids, model_dir)
            line += "; " + text
            if not ok:
                failed += 1
                line += " FAILED (cosine < 0.999)"
        print(line, flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
