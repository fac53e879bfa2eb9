// Regenerates tokenizer_fixtures.json with Hugging Face's own tokenizers (Rust, through the
// npm package @anush008/tokenizers), run on the demo model's tokenizer.json and variants of
// its normalizer. Usage: node generate_fixtures.js DEMO_MODEL_DIR OUT.json
// (npm install @anush008/tokenizers@0.6.0 first). Offsets are in Unicode code points.
const fs = require("fs");
const os = require("os");
const path = require("path");
const { Tokenizer } = require("@anush008/tokenizers");

const VARIANTS = {
  uncased: {},
  cased: { lowercase: false, strip_accents: false },
  lowercase_keep_accents: { lowercase: true, strip_accents: false },
  no_chinese_split: { handle_chinese_chars: false },
  no_clean_text: { clean_text: false },
};

const TEXTS = [
  "",
  "Hello, world!",
  "The QUICK brown fox jumped over the lazy dogs.",
  "tab\there\nnewline\r\ncrlf  double  space",
  "control\u0001chars\u0007and\u001bescape\u007fdel",
  "nul\u0000byte and replacement \ufffd char",
  "zero\u200bwidth\u200djoiner soft\u00adhyphen",
  "non\u00a0breaking\u3000ideographic\u2003em space",
  "emoji 🙂👍🏽 family 👨‍👩‍👧 flags 🇩🇪",
  "中文字符 一丁七万 mixed中英文text",
  "Café naïve résumé Ångström",
  "Cafe\u0301 combining e\u0301 and a\u0308",
  "İstanbul ß straße Σίσυφος ΑΘΗΝΑ",
  "Привет МИР",
  "don't stop-believing (really) [maybe] {ok} <tag> a/b c\\d",
  "prices: $3.50, 20% off, #1 @user ~tilde `tick` ^caret |pipe",
  "...!!!???---",
  "[SEP] inside [CLS]text[MASK] and [unk]",
  "x".repeat(150) + " short",
  "unbelievably antidisestablishmentarianism unhappiness",
  "한국어 텍스트",
  "العربية हिन्दी ไทย",
  "ﬁnance ligature and ½ fraction and ①",
  "   leading and trailing   ",
  "a",
];

async function main() {
  const [demoDir, outPath] = process.argv.slice(2);
  const base = JSON.parse(fs.readFileSync(path.join(demoDir, "tokenizer.json"), "utf8"));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tokfix-"));
  const cases = [];
  for (const [variant, overrides] of Object.entries(VARIANTS)) {
    const json = JSON.parse(JSON.stringify(base));
    Object.assign(json.normalizer, overrides);
    const file = path.join(tmp, `${variant}.json`);
    fs.writeFileSync(file, JSON.stringify(json));
    const tokenizer = Tokenizer.fromFile(file);
    for (const text of TEXTS) {
      const enc = await tokenizer.encode(text, null, { addSpecialTokens: false });
      cases.push({ variant, text, ids: enc.getIds(), offsets: enc.getOffsets() });
    }
  }
  fs.writeFileSync(outPath, JSON.stringify({ variants: VARIANTS, cases }, null, 0) + "\n");
  console.log(`wrote ${cases.length} cases to ${outPath}`);
}
main();
