// The official `openai` SDK's Files and Batches API as its users call it: upload a JSONL file,
// create a batch of /v1/embeddings lines, poll it to its end (or cancel it first), download the
// output and error files, list both. Prints what it saw as JSON on stdout.
// usage: node batch_client.js BASE_URL API_KEY JSONL_PATH [cancel]
const fs = require('fs');
const OpenAI = require('openai');

const TERMINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);

async function main() {
  const [baseURL, apiKey, path, mode] = process.argv.slice(2);
  const client = new OpenAI({baseURL, apiKey, maxRetries: 0, timeout: 60000});
  const file = await client.files.create({file: fs.createReadStream(path), purpose: 'batch'});
  const retrieved = await client.files.retrieve(file.id);
  const created = await client.batches.create({
    input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h',
    metadata: {corpus: 'e2e'},
  });
  const cancelled = mode === 'cancel' ? await client.batches.cancel(created.id) : null;
  const statuses = [created.status];
  let batch = created;
  const started = Date.now();
  while (!TERMINAL.has(batch.status)) {
    if (Date.now() - started > 240000) throw new Error(`batch still ${batch.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    batch = await client.batches.retrieve(created.id);
    if (statuses[statuses.length - 1] !== batch.status) statuses.push(batch.status);
  }
  const content = async (id) => (id ? (await client.files.content(id)).text() : null);
  const batches = [];
  for await (const b of client.batches.list({limit: 1})) batches.push(b.id);  // pages of one
  const files = (await client.files.list()).data.map((f) => f.id);
  process.stdout.write(JSON.stringify({
    file, retrieved, created, cancelled, batch, statuses, batches, files,
    output: await content(batch.output_file_id), errors: await content(batch.error_file_id),
  }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
