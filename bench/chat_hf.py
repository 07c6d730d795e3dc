"""The Python side of bench/chat_prepare.sh: the generated chat corpus, the tokenizer directory, the
transformers peer of `accel_data prepare` on conversations, and the comparison of their outputs.

  chat_hf.py gen N WORDS OUT.jsonl          N conversations (seeded: the same file every run)
  chat_hf.py tokenizer SRC.json DIR         DIR/tokenizer.json (the chat tokens added when missing)
                                            and DIR/tokenizer_config.json (eos "<|im_end|>", no bos)
  chat_hf.py run DIR T.jinja IN.jsonl OUT   what TRL does per conversation, single process: ids and
                                            assistant masks into numpy arrays, written as OUT.u32
                                            (uint32 LE), OUT.mask (one 0/1 byte per id) and
                                            OUT.counts (the ids of each conversation, uint32)
  chat_hf.py render DIR T.jinja IN.jsonl    the template rendering alone (tokenize=False)
  chat_hf.py compare OUT DTYPE TT VT TM VM IN.jsonl DIR T.jinja
                                            OUT.* against accel's raw /train and /val tokens (TT VT,
                                            DTYPE u16 or u32) and loss masks (TM VM)

run and render print one line "conversations N tokens T trained K load_s L loop_s S cpu_s C
startup_mib M peak_mib P": load_s is importing transformers (which imports torch: about 560 MiB
resident before any data) and loading the tokenizer; loop_s reads the JSON Lines, one
conversation at a time, and makes the arrays (accel's time includes its JSON parsing too); peak is
the process's maximum resident set (resource.getrusage), startup the same after the load.

The peer's mask: a template with {% generation %} gets apply_chat_template's own
return_assistant_tokens_mask=True (TRL's assistant_only_loss); a template without them gets the
prefix rule accel applies (docs/chat.md), computed with transformers' renderer and the tokenizer's
offsets as tests/chat_reference.py does: assistant message i trains
[len(render(messages[:i], add_generation_prompt=True)), len(render(messages[:i+1]))), and a token
is trained when its [start, end) overlaps a trained span (transformers' rule)."""
import json
import random
import re
import resource
import sys
import time


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # KiB on Linux


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---- the corpus
UNICODE = ["café", "résumé", "élève", "déjà", "naïve", "Grüße", "日本", "日本語", "東京", "こんにちは",
           "中文", "😀", "🚀", "👍🏽", "🎉✨", "€", "—", "«bien»"]


def gen(n, words_path, out_path):
    rnd = random.Random(26)
    with open(words_path, encoding="utf-8") as f:
        words = [w for w in f.read().split() if re.fullmatch(r"[A-Za-z,.;:()-]+", w)]

    def text(lo=10, hi=200):
        k = rnd.randint(lo, hi)
        out = []
        for i in range(k):
            r = rnd.random()
            if r < 0.03:
                w = rnd.choice(UNICODE)
            elif r < 0.04:
                w = '"%s"' % rnd.choice(words)          # JSON escapes
            elif r < 0.05:
                w = str(rnd.randint(0, 99999))
            else:
                w = rnd.choice(words)
            if i and rnd.random() < 0.02:
                out.append("\n\n" if rnd.random() < 0.7 else "\n")
            elif i:
                out.append(" ")
            out.append(w)
        return "".join(out)

    with open(out_path, "w", encoding="utf-8") as f:
        for _ in range(n):
            msgs = []
            if rnd.random() < 0.3:
                msgs.append({"role": "system", "content": text()})
            for _ in range(rnd.randint(1, 4)):
                msgs.append({"role": "user", "content": text()})
                a = text()
                r = rnd.random()
                if r < 0.02:
                    a = "\n\n" + a                      # a token that starts in the header, ends in the answer
                elif r < 0.04:
                    a = a + "\n"
                msgs.append({"role": "assistant", "content": a})
            f.write(json.dumps({"messages": msgs}, ensure_ascii=False) + "\n")


# ---- the tokenizer directory
def make_tokenizer(src, outdir):
    import os
    from tokenizers import AddedToken, Tokenizer
    tok = Tokenizer.from_file(src)
    need = ["<|im_start|>", "<|im_end|>"]
    missing = [t for t in need if tok.token_to_id(t) is None]
    if missing:
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in missing])
    os.makedirs(outdir, exist_ok=True)
    tok.save(os.path.join(outdir, "tokenizer.json"))
    with open(os.path.join(outdir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
                   "clean_up_tokenization_spaces": False, "model_max_length": 1 << 20}, f, indent=1)
        f.write("\n")
    print("tokenizer: vocab %d; %s: ids %s%s" % (
        tok.get_vocab_size(), " ".join(need), " ".join(str(tok.token_to_id(t)) for t in need),
        "; added " + " ".join(missing) if missing else " (already in the vocabulary)"))


# ---- the peer
def load(tokdir, template_path):
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    tok = AutoTokenizer.from_pretrained(tokdir)
    assert tok.eos_token == "<|im_end|>" and tok.bos_token is None, (tok.bos_token, tok.eos_token)
    with open(template_path, encoding="utf-8") as f:
        template = f.read()
    return tok, template


def has_generation(template):
    return re.search(r"\{%-?\s*generation\s", template) is not None


def conversations(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)["messages"]


def prefix_spans(tok, template, messages):
    spans = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        p = tok.apply_chat_template(messages[:i], chat_template=template, tokenize=False,
                                    add_generation_prompt=True)
        q = tok.apply_chat_template(messages[:i + 1], chat_template=template, tokenize=False)
        assert q.startswith(p), "render(messages[:%d]) is not a prefix" % i
        spans.append((len(p), len(q)))
    return spans


def overlap_mask(offsets, spans):
    """transformers' rule (apply_chat_template's assistant_masks): spans and tokens in order."""
    mask = [0] * len(offsets)
    k = 0
    for t, (s, e) in enumerate(offsets):
        while k < len(spans) and s >= spans[k][1]:
            k += 1
        if k == len(spans):
            break
        if e > spans[k][0]:
            mask[t] = 1
    return mask


def report(n, ids, trained, t_load, t_loop, startup):
    print("conversations %d tokens %d trained %d load_s %.3f loop_s %.3f cpu_s %.3f startup_mib %.0f peak_mib %.0f"
          % (n, ids, trained, t_load, t_loop, cpu_s(), startup, peak_mib()))


def run(tokdir, template_path, jsonl, out):
    import numpy as np
    t0 = time.perf_counter()
    tok, template = load(tokdir, template_path)
    gen_tags = has_generation(template)
    startup = peak_mib()
    t1 = time.perf_counter()
    ids_l, mask_l, counts = [], [], []
    for messages in conversations(jsonl):           # JSON parsing timed, as accel's is
        if gen_tags:
            enc = tok.apply_chat_template(messages, chat_template=template, tokenize=True, return_dict=True,
                                          return_assistant_tokens_mask=True)
            ids, mask = enc["input_ids"], enc["assistant_masks"]
        else:
            text = tok.apply_chat_template(messages, chat_template=template, tokenize=False)
            spans = prefix_spans(tok, template, messages)
            enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
            ids, mask = enc["input_ids"], overlap_mask(enc["offset_mapping"], spans)
        ids_l.append(np.asarray(ids, dtype=np.uint32))
        mask_l.append(np.asarray(mask, dtype=np.uint8))
        counts.append(len(ids))
    ids_a = np.concatenate(ids_l)
    mask_a = np.concatenate(mask_l)
    t2 = time.perf_counter()
    ids_a.astype("<u4").tofile(out + ".u32")
    mask_a.tofile(out + ".mask")
    np.asarray(counts, dtype="<u4").tofile(out + ".counts")
    report(len(counts), len(ids_a), int(mask_a.sum()), t1 - t0, t2 - t1, startup)


def render(tokdir, template_path, jsonl):
    t0 = time.perf_counter()
    tok, template = load(tokdir, template_path)
    gen_tags = has_generation(template)
    startup = peak_mib()
    t1 = time.perf_counter()
    chars, n = 0, 0
    for messages in conversations(jsonl):
        n += 1
        chars += len(tok.apply_chat_template(messages, chat_template=template, tokenize=False))
        if not gen_tags:                          # the prefix rule's renders too
            prefix_spans(tok, template, messages)
    t2 = time.perf_counter()
    report(n, 0, 0, t1 - t0, t2 - t1, startup)
    print("rendered %d characters" % chars)


# ---- the differential check
def compare(out, dtype, tt, vt, tm, vm, jsonl, tokdir, template_path):
    import numpy as np
    dt = {"u8": np.uint8, "u16": "<u2", "u32": "<u4"}[dtype]
    a_ids = np.concatenate([np.fromfile(tt, dtype=dt), np.fromfile(vt, dtype=dt)]).astype(np.int64)
    a_mask = np.concatenate([np.fromfile(tm, dtype=np.uint8), np.fromfile(vm, dtype=np.uint8)])
    h_ids = np.fromfile(out + ".u32", dtype="<u4").astype(np.int64)
    h_mask = np.fromfile(out + ".mask", dtype=np.uint8)
    counts = np.fromfile(out + ".counts", dtype="<u4").astype(np.int64)
    ends = np.cumsum(counts)
    print("tokens: accel %d, transformers %d; trained: accel %d, transformers %d"
          % (len(a_ids), len(h_ids), int(a_mask.sum()), int(h_mask.sum())))

    def first_diff(a, b):
        n = min(len(a), len(b))
        d = np.flatnonzero(a[:n] != b[:n])
        if len(d):
            return int(d[0]), int(len(d))
        return (n, 0) if len(a) != len(b) else (None, 0)

    ids_pos, ids_n = first_diff(a_ids, h_ids)
    mask_pos, mask_n = first_diff(a_mask, h_mask)
    print("ids identical: %s, masks identical: %s" % ("yes" if ids_pos is None else "no",
                                                      "yes" if mask_pos is None else "no"))
    if ids_pos is None and mask_pos is None:
        return 0
    from tokenizers import Tokenizer
    raw = Tokenizer.from_file(tokdir + "/tokenizer.json")
    tok, template = load(tokdir, template_path)
    for what, pos, n in (("ids", ids_pos, ids_n), ("masks", mask_pos, mask_n)):
        if pos is None:
            continue
        conv = int(np.searchsorted(ends, pos, side="right"))
        start = int(ends[conv - 1]) if conv else 0
        print("first %s difference at stream position %d (%d differing positions in the common length): "
              "conversation %d (line %d of the JSON Lines), its token %d of %d"
              % (what, pos, n, conv, conv + 1, pos - start, counts[conv] if conv < len(counts) else -1))
        lo, hi = max(start, pos - 8), pos + 8
        for name, ids, mask in (("accel", a_ids, a_mask), ("transformers", h_ids, h_mask)):
            seg = ids[lo:hi]
            print("  %-12s ids  %s" % (name, " ".join("%d%s" % (i, "*" if m else "") for i, m in zip(seg, mask[lo:hi]))))
            print("  %-12s text %r" % ("", [raw.decode([int(i)], skip_special_tokens=False) for i in seg]))
        if conv < len(counts):
            messages = next(m for i, m in enumerate(conversations(jsonl)) if i == conv)
            text = tok.apply_chat_template(messages, chat_template=template, tokenize=False)
            enc = raw.encode(text, add_special_tokens=False)
            k = pos - start
            if k < len(enc.offsets):
                s = enc.offsets[k][0]
                print("  the rendering around it (character %d): %r" % (s, text[max(0, s - 80):s + 80]))
        print("  (* = trained)")
    return 1


def main(argv):
    cmd = argv[1]
    if cmd == "gen":
        gen(int(argv[2]), argv[3], argv[4])
    elif cmd == "tokenizer":
        make_tokenizer(argv[2], argv[3])
    elif cmd == "run":
        run(*argv[2:6])
    elif cmd == "render":
        render(*argv[2:5])
    elif cmd == "compare":
        return compare(*argv[2:11])
    else:
        raise SystemExit("usage: see the docstring of bench/chat_hf.py")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
