// Hugging Face's own inference client against the server, as a TEI user points it at an
// endpoint: featureExtraction with endpointUrl posts {"inputs": ...} to the URL itself.
// usage: node feature_extraction.mjs URL TOKEN|- INPUTS_JSON  → prints the vectors as JSON
import { InferenceClient } from "@huggingface/inference";

const [url, token, inputs] = process.argv.slice(2);
const client = new InferenceClient(token === "-" ? undefined : token);
try {
  const output = await client.featureExtraction({ endpointUrl: url, inputs: JSON.parse(inputs) });
  console.log(JSON.stringify(output));
} catch (error) {
  console.error(`${error.name}: ${error.message}`);
  process.exit(2);
}
