// Tokenizes texts with Hugging Face's own tokenizers (the Rust library through the npm package
// @anush008/tokenizers), for compare_tokenizers.py and compare_cross_encoder.py.
// usage: node tokenizer_peer.js TOKENIZER_JSON TEXTS_JSON > out.json
// Output: {"ids": [[...]], "offsets": [[[begin, end]...]]}, offsets in code points, no specials.
// With TEXTS_JSON a list of [first, second] pairs, each pair as the post-processor encodes it,
// special tokens included: {"ids", "type_ids", "sequence_ids" (0, 1, or null for a special)}.
const fs = require("fs");
const { Tokenizer } = require("@anush008/tokenizers");

async function main() {
  const [tokenizerPath, textsPath] = process.argv.slice(2);
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  const texts = JSON.parse(fs.readFileSync(textsPath, "utf8"));
  const out = { ids: [], offsets: [], type_ids: [], sequence_ids: [] };
  for (const text of texts) {
    const pair = Array.isArray(text);
    const encoding = pair
      ? await tokenizer.encode(text[0], text[1], { addSpecialTokens: true })
      : await tokenizer.encode(text, null, { addSpecialTokens: false });
    out.ids.push(encoding.getIds());
    out.offsets.push(encoding.getOffsets());
    if (pair) {
      out.type_ids.push(encoding.getTypeIds());
      out.sequence_ids.push(encoding.getSequenceIds());
    }
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
main().catch((e) => { console.error(e); process.exit(1); });
