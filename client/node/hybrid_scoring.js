// bge-m3's scores on what Embed returns (FlagEmbedding's BGEM3 model defines them), for a
// response loaded with embedding_client.js (enums as strings, bytes as Buffers):
//   lexicalScore: sum over the token ids both maps hold of w_q(t) * w_d(t);
//   colbertScore: mean over the query's vectors of the best inner product with a document's;
//   hybridScore:  weighted mean of dense, lexical and ColBERT over the outputs both carry.
const { getFloat16 } = require("@petamoriken/float16");

// A MultiVector's vectors as arrays of numbers, whatever its encoding.
function multiVectorRows(mv) {
  const { count, dimensions: dim } = mv;
  const values = new Array(count * dim);
  const data = mv.data ? Buffer.from(mv.data) : Buffer.alloc(0);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  for (let i = 0; i < count * dim; i++) {
    if (mv.encoding === "VECTOR_ENCODING_FLOAT16") values[i] = getFloat16(view, 2 * i, true);
    else if (mv.encoding === "VECTOR_ENCODING_INT8") values[i] = view.getInt8(i) * mv.scales[Math.floor(i / dim)];
    else values[i] = mv.values[i];
  }
  const rows = [];
  for (let r = 0; r < count; r++) rows.push(values.slice(r * dim, (r + 1) * dim));
  return rows;
}

function lexicalScore(query, document) {
  const weights = new Map(document.token_ids.map((id, i) => [id, document.weights[i]]));
  let score = 0;
  query.token_ids.forEach((id, i) => {
    if (weights.has(id)) score += query.weights[i] * weights.get(id);
  });
  return score;
}

const dot = (a, b) => a.reduce((sum, x, k) => sum + x * b[k], 0);

function colbertScore(query, document) {
  const q = multiVectorRows(query);
  const d = multiVectorRows(document);
  if (q.length === 0 || d.length === 0) return 0;
  return q.reduce((sum, qv) => sum + Math.max(...d.map((dv) => dot(qv, dv))), 0) / q.length;
}

function hybridScore(query, document, weights = { dense: 0.4, sparse: 0.2, multiVector: 0.4 }) {
  const parts = [];
  if (query.vector.length && document.vector.length) parts.push([weights.dense, dot(query.vector, document.vector)]);
  if (query.sparse && document.sparse) parts.push([weights.sparse, lexicalScore(query.sparse, document.sparse)]);
  if (query.multi_vector && document.multi_vector) {
    parts.push([weights.multiVector, colbertScore(query.multi_vector, document.multi_vector)]);
  }
  const total = parts.reduce((sum, [w]) => sum + w, 0);
  return total ? parts.reduce((sum, [w, s]) => sum + w * s, 0) / total : 0;
}

module.exports = { multiVectorRows, lexicalScore, colbertScore, hybridScore };
