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

usage: compare_tokenizers.py TOKENIZE_TEXTS_BINARY PEER_JS DEMO_UNIGRAM_MODEL_DIR
"""
import base64
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Café naïve résumé Ångström façade",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Γαζέες καὶ μυρτιὲς δὲν θὰ βρῶ πιὰ στὸ χρυσαφὶ ξέφωτο.",
    "صِفْ خَلْقَ خَوْدٍ كَمِثْلِ الشَّمْسِ إِذْ بَزَغَتْ",
    "דג סקרן שט בים מאוכזב ולפתע מצא חברה",
    "ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश",
    "เป็นมนุษย์สุดประเสริฐเลิศคุณค่า",
    "日本語の文章と中文字符，한국어 텍스트도",
    "emoji 👍🏽 family 👨‍👩‍👧 flags 🇩🇪 ok",
    "ＦＵＬＬ　ｗｉｄｔｈ　１２３！ ｶﾀｶﾅ ﾊﾟﾋﾞ",
    "e\u0301 a\u0308 o\u0302\u0323 Z\u0335\u0321 cafe\u0301",
    "tab\there\nnewline  double   triple\u00a0nbsp\u3000ideographic",
    "ﬁnance ½ ① ℃ ㍻ ™",
    "Mixed: English, Русский, Ελληνικά, العربية, עברית, हिन्दी, ไทย, 中文.",
    "   leading and trailing   ",
]
EXTRA_TEXTS = ["", "a", " ", "<s> inside </s> and <unk>", "x" * 300, "\u2581 literal meta"]


def training_corpus(path):
    """Text from this machine: the licence texts and the word list, plus the test texts (so
    every script has pieces)."""
    lines = []
    for name in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(name):
            lines += open(name, encoding="utf-8", errors="ignore").read().splitlines()
    lines += open("/usr/share/dict/words", encoding="utf-8").read().splitlines()[::5]
    lines += TEXTS * 30
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(line for line in lines if line.strip()))


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


def run_json(command, stdin=None):
    out = subprocess.run(command, input=stdin, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    binary, peer, demo_dir = sys.argv[1:4]
    workdir = tempfile.mkdtemp(prefix="compare-tokenizers-")
    model_path, proto = train(workdir)
    charsmap_bytes = len(proto.normalizer_spec.precompiled_charsmap)
    texts = TEXTS + EXTRA_TEXTS
    texts_path = os.path.join(workdir, "texts.json")
    json.dump(texts, open(texts_path, "w"))

    cases = dict(variants(tokenizer_json(proto)))
    cases["demo xlm-roberta (nfkc)"] = json.load(open(os.path.join(demo_dir, "tokenizer.json")))
    failures = 0
    checked = 0
    for index, (name, tokenizer) in enumerate(cases.items()):
        directory = os.path.join(workdir, f"case{index}")
        os.makedirs(directory)
        path = os.path.join(directory, "tokenizer.json")
        json.dump(tokenizer, open(path, "w"), ensure_ascii=False)
        theirs = run_json(["node", peer, path, texts_path])
        ours = run_json([binary, directory], json.dumps(texts))
        bad = [i for i in range(len(texts))
               if ours["ids"][i] != theirs["ids"][i] or ours["offsets"][i] != theirs["offsets"][i]]
        checked += len(texts)
        failures += len(bad)
        print(f"{name}: {len(texts) - len(bad)}/{len(texts)} texts equal in ids and offsets")
        for i in bad:
            print(f"  MISMATCH {texts[i]!r}\n    ours   {ours['ids'][i]} {ours['offsets'][i]}\n"
                  f"    theirs {theirs['ids'][i]} {theirs['offsets'][i]}")

    # SentencePiece's own ids against the converted file (Hugging Face semantics are followed).
    processor = spm.SentencePieceProcessor(model_file=model_path)
    converted = run_json(["node", peer, os.path.join(workdir, "case0", "tokenizer.json"), texts_path])
    same = [i for i, t in enumerate(TEXTS) if processor.encode(t) == converted["ids"][i]]
    print(f"precompiled charsmap: {charsmap_bytes} bytes; SentencePiece's own ids equal Hugging "
          f"Face's on {len(same)}/{len(TEXTS)} multi-script texts; differing: "
          f"{[TEXTS[i] for i in range(len(TEXTS)) if i not in same]}")
    print(f"{checked} tokenizations checked, {failures} mismatches")
    if failures or charsmap_bytes < 1000:
        print("FAILED")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
