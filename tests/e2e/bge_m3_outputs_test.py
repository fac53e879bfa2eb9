#!/usr/bin/python3
"""bge-m3's three outputs (dense, sparse, multi-vector) from a real server, against a torch
reference written from FlagEmbedding's published formulas, on a bge-m3-shaped model: the XLM-R
demo writer's checkpoint plus head files written by torch.save (and safetensors copies).

usage: bge_m3_outputs_test.py SERVER_BINARY WRITE_DEMO_MODEL
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import torch
from torch import nn

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
import grpc  # noqa: E402
from bge_m3_model import (Reference, add_heads, make_heads, write_base_model,  # noqa: E402
                          write_safetensors)
from embedding_client import (EmbeddingClient, colbert_score, hybrid_score,  # noqa: E402
                              lexical_score, multi_vector_rows, sparse_weights)
from server_runner import ServerRunner  # noqa: E402

BINARY, WRITER = sys.argv[1], sys.argv[2]
NODE_EXAMPLE = os.path.join(HERE, "..", "..", "client", "node", "hybrid_search_example.js")
TOLERANCE = 1e-5
WINDOW = 64  # content tokens of write_base_model's window
# With a literal </s>, an id the sparse map must drop (and a character only bytes spell).
TEXT = ("The river bank was flooded after the storm \U0001F989, and the old bank on Main "
        "Street closed its doors for the week.</s>")
LONG_TEXT = " ".join(
    ["Deep in the forest an owl watched the moonlit clearing while foxes hunted mice."] * 14)


def split_ranges(tokens, size, overlap):
    if tokens <= size:
        return [(0, tokens)]
    out, start = [], 0
    while True:
        out.append((start, min(start + size, tokens)))
        if start + size >= tokens:
            return out
        start += size - overlap


def late_windows(tokens, window):
    """Windows overlapping by a quarter, the last ending at the document end; each token takes
    its states from the window it sits most centrally in (the later one on a tie)."""
    if tokens <= window:
        windows = [(0, tokens)]
    else:
        windows, start, stride = [], 0, max(1, window - window // 4)
        while True:
            begin = min(start, tokens - window)
            windows.append((begin, begin + window))
            if begin + window >= tokens:
                break
            start += stride
    owner = []
    for t in range(tokens):
        best = max((min(t - b, e - 1 - t), i) for i, (b, e) in enumerate(windows) if b <= t < e)
        owner.append(best[1])
    return windows, owner


def merge_max(maps):
    out = {}
    for m in maps:
        for i, w in m.items():
            out[i] = max(out.get(i, 0.0), w)
    return out


class BgeM3OutputsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bge-m3-")
        base = os.path.join(cls.tmp, "base")
        write_base_model(WRITER, base)
        cls.sparse, cls.colbert = make_heads(64)
        cls.pt_dir = add_heads(base, os.path.join(cls.tmp, "m3-pt"), cls.sparse, cls.colbert,
                               "pt")
        cls.st_dir = add_heads(base, os.path.join(cls.tmp, "m3-st"), cls.sparse, cls.colbert,
                               "safetensors")
        cls.server = ServerRunner(BINARY, [f"--model=m3={cls.pt_dir}",
                                           f"--model=m3st={cls.st_dir}",
                                           f"--model=plain={base}",
                                           "--max-response-bytes=2000000"])
        cls.client = EmbeddingClient(cls.server.grpc_address)
        with_specials = cls.client.tokenize([""], model="m3").inputs[0].tokens
        cls.prefix, cls.suffix = [with_specials[0].id], [with_specials[-1].id]
        # <s>, </s>, <pad>, <unk>: the ids FlagEmbedding drops from the sparse map.
        cls.reference = Reference(cls.pt_dir, cls.sparse, cls.colbert)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def ids(self, text, model="m3"):
        return [t.id for t in self.client.tokenize([text], model=model,
                                                   add_special_tokens=False).inputs[0].tokens]

    def assert_sparse(self, got, expected):
        self.assertEqual(list(got.token_ids), sorted(expected))
        for i, w in zip(got.token_ids, got.weights):
            self.assertAlmostEqual(w, expected[i], delta=TOLERANCE)

    def assert_rows(self, got, expected_rows, spans=None):
        rows = multi_vector_rows(got)
        self.assertEqual(len(rows), len(expected_rows))
        for r, (a, b) in enumerate(zip(rows, expected_rows)):
            self.assertLessEqual(max(abs(x - y) for x, y in zip(a, b.tolist())), TOLERANCE, r)
        if spans is not None:
            self.assertEqual([(s.start, s.end) for s in got.token_spans], spans)

    # One window: all three outputs, at tau 1 and 0.5, from .pt heads and safetensors copies.
    def test_one_window_matches_reference(self):
        ids = self.ids(TEXT)
        self.assertIn(2, ids)  # </s>
        for model in ("m3", "m3st"):
            for tau in (1.0, 0.5):
                with self.subTest(model=model, tau=tau):
                    doc = self.client.embed([TEXT], model=model, temperature=tau,
                                            outputs=["dense", "sparse", "multi_vector"]
                                            ).documents[0]
                    dense, weights, vectors = self.reference.sequence(
                        ids, self.prefix, self.suffix, tau)
                    self.assertLessEqual(
                        max(abs(a - b) for a, b in zip(doc.vector, dense.tolist())), TOLERANCE)
                    self.assert_sparse(doc.sparse, self.reference.sparse_map(ids, weights[1:-1]))
                    # Every token after <s>, </s> kept: n - 1 vectors.
                    spans = [(t, t + 1) for t in range(len(ids))] + [(len(ids), len(ids))]
                    self.assert_rows(doc.multi_vector, vectors[1:], spans)

    def test_sparse_tokens_are_the_vocabulary_text(self):
        tokens = {t.id: t.text for t in self.client.tokenize(
            [TEXT], model="m3", add_special_tokens=False).inputs[0].tokens}
        doc = self.client.embed([TEXT], model="m3", outputs=["sparse"]).documents[0]
        self.assertGreater(len(doc.sparse.token_ids), 3)
        for i, text in zip(doc.sparse.token_ids, doc.sparse.tokens):
            self.assertEqual(text, tokens[i])

    def test_only_the_outputs_asked_for(self):
        doc = self.client.embed([TEXT], model="m3", outputs=["sparse"]).documents[0]
        self.assertEqual(len(doc.vector), 0)
        self.assertGreater(len(doc.sparse.token_ids), 0)
        self.assertFalse(doc.HasField("multi_vector"))
        dense_only = self.client.embed([TEXT], model="m3").documents[0]
        self.assertEqual(len(dense_only.vector), 64)
        self.assertFalse(dense_only.HasField("sparse"))

    # A document longer than the window, every strategy, against the reference chunk by chunk.
    def test_long_document_every_strategy(self):
        ids = self.ids(LONG_TEXT)
        n = len(ids)
        self.assertGreater(n, 2 * WINDOW)
        ref = self.reference
        for strategy, chunk, overlap in (("TRUNCATE", None, None), ("CHUNK_MEAN", 48, 16),
                                         ("CHUNK_WEIGHTED_MEAN", 48, 0), ("CHUNK_MAX", 40, 8),
                                         ("CHUNK_ALL", 48, 16), ("LATE_CHUNKING", 40, 8)):
            for tau in (1.0, 0.5):
                with self.subTest(strategy=strategy, tau=tau):
                    response = self.client.embed(
                        [LONG_TEXT], model="m3", temperature=tau,
                        strategy="LONG_TEXT_STRATEGY_" + strategy, chunk_tokens=chunk,
                        chunk_overlap_tokens=overlap, outputs=["sparse", "multi_vector"])
                    doc = response.documents[0]
                    if strategy == "LATE_CHUNKING":
                        self.check_late(doc, ids, chunk, overlap, tau)
                        continue
                    chunks = ([(0, WINDOW)] if strategy == "TRUNCATE"
                              else split_ranges(n, chunk, overlap))
                    maps, rows, spans, covered = [], [], [], 0
                    for c, (b, e) in enumerate(chunks):
                        _, w, v = ref.sequence(ids[b:e], self.prefix, self.suffix, tau)
                        maps.append(ref.sparse_map(ids[b:e], w[1:-1]))
                        for t in range(max(b, covered), e):
                            rows.append(v[1 + t - b])
                            spans.append((t, t + 1))
                        covered = max(covered, e)
                        if strategy == "CHUNK_ALL":
                            self.assert_sparse(doc.chunks[c].sparse, maps[-1])
                            self.assert_rows(doc.chunks[c].multi_vector, v[1:],
                                             [(t, t + 1) for t in range(b, e)] + [(e, e)])
                    last = chunks[-1]
                    _, _, v = ref.sequence(ids[last[0]:last[1]], self.prefix, self.suffix, tau)
                    rows.append(v[-1])
                    spans.append((last[1], last[1]))
                    self.assert_sparse(doc.sparse, merge_max(maps))
                    self.assert_rows(doc.multi_vector, rows, spans)

    def check_late(self, doc, ids, chunk, overlap, tau):
        n, ref = len(ids), self.reference
        windows, owner = late_windows(n, WINDOW)
        outputs = [ref.sequence(ids[b:e], self.prefix, self.suffix, tau) for b, e in windows]
        weight = [outputs[owner[t]][1][1 + t - windows[owner[t]][0]].item() for t in range(n)]
        vector = [outputs[owner[t]][2][1 + t - windows[owner[t]][0]] for t in range(n)]
        for c, (b, e) in enumerate(split_ranges(n, chunk, overlap)):
            self.assert_sparse(doc.chunks[c].sparse,
                               ref.sparse_map(ids[b:e], torch.tensor(weight[b:e])))
            self.assert_rows(doc.chunks[c].multi_vector, vector[b:e],
                             [(t, t + 1) for t in range(b, e)])
        self.assert_sparse(doc.sparse, ref.sparse_map(ids, torch.tensor(weight)))
        self.assert_rows(doc.multi_vector, vector + [outputs[-1][2][-1]],
                         [(t, t + 1) for t in range(n)] + [(n, n)])

    def test_encodings_and_max_vectors(self):
        full = self.client.embed([TEXT], model="m3", outputs=["multi_vector"]).documents[0]
        rows = multi_vector_rows(full.multi_vector)
        half = self.client.embed([TEXT], model="m3", outputs=["multi_vector"],
                                 multi_vector_encoding="float16").documents[0].multi_vector
        self.assertEqual(len(half.values), 0)
        self.assertEqual(len(half.data), 2 * len(rows) * 64)
        for a, b in zip(multi_vector_rows(half), rows):
            self.assertLessEqual(max(abs(x - y) for x, y in zip(a, b)), 1e-3)
        q8 = self.client.embed([TEXT], model="m3", outputs=["multi_vector"],
                               multi_vector_encoding="int8").documents[0].multi_vector
        self.assertEqual(len(q8.data), len(rows) * 64)
        self.assertEqual(len(q8.scales), len(rows))
        for a, b, scale in zip(multi_vector_rows(q8), rows, q8.scales):
            self.assertAlmostEqual(scale, max(abs(x) for x in b) / 127, delta=1e-7)
            self.assertLessEqual(max(abs(x - y) for x, y in zip(a, b)), scale / 2 + 1e-7)
        # max_vectors: runs of neighbours averaged and re-normalised, spans joined.
        k = 5
        pooled = self.client.embed([TEXT], model="m3", outputs=["multi_vector"],
                                   max_vectors=k).documents[0].multi_vector
        self.assertEqual(pooled.count, k)
        n = len(rows)
        for g, row in enumerate(multi_vector_rows(pooled)):
            group = rows[g * n // k:(g + 1) * n // k]
            mean = torch.nn.functional.normalize(torch.tensor(group).sum(0), dim=0)
            self.assertLessEqual(max(abs(x - y) for x, y in zip(row, mean.tolist())), 1e-5)
            self.assertEqual(pooled.token_spans[g].start,
                             full.multi_vector.token_spans[g * n // k].start)
            self.assertEqual(pooled.token_spans[g].end,
                             full.multi_vector.token_spans[(g + 1) * n // k - 1].end)

    def test_multi_vectors_stream_on_embed_stream(self):
        messages, enums = self.client.messages, self.client.enums
        items = []
        for i, encoding in enumerate(("VECTOR_ENCODING_FLOAT32", "VECTOR_ENCODING_INT8")):
            request = messages["embedding.v1.EmbedRequest"](
                model="m3", inputs=[TEXT, "owls"], multi_vector_encoding=enums[encoding],
                outputs=[enums["EMBEDDING_OUTPUT_SPARSE"], enums["EMBEDDING_OUTPUT_MULTI_VECTOR"]])
            items.append(messages["embedding.v1.EmbedStreamRequest"](request_id=str(i),
                                                                     request=request))
        stream = self.client.channel.stream_stream(
            "/embedding.v1.EmbeddingService/EmbedStream",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=messages["embedding.v1.EmbedStreamResponse"].FromString)
        answers = {a.request_id: a.response for a in stream(iter(items), timeout=60)}
        unary = self.client.embed([TEXT, "owls"], model="m3", outputs=["sparse", "multi_vector"])
        for request_id in ("0", "1"):
            for got, want in zip(answers[request_id].documents, unary.documents):
                self.assertEqual(list(got.sparse.token_ids), list(want.sparse.token_ids))
                rows, expected = multi_vector_rows(got.multi_vector), multi_vector_rows(
                    want.multi_vector)
                self.assertEqual(len(rows), len(expected))
                tolerance = 1e-7 if request_id == "0" else max(got.multi_vector.scales) / 2 + 1e-7
                for a, b in zip(rows, expected):
                    self.assertLessEqual(max(abs(x - y) for x, y in zip(a, b)), tolerance)

    def test_model_info_lists_outputs(self):
        models = {m.name: m for m in self.client.list_models().models}
        enums = self.client.enums
        self.assertEqual(list(models["m3"].outputs),
                         [enums["EMBEDDING_OUTPUT_DENSE"], enums["EMBEDDING_OUTPUT_SPARSE"],
                          enums["EMBEDDING_OUTPUT_MULTI_VECTOR"]])
        self.assertEqual(models["m3"].multi_vector_dimensions, 64)
        self.assertEqual(list(models["plain"].outputs), [enums["EMBEDDING_OUTPUT_DENSE"]])
        self.assertEqual(models["plain"].multi_vector_dimensions, 0)

    def assert_invalid(self, field, **kwargs):
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.embed([TEXT], **kwargs)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(caught.exception.details().startswith(field + ":"),
                        caught.exception.details())
        return caught.exception.details()

    def test_refusals_name_the_field(self):
        message = self.assert_invalid("outputs[1]", model="plain", outputs=["dense", "sparse"])
        self.assertIn("sparse_linear", message)
        self.assertIn("EMBEDDING_OUTPUT_DENSE", message)
        self.assert_invalid("outputs[0]", model="plain", outputs=["multi_vector"])
        self.assert_invalid("outputs[1]", model="m3", outputs=["sparse", "sparse"])
        self.assert_invalid("max_vectors", model="m3", outputs=["sparse"], max_vectors=4)
        self.assert_invalid("max_vectors", model="m3", outputs=["multi_vector"], max_vectors=0)
        self.assert_invalid("multi_vector_encoding", model="m3", outputs=["dense"],
                            multi_vector_encoding="int8")
        request = self.client.messages["embedding.v1.EmbedRequest"](model="m3", inputs=[TEXT])
        request.outputs.append(9)
        with self.assertRaises(grpc.RpcError) as caught:
            self.client._unary("Embed", request, "embedding.v1.EmbedResponse")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(caught.exception.details().startswith("outputs[0]: unknown value 9"))

    def metric(self, prefix):
        """The value of the first /metrics sample whose line starts with `prefix` (0 if none)."""
        with urllib.request.urlopen(f"http://{self.server.http_address}/metrics") as r:
            for line in r.read().decode().splitlines():
                if line.startswith(prefix):
                    return float(line.split()[-1])
        return 0.0

    def batches(self):
        return self.metric("embedding_batches_total")

    def test_metrics_count_sparse_weights_and_vectors_per_length_bucket(self):
        labels = '{length_bucket="0-63",model="m3st"}'
        names = ("embedding_sparse_weights_per_document_sum" + labels,
                 "embedding_sparse_weights_per_document_count" + labels,
                 "embedding_multi_vectors_per_document_sum" + labels)
        before = [self.metric(n) for n in names]
        docs = self.client.embed([TEXT, "owls"], model="m3st",
                                 outputs=["sparse", "multi_vector"]).documents
        after = [self.metric(n) for n in names]
        self.assertEqual(after[0] - before[0], sum(len(d.sparse.token_ids) for d in docs))
        self.assertEqual(after[1] - before[1], 2)
        self.assertEqual(after[2] - before[2], sum(d.multi_vector.count for d in docs))

    def test_oversized_response_is_refused_before_any_forward_pass(self):
        before = self.batches()
        # 40 documents x ~180 vectors x 64 x 4 bytes: about 1.8 MB of fp32 multi-vectors each way
        # around the 2,000,000-byte bound; with chunks twice that.
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.embed([LONG_TEXT] * 40, model="m3", outputs=["multi_vector"],
                              strategy="LONG_TEXT_STRATEGY_CHUNK_ALL", chunk_tokens=48)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(caught.exception.details().startswith("outputs:"))
        self.assertIn("--max-response-bytes", caught.exception.details())
        self.assertIn("[0, 2000000]", caught.exception.details())
        self.assertEqual(self.batches(), before)
        # The same request in int8, pooled to 16 vectors, fits.
        response = self.client.embed([LONG_TEXT] * 40, model="m3", outputs=["multi_vector"],
                                     strategy="LONG_TEXT_STRATEGY_CHUNK_ALL", chunk_tokens=48,
                                     multi_vector_encoding="int8", max_vectors=16)
        self.assertEqual(response.documents[39].multi_vector.count, 16)

    def test_scoring_helpers_rank_the_relevant_document_first(self):
        docs = ["the bank raised interest rates on savings accounts",
                "owls hunt mice in the forest at night",
                "rivers flood their banks after heavy rain"]
        response = self.client.embed(docs + ["interest rates at the bank"], model="m3",
                                     outputs=["dense", "sparse", "multi_vector"])
        *d, q = response.documents
        # Lexical: the shared tokens' weight products, computed here from the maps.
        for doc in d:
            qw, dw = sparse_weights(q.sparse), sparse_weights(doc.sparse)
            self.assertAlmostEqual(lexical_score(q.sparse, doc.sparse),
                                   sum(w * dw[t] for t, w in qw.items() if t in dw), places=6)
            qr, dr = (torch.tensor(multi_vector_rows(x.multi_vector)) for x in (q, doc))
            self.assertAlmostEqual(colbert_score(q.multi_vector, doc.multi_vector),
                                   (qr @ dr.T).max(1).values.mean().item(), places=5)
            dense = sum(a * b for a, b in zip(q.vector, doc.vector))
            self.assertAlmostEqual(
                hybrid_score(q, doc),
                (0.4 * dense + 0.2 * lexical_score(q.sparse, doc.sparse) +
                 0.4 * colbert_score(q.multi_vector, doc.multi_vector)), places=5)
        # The demo model's weights are random, but lexical overlap still ranks: "bank",
        # "interest", "rates" appear only in the first document.
        scores = [lexical_score(q.sparse, doc.sparse) for doc in d]
        self.assertEqual(scores.index(max(scores)), 0)

    def test_node_hybrid_search_example_scores_as_python_does(self):
        docs = ["the bank raised interest rates on savings accounts",
                "owls hunt mice in the forest at night",
                "rivers flood their banks after heavy rain"]
        query = "interest rates at the bank"
        for encoding in ("float32", "float16", "int8"):
            with self.subTest(encoding=encoding):
                ranked = json.loads(subprocess.run(
                    ["node", NODE_EXAMPLE, self.server.grpc_address, "m3", encoding, query,
                     *docs], check=True, capture_output=True, text=True, timeout=120).stdout)
                response = self.client.embed([query] + docs, model="m3",
                                             outputs=["dense", "sparse", "multi_vector"],
                                             multi_vector_encoding=encoding)
                q, *d = response.documents
                self.assertEqual([r["index"] for r in ranked],
                                 sorted(range(3), key=lambda i: -hybrid_score(q, d[i])))
                for r in ranked:
                    doc = d[r["index"]]
                    self.assertAlmostEqual(r["lexical"], lexical_score(q.sparse, doc.sparse),
                                           places=6)
                    self.assertAlmostEqual(r["colbert"],
                                           colbert_score(q.multi_vector, doc.multi_vector),
                                           places=6)
                    self.assertAlmostEqual(r["hybrid"], hybrid_score(q, doc), places=6)


class HostileHeadsTest(unittest.TestCase):
    """Head files that are not what they claim are refused, naming the file and what is wrong;
    a served model whose new version carries one keeps serving the version before."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bge-m3-hostile-")
        cls.base = os.path.join(cls.tmp, "base")
        write_base_model(WRITER, cls.base, hidden=32, layers=1, heads=2)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def model_with(self, name, write):
        d = os.path.join(self.tmp, name)
        shutil.copytree(self.base, d)
        write(d)
        return d

    def start_fails(self, model_dir):
        result = subprocess.run([BINARY, "--listen=127.0.0.1:0", "--http-listen=127.0.0.1:0",
                                 f"--model=m={model_dir}"], capture_output=True, text=True,
                                timeout=60)
        self.assertNotEqual(result.returncode, 0)
        return result.stdout + result.stderr

    def test_each_hostile_file_is_refused_with_a_clear_message(self):
        marker = os.path.join(self.tmp, "pwned")

        class Evil:
            def __reduce__(self):
                return (os.system, (f"touch {marker}",))

        def evil(d):
            torch.save({"weight": torch.zeros(1, 32), "bias": Evil()},
                       os.path.join(d, "sparse_linear.pt"))

        def wrong_shape(d):
            torch.save(nn.Linear(32, 2).state_dict(), os.path.join(d, "sparse_linear.pt"))

        def extra(d):
            state = dict(nn.Linear(32, 32).state_dict(), scale=torch.ones(1))
            torch.save(state, os.path.join(d, "colbert_linear.pt"))

        def missing(d):
            write_safetensors(os.path.join(d, "colbert_linear.safetensors"),
                              {"weight": torch.zeros(32, 32)})

        def truncated(d):
            path = os.path.join(d, "colbert_linear.pt")
            torch.save(nn.Linear(32, 32).state_dict(), path)
            with open(path, "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(data[:len(data) // 2])

        def nan(d):
            linear = nn.Linear(32, 1)
            with torch.no_grad():
                linear.weight[0, 3] = float("nan")
            torch.save(linear.state_dict(), os.path.join(d, "sparse_linear.pt"))

        cases = [("evil", evil, ["sparse_linear.pt", "posix.system", "refused"]),
                 ("wrong_shape", wrong_shape, ["sparse_linear.pt", "'weight'", "[2, 32]"]),
                 ("extra", extra, ["colbert_linear.pt", "unexpected tensor 'scale'"]),
                 ("missing", missing, ["colbert_linear.safetensors", "missing tensor 'bias'"]),
                 ("truncated", truncated, ["colbert_linear.pt"]),
                 ("nan", nan, ["sparse_linear.pt", "'weight'", "NaN"])]
        for name, write, expected in cases:
            with self.subTest(name):
                log = self.start_fails(self.model_with(name, write))
                for text in expected:
                    self.assertIn(text, log)
        self.assertFalse(os.path.exists(marker), "the pickle ran code")

    def test_a_hostile_new_version_leaves_the_old_one_serving(self):
        root = os.path.join(self.tmp, "versioned")
        os.makedirs(root)
        shutil.copytree(self.base, os.path.join(root, "1"))
        sparse, colbert = make_heads(32)
        torch.save(sparse.state_dict(), os.path.join(root, "1", "sparse_linear.pt"))
        with ServerRunner(BINARY, [f"--model=m={root}", "--model-poll-interval-s=0.2"]) as server:
            client = EmbeddingClient(server.grpc_address)
            self.assertEqual(client.list_models().models[0].version, "1")
            shutil.copytree(os.path.join(root, "1"), os.path.join(root, "2"))
            torch.save(nn.Linear(32, 3).state_dict(), os.path.join(root, "2", "sparse_linear.pt"))
            time.sleep(2.0)  # several polls: the version settles, loads and fails
            info = client.list_models().models[0]
            self.assertEqual(info.version, "1")
            doc = client.embed([TEXT], outputs=["sparse"]).documents[0]
            self.assertGreater(len(doc.sparse.token_ids), 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
