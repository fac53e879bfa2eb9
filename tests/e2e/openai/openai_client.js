// The official `openai` SDK as its users use it: a client with baseURL pointing at this server.
// Reads the calls to make as JSON on stdin ({name: params}) and prints {name: response} (or
// {name: {error: {status, body}}}) as JSON on stdout.
// usage: node openai_client.js BASE_URL API_KEY < calls.json
const OpenAI = require('openai');

async function main() {
  const [baseURL, apiKey] = process.argv.slice(2);
  const client = new OpenAI({baseURL, apiKey, maxRetries: 0, timeout: 60000});
  const calls = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const results = {};
  for (const [name, params] of Object.entries(calls)) {
    try {
      results[name] = await client.embeddings.create(params);
    } catch (e) {
      results[name] = {error: {status: e.status ?? null, body: e.error ?? String(e)}};
    }
  }
  results.models = (await client.models.list()).data;
  process.stdout.write(JSON.stringify(results));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
