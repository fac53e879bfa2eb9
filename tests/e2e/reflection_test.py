#!/usr/bin/python3
"""Lists the server's services through the gRPC reflection protocol, as generic tools such as
grpcurl do, and calls Embed with message types learned that way.

usage: reflection_test.py SERVER_BINARY MODEL_DIR
"""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
sys.path.insert(0, os.path.dirname(__file__))
import grpc  # noqa: E402
from embedding_client import EmbeddingClient, list_services  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

BINARY, MODEL = sys.argv[1], sys.argv[2]


class ReflectionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerRunner(BINARY, [f"--model=tiny={MODEL}"])

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_lists_services(self):
        names = list_services(grpc.insecure_channel(self.server.grpc_address))
        self.assertIn("embedding.v1.EmbeddingService", names)
        self.assertIn("grpc.health.v1.Health", names)
        self.assertIn("grpc.reflection.v1alpha.ServerReflection", names)

    def test_embed_through_reflected_types(self):
        client = EmbeddingClient(self.server.grpc_address)
        response = client.embed(["hello world", ""], temperature=0.5)
        self.assertEqual(len(response.documents), 2)
        for doc in response.documents:
            self.assertEqual(len(doc.vector), 96)
            self.assertAlmostEqual(math.fsum(x * x for x in doc.vector), 1.0, places=5)
            self.assertAlmostEqual(doc.temperature, 0.5)
        self.assertEqual(client.list_models().default_model, "tiny")

    def test_errors_carry_code_and_field(self):
        client = EmbeddingClient(self.server.grpc_address)
        with self.assertRaises(grpc.RpcError) as caught:
            client.embed(["x"], temperature=float("nan"))
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("temperature", caught.exception.details())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
