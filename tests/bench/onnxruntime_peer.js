// The onnxruntime-node peer of long_document_bench.py: the same network, exported to ONNX
// from PyTorch's own modules, run in process on the same token sequences, batched as it
// batches best (sorted by length, padded batches with a key mask).
//   node onnxruntime_peer.js MODEL.onnx SEQUENCES.json THREADS BATCH [POOLED.json]
// Prints {"tokens_per_second": N} on stdout; with POOLED.json, also writes each sequence's
// mean hidden state there (in the input's order), to check a quantized model's accuracy.
const fs = require("fs");
const ort = require("onnxruntime-node");

async function main() {
  const [modelPath, sequencesPath, threads, batch, pooledPath] = process.argv.slice(2);
  const pooled = new Array(0);
  const sequences = JSON.parse(fs.readFileSync(sequencesPath, "utf8"));
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: "all"});
  const order = sequences.map((_, i) => i).sort((a, b) => sequences[a].length - sequences[b].length);
  const run = async (keep) => {
    for (let start = 0; start < order.length; start += Number(batch)) {
      const members = order.slice(start, start + Number(batch));
      const group = members.map((i) => sequences[i]);
      const longest = Math.max(...group.map((s) => s.length));
      const ids = new BigInt64Array(group.length * longest);
      const pad = new Uint8Array(group.length * longest).fill(1);
      group.forEach((s, b) => s.forEach((id, t) => {
        ids[b * longest + t] = BigInt(id);
        pad[b * longest + t] = 0;
      }));
      const out = await session.run({
        ids: new ort.Tensor("int64", ids, [group.length, longest]),
        pad: new ort.Tensor("bool", pad, [group.length, longest]),
      });
      if (!keep) continue;
      const hidden = out.hidden, width = hidden.dims[2];
      members.forEach((i, b) => {
        const mean = new Array(width).fill(0);
        for (let t = 0; t < group[b].length; ++t)
          for (let d = 0; d < width; ++d) mean[d] += hidden.data[(b * longest + t) * width + d];
        pooled[i] = mean.map((v) => v / group[b].length);
      });
    }
  };
  await run(Boolean(pooledPath));  // warm-up: ORT plans each new shape once
  if (pooledPath) fs.writeFileSync(pooledPath, JSON.stringify(pooled));
  const begin = process.hrtime.bigint();
  await run(false);
  const seconds = Number(process.hrtime.bigint() - begin) / 1e9;
  const tokens = sequences.reduce((n, s) => n + s.length, 0);
  console.log(JSON.stringify({tokens_per_second: tokens / seconds}));
}

main().catch((e) => { console.error(e); process.exit(1); });
