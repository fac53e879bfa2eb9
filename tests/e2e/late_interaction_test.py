#!/usr/bin/python3
"""Late-interaction (ColBERT) models from a real server against a torch reference written from
the published code (PyLate's ColBERT.preprocess / encode, ColBERT's QueryTokenizer /
DocTokenizer / Checkpoint.query / doc, MaxSim), on checkpoints laid out as the Hub holds them:
PyLate's (sentence-transformers files, "[Q] " / "[D] " added to the tokenizer, a Dense module
without bias) and Stanford ColBERT's (HF_ColBERT, `bert.` weights with `linear.weight`,
artifact.metadata, [unused0] / [unused1] markers); PyLate's over BERT, over ModernBERT
(GTE-ModernColBERT's family: banded layers and rotary positions around the hidden expansion)
and over XLM-RoBERTa with rotary positions (jina-colbert-v2's, as jina-embeddings-v3 lays it out).

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
import urllib.error
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
from compare_encoder import read_safetensors, reference_class  # noqa: E402
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


def write_base(out, architecture):
    subprocess.run([WRITER, f"--out={out}", f"--architecture={architecture}", "--layers=3",
                    f"--hidden={HIDDEN}", "--heads=4", "--max_positions=66", "--pooling=cls"],
                   check=True, capture_output=True)


def grow_embeddings(weights, old, new):
    """`new` more rows in every tensor of the word embedding table that has one per token:
    random rows for the table (BERT's word_embeddings, ModernBERT's tok_embeddings, a
    parametrised table's `original`), zeros for a LoRA's per-token factor (jina's lora_A)."""
    torch.manual_seed(old)
    for name, t in weights.items():
        if "word_embeddings" not in name and "tok_embeddings" not in name:
            continue
        dim = list(t.shape).index(old) if old in t.shape else None
        if dim is None:
            continue
        shape = list(t.shape)
        shape[dim] = new
        rows = torch.zeros(shape) if "lora_A" in name else 0.02 * torch.randn(shape)
        weights[name] = torch.cat([t, rows], dim=dim)


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
    grow_embeddings(weights, first, len(tokens))
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


def vocabulary(path):
    """tokenizer.json's tokens by id: WordPiece's map, Unigram's list, the added tokens."""
    with open(path) as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    if isinstance(vocab, list):
        vocab = {piece: i for i, (piece, _) in enumerate(vocab)}
    vocab.update({t["content"]: t["id"] for t in tok["added_tokens"]})
    return vocab


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
    """The published encoding on the family's torch.nn reference: the marker after [CLS]; a query cut to
    query_length and padded with [MASK] to it (attended or not); a document cut to
    document_length; every row projected and L2-normalised; a document's skiplist rows dropped
    after encoding."""

    def __init__(self, model_dir, projection, markers, cls, sep, mask, skiplist, attend=False):
        """`model_dir`: a PyLate folder (its config and grown checkpoint, the family's own
        names); Stanford's is read through the PyLate copy of its base, the same weights."""
        with open(os.path.join(model_dir, "config.json")) as f:
            self.config = json.load(f)
        self.weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.projection, self.markers = projection, markers
        self.cls, self.sep, self.mask, self.skiplist, self.attend = cls, sep, mask, skiplist, attend
        self.nets = {}

    def net(self, tau):
        if tau not in self.nets:
            self.nets[tau] = reference_class(self.config)(self.config, self.weights, tau)
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
        net = self.net(tau)
        h = net(ids) if attended is None else net(ids, attended=attended)
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
        torch.manual_seed(11)
        cls.projection = torch.randn(DIM, HIDDEN) / HIDDEN ** 0.5
        bases = {}
        for family, architecture in (("bert", "bert"), ("modernbert", "modernbert"),
                                     ("xlmr", "xlm-roberta-flash")):
            bases[family] = os.path.join(cls.tmp, f"{family}-base")
            write_base(bases[family], architecture)
        # name: (folder writer, base family, attend_to_expansion_tokens, reference folder)
        models = {
            "pylate": (write_pylate, "bert", False, "pylate"),
            "attend": (write_pylate, "bert", True, "attend"),
            # GTE-ModernColBERT's family: banded layers and rotary positions.
            "modern": (write_pylate, "modernbert", False, "modern"),
            # jina-colbert-v2's: XLM-R with rotary positions (jina-embeddings-v3's layout).
            "jina": (write_pylate, "xlmr", True, "jina"),
            "stanford": (write_stanford, "bert", False, "pylate"),
        }
        markers = {}
        for name, (writer, family, attend, _) in models.items():
            out = os.path.join(cls.tmp, name)
            markers[name] = (writer(bases[family], out, cls.projection, attend)
                             if writer is write_pylate
                             else writer(bases[family], out, cls.projection))
        cls.server = ServerRunner(BINARY, [f"--model={name}={cls.tmp}/{name}" for name in models]
                                  + [f"--model=plain={bases['bert']}",
                                     "--openai-listen=127.0.0.1:0"])
        cls.client = EmbeddingClient(cls.server.grpc_address)
        cls.refs = {}
        for name, (_, family, attend, reference_dir) in models.items():
            # The post-processor's first and last tokens, around the document marker.
            specials = cls.client.tokenize([""], model=name).inputs[0].tokens
            vocab = vocabulary(os.path.join(bases[family], "tokenizer.json"))
            unknown = vocab.get("[UNK]", vocab.get("<unk>"))
            # convert_tokens_to_ids: a word outside the vocabulary is the unknown token.
            skiplist = {vocab.get(c, unknown) for c in string.punctuation}
            cls.refs[name] = Reference(os.path.join(cls.tmp, reference_dir), cls.projection,
                                       markers[name], specials[0].id, specials[-1].id,
                                       vocab.get("[MASK]", vocab.get("<mask>")), skiplist,
                                       attend=attend)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def content(self, text, model="plain"):
        return [t.id for t in self.client.tokenize([text], model=model,
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
        for model in ("pylate", "attend", "modern", "jina", "stanford"):
            ref = self.refs[model]
            for tau in (1.0, 0.7, 0.5):
                for text, query in ((QUERY, True), (DOCUMENT, False)):
                    want, _ = ref.rows(self.content(text, model), query, tau)
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
        window = DOCUMENT_LENGTH - 3
        for model in ("pylate", "modern", "jina", "stanford"):
            ids = self.content(LONG_DOCUMENT, model)
            self.assertGreater(len(ids), 3 * window)
            for tau in (1.0, 0.5):
                want = self.chunked_reference(self.refs[model], ids, window, tau)
                got = self.served(LONG_DOCUMENT, model, "document", tau,
                                  strategy="LONG_TEXT_STRATEGY_CHUNK_MEAN")
                self.assertRowsClose(got, want, f"{model} chunked tau {tau}")

    def test_rerank_scores_by_max_sim_over_whole_documents(self):
        documents = [DOCUMENT, LONG_DOCUMENT, "A fox slept.", ""]
        for model in ("pylate", "modern", "jina", "stanford"):
            ref = self.refs[model]
            q, _ = ref.rows(self.content(QUERY, model), True)
            want = []
            for text in documents:
                ids = self.content(text, model)
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

    def assertBatchInvariant(self, client, dtype):
        texts = [QUERY, LONG_DOCUMENT, DOCUMENT, "owl"]
        for model in ("pylate", "modern", "jina"):
            for role in ("query", "document"):
                batched = client.embed(texts, model=model, input_role=role).documents
                for text, got in zip(texts, batched):
                    alone = client.embed([text], model=model, input_role=role).documents[0]
                    self.assertEqual(multi_vector_rows(got.multi_vector),
                                     multi_vector_rows(alone.multi_vector),
                                     f"{dtype} {model} {role}")

    def test_a_vector_is_the_same_alone_and_in_any_batch(self):
        self.assertBatchInvariant(self.client, "fp32")
        with open("/proc/cpuinfo") as f:
            flags = f.read()
        dtypes = ["int8"] + (["bf16"] if "avx512_bf16" in flags or "amx_bf16" in flags else [])
        for dtype in dtypes:
            with ServerRunner(BINARY, [f"--model={m}={self.tmp}/{m}"
                                       for m in ("pylate", "modern", "jina")]
                              + [f"--dtype={dtype}"]) as server:
                self.assertBatchInvariant(EmbeddingClient(server.grpc_address), dtype)

    def test_every_queued_token_and_request_comes_back(self):
        self.client.rerank(QUERY, [LONG_DOCUMENT] * 3, model="pylate")
        self.client.embed([LONG_DOCUMENT, QUERY], model="modern", input_role="query")
        with urllib.request.urlopen(f"http://{self.server.http_address}/metrics") as reply:
            metrics = reply.read().decode()
        for gauge in ("embedding_queued_tokens", "embedding_in_flight_requests"):
            values = [line.split()[-1] for line in metrics.splitlines()
                      if line.startswith(gauge + " ") or line.startswith(gauge + "{")]
            self.assertEqual(values, ["0"], gauge)

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

    def test_cohere_input_type_picks_the_role(self):
        def post(path, body):
            request = urllib.request.Request(
                f"http://{self.server.openai_address}{path}", data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request) as reply:
                    return reply.status, json.load(reply)
            except urllib.error.HTTPError as e:
                return e.code, json.load(e)

        def vectors(**options):
            status, answer = post("/v1/embeddings", {"model": "pylate", "input": [QUERY],
                                                     **options})
            self.assertEqual(status, 200, answer)
            return answer["data"][0]["details"]["multi_vector"]

        query = vectors(input_type="search_query")
        self.assertEqual(query, vectors(input_role="query"))
        self.assertEqual(vectors(input_type="search_document"), vectors(input_role="document"))
        self.assertNotEqual(query, vectors(input_type="search_document"))
        # Cohere's /v2/embed returns one vector per text, which a late-interaction model lacks.
        status, answer = post("/v2/embed", {"model": "pylate", "texts": [QUERY],
                                            "input_type": "search_query"})
        self.assertEqual(status, 400, answer)
        self.assertEqual(answer["error"]["param"], "embedding_types[0]")

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
