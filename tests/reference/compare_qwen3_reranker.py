#!/usr/bin/python3
"""Checks the original Qwen3-Reranker (a Qwen3ForCausalLM read as a reranker) against its
published scoring recipe, in PyTorch.

A demo checkpoint in Qwen/Qwen3-Reranker-0.6B's layout (Qwen3ForCausalLM, tied embeddings, a
tokenizer with the chat tokens and no post-processor template, no sentence-transformers files)
is served with vLLM's overrides (architectures Qwen3ForSequenceClassification,
classifier_from_token ["no", "yes"], is_original_qwen3_reranker). Each score is recomputed as
the model card computes it:
- ids = tokenize(prefix) + tokenize("<Instruct>: {instruction}\\n<Query>: {query}\\n<Document>:
  {doc}") + tokenize(suffix), each by Hugging Face's own tokenizer (the Rust library, via npm);
- the final hidden state at the last position through the WHOLE LM head (the tied embedding
  table), then softmax over the logits of "no" and "yes": the score is P(yes), the raw score
  logit(yes) - logit(no);
- the decoder from reference_decoder.py (written from transformers' modeling_qwen3.py) at
  tau 1, 0.7 and 0.5.
Documents run together and each alone, with the default instruction and a given one (which must
move the scores); a long document runs chunk by chunk, each chunk's score against the recipe
on that chunk in place of the document, and CHUNK_MAX recomputed. Prints the worst
|server - torch| per tau; fails above 1e-4.

usage: compare_qwen3_reranker.py SERVER_BINARY WRITE_DEMO_MODEL
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
from compare_encoder import TEMPERATURES, TOLERANCE, read_safetensors  # noqa: E402
from embedding_client import EmbeddingClient  # noqa: E402
from reference_decoder import ReferenceDecoder  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, WRITER = sys.argv[1], sys.argv[2]
# The model card's recipe, as published.
PREFIX = ("<|im_start|>system\nJudge whether the Document meets the requirements based on the "
          "Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\"."
          "<|im_end|>\n<|im_start|>user\n")
SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
OVERRIDES = {"architectures": ["Qwen3ForSequenceClassification"],
             "classifier_from_token": ["no", "yes"], "is_original_qwen3_reranker": True}
QUERY = "where do owls hunt at night"
INSTRUCTION = "Find the passage about birds of prey"
DOCUMENTS = ["Owls hunt small mammals in the forest after dark.",
             "The stock market closed higher on Friday.",
             "",
             "42 barn owls nest in old buildings; tawny owls prefer woodland."]
LONG = " ".join(["the river bends past the old mill where herons fish in the shallows"] * 6)
WINDOW = 256


def body(instruction, query, doc):
    return f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"


def hf_tokenize(model_dir, texts):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(texts, f)
    out = subprocess.run(["node", os.path.join(HERE, "tokenizer_peer.js"),
                          f"{model_dir}/tokenizer.json", f.name],
                         capture_output=True, text=True, check=True)
    os.unlink(f.name)
    return json.loads(out.stdout)["ids"]


class Recipe:
    """The model card's ids, and its query part and document part apart (for chunks)."""

    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.prefix, self.suffix = hf_tokenize(model_dir, [PREFIX, SUFFIX])

    def ids(self, instruction, query, doc):
        middle, = hf_tokenize(self.model_dir, [body(instruction, query, doc)])
        return self.prefix + middle + self.suffix

    def parts(self, instruction, query, doc):
        """(query part, document tokens), checked to make the recipe's ids when joined: the
        tokenizer splits the body after "<Document>:", so a chunk can replace the document."""
        head, tail = hf_tokenize(self.model_dir, [
            body(instruction, query, "")[:-1], " " + doc])
        assert self.prefix + head + tail + self.suffix == self.ids(instruction, query, doc)
        return self.prefix + head, tail


class ReferenceReranker:
    def __init__(self, model_dir):
        self.config = json.load(open(f"{model_dir}/config.json"))
        weights = {name[len("model."):] if name.startswith("model.") else name: tensor
                   for name, tensor in read_safetensors(f"{model_dir}/model.safetensors").items()}
        assert "lm_head.weight" not in weights and self.config["tie_word_embeddings"]
        self.lm_head = weights["embed_tokens.weight"]  # tied, as Qwen3-Reranker-0.6B's
        self.decoders = {tau: ReferenceDecoder(self.config, weights, tau) for tau in TEMPERATURES}
        vocab = json.load(open(f"{model_dir}/tokenizer.json"))["model"]["vocab"]
        self.no, self.yes = vocab["no"], vocab["yes"]

    @torch.no_grad()
    def score(self, ids, tau):
        """(P(yes), logit(yes) - logit(no)) at the last position, from the whole vocabulary."""
        logits = (self.decoders[tau](ids)[-1] @ self.lm_head.T).double()
        pair = torch.stack([logits[self.no], logits[self.yes]])
        return torch.softmax(pair, 0)[1].item(), (pair[1] - pair[0]).item()


def main():
    tmp = tempfile.mkdtemp(prefix="qwen3-reranker-")
    try:
        model_dir = f"{tmp}/qwen3-reranker"
        subprocess.run([WRITER, f"--out={model_dir}", "--architecture=qwen3", "--layers=2",
                        "--hidden=64", "--heads=4", "--kv_heads=2", f"--max_positions={WINDOW}",
                        "--vocab_size=9000", "--causal_lm_reranker"],
                       check=True, capture_output=True)
        recipe, reference = Recipe(model_dir), ReferenceReranker(model_dir)
        worst = {tau: 0.0 for tau in TEMPERATURES}
        flags = [f"--model=rr={model_dir}", f"--hf_overrides={json.dumps(OVERRIDES)}",
                 "--dtype=fp32", "--max_batch_tokens=8192"]
        with ServerRunner(BINARY, flags) as server:
            client = EmbeddingClient(server.grpc_address)
            info, = client.list_models().models
            assert (info.kind, info.head, info.labels) == (
                "reranker", "Qwen3ForSequenceClassification", ["yes"]), info
            assert info.default_instruction == DEFAULT_INSTRUCTION, info.default_instruction
            moved = 0.0
            for tau in TEMPERATURES:
                for instruction in ("", INSTRUCTION):
                    given = instruction or DEFAULT_INSTRUCTION
                    want = [reference.score(recipe.ids(given, QUERY, d), tau) for d in DOCUMENTS]
                    together = client.rerank(QUERY, DOCUMENTS, temperature=tau,
                                             instruction=instruction)
                    raw = client.rerank(QUERY, DOCUMENTS, temperature=tau, raw_scores=True,
                                        instruction=instruction)
                    got = {r.index: r.score for r in together.results}
                    got_raw = {r.index: r.score for r in raw.results}
                    for i, (p_yes, logit) in enumerate(want):
                        alone = client.rerank(QUERY, [DOCUMENTS[i]], temperature=tau,
                                              instruction=instruction).results[0].score
                        worst[tau] = max(worst[tau], abs(got[i] - p_yes), abs(alone - p_yes),
                                         abs(got_raw[i] - logit))
                    if instruction:
                        moved = max(moved, max(abs(got_raw[i] - reference.score(
                            recipe.ids(DEFAULT_INSTRUCTION, QUERY, d), tau)[1])
                            for i, d in enumerate(DOCUMENTS)))
                # The long document, chunk by chunk: the prompt and query in every chunk.
                head, content = recipe.parts(DEFAULT_INSTRUCTION, QUERY, LONG)
                answer = client.rerank(QUERY, [LONG], temperature=tau, raw_scores=True,
                                       return_chunks=True, chunk_tokens=48,
                                       chunk_overlap_tokens=4).results[0]
                logits = []
                for chunk in answer.chunks:
                    ids = head + content[chunk.token_span.start:chunk.token_span.end] + \
                        recipe.suffix
                    logit = reference.score(ids, tau)[1]
                    logits.append(logit)
                    worst[tau] = max(worst[tau], abs(chunk.scores[0] - logit))
                assert len(answer.chunks) >= 3 and answer.chunks[-1].token_span.end == len(content)
                assert answer.chunks[0].char_span.start == 0, answer.chunks[0].char_span
                worst[tau] = max(worst[tau], abs(answer.score - max(logits)))
        cells = ", ".join(f"tau={t}: {worst[t]:.2e}" for t in TEMPERATURES)
        print(f"qwen3 reranker (classifier_from_token no/yes, published prompt): {cells}; "
              f"long document in {len(answer.chunks)} chunks; an instruction moves a logit by "
              f"{moved:.2e}")
        failed = any(not worst[t] <= TOLERANCE for t in TEMPERATURES) or moved < 1e-3
        print("FAILED" if failed else "OK")
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
