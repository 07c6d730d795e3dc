#!/usr/bin/env python3
"""Reference fixtures for tests/check_tokenizer.c, made with Hugging Face `tokenizers`.

Run through tests/make_tokenizer_fixtures.sh (it names the venv). Writes into OUTDIR:
  text.txt.gz            the >= 1 MB UTF-8 test text (licence texts + generated multilingual lines,
                         seeded: re-running gives the same bytes)
  <name>.json.gz         tokenizer.json files trained here on a different text (the training corpus)
  <name>.expect          HF's ids for the whole test text: the count, whether decode gives the text
                         back, the length and FNV-1a 64 of HF's decode, then per block of 1024 ids the
                         text byte offset where the block starts and the FNV-1a 64 of the ids as
                         little-endian uint32 (a mismatch is located to its block without storing
                         every id)
  cases.json             short strings with their full ids and decodes, per tokenizer
  variants.json          the features the five files do not use (other pre-tokenizer settings,
                         normalizers, added-token options): each a patch of one of the files above
                         ("set": top-level keys replaced, "add": added tokens appended) with the
                         short strings' ids and decodes; VARIANTS_ONLY=1 remakes just this file
"""
import gzip
import json
import os
import random
import sys

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

OUT = sys.argv[1]
LICENSES = "/usr/share/common-licenses"
BLOCK = 1024

LLAMA3_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# Words per script; sentences are drawn from them with a seeded generator.
WORDS = {
    "cyrillic": "привет мир это тестовый текст для токенизатора съешь же ещё этих мягких французских булок "
                "да выпей чаю Москва Київ українська мова ґанок".split(),
    "greek": "Καλημέρα κόσμε αυτό είναι ένα δοκιμαστικό κείμενο ξεσκεπάζω την ψυχοφθόρα βδελυγμία Αθήνα".split(),
    "arabic": "مرحبا بالعالم هذا نص تجريبي للمحلل اللغوي العربية لغة جميلة القاهرة".split(),
    "hebrew": "שלום עולם זהו טקסט ניסיון עבור המפצל עברית ירושלים".split(),
    "devanagari": "नमस्ते दुनिया यह एक परीक्षण पाठ है हिन्दी भाषा दिल्ली क्षत्रिय".split(),
    "cjk": "你好世界 这是一个测试文本 分词器 中文 日本語のテキスト です 東京 漢字 ひらがな カタカナ".split(),
    "thai": "สวัสดีชาวโลก นี่คือข้อความทดสอบ ภาษาไทย กรุงเทพมหานคร".split(),
    "korean": "안녕하세요 세계 이것은 테스트 텍스트입니다 한국어 서울 토크나이저".split(),
    "latin": "café naïve résumé Zürich Ærøskøbing façade São Paulo Łódź İstanbul straße ﬁnance".split(),
    # decomposed forms (NFC changes them): e + combining acute, A + ring, Hangul jamo
    "decomposed": ["cafe\u0301", "A\u030angstro\u0308m", "\u1100\u1161\u11a8", "n\u0303o"],
    "emoji": ["😀", "🎉", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🤖", "🇩🇪", "🧑🏿‍🚀", "✨", "🔥🔥🔥"],
    "symbols": ["—", "…", "«", "»", "€", "±", "→", "∑", "√", "°C", "©", "™", "“quoted”", "‘single’"],
}
ENGLISH = ("the model is trained on text it's what we'll see they've I'm you'd she'll "
           "don't can't won't tokenizer data loader training step GPU rank world size").split()
WHITES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n", "  \t ", "\u00a0", "\u3000",
          "\u2003", "\u0085", "\u2028", "\u000b", "\u000c", "    "]
PUNCT = [".", ",", "!", "?", ";", ":", "...", "!!", "?!", "(", ")", "[x]", "{y}", "\"", "'", "-", "--",
         "#", "@", "$", "%", "&&", "||", "<", ">", "=>", "//", "/*", "*/", "_", "__init__"]


def gen_line(rng, kinds):
    parts = []
    for _ in range(rng.randint(3, 14)):
        r = rng.random()
        if r < 0.45:
            parts.append(rng.choice(WORDS[rng.choice(kinds)]))
        elif r < 0.6:
            parts.append(rng.choice(ENGLISH))
        elif r < 0.7:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 9))))
        elif r < 0.82:
            parts.append(rng.choice(PUNCT))
        elif r < 0.9:
            parts.append(rng.choice(WORDS["emoji"]))
        else:
            parts.append(rng.choice(WORDS["symbols"]))
        parts.append(" " if rng.random() < 0.8 else rng.choice(WHITES))
    line = "".join(parts)
    if rng.random() < 0.1:
        line += "   "            # trailing spaces
    if rng.random() < 0.1:
        line = "      " + line   # a run of spaces before a word
    return line + rng.choice(["\n", "\n", "\n", "\r\n", "\n\n"])


def read_license(name):
    with open(os.path.join(LICENSES, name), encoding="utf-8") as f:
        return f.read()


def training_corpus():
    rng = random.Random(1)
    kinds = list(WORDS)
    # the decomposed forms stay out of training so that NFC and byte fallback have work to do
    kinds.remove("decomposed")
    docs = [read_license(n) for n in ("GPL-3", "GPL-2", "LGPL-2.1", "Apache-2.0")]
    docs += ["".join(gen_line(rng, kinds) for _ in range(40)) for _ in range(120)]
    return docs


def test_text():
    rng = random.Random(2)
    kinds = list(WORDS)
    parts = [read_license(n) for n in ("MPL-2.0", "GFDL-1.3", "Artistic", "BSD", "CC0-1.0", "LGPL-3")]
    parts.append("It's what they'll do; it's 'quoted' and IT'S LOUD. We've been there, you'd know.\n")
    parts.append("Mixed: ab12cd 3.14159 1,000,000 x=y+z <|endoftext|> after the marker\n")
    parts.append("\ttab start\n    four spaces\n\n\n\nfour newlines\r\n\r\nCRLF\n \n  \n")
    n = 0
    while sum(len(p.encode()) for p in parts) < 1_150_000:
        lines = "".join(gen_line(rng, kinds) for _ in range(50))
        if n % 7 == 0:
            lines += "<|endoftext|>"      # documents separated as in GPT-2 data
        parts.append(lines)
        n += 1
    text = "".join(parts)
    # tokenizers and PCRE2 disagree on U+180E (\s in PCRE2 only): keep it out
    assert "\u180e" not in text
    return text


def bpe_trainer(vocab, special, **kw):
    return trainers.BpeTrainer(vocab_size=vocab, special_tokens=special, show_progress=False, **kw)


def make_gpt2(corpus):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train_from_iterator(corpus, bpe_trainer(6000, ["<|endoftext|>"],
                                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def make_llama3(corpus):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PAT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, bpe_trainer(6000, ["<|begin_of_text|>", "<|end_of_text|>"],
                                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    tok.add_special_tokens([AddedToken("<|eot_id|>", special=True, normalized=False)])
    return tok


def make_qwen2(corpus):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PAT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, bpe_trainer(5000, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def make_metaspace(corpus):
    """Llama-2 / TinyLlama / Mistral style: byte fallback, <unk>, <s>, </s>; trained with Metaspace
    splitting on words (the vocabulary these models ship was made the same way by sentencepiece)."""
    bytes_ = ["<0x%02X>" % b for b in range(256)]
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(prepend_scheme="first")])
    tok.train_from_iterator(corpus, bpe_trainer(3500, ["<unk>", "<s>", "</s>"] + bytes_, limit_alphabet=160))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    js = json.loads(tok.to_str())
    # the <0xAB> pieces are ordinary vocabulary entries in Llama files, not added tokens
    js["added_tokens"] = [a for a in js["added_tokens"] if a["content"] not in bytes_]
    return js


def llama2_legacy(js):
    """The form older Llama-2 / TinyLlama files use: no pre-tokenizer, normalizer Prepend + Replace."""
    js = json.loads(json.dumps(js))
    js["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    js["pre_tokenizer"] = None
    js["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    # merges in the older "a b" string form
    js["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in js["model"]["merges"]]
    return js


def fnv64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


SHORT = [
    "", " ", "  ", "a", "Hello world", " Hello world", "  leading spaces", "trailing   ",
    "hello\n\nworld\r\n", "\t\ttabs\tand spaces  \n", "😀", "👩‍💻 coding", "🧑🏿‍🚀",
    "it's they'll we've I'M", "3.14159 and 1234567 numbers", "Привет, мир!", "你好世界", "สวัสดี",
    "안녕하세요", "cafe\u0301 vs café", "<|endoftext|>", "a<|endoftext|>b", " <|endoftext|> x",
    "<s>Hello</s>", "Hello <s> world", "<|begin_of_text|>hi<|eot_id|>", "<|im_start|>user\nhi<|im_end|>",
    "ｆｕｌｌｗｉｄｔｈ", "Ω≈ç√∫", "\u0085next\u2028line", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "ᚠᛇᚻ᛫ᛒᛦᚦ",
]


ws = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}


def split(pattern, behavior, invert=False, regex=True):
    return {"type": "Split", "pattern": {"Regex" if regex else "String": pattern},
            "behavior": behavior, "invert": invert}


def seq(*p):
    return {"type": "Sequence", "pretokenizers": list(p)}


def added(id_, content, special=False, lstrip=False, rstrip=False, single_word=False, normalized=None):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": (not special) if normalized is None else normalized, "special": special}


VARIANTS = [
    ("gpt2", "ByteLevel add_prefix_space", {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True,
                                                              "trim_offsets": True, "use_regex": True}}, []),
    ("gpt2", "Digits individual", {"pre_tokenizer": seq({"type": "Digits", "individual_digits": True}, ws)}, []),
    ("gpt2", "Digits runs + ByteLevel regex", {"pre_tokenizer": seq(
        {"type": "Digits", "individual_digits": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True})}, []),
    ("gpt2", "Split Removed", {"pre_tokenizer": seq(split(r"\s+", "Removed"), ws)}, []),
    ("gpt2", "Split String MergedWithPrevious", {"pre_tokenizer": seq(split(" ", "MergedWithPrevious", regex=False), ws)}, []),
    ("gpt2", "Split MergedWithNext", {"pre_tokenizer": seq(split(r"\s", "MergedWithNext"), ws)}, []),
    ("gpt2", "Split Contiguous", {"pre_tokenizer": seq(split(r"[,.!?]", "Contiguous"), ws)}, []),
    ("gpt2", "Split invert", {"pre_tokenizer": seq(split(r"\p{L}+|\p{N}+", "Isolated", invert=True), ws)}, []),
    ("gpt2", "Split invert Removed", {"pre_tokenizer": seq(split(r"\w+|[^\w\s]+", "Removed", invert=True), ws)}, []),
    ("gpt2", "Whitespace", {"pre_tokenizer": seq({"type": "Whitespace"}, ws)}, []),
    ("gpt2", "WhitespaceSplit", {"pre_tokenizer": seq({"type": "WhitespaceSplit"}, ws)}, []),
    ("gpt2", "Punctuation", {"pre_tokenizer": seq({"type": "Punctuation", "behavior": "Isolated"}, ws)}, []),
    ("gpt2", "Punctuation Contiguous", {"pre_tokenizer": seq({"type": "Punctuation", "behavior": "Contiguous"},
                                                             {"type": "Digits", "individual_digits": False}, ws)}, []),
    ("gpt2", "normalizers NFKC Lowercase Strip Replace-regex", {"normalizer": {"type": "Sequence", "normalizers": [
        {"type": "NFKC"}, {"type": "Lowercase"}, {"type": "Strip", "strip_left": True, "strip_right": True},
        {"type": "Replace", "pattern": {"Regex": r"\d"}, "content": "#"}]}}, []),
    ("gpt2", "NFD", {"normalizer": {"type": "NFD"}}, []),
    ("gpt2", "added tokens lstrip/rstrip/single_word/normalized", {}, [
        added(6000, "<mask>", special=True, lstrip=True), added(6001, "[R]", special=True, rstrip=True),
        added(6002, "cat", single_word=True), added(6003, "qqzx", normalized=True),
        added(6004, "<|end|>", special=True), added(6005, "<|end|>x", special=True)]),
    ("gpt2", "normalized added tokens after Lowercase", {"normalizer": {"type": "Lowercase"}}, [
        added(6000, "qqzx", normalized=True), added(6001, "QQ", special=True, normalized=False),
        added(6002, "Zz", normalized=True)]),
    ("llama2", "normalized added tokens after Prepend+Replace", {}, [
        added(3500, "qqzx", normalized=True), added(3501, "QQ", special=True, normalized=False),
        added(3502, "a b", normalized=True)]),
    ("mistral", "Metaspace always, no split", {"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                                                                 "prepend_scheme": "always", "split": False},
                                               "decoder": {"type": "Sequence", "decoders": [
                                                   {"type": "ByteFallback"},
                                                   {"type": "Metaspace", "replacement": "\u2581",
                                                    "prepend_scheme": "always", "split": False}]}}, []),
    ("mistral", "Metaspace never", {"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                                                      "prepend_scheme": "never", "split": True},
                                    "decoder": {"type": "Sequence", "decoders": [
                                        {"type": "ByteFallback"},
                                        {"type": "Metaspace", "replacement": "\u2581",
                                         "prepend_scheme": "never", "split": True}]}}, []),
    ("mistral", "no unk fusing, no byte fallback", {}, []),
]
EXTRA = ["a <mask> b", "x<mask>", "[R]   y", "cat concat cat", "the cat's world", "hello world", "xqqzx qqzx!", "QQZX QQ qqzx", "hello qqzx", "qqzx", "a b a  b", "ZZ zz Zz",
         "  <|end|>x <|end|>  ", "I  have 12345 cats, dogs!!! and... birds?", "ÀÉÎ ＡＢＣ ﬁ ²", "  padded  "]


def make_variants(toks):
    out = []
    for base, what, set_, add in VARIANTS:
        js = json.loads(json.dumps(toks[base]))
        js.update(set_)
        js["added_tokens"] = js["added_tokens"] + add
        if what.startswith("no unk"):
            js["model"]["byte_fallback"] = False
            js["model"]["fuse_unk"] = False
        tok = Tokenizer.from_str(json.dumps(js))
        cases = []
        for s in SHORT + EXTRA:
            e = tok.encode(s, add_special_tokens=False).ids
            cases.append({"text": s, "ids": e, "decode": tok.decode(e, skip_special_tokens=False)})
        patch = {"base": base, "what": what, "set": set_, "add": add, "cases": cases}
        if what.startswith("no unk"):
            patch["model"] = {"byte_fallback": False, "fuse_unk": False}
        out.append(patch)
    with open(os.path.join(OUT, "variants.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)


def main():
    os.makedirs(OUT, exist_ok=True)
    if os.environ.get("VARIANTS_ONLY"):
        toks = {}
        for name in ("gpt2", "mistral", "llama2"):
            with gzip.open(os.path.join(OUT, name + ".json.gz"), "rt", encoding="utf-8") as f:
                toks[name] = json.load(f)
        make_variants(toks)
        return
    corpus = training_corpus()
    text = test_text()
    raw = text.encode("utf-8")
    with gzip.GzipFile(os.path.join(OUT, "text.txt.gz"), "wb", mtime=0) as f:
        f.write(raw)
    meta = make_metaspace(corpus)
    toks = {
        "gpt2": json.loads(make_gpt2(corpus).to_str()),
        "llama3": json.loads(make_llama3(corpus).to_str()),
        "qwen2": json.loads(make_qwen2(corpus).to_str()),
        "mistral": meta,
        "llama2": llama2_legacy(meta),
    }
    # byte offset of each character, to place blocks in the text
    char_byte = [0] * (len(text) + 1)
    acc = 0
    for i, c in enumerate(text):
        char_byte[i] = acc
        acc += len(c.encode("utf-8"))
    char_byte[len(text)] = acc
    cases = []
    for name, js in toks.items():
        data = json.dumps(js, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        with gzip.GzipFile(os.path.join(OUT, name + ".json.gz"), "wb", mtime=0) as f:
            f.write(data)
        tok = Tokenizer.from_str(data.decode("utf-8"))
        enc = tok.encode(text, add_special_tokens=False)
        ids = enc.ids
        dec = tok.decode(ids, skip_special_tokens=False)
        with open(os.path.join(OUT, name + ".expect"), "w") as f:
            f.write("# HF tokenizers %s: encode(text.txt, add_special_tokens=False)\n" % __import__("tokenizers").__version__)
            f.write("count %d\nblock %d\nroundtrip %d\n" % (len(ids), BLOCK, int(dec == text)))
            f.write("decode %d %016x\n" % (len(dec.encode("utf-8")), fnv64(dec.encode("utf-8"))))
            for b in range(0, len(ids), BLOCK):
                blk = ids[b:b + BLOCK]
                off = char_byte[enc.offsets[b][0]]
                f.write("%d %d %016x\n" % (b, off, fnv64(b"".join(i.to_bytes(4, "little") for i in blk))))
        print("%-8s vocab %5d  %7d ids for %d bytes  roundtrip %s" % (
            name, tok.get_vocab_size(), len(ids), len(raw), dec == text))
        for s in SHORT:
            e = tok.encode(s, add_special_tokens=False).ids
            cases.append({"tokenizer": name, "text": s, "ids": e,
                          "decode": tok.decode(e, skip_special_tokens=False)})
        # a character split across byte-fallback (or byte-level) tokens, decoded alone
        e = tok.encode("\u4e2d", add_special_tokens=False).ids
        if len(e) > 1:
            cases.append({"tokenizer": name, "text": None, "ids": e[:1],
                          "decode": tok.decode(e[:1], skip_special_tokens=False)})
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=0)
    make_variants(toks)


if __name__ == "__main__":
    main()
