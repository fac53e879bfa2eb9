#!/usr/bin/python3
"""Checks Rerank and Classify against cross-encoders built from PyTorch modules.

For each family with a sequence-classification head, a demo checkpoint in the Hub's layout
(the encoder under its prefix, the head beside it, config.json naming
<Family>ForSequenceClassification and id2label) is served, and every score the server returns
is recomputed here:
- pairs as Hugging Face's own tokenizer (the Rust library, via npm) encodes them, token types
  included: encode(query, document);
- the encoder from compare_encoder.py's references (written from transformers' modelling code)
  at tau 1, 0.7 and 0.5;
- the heads as transformers' *ForSequenceClassification computes them: BertPooler (dense +
  tanh on the first token) then `classifier` (BERT, GTE "new"); RobertaClassificationHead
  (dense + tanh + out_proj on the first token; XLM-R, RoBERTa, MPNet); DistilBERT's
  pre_classifier + ReLU + classifier; ModernBertPredictionHead (dense + GELU + LayerNorm on
  the mean of the tokens under classifier_pooling "mean") then classifier; a decoder's
  `score` (no bias) on the last token (Qwen3ForSequenceClassification, as
  tomaarsen/Qwen3-Reranker-0.6B-seq-cls ships Qwen3-Reranker).
Short documents run in one request together (one batch, mixed lengths) and each alone; a long
document runs chunk by chunk: each chunk's score must equal the reference on (query, that
chunk) with the pair's special tokens, and CHUNK_MAX / CHUNK_MEAN merges are recomputed from
the chunk logits. A 3-label classifier's softmax is recomputed from its logits. Prints the worst
|server - torch| per family and tau; fails above 1e-4.

usage: compare_cross_encoder.py SERVER_BINARY WRITE_DEMO_MODEL
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from compare_encoder import TEMPERATURES, TOLERANCE, read_safetensors, reference_class  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, WRITER = sys.argv[1], sys.argv[2]
FAMILIES = ("bert", "xlm-roberta", "roberta", "distilbert", "mpnet", "new", "modernbert", "qwen3")
# transformers saves a *ForSequenceClassification's base model under these attribute names.
BASE_PREFIXES = ("bert.", "roberta.", "distilbert.", "mpnet.", "new.", "model.")
QUERY = "where do owls hunt at night"
DOCUMENTS = ["Owls hunt small mammals in the forest after dark.",
             "The stock market closed higher on Friday.",
             "",
             "Barn owls nest in old buildings; tawny owls prefer woodland, where they hunt voles."]
LONG = " ".join(["the river bends past the old mill where herons fish in the shallows"] * 9)
WINDOW = 64  # tokens, special ones included (the writer adds the RoBERTa kind's offset of 2)


def split_prefix(weights):
    """Encoder tensors without their base prefix (as the references read them), head tensors as
    saved."""
    out = {}
    for name, tensor in weights.items():
        for prefix in BASE_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        out[name] = tensor
    return out


def linear(w, name, bias=True):
    weight = w[f"{name}.weight"]
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=bias).requires_grad_(False)
    with torch.no_grad():
        layer.weight.copy_(weight)
        if bias:
            layer.bias.copy_(w[f"{name}.bias"])
    return layer


def head(config, w):
    """The classification head of config's architecture, on [tokens, hidden] final states."""
    arch = config["architectures"][0]
    if arch in ("BertForSequenceClassification", "NewForSequenceClassification"):
        pooler, classifier = linear(w, "pooler.dense"), linear(w, "classifier")
        return lambda x: classifier(torch.tanh(pooler(x[0])))
    if arch in ("XLMRobertaForSequenceClassification", "RobertaForSequenceClassification",
                "MPNetForSequenceClassification"):
        dense, out = linear(w, "classifier.dense"), linear(w, "classifier.out_proj")
        return lambda x: out(torch.tanh(dense(x[0])))
    if arch == "DistilBertForSequenceClassification":
        pre, classifier = linear(w, "pre_classifier"), linear(w, "classifier")
        return lambda x: classifier(F.relu(pre(x[0])))
    if arch == "ModernBertForSequenceClassification":
        assert config["classifier_pooling"] == "mean" and config["classifier_activation"] == "gelu"
        dense = linear(w, "head.dense", bias=config.get("classifier_bias", False))
        classifier = linear(w, "classifier")
        norm_bias = w["head.norm.bias"] if config.get("norm_bias", False) else None

        def modernbert(x):  # mean over the tokens (no padding here), then the head
            pooled = F.gelu(dense(x.mean(dim=0)))
            pooled = F.layer_norm(pooled, (pooled.shape[-1],), w["head.norm.weight"], norm_bias,
                                  config.get("norm_eps", 1e-5))
            return classifier(pooled)
        return modernbert
    if arch in ("Qwen3ForSequenceClassification", "Qwen2ForSequenceClassification",
                "MistralForSequenceClassification", "LlamaForSequenceClassification"):
        score = linear(w, "score", bias=False)
        return lambda x: score(x[-1])  # the last token: a causal decoder's only one that saw all
    raise KeyError(arch)


class ReferenceCrossEncoder:
    def __init__(self, model_dir):
        self.config = json.load(open(f"{model_dir}/config.json"))
        self.weights = split_prefix(read_safetensors(f"{model_dir}/model.safetensors"))
        encoder = reference_class(self.config)
        self.encoders = {tau: encoder(self.config, self.weights, tau) for tau in TEMPERATURES}
        self.head = head(self.config, self.weights)

    @torch.no_grad()
    def logits(self, ids, types, tau):
        """Token types reach only a model with a type table (transformers' DistilBERT, MPNet
        and ModernBERT take none)."""
        typed = "embeddings.token_type_embeddings.weight" in self.weights
        states = self.encoders[tau](ids, types) if typed else self.encoders[tau](ids)
        return self.head(states).numpy().astype(np.float64)


def hf_pairs(model_dir, pairs):
    """Hugging Face's pair encodings: ids, type ids and which sequence each token is from."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([list(p) for p in pairs], f)
    out = subprocess.run(["node", os.path.join(HERE, "tokenizer_peer.js"),
                          f"{model_dir}/tokenizer.json", f.name],
                         capture_output=True, text=True, check=True)
    os.unlink(f.name)
    got = json.loads(out.stdout)
    return list(zip(got["ids"], got["type_ids"], got["sequence_ids"]))


def with_chunk(encoding, chunk):
    """The pair `encoding` with its (non-empty) second sequence replaced by the ids `chunk`:
    the same special tokens and types around it."""
    ids, types, seqs = encoding
    second = [i for i, s in enumerate(seqs) if s == 1]
    begin, end = second[0], second[-1] + 1
    return ids[:begin] + chunk + ids[end:], types[:begin] + [types[begin]] * len(chunk) + types[end:]


def write_model(out, family, labels):
    subprocess.run([WRITER, f"--out={out}", f"--architecture={family}", "--layers=2",
                    "--hidden=64", "--heads=4", f"--max_positions={WINDOW}",
                    "--vocab_size=9000", f"--num_labels={labels}"],
                   check=True, capture_output=True)


def check_family(client, name, model_dir, worst):
    reference = ReferenceCrossEncoder(model_dir)
    encodings = hf_pairs(model_dir, [(QUERY, d) for d in DOCUMENTS] + [(QUERY, LONG)])
    # A tau that changed nothing would pass trivially: it must move the scores.
    spread = {tau: [r.score for r in client.rerank(QUERY, DOCUMENTS, model=name, temperature=tau,
                                                   raw_scores=True).results]
              for tau in (1.0, 0.5)}
    worst[(name, "spread")] = max(abs(a - b) for a, b in zip(spread[1.0], spread[0.5]))
    for tau in TEMPERATURES:
        together = client.rerank(QUERY, DOCUMENTS, model=name, temperature=tau, raw_scores=True)
        by_index = {r.index: r.score for r in together.results}
        for i, encoding in enumerate(encodings[:len(DOCUMENTS)]):
            want = reference.logits(encoding[0], encoding[1], tau)[0]
            alone = client.rerank(QUERY, [DOCUMENTS[i]], model=name, temperature=tau,
                                  raw_scores=True).results[0].score
            for got in (by_index[i], alone):
                worst[(name, tau)] = max(worst.get((name, tau), 0.0), abs(got - want))
        # The long document, chunk by chunk: the query and the specials in every chunk.
        long_ids, long_types, long_seqs = encodings[-1]
        content = [t for t, s in zip(long_ids, long_seqs) if s == 1]
        chunked = {}
        for strategy in ("CHUNK_MAX", "CHUNK_MEAN"):
            answer = client.rerank(QUERY, [LONG], model=name, temperature=tau, raw_scores=True,
                                   return_chunks=True, chunk_overlap_tokens=4,
                                   strategy=f"LONG_TEXT_STRATEGY_{strategy}").results[0]
            chunk_logits = []
            for chunk in answer.chunks:
                ids, types = with_chunk(encodings[-1],
                                        content[chunk.token_span.start:chunk.token_span.end])
                assert len(ids) <= WINDOW, (name, len(ids))
                want = reference.logits(ids, types, tau)[0]
                chunk_logits.append(chunk.scores[0])
                worst[(name, tau)] = max(worst[(name, tau)], abs(chunk.scores[0] - want))
            assert len(answer.chunks) >= 3 and answer.chunk_count == len(answer.chunks), name
            assert answer.chunks[-1].token_span.end == len(content), name
            merged = max(chunk_logits) if strategy == "CHUNK_MAX" else np.mean(chunk_logits)
            worst[(name, tau)] = max(worst[(name, tau)], abs(answer.score - merged))
            chunked[strategy] = len(answer.chunks)
    return chunked


def check_classifier(client, name, model_dir):
    """Softmax over 3 labels, recomputed from the raw logits; pairs as text_pairs."""
    texts = ["owls hunt at night", "markets fell"]
    raw = client.classify(texts, model=name, text_pairs=[QUERY, QUERY], raw_scores=True)
    scored = client.classify(texts, model=name, text_pairs=[QUERY, QUERY])
    reference = ReferenceCrossEncoder(model_dir)
    encodings = hf_pairs(model_dir, [(QUERY, t) for t in texts])
    worst = 0.0
    for got_raw, got, encoding in zip(raw.results, scored.results, encodings):
        logits = reference.logits(encoding[0], encoding[1], 1.0)
        probabilities = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        assert [l.label for l in got.labels] == ["LABEL_0", "LABEL_1", "LABEL_2"]
        worst = max(worst, np.abs(np.array([l.score for l in got_raw.labels]) - logits).max(),
                    np.abs(np.array([l.score for l in got.labels]) - probabilities).max())
    return worst


def main():
    tmp = tempfile.mkdtemp(prefix="cross-encoder-")
    try:
        models = []
        for family in FAMILIES:
            write_model(f"{tmp}/{family}", family, 1)
            models.append(f"--model={family}={tmp}/{family}")
        write_model(f"{tmp}/classifier", "bert", 3)
        models.append(f"--model=classifier={tmp}/classifier")
        worst = {}
        with ServerRunner(BINARY, models + ["--max_batch_tokens=4096"]) as server:
            client = EmbeddingClient(server.grpc_address)
            kinds = {m.name: (m.kind, m.head) for m in client.list_models().models}
            chunks = {f: check_family(client, f, f"{tmp}/{f}", worst) for f in FAMILIES}
            classifier = check_classifier(client, "classifier", f"{tmp}/classifier")
        failed = False
        for family in FAMILIES:
            cells = ", ".join(f"tau={t}: {worst[(family, t)]:.2e}" for t in TEMPERATURES)
            print(f"{family:12} {kinds[family][1]:40} {cells}; long document in "
                  f"{chunks[family]['CHUNK_MAX']} chunks; tau 1 vs 0.5 moves a score by "
                  f"{worst[(family, 'spread')]:.2e}")
            failed |= any(not worst[(family, t)] <= TOLERANCE for t in TEMPERATURES)
            failed |= kinds[family][0] != "reranker" or worst[(family, "spread")] < 1e-3
        print(f"classifier (3 labels, softmax and raw logits over text_pairs): {classifier:.2e}")
        failed |= not classifier <= TOLERANCE or kinds["classifier"][0] != "classifier"
        print("FAILED" if failed else "OK")
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
