// The onnxruntime-node peer of long_document_bench.py: the same network, exported to ONNX
// from PyTorch's own modules, run in process on the same token sequences, batched as it
// batches best (sorted by length, padded batches with a key mask).
//   node onnxruntime_peer.js MODEL.onnx SEQUENCES.json THREADS BATCH
// Prints {"tokens_per_second": N} on stdout.
const fs = require("fs");
const ort = require("onnxruntime-node");

async function main() {
  const [modelPath, sequencesPath, threads, batch] = process.argv.slice(2);
  const sequences = JSON.parse(fs.readFileSync(sequencesPath, "utf8"));
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: "all"});
  const order = sequences.map((_, i) => i).sort((a, b) => sequences[a].length - sequences[b].length);
  const run = async () => {
    for (let start = 0; start < order.length; start += Number(batch)) {
      const group = order.slice(start, start + Number(batch)).map((i) => sequences[i]);
      const longest = Math.max(...group.map((s) => s.length));
      const ids = new BigInt64Array(group.length * longest);
      const pad = new Uint8Array(group.length * longest).fill(1);
      group.forEach((s, b) => s.forEach((id, t) => {
        ids[b * longest + t] = BigInt(id);
        pad[b * longest + t] = 0;
      }));
      await session.run({
        ids: new ort.Tensor("int64", ids, [group.length, longest]),
        pad: new ort.Tensor("bool", pad, [group.length, longest]),
      });
    }
  };
  await run();  // warm-up: ORT plans each new shape once
  const begin = process.hrtime.bigint();
  await run();
  const seconds = Number(process.hrtime.bigint() - begin) / 1e9;
  const tokens = sequences.reduce((n, s) => n + s.length, 0);
  console.log(JSON.stringify({tokens_per_second: tokens / seconds}));
}

main().catch((e) => { console.error(e); process.exit(1); });
