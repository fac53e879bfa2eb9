// Cohere's own SDK (cohere-ai, what LangChain's and LlamaIndex's Cohere rerankers call) against
// the server's /v1/rerank and /v2/rerank, and Node's fetch against TEI's /rerank.
// usage: node rerank_clients.mjs BASE_URL MODEL QUERY_AND_DOCUMENTS_JSON > out.json
// Prints {"v1": ..., "v2": ..., "tei": ...}: each SDK's parsed response, TEI's body.
import fs from "fs";
import { CohereClient, CohereClientV2 } from "cohere-ai";

const [baseUrl, model, inputPath] = process.argv.slice(2);
const { query, documents, top_n: topN } = JSON.parse(fs.readFileSync(inputPath, "utf8"));

const v1 = await new CohereClient({ token: "unused", environment: baseUrl }).rerank({
  model, query, documents, topN, returnDocuments: true });
const v2 = await new CohereClientV2({ token: "unused", environment: baseUrl }).rerank({
  model, query, documents, topN });
const tei = await (await fetch(`${baseUrl}/rerank`, {
  method: "POST", headers: { "Content-Type": "application/json" },
  body: JSON.stringify({ query, texts: documents, return_text: true }) })).json();
process.stdout.write(JSON.stringify({ v1, v2, tei }) + "\n");
