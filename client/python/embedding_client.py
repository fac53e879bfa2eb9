"""Python client for embedding.v1.EmbeddingService, with Debian's python3-grpcio and
python3-protobuf only: the message types come from the server itself through gRPC server
reflection, so there are no generated stubs to keep in step with the server.

    client = EmbeddingClient("127.0.0.1:50051")
    response = client.embed(["first document", "second"], temperature=0.8)
    vectors = [list(d.vector) for d in response.documents]
"""
import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

SERVICE = "embedding.v1.EmbeddingService"
_REFLECTION_METHOD = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number, payload):
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _fields(data):
    """(number, wire type, value) for each field of a serialized message."""
    pos = 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
        elif wire_type == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire_type == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire_type == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        yield number, wire_type, value


def _read_varint(data, pos):
    result, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _reflect(channel, request_field, payload, timeout):
    """One ServerReflectionInfo exchange; returns the response's fields."""
    call = channel.stream_stream(_REFLECTION_METHOD, request_serializer=lambda b: b,
                                 response_deserializer=lambda b: b)
    responses = call(iter([_field(request_field, payload)]), timeout=timeout)
    return list(_fields(next(iter(responses))))


def list_services(channel, timeout=10):
    """Service names the server advertises through reflection."""
    fields = _reflect(channel, 7, b"", timeout)  # list_services
    names = []
    for number, _, value in fields:
        if number == 6:  # list_services_response
            for _, _, service in _fields(value):
                names += [v.decode() for n, _, v in _fields(service) if n == 1]
        if number == 7:  # error_response
            raise RuntimeError(f"reflection error: {value!r}")
    return names


def load_messages(channel, timeout=10):
    """Message classes of the service's proto file, by full name, via reflection."""
    fields = _reflect(channel, 4, SERVICE.encode(), timeout)  # file_containing_symbol
    pool = descriptor_pool.DescriptorPool()
    files = [v for n, _, v in fields if n == 4]  # file_descriptor_response
    protos = [descriptor_pb2.FileDescriptorProto.FromString(v)
              for response in files for n, _, v in _fields(response) if n == 1]
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
        self.channel = grpc.insecure_channel(address)
        self.timeout = timeout
        self.messages, self.enums = load_messages(self.channel, timeout)

    def _unary(self, method, request, response_type):
        call = self.channel.unary_unary(
            f"/{SERVICE}/{method}", request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.messages[response_type].FromString)
        return call(request, timeout=self.timeout)

    def embed(self, inputs, model="", temperature=None, strategy=None, chunk_tokens=None,
              chunk_overlap_tokens=None, normalize=None, dimensions=None, prompt_name=""):
        """Embeds `inputs`; strategy is a name such as "LONG_TEXT_STRATEGY_CHUNK_ALL"."""
        request = self.messages["embedding.v1.EmbedRequest"](
            model=model, inputs=list(inputs), prompt_name=prompt_name)
        if temperature is not None:
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

    def tokenize(self, inputs, model="", add_special_tokens=True):
        request = self.messages["embedding.v1.TokenizeRequest"](
            model=model, inputs=list(inputs), add_special_tokens=add_special_tokens)
        return self._unary("Tokenize", request, "embedding.v1.TokenizeResponse")

    def list_models(self):
        return self._unary("ListModels", self.messages["embedding.v1.ListModelsRequest"](),
                           "embedding.v1.ListModelsResponse")
