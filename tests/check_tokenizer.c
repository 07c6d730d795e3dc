/* Unit tests of the tokenizers (src/data/tokenizer.c) against Hugging Face `tokenizers`: the ids of
 * a >= 1 MB multilingual text (compared block by block with the reference's hashes, the first
 * differing block shown with its text), decode(encode(x)) == x, token_bytes streaming, short
 * hand-picked strings with full ids and decodes, names/hashes/bos/eos, and bad input.
 * Fixtures: tests/fixtures/tokenizer/ (made by tests/make_tokenizer_fixtures.sh); the runner
 * (tests/tokenizer_unit.sh) unpacks them into $ACCEL_TOK_DIR: <name>/tokenizer.json, text.txt,
 * <name>.expect, cases.json, variants.json. */
#include "build_config.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "accel/accel.h"
#include "accel/file.h"
#include "accel/tokenizer.h"

static const char *const NAMES[] = { "gpt2", "llama3", "qwen2", "mistral", "llama2" };
#define NTOK (sizeof NAMES / sizeof NAMES[0])

static const char *dir(void)
{
    const char *d = getenv("ACCEL_TOK_DIR");
    return d ? d : "tok";
}

static accel_tokenizer_t *load(const char *name)
{
    char path[512], err[1024] = "";
    accel_tokenizer_t *t = NULL;
    snprintf(path, sizeof path, "%s/%s", dir(), name);
    accel_status_t st = accel_tokenizer_load(path, &t, err, sizeof err);
    ck_assert_msg(st == ACCEL_OK, "loading %s: status %d: %s", path, st, err);
    return t;
}

static uint64_t fnv64(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

static int added_id(const accel_tokenizer_t *t, const char *content)
{
    size_t len;
    const char *js = accel_tokenizer_json(t, &len);
    json_t *root = json_loadb(js, len, 0, NULL), *e;
    size_t i;
    int id = -1;
    json_array_foreach(json_object_get(root, "added_tokens"), i, e)
        if (!strcmp(json_string_value(json_object_get(e, "content")), content))
            id = (int)json_integer_value(json_object_get(e, "id"));
    json_decref(root);
    return id;
}

/* ------------------------------------------------------------------ names, hashes, special ids */

START_TEST(test_identity)
{
    static const struct { const char *bos, *eos; int vocab; } want[NTOK] = {
        { "<|endoftext|>", "<|endoftext|>", 6000 },
        { "<|begin_of_text|>", "<|end_of_text|>", 6001 },
        { NULL, "<|endoftext|>", 5000 },
        { "<s>", "</s>", 3500 },
        { "<s>", "</s>", 3500 },
    };
    for (size_t k = 0; k < NTOK; k++) {
        accel_tokenizer_t *t = load(NAMES[k]);
        char path[512], hex[32];
        size_t len, jl;
        snprintf(path, sizeof path, "%s/%s/tokenizer.json", dir(), NAMES[k]);
        char *bytes = accel_file_read(path, &len);
        ck_assert_ptr_nonnull(bytes);
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)XXH64(bytes, len, 0));
        ck_assert_str_eq(accel_tokenizer_name(t), NAMES[k]);
        ck_assert_str_eq(accel_tokenizer_hash(t), hex);
        const char *js = accel_tokenizer_json(t, &jl);
        ck_assert_uint_eq(jl, len);
        ck_assert(!memcmp(js, bytes, len));
        ck_assert_int_eq(accel_tokenizer_vocab(t), want[k].vocab);
        int bos = want[k].bos ? added_id(t, want[k].bos) : -1, eos = added_id(t, want[k].eos);
        ck_assert_int_ge(eos, 0);
        ck_assert_msg(accel_tokenizer_bos(t) == bos, "%s: bos %d, want %d", NAMES[k], accel_tokenizer_bos(t), bos);
        ck_assert_msg(accel_tokenizer_eos(t) == eos, "%s: eos %d, want %d", NAMES[k], accel_tokenizer_eos(t), eos);
        ck_assert_int_eq(accel_tokenizer_token_id(t, want[k].eos), eos);
        ck_assert_int_eq(accel_tokenizer_token_id(t, "no such token here"), -1);
        /* a vocabulary entry in the file's spelling: byte-level "Ġ" or metaspace "▁" forms */
        const char *piece = k < 3 ? "\xC4\xA0the" : "\xE2\x96\x81the";
        int pid = accel_tokenizer_token_id(t, piece);
        size_t pl;
        ck_assert_msg(pid >= 0, "%s: '%s' not found", NAMES[k], piece);
        const char *pb = accel_tokenizer_token_bytes(t, pid, 0, &pl);
        ck_assert_msg(pl == 4 && !memcmp(pb, " the", 4), "%s: token_bytes('%s') = '%.*s'", NAMES[k], piece, (int)pl, pb);

        /* the recorded form: same tokenizer from the kept bytes and the name */
        accel_tokenizer_t *r = NULL;
        char err[512];
        ck_assert_int_eq(accel_tokenizer_open_recorded(NAMES[k], js, jl, &r, err, sizeof err), ACCEL_OK);
        ck_assert_str_eq(accel_tokenizer_name(r), NAMES[k]);
        ck_assert_str_eq(accel_tokenizer_hash(r), hex);
        accel_tokenizer_free(r);
        accel_tokenizer_free(t);
        free(bytes);
    }
    /* a file not called tokenizer.json is named after itself */
    char path[512], err[512];
    accel_tokenizer_t *t = NULL;
    snprintf(path, sizeof path, "%s/gpt2-copy.json", dir());
    ck_assert_msg(accel_tokenizer_load(path, &t, err, sizeof err) == ACCEL_OK, "%s", err);
    ck_assert_str_eq(accel_tokenizer_name(t), "gpt2-copy");
    accel_tokenizer_free(t);
}
END_TEST

/* ------------------------------------------------------------------ the big text */

static void show_block(const char *name, const char *text, size_t tlen, size_t off, const int32_t *ids,
                       size_t n, size_t b, accel_tokenizer_t *t, char *msg, size_t cap)
{
    size_t a = off > 40 ? off - 40 : 0, e = off + 160 < tlen ? off + 160 : tlen;
    int w = snprintf(msg, cap, "%s: ids differ from HF in block at id %zu (text byte %zu), text there: [",
                     name, b, off);
    for (size_t i = a; i < e && w < (int)cap - 200; i++) {
        unsigned char c = (unsigned char)text[i];
        w += snprintf(msg + w, cap - (size_t)w, c < 0x20 ? "\\x%02x" : "%c", c);
    }
    w += snprintf(msg + w, cap - (size_t)w, "]; accel's ids there:");
    for (size_t i = b; i < n && i < b + 24 && w < (int)cap - 40; i++) {
        size_t bl;
        const char *tb = accel_tokenizer_token_bytes(t, ids[i], 0, &bl);
        w += snprintf(msg + w, cap - (size_t)w, " %d'%.*s'", ids[i], (int)bl, tb);
    }
}

START_TEST(test_big_text)
{
    char path[512];
    size_t tlen;
    snprintf(path, sizeof path, "%s/text.txt", dir());
    char *text = accel_file_read(path, &tlen);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    ck_assert_uint_ge(tlen, 1000000);
    for (size_t k = 0; k < NTOK; k++) {
        accel_tokenizer_t *t = load(NAMES[k]);
        size_t elen;
        snprintf(path, sizeof path, "%s/%s.expect", dir(), NAMES[k]);
        char *exp = accel_file_read(path, &elen);
        ck_assert_msg(exp != NULL, "cannot read %s", path);
        int32_t *ids = NULL;
        size_t n = 0, cap = 0;
        accel_status_t st = accel_tokenizer_encode(t, text, tlen, &ids, &n, &cap);
        ck_assert_msg(st == ACCEL_OK, "%s: encode: %d %s", NAMES[k], st, accel_tokenizer_last_error(t));

        /* compare block by block; report the first difference */
        size_t count = 0, block = 0, dlen = 0;
        int roundtrip = 0;
        unsigned long long dfnv = 0;
        char *line = strtok(exp, "\n");
        int nblocks = 0;
        for (; line; line = strtok(NULL, "\n")) {
            size_t b, off;
            unsigned long long h;
            if (line[0] == '#') continue;
            if (sscanf(line, "count %zu", &count) == 1 || sscanf(line, "block %zu", &block) == 1 ||
                sscanf(line, "roundtrip %d", &roundtrip) == 1 || sscanf(line, "decode %zu %llx", &dlen, &dfnv) == 2)
                continue;
            ck_assert_msg(sscanf(line, "%zu %zu %llx", &b, &off, &h) == 3, "%s: bad line '%s'", path, line);
            size_t m = b + block <= n ? block : (b < n ? n - b : 0);
            if (b >= n || fnv64(ids + b, m * sizeof *ids) != h) {
                static char msg[4096];
                show_block(NAMES[k], text, tlen, off, ids, n, b, t, msg, sizeof msg);
                ck_abort_msg("%s (accel: %zu ids, HF: %zu)", msg, n, count);
            }
            nblocks++;
        }
        ck_assert_msg(n == count, "%s: %zu ids, HF %zu", NAMES[k], n, count);
        ck_assert_int_eq(nblocks, (int)((count + block - 1) / block));

        /* decode: HF's string; the text itself where HF gives it back (NFC changes qwen2's) */
        char *dec = NULL;
        size_t dn = 0;
        ck_assert_int_eq(accel_tokenizer_decode(t, ids, n, &dec, &dn), ACCEL_OK);
        ck_assert_msg(dn == dlen && fnv64(dec, dn) == dfnv, "%s: decode differs from HF's (%zu vs %zu bytes)",
                      NAMES[k], dn, dlen);
        if (roundtrip) {
            size_t i = 0;
            while (i < dn && i < tlen && dec[i] == text[i]) i++;
            ck_assert_msg(dn == tlen && i == tlen, "%s: decode(encode(text)) differs at byte %zu of %zu",
                          NAMES[k], i, tlen);
        }
        /* streaming: the token_bytes pieces put together are the decoded text */
        size_t pos = 0;
        int same = 1;
        for (size_t i = 0; i < n && same; i++) {
            size_t bl;
            const char *tb = accel_tokenizer_token_bytes(t, ids[i], i == 0, &bl);
            ck_assert_ptr_nonnull(tb);
            if (pos + bl > dn || memcmp(dec + pos, tb, bl)) same = 0;
            pos += bl;
        }
        ck_assert_msg(same && pos == dn, "%s: token_bytes pieces differ from decode near byte %zu",
                      NAMES[k], pos);
        printf("%-8s %zu bytes -> %zu ids, identical to HF tokenizers; decode %s\n", NAMES[k], tlen, n,
               roundtrip ? "gives the text back" : "matches HF's");
        free(dec);
        free(ids);
        free(exp);
        accel_tokenizer_free(t);
    }
    free(text);
}
END_TEST

/* ------------------------------------------------------------------ short cases */

START_TEST(test_cases)
{
    char path[512];
    json_error_t jerr;
    snprintf(path, sizeof path, "%s/cases.json", dir());
    json_t *cases = json_load_file(path, 0, &jerr), *c;
    ck_assert_msg(cases != NULL, "%s: %s", path, jerr.text);
    accel_tokenizer_t *toks[NTOK];
    for (size_t k = 0; k < NTOK; k++) toks[k] = load(NAMES[k]);
    size_t i;
    int checked = 0;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "tokenizer"));
        accel_tokenizer_t *t = NULL;
        for (size_t k = 0; k < NTOK; k++)
            if (!strcmp(NAMES[k], name)) t = toks[k];
        ck_assert_ptr_nonnull(t);
        json_t *jt = json_object_get(c, "text"), *jids = json_object_get(c, "ids");
        size_t nw = json_array_size(jids);
        int32_t *want = malloc((nw + 1) * sizeof *want);
        for (size_t j = 0; j < nw; j++) want[j] = (int32_t)json_integer_value(json_array_get(jids, j));
        if (json_is_string(jt)) {
            const char *s = json_string_value(jt);
            int32_t *ids = NULL;
            size_t n = 0, cap = 0;
            ck_assert_int_eq(accel_tokenizer_encode(t, s, json_string_length(jt), &ids, &n, &cap), ACCEL_OK);
            int same = n == nw;
            for (size_t j = 0; same && j < n; j++) same = ids[j] == want[j];
            if (!same) {
                char got[512] = "", exp[512] = "";
                for (size_t j = 0; j < n && strlen(got) < 480; j++) sprintf(got + strlen(got), " %d", ids[j]);
                for (size_t j = 0; j < nw && strlen(exp) < 480; j++) sprintf(exp + strlen(exp), " %d", want[j]);
                ck_abort_msg("%s: encode('%s'): accel [%s ], HF [%s ]", name, s, got, exp);
            }
            free(ids);
        }
        char *dec = NULL;
        size_t dn;
        ck_assert_int_eq(accel_tokenizer_decode(t, want, nw, &dec, &dn), ACCEL_OK);
        const char *wd = json_string_value(json_object_get(c, "decode"));
        ck_assert_msg(dn == strlen(wd) && !strcmp(dec, wd), "%s: decode of '%s': accel '%s', HF '%s'", name,
                      json_is_string(jt) ? json_string_value(jt) : "(ids)", dec, wd);
        free(dec);
        free(want);
        checked++;
    }
    ck_assert_int_ge(checked, 100);
    printf("%d short cases identical to HF tokenizers (ids and decodes)\n", checked);
    for (size_t k = 0; k < NTOK; k++) accel_tokenizer_free(toks[k]);
    json_decref(cases);
}
END_TEST

/* The features the five files do not use, each a patch of one of them (tests/fixtures/tokenizer/
 * variants.json: "set" replaces top-level keys, "add" appends added tokens, "model" sets model keys),
 * with HF's ids and decodes of short strings. */
START_TEST(test_variants)
{
    char path[512];
    json_error_t jerr;
    snprintf(path, sizeof path, "%s/variants.json", dir());
    json_t *vars = json_load_file(path, 0, &jerr), *v;
    ck_assert_msg(vars != NULL, "%s: %s", path, jerr.text);
    size_t i;
    int checked = 0;
    json_array_foreach(vars, i, v) {
        const char *base = json_string_value(json_object_get(v, "base"));
        const char *what = json_string_value(json_object_get(v, "what"));
        snprintf(path, sizeof path, "%s/%s/tokenizer.json", dir(), base);
        json_t *js = json_load_file(path, 0, &jerr);
        ck_assert_msg(js != NULL, "%s: %s", path, jerr.text);
        json_object_update(js, json_object_get(v, "set"));
        json_array_extend(json_object_get(js, "added_tokens"), json_object_get(v, "add"));
        if (json_object_get(v, "model")) json_object_update(json_object_get(js, "model"), json_object_get(v, "model"));
        char *text = json_dumps(js, JSON_COMPACT);
        char err[1024] = "";
        accel_tokenizer_t *t = NULL;
        accel_status_t st = accel_tokenizer_from_json(text, strlen(text), base, &t, err, sizeof err);
        ck_assert_msg(st == ACCEL_OK, "variant '%s': %d %s", what, st, err);
        json_t *c;
        size_t j;
        json_array_foreach(json_object_get(v, "cases"), j, c) {
            json_t *jt = json_object_get(c, "text"), *jids = json_object_get(c, "ids");
            size_t nw = json_array_size(jids), n = 0, cap = 0;
            int32_t *ids = NULL, *want = malloc((nw + 1) * sizeof *want);
            for (size_t k = 0; k < nw; k++) want[k] = (int32_t)json_integer_value(json_array_get(jids, k));
            ck_assert_int_eq(accel_tokenizer_encode(t, json_string_value(jt), json_string_length(jt), &ids, &n, &cap),
                             ACCEL_OK);
            int same = n == nw;
            for (size_t k = 0; same && k < n; k++) same = ids[k] == want[k];
            if (!same) {
                char got[512] = "", exp[512] = "";
                for (size_t k = 0; k < n && strlen(got) < 480; k++) sprintf(got + strlen(got), " %d", ids[k]);
                for (size_t k = 0; k < nw && strlen(exp) < 480; k++) sprintf(exp + strlen(exp), " %d", want[k]);
                ck_abort_msg("variant '%s': encode('%s'): accel [%s ], HF [%s ]", what, json_string_value(jt), got, exp);
            }
            char *dec = NULL;
            size_t dn;
            ck_assert_int_eq(accel_tokenizer_decode(t, want, nw, &dec, &dn), ACCEL_OK);
            const char *wd = json_string_value(json_object_get(c, "decode"));
            ck_assert_msg(!strcmp(dec, wd), "variant '%s': decode of '%s': accel '%s', HF '%s'", what,
                          json_string_value(jt), dec, wd);
            free(dec);
            free(ids);
            free(want);
            checked++;
        }
        accel_tokenizer_free(t);
        free(text);
        json_decref(js);
    }
    printf("%d strings through %zu variants identical to HF tokenizers\n", checked, json_array_size(vars));
    json_decref(vars);
}
END_TEST

/* A character split across tokens: token_bytes hands out the raw bytes piece by piece, decode of
 * the incomplete piece gives U+FFFD (as HF), the whole sequence the character. */
START_TEST(test_partial_utf8)
{
    for (size_t k = 0; k < NTOK; k++) {
        accel_tokenizer_t *t = load(NAMES[k]);
        const char *s = "\xE9\xBE\x98 \xF0\x9D\x94\x98"; /* U+9F98 U+1D518: in no training text */
        int32_t *ids = NULL;
        size_t n = 0, cap = 0, pos = 0, len = strlen(s);
        ck_assert_int_eq(accel_tokenizer_encode(t, s, len, &ids, &n, &cap), ACCEL_OK);
        ck_assert_uint_gt(n, 1);
        char buf[64];
        size_t cut = 0;                 /* ids[0..cut) end inside the first character */
        for (size_t i = 0; i < n; i++) {
            size_t bl;
            const char *tb = accel_tokenizer_token_bytes(t, ids[i], i == 0, &bl);
            ck_assert(pos + bl <= sizeof buf);
            memcpy(buf + pos, tb, bl);
            pos += bl;
            if (!cut && pos > 0 && pos < 3) cut = i + 1;
        }
        ck_assert_msg(cut > 0, "%s: U+9F98 is not split over tokens", NAMES[k]);
        ck_assert_uint_eq(pos, len);
        ck_assert(!memcmp(buf, s, len));
        char *dec;
        size_t dn;
        ck_assert_int_eq(accel_tokenizer_decode(t, ids, cut, &dec, &dn), ACCEL_OK);
        ck_assert_msg(strstr(dec, "\xEF\xBF\xBD") != NULL, "%s: decode of a partial character: '%s'",
                      NAMES[k], dec);
        free(dec);
        free(ids);
        accel_tokenizer_free(t);
    }
}
END_TEST

/* Random text (any Unicode scalar value, control characters and whitespace runs included) comes
 * back from decode(encode(x)) for the tokenizers whose normalizer changes nothing; a metaspace
 * tokenizer's text starts with a letter (HF drops one leading space, see docs/tokenizers.md) and
 * holds no "▁" (it decodes as a space, in HF too). */
static size_t put_cp(char *o, uint32_t c)
{
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xC0 | c >> 6); o[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | c >> 12); o[1] = (char)(0x80 | ((c >> 6) & 0x3F)); o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | c >> 18); o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

START_TEST(test_random_roundtrip)
{
    static const char *const names[] = { "gpt2", "llama3", "mistral", "llama2" };
    uint64_t x = 88172645463325252ull;
    for (size_t k = 0; k < 4; k++) {
        accel_tokenizer_t *t = load(names[k]);
        for (int r = 0; r < 400; r++) {
            char s[1200];
            size_t len = 0;
            s[len++] = 'x';
            int nc = 1 + r % 200;
            for (int c = 0; c < nc; c++) {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                uint32_t cp, kind = (uint32_t)(x % 8), v = (uint32_t)(x >> 16);
                if (kind < 3) cp = 0x20 + v % 0x5F;                      /* ASCII */
                else if (kind == 3) cp = " \t\n\r"[v % 4];              /* whitespace */
                else if (kind == 4) cp = v % 0x20;                        /* controls, NUL too */
                else if (kind == 5) cp = 0x80 + v % 0x2000;               /* Latin .. Greek .. */
                else if (kind == 6) cp = 0x2000 + v % 0xB000;             /* symbols, CJK, Hangul */
                else cp = 0x10000 + v % 0x100000;                         /* astral planes */
                if (cp >= 0xD800 && cp < 0xE000) cp = 'y';                /* no surrogates */
                if (cp == 0x180E) cp = 'z';                               /* see docs: PCRE2's \s */
                if (cp == 0x2581) cp = 'w';               /* metaspace: "▁" in text decodes as a space (HF too) */
                len += put_cp(s + len, cp);
            }
            int32_t *ids = NULL;
            size_t n = 0, cap = 0;
            ck_assert_int_eq(accel_tokenizer_encode(t, s, len, &ids, &n, &cap), ACCEL_OK);
            char *dec;
            size_t dn;
            ck_assert_int_eq(accel_tokenizer_decode(t, ids, n, &dec, &dn), ACCEL_OK);
            ck_assert_msg(dn == len && !memcmp(dec, s, len), "%s: random text %d does not come back (%zu vs %zu bytes)",
                          names[k], r, dn, len);
            free(dec);
            free(ids);
        }
        accel_tokenizer_free(t);
    }
}
END_TEST

/* ------------------------------------------------------------------ bad input */

static void expect_refused(const char *json, accel_status_t want, const char *says)
{
    char err[1024] = "";
    accel_tokenizer_t *t = NULL;
    accel_status_t st = accel_tokenizer_from_json(json, strlen(json), "bad", &t, err, sizeof err);
    ck_assert_msg(st == want, "'%.60s...': status %d, want %d (%s)", json, st, want, err);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, says) != NULL, "error '%s' does not say '%s'", err, says);
}

START_TEST(test_bad_input)
{
    expect_refused("hello", ACCEL_ERR_CORRUPT, "line 1");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0", ACCEL_ERR_CORRUPT, "column");
    expect_refused("[1, 2]", ACCEL_ERR_CORRUPT, "an array");
    expect_refused("{\"version\": \"1.0\"}", ACCEL_ERR_CORRUPT, "'model' is missing");
    expect_refused("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", ACCEL_ERR_UNSUPPORTED, "WordPiece");
    expect_refused("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", ACCEL_ERR_UNSUPPORTED, "Unigram");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {}, \"merges\": []}}",
                   ACCEL_ERR_UNSUPPORTED, "dropout is 0.1");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"continuing_subword_prefix\": \"##\", \"vocab\": {}}}",
                   ACCEL_ERR_UNSUPPORTED, "continuing_subword_prefix is '##'");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": [1]}}", ACCEL_ERR_CORRUPT, "model.vocab is an array");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"x\"}}}", ACCEL_ERR_CORRUPT, "vocab['a']");
    expect_refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}}",
                   ACCEL_ERR_CORRUPT, "merges[0]");
    expect_refused("{\"normalizer\": {\"type\": \"BertNormalizer\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
                   ACCEL_ERR_UNSUPPORTED, "BertNormalizer");
    expect_refused("{\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
                   ACCEL_ERR_UNSUPPORTED, "BertPreTokenizer");
    expect_refused("{\"decoder\": {\"type\": \"WordPiece\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
                   ACCEL_ERR_UNSUPPORTED, "decoder type 'WordPiece'");
    expect_refused("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": "
                   "\"Isolated\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
                   ACCEL_ERR_UNSUPPORTED, "does not compile");

    char err[512];
    accel_tokenizer_t *t = NULL;
    ck_assert_int_eq(accel_tokenizer_load("/nonexistent/tok", &t, err, sizeof err), ACCEL_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/tok"));

    /* invalid UTF-8 to encode, an id out of range to decode */
    t = load("gpt2");
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    ck_assert_int_eq(accel_tokenizer_encode(t, "abc\xC3(def", 8, &ids, &n, &cap), ACCEL_ERR_INVALID);
    ck_assert_msg(strstr(accel_tokenizer_last_error(t), "byte offset 3") != NULL, "%s", accel_tokenizer_last_error(t));
    ck_assert_int_eq(accel_tokenizer_encode(t, "\xED\xA0\x80", 3, &ids, &n, &cap), ACCEL_ERR_INVALID); /* surrogate */
    ck_assert_int_eq(accel_tokenizer_encode(t, "ok", 2, &ids, &n, &cap), ACCEL_OK);
    ck_assert_str_eq(accel_tokenizer_last_error(t), "");
    int32_t bad[2] = { 5, accel_tokenizer_vocab(t) };
    char *dec;
    size_t dn;
    ck_assert_int_eq(accel_tokenizer_decode(t, bad, 2, &dec, &dn), ACCEL_ERR_INVALID);
    bad[1] = -1;
    ck_assert_int_eq(accel_tokenizer_decode(t, bad, 2, &dec, &dn), ACCEL_ERR_INVALID);
    size_t bl;
    ck_assert_ptr_null(accel_tokenizer_token_bytes(t, accel_tokenizer_vocab(t), 0, &bl));
    ck_assert_ptr_null(accel_tokenizer_token_bytes(t, -1, 0, &bl));
    free(ids);
    accel_tokenizer_free(t);
}
END_TEST

/* The byte tokenizer keeps working as before. */
START_TEST(test_bytes)
{
    accel_tokenizer_t *t;
    ck_assert_int_eq(accel_tokenizer_bytes(&t), ACCEL_OK);
    int32_t *ids = NULL;
    size_t n = 0, cap = 0, len;
    ck_assert_int_eq(accel_tokenizer_encode(t, "a\xFF", 2, &ids, &n, &cap), ACCEL_OK);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(ids[1], 255);
    ck_assert_ptr_null(accel_tokenizer_json(t, &len));
    ck_assert_str_eq(accel_tokenizer_hash(t), "");
    free(ids);
    accel_tokenizer_free(t);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *tc = tcase_create("tokenizer");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_bytes);
    tcase_add_test(tc, test_identity);
    tcase_add_test(tc, test_cases);
    tcase_add_test(tc, test_variants);
    tcase_add_test(tc, test_partial_utf8);
    tcase_add_test(tc, test_random_roundtrip);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_big_text);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"
