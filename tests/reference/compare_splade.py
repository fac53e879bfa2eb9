#!/usr/bin/python3
"""Checks SPLADE's sparse output against a masked-LM head built from PyTorch modules.

For BERT and DistilBERT, a demo SPLADE checkpoint as sentence-transformers' SparseEncoder saves
one (<Family>ForMaskedLM, its decoder tied to the word embeddings, modules.json's
MLMTransformer + SpladePooling) is served, and every sparse vector it returns is recomputed:
the encoder from compare_encoder.py's references, then the head as transformers'
BertLMPredictionHead (dense, the config's activation, LayerNorm, then the decoder onto the
vocabulary with its bias) or DistilBertForMaskedLM's vocab_transform / vocab_layer_norm /
vocab_projector computes it, then SpladePooling: max over every token of the sequence (the
specials included) of log(1 + relu(logits)). At tau 1, 0.7 and 0.5, texts alone and in one
batch; a long document chunk by chunk (each chunk's vector against the reference on that chunk's
sequence, the document's as their maximum); weights never negative; sparse_top_k keeping exactly
the largest weights. Fails above 1e-4.

usage: compare_splade.py SERVER_BINARY WRITE_DEMO_MODEL
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch.nn import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from compare_cross_encoder import split_prefix  # noqa: E402
from compare_encoder import REFERENCES, TEMPERATURES, TOLERANCE, read_safetensors  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, WRITER = sys.argv[1], sys.argv[2]
TEXTS = ["owls hunt voles at night", "the market fell", "", "Herons fish below the old mill."]
LONG = " ".join(["herons fish in the shallows below the old mill"] * 12)
# transformers' names for each family's masked-LM head: transform, its norm, decoder and bias.
HEADS = {"bert": ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                  "cls.predictions.bias", "hidden_act"),
         "distilbert": ("vocab_transform", "vocab_layer_norm", "vocab_projector.bias",
                        "activation")}
ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu}


class ReferenceSplade:
    def __init__(self, model_dir):
        self.config = json.load(open(f"{model_dir}/config.json"))
        self.family = self.config["model_type"]
        self.w = split_prefix(read_safetensors(f"{model_dir}/model.safetensors"))
        self.encoders = {tau: REFERENCES[self.family](self.config, self.w, tau)
                         for tau in TEMPERATURES}

    @torch.no_grad()
    def vector(self, ids, tau):
        """The dense [vocab] SPLADE vector of one sequence (special tokens included)."""
        transform, norm, bias, act_field = HEADS[self.family]
        x = self.encoders[tau](ids)
        x = ACTIVATIONS[self.config.get(act_field, "gelu")](
            F.linear(x, self.w[f"{transform}.weight"], self.w[f"{transform}.bias"]))
        x = F.layer_norm(x, (x.shape[-1],), self.w[f"{norm}.weight"], self.w[f"{norm}.bias"],
                         self.config.get("layer_norm_eps", 1e-12))
        # The decoder is tied: the word embeddings, as the checkpoint saves it.
        logits = F.linear(x, self.w["embeddings.word_embeddings.weight"], self.w[bias])
        return torch.log1p(torch.relu(logits)).amax(dim=0).numpy().astype(np.float64)


def dense(sparse, vocab):
    out = np.zeros(vocab)
    out[list(sparse.token_ids)] = list(sparse.weights)
    return out


def check(client, name, model_dir, worst):
    reference = ReferenceSplade(model_dir)
    vocab = reference.config["vocab_size"]
    tokenized = [[t.id for t in i.tokens] for i in client.tokenize(TEXTS + [LONG], model=name).inputs]
    for tau in TEMPERATURES:
        together = client.embed(TEXTS, model=name, temperature=tau).documents
        for i, text in enumerate(TEXTS):
            want = reference.vector(tokenized[i], tau)
            alone = client.embed([text], model=name, temperature=tau).documents[0]
            for doc in (together[i], alone):
                assert min(doc.sparse.weights, default=0) > 0, (name, "a weight <= 0")
                assert len(doc.vector) == 0, (name, "a SPLADE model has no dense output")
                worst[(name, tau)] = max(worst.get((name, tau), 0.0),
                                         np.abs(dense(doc.sparse, vocab) - want).max())
        # Chunk by chunk: the specials around every chunk, the document their max.
        doc = client.embed([LONG], model=name, temperature=tau, chunk_tokens=24,
                           strategy="LONG_TEXT_STRATEGY_CHUNK_ALL").documents[0]
        content = tokenized[-1][1:-1]
        first, last = tokenized[-1][:1], tokenized[-1][-1:]
        chunks = []
        for chunk in doc.chunks:
            ids = first + content[chunk.token_span.start:chunk.token_span.end] + last
            chunks.append(reference.vector(ids, tau))
            worst[(name, tau)] = max(worst[(name, tau)],
                                     np.abs(dense(chunk.sparse, vocab) - chunks[-1]).max())
        assert len(chunks) >= 3, name
        worst[(name, tau)] = max(worst[(name, tau)],
                                 np.abs(dense(doc.sparse, vocab) - np.max(chunks, axis=0)).max())
    # sparse_top_k: exactly the largest weights of the full vector.
    full = client.embed([TEXTS[0]], model=name).documents[0].sparse
    top = client.embed([TEXTS[0]], model=name, sparse_top_k=7).documents[0].sparse
    order = np.argsort(-np.array(full.weights), kind="stable")[:7]
    assert sorted(top.token_ids) == list(top.token_ids), name
    assert set(top.token_ids) == {full.token_ids[i] for i in order}, name
    return len(full.token_ids), vocab


def main():
    tmp = tempfile.mkdtemp(prefix="splade-")
    try:
        flags = []
        for family in HEADS:
            subprocess.run([WRITER, f"--out={tmp}/{family}", f"--architecture={family}",
                            "--splade", "--layers=2", "--hidden=64", "--heads=4",
                            "--max_positions=64", "--vocab_size=9000"],
                           check=True, capture_output=True)
            flags.append(f"--model={family}={tmp}/{family}")
        worst, sizes = {}, {}
        with ServerRunner(BINARY, flags) as server:
            client = EmbeddingClient(server.grpc_address)
            for family in HEADS:
                sizes[family] = check(client, family, f"{tmp}/{family}", worst)
        failed = False
        for family in HEADS:
            cells = ", ".join(f"tau={t}: {worst[(family, t)]:.2e}" for t in TEMPERATURES)
            print(f"{family:11} {cells}; {sizes[family][0]} of {sizes[family][1]} ids non-zero "
                  "for one short text")
            failed |= any(not worst[(family, t)] <= TOLERANCE for t in TEMPERATURES)
        print("FAILED" if failed else "OK")
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
