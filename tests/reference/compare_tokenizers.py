#!/usr/bin/python3
"""Checks the C++ tokenizer against Hugging Face's own (Rust tokenizers through npm) on Unigram
tokenizer.json files, one of them with a real SentencePiece `Precompiled` normalizer.

SentencePiece (Debian's python3-sentencepiece, here in its own process: it bundles a protobuf
that crashes a process linking gRPC's) trains a Unigram model on text from this machine with the
`nmt_nfkc` rule; its model file carries a real precompiled charsmap. That map, the pieces and
their scores are written into a tokenizer.json the way Hugging Face converts SentencePiece
models, plus variants (NFKC, Sequence, the Metaspace prepend schemes, no split). For every
variant and text, ids and code-point offsets must equal Hugging Face's. SentencePiece's own ids
are reported too: they differ, as documented, only where runs of whitespace end the text.
The demo models' own tokenizer.json files (XLM-R's and CamemBERT's Unigram, RoBERTa's
byte-level BPE, DistilBERT's WordPiece) are checked the same way.

usage: compare_tokenizers.py TOKENIZE_TEXTS_BINARY PEER_JS DEMO_MODEL_DIR...
"""
import base64
import copy
import json
import os
import sys
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from tokenizer_comparison import (EXTRA_TEXTS, TEXTS, compare_cases, run_json, training_corpus,
                                  verdict)


def train(workdir):
    corpus = os.path.join(workdir, "corpus.txt")
    training_corpus(corpus)
    prefix = os.path.join(workdir, "spm")
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=3000, model_type="unigram",
        normalization_rule_name="nmt_nfkc", character_coverage=1.0, byte_fallback=True,
        minloglevel=2)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(open(prefix + ".model", "rb").read())
    return prefix + ".model", proto


def tokenizer_json(proto):
    """As Hugging Face's SpmConverter writes it: Precompiled then collapse runs of spaces,
    Metaspace, Unigram with byte fallback, <s> $A </s>."""
    pieces = [[p.piece, p.score] for p in proto.pieces]
    ids = {p.piece: i for i, p in enumerate(proto.pieces)}
    charsmap = base64.b64encode(proto.normalizer_spec.precompiled_charsmap).decode()
    added = [{"id": i, "content": p.piece, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for i, p in enumerate(proto.pieces) if p.type in (2, 3)]  # unknown, control
    special = lambda name: {"SpecialToken": {"id": name, "type_id": 0}}
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                 "split": True}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": charsmap},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("<s>"), {"Sequence": {"id": "A", "type_id": 0}}, special("</s>")],
            "pair": [special("<s>"), {"Sequence": {"id": "A", "type_id": 0}}, special("</s>"),
                     {"Sequence": {"id": "B", "type_id": 1}}, special("</s>")],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [ids["<s>"]], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [ids["</s>"]], "tokens": ["</s>"]}}},
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": ids["<unk>"], "vocab": pieces,
                  "byte_fallback": True},
    }


def variants(base):
    def edit(fn):
        json_copy = copy.deepcopy(base)
        fn(json_copy)
        return json_copy

    return {
        "precompiled+replace (as converted)": base,
        "precompiled alone": edit(lambda j: j.update(normalizer=j["normalizer"]["normalizers"][0])),
        "nfkc": edit(lambda j: j.update(normalizer={"type": "NFKC"})),
        "sequence nfkc lowercase strip": edit(lambda j: j.update(normalizer={
            "type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"},
                                                {"type": "Strip", "strip_left": True,
                                                 "strip_right": True}]})),
        "no normalizer, prepend first": edit(lambda j: (
            j.update(normalizer=None), j["pre_tokenizer"].update(prepend_scheme="first"))),
        "prepend never": edit(lambda j: j["pre_tokenizer"].update(prepend_scheme="never")),
        "metaspace without split": edit(lambda j: j["pre_tokenizer"].update(split=False)),
        "nfd, no byte fallback": edit(lambda j: (
            j.update(normalizer={"type": "NFD"}), j["model"].update(byte_fallback=False))),
    }


def main():
    binary, peer, demo_dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
    workdir = tempfile.mkdtemp(prefix="compare-tokenizers-")
    model_path, proto = train(workdir)
    charsmap_bytes = len(proto.normalizer_spec.precompiled_charsmap)
    texts = TEXTS + EXTRA_TEXTS
    cases = dict(variants(tokenizer_json(proto)))
    for demo_dir in demo_dirs:  # the demo models' own files: Unigram, RoBERTa's BPE, WordPiece
        model_type = json.load(open(os.path.join(demo_dir, "config.json")))["model_type"]
        cases[f"demo {model_type}"] = json.load(open(os.path.join(demo_dir, "tokenizer.json")))
    checked, failures = compare_cases(binary, peer, workdir, cases, texts)

    # SentencePiece's own ids against the converted file (Hugging Face semantics are followed).
    processor = spm.SentencePieceProcessor(model_file=model_path)
    converted = run_json(["node", peer, os.path.join(workdir, "case0", "tokenizer.json"),
                          os.path.join(workdir, "texts.json")])
    same = [i for i, t in enumerate(TEXTS) if processor.encode(t) == converted["ids"][i]]
    print(f"precompiled charsmap: {charsmap_bytes} bytes; SentencePiece's own ids equal Hugging "
          f"Face's on {len(same)}/{len(TEXTS)} multi-script texts; differing: "
          f"{[TEXTS[i] for i in range(len(TEXTS)) if i not in same]}")
    print(f"{checked} tokenizations checked, {failures} mismatches")
    return verdict(failures or charsmap_bytes < 1000)


if __name__ == "__main__":
    sys.exit(main())
