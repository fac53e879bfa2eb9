// A client generated from the server's own /openapi.json: openapi-typescript wrote ./schema
// from it, tsc checks every call below against those types (a renamed field or route fails
// the compile), and openapi-fetch sends them. Prints what it got as one JSON object for
// tests/e2e/openapi_answers_test.py to check against gRPC.
//   node client.js BASE_URL TOKEN
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const [baseUrl, token] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
const texts = ["interest rates at the bank", "owls hunt mice at night"];

function fail(what: string, detail: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(detail)}`);
}

const info = await client.GET("/info");
if (!info.data) fail("GET /info", info.error);

const openai = await client.POST("/v1/embeddings", {
  body: { model: info.data.model_id, input: texts, temperature: 0.8, outputs: ["dense", "sparse"] },
});
if (!openai.data) fail("POST /v1/embeddings", openai.error);

const tei = await client.POST("/embed", { body: { inputs: texts } });
if (!tei.data) fail("POST /embed", tei.error);

const tokens = await client.POST("/tokenize", { body: { inputs: texts[0] } });
if (!tokens.data) fail("POST /tokenize", tokens.error);

// A refusal arrives typed as the document's error shape for its status.
const refused = await client.POST("/v1/embeddings", { body: { input: texts, temperature: 7 } });
if (!refused.error) fail("temperature 7 was accepted", refused.data);

console.log(JSON.stringify({
  model_id: info.data.model_id,
  max_input_length: info.data.max_input_length,
  openai: openai.data.data.map((d) => ({ embedding: d.embedding, sparse: d.details.sparse })),
  tei: tei.data,
  token_ids: tokens.data[0].map((t) => t.id),
  refusal: { status: refused.response.status, message: refused.error.error.message },
}));
