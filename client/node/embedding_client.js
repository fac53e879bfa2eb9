// Node client for embedding.v1.EmbeddingService: @grpc/grpc-js with the .proto loaded at run
// time by @grpc/proto-loader (no generated code).
//
//   const { connect } = require("./embedding_client");
//   const client = connect("127.0.0.1:50051");
//   const response = await client.embed({ inputs: ["first", "second"], temperature: 0.8 });
//   const ranked = await client.rerank({ query: "owls", documents: ["a", "b"], top_n: 1 });
const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTO = path.join(__dirname, "..", "..", "proto", "embedding", "v1", "embedding.proto");

function connect(address, { timeoutMs = 60000 } = {}) {
  const definition = protoLoader.loadSync(PROTO, {
    keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
  });
  const { EmbeddingService } = grpc.loadPackageDefinition(definition).embedding.v1;
  const stub = new EmbeddingService(address, grpc.credentials.createInsecure());
  const call = (method) => (request) => new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + timeoutMs);
    stub[method](request, { deadline }, (error, response) => (error ? reject(error) : resolve(response)));
  });
  return {
    embed: call("Embed"),
    tokenize: call("Tokenize"),
    rerank: call("Rerank"),
    classify: call("Classify"),
    listModels: call("ListModels"),
    close: () => stub.close(),
  };
}

module.exports = { connect };
