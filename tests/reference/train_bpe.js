// Trains a byte-level BPE with Hugging Face's own trainer (the Rust tokenizers library through
// npm, default BpeTrainer: 30,000 entries) on text files, for compare_bpe_tokenizers.py.
// usage: node train_bpe.js OUT_TOKENIZER_JSON CORPUS_FILE...
const { Tokenizer, BPE, byteLevelPreTokenizer } = require("@anush008/tokenizers");

const [out, ...files] = process.argv.slice(2);
const tokenizer = new Tokenizer(BPE.empty());
tokenizer.setPreTokenizer(byteLevelPreTokenizer(false, true));
tokenizer.train(files);
tokenizer.save(out);
