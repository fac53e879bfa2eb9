"""Cohere's /v2/embed against the server's own /v1/embeddings and the stated quantization rules.

Cohere's npm SDK (cohere-ai's CohereClientV2.embed) posts every embedding type, with texts and
with inputs; each compact type is recomputed here from the float vector with numpy (int8 by a
symmetric scale per vector, uint8 = int8 + 128, ubinary = numpy's packbits of v > 0, binary =
ubinary - 128, base64 = the float32 bytes). input_type is checked to pick the model's own
prompt or task (nomic's search_query prompts, jina-embeddings-v3's retrieval.query task),
truncate and max_tokens against /v1/embeddings on the same token ids, and every refusal's
status and field.

usage: cohere_embed_test.py SERVER_BINARY WRITE_DEMO_MODEL
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
from server_runner import ServerRunner, post_json as post  # noqa: E402

BINARY, WRITER = sys.argv[1:3]
NODE_CLIENT = os.path.join(HERE, "cohere", "embed_client.mjs")
TEXTS = ["Owls hunt voles at night.", "Markets fell on Friday.", "",
         "Tawny owls hunt in woodland, barn owls over open fields."]
LONG = " ".join(["herons fish in the shallows below the old mill"] * 20)  # past 62 tokens
TYPES = ["float", "int8", "uint8", "binary", "ubinary", "base64"]


def f32(rows):
    return np.asarray(rows, dtype=np.float32)


class CohereEmbedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cohere-")
        for name, architecture in (("nomic", "nomic_bert"), ("jina", "xlm-roberta-flash"),
                                   ("plain", "bert")):
            subprocess.run([WRITER, f"--out={cls.tmp}/{name}", f"--architecture={architecture}",
                            "--layers=2", "--hidden=64", "--heads=4", "--max_positions=64"],
                           check=True, capture_output=True)
        cls.server = ServerRunner(BINARY, [f"--model={n}={cls.tmp}/{n}"
                                           for n in ("nomic", "jina", "plain")]
                                  + ["--openai-listen=127.0.0.1:0",
                                     "--max-inputs-per-request=8"])
        cls.base = f"http://{cls.server.openai_address}"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def cohere(self, body, status=200):
        code, answer = post(self.base, "/v2/embed", body)
        self.assertEqual(code, status, answer)
        return answer

    def openai(self, body):
        code, answer = post(self.base, "/v1/embeddings", body)
        self.assertEqual(code, 200, answer)
        return f32([d["embedding"] for d in answer["data"]])

    def test_official_client_every_type_by_the_stated_rules(self):
        path = os.path.join(self.tmp, "request.json")
        with open(path, "w") as f:
            json.dump({"model": "nomic", "texts": TEXTS, "inputType": "search_document",
                       "embeddingTypes": TYPES}, f)
        out = json.loads(subprocess.run(["node", NODE_CLIENT, self.base, path], check=True,
                                        capture_output=True, text=True, cwd=HERE).stdout)
        expected = self.openai({"model": "nomic", "input": TEXTS,
                                "prompt_name": "search_document"})
        for form in ("texts", "inputs"):
            answer = out[form]
            embeddings = answer["embeddings"]
            self.assertEqual(sorted(embeddings), sorted(TYPES), form)
            floats = f32(embeddings["float"])
            # Bit for bit what /v1/embeddings gives with the prompt input_type chose.
            np.testing.assert_array_equal(floats, expected, err_msg=form)
            self.assertEqual(answer["texts"], TEXTS)
            self.assertEqual(answer["meta"]["apiVersion"]["version"], "2")
            self.assertGreater(answer["meta"]["billedUnits"]["inputTokens"], 0)
            self.check_compact_types(embeddings, floats)

    def check_compact_types(self, embeddings, floats):
        scales = np.abs(floats).max(axis=1) / 127
        int8 = np.asarray(embeddings["int8"])
        for row, v, s in zip(int8, floats, scales):
            np.testing.assert_array_equal(row, np.clip(np.rint(v / s), -127, 127))
            self.assertLessEqual(np.abs(v - row * s).max(), s / 2 * (1 + 1e-5))
        np.testing.assert_array_equal(np.asarray(embeddings["uint8"]), int8 + 128)
        ubinary = np.packbits(floats > 0, axis=1).astype(int)
        np.testing.assert_array_equal(np.asarray(embeddings["ubinary"]), ubinary)
        np.testing.assert_array_equal(np.asarray(embeddings["binary"]), ubinary - 128)
        decoded = f32([np.frombuffer(base64.b64decode(b), dtype="<f4")
                       for b in embeddings["base64"]])
        np.testing.assert_array_equal(decoded, floats)

    def test_scales_returned_decode_int8_and_uint8(self):
        answer = self.cohere({"model": "plain", "texts": TEXTS, "input_type": "search_query",
                              "embedding_types": ["uint8", "float"]})
        floats = f32(answer["embeddings"]["float"])
        scales = np.asarray(answer["scales"])
        decoded = (np.asarray(answer["embeddings"]["uint8"]) - 128) * scales[:, None]
        self.assertLessEqual(np.abs(decoded - floats).max(), scales.max() / 2 * (1 + 1e-5))
        self.assertEqual(list(answer["embeddings"]), ["float", "uint8"])

    def test_input_type_picks_the_models_prompt_or_task(self):
        cases = [("nomic", "search_query", {"prompt_name": "search_query"}),
                 ("nomic", "classification", {"prompt_name": "classification"}),
                 ("plain", "search_query", {"prompt_name": "query"}),  # E5's names
                 ("plain", "search_document", {"prompt_name": "passage"}),
                 ("jina", "search_query", {"task": "retrieval.query"}),
                 ("jina", "search_document", {"task": "retrieval.passage"}),
                 ("jina", "clustering", {"task": "separation"})]
        for model, input_type, named in cases:
            answer = self.cohere({"model": model, "texts": TEXTS, "input_type": input_type})
            self.assertNotIn("warnings", answer["meta"])
            np.testing.assert_array_equal(
                f32(answer["embeddings"]["float"]),
                self.openai({"model": model, "input": TEXTS, **named}),
                err_msg=f"{model} {input_type}")
        # Different prompts give different vectors, so the comparisons above can fail.
        query = self.cohere({"model": "nomic", "texts": TEXTS[:1], "input_type": "search_query"})
        document = self.cohere({"model": "nomic", "texts": TEXTS[:1],
                                "input_type": "search_document"})
        self.assertFalse(np.array_equal(query["embeddings"]["float"],
                                        document["embeddings"]["float"]))
        # An explicit prompt_name wins over input_type.
        np.testing.assert_array_equal(
            f32(self.cohere({"model": "nomic", "texts": TEXTS, "input_type": "search_query",
                             "prompt_name": "clustering"})["embeddings"]["float"]),
            self.openai({"model": "nomic", "input": TEXTS, "prompt_name": "clustering"}))
        # No prompt for it: the texts as they are, and a warning that says so.
        answer = self.cohere({"model": "plain", "texts": TEXTS, "input_type": "classification"})
        self.assertIn("input_type", answer["meta"]["warnings"][0])
        np.testing.assert_array_equal(f32(answer["embeddings"]["float"]),
                                      self.openai({"model": "plain", "input": TEXTS}))
        self.assertNotIn("warnings", self.cohere({"model": "plain", "texts": TEXTS})["meta"])

    def content_ids(self, text):
        code, ids = post(self.base, "/tokenize", {"inputs": text, "add_special_tokens": False})
        self.assertEqual(code, 200, ids)
        return [t["id"] for t in ids[0]]

    def test_truncate_and_max_tokens_cut_the_same_tokens(self):
        ids = self.content_ids(LONG)
        self.assertGreater(len(ids), 62)
        window = 62  # 64 positions less [CLS] and [SEP]
        for truncate, kept in (("END", ids[:window]), ("START", ids[-window:]), (None, ids[:window])):
            body = {"model": "plain", "texts": [LONG]}
            if truncate:
                body["truncate"] = truncate
            np.testing.assert_array_equal(
                f32(self.cohere(body)["embeddings"]["float"]),
                self.openai({"model": "plain", "input": [kept]}), err_msg=str(truncate))
        for truncate, kept in (("END", ids[:5]), ("START", ids[-5:])):
            np.testing.assert_array_equal(
                f32(self.cohere({"model": "plain", "texts": [LONG], "truncate": truncate,
                                 "max_tokens": 5})["embeddings"]["float"]),
                self.openai({"model": "plain", "input": [kept]}), err_msg=truncate)
        # Past the window, max_tokens is the window.
        np.testing.assert_array_equal(
            f32(self.cohere({"model": "plain", "texts": [LONG],
                             "max_tokens": 1000})["embeddings"]["float"]),
            self.openai({"model": "plain", "input": [ids[:window]]}))
        # A chunking strategy (the extension) embeds the whole text instead.
        np.testing.assert_array_equal(
            f32(self.cohere({"model": "plain", "texts": [LONG],
                             "strategy": "chunk_mean"})["embeddings"]["float"]),
            self.openai({"model": "plain", "input": [LONG], "strategy": "chunk_mean"}))

    def test_output_dimension_and_batching(self):
        np.testing.assert_array_equal(
            f32(self.cohere({"model": "plain", "texts": TEXTS,
                             "output_dimension": 16})["embeddings"]["float"]),
            self.openai({"model": "plain", "input": TEXTS, "dimensions": 16}))
        together = f32(self.cohere({"model": "plain", "texts": TEXTS})["embeddings"]["float"])
        for i, text in enumerate(TEXTS):
            alone = f32(self.cohere({"model": "plain", "texts": [text]})["embeddings"]["float"])
            np.testing.assert_array_equal(alone[0], together[i])

    def test_refusals_name_their_field(self):
        cases = [
            ({"model": "plain"}, 400, "texts"),
            ({"model": "plain", "texts": ["a"], "inputs": []}, 400, "texts"),
            ({"model": "plain", "texts": ["a"] * 9}, 400, "texts"),
            ({"model": "plain", "texts": ["a", 3]}, 400, "texts[1]"),
            ({"model": "plain", "inputs": [{"content": [{"type": "image_url",
                                                          "image_url": {"url": "x"}}]}]},
             400, "inputs[0].content[0]"),
            ({"model": "plain", "images": ["data:image/png;base64,AA=="]}, 400, "images"),
            ({"model": "plain", "texts": ["a"], "input_type": "image"}, 400, "input_type"),
            ({"model": "plain", "texts": ["a"], "input_type": "query"}, 400, "input_type"),
            ({"model": "plain", "texts": ["a"], "embedding_types": ["int8", "int8"]}, 400,
             "embedding_types[1]"),
            ({"model": "plain", "texts": ["a"], "embedding_types": ["int4"]}, 400,
             "embedding_types[0]"),
            ({"model": "plain", "texts": ["a"], "embedding_types": []}, 400, "embedding_types"),
            ({"model": "plain", "texts": ["a"], "truncate": "MIDDLE"}, 400, "truncate"),
            ({"model": "plain", "texts": ["a"], "truncate": "START", "strategy": "chunk_max"},
             400, "truncate"),
            ({"model": "plain", "texts": ["a"], "truncation_side": "end"}, 400,
             "truncation_side"),
            ({"model": "plain", "texts": ["a"], "max_tokens": 0}, 400, "max_tokens"),
            ({"model": "plain", "texts": ["a"], "max_tokens": 4, "strategy": "chunk_mean"}, 400,
             "max_tokens"),
            ({"model": "plain", "texts": ["a"], "output_dimension": 65}, 400, "output_dimension"),
            ({"model": "plain", "texts": ["a"], "temperature": 9}, 400, "temperature"),
            ({"model": "plain", "texts": ["a"], "dimensions": 8}, 400, "dimensions"),
            ({"model": "plain", "texts": [LONG], "truncate": "NONE"}, 400, "texts[0]"),
            ({"model": "plain", "texts": ["a", LONG], "truncate": "NONE"}, 400, "texts[1]"),
            ({"model": "nope", "texts": ["a"]}, 404, "model"),
        ]
        for body, status, param in cases:
            answer = self.cohere(body, status)
            self.assertEqual(answer["error"]["param"], param, answer)
            self.assertTrue(answer["error"]["message"].startswith(param + ":"), answer)
        # priority is accepted (no priorities here) and counted as ignored.
        self.cohere({"model": "plain", "texts": ["a"], "priority": 3})


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
