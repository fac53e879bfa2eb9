#!/usr/bin/python3
"""The retrieval demo model: the same bytes on every machine (its files' SHA-256 against the
committed digests), and its quality floor through a real server: unrelated short texts are far
apart, paraphrases find each other, and TempScale visibly changes long texts.

usage: retrieval_demo_quality_test.py SERVER_BINARY MODEL_DIR DATA_DIR
Held-out text: the paraphrase and technical-snippet fixtures (written for this repository) and
the docstrings of Python's standard library (in neither of the model's corpora).
"""
import hashlib
import math
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
sys.path.insert(0, HERE)
from embedding_client import EmbeddingClient  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

SERVER, MODEL, DATA = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, DATA)
import make_corpus  # noqa: E402


def dot(a, b):
    return math.fsum(x * y for x, y in zip(a, b))


def mean_pairwise_cosine(vectors):
    return math.fsum(dot(vectors[i], vectors[j]) for i in range(len(vectors))
                     for j in range(i + 1, len(vectors))) / (len(vectors) * (len(vectors) - 1) / 2)


def technical_snippets():
    with open(os.path.join(DATA, "technical_snippets.txt")) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def paraphrase_pairs():
    with open(os.path.join(DATA, "paraphrases.tsv")) as f:
        return [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]


def stdlib_documents(words):
    """Docstrings of Python's standard library modules, cut to `words` words each."""
    return [" ".join(doc.split()[:words]) for doc in make_corpus.stdlib()
            if len(doc.split()) >= words]


class RetrievalDemoQualityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerRunner(SERVER, [f"--model=demo={MODEL}"])
        cls.client = EmbeddingClient(cls.server.grpc_address)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_files_match_the_committed_digests(self):
        with open(os.path.join(DATA, "model.sha256")) as f:
            pinned = [line.split() for line in f if not line.startswith("#")]
        self.assertEqual(len(pinned), 3)
        for digest, name in pinned:
            with open(os.path.join(MODEL, name), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest, name)

    def vectors(self, texts, **options):
        response = self.client.embed(texts, **options)
        return [list(d.vector) for d in response.documents], response

    def test_unrelated_short_texts_are_far_apart(self):
        firsts = [a for a, _ in paraphrase_pairs()]
        vectors, _ = self.vectors(firsts)
        mean = mean_pairwise_cosine(vectors)
        print(f"mean cosine between {len(firsts)} unrelated short texts: {mean:.3f}")
        self.assertLessEqual(mean, 0.2)

    def test_unrelated_technical_snippets_are_far_apart(self):
        # Held out: written for this repository, on topics from garbage collection to GPS.
        snippets = technical_snippets()
        self.assertGreaterEqual(len(snippets), 40)
        vectors, _ = self.vectors(snippets)
        mean = mean_pairwise_cosine(vectors)
        print(f"mean cosine between {len(snippets)} unrelated technical snippets: {mean:.3f}")
        self.assertLessEqual(mean, 0.2)

    def test_paraphrases_retrieve_each_other(self):
        pairs = paraphrase_pairs()
        left, _ = self.vectors([a for a, _ in pairs])
        right, _ = self.vectors([b for _, b in pairs])
        hits = 0
        for queries, passages in ((left, right), (right, left)):
            for i, q in enumerate(queries):
                scores = [dot(q, p) for p in passages]
                hits += max(range(len(scores)), key=scores.__getitem__) == i
        top1 = hits / (2 * len(pairs))
        mean_paraphrase = math.fsum(dot(a, b) for a, b in zip(left, right)) / len(pairs)
        print(f"paraphrase top-1 {top1:.3f} over {2 * len(pairs)} queries; "
              f"mean paraphrase cosine {mean_paraphrase:.3f}")
        self.assertGreaterEqual(top1, 0.95)

    def test_tempscale_moves_the_256_511_bucket(self):
        docs = stdlib_documents(260)[:40]
        self.assertGreaterEqual(len(docs), 20, "too few standard-library docstrings")
        base, response = self.vectors(docs, temperature=1.0)
        kept = [i for i, d in enumerate(response.documents) if d.length_bucket == "256-511"]
        self.assertGreaterEqual(len(kept), 20)
        sharp, _ = self.vectors([docs[i] for i in kept], temperature=0.5)
        at_one = mean_pairwise_cosine([base[i] for i in kept])
        at_half = mean_pairwise_cosine(sharp)
        print(f"256-511 bucket, {len(kept)} documents: mean cosine {at_one:.3f} at tau=1, "
              f"{at_half:.3f} at tau=0.5")
        self.assertGreaterEqual(abs(at_one - at_half), 0.02)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
