"""Python client for embedding.v1.EmbeddingService, with Debian's python3-grpcio and
python3-protobuf only: the message types come from the server itself through gRPC server
reflection, so there are no generated stubs to keep in step with the server.

    client = EmbeddingClient("127.0.0.1:50051")
    response = client.embed(["first document", "second"], temperature=0.8)
    vectors = [list(d.vector) for d in response.documents]
"""
import struct

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

SERVICE = "embedding.v1.EmbeddingService"
_REFLECTION_METHOD = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


def _reflection_messages():
    """Request and response classes of grpc.reflection.v1alpha, the part this client reads.

    The schema is declared here with protobuf's own descriptor types (python3-grpcio ships no
    reflection stubs); protobuf then does all of the wire format. Fields not declared are
    skipped as unknown fields.
    """
    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="grpc_reflection_subset.proto", package="grpc.reflection.v1alpha", syntax="proto3")

    def message(name, *fields):
        m = proto.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            m.field.add(name=field_name, number=number, type=kind, label=label,
                        type_name=type_name)

    one, many = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    msg = lambda name: ".grpc.reflection.v1alpha." + name  # noqa: E731
    message("ServerReflectionRequest",
            ("host", 1, F.TYPE_STRING, one, None),
            ("file_containing_symbol", 4, F.TYPE_STRING, one, None),
            ("list_services", 7, F.TYPE_STRING, one, None))
    message("FileDescriptorResponse", ("file_descriptor_proto", 1, F.TYPE_BYTES, many, None))
    message("ServiceResponse", ("name", 1, F.TYPE_STRING, one, None))
    message("ListServiceResponse", ("service", 1, F.TYPE_MESSAGE, many, msg("ServiceResponse")))
    message("ErrorResponse", ("error_code", 1, F.TYPE_INT32, one, None),
            ("error_message", 2, F.TYPE_STRING, one, None))
    message("ServerReflectionResponse",
            ("file_descriptor_response", 4, F.TYPE_MESSAGE, one, msg("FileDescriptorResponse")),
            ("list_services_response", 6, F.TYPE_MESSAGE, one, msg("ListServiceResponse")),
            ("error_response", 7, F.TYPE_MESSAGE, one, msg("ErrorResponse")))
    for m in proto.message_type:  # type_name is only for message fields
        for f in m.field:
            if f.type != F.TYPE_MESSAGE:
                f.ClearField("type_name")
    # The request's kinds form a oneof, so an empty list_services still goes on the wire.
    request = proto.message_type[0]
    request.oneof_decl.add(name="message_request")
    for f in request.field:
        if f.name != "host":
            f.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    factory = message_factory.MessageFactory(pool)
    get = lambda name: factory.GetPrototype(pool.FindMessageTypeByName(  # noqa: E731
        "grpc.reflection.v1alpha." + name))
    return get("ServerReflectionRequest"), get("ServerReflectionResponse")


def _reflect(channel, timeout, **request_fields):
    """One ServerReflectionInfo exchange; raises on an error response."""
    request_type, response_type = _reflection_messages()
    call = channel.stream_stream(_REFLECTION_METHOD,
                                 request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=response_type.FromString)
    response = next(iter(call(iter([request_type(**request_fields)]), timeout=timeout)))
    if response.HasField("error_response"):
        raise RuntimeError(f"reflection error: {response.error_response.error_message}")
    return response


def list_services(channel, timeout=10):
    """Service names the server advertises through reflection."""
    response = _reflect(channel, timeout, list_services="")
    return [service.name for service in response.list_services_response.service]


def load_messages(channel, timeout=10):
    """Message classes of the service's proto file, by full name, via reflection."""
    response = _reflect(channel, timeout, file_containing_symbol=SERVICE)
    pool = descriptor_pool.DescriptorPool()
    protos = [descriptor_pb2.FileDescriptorProto.FromString(raw)
              for raw in response.file_descriptor_response.file_descriptor_proto]
    added = set()
    while len(added) < len(protos):  # dependencies first
        for proto in protos:
            if proto.name not in added and all(d in added for d in proto.dependency):
                pool.Add(proto)
                added.add(proto.name)
    classes = {}
    for proto in protos:
        file = pool.FindFileByName(proto.name)
        for name, desc in file.message_types_by_name.items():
            classes[desc.full_name] = message_factory.MessageFactory(pool).GetPrototype(desc)
    enums = {}
    for proto in protos:
        for name, desc in pool.FindFileByName(proto.name).enum_types_by_name.items():
            enums.update({v.name: v.number for v in desc.values})
    return classes, enums


class EmbeddingClient:
    def __init__(self, address, timeout=60):
        # Answers grow with the documents (CHUNK_ALL, Tokenize of long texts): no 4 MB cap.
        self.channel = grpc.insecure_channel(
            address, options=[("grpc.max_receive_message_length", -1)])
        self.timeout = timeout
        self.messages, self.enums = load_messages(self.channel, timeout)

    def _unary(self, method, request, response_type):
        call = self.channel.unary_unary(
            f"/{SERVICE}/{method}", request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.messages[response_type].FromString)
        return call(request, timeout=self.timeout)

    def embed(self, inputs, model="", temperature=None, strategy=None, chunk_tokens=None,
              chunk_overlap_tokens=None, normalize=None, dimensions=None, prompt_name="",
              outputs=None, multi_vector_encoding=None, max_vectors=None, sparse_top_k=None,
              task="", input_role=None, pool_factor=None):
        """Embeds `inputs`; strategy is a name such as "LONG_TEXT_STRATEGY_CHUNK_ALL";
        temperature is a tau, or "auto" for the model's schedule by sequence length; outputs
        any of "dense", "sparse", "multi_vector"; multi_vector_encoding "float16" or "int8";
        task one of the model's task adapters (ModelInfo.tasks); input_role "query" or
        "document" for a late-interaction model; pool_factor pools a document's vectors."""
        request = self.messages["embedding.v1.EmbedRequest"](
            model=model, inputs=list(inputs), prompt_name=prompt_name, task=task)
        for output in outputs or ():
            request.outputs.append(self.enums["EMBEDDING_OUTPUT_" + output.upper()])
        if multi_vector_encoding is not None:
            request.multi_vector_encoding = self.enums[
                "VECTOR_ENCODING_" + multi_vector_encoding.upper()]
        if max_vectors is not None:
            request.max_vectors = max_vectors
        if sparse_top_k is not None:
            request.sparse_top_k = sparse_top_k
        if pool_factor is not None:
            request.pool_factor = pool_factor
        if input_role is not None:
            request.input_role = self.enums["INPUT_ROLE_" + input_role.upper()]
        if temperature == "auto":
            request.temperature_mode = self.enums["TEMPERATURE_MODE_AUTO"]
        elif temperature is not None:
            request.temperature = temperature
        if strategy is not None:
            request.strategy = self.enums[strategy]
        if chunk_tokens is not None:
            request.chunk_tokens = chunk_tokens
        if chunk_overlap_tokens is not None:
            request.chunk_overlap_tokens = chunk_overlap_tokens
        if normalize is not None:
            request.normalize = normalize
        if dimensions is not None:
            request.dimensions = dimensions
        return self._unary("Embed", request, "embedding.v1.EmbedResponse")

    def _score_options(self, temperature=None, strategy=None, truncation_side=None,
                       chunk_tokens=None, chunk_overlap_tokens=None, raw_scores=False,
                       return_chunks=False):
        options = self.messages["embedding.v1.ScoreOptions"](
            raw_scores=raw_scores, return_chunks=return_chunks)
        if temperature == "auto":
            options.temperature_mode = self.enums["TEMPERATURE_MODE_AUTO"]
        elif temperature is not None:
            options.temperature = temperature
        if strategy is not None:
            options.strategy = self.enums[strategy]
        if truncation_side is not None:
            options.truncation_side = self.enums[truncation_side]
        if chunk_tokens is not None:
            options.chunk_tokens = chunk_tokens
        if chunk_overlap_tokens is not None:
            options.chunk_overlap_tokens = chunk_overlap_tokens
        return options

    def rerank(self, query, documents, model="", top_n=None, return_documents=False,
               instruction="", **options):
        """Scores `documents` against `query` with a reranker, best first. `instruction`: a
        prompted reranker's (Qwen3-Reranker's; empty: its default). `options`: those of
        ScoreOptions (temperature, strategy such as "LONG_TEXT_STRATEGY_CHUNK_MAX",
        truncation_side, chunk_tokens, chunk_overlap_tokens, raw_scores, return_chunks)."""
        request = self.messages["embedding.v1.RerankRequest"](
            model=model, query=query, documents=list(documents),
            return_documents=return_documents, instruction=instruction,
            options=self._score_options(**options))
        if top_n is not None:
            request.top_n = top_n
        return self._unary("Rerank", request, "embedding.v1.RerankResponse")

    def classify(self, inputs, model="", text_pairs=(), instruction="", **options):
        """Each input's label scores, in input order; with `text_pairs`, input i is the pair
        (text_pairs[i], inputs[i])."""
        request = self.messages["embedding.v1.ClassifyRequest"](
            model=model, inputs=list(inputs), text_pairs=list(text_pairs),
            instruction=instruction, options=self._score_options(**options))
        return self._unary("Classify", request, "embedding.v1.ClassifyResponse")

    def tokenize(self, inputs, model="", add_special_tokens=True):
        request = self.messages["embedding.v1.TokenizeRequest"](
            model=model, inputs=list(inputs), add_special_tokens=add_special_tokens)
        return self._unary("Tokenize", request, "embedding.v1.TokenizeResponse")

    def list_models(self):
        return self._unary("ListModels", self.messages["embedding.v1.ListModelsRequest"](),
                           "embedding.v1.ListModelsResponse")


# Scoring, as bge-m3 defines it (FlagEmbedding's BGEM3 model), on what Embed returns.

def sparse_weights(sparse):
    """A SparseEmbedding as {token_id: weight}."""
    return dict(zip(sparse.token_ids, sparse.weights))


def multi_vector_rows(multi_vector):
    """A MultiVector's vectors as lists of floats, whatever its encoding (BINARY: each sign bit
    as 1.0 or 0.0)."""
    dim, count = multi_vector.dimensions, multi_vector.count
    encoding = multi_vector.DESCRIPTOR.fields_by_name["encoding"].enum_type.values_by_number[
        multi_vector.encoding].name
    if encoding == "VECTOR_ENCODING_BINARY":
        row_bytes = (dim + 7) // 8
        return [[float(multi_vector.data[r * row_bytes + k // 8] >> (7 - k % 8) & 1)
                 for k in range(dim)] for r in range(count)]
    if multi_vector.data:
        if len(multi_vector.scales) == count:  # INT8: byte * scale
            raw = struct.unpack(f"<{count * dim}b", multi_vector.data)
            values = [raw[i] * multi_vector.scales[i // dim] for i in range(count * dim)]
        else:  # FLOAT16
            values = list(struct.unpack(f"<{count * dim}e", multi_vector.data))
    else:
        values = list(multi_vector.values)
    return [values[r * dim:(r + 1) * dim] for r in range(count)]


def lexical_score(query, document):
    """Sum over the token ids both share of the product of their weights."""
    q, d = sparse_weights(query), sparse_weights(document)
    return sum(w * d[t] for t, w in q.items() if t in d)


def colbert_score(query, document):
    """Mean over the query's vectors of the best inner product with a document vector."""
    q, d = multi_vector_rows(query), multi_vector_rows(document)
    if not q or not d:
        return 0.0
    best = [max(sum(a * b for a, b in zip(qv, dv)) for dv in d) for qv in q]
    return sum(best) / len(best)


def dense_score(query, document):
    """Inner product of two dense vectors (cosine when both are normalised)."""
    return sum(a * b for a, b in zip(query.vector, document.vector))


def hybrid_score(query, document, weights=(0.4, 0.2, 0.4)):
    """weights[0] x dense + weights[1] x lexical + weights[2] x ColBERT, over the outputs both
    documents carry (FlagEmbedding's default weights); divided by the weights used."""
    parts = []
    if query.vector and document.vector:
        parts.append((weights[0], dense_score(query, document)))
    if query.HasField("sparse") and document.HasField("sparse"):
        parts.append((weights[1], lexical_score(query.sparse, document.sparse)))
    if query.HasField("multi_vector") and document.HasField("multi_vector"):
        parts.append((weights[2], colbert_score(query.multi_vector, document.multi_vector)))
    total = sum(w for w, _ in parts)
    return sum(w * s for w, s in parts) / total if total else 0.0
