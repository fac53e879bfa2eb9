#!/usr/bin/python3
"""Late-interaction (ColBERT) models from a real server against a torch reference written from
the published code (PyLate's ColBERT.preprocess / encode, ColBERT's QueryTokenizer /
DocTokenizer / Checkpoint.query / doc, MaxSim), on checkpoints laid out as the Hub holds them:
PyLate's (sentence-transformers files, "[Q] " / "[D] " added to the tokenizer, a Dense module
without bias) and Stanford ColBERT's (HF_ColBERT, `bert.` weights with `linear.weight`,
artifact.metadata, [unused0] / [unused1] markers).

usage: late_interaction_test.py SERVER_BINARY WRITE_DEMO_MODEL
"""
import json
import os
import shutil
import string
import subprocess
import sys
import tempfile
import unittest
import urllib.request

import numpy as np
import torch
from scipy.cluster import hierarchy

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
import grpc  # noqa: E402
from bge_m3_model import write_safetensors  # noqa: E402
from compare_encoder import ReferenceBert, read_safetensors  # noqa: E402
from embedding_client import EmbeddingClient, multi_vector_rows  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, WRITER = sys.argv[1], sys.argv[2]
TOLERANCE = 1e-4
HIDDEN, DIM = 64, 24
QUERY_LENGTH, DOCUMENT_LENGTH = 16, 40  # as the files say; specials and marker included
QUERY = "Where did the owl hunt?"
DOCUMENT = "The owl, silent and patient, hunted mice in the moonlit clearing!"
LONG_DOCUMENT = " ".join(
    ["Deep in the forest an owl watched the moonlit clearing, while foxes hunted mice."] * 6)


def write_base(out):
    subprocess.run([WRITER, f"--out={out}", "--architecture=bert", "--layers=2",
                    f"--hidden={HIDDEN}", "--heads=4", "--max_positions=66", "--pooling=cls"],
                   check=True, capture_output=True)


def grow_vocabulary(model_dir, tokens, added):
    """Appends `tokens` to the vocabulary (as tokenizer.json added tokens, as PyLate's
    add_tokens leaves them, or as WordPiece vocabulary entries, as BERT's [unusedN] are) with
    embedding rows of their own; returns their ids."""
    path = os.path.join(model_dir, "tokenizer.json")
    with open(path) as f:
        tok = json.load(f)
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    first = config["vocab_size"]
    ids = list(range(first, first + len(tokens)))
    for token, i in zip(tokens, ids):
        if added:
            tok["added_tokens"].append({"id": i, "content": token, "single_word": False,
                                        "lstrip": False, "rstrip": False, "normalized": True,
                                        "special": False})
        else:
            tok["model"]["vocab"][token] = i
    with open(path, "w") as f:
        json.dump(tok, f)
    config["vocab_size"] = first + len(tokens)
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(config, f)
    weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    torch.manual_seed(first)
    name = "embeddings.word_embeddings.weight"
    weights[name] = torch.cat([weights[name], 0.02 * torch.randn(len(tokens), HIDDEN)])
    write_safetensors(os.path.join(model_dir, "model.safetensors"), weights)
    return ids


def write_pylate(base, out, projection, attend):
    shutil.copytree(base, out)
    q, d = grow_vocabulary(out, ["[Q] ", "[D] "], added=True)
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "",
                    "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"}],
                  f)
    os.makedirs(os.path.join(out, "1_Dense"))
    with open(os.path.join(out, "1_Dense", "config.json"), "w") as f:
        json.dump({"in_features": HIDDEN, "out_features": DIM, "bias": False,
                   "activation_function": "torch.nn.modules.linear.Identity"}, f)
    write_safetensors(os.path.join(out, "1_Dense", "model.safetensors"),
                      {"linear.weight": projection})
    # max_seq_length as PyLate leaves it: its last length, less the marker.
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": QUERY_LENGTH - 1, "do_lower_case": False}, f)
    with open(os.path.join(out, "config_sentence_transformers.json"), "w") as f:
        json.dump({"model_type": "ColBERT", "query_prefix": "[Q] ", "document_prefix": "[D] ",
                   "query_length": QUERY_LENGTH, "document_length": DOCUMENT_LENGTH,
                   "attend_to_expansion_tokens": attend,
                   "skiplist_words": list(string.punctuation), "do_query_expansion": True,
                   "similarity_fn_name": "MaxSim"}, f)
    return q, d


def write_stanford(base, out, projection):
    shutil.copytree(base, out)
    q, d = grow_vocabulary(out, ["[unused0]", "[unused1]"], added=False)
    weights = read_safetensors(os.path.join(out, "model.safetensors"))
    weights = {"bert." + name: t for name, t in weights.items()}
    weights["linear.weight"] = projection
    write_safetensors(os.path.join(out, "model.safetensors"), weights)
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    config["architectures"] = ["HF_ColBERT"]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(out, "artifact.metadata"), "w") as f:
        json.dump({"query_token_id": "[unused0]", "doc_token_id": "[unused1]",
                   "query_maxlen": QUERY_LENGTH, "doc_maxlen": DOCUMENT_LENGTH,
                   "mask_punctuation": True, "attend_to_mask_tokens": False, "dim": DIM}, f)
    return q, d


class Reference:
    """The published encoding on torch.nn's BERT: the marker after [CLS]; a query cut to
    query_length and padded with [MASK] to it (attended or not); a document cut to
    document_length; every row projected and L2-normalised; a document's skiplist rows dropped
    after encoding."""

    def __init__(self, base_dir, projection, markers, cls, sep, mask, skiplist, attend=False):
        with open(os.path.join(base_dir, "config.json")) as f:
            self.config = json.load(f)
        self.config["vocab_size"] += 2
        self.weights = read_safetensors(os.path.join(base_dir, "model.safetensors"))
        self.projection, self.markers = projection, markers
        self.cls, self.sep, self.mask, self.skiplist, self.attend = cls, sep, mask, skiplist, attend
        self.nets = {}

    def net(self, tau, marker_rows):
        if tau not in self.nets:
            weights = dict(self.weights)
            name = "embeddings.word_embeddings.weight"
            weights[name] = torch.cat([weights[name], marker_rows])
            self.nets[tau] = ReferenceBert(self.config, weights, tau)
        return self.nets[tau]

    @torch.no_grad()
    def rows(self, content, query, tau=1.0, expand=True, skip=True, marker_first=False):
        """The kept rows' vectors and their sequence ids. The keyword flags are mutations."""
        marker = self.markers[0 if query else 1]
        length = QUERY_LENGTH if query else DOCUMENT_LENGTH
        body = [self.cls] + content[:length - 3] + [self.sep]
        ids = ([marker] + body) if marker_first else ([body[0], marker] + body[1:])
        attended = None
        if query and expand and len(ids) < length:
            attended = None if self.attend else len(ids)
            ids = ids + [self.mask] * (length - len(ids))
        h = self.net(tau, self.marker_rows)(ids, attended=attended)
        v = torch.nn.functional.normalize(h @ self.projection.t(), dim=-1)
        keep = [not (skip and not query and i in self.skiplist) for i in ids]
        return v[torch.tensor(keep)], [i for i, k in zip(ids, keep) if k]


def max_sim(q, d):
    return float((q @ d.t()).max(dim=1).values.sum())


def pylate_pool(vectors, pool_factor, protected=1):
    """PyLate's pool_embeddings_hierarchical on one document: clusters as sets of row indices
    (after the protected rows), from scipy's Ward linkage and maxclust cut."""
    to_pool = vectors[protected:]
    n = len(to_pool)
    clusters = max(n // pool_factor, 1)
    dist = 1 - (to_pool @ to_pool.t()).numpy()
    linkage = hierarchy.linkage(dist[np.triu_indices(n, k=1)], method="ward")
    labels = hierarchy.fcluster(linkage, t=clusters, criterion="maxclust")
    groups = {}
    for row, label in enumerate(labels):
        groups.setdefault(label, []).append(row + protected)
    return list(groups.values())


class LateInteractionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="colbert-")
        base = os.path.join(cls.tmp, "base")
        write_base(base)
        torch.manual_seed(11)
        cls.projection = torch.randn(DIM, HIDDEN) / HIDDEN ** 0.5
        markers = {}
        markers["pylate"] = write_pylate(base, os.path.join(cls.tmp, "pylate"), cls.projection,
                                         attend=False)
        write_pylate(base, os.path.join(cls.tmp, "pylate-attend"), cls.projection, attend=True)
        markers["stanford"] = write_stanford(base, os.path.join(cls.tmp, "stanford"),
                                             cls.projection)
        cls.server = ServerRunner(BINARY, [f"--model=pylate={cls.tmp}/pylate",
                                           f"--model=attend={cls.tmp}/pylate-attend",
                                           f"--model=stanford={cls.tmp}/stanford",
                                           f"--model=plain={base}",
                                           "--openai-listen=127.0.0.1:0"])
        cls.client = EmbeddingClient(cls.server.grpc_address)
        specials = cls.client.tokenize([""], model="plain").inputs[0].tokens
        cls_id, sep_id = specials[0].id, specials[-1].id
        vocab = json.load(open(os.path.join(base, "tokenizer.json")))["model"]["vocab"]
        skiplist = {vocab[c] for c in string.punctuation if c in vocab}
        # Both layouts add their marker rows after the same base rows (seeded by vocab size).
        marker_rows = read_safetensors(os.path.join(cls.tmp, "pylate", "model.safetensors"))[
            "embeddings.word_embeddings.weight"][-2:]
        cls.refs = {}
        for name, model in (("pylate", "pylate"), ("attend", "pylate"), ("stanford", "stanford")):
            ref = Reference(base, cls.projection, markers[model], cls_id, sep_id, vocab["[MASK]"],
                            skiplist, attend=name == "attend")
            ref.marker_rows = marker_rows
            cls.refs[name] = ref

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def content(self, text):
        return [t.id for t in self.client.tokenize([text], model="plain",
                                                   add_special_tokens=False).inputs[0].tokens]

    def served(self, text, model, role, tau=1.0, **options):
        response = self.client.embed([text], model=model, temperature=tau, input_role=role,
                                     **options)
        return torch.tensor(multi_vector_rows(response.documents[0].multi_vector))

    def assertRowsClose(self, got, want, what):
        self.assertEqual(tuple(got.shape), tuple(want.shape), what)
        worst = float((got - want).abs().max())
        self.assertLessEqual(worst, TOLERANCE, what)
        return worst

    def test_queries_and_documents_match_the_published_encoding(self):
        for model in ("pylate", "attend", "stanford"):
            ref = self.refs[model]
            for tau in (1.0, 0.7, 0.5):
                for text, query in ((QUERY, True), (DOCUMENT, False)):
                    want, _ = ref.rows(self.content(text), query, tau)
                    got = self.served(text, model, "query" if query else "document", tau)
                    self.assertRowsClose(got, want, f"{model} tau {tau} query {query}")

    def test_a_query_is_cut_and_expanded_to_its_length(self):
        got = self.served(QUERY, "pylate", "query")
        self.assertEqual(got.shape[0], QUERY_LENGTH)  # [CLS] [Q] text [SEP] [MASK]...
        long_query = " ".join(["owl"] * 40)
        want, _ = self.refs["pylate"].rows(self.content(long_query), True)
        self.assertRowsClose(self.served(long_query, "pylate", "query"), want, "long query")

    def test_each_rule_is_caught_when_broken(self):
        """Mutation checks: the reference without each rule differs from what is served."""
        ref = self.refs["pylate"]
        query = self.served(QUERY, "pylate", "query")
        doc = self.served(DOCUMENT, "pylate", "document")
        for what, mutated, got in (
                ("expansion", ref.rows(self.content(QUERY), True, expand=False)[0], query),
                ("marker placement",
                 ref.rows(self.content(QUERY), True, marker_first=True)[0], query),
                ("skiplist", ref.rows(self.content(DOCUMENT), False, skip=False)[0], doc)):
            if mutated.shape == got.shape:
                self.assertGreater(float((mutated - got).abs().max()), 100 * TOLERANCE, what)
            else:
                self.assertNotEqual(mutated.shape[0], got.shape[0], what)
        # Unattended expansion differs from attended (the two models' queries).
        attended = self.served(QUERY, "attend", "query")
        self.assertGreater(float((attended - query).abs().max()), 100 * TOLERANCE)

    def chunked_reference(self, ref, ids, window, tau=1.0):
        """Each chunk encoded alone; [CLS] and the marker from the first, each content token
        once, from the first chunk holding it, the last chunk's [SEP]; skiplist rows dropped."""
        rows = []
        starts = list(range(0, len(ids), window))
        for c, start in enumerate(starts):
            content = ids[start:start + window]
            vectors, kept = ref.rows(content, False, tau, skip=False)
            last = c == len(starts) - 1
            for r, (v, i) in enumerate(zip(vectors, kept)):
                special = r < 2 or r == len(kept) - 1
                if (r < 2 and c == 0) or (not special) or (r == len(kept) - 1 and last):
                    if special or i not in ref.skiplist:
                        rows.append(v)
        return torch.stack(rows)

    def test_a_long_document_keeps_every_token_once_across_its_chunks(self):
        ids = self.content(LONG_DOCUMENT)
        window = DOCUMENT_LENGTH - 3
        self.assertGreater(len(ids), 3 * window)
        for model in ("pylate", "stanford"):
            for tau in (1.0, 0.5):
                want = self.chunked_reference(self.refs[model], ids, window, tau)
                got = self.served(LONG_DOCUMENT, model, "document", tau,
                                  strategy="LONG_TEXT_STRATEGY_CHUNK_MEAN")
                self.assertRowsClose(got, want, f"{model} chunked tau {tau}")

    def test_rerank_scores_by_max_sim_over_whole_documents(self):
        documents = [DOCUMENT, LONG_DOCUMENT, "A fox slept.", ""]
        for model in ("pylate", "stanford"):
            ref = self.refs[model]
            q, _ = ref.rows(self.content(QUERY), True)
            want = []
            for text in documents:
                ids = self.content(text)
                d = (self.chunked_reference(ref, ids, DOCUMENT_LENGTH - 3) if ids
                     else ref.rows(ids, False)[0])
                want.append(max_sim(q, d))
            response = self.client.rerank(QUERY, documents, model=model, top_n=3)
            order = sorted(range(len(want)), key=lambda i: (-want[i], i))[:3]
            self.assertEqual([r.index for r in response.results], order, model)
            for r in response.results:
                self.assertAlmostEqual(r.score, want[r.index], delta=TOLERANCE * 10)
            # Cohere's shape over HTTP gives the same scores.
            body = json.dumps({"query": QUERY, "documents": documents, "model": model}).encode()
            with urllib.request.urlopen(urllib.request.Request(
                    f"http://{self.server.openai_address}/v1/rerank", data=body,
                    headers={"Content-Type": "application/json"})) as reply:
                results = json.load(reply)["results"]
            self.assertEqual(len(results), len(documents))
            for item in results:
                self.assertAlmostEqual(item["relevance_score"], want[item["index"]],
                                       delta=TOLERANCE * 10)

    def test_token_pooling_forms_pylates_clusters(self):
        for factor in (2, 3):
            whole = self.served(LONG_DOCUMENT, "pylate", "document")
            pooled = self.served(LONG_DOCUMENT, "pylate", "document", pool_factor=factor)
            clusters = pylate_pool(whole, factor)
            self.assertEqual(pooled.shape[0], 1 + len(clusters), factor)
            self.assertRowsClose(pooled[:1], whole[:1], "protected [CLS]")
            # Each served vector is one cluster's mean: the same sets of members.
            means = torch.stack([whole[rows].mean(0) for rows in clusters])
            for v in pooled[1:]:
                self.assertLessEqual(float((means - v).abs().max(dim=1).values.min()), 1e-5)
            got = {tuple(sorted(rows)) for rows in clusters}
            nearest = {tuple(clusters[int((means - v).abs().max(dim=1).values.argmin())])
                       for v in pooled[1:]}
            self.assertEqual(nearest, got, factor)

    def test_encodings_carry_the_same_vectors(self):
        whole = self.served(DOCUMENT, "stanford", "document")
        for encoding, bound in (("float16", 1e-3), ("int8", 1.0 / 127), ("binary", 0)):
            got = self.served(DOCUMENT, "stanford", "document", multi_vector_encoding=encoding)
            want = (whole > 0).float() if encoding == "binary" else whole
            self.assertLessEqual(float((got - want).abs().max()), bound, encoding)

    def test_refusals_name_the_field(self):
        cases = (
            (dict(model="plain", input_role="query"), "input_role"),
            (dict(model="pylate", outputs=["dense"]), "outputs[0]"),
            (dict(model="pylate", input_role="query", chunk_tokens=4), "chunk_tokens"),
            (dict(model="pylate", input_role="query", pool_factor=2), "pool_factor"),
            (dict(model="pylate", pool_factor=0), "pool_factor"),
        )
        for options, field in cases:
            with self.assertRaises(grpc.RpcError) as caught:
                self.client.embed([QUERY], **options)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(field, caught.exception.details())

    def test_model_info_describes_the_layout(self):
        models = {m.name: m for m in self.client.list_models().models}
        for name, layout in (("pylate", "PyLate"), ("stanford", "Stanford ColBERT")):
            info = models[name].late_interaction
            self.assertIn(layout, info.layout)
            self.assertEqual((info.query_length, info.document_length),
                             (QUERY_LENGTH, DOCUMENT_LENGTH))
            self.assertEqual(models[name].multi_vector_dimensions, DIM)
        self.assertFalse(models["plain"].HasField("late_interaction"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
