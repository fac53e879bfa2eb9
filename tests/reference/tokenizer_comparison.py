"""What the tokenizer comparisons share: the multi-script texts, a training corpus from this
machine's own files (licences, the word list) plus those texts, and the loop that runs each
tokenizer.json through Hugging Face's library and ours and compares ids and offsets."""
import glob
import json
import os
import subprocess

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Café naïve résumé Ångström façade",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Γαζέες καὶ μυρτιὲς δὲν θὰ βρῶ πιὰ στὸ χρυσαφὶ ξέφωτο.",
    "صِفْ خَلْقَ خَوْدٍ كَمِثْلِ الشَّمْسِ إِذْ بَزَغَتْ",
    "דג סקרן שט בים מאוכזב ולפתע מצא חברה",
    "ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश",
    "เป็นมนุษย์สุดประเสริฐเลิศคุณค่า",
    "日本語の文章と中文字符，한국어 텍스트도",
    "emoji 👍🏽 family 👨‍👩‍👧 flags 🇩🇪 ok",
    "ＦＵＬＬ　ｗｉｄｔｈ　１２３！ ｶﾀｶﾅ ﾊﾟﾋﾞ",
    "e\u0301 a\u0308 o\u0302\u0323 Z\u0335\u0321 cafe\u0301",
    "tab\there\nnewline  double   triple\u00a0nbsp\u3000ideographic",
    "ﬁnance ½ ① ℃ ㍻ ™",
    "Mixed: English, Русский, Ελληνικά, العربية, עברית, हिन्दी, ไทย, 中文.",
    "   leading and trailing   ",
]
EXTRA_TEXTS = ["", "a", " ", "<s> inside </s> and <unk>", "x" * 300, "\u2581 literal meta"]


def training_corpus(path):
    """Text from this machine: the licence texts and the word list, plus the test texts (so
    every script has pieces)."""
    lines = []
    for name in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(name):
            lines += open(name, encoding="utf-8", errors="ignore").read().splitlines()
    lines += open("/usr/share/dict/words", encoding="utf-8").read().splitlines()[::5]
    lines += TEXTS * 30
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(line for line in lines if line.strip()))


def run_json(command, stdin=None):
    out = subprocess.run(command, input=stdin, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def compare_cases(binary, peer, workdir, cases, texts, ids_only=()):
    """Each case (name -> tokenizer.json) on every text: ours against the peer's ids and
    code-point offsets (ids alone for the cases named in `ids_only`). Prints every mismatch;
    returns (texts checked, mismatches)."""
    texts_path = os.path.join(workdir, "texts.json")
    json.dump(texts, open(texts_path, "w"))
    checked = failures = 0
    for index, (name, tokenizer) in enumerate(cases.items()):
        directory = os.path.join(workdir, f"case{index}")
        os.makedirs(directory)
        path = os.path.join(directory, "tokenizer.json")
        json.dump(tokenizer, open(path, "w"), ensure_ascii=False)
        theirs = run_json(["node", peer, path, texts_path])
        ours = run_json([binary, directory], json.dumps(texts))
        same_offsets = lambda i: name in ids_only or ours["offsets"][i] == theirs["offsets"][i]
        bad = [i for i in range(len(texts))
               if ours["ids"][i] != theirs["ids"][i] or not same_offsets(i)]
        checked += len(texts)
        failures += len(bad)
        what = "ids" if name in ids_only else "ids and offsets"
        print(f"{name}: {len(texts) - len(bad)}/{len(texts)} texts equal in {what}")
        for i in bad:
            print(f"  MISMATCH {texts[i][:200]!r}\n    ours   {ours['ids'][i][:80]} "
                  f"{ours['offsets'][i][:40]}\n    theirs {theirs['ids'][i][:80]} "
                  f"{theirs['offsets'][i][:40]}")
    return checked, failures


def verdict(failed):
    """Prints the comparison's last line, FAILED or OK, and returns its exit code."""
    print("FAILED" if failed else "OK")
    return 1 if failed else 0
