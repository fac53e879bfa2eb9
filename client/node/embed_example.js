// The cross-language example: two documents with TempScale off and on, and a long document
// with CHUNK_ALL. Prints the vectors as JSON. Usage: node embed_example.js ADDRESS
const { connect } = require("./embedding_client");

async function main() {
  const client = connect(process.argv[2]);
  const docs = ["The quick brown fox.", "jumps over the lazy dog"];
  const long = Array.from({ length: 1500 }, (_, i) => ["the", "cat", "sat", "on", "a", "mat"][i % 6]).join(" ");
  const off = await client.embed({ inputs: docs });
  const on = await client.embed({ inputs: docs, temperature: 0.7 });
  const all = await client.embed({
    inputs: [long], strategy: "LONG_TEXT_STRATEGY_CHUNK_ALL", chunk_tokens: 200, chunk_overlap_tokens: 20,
  });
  const doc = all.documents[0];
  console.log(JSON.stringify({
    off: off.documents.map((d) => d.vector),
    on: on.documents.map((d) => d.vector),
    long: doc.vector,
    chunks: doc.chunks.map((c) => ({ vector: c.vector, token_span: [c.token_span.start, c.token_span.end] })),
  }));
  client.close();
}

main().catch((error) => {
  console.error(`embed_example: ${error.code} ${error.details}`);
  process.exit(1);
});
