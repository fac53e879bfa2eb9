// Tokenizes texts with Hugging Face's own tokenizers (the Rust library through the npm package
// @anush008/tokenizers), for compare_tokenizers.py.
// usage: node tokenizer_peer.js TOKENIZER_JSON TEXTS_JSON > out.json
// Output: {"ids": [[...]], "offsets": [[[begin, end]...]]}, offsets in code points, no specials.
const fs = require("fs");
const { Tokenizer } = require("@anush008/tokenizers");

async function main() {
  const [tokenizerPath, textsPath] = process.argv.slice(2);
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  const texts = JSON.parse(fs.readFileSync(textsPath, "utf8"));
  const ids = [], offsets = [];
  for (const text of texts) {
    const encoding = await tokenizer.encode(text, null, { addSpecialTokens: false });
    ids.push(encoding.getIds());
    offsets.push(encoding.getOffsets());
  }
  process.stdout.write(JSON.stringify({ ids, offsets }) + "\n");
}
main().catch((e) => { console.error(e); process.exit(1); });
