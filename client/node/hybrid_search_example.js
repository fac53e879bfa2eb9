// Hybrid search with bge-m3's three outputs from one Embed call: ranks documents for a query
// by dense, lexical (sparse) and ColBERT (multi-vector) scores and their weighted mix.
// usage: node hybrid_search_example.js ADDRESS MODEL float32|float16|int8 QUERY DOCUMENT...
// Prints [{index, dense, lexical, colbert, hybrid}], best first, as JSON.
const { connect } = require("./embedding_client");
const { lexicalScore, colbertScore, hybridScore } = require("./hybrid_scoring");

async function main() {
  const [address, model, encoding, query, ...documents] = process.argv.slice(2);
  const client = connect(address);
  const response = await client.embed({
    model,
    inputs: [query, ...documents],
    outputs: ["EMBEDDING_OUTPUT_DENSE", "EMBEDDING_OUTPUT_SPARSE", "EMBEDDING_OUTPUT_MULTI_VECTOR"],
    multi_vector_encoding: `VECTOR_ENCODING_${encoding.toUpperCase()}`,
  });
  client.close();
  const [q, ...docs] = response.documents;
  const ranked = docs.map((d, index) => ({
    index,
    dense: q.vector.reduce((sum, x, k) => sum + x * d.vector[k], 0),
    lexical: lexicalScore(q.sparse, d.sparse),
    colbert: colbertScore(q.multi_vector, d.multi_vector),
    hybrid: hybridScore(q, d),
  }));
  ranked.sort((a, b) => b.hybrid - a.hybrid);
  console.log(JSON.stringify(ranked));
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
