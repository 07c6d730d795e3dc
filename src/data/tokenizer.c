/* Tokenizers (include/accel/tokenizer.h): the built-in byte tokenizer and Hugging Face
 * tokenizer.json files (byte-level BPE and byte-fallback BPE), read with jansson.
 *
 * Encoding follows HF `tokenizers` (Tokenizer.encode(text, add_special_tokens=False)) step by step:
 *   1. added tokens are found in the raw text (leftmost, then longest match) and become their ids;
 *   2. each stretch between them goes through the normalizer (Sequence/Prepend/Replace/NFC...),
 *   3. the pre-tokenizer chain (ByteLevel, Split, Metaspace, Digits, Sequence), applied depth first:
 *      each step hands its pieces straight to the next one, the last to the model;
 *   4. the BPE model: a cache from piece bytes to ids, then HF's merge loop (a heap of candidate
 *      pairs ordered by rank then position, stale entries skipped as HF does).
 * Byte-level vocabularies are stored as raw bytes (GPT-2's bytes_to_unicode undone at load time), so
 * the encoder never maps text to the printable alphabet. Decoding runs HF's decoder chain over the
 * token strings, so its output matches Tokenizer.decode(ids, skip_special_tokens=False). */
#define _GNU_SOURCE               /* memmem, qsort_r */
#include "build_config.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <jansson.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unicase.h>
#include <uninorm.h>
#include <xxhash.h>

#include "accel/tokenizer.h"
#include "json_type.h"

#define MAX_STEPS 16                 /* pre-tokenizer / normalizer / decoder steps after flattening */
#define CACHE_PIECE_MAX 256          /* pieces longer than this are not cached */
#define CACHE_MAX_ENTRIES (1u << 20) /* the cache is dropped when it grows past this */

/* ------------------------------------------------------------------ small containers */

typedef struct {
    char *p;
    size_t n, cap;
} buf_t;

static int buf_reserve(buf_t *b, size_t extra)
{
    if (b->n + extra <= b->cap) return 0;
    size_t c = b->cap ? b->cap : 256;
    while (c < b->n + extra) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) return -1;
    b->p = q;
    b->cap = c;
    return 0;
}

static int buf_put(buf_t *b, const void *s, size_t n)
{
    if (buf_reserve(b, n + 1)) return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static int ids_reserve(int32_t **ids, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    int32_t *p = realloc(*ids, c * sizeof *p);
    if (!p) return -1;
    *ids = p;
    *cap = c;
    return 0;
}

/* String -> int64 map, open addressing; keys live in one arena (offsets, so it may grow). */
typedef struct {
    uint64_t h;         /* 0: empty slot */
    uint32_t off, len;
    int64_t val;
} sslot_t;

typedef struct {
    sslot_t *s;
    size_t cap, n;
    buf_t keys;
} strmap_t;

static uint64_t str_hash(const char *p, size_t n) { return XXH3_64bits(p, n) | 1; }

static int strmap_grow(strmap_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    sslot_t *s = calloc(cap, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->s[i].h) continue;
        size_t j = m->s[i].h & (cap - 1);
        while (s[j].h) j = (j + 1) & (cap - 1);
        s[j] = m->s[i];
    }
    free(m->s);
    m->s = s;
    m->cap = cap;
    return 0;
}

static sslot_t *strmap_find(const strmap_t *m, const char *p, size_t n, uint64_t h)
{
    if (!m->cap) return NULL;
    size_t j = h & (m->cap - 1);
    for (;;) {
        sslot_t *e = &m->s[j];
        if (!e->h) return NULL;
        if (e->h == h && e->len == n && !memcmp(m->keys.p + e->off, p, n)) return e;
        j = (j + 1) & (m->cap - 1);
    }
}

static int strmap_get(const strmap_t *m, const char *p, size_t n, int64_t *val)
{
    sslot_t *e = strmap_find(m, p, n, str_hash(p, n));
    if (!e) return 0;
    *val = e->val;
    return 1;
}

/* Insert or overwrite. */
static int strmap_put(strmap_t *m, const char *p, size_t n, int64_t val)
{
    uint64_t h = str_hash(p, n);
    sslot_t *e = strmap_find(m, p, n, h);
    if (e) {
        e->val = val;
        return 0;
    }
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m)) return -1;
    if (m->keys.n + n > UINT32_MAX) return -1;
    size_t off = m->keys.n;
    if (buf_put(&m->keys, p, n)) return -1;
    size_t j = h & (m->cap - 1);
    while (m->s[j].h) j = (j + 1) & (m->cap - 1);
    m->s[j] = (sslot_t){ h, (uint32_t)off, (uint32_t)n, val };
    m->n++;
    return 0;
}

static void strmap_clear(strmap_t *m)
{
    if (m->s) memset(m->s, 0, m->cap * sizeof *m->s);
    m->n = 0;
    m->keys.n = 0;
}

static void strmap_free(strmap_t *m)
{
    free(m->s);
    free(m->keys.p);
    memset(m, 0, sizeof *m);
}

/* (left id, right id) -> (rank, merged id): the merge table. */
typedef struct {
    uint64_t key;       /* UINT64_MAX: empty */
    int32_t rank, id;
} pslot_t;

typedef struct {
    pslot_t *s;
    size_t cap, n;
} pairmap_t;

static inline uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }
static inline size_t pair_slot(uint64_t k, size_t cap)
{
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ull;
    return (size_t)(k >> 17) & (cap - 1);
}

static int pairmap_init(pairmap_t *m, size_t n)
{
    size_t cap = 64;
    while (cap < 2 * n + 2) cap *= 2;
    m->s = malloc(cap * sizeof *m->s);
    if (!m->s) return -1;
    for (size_t i = 0; i < cap; i++) m->s[i].key = UINT64_MAX;
    m->cap = cap;
    m->n = 0;
    return 0;
}

/* First insertion wins: HF keeps the lowest rank when a pair is listed twice. */
static void pairmap_put(pairmap_t *m, uint64_t k, int32_t rank, int32_t id)
{
    size_t j = pair_slot(k, m->cap);
    while (m->s[j].key != UINT64_MAX) {
        if (m->s[j].key == k) return;
        j = (j + 1) & (m->cap - 1);
    }
    m->s[j] = (pslot_t){ k, rank, id };
    m->n++;
}

static inline const pslot_t *pairmap_get(const pairmap_t *m, int32_t a, int32_t b)
{
    uint64_t k = pair_key(a, b);
    size_t j = pair_slot(k, m->cap);
    for (;;) {
        const pslot_t *e = &m->s[j];
        if (e->key == k) return e;
        if (e->key == UINT64_MAX) return NULL;
        j = (j + 1) & (m->cap - 1);
    }
}

/* ------------------------------------------------------------------ UTF-8 */

/* Length of the valid UTF-8 sequence at s (Rust/Unicode rules: no overlongs, no surrogates, at most
 * U+10FFFF), or 0 when invalid; *bad gets the length of the maximal invalid prefix (>= 1), which is
 * what String::from_utf8_lossy replaces with one U+FFFD. */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned c = s[0];
    *bad = 1;
    if (c < 0x80) return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    for (size_t i = 1; i < need; i++) {
        if (i >= n) {
            *bad = i;
            return 0;
        }
        unsigned d = s[i];
        if (d < (i == 1 ? lo : 0x80) || d > (i == 1 ? hi : 0xBF)) {
            *bad = i;
            return 0;
        }
    }
    return need;
}

/* Offset of the first invalid byte, or len when all is valid. */
static size_t utf8_check(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, bad;
    while (i < len) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_seq(s + i, len - i, &bad);
        if (!k) return i;
        i += k;
    }
    return len;
}

static uint32_t utf8_decode(const unsigned char *s, size_t k)
{
    switch (k) {
    case 1: return s[0];
    case 2: return (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    case 3: return (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    default:
        return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
               (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
    }
}

/* Length of the (valid) UTF-8 character at s. */
static inline size_t utf8_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Rust's char::is_whitespace (the White_Space property). */
static int is_white(uint32_t c)
{
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* String::from_utf8_lossy: each maximal invalid prefix becomes U+FFFD. */
static int append_lossy(buf_t *o, const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0, bad;
    while (i < n) {
        size_t k = utf8_seq(s + i, n - i, &bad);
        if (k) {
            if (buf_put(o, p + i, k)) return -1;
            i += k;
        } else {
            if (buf_put(o, "\xEF\xBF\xBD", 3)) return -1;
            i += bad;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ the tokenizer */

enum { PRE_SPLIT, PRE_METASPACE, PRE_BYTELEVEL };
enum { BEH_REMOVED, BEH_ISOLATED, BEH_MERGED_PREV, BEH_MERGED_NEXT, BEH_CONTIGUOUS };
enum { NORM_PREPEND, NORM_REPLACE, NORM_NF, NORM_LOWER, NORM_STRIP };
enum { DEC_BYTELEVEL, DEC_METASPACE, DEC_REPLACE, DEC_BYTEFALLBACK, DEC_FUSE, DEC_STRIP };
enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };

/* A regular expression or a literal string to split on / replace. */
typedef struct {
    pcre2_code *re;            /* NULL: literal */
    pcre2_match_data *md;
    char *lit;
    size_t litlen;
} pattern_t;

typedef struct {
    size_t start, end;
    int match;
} span_t;

typedef struct {
    int type;
    pattern_t pat;
    int behavior, invert;       /* Split */
    char repl[8];               /* Metaspace replacement (UTF-8) */
    size_t repl_len;
    int prepend, split;         /* Metaspace */
    int add_prefix_space;       /* ByteLevel */
    buf_t scratch;              /* this step's rewritten piece */
    span_t *spans;
    size_t nspans, spans_cap;
} pretok_t;

typedef struct {
    int type;
    pattern_t pat;              /* Replace */
    char *content;              /* Replace content / Prepend text */
    size_t content_len;
    uninorm_t nf;               /* NFC ... */
    int strip_left, strip_right;
} norm_t;

typedef struct {
    int type;
    char *pat, *content;        /* Replace (literal) */
    size_t pat_len, content_len;
    uint32_t strip_char;        /* Strip */
    int strip_start, strip_stop;
    int prepend;                /* Metaspace */
    char repl[8];
    size_t repl_len;
} decstep_t;

typedef struct {
    int id;
    char *content;
    size_t len;
    int special, single_word, lstrip, rstrip, normalized;
    char *match;                /* what is looked for: the content, normalized when `normalized` */
    size_t match_len;
} added_t;

struct accel_tokenizer {
    char name[ACCEL_TOKENIZER_NAME_MAX];
    char hash[ACCEL_TOKENIZER_HASH_LEN + 1];
    int vocab;
    int bos, eos;
    int is_bytes;
    char byte_piece[256];                /* "bytes": the one-byte piece of each token */

    char *json;                          /* the tokenizer.json bytes */
    size_t json_len;
    char err[256];                       /* why the last encode failed */

    /* model (BPE) */
    int byte_level;                      /* vocab stored as raw bytes; units are bytes */
    strmap_t vocab_map;                  /* raw bytes (byte-level) or token string -> id */
    pairmap_t merges;
    int32_t byte_id[256];                /* byte-level: id of each byte; else id of 1-byte chars */
    int32_t fallback_id[256];            /* <0xAB> tokens, -1 when absent */
    int byte_fallback, ignore_merges, fuse_unk;
    int32_t unk_id;                      /* -1: none */

    /* per id */
    char **tok_str;                      /* the token as HF spells it (vocab key or added content) */
    size_t *tok_len;
    char **raw;                          /* the bytes the token stands for (token_bytes) */
    size_t *raw_len;
    unsigned char *is_added;
    int strip_first;                     /* the decoder drops the space the encoder prepended */

    added_t *added;
    int nadded;
    /* indices of added tokens by first byte, longest first; [0]: matched in the raw text, [1]: the
     * `normalized` ones, matched in the normalized text (HF's two passes) */
    int16_t *added_first[2][256];
    int added_nfirst[2][256];

    norm_t norm[MAX_STEPS];
    int nnorm;
    pretok_t pre[MAX_STEPS];
    int npre;
    decstep_t dec[MAX_STEPS];
    int ndec, has_decoder;
    pcre2_jit_stack *jit_stack;
    pcre2_match_context *mctx;
    pcre2_code *word_re;                 /* single_word: is this a word character */
    pcre2_match_data *word_md;

    /* encoding scratch */
    strmap_t cache;                      /* piece -> (offset into cache_ids) << 20 | count */
    int32_t *cache_ids;
    size_t cache_n, cache_cap;
    buf_t normbuf;
    int32_t *sym_id, *sym_prev, *sym_next;
    uint32_t *sym_len;
    size_t sym_cap;
    struct heap_e { int32_t rank; uint32_t pos; int32_t id; } *heap;
    size_t heap_cap;
    int32_t *tmp_ids;
    size_t tmp_n, tmp_cap;
};

/* ------------------------------------------------------------------ byte tokenizer */

accel_status_t accel_tokenizer_bytes(accel_tokenizer_t **out)
{
    accel_tokenizer_t *t = calloc(1, sizeof *t);
    if (!t) return ACCEL_ERR_NOMEM;
    snprintf(t->name, sizeof t->name, "%s", ACCEL_TOKENIZER_BYTES);
    t->vocab = 256;
    t->bos = t->eos = -1;
    t->is_bytes = 1;
    for (int b = 0; b < 256; b++) t->byte_piece[b] = (char)b;
    *out = t;
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ GPT-2 bytes_to_unicode */

/* Byte b is written as the code point byte_cp[b]: printable Latin-1 bytes as themselves, the rest
 * (controls, space, 0x7F-0xA0, 0xAD) as U+0100 upward, in byte order. */
static void bytes_to_unicode(uint32_t byte_cp[256])
{
    int k = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        byte_cp[b] = printable ? (uint32_t)b : (uint32_t)(256 + k++);
    }
}

/* Map a byte-level token string back to bytes; 0 when a character is not in the byte alphabet. */
static int bl_to_bytes(const int16_t *cp_byte, const char *s, size_t n, buf_t *o)
{
    o->n = 0;
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, bad;
    while (i < n) {
        size_t k = utf8_seq(u + i, n - i, &bad);
        if (!k) return 0;
        uint32_t cp = utf8_decode(u + i, k);
        if (cp >= 324 || cp_byte[cp] < 0) return 0;
        char c = (char)(unsigned char)cp_byte[cp];
        if (buf_put(o, &c, 1)) return -1;
        i += k;
    }
    return 1;
}

/* ------------------------------------------------------------------ loading: helpers */

static int get_bool(json_t *o, const char *key, int dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static char *dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static accel_status_t compile_regex(accel_tokenizer_t *t, const char *src, size_t n, pattern_t *pat,
                                    const char *what, char *err, size_t errlen)
{
    int ec;
    PCRE2_SIZE eo;
    pat->re = pcre2_compile((PCRE2_SPTR)src, n, PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    if (!pat->re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        accel_errf(err, errlen, "%s: regex '%.*s' does not compile at offset %zu: %s", what, (int)n, src,
                (size_t)eo, (char *)msg);
        return ACCEL_ERR_UNSUPPORTED;
    }
    /* JIT is a speed-up only: the interpreter gives the same matches when it is unavailable. */
    pcre2_jit_compile(pat->re, PCRE2_JIT_COMPLETE);
    pat->md = pcre2_match_data_create_from_pattern(pat->re, NULL);
    if (!pat->md) return ACCEL_ERR_NOMEM;
    (void)t;
    return ACCEL_OK;
}

/* {"String": "x"} or {"Regex": "..."} */
static accel_status_t parse_pattern(accel_tokenizer_t *t, json_t *p, pattern_t *pat, const char *what,
                                    char *err, size_t errlen)
{
    json_t *s = json_object_get(p, "String"), *r = json_object_get(p, "Regex");
    if (json_is_string(s)) {
        pat->litlen = json_string_length(s);
        pat->lit = dupn(json_string_value(s), pat->litlen);
        if (!pat->lit) return ACCEL_ERR_NOMEM;
        if (!pat->litlen) {
            accel_errf(err, errlen, "%s: empty String pattern\n--> hint: the tokenizer.json is damaged", what);
            return ACCEL_ERR_CORRUPT;
        }
        return ACCEL_OK;
    }
    if (json_is_string(r))
        return compile_regex(t, json_string_value(r), json_string_length(r), pat, what, err, errlen);
    accel_errf(err, errlen, "%s: 'pattern' is not {\"String\": ...} or {\"Regex\": ...}", what);
    return ACCEL_ERR_CORRUPT;
}

static void pattern_free(pattern_t *p)
{
    pcre2_match_data_free(p->md);
    pcre2_code_free(p->re);
    free(p->lit);
}

static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ------------------------------------------------------------------ loading: pipeline pieces */

static accel_status_t parse_normalizer(accel_tokenizer_t *t, json_t *n, char *err, size_t errlen)
{
    if (!n || json_is_null(n)) return ACCEL_OK;
    if (!json_is_object(n)) {
        accel_errf(err, errlen, "'normalizer' is %s, expected an object or null", accel_json_type_name(n));
        return ACCEL_ERR_CORRUPT;
    }
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) type = "(none)";
    if (!strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "normalizers"), *e;
        size_t i;
        if (!json_is_array(list)) {
            accel_errf(err, errlen, "normalizer Sequence: 'normalizers' is not an array");
            return ACCEL_ERR_CORRUPT;
        }
        json_array_foreach(list, i, e) {
            accel_status_t st = parse_normalizer(t, e, err, errlen);
            if (st) return st;
        }
        return ACCEL_OK;
    }
    if (t->nnorm == MAX_STEPS) {
        accel_errf(err, errlen, "normalizer: more than %d steps", MAX_STEPS);
        return ACCEL_ERR_UNSUPPORTED;
    }
    norm_t *s = &t->norm[t->nnorm];
    memset(s, 0, sizeof *s);
    if (!strcmp(type, "Prepend")) {
        json_t *p = json_object_get(n, "prepend");
        if (!json_is_string(p)) {
            accel_errf(err, errlen, "normalizer Prepend: 'prepend' is not a string");
            return ACCEL_ERR_CORRUPT;
        }
        s->type = NORM_PREPEND;
        s->content_len = json_string_length(p);
        if (!(s->content = dupn(json_string_value(p), s->content_len))) return ACCEL_ERR_NOMEM;
    } else if (!strcmp(type, "Replace")) {
        json_t *c = json_object_get(n, "content");
        if (!json_is_string(c)) {
            accel_errf(err, errlen, "normalizer Replace: 'content' is not a string");
            return ACCEL_ERR_CORRUPT;
        }
        s->type = NORM_REPLACE;
        s->content_len = json_string_length(c);
        s->content = dupn(json_string_value(c), s->content_len);
        t->nnorm++;                  /* owned from here on: freed with the tokenizer */
        if (!s->content) return ACCEL_ERR_NOMEM;
        return parse_pattern(t, json_object_get(n, "pattern"), &s->pat, "normalizer Replace", err, errlen);
    } else if (!strcmp(type, "NFC") || !strcmp(type, "NFD") || !strcmp(type, "NFKC") ||
               !strcmp(type, "NFKD")) {
        s->type = NORM_NF;
        s->nf = !strcmp(type, "NFC") ? UNINORM_NFC : !strcmp(type, "NFD") ? UNINORM_NFD
              : !strcmp(type, "NFKC") ? UNINORM_NFKC : UNINORM_NFKD;
    } else if (!strcmp(type, "Lowercase")) {
        s->type = NORM_LOWER;
    } else if (!strcmp(type, "Strip")) {
        s->type = NORM_STRIP;
        s->strip_left = get_bool(n, "strip_left", 1);
        s->strip_right = get_bool(n, "strip_right", 1);
    } else {
        accel_errf(err, errlen, "normalizer type '%s' is not supported (accel reads Sequence, Prepend, "
                "Replace, NFC, NFD, NFKC, NFKD, Lowercase, Strip)", type);
        return ACCEL_ERR_UNSUPPORTED;
    }
    t->nnorm++;
    return ACCEL_OK;
}

static accel_status_t parse_pretok(accel_tokenizer_t *t, json_t *n, char *err, size_t errlen)
{
    if (!n || json_is_null(n)) return ACCEL_OK;
    if (!json_is_object(n)) {
        accel_errf(err, errlen, "'pre_tokenizer' is %s, expected an object or null", accel_json_type_name(n));
        return ACCEL_ERR_CORRUPT;
    }
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) type = "(none)";
    if (!strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "pretokenizers"), *e;
        size_t i;
        if (!json_is_array(list)) {
            accel_errf(err, errlen, "pre_tokenizer Sequence: 'pretokenizers' is not an array");
            return ACCEL_ERR_CORRUPT;
        }
        json_array_foreach(list, i, e) {
            accel_status_t st = parse_pretok(t, e, err, errlen);
            if (st) return st;
        }
        return ACCEL_OK;
    }
    if (t->npre == MAX_STEPS) {
        accel_errf(err, errlen, "pre_tokenizer: more than %d steps", MAX_STEPS);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (t->byte_level) {
        /* the ByteLevel step rewrites text into its printable alphabet: a later step would see it */
        accel_errf(err, errlen, "pre_tokenizer '%s' after ByteLevel is not supported "
                "(accel needs ByteLevel to be the last pre-tokenizer)", type);
        return ACCEL_ERR_UNSUPPORTED;
    }
    pretok_t *s = &t->pre[t->npre];
    memset(s, 0, sizeof *s);
    accel_status_t st = ACCEL_OK;
    if (!strcmp(type, "ByteLevel")) {
        s->type = PRE_BYTELEVEL;
        s->add_prefix_space = get_bool(n, "add_prefix_space", 1);
        t->byte_level = 1;
        t->npre++;
        if (get_bool(n, "use_regex", 1)) {
            /* split with GPT-2's pattern first, as HF's ByteLevel does */
            s->type = PRE_SPLIT;
            s->behavior = BEH_ISOLATED;
            s->add_prefix_space = get_bool(n, "add_prefix_space", 1);
            return compile_regex(t, GPT2_PATTERN, sizeof GPT2_PATTERN - 1, &s->pat,
                                 "pre_tokenizer ByteLevel", err, errlen);
        }
        return ACCEL_OK;
    } else if (!strcmp(type, "Split")) {
        const char *b = json_string_value(json_object_get(n, "behavior"));
        s->type = PRE_SPLIT;
        s->invert = get_bool(n, "invert", 0);
        if (!b) b = "(none)";
        if (!strcmp(b, "Isolated")) s->behavior = BEH_ISOLATED;
        else if (!strcmp(b, "Removed")) s->behavior = BEH_REMOVED;
        else if (!strcmp(b, "MergedWithPrevious")) s->behavior = BEH_MERGED_PREV;
        else if (!strcmp(b, "MergedWithNext")) s->behavior = BEH_MERGED_NEXT;
        else if (!strcmp(b, "Contiguous")) s->behavior = BEH_CONTIGUOUS;
        else {
            accel_errf(err, errlen, "pre_tokenizer Split: behavior '%s' is unknown", b);
            return ACCEL_ERR_UNSUPPORTED;
        }
        t->npre++;
        return parse_pattern(t, json_object_get(n, "pattern"), &s->pat, "pre_tokenizer Split", err, errlen);
    } else if (!strcmp(type, "Whitespace") || !strcmp(type, "WhitespaceSplit") ||
               !strcmp(type, "Punctuation")) {
        /* HF's definitions as splits: Whitespace keeps \w+ and runs of other non-space characters
         * (\w as Rust's regex crate has it: letters, marks, digits, connectors, ZWJ/ZWNJ);
         * WhitespaceSplit drops whitespace; Punctuation isolates each ASCII or Unicode punctuation
         * character (Rust's is_ascii_punctuation counts $+<=>^`|~ too) */
        const char *re = !strcmp(type, "Whitespace")
                             ? "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]+|"
                               "[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}\\s]+"
                       : !strcmp(type, "WhitespaceSplit") ? "\\s+" : "[\\p{P}$+<=>^`|~]";
        s->type = PRE_SPLIT;
        s->behavior = !strcmp(type, "Punctuation") ? BEH_ISOLATED : BEH_REMOVED;
        s->invert = !strcmp(type, "Whitespace");
        const char *b = json_string_value(json_object_get(n, "behavior"));
        if (b && !strcmp(type, "Punctuation")) {
            if (!strcmp(b, "Isolated")) s->behavior = BEH_ISOLATED;
            else if (!strcmp(b, "Removed")) s->behavior = BEH_REMOVED;
            else if (!strcmp(b, "MergedWithPrevious")) s->behavior = BEH_MERGED_PREV;
            else if (!strcmp(b, "MergedWithNext")) s->behavior = BEH_MERGED_NEXT;
            else if (!strcmp(b, "Contiguous")) s->behavior = BEH_CONTIGUOUS;
        }
        t->npre++;
        return compile_regex(t, re, strlen(re), &s->pat, "pre_tokenizer", err, errlen);
    } else if (!strcmp(type, "Digits")) {
        s->type = PRE_SPLIT;
        s->behavior = BEH_ISOLATED;
        t->npre++;
        const char *re = get_bool(n, "individual_digits", 0) ? "\\p{N}" : "\\p{N}+";
        return compile_regex(t, re, strlen(re), &s->pat, "pre_tokenizer Digits", err, errlen);
    } else if (!strcmp(type, "Metaspace")) {
        s->type = PRE_METASPACE;
        json_t *r = json_object_get(n, "replacement");
        if (!json_is_string(r)) r = json_object_get(n, "str_rep");
        const char *rs = json_is_string(r) ? json_string_value(r) : "\xE2\x96\x81";
        s->repl_len = strlen(rs);
        if (s->repl_len == 0 || s->repl_len > 4 || utf8_len((unsigned char)rs[0]) != s->repl_len) {
            accel_errf(err, errlen, "pre_tokenizer Metaspace: replacement '%s' is not one character", rs);
            return ACCEL_ERR_CORRUPT;
        }
        memcpy(s->repl, rs, s->repl_len);
        const char *ps = json_string_value(json_object_get(n, "prepend_scheme"));
        if (ps) {
            if (!strcmp(ps, "always")) s->prepend = PREPEND_ALWAYS;
            else if (!strcmp(ps, "first")) s->prepend = PREPEND_FIRST;
            else if (!strcmp(ps, "never")) s->prepend = PREPEND_NEVER;
            else {
                accel_errf(err, errlen, "pre_tokenizer Metaspace: prepend_scheme '%s' is unknown", ps);
                return ACCEL_ERR_UNSUPPORTED;
            }
        } else {
            s->prepend = get_bool(n, "add_prefix_space", 1) ? PREPEND_ALWAYS : PREPEND_NEVER;
        }
        s->split = get_bool(n, "split", 1);
    } else {
        accel_errf(err, errlen, "pre_tokenizer type '%s' is not supported (accel reads ByteLevel, Split, "
                "Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation, Sequence)", type);
        return ACCEL_ERR_UNSUPPORTED;
    }
    t->npre++;
    return st;
}

static accel_status_t parse_decoder(accel_tokenizer_t *t, json_t *n, char *err, size_t errlen)
{
    if (!n || json_is_null(n)) return ACCEL_OK;
    t->has_decoder = 1;
    if (!json_is_object(n)) {
        accel_errf(err, errlen, "'decoder' is %s, expected an object or null", accel_json_type_name(n));
        return ACCEL_ERR_CORRUPT;
    }
    const char *type = json_string_value(json_object_get(n, "type"));
    if (!type) type = "(none)";
    if (!strcmp(type, "Sequence")) {
        json_t *list = json_object_get(n, "decoders"), *e;
        size_t i;
        if (!json_is_array(list)) {
            accel_errf(err, errlen, "decoder Sequence: 'decoders' is not an array");
            return ACCEL_ERR_CORRUPT;
        }
        json_array_foreach(list, i, e) {
            accel_status_t st = parse_decoder(t, e, err, errlen);
            if (st) return st;
        }
        return ACCEL_OK;
    }
    if (t->ndec == MAX_STEPS) {
        accel_errf(err, errlen, "decoder: more than %d steps", MAX_STEPS);
        return ACCEL_ERR_UNSUPPORTED;
    }
    decstep_t *d = &t->dec[t->ndec];
    memset(d, 0, sizeof *d);
    if (!strcmp(type, "ByteLevel")) d->type = DEC_BYTELEVEL;
    else if (!strcmp(type, "ByteFallback")) d->type = DEC_BYTEFALLBACK;
    else if (!strcmp(type, "Fuse")) d->type = DEC_FUSE;
    else if (!strcmp(type, "Strip")) {
        json_t *c = json_object_get(n, "content");
        const char *cs = json_is_string(c) ? json_string_value(c) : " ";
        size_t bad, k = utf8_seq((const unsigned char *)cs, strlen(cs), &bad);
        d->type = DEC_STRIP;
        d->strip_char = k ? utf8_decode((const unsigned char *)cs, k) : ' ';
        d->strip_start = (int)json_integer_value(json_object_get(n, "start"));
        d->strip_stop = (int)json_integer_value(json_object_get(n, "stop"));
    } else if (!strcmp(type, "Replace")) {
        json_t *p = json_object_get(n, "pattern"), *c = json_object_get(n, "content");
        json_t *ps = json_object_get(p, "String");
        if (!json_is_string(ps) || !json_is_string(c) || !json_string_length(ps)) {
            accel_errf(err, errlen, "decoder Replace: accel reads a String pattern and a string content "
                    "(a Regex pattern is not supported)");
            return ACCEL_ERR_UNSUPPORTED;
        }
        d->type = DEC_REPLACE;
        d->pat_len = json_string_length(ps);
        d->pat = dupn(json_string_value(ps), d->pat_len);
        d->content_len = json_string_length(c);
        d->content = dupn(json_string_value(c), d->content_len);
        if (!d->pat || !d->content) {
            t->ndec++;               /* freed with the tokenizer */
            return ACCEL_ERR_NOMEM;
        }
    } else if (!strcmp(type, "Metaspace")) {
        json_t *r = json_object_get(n, "replacement");
        if (!json_is_string(r)) r = json_object_get(n, "str_rep");
        const char *rs = json_is_string(r) ? json_string_value(r) : "\xE2\x96\x81";
        d->type = DEC_METASPACE;
        d->repl_len = strlen(rs) < 8 ? strlen(rs) : 7;
        memcpy(d->repl, rs, d->repl_len);
        const char *ps = json_string_value(json_object_get(n, "prepend_scheme"));
        if (ps) d->prepend = !strcmp(ps, "never") ? PREPEND_NEVER : !strcmp(ps, "first") ? PREPEND_FIRST
                                                                                     : PREPEND_ALWAYS;
        else d->prepend = get_bool(n, "add_prefix_space", 1) ? PREPEND_ALWAYS : PREPEND_NEVER;
    } else {
        accel_errf(err, errlen, "decoder type '%s' is not supported (accel reads ByteLevel, Metaspace, "
                "Replace, ByteFallback, Fuse, Strip, Sequence)", type);
        return ACCEL_ERR_UNSUPPORTED;
    }
    t->ndec++;
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ loading: the model */

/* A vocabulary string in the model's stored form (raw bytes for byte-level models): 1, or 2 for a
 * byte-level token with characters outside the byte alphabet (kept as its UTF-8: the encoder can
 * never produce it, HF's neither); -1 when out of memory. */
static int model_form(const accel_tokenizer_t *t, const int16_t *cp_byte, const char *s, size_t n,
                      buf_t *o)
{
    if (t->byte_level) {
        int r = bl_to_bytes(cp_byte, s, n, o);
        if (r) return r;
    }
    o->n = 0;
    return buf_put(o, s, n) ? -1 : t->byte_level ? 2 : 1;
}

static accel_status_t parse_model(accel_tokenizer_t *t, json_t *model, const int16_t *cp_byte,
                                  char *err, size_t errlen)
{
    accel_status_t st = ACCEL_OK;
    buf_t a = { 0 }, b = { 0 }, ab = { 0 };
    const char *type = json_string_value(json_object_get(model, "type"));
    if (type && strcmp(type, "BPE")) {
        accel_errf(err, errlen, "model type '%s' is not supported (accel reads BPE models: GPT-2, "
                "Llama, Qwen2, Mistral style)", type);
        return ACCEL_ERR_UNSUPPORTED;
    }
    json_t *v = json_object_get(model, "dropout");
    if (v && !json_is_null(v)) {
        accel_errf(err, errlen, "model.dropout is %g: BPE dropout is not supported (accel encodes "
                "deterministically)\n--> hint: set \"dropout\": null for inference and datasets",
                json_number_value(v));
        return ACCEL_ERR_UNSUPPORTED;
    }
    static const char *const affixes[] = { "continuing_subword_prefix", "end_of_word_suffix" };
    for (int i = 0; i < 2; i++) {
        v = json_object_get(model, affixes[i]);
        if (v && !json_is_null(v)) {
            accel_errf(err, errlen, "model.%s is '%s': subword prefixes/suffixes are not supported",
                    affixes[i], json_is_string(v) ? json_string_value(v) : accel_json_type_name(v));
            return ACCEL_ERR_UNSUPPORTED;
        }
    }
    t->byte_fallback = get_bool(model, "byte_fallback", 0);
    t->ignore_merges = get_bool(model, "ignore_merges", 0);
    t->fuse_unk = get_bool(model, "fuse_unk", 0);

    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab)) {
        accel_errf(err, errlen, "model.vocab is %s, expected an object (token -> id)",
                vocab ? accel_json_type_name(vocab) : "missing");
        return ACCEL_ERR_CORRUPT;
    }
    const char *key;
    json_t *val;
    json_object_foreach(vocab, key, val) {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) >= INT32_MAX) {
            accel_errf(err, errlen, "model.vocab['%s'] is %s, expected an id >= 0", key, accel_json_type_name(val));
            st = ACCEL_ERR_CORRUPT;
            goto cleanup;
        }
        int id = (int)json_integer_value(val);
        if (id + 1 > t->vocab) t->vocab = id + 1;
        int r = model_form(t, cp_byte, key, strlen(key), &a);
        int64_t prev;
        /* an unmappable byte-level token never takes the place of a real one with the same bytes */
        if (r == 2 && strmap_get(&t->vocab_map, a.p, a.n, &prev)) continue;
        if (r < 0 || strmap_put(&t->vocab_map, a.p, a.n, id)) {
            st = ACCEL_ERR_NOMEM;
            goto cleanup;
        }
    }

    json_t *unk = json_object_get(model, "unk_token");
    t->unk_id = -1;
    if (json_is_string(unk)) {
        int64_t id;
        if (model_form(t, cp_byte, json_string_value(unk), json_string_length(unk), &a) < 0) {
            st = ACCEL_ERR_NOMEM;
            goto cleanup;
        }
        if (!strmap_get(&t->vocab_map, a.p, a.n, &id)) {
            accel_errf(err, errlen, "model.unk_token '%s' is not in the vocabulary", json_string_value(unk));
            st = ACCEL_ERR_CORRUPT;
            goto cleanup;
        }
        t->unk_id = (int32_t)id;
    }

    json_t *merges = json_object_get(model, "merges");
    if (merges && !json_is_array(merges)) {
        accel_errf(err, errlen, "model.merges is %s, expected an array", accel_json_type_name(merges));
        st = ACCEL_ERR_CORRUPT;
        goto cleanup;
    }
    if (pairmap_init(&t->merges, merges ? json_array_size(merges) : 0)) {
        st = ACCEL_ERR_NOMEM;
        goto cleanup;
    }
    size_t i;
    json_t *m;
    json_array_foreach(merges, i, m) {
        const char *sa, *sb;
        size_t la, lb;
        if (json_is_string(m)) {            /* "a b" (older files) */
            const char *s = json_string_value(m), *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                accel_errf(err, errlen, "model.merges[%zu] = '%s' is not two tokens separated by one space",
                        i, s);
                st = ACCEL_ERR_CORRUPT;
                goto cleanup;
            }
            sa = s; la = (size_t)(sp - s); sb = sp + 1; lb = strlen(sb);
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1))) {   /* ["a", "b"] (tokenizers >= 0.20) */
            sa = json_string_value(json_array_get(m, 0)); la = json_string_length(json_array_get(m, 0));
            sb = json_string_value(json_array_get(m, 1)); lb = json_string_length(json_array_get(m, 1));
        } else {
            accel_errf(err, errlen, "model.merges[%zu] is %s, expected \"a b\" or [\"a\", \"b\"]", i, accel_json_type_name(m));
            st = ACCEL_ERR_CORRUPT;
            goto cleanup;
        }
        int64_t ia, ib, iab;
        ab.n = 0;
        if (model_form(t, cp_byte, sa, la, &a) < 0 || model_form(t, cp_byte, sb, lb, &b) < 0 ||
            buf_put(&ab, a.p, a.n) || buf_put(&ab, b.p, b.n)) {
            st = ACCEL_ERR_NOMEM;
            goto cleanup;
        }
        if (!strmap_get(&t->vocab_map, a.p, a.n, &ia) || !strmap_get(&t->vocab_map, b.p, b.n, &ib) ||
            !strmap_get(&t->vocab_map, ab.p, ab.n, &iab)) {
            accel_errf(err, errlen, "model.merges[%zu] ('%.*s' + '%.*s'): a token or their merge is not "
                    "in the vocabulary\n--> hint: the tokenizer.json is damaged", i, (int)la, sa,
                    (int)lb, sb);
            st = ACCEL_ERR_CORRUPT;
            goto cleanup;
        }
        pairmap_put(&t->merges, pair_key((int32_t)ia, (int32_t)ib), (int32_t)i, (int32_t)iab);
    }
cleanup:
    free(a.p);
    free(b.p);
    free(ab.p);
    return st;
}

static int normalize(accel_tokenizer_t *t, const char *s, size_t n, const char **res, size_t *rn);

static int cmp_added_len(const void *x, const void *y, void *ctx)
{
    const added_t *ad = ctx;
    int a = *(const int16_t *)x, b = *(const int16_t *)y;
    if (ad[a].match_len != ad[b].match_len) return ad[a].match_len < ad[b].match_len ? 1 : -1;
    return a - b;
}

static accel_status_t parse_added(accel_tokenizer_t *t, json_t *list, char *err, size_t errlen)
{
    if (!list || json_is_null(list)) return ACCEL_OK;
    if (!json_is_array(list)) {
        accel_errf(err, errlen, "'added_tokens' is %s, expected an array", accel_json_type_name(list));
        return ACCEL_ERR_CORRUPT;
    }
    size_t n = json_array_size(list), i;
    if (n > INT16_MAX) {
        accel_errf(err, errlen, "added_tokens: %zu entries, accel reads at most %d", n, INT16_MAX);
        return ACCEL_ERR_UNSUPPORTED;
    }
    t->added = calloc(n ? n : 1, sizeof *t->added);
    if (!t->added) return ACCEL_ERR_NOMEM;
    json_t *e;
    json_array_foreach(list, i, e) {
        json_t *id = json_object_get(e, "id"), *c = json_object_get(e, "content");
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= INT32_MAX ||
            !json_is_string(c) || !json_string_length(c)) {
            accel_errf(err, errlen, "added_tokens[%zu]: needs an integer 'id' >= 0 and a non-empty "
                    "string 'content'", i);
            return ACCEL_ERR_CORRUPT;
        }
        added_t *a = &t->added[t->nadded++];
        a->id = (int)json_integer_value(id);
        a->len = json_string_length(c);
        a->content = dupn(json_string_value(c), a->len);
        if (!a->content) return ACCEL_ERR_NOMEM;
        a->special = get_bool(e, "special", 0);
        a->single_word = get_bool(e, "single_word", 0);
        a->lstrip = get_bool(e, "lstrip", 0);
        a->rstrip = get_bool(e, "rstrip", 0);
        a->normalized = get_bool(e, "normalized", !a->special) ? 1 : 0;
        if (a->id + 1 > t->vocab) t->vocab = a->id + 1;
    }
    /* the normalized tokens are looked for in normalized text: normalize their content the same way */
    for (int j = 0; j < t->nadded; j++) {
        added_t *a = &t->added[j];
        const char *m = a->content;
        size_t ml = a->len;
        if (a->normalized && t->nnorm && normalize(t, a->content, a->len, &m, &ml)) return ACCEL_ERR_NOMEM;
        if (!(a->match = dupn(m, ml))) return ACCEL_ERR_NOMEM;
        a->match_len = ml;
    }
    int16_t *idx = malloc((size_t)(t->nadded ? t->nadded : 1) * sizeof *idx);
    if (!idx) return ACCEL_ERR_NOMEM;
    for (int pass = 0; pass < 2; pass++) {
        for (int c = 0; c < 256; c++) {
            int k = 0;
            for (int j = 0; j < t->nadded; j++)
                if (t->added[j].normalized == pass && t->added[j].match_len &&
                    (unsigned char)t->added[j].match[0] == c)
                    idx[k++] = (int16_t)j;
            if (!k) continue;
            qsort_r(idx, (size_t)k, sizeof idx[0], cmp_added_len, t->added);
            t->added_first[pass][c] = malloc((size_t)k * sizeof idx[0]);
            if (!t->added_first[pass][c]) {
                free(idx);
                return ACCEL_ERR_NOMEM;
            }
            memcpy(t->added_first[pass][c], idx, (size_t)k * sizeof idx[0]);
            t->added_nfirst[pass][c] = k;
        }
    }
    free(idx);
    return ACCEL_OK;
}

/* bos/eos: the post-processor's template first, then the usual token names. */
static int find_added(const accel_tokenizer_t *t, const char *content)
{
    for (int i = 0; i < t->nadded; i++)
        if (!strcmp(t->added[i].content, content)) return t->added[i].id;
    return -1;
}

static void find_bos_eos(accel_tokenizer_t *t, json_t *root)
{
    json_t *pp = json_object_get(root, "post_processor");
    const char *type = json_string_value(json_object_get(pp, "type"));
    t->bos = t->eos = -1;
    if (type && !strcmp(type, "Sequence")) {
        json_t *list = json_object_get(pp, "processors"), *e;
        size_t i;
        json_array_foreach(list, i, e) {
            const char *ty = json_string_value(json_object_get(e, "type"));
            if (ty && (!strcmp(ty, "TemplateProcessing") || !strcmp(ty, "RobertaProcessing") ||
                       !strcmp(ty, "BertProcessing"))) {
                pp = e;
                type = ty;
            }
        }
    }
    if (type && !strcmp(type, "TemplateProcessing")) {
        json_t *single = json_object_get(pp, "single"), *e;
        size_t i;
        int seen_seq = 0;
        json_array_foreach(single, i, e) {
            json_t *sp = json_object_get(e, "SpecialToken");
            if (json_object_get(e, "Sequence")) {
                seen_seq = 1;
                continue;
            }
            const char *name = json_string_value(json_object_get(sp, "id"));
            if (!name) continue;
            json_t *ids = json_object_get(json_object_get(json_object_get(pp, "special_tokens"), name), "ids");
            int id = json_is_integer(json_array_get(ids, 0)) ? (int)json_integer_value(json_array_get(ids, 0))
                                                             : find_added(t, name);
            if (!seen_seq && t->bos < 0) t->bos = id;
            if (seen_seq && t->eos < 0) t->eos = id;
        }
    } else if (type && (!strcmp(type, "RobertaProcessing") || !strcmp(type, "BertProcessing"))) {
        json_t *cls = json_object_get(pp, "cls"), *sep = json_object_get(pp, "sep");
        if (json_is_integer(json_array_get(cls, 1))) t->bos = (int)json_integer_value(json_array_get(cls, 1));
        if (json_is_integer(json_array_get(sep, 1))) t->eos = (int)json_integer_value(json_array_get(sep, 1));
    }
    static const char *const bos_names[] = { "<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>" };
    static const char *const eos_names[] = { "</s>", "<|end_of_text|>", "<|endoftext|>", "<|im_end|>",
                                             "<eos>" };
    for (size_t i = 0; t->bos < 0 && i < sizeof bos_names / sizeof bos_names[0]; i++)
        t->bos = find_added(t, bos_names[i]);
    for (size_t i = 0; t->eos < 0 && i < sizeof eos_names / sizeof eos_names[0]; i++)
        t->eos = find_added(t, eos_names[i]);
    /* GPT-2 has one marker, <|endoftext|>, between documents: it serves as both (as in HF's
     * GPT-2 config and llm.c's data files). */
    if (t->bos < 0 && t->eos >= 0 && t->eos == find_added(t, "<|endoftext|>") &&
        find_added(t, "<|im_end|>") < 0)
        t->bos = t->eos;
}

/* Per-id strings: the HF token string (decoder input) and the raw bytes (token_bytes). */
static accel_status_t build_id_tables(accel_tokenizer_t *t, json_t *vocab, const int16_t *cp_byte)
{
    size_t nv = (size_t)t->vocab;
    t->tok_str = calloc(nv, sizeof *t->tok_str);
    t->tok_len = calloc(nv, sizeof *t->tok_len);
    t->raw = calloc(nv, sizeof *t->raw);
    t->raw_len = calloc(nv, sizeof *t->raw_len);
    t->is_added = calloc(nv, 1);
    if (!t->tok_str || !t->tok_len || !t->raw || !t->raw_len || !t->is_added) return ACCEL_ERR_NOMEM;
    const char *key;
    json_t *val;
    buf_t o = { 0 };
    json_object_foreach(vocab, key, val) {
        size_t id = (size_t)json_integer_value(val), n = strlen(key);
        if (t->tok_str[id]) continue;
        t->tok_str[id] = dupn(key, n);
        t->tok_len[id] = n;
        if (!t->tok_str[id]) goto nomem;
    }
    for (int i = 0; i < t->nadded; i++) {
        /* HF decodes a `normalized` added token as its normalized content */
        size_t id = (size_t)t->added[i].id;
        free(t->tok_str[id]);
        t->tok_str[id] = dupn(t->added[i].match, t->added[i].match_len);
        t->tok_len[id] = t->added[i].match_len;
        t->is_added[id] = 1;
        if (!t->tok_str[id]) goto nomem;
    }
    for (size_t id = 0; id < nv; id++) {
        const char *s = t->tok_str[id];
        size_t n = t->tok_len[id];
        o.n = 0;
        if (!s) {
            if (buf_put(&o, "", 0)) goto nomem;
        } else if (t->is_added[id]) {
            if (buf_put(&o, s, n)) goto nomem;
        } else if (t->byte_level) {
            int r = bl_to_bytes(cp_byte, s, n, &o);
            if (r < 0) goto nomem;
            if (!r && (o.n = 0, buf_put(&o, s, n))) goto nomem;
        } else if (n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && t->byte_fallback &&
                   strspn(s + 3, "0123456789ABCDEFabcdef") >= 2) {
            char c = (char)strtol((char[]){ s[3], s[4], 0 }, NULL, 16);
            if (buf_put(&o, &c, 1)) goto nomem;
        } else {
            /* metaspace convention: the replacement character stands for a space */
            const char *rp = "\xE2\x96\x81";
            size_t rl = 3;
            for (int k = 0; k < t->npre; k++)
                if (t->pre[k].type == PRE_METASPACE) { rp = t->pre[k].repl; rl = t->pre[k].repl_len; }
            for (size_t i = 0; i < n;) {
                if (i + rl <= n && !memcmp(s + i, rp, rl)) {
                    if (buf_put(&o, " ", 1)) goto nomem;
                    i += rl;
                } else {
                    if (buf_put(&o, s + i, 1)) goto nomem;
                    i++;
                }
            }
        }
        t->raw[id] = dupn(o.p ? o.p : "", o.n);
        t->raw_len[id] = o.n;
        if (!t->raw[id]) goto nomem;
    }
    free(o.p);
    return ACCEL_OK;
nomem:
    free(o.p);
    return ACCEL_ERR_NOMEM;
}

/* ------------------------------------------------------------------ loading: entry points */

static void base_name(const char *path, char *name, size_t cap)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/') tmp[--n] = '\0';
    const char *slash = strrchr(tmp, '/');
    const char *base = slash ? slash + 1 : tmp;
    if (!strcmp(base, "tokenizer.json")) {
        if (!slash) base = ".";
        else {
            tmp[slash - tmp] = '\0';
            const char *s2 = strrchr(tmp, '/');
            base = s2 ? s2 + 1 : tmp;
            if (!*base) base = "/";
        }
        if (!strcmp(base, ".")) {
            char cwd[4096];
            if (getcwd(cwd, sizeof cwd)) {
                const char *s3 = strrchr(cwd, '/');
                snprintf(name, cap, "%.63s", s3 && s3[1] ? s3 + 1 : cwd);
                return;
            }
        }
        snprintf(name, cap, "%s", base);
        return;
    }
    snprintf(name, cap, "%s", base);
    size_t bl = strlen(name);
    if (bl > 5 && !strcmp(name + bl - 5, ".json")) name[bl - 5] = '\0';
}

accel_status_t accel_tokenizer_load(const char *path, accel_tokenizer_t **out, char *err,
                                    size_t errlen)
{
    char file[4096], name[ACCEL_TOKENIZER_NAME_MAX];
    struct stat sb;
    accel_status_t st;
    if (stat(path, &sb)) {
        accel_errf(err, errlen, "tokenizer %s: %s\n--> hint: pass a tokenizer.json or the directory holding it",
                path, strerror(errno));
        return ACCEL_ERR_IO;
    }
    if (S_ISDIR(sb.st_mode)) snprintf(file, sizeof file, "%s/tokenizer.json", path);
    else snprintf(file, sizeof file, "%s", path);
    base_name(file, name, sizeof name);
    FILE *f = fopen(file, "rb");
    if (!f) {
        accel_errf(err, errlen, "tokenizer %s: %s\n--> hint: pass a tokenizer.json or the directory holding it",
                file, strerror(errno));
        return ACCEL_ERR_IO;
    }
    char *data = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            char *p = realloc(data, cap);
            if (!p) {
                free(data);
                fclose(f);
                return ACCEL_ERR_NOMEM;
            }
            data = p;
        }
        size_t r = fread(data + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int ioerr = ferror(f);
    fclose(f);
    if (ioerr) {
        free(data);
        accel_errf(err, errlen, "tokenizer %s: read error", file);
        return ACCEL_ERR_IO;
    }
    char sub[4000];
    st = accel_tokenizer_from_json(data, n, name, out, sub, sizeof sub);
    if (st) accel_errf(err, errlen, "%s: %s", file, sub);
    free(data);
    return st;
}

accel_status_t accel_tokenizer_from_json(const char *json, size_t len, const char *name,
                                         accel_tokenizer_t **out, char *err, size_t errlen)
{
    accel_status_t st = ACCEL_OK;
    json_error_t jerr;
    *out = NULL;
    accel_tokenizer_t *t = calloc(1, sizeof *t);
    if (!t) return ACCEL_ERR_NOMEM;
    snprintf(t->name, sizeof t->name, "%s", name && *name ? name : "tokenizer");
    json_t *root = json_loadb(json, len, JSON_ALLOW_NUL, &jerr);
    if (!root) {
        accel_errf(err, errlen, "tokenizer '%s' is not valid JSON: line %d, column %d: %s\n"
                "--> hint: the file is truncated or not a tokenizer.json", t->name, jerr.line,
                jerr.column, jerr.text);
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    if (!json_is_object(root)) {
        accel_errf(err, errlen, "tokenizer '%s': the JSON is %s, expected an object", t->name, accel_json_type_name(root));
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) {
        accel_errf(err, errlen, "tokenizer '%s': key 'model' is %s, expected an object\n"
                "--> hint: this is not a Hugging Face tokenizer.json", t->name,
                model ? accel_json_type_name(model) : "missing");
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    t->json = malloc(len + 1);
    if (!t->json) { st = ACCEL_ERR_NOMEM; goto fail; }
    memcpy(t->json, json, len);
    t->json[len] = '\0';
    t->json_len = len;
    snprintf(t->hash, sizeof t->hash, "%016llx", (unsigned long long)XXH64(json, len, 0));

    t->jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
    t->mctx = pcre2_match_context_create(NULL);
    if (!t->jit_stack || !t->mctx) { st = ACCEL_ERR_NOMEM; goto fail; }
    pcre2_jit_stack_assign(t->mctx, NULL, t->jit_stack);

    char sub[1024];
    sub[0] = '\0';
    if ((st = parse_normalizer(t, json_object_get(root, "normalizer"), sub, sizeof sub)) ||
        (st = parse_pretok(t, json_object_get(root, "pre_tokenizer"), sub, sizeof sub)) ||
        (st = parse_decoder(t, json_object_get(root, "decoder"), sub, sizeof sub))) {
        accel_errf(err, errlen, "tokenizer '%s': %s", t->name, sub);
        goto fail;
    }
    uint32_t byte_cp[256];
    int16_t cp_byte[324];
    bytes_to_unicode(byte_cp);
    memset(cp_byte, -1, sizeof cp_byte);
    for (int b = 0; b < 256; b++) cp_byte[byte_cp[b]] = (int16_t)b;
    if ((st = parse_model(t, model, cp_byte, sub, sizeof sub)) ||
        (st = parse_added(t, json_object_get(root, "added_tokens"), sub, sizeof sub))) {
        accel_errf(err, errlen, "tokenizer '%s': %s", t->name, sub);
        goto fail;
    }
    if (t->vocab <= 0) {
        accel_errf(err, errlen, "tokenizer '%s': the vocabulary is empty", t->name);
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    /* units: single bytes (byte-level) or one-byte characters; <0xAB> byte fallback tokens */
    for (int c = 0; c < 256; c++) {
        char ch = (char)c, bf[8];
        int64_t id;
        t->byte_id[c] = (t->byte_level || c < 0x80) && strmap_get(&t->vocab_map, &ch, 1, &id) ? (int32_t)id : -1;
        snprintf(bf, sizeof bf, "<0x%02X>", c);
        t->fallback_id[c] = strmap_get(&t->vocab_map, bf, 6, &id) ? (int32_t)id : -1;
    }
    if ((st = build_id_tables(t, json_object_get(model, "vocab"), cp_byte))) goto fail;
    find_bos_eos(t, root);
    for (int k = 0; k < t->ndec; k++) {
        if (t->dec[k].type == DEC_METASPACE && t->dec[k].prepend != PREPEND_NEVER) t->strip_first = 1;
        if (t->dec[k].type == DEC_STRIP && t->dec[k].strip_char == ' ' && t->dec[k].strip_start > 0)
            t->strip_first = 1;
    }
    for (int i = 0; i < t->nadded && !t->word_re; i++) {
        if (!t->added[i].single_word) continue;
        pattern_t p = { 0 };
        if ((st = compile_regex(t, "[\\p{L}\\p{N}\\p{M}_]", 18, &p, "single_word", sub, sizeof sub))) goto fail;
        t->word_re = p.re;
        t->word_md = p.md;
    }
    json_decref(root);
    *out = t;
    return ACCEL_OK;
fail:
    json_decref(root);
    accel_tokenizer_free(t);
    if (st == ACCEL_ERR_NOMEM) accel_errf(err, errlen, "tokenizer '%s': out of memory", name ? name : "");
    return st;
}

accel_status_t accel_tokenizer_open_recorded(const char *name, const char *json, size_t len,
                                             accel_tokenizer_t **out, char *err, size_t errlen)
{
    if (!strcmp(name, ACCEL_TOKENIZER_BYTES)) return accel_tokenizer_bytes(out);
    if (!json) {
        snprintf(err, errlen, "tokenizer '%s' is recorded without its tokenizer.json", name);
        return ACCEL_ERR_CORRUPT;
    }
    return accel_tokenizer_from_json(json, len, name, out, err, errlen);
}

void accel_tokenizer_free(accel_tokenizer_t *t)
{
    if (!t) return;
    free(t->json);
    strmap_free(&t->vocab_map);
    strmap_free(&t->cache);
    free(t->merges.s);
    for (int i = 0; i < t->vocab && t->tok_str; i++) free(t->tok_str[i]);
    for (int i = 0; i < t->vocab && t->raw; i++) free(t->raw[i]);
    free(t->tok_str);
    free(t->tok_len);
    free(t->raw);
    free(t->raw_len);
    free(t->is_added);
    for (int i = 0; i < t->nadded; i++) {
        free(t->added[i].content);
        free(t->added[i].match);
    }
    free(t->added);
    for (int c = 0; c < 256; c++) {
        free(t->added_first[0][c]);
        free(t->added_first[1][c]);
    }
    for (int i = 0; i < t->nnorm; i++) {
        pattern_free(&t->norm[i].pat);
        free(t->norm[i].content);
    }
    for (int i = 0; i < t->npre; i++) {
        pattern_free(&t->pre[i].pat);
        free(t->pre[i].scratch.p);
        free(t->pre[i].spans);
    }
    for (int i = 0; i < t->ndec; i++) {
        free(t->dec[i].pat);
        free(t->dec[i].content);
    }
    pcre2_match_data_free(t->word_md);
    pcre2_code_free(t->word_re);
    pcre2_match_context_free(t->mctx);
    pcre2_jit_stack_free(t->jit_stack);
    free(t->cache_ids);
    free(t->normbuf.p);
    free(t->sym_id);
    free(t->sym_prev);
    free(t->sym_next);
    free(t->sym_len);
    free(t->heap);
    free(t->tmp_ids);
    free(t);
}

const char *accel_tokenizer_name(const accel_tokenizer_t *t) { return t->name; }
const char *accel_tokenizer_hash(const accel_tokenizer_t *t) { return t->hash; }
int accel_tokenizer_vocab(const accel_tokenizer_t *t) { return t->vocab; }
int accel_tokenizer_bos(const accel_tokenizer_t *t) { return t->bos; }
int accel_tokenizer_eos(const accel_tokenizer_t *t) { return t->eos; }
const char *accel_tokenizer_last_error(const accel_tokenizer_t *t) { return t->err; }

accel_status_t accel_tokenizer_normalize(accel_tokenizer_t *t, const char *text, size_t len, char **out,
                                         size_t *out_len)
{
    const char *res = text;
    size_t rn = len;
    if (t->nnorm && normalize(t, text, len, &res, &rn)) return ACCEL_ERR_NOMEM;
    if (!(*out = malloc(rn + 1))) return ACCEL_ERR_NOMEM;
    memcpy(*out, res, rn);
    (*out)[rn] = 0;
    *out_len = rn;
    return ACCEL_OK;
}

int accel_tokenizer_is_special(const accel_tokenizer_t *t, int id)
{
    for (int i = 0; i < t->nadded; i++)
        if (t->added[i].id == id) return t->added[i].special;
    return 0;
}

int accel_tokenizer_token_id(const accel_tokenizer_t *t, const char *token)
{
    size_t n = strlen(token);
    if (t->is_bytes) return n == 1 ? (unsigned char)token[0] : -1;
    /* added tokens first: their content wins over a vocabulary entry with the same id */
    for (int i = 0; i < t->nadded; i++)
        if (t->added[i].len == n && !memcmp(t->added[i].content, token, n)) return t->added[i].id;
    for (int id = 0; id < t->vocab; id++)
        if (t->tok_str[id] && t->tok_len[id] == n && !memcmp(t->tok_str[id], token, n)) return id;
    return -1;
}

const char *accel_tokenizer_json(const accel_tokenizer_t *t, size_t *len)
{
    *len = t->json_len;
    return t->json;
}

/* ------------------------------------------------------------------ encoding: the BPE model */

static int sym_reserve(accel_tokenizer_t *t, size_t n)
{
    if (n <= t->sym_cap) return 0;
    size_t c = t->sym_cap ? t->sym_cap : 256;
    while (c < n) c *= 2;
    int32_t *a = realloc(t->sym_id, c * sizeof *a);
    if (a) t->sym_id = a;
    int32_t *b = realloc(t->sym_prev, c * sizeof *b);
    if (b) t->sym_prev = b;
    int32_t *d = realloc(t->sym_next, c * sizeof *d);
    if (d) t->sym_next = d;
    uint32_t *e = realloc(t->sym_len, c * sizeof *e);
    if (e) t->sym_len = e;
    /* the heap holds the initial pairs plus at most two per merge, less one per pop: < 2n */
    struct heap_e *h = realloc(t->heap, 2 * c * sizeof *h);
    if (h) t->heap = h;
    if (!a || !b || !d || !e || !h) return -1;
    t->sym_cap = c;
    t->heap_cap = 2 * c;
    return 0;
}

static inline int heap_less(const struct heap_e *a, const struct heap_e *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(struct heap_e *h, size_t *n, struct heap_e e)
{
    size_t i = (*n)++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&e, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static struct heap_e heap_pop(struct heap_e *h, size_t *n)
{
    struct heap_e top = h[0], last = h[--*n];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && heap_less(&h[c + 1], &h[c])) c++;
        if (!heap_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (m) h[i] = last;
    return top;
}

static inline void sym_add(accel_tokenizer_t *t, size_t *ns, int32_t id, uint32_t len)
{
    size_t i = (*ns)++;
    t->sym_id[i] = id;
    t->sym_len[i] = len;
    t->sym_prev[i] = (int32_t)i - 1;
    t->sym_next[i] = (int32_t)i + 1;
}

/* HF's BPE::merge_word + Word::merge_all on one piece; ids go to t->tmp_ids. */
static int bpe_word(accel_tokenizer_t *t, const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t ns = 0;
    t->tmp_n = 0;
    if (sym_reserve(t, n + 1)) return -1;
    int32_t unk = -1;
    uint32_t unk_len = 0;
    for (size_t i = 0; i < n;) {
        size_t k = t->byte_level ? 1 : utf8_len(s[i]);
        int64_t id64;
        int32_t id = k == 1 ? t->byte_id[s[i]] : strmap_get(&t->vocab_map, p + i, k, &id64) ? (int32_t)id64 : -1;
        if (id >= 0) {
            if (unk >= 0) {
                sym_add(t, &ns, unk, unk_len);
                unk = -1;
            }
            sym_add(t, &ns, id, (uint32_t)k);
        } else {
            int done = 0;
            if (t->byte_fallback) {
                size_t j;
                for (j = 0; j < k && t->fallback_id[s[i + j]] >= 0; j++) {}
                if (j == k) {
                    for (j = 0; j < k; j++) sym_add(t, &ns, t->fallback_id[s[i + j]], 1);
                    done = 1;
                }
            }
            if (!done && t->unk_id >= 0) {
                if (unk >= 0 && t->fuse_unk) unk_len += (uint32_t)k;
                else {
                    if (unk >= 0) sym_add(t, &ns, unk, unk_len);
                    unk = t->unk_id;
                    unk_len = (uint32_t)k;
                }
            }
        }
        i += k;
    }
    if (unk >= 0) sym_add(t, &ns, unk, unk_len);
    if (ns) t->sym_next[ns - 1] = -1;

    size_t nh = 0;
    for (size_t i = 0; i + 1 < ns; i++) {
        const pslot_t *m = pairmap_get(&t->merges, t->sym_id[i], t->sym_id[i + 1]);
        if (m) heap_push(t->heap, &nh, (struct heap_e){ m->rank, (uint32_t)i, m->id });
    }
    while (nh) {
        struct heap_e top = heap_pop(t->heap, &nh);
        uint32_t pos = top.pos;
        if (!t->sym_len[pos] || t->sym_next[pos] < 0) continue;
        int32_t nx = t->sym_next[pos];
        const pslot_t *m = pairmap_get(&t->merges, t->sym_id[pos], t->sym_id[nx]);
        if (!m || m->id != top.id) continue;       /* stale entry */
        t->sym_id[pos] = top.id;
        t->sym_len[pos] += t->sym_len[nx];
        t->sym_len[nx] = 0;
        t->sym_next[pos] = t->sym_next[nx];
        if (t->sym_next[nx] >= 0) t->sym_prev[t->sym_next[nx]] = (int32_t)pos;
        int32_t pv = t->sym_prev[pos];
        if (pv >= 0) {
            m = pairmap_get(&t->merges, t->sym_id[pv], t->sym_id[pos]);
            if (m) heap_push(t->heap, &nh, (struct heap_e){ m->rank, (uint32_t)pv, m->id });
        }
        int32_t nn = t->sym_next[pos];
        if (nn >= 0) {
            m = pairmap_get(&t->merges, t->sym_id[pos], t->sym_id[nn]);
            if (m) heap_push(t->heap, &nh, (struct heap_e){ m->rank, pos, m->id });
        }
    }
    if (ids_reserve(&t->tmp_ids, &t->tmp_cap, ns)) return -1;
    for (int32_t i = ns ? 0 : -1; i >= 0; i = t->sym_next[i]) t->tmp_ids[t->tmp_n++] = t->sym_id[i];
    return 0;
}

typedef struct {
    int32_t **ids;
    size_t *n, *cap;
} out_t;

static int out_put(out_t *o, const int32_t *ids, size_t k)
{
    if (ids_reserve(o->ids, o->cap, *o->n + k)) return -1;
    memcpy(*o->ids + *o->n, ids, k * sizeof *ids);
    *o->n += k;
    return 0;
}

static int model_encode(accel_tokenizer_t *t, const char *p, size_t n, out_t *o)
{
    if (!n) return 0;
    int cacheable = n <= CACHE_PIECE_MAX;
    int64_t v;
    if (cacheable && strmap_get(&t->cache, p, n, &v))
        return out_put(o, t->cache_ids + (v >> 20), (size_t)(v & 0xFFFFF));
    if (t->ignore_merges && strmap_get(&t->vocab_map, p, n, &v)) {
        int32_t id = (int32_t)v;
        return out_put(o, &id, 1);
    }
    if (bpe_word(t, p, n)) return -1;
    if (out_put(o, t->tmp_ids, t->tmp_n)) return -1;
    if (cacheable) {
        if (t->cache.n >= CACHE_MAX_ENTRIES) {
            strmap_clear(&t->cache);
            t->cache_n = 0;
        }
        if (ids_reserve(&t->cache_ids, &t->cache_cap, t->cache_n + t->tmp_n)) return -1;
        memcpy(t->cache_ids + t->cache_n, t->tmp_ids, t->tmp_n * sizeof *t->tmp_ids);
        if (strmap_put(&t->cache, p, n, (int64_t)t->cache_n << 20 | (int64_t)t->tmp_n)) return -1;
        t->cache_n += t->tmp_n;
    }
    return 0;
}

/* ------------------------------------------------------------------ encoding: pre-tokenizers */

/* All matches of a pattern in s[0..n): spans covering s, flagged match / not match (HF's
 * Pattern::find_matches). */
static int find_spans(accel_tokenizer_t *t, pretok_t *st, const char *s, size_t n)
{
    st->nspans = 0;
#define PUSH_SPAN(a, b, m)                                                                         \
    do {                                                                                           \
        if (st->nspans == st->spans_cap) {                                                         \
            size_t c_ = st->spans_cap ? st->spans_cap * 2 : 64;                                    \
            span_t *p_ = realloc(st->spans, c_ * sizeof *p_);                                      \
            if (!p_) return -1;                                                                    \
            st->spans = p_;                                                                        \
            st->spans_cap = c_;                                                                    \
        }                                                                                          \
        st->spans[st->nspans++] = (span_t){ (a), (b), (m) };                                       \
    } while (0)
    size_t prev = 0, pos = 0;
    if (st->pat.re) {
        while (pos < n) {
            int rc = pcre2_jit_match(st->pat.re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, st->pat.md, t->mctx);
            if (rc == PCRE2_ERROR_JIT_BADOPTION)
                rc = pcre2_match(st->pat.re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, st->pat.md, t->mctx);
            if (rc < 0) {
                if (rc == PCRE2_ERROR_NOMATCH) break;
                return -2;
            }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->pat.md);
            size_t a = ov[0], b = ov[1];
            if (b == a) {                    /* empty match: nothing to split, move one character */
                if (a >= n) break;
                pos = a + utf8_len((unsigned char)s[a]);
                continue;
            }
            if (a > prev) PUSH_SPAN(prev, a, 0);
            PUSH_SPAN(a, b, 1);
            prev = pos = b;
        }
    } else {
        while (pos + st->pat.litlen <= n) {
            const char *f = memmem(s + pos, n - pos, st->pat.lit, st->pat.litlen);
            if (!f) break;
            size_t a = (size_t)(f - s), b = a + st->pat.litlen;
            if (a > prev) PUSH_SPAN(prev, a, 0);
            PUSH_SPAN(a, b, 1);
            prev = pos = b;
        }
    }
    if (prev < n) PUSH_SPAN(prev, n, 0);
    return 0;
#undef PUSH_SPAN
}

/* HF's NormalizedString::split with a SplitDelimiterBehavior: rewrites st->spans into the pieces
 * to keep (match flag = remove). */
static void apply_behavior(pretok_t *st, int invert, int behavior)
{
    span_t *sp = st->spans;
    size_t n = st->nspans, k = 0;
    if (invert)
        for (size_t i = 0; i < n; i++) sp[i].match = !sp[i].match;
    int prevm = 0;
    switch (behavior) {
    case BEH_ISOLATED:
        for (size_t i = 0; i < n; i++) sp[i].match = 0;
        break;
    case BEH_REMOVED:
        break;
    case BEH_CONTIGUOUS:
        for (size_t i = 0; i < n; i++) {
            int m = sp[i].match;
            if (m == prevm && k) sp[k - 1].end = sp[i].end;
            else sp[k++] = (span_t){ sp[i].start, sp[i].end, 0 };
            prevm = m;
        }
        st->nspans = k;
        break;
    case BEH_MERGED_PREV:
        for (size_t i = 0; i < n; i++) {
            int m = sp[i].match;
            if (m && !prevm && k) sp[k - 1].end = sp[i].end;
            else sp[k++] = (span_t){ sp[i].start, sp[i].end, 0 };
            prevm = m;
        }
        st->nspans = k;
        break;
    case BEH_MERGED_NEXT: {
        /* HF folds from the right: a match joins the piece after it */
        size_t w = n;
        for (size_t i = n; i-- > 0;) {
            int m = sp[i].match;
            if (m && !prevm && w < n) sp[w].start = sp[i].start;
            else sp[--w] = (span_t){ sp[i].start, sp[i].end, 0 };
            prevm = m;
        }
        memmove(sp, sp + w, (n - w) * sizeof *sp);
        st->nspans = n - w;
        break;
    }
    }
}

static int pretok_run(accel_tokenizer_t *t, int level, const char *s, size_t n, int at0, out_t *o);

static int pretok_run(accel_tokenizer_t *t, int level, const char *s, size_t n, int at0, out_t *o)
{
    if (!n) return 0;                               /* HF drops empty pieces */
    if (level == t->npre) return model_encode(t, s, n, o);
    pretok_t *st = &t->pre[level];
    switch (st->type) {
    case PRE_BYTELEVEL:                             /* ByteLevel without its regex */
        if (st->add_prefix_space && s[0] != ' ') {
            st->scratch.n = 0;
            if (buf_put(&st->scratch, " ", 1) || buf_put(&st->scratch, s, n)) return -1;
            return pretok_run(t, level + 1, st->scratch.p, st->scratch.n, at0, o);
        }
        return pretok_run(t, level + 1, s, n, at0, o);
    case PRE_SPLIT: {
        if (st->add_prefix_space && s[0] != ' ') {  /* ByteLevel with its regex */
            st->scratch.n = 0;
            if (buf_put(&st->scratch, " ", 1) || buf_put(&st->scratch, s, n)) return -1;
            s = st->scratch.p;
            n = st->scratch.n;
        }
        int r = find_spans(t, st, s, n);
        if (r) return r;
        apply_behavior(st, st->invert, st->behavior);
        /* the span list is reused by the next call of this step: walk a private copy of the count
         * and re-read spans by index (deeper levels use their own steps, never this one) */
        for (size_t i = 0; i < st->nspans; i++) {
            if (st->spans[i].match) continue;
            size_t a = st->spans[i].start, b = st->spans[i].end;
            if ((r = pretok_run(t, level + 1, s + a, b - a, at0 && a == 0, o))) return r;
        }
        return 0;
    }
    case PRE_METASPACE: {
        buf_t *b = &st->scratch;
        b->n = 0;
        int starts = n >= st->repl_len && !memcmp(s, st->repl, st->repl_len);
        int prepend = st->prepend == PREPEND_ALWAYS || (st->prepend == PREPEND_FIRST && at0);
        if (buf_reserve(b, 3 * n + 8)) return -1;
        /* a leading space becomes the replacement too, so "starts with" is checked after replacing */
        if (!starts && s[0] == ' ') starts = 1;
        if (prepend && !starts) {
            memcpy(b->p, st->repl, st->repl_len);
            b->n = st->repl_len;
        }
        for (size_t i = 0; i < n; i++) {
            if (s[i] == ' ') {
                memcpy(b->p + b->n, st->repl, st->repl_len);
                b->n += st->repl_len;
            } else b->p[b->n++] = s[i];
        }
        if (!st->split) return pretok_run(t, level + 1, b->p, b->n, at0, o);
        /* split before each replacement character (MergedWithNext); the pieces point into this
         * step's scratch, which deeper steps never touch */
        size_t start = 0;
        for (size_t i = st->repl_len; i + st->repl_len <= b->n; i++) {
            if (!memcmp(b->p + i, st->repl, st->repl_len)) {
                int r = pretok_run(t, level + 1, b->p + start, i - start, at0 && start == 0, o);
                if (r) return r;
                start = i;
                i += st->repl_len - 1;
            }
        }
        return pretok_run(t, level + 1, b->p + start, b->n - start, at0 && start == 0, o);
    }
    }
    return 0;
}

/* ------------------------------------------------------------------ encoding: normalizers */

/* Replace every match of pat in src by content. */
static int replace_all(accel_tokenizer_t *t, pattern_t *pat, const char *s, size_t n, const char *c,
                       size_t cl, buf_t *o)
{
    size_t pos = 0, prev = 0;
    o->n = 0;
    if (buf_reserve(o, n + 1)) return -1;
    while (pos <= n) {
        size_t a, b;
        if (pat->re) {
            int rc = pcre2_match(pat->re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, pat->md, t->mctx);
            if (rc < 0) break;
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(pat->md);
            a = ov[0];
            b = ov[1];
            if (a == b) {
                if (a >= n) break;
                pos = a + utf8_len((unsigned char)s[a]);
                continue;
            }
        } else {
            const char *f = memmem(s + pos, n - pos, pat->lit, pat->litlen);
            if (!f) break;
            a = (size_t)(f - s);
            b = a + pat->litlen;
        }
        if (buf_put(o, s + prev, a - prev) || buf_put(o, c, cl)) return -1;
        prev = pos = b;
    }
    return buf_put(o, s + prev, n - prev);
}

/* Runs the normalizers over s; *res points at the result (s itself when nothing changed). */
static int normalize(accel_tokenizer_t *t, const char *s, size_t n, const char **res, size_t *rn)
{
    buf_t tmp = { 0 };
    const char *cur = s;
    size_t cn = n;
    int rc = 0;
    for (int i = 0; i < t->nnorm; i++) {
        norm_t *st = &t->norm[i];
        tmp.n = 0;
        switch (st->type) {
        case NORM_PREPEND:
            if (!cn) continue;       /* HF prepends to non-empty strings only */
            if (buf_put(&tmp, st->content, st->content_len) || buf_put(&tmp, cur, cn)) goto nomem;
            break;
        case NORM_REPLACE:
            if (replace_all(t, &st->pat, cur, cn, st->content, st->content_len, &tmp)) goto nomem;
            break;
        case NORM_NF:
        case NORM_LOWER: {
            size_t k;
            for (k = 0; k < cn && (unsigned char)cur[k] < 0x80; k++) {}
            if (k == cn && st->type == NORM_NF) continue;      /* ASCII is in every normal form */
            size_t ol = 0;
            uint8_t *r = st->type == NORM_NF ? u8_normalize(st->nf, (const uint8_t *)cur, cn, NULL, &ol)
                                             : u8_tolower((const uint8_t *)cur, cn, NULL, NULL, NULL, &ol);
            if (!r) goto nomem;
            rc = buf_put(&tmp, r, ol);
            free(r);
            if (rc) goto nomem;
            break;
        }
        case NORM_STRIP: {
            size_t a = 0, b = cn, bad, k;
            while (st->strip_left && a < b && (k = utf8_seq((const unsigned char *)cur + a, b - a, &bad)) &&
                   is_white(utf8_decode((const unsigned char *)cur + a, k)))
                a += k;
            while (st->strip_right && b > a) {
                size_t j = b - 1;
                while (j > a && ((unsigned char)cur[j] & 0xC0) == 0x80) j--;
                k = b - j;
                if (!is_white(utf8_decode((const unsigned char *)cur + j, k))) break;
                b = j;
            }
            if (buf_put(&tmp, cur + a, b - a)) goto nomem;
            break;
        }
        }
        /* the result becomes the input of the next step */
        buf_t swap = t->normbuf;
        t->normbuf = tmp;
        tmp = swap;
        cur = t->normbuf.p ? t->normbuf.p : "";
        cn = t->normbuf.n;
    }
    free(tmp.p);
    *res = cur;
    *rn = cn;
    return 0;
nomem:
    free(tmp.p);
    return -1;
}

/* ------------------------------------------------------------------ encoding: added tokens */

static int is_word_at(const accel_tokenizer_t *t, const char *s, size_t n, size_t pos)
{
    int rc = pcre2_match(t->word_re, (PCRE2_SPTR)s, n, pos, PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK,
                         t->word_md, NULL);
    return rc > 0;
}

/* Next added token at or after pos: [*a, *b) is what it covers (with lstrip/rstrip whitespace). */
static int next_added(const accel_tokenizer_t *t, int pass, const char *s, size_t n, size_t pos,
                      size_t floor, size_t *a, size_t *b, int *id)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = pos; i < n; i++) {
        int k = t->added_nfirst[pass][u[i]];
        if (!k) continue;
        const int16_t *cand = t->added_first[pass][u[i]];
        for (int j = 0; j < k; j++) {
            const added_t *ad = &t->added[cand[j]];
            if (ad->match_len > n - i || memcmp(s + i, ad->match, ad->match_len)) continue;
            size_t start = i, stop = i + ad->match_len;
            if (ad->single_word) {
                size_t p = i;
                int before = 0, after = stop < n && is_word_at(t, s, n, stop);
                if (p > 0) {
                    do p--; while (p > 0 && (u[p] & 0xC0) == 0x80);
                    before = is_word_at(t, s, n, p);
                }
                if (before || after) {
                    /* HF's matcher resumes after the rejected match */
                    i = stop - 1;
                    break;
                }
            }
            if (ad->lstrip) {
                while (start > floor) {
                    size_t q = start - 1;
                    while (q > floor && (u[q] & 0xC0) == 0x80) q--;
                    if (!is_white(utf8_decode(u + q, start - q))) break;
                    start = q;
                }
            }
            if (ad->rstrip) {
                while (stop < n) {
                    size_t kk = utf8_len(u[stop]);
                    if (!is_white(utf8_decode(u + stop, kk))) break;
                    stop += kk;
                }
            }
            *a = start;
            *b = stop;
            *id = ad->id;
            return 1;
        }
    }
    return 0;
}

/* A stretch of text between added tokens: normalized, then split on the `normalized` added tokens
 * (HF's second pass), then each piece through the pre-tokenizers and the model. */
static int encode_segment(accel_tokenizer_t *t, const char *s, size_t n, int at0, out_t *o)
{
    if (!n) return 0;
    const char *ns = s;
    size_t nn = n;
    /* pre-tokenizers never touch normbuf, so the normalized text stays put while they run */
    if (t->nnorm && normalize(t, s, n, &ns, &nn)) return -1;
    size_t pos = 0, floor = 0, a, b;
    int id, r;
    while (pos < nn) {
        if (!t->nadded || !next_added(t, 1, ns, nn, pos, floor, &a, &b, &id)) {
            a = b = nn;
            id = -1;
        }
        if ((r = pretok_run(t, 0, ns + pos, a - pos, at0 && pos == 0, o))) return r;
        if (id >= 0 && (r = out_put(o, &id, 1))) return r;
        pos = floor = b;
    }
    return 0;
}

accel_status_t accel_tokenizer_encode(accel_tokenizer_t *t, const char *text, size_t len,
                                      int32_t **ids, size_t *n, size_t *cap)
{
    if (t->is_bytes) {
        if (ids_reserve(ids, cap, *n + len)) return ACCEL_ERR_NOMEM;
        for (size_t i = 0; i < len; i++) (*ids)[(*n)++] = (unsigned char)text[i];
        return ACCEL_OK;
    }
    t->err[0] = '\0';
    size_t bad = utf8_check(text, len);
    if (bad < len) {
        snprintf(t->err, sizeof t->err, "tokenizer '%s': the text is not valid UTF-8 at byte offset %zu "
                 "(byte 0x%02x)\n--> hint: convert the input to UTF-8", t->name, bad,
                 (unsigned char)text[bad]);
        return ACCEL_ERR_INVALID;
    }
    out_t o = { ids, n, cap };
    size_t pos = 0, floor = 0, a, b;
    int id, r;
    while (pos < len) {
        if (!t->nadded || !next_added(t, 0, text, len, pos, floor, &a, &b, &id)) {
            a = b = len;
            id = -1;
        }
        if ((r = encode_segment(t, text + pos, a - pos, pos == 0, &o))) goto fail;
        if (id >= 0 && (r = out_put(&o, &id, 1))) goto fail;
        pos = floor = b;
    }
    return ACCEL_OK;
fail:
    snprintf(t->err, sizeof t->err, "tokenizer '%s': %s", t->name,
             r == -2 ? "the pre-tokenizer regex failed (match limit or JIT stack)" : "out of memory");
    return r == -2 ? ACCEL_ERR_INVALID : ACCEL_ERR_NOMEM;
}

/* ------------------------------------------------------------------ decoding */

/* A list of strings: the decoder chain's tokens. */
typedef struct {
    buf_t *s;
    size_t n, cap;
} slist_t;

static void slist_free(slist_t *l)
{
    for (size_t i = 0; i < l->cap; i++) free(l->s[i].p);
    free(l->s);
    memset(l, 0, sizeof *l);
}

static buf_t *slist_add(slist_t *l)
{
    if (l->n == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 64;
        buf_t *p = realloc(l->s, c * sizeof *p);
        if (!p) return NULL;
        memset(p + l->cap, 0, (c - l->cap) * sizeof *p);
        l->s = p;
        l->cap = c;
    }
    buf_t *b = &l->s[l->n++];
    b->n = 0;
    if (buf_reserve(b, 1)) return NULL;
    b->p[0] = '\0';
    return b;
}

static int is_byte_token(const buf_t *b, unsigned *v)
{
    if (b->n != 6 || memcmp(b->p, "<0x", 3) || b->p[5] != '>') return 0;
    char h[3] = { b->p[3], b->p[4], 0 };
    if (!strchr("0123456789ABCDEFabcdef", h[0]) || !strchr("0123456789ABCDEFabcdef", h[1]) || !h[0] || !h[1])
        return 0;
    *v = (unsigned)strtoul(h, NULL, 16);
    return 1;
}

/* One decoder step, HF's Decoder::decode_chain: in -> out. */
static int dec_step(const accel_tokenizer_t *t, const decstep_t *d, slist_t *in, slist_t *out)
{
    out->n = 0;
    buf_t *o;
    switch (d->type) {
    case DEC_BYTELEVEL: {
        /* built per call (a few hundred stores): decode may run on several threads at once */
        int16_t cp_byte[324];
        uint32_t bc[256];
        bytes_to_unicode(bc);
        memset(cp_byte, -1, sizeof cp_byte);
        for (int b = 0; b < 256; b++) cp_byte[bc[b]] = (int16_t)b;
        buf_t all = { 0 }, one = { 0 };
        for (size_t i = 0; i < in->n; i++) {
            int r = bl_to_bytes(cp_byte, in->s[i].p, in->s[i].n, &one);
            if (r < 0) goto bl_nomem;
            if (r ? buf_put(&all, one.p ? one.p : "", one.n) : buf_put(&all, in->s[i].p, in->s[i].n)) goto bl_nomem;
        }
        if (!(o = slist_add(out)) || append_lossy(o, all.p ? all.p : "", all.n)) goto bl_nomem;
        free(all.p);
        free(one.p);
        return 0;
    bl_nomem:
        free(all.p);
        free(one.p);
        return -1;
    }
    case DEC_METASPACE:
        for (size_t i = 0; i < in->n; i++) {
            if (!(o = slist_add(out))) return -1;
            const char *s = in->s[i].p;
            size_t n = in->s[i].n;
            for (size_t j = 0; j < n;) {
                if (j + d->repl_len <= n && !memcmp(s + j, d->repl, d->repl_len)) {
                    if (!(i == 0 && d->prepend != PREPEND_NEVER) && buf_put(o, " ", 1)) return -1;
                    j += d->repl_len;
                } else {
                    if (buf_put(o, s + j, 1)) return -1;
                    j++;
                }
            }
        }
        return 0;
    case DEC_REPLACE:
        for (size_t i = 0; i < in->n; i++) {
            if (!(o = slist_add(out))) return -1;
            const char *s = in->s[i].p;
            size_t n = in->s[i].n;
            for (size_t j = 0; j < n;) {
                if (j + d->pat_len <= n && !memcmp(s + j, d->pat, d->pat_len)) {
                    if (buf_put(o, d->content, d->content_len)) return -1;
                    j += d->pat_len;
                } else {
                    if (buf_put(o, s + j, 1)) return -1;
                    j++;
                }
            }
        }
        return 0;
    case DEC_BYTEFALLBACK: {
        /* a run of <0xAB> tokens becomes its string when it is valid UTF-8, else one U+FFFD per byte */
        buf_t run = { 0 };
        size_t nrun = 0;
        for (size_t i = 0; i <= in->n; i++) {
            unsigned v;
            if (i < in->n && is_byte_token(&in->s[i], &v)) {
                char c = (char)v;
                if (buf_put(&run, &c, 1)) goto bf_nomem;
                nrun++;
                continue;
            }
            if (nrun) {
                if (!(o = slist_add(out))) goto bf_nomem;
                if (utf8_check(run.p, run.n) == run.n) {
                    if (buf_put(o, run.p, run.n)) goto bf_nomem;
                } else {
                    for (size_t k = 0; k < nrun; k++) {
                        if (k && !(o = slist_add(out))) goto bf_nomem;
                        if (buf_put(o, "\xEF\xBF\xBD", 3)) goto bf_nomem;
                    }
                }
                run.n = 0;
                nrun = 0;
            }
            if (i < in->n) {
                if (!(o = slist_add(out)) || buf_put(o, in->s[i].p, in->s[i].n)) goto bf_nomem;
            }
        }
        free(run.p);
        return 0;
    bf_nomem:
        free(run.p);
        return -1;
    }
    case DEC_FUSE:
        if (!(o = slist_add(out))) return -1;
        for (size_t i = 0; i < in->n; i++)
            if (buf_put(o, in->s[i].p, in->s[i].n)) return -1;
        return 0;
    case DEC_STRIP:
        for (size_t i = 0; i < in->n; i++) {
            const unsigned char *s = (const unsigned char *)in->s[i].p;
            size_t n = in->s[i].n, a = 0, b = n, bad, k;
            for (int c = 0; c < d->strip_start && a < n; c++) {
                k = utf8_seq(s + a, n - a, &bad);
                if (!k || utf8_decode(s + a, k) != d->strip_char) break;
                a += k;
            }
            for (int c = 0; c < d->strip_stop && b > a; c++) {
                size_t j = b - 1;
                while (j > a && (s[j] & 0xC0) == 0x80) j--;
                if (utf8_decode(s + j, b - j) != d->strip_char) break;
                b = j;
            }
            if (!(o = slist_add(out)) || buf_put(o, (const char *)s + a, b - a)) return -1;
        }
        return 0;
    }
    (void)t;
    return 0;
}

/* The decoder chain over in's tokens, appended to res. */
static int run_decoder(const accel_tokenizer_t *t, slist_t *a, slist_t *b, buf_t *res)
{
    if (!a->n) return 0;
    if (!t->has_decoder) {           /* HF joins with spaces when there is no decoder */
        for (size_t i = 0; i < a->n; i++)
            if ((i && buf_put(res, " ", 1)) || buf_put(res, a->s[i].p, a->s[i].n)) return -1;
        return 0;
    }
    for (int k = 0; k < t->ndec; k++) {
        if (dec_step(t, &t->dec[k], a, b)) return -1;
        slist_t tmp = *a;
        *a = *b;
        *b = tmp;
    }
    for (size_t i = 0; i < a->n; i++)
        if (buf_put(res, a->s[i].p, a->s[i].n)) return -1;
    return 0;
}

accel_status_t accel_tokenizer_decode(const accel_tokenizer_t *t, const int32_t *ids, size_t n,
                                      char **text, size_t *len)
{
    if (t->is_bytes) {
        char *s = malloc(n + 1);
        if (!s) return ACCEL_ERR_NOMEM;
        for (size_t i = 0; i < n; i++) {
            if (ids[i] < 0 || ids[i] >= t->vocab) {
                free(s);
                return ACCEL_ERR_INVALID;
            }
            s[i] = (char)ids[i];
        }
        s[n] = '\0';
        *text = s;
        *len = n;
        return ACCEL_OK;
    }
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->vocab) return ACCEL_ERR_INVALID;
    /* As HF's Tokenizer::decode: every token's string (added tokens: their content) goes through
     * the decoder chain in one list. */
    slist_t a = { 0 }, b = { 0 };
    buf_t res = { 0 };
    accel_status_t st = ACCEL_ERR_NOMEM;
    if (buf_reserve(&res, 1)) goto done;
    res.p[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (!t->tok_str[id]) continue;               /* an id with no token: HF skips it */
        buf_t *s = slist_add(&a);
        if (!s || buf_put(s, t->tok_str[id], t->tok_len[id])) goto done;
    }
    if (run_decoder(t, &a, &b, &res)) goto done;
    *text = res.p;
    *len = res.n;
    res.p = NULL;
    st = ACCEL_OK;
done:
    slist_free(&a);
    slist_free(&b);
    free(res.p);
    return st;
}

const char *accel_tokenizer_token_bytes(const accel_tokenizer_t *t, int32_t id, int first,
                                        size_t *len)
{
    if (id < 0 || id >= t->vocab) return NULL;
    if (t->is_bytes) {
        *len = 1;
        return &t->byte_piece[id];
    }
    const char *s = t->raw[id];
    size_t n = t->raw_len[id];
    if (first && t->strip_first && !t->is_added[id] && n && s[0] == ' ') {
        s++;
        n--;
    }
    *len = n;
    return s;
}
