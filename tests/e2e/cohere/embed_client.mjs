// Cohere's own SDK (cohere-ai's CohereClientV2.embed, what LangChain's and LlamaIndex's Cohere
// embedders call) against the server's /v2/embed, once with `texts` and once with `inputs`.
// usage: node embed_client.mjs BASE_URL REQUEST_JSON > out.json
// REQUEST_JSON: {model, texts, inputType, embeddingTypes, ...} in the SDK's camelCase.
// Prints {"texts": ..., "inputs": ...}: the SDK's parsed responses.
import fs from "fs";
import { CohereClientV2 } from "cohere-ai";

const [baseUrl, requestPath] = process.argv.slice(2);
const request = JSON.parse(fs.readFileSync(requestPath, "utf8"));
const client = new CohereClientV2({ token: "unused", environment: baseUrl });
const texts = await client.embed(request);
const { texts: list, ...rest } = request;
const inputs = await client.embed({
  ...rest, inputs: list.map((text) => ({ content: [{ type: "text", text }] })) });
process.stdout.write(JSON.stringify({ texts, inputs }) + "\n");
