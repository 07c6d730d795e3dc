/* A Jinja interpreter for chat templates (jinja.h says what and why; docs/chat.md lists the
 * supported subset). Three parts:
 *   - the lexer: template text -> text pieces and tags, with Jinja's whitespace rules
 *     (trim_blocks, lstrip_blocks, `-`/`+` markers), and the tokens inside each tag;
 *   - the parser: tokens -> a tree of statements and expressions (Jinja's precedence);
 *   - the evaluator: walks the tree over dynamically typed values, printing them as Python does.
 * Everything a parse or a render allocates comes from one pool, freed at once. Errors anywhere
 * below (syntax, a type error, raise_exception, out of memory) unwind with longjmp to the entry
 * point, which returns the status: the pool and the output buffer are the only resources held. */
#define _GNU_SOURCE               /* memmem */
#include "build_config.h"

#include "jinja.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unicase.h>

/* Bounds for untrusted templates. */
#define MAX_DEPTH 256                       /* nested macro calls and expressions */
#define MAX_OUTPUT ((size_t)256 << 20)      /* bytes one render may write */
#define MAX_RANGE 10000000                  /* elements of one range() */

/* ------------------------------------------------------------------ pool and errors */

typedef struct block {
    struct block *next;
    size_t used, cap;
    _Alignas(16) char data[];
} block_t;

typedef struct {
    block_t *head;
    jmp_buf *jmp;                           /* where errors unwind to */
    accel_status_t st;
    char *err;
    size_t errlen;
} pool_t;

static _Noreturn void fail_status(pool_t *p, accel_status_t st, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static _Noreturn void fail_status(pool_t *p, accel_status_t st, int line, const char *fmt, ...)
{
    if (p->err && p->errlen) {
        size_t k = 0;
        if (line > 0) k = (size_t)snprintf(p->err, p->errlen, "line %d: ", line);
        if (k < p->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err + k, p->errlen - k, fmt, ap);
            va_end(ap);
        }
    }
    p->st = st;
    longjmp(*p->jmp, 1);
}
#define FAIL(p, line, ...) fail_status((p), ACCEL_ERR_INVALID, (line), __VA_ARGS__)

static void *palloc(pool_t *p, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!p->head || p->head->cap - p->head->used < n) {
        size_t cap = n > 65536 - sizeof(block_t) ? n : 65536 - sizeof(block_t);
        block_t *b = malloc(sizeof *b + cap);
        if (!b) fail_status(p, ACCEL_ERR_NOMEM, 0, "out of memory");
        b->next = p->head;
        b->used = 0;
        b->cap = cap;
        p->head = b;
    }
    void *r = p->head->data + p->head->used;
    p->head->used += n;
    return r;
}

static void *pzalloc(pool_t *p, size_t n)
{
    void *r = palloc(p, n);
    memset(r, 0, n);
    return r;
}

static char *pstrndup(pool_t *p, const char *s, size_t n)
{
    char *r = palloc(p, n + 1);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

static void pool_free(pool_t *p)
{
    for (block_t *b = p->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    p->head = NULL;
}

/* A growable byte buffer (output, string building); malloc'd so that it can outlive the pool. */
typedef struct {
    char *p;
    size_t n, cap;
} buf_t;

static void buf_put(pool_t *pool, buf_t *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        if (b->n + n > MAX_OUTPUT) fail_status(pool, ACCEL_ERR_INVALID, 0, "the output passes %zu MiB",
                                               MAX_OUTPUT >> 20);
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) fail_status(pool, ACCEL_ERR_NOMEM, 0, "out of memory");
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void buf_puts(pool_t *pool, buf_t *b, const char *s) { buf_put(pool, b, s, strlen(s)); }
static void buf_printf(pool_t *pool, buf_t *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void buf_printf(pool_t *pool, buf_t *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    buf_put(pool, b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* ------------------------------------------------------------------ values */

typedef enum {
    V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_DICT, V_NS,
    V_FUNC,                                 /* a global function: range, namespace, ... */
    V_MACRO,
    V_METHOD,                               /* a bound method: self.name */
} vtype_t;

typedef struct value value_t;
typedef struct list list_t;
typedef struct dict dict_t;
struct macro;

struct value {
    vtype_t t;
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *s;
            size_t n;
        } s;                                /* V_STR; V_FUNC/V_METHOD: the name; V_UNDEF: what */
        list_t *l;
        dict_t *d;                          /* V_DICT, V_NS */
        struct macro *m;
    };
    const value_t *self;                    /* V_METHOD */
};

struct list {
    value_t *v;
    size_t n, cap;
    bool tuple;                             /* prints as (a, b) */
};

struct dict {                               /* string keys in insertion order (JSON, literals) */
    const char **k;
    size_t *kn;
    value_t *v;
    size_t n, cap;
};

static const value_t NONE = {.t = V_NONE};

static value_t vbool(bool b) { return (value_t){.t = V_BOOL, .b = b}; }
static value_t vint(int64_t i) { return (value_t){.t = V_INT, .i = i}; }
static value_t vfloat(double f) { return (value_t){.t = V_FLOAT, .f = f}; }
static value_t vstr(const char *s, size_t n) { return (value_t){.t = V_STR, .s = {s, n}}; }
static value_t vundef(const char *what) { return (value_t){.t = V_UNDEF, .s = {what, what ? strlen(what) : 0}}; }

static list_t *list_new(pool_t *p, size_t cap)
{
    list_t *l = pzalloc(p, sizeof *l);
    l->cap = cap ? cap : 4;
    l->v = palloc(p, l->cap * sizeof *l->v);
    return l;
}

static void list_push(pool_t *p, list_t *l, value_t v)
{
    if (l->n == l->cap) {
        value_t *nv = palloc(p, 2 * l->cap * sizeof *nv);
        memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap *= 2;
    }
    l->v[l->n++] = v;
}

static value_t vlist(list_t *l) { return (value_t){.t = V_LIST, .l = l}; }

static dict_t *dict_new(pool_t *p)
{
    return pzalloc(p, sizeof(dict_t));
}

static long dict_find(const dict_t *d, const char *k, size_t kn)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->kn[i] == kn && !memcmp(d->k[i], k, kn)) return (long)i;
    return -1;
}

static void dict_set(pool_t *p, dict_t *d, const char *k, size_t kn, value_t v)
{
    long i = dict_find(d, k, kn);
    if (i >= 0) {
        d->v[i] = v;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        const char **nk = palloc(p, cap * sizeof *nk);
        size_t *nkn = palloc(p, cap * sizeof *nkn);
        value_t *nv = palloc(p, cap * sizeof *nv);
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof *nk);
            memcpy(nkn, d->kn, d->n * sizeof *nkn);
            memcpy(nv, d->v, d->n * sizeof *nv);
        }
        d->k = nk, d->kn = nkn, d->v = nv, d->cap = cap;
    }
    d->k[d->n] = k;
    d->kn[d->n] = kn;
    d->v[d->n++] = v;
}

static void dict_setc(pool_t *p, dict_t *d, const char *k, value_t v) { dict_set(p, d, k, strlen(k), v); }

static value_t vdict(dict_t *d) { return (value_t){.t = V_DICT, .d = d}; }

static bool is_num(const value_t *v) { return v->t == V_INT || v->t == V_FLOAT || v->t == V_BOOL; }
static double num(const value_t *v) { return v->t == V_FLOAT ? v->f : v->t == V_INT ? (double)v->i : v->b; }

static const char *type_name(const value_t *v)
{
    switch (v->t) {
    case V_UNDEF: return "undefined";
    case V_NONE: return "none";
    case V_BOOL: return "a boolean";
    case V_INT: return "an integer";
    case V_FLOAT: return "a float";
    case V_STR: return "a string";
    case V_LIST: return v->l->tuple ? "a tuple" : "a list";
    case V_DICT: return "a dict";
    case V_NS: return "a namespace";
    case V_FUNC: return "a function";
    case V_MACRO: return "a macro";
    default: return "a method";
    }
}

static bool truthy(const value_t *v)
{
    switch (v->t) {
    case V_UNDEF: case V_NONE: return false;
    case V_BOOL: return v->b;
    case V_INT: return v->i != 0;
    case V_FLOAT: return v->f != 0;
    case V_STR: return v->s.n != 0;
    case V_LIST: return v->l->n != 0;
    case V_DICT: return v->d->n != 0;
    default: return true;
    }
}

/* From JSON; keys in the object's order. */
static value_t from_json(pool_t *p, const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        dict_t *d = dict_new(p);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) dict_setc(p, d, pstrndup(p, k, strlen(k)), from_json(p, v));
        return vdict(d);
    }
    case JSON_ARRAY: {
        list_t *l = list_new(p, json_array_size(j));
        for (size_t i = 0; i < json_array_size(j); i++) list_push(p, l, from_json(p, json_array_get(j, i)));
        return vlist(l);
    }
    case JSON_STRING: return vstr(pstrndup(p, json_string_value(j), json_string_length(j)), json_string_length(j));
    case JSON_INTEGER: return vint(json_integer_value(j));
    case JSON_REAL: return vfloat(json_real_value(j));
    case JSON_TRUE: return vbool(true);
    case JSON_FALSE: return vbool(false);
    default: return NONE;
    }
}

/* ------------------------------------------------------------------ UTF-8 helpers */

static size_t u8_char_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
}

/* Code points in s[0..n) (the text is valid UTF-8: it comes from JSON or the template). */
static size_t u8_count(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xc0) != 0x80;
    return k;
}

/* Byte offsets of the code points of s: off[i] for i in [0, count], off[count] = n. (Text is
 * valid UTF-8; the steps are clamped to n all the same.) */
static size_t *u8_offsets(pool_t *p, const char *s, size_t n, size_t *count)
{
    size_t c = 0, k = 0;
    for (size_t i = 0; i < n; i += u8_char_len((unsigned char)s[i])) c++;
    size_t *off = palloc(p, (c + 1) * sizeof *off);
    for (size_t i = 0; i < n; i += u8_char_len((unsigned char)s[i])) off[k++] = i;
    off[k] = n;
    *count = c;
    return off;
}

/* The offset of the first byte of src[0..n) that is not valid UTF-8, or n. */
static size_t u8_invalid_at(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >= 0xc2 && c < 0xe0) ? 2 : (c >= 0xe0 && c < 0xf0) ? 3 : (c >= 0xf0 && c < 0xf5) ? 4 : 0;
        if (!k || i + k > n) return i;
        uint32_t cp = k == 1 ? c : c & (0x7f >> k);
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return i;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += k;
    }
    return n;
}

/* ------------------------------------------------------------------ Python's str() and json.dumps */

/* Python's repr(float): the shortest digits that read back, fixed notation for exponents in
 * [-4, 16), else d.ddde+XX. */
static void put_float(pool_t *p, buf_t *b, double f)
{
    if (isnan(f)) { buf_puts(p, b, "nan"); return; }
    if (isinf(f)) { buf_puts(p, b, f < 0 ? "-inf" : "inf"); return; }
    char tmp[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    /* tmp: [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0, neg = tmp[0] == '-';
    const char *q = tmp + neg;
    for (; *q && *q != 'e'; q++)
        if (*q != '.') digits[nd++] = *q;
    int exp10 = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (neg) buf_put(p, b, "-", 1);
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 >= 0) {
            for (int i = 0; i <= exp10; i++) buf_put(p, b, i < nd ? &digits[i] : "0", 1);
            buf_put(p, b, ".", 1);
            if (nd > exp10 + 1) buf_put(p, b, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
            else buf_put(p, b, "0", 1);
        } else {
            buf_put(p, b, "0.", 2);
            for (int i = 0; i < -exp10 - 1; i++) buf_put(p, b, "0", 1);
            buf_put(p, b, digits, (size_t)nd);
        }
    } else {
        buf_put(p, b, digits, 1);
        if (nd > 1) {
            buf_put(p, b, ".", 1);
            buf_put(p, b, digits + 1, (size_t)nd - 1);
        }
        buf_printf(p, b, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    }
}

/* Python's repr(str). */
static void put_str_repr(pool_t *p, buf_t *b, const char *s, size_t n)
{
    char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
    buf_put(p, b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == (unsigned char)q) {
            buf_put(p, b, "\\", 1);
            buf_put(p, b, s + i, 1);
        } else if (c == '\n') buf_puts(p, b, "\\n");
        else if (c == '\r') buf_puts(p, b, "\\r");
        else if (c == '\t') buf_puts(p, b, "\\t");
        else if (c < 0x20 || c == 0x7f) buf_printf(p, b, "\\x%02x", c);
        else buf_put(p, b, s + i, 1);
    }
    buf_put(p, b, &q, 1);
}

static void put_value(pool_t *p, buf_t *b, const value_t *v, bool repr);

static void put_items(pool_t *p, buf_t *b, const value_t *v)
{
    if (v->t == V_LIST) {
        buf_puts(p, b, v->l->tuple ? "(" : "[");
        for (size_t i = 0; i < v->l->n; i++) {
            if (i) buf_puts(p, b, ", ");
            put_value(p, b, &v->l->v[i], true);
        }
        if (v->l->tuple && v->l->n == 1) buf_puts(p, b, ",");
        buf_puts(p, b, v->l->tuple ? ")" : "]");
    } else {
        if (v->t == V_NS) buf_puts(p, b, "<Namespace ");
        buf_puts(p, b, "{");
        for (size_t i = 0; i < v->d->n; i++) {
            if (i) buf_puts(p, b, ", ");
            put_str_repr(p, b, v->d->k[i], v->d->kn[i]);
            buf_puts(p, b, ": ");
            put_value(p, b, &v->d->v[i], true);
        }
        buf_puts(p, b, v->t == V_NS ? "}>" : "}");
    }
}

/* str(v), or repr(v) for items inside lists and dicts. */
static void put_value(pool_t *p, buf_t *b, const value_t *v, bool repr)
{
    switch (v->t) {
    case V_UNDEF: break;
    case V_NONE: buf_puts(p, b, "None"); break;
    case V_BOOL: buf_puts(p, b, v->b ? "True" : "False"); break;
    case V_INT: buf_printf(p, b, "%lld", (long long)v->i); break;
    case V_FLOAT: put_float(p, b, v->f); break;
    case V_STR:
        if (repr) put_str_repr(p, b, v->s.s, v->s.n);
        else buf_put(p, b, v->s.s, v->s.n);
        break;
    case V_LIST: case V_DICT: case V_NS: put_items(p, b, v); break;
    default: buf_printf(p, b, "<%s %.*s>", type_name(v), (int)v->s.n, v->s.s ? v->s.s : ""); break;
    }
}

static value_t to_str(pool_t *p, const value_t *v)
{
    if (v->t == V_STR) return *v;
    buf_t b = {0};
    put_value(p, &b, v, false);
    value_t r = vstr(b.p ? pstrndup(p, b.p, b.n) : "", b.n);
    free(b.p);
    return r;
}

static void put_json_str(pool_t *p, buf_t *b, const char *s, size_t n, bool ascii)
{
    buf_put(p, b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': buf_puts(p, b, "\\\""); break;
        case '\\': buf_puts(p, b, "\\\\"); break;
        case '\n': buf_puts(p, b, "\\n"); break;
        case '\r': buf_puts(p, b, "\\r"); break;
        case '\t': buf_puts(p, b, "\\t"); break;
        case '\b': buf_puts(p, b, "\\b"); break;
        case '\f': buf_puts(p, b, "\\f"); break;
        default:
            if (c < 0x20 || (ascii && c == 0x7f)) buf_printf(p, b, "\\u%04x", c);
            else if (ascii && c >= 0x80) {
                size_t k = u8_char_len(c);
                uint32_t cp = c & (0xff >> (k + 1));
                for (size_t j = 1; j < k && i + j < n; j++) cp = cp << 6 | ((unsigned char)s[i + j] & 0x3f);
                i += k - 1;
                if (cp >= 0x10000) {
                    cp -= 0x10000;
                    buf_printf(p, b, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
                } else buf_printf(p, b, "\\u%04x", cp);
            } else buf_put(p, b, s + i, 1);
        }
    }
    buf_put(p, b, "\"", 1);
}

typedef struct {
    int indent;                             /* -1: none */
    const char *item_sep, *key_sep;
    bool sort_keys, ascii;
} json_style_t;

static int key_cmp_n(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static void put_json(pool_t *p, buf_t *b, const value_t *v, const json_style_t *st, int level, int line)
{
    switch (v->t) {
    case V_NONE: buf_puts(p, b, "null"); return;
    case V_BOOL: buf_puts(p, b, v->b ? "true" : "false"); return;
    case V_INT: buf_printf(p, b, "%lld", (long long)v->i); return;
    case V_FLOAT:
        if (isnan(v->f)) buf_puts(p, b, "NaN");
        else if (isinf(v->f)) buf_puts(p, b, v->f < 0 ? "-Infinity" : "Infinity");
        else put_float(p, b, v->f);
        return;
    case V_STR: put_json_str(p, b, v->s.s, v->s.n, st->ascii); return;
    case V_LIST: case V_DICT: case V_NS: break;
    default: FAIL(p, line, "tojson: %s is not JSON serializable", type_name(v));
    }
    bool list = v->t == V_LIST;
    size_t n = list ? v->l->n : v->d->n;
    if (!n) {
        buf_puts(p, b, list ? "[]" : "{}");
        return;
    }
    size_t *order = palloc(p, n * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = i;
    if (!list && st->sort_keys)             /* insertion sort: dicts here are small */
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && key_cmp_n(v->d->k[order[j - 1]], v->d->kn[order[j - 1]],
                                                 v->d->k[order[j]], v->d->kn[order[j]]) > 0; j--) {
                size_t t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
            }
    buf_puts(p, b, list ? "[" : "{");
    for (size_t i = 0; i < n; i++) {
        if (i) buf_puts(p, b, st->item_sep);
        if (st->indent >= 0) {
            buf_puts(p, b, "\n");
            for (int k = 0; k < (level + 1) * st->indent; k++) buf_puts(p, b, " ");
        }
        if (list) put_json(p, b, &v->l->v[i], st, level + 1, line);
        else {
            put_json_str(p, b, v->d->k[order[i]], v->d->kn[order[i]], st->ascii);
            buf_puts(p, b, st->key_sep);
            put_json(p, b, &v->d->v[order[i]], st, level + 1, line);
        }
    }
    if (st->indent >= 0) {
        buf_puts(p, b, "\n");
        for (int k = 0; k < level * st->indent; k++) buf_puts(p, b, " ");
    }
    buf_puts(p, b, list ? "]" : "}");
}

/* ------------------------------------------------------------------ lexer */

typedef enum { T_NAME, T_STR, T_INT, T_FLOAT, T_OP, T_END } tkind_t;

typedef struct {
    tkind_t k;
    int line;
    const char *s;                          /* T_NAME, T_OP: the text; T_STR: the decoded string */
    size_t n;
    int64_t i;
    double f;
} tok_t;

typedef enum { P_TEXT, P_PRINT, P_BLOCK } pkind_t;

/* A piece of the template: text as it is output (whitespace rules applied), or a tag's tokens. */
typedef struct {
    pkind_t k;
    int line;
    const char *s;
    size_t n;
    tok_t *t;
    int nt;                                 /* tokens, the last one T_END */
} piece_t;

typedef struct {
    pool_t *p;
    piece_t *pc;
    int npc, cap;
    int ip;                                 /* parser: the current piece */
    const tok_t *t;                         /* parser: the current piece's next token */
    bool has_generation;
} parser_t;

static void add_piece(parser_t *ps, piece_t pc)
{
    if (ps->npc == ps->cap) {
        int cap = ps->cap ? 2 * ps->cap : 64;
        piece_t *n = palloc(ps->p, (size_t)cap * sizeof *n);
        if (ps->npc) memcpy(n, ps->pc, (size_t)ps->npc * sizeof *n);
        ps->pc = n;
        ps->cap = cap;
    }
    ps->pc[ps->npc++] = pc;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static bool is_name0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void put_utf8(pool_t *p, buf_t *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) u[0] = (char)cp, n = 1;
    else if (cp < 0x800) u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
    else if (cp < 0x10000) u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
                           u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
    else u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
         u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
    buf_put(p, b, u, n);
}

/* A string literal from its opening quote at src[*pos]; escapes as Python's unicode-escape. */
static tok_t lex_string(pool_t *p, const char *src, size_t len, size_t *pos, int *line)
{
    char q = src[*pos];
    size_t i = *pos + 1;
    int line0 = *line;
    buf_t b = {0};
    for (;; i++) {
        if (i >= len) {
            free(b.p);
            FAIL(p, line0, "a string literal is not closed");
        }
        char c = src[i];
        if (c == q) break;
        if (c == '\n') (*line)++;
        if (c != '\\' || i + 1 >= len) {
            buf_put(p, &b, &c, 1);
            continue;
        }
        char e = src[++i];
        int nhex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (nhex) {
            uint32_t cp = 0;
            int k;
            for (k = 0; k < nhex && i + 1 + (size_t)k < len && hexval(src[i + 1 + k]) >= 0; k++)
                cp = cp << 4 | (uint32_t)hexval(src[i + 1 + k]);
            if (k < nhex || cp > 0x10ffff) {
                free(b.p);
                FAIL(p, *line, "a bad \\%c escape in a string literal", e);
            }
            put_utf8(p, &b, cp);
            i += (size_t)nhex;
            continue;
        }
        const char *from = "ntr\\'\"abfv0\n", *to = "\n\t\r\\'\"\a\b\f\v";
        const char *at = strchr(from, e);
        if (e == '\n') (*line)++;
        if (at && e == '\n') continue;          /* a backslash-newline continues the line */
        if (at && e == '0') buf_put(p, &b, "", 1);
        else if (at) buf_put(p, &b, &to[at - from], 1);
        else {
            buf_put(p, &b, "\\", 1);
            buf_put(p, &b, &e, 1);
        }
    }
    *pos = i + 1;
    tok_t t = {.k = T_STR, .line = line0, .s = b.p ? pstrndup(p, b.p, b.n) : "", .n = b.n};
    free(b.p);
    return t;
}

/* The tokens of a tag from src[*pos] to its end marker ("}}" for `print`, "%}" for a block, either
 * with a leading - or +), which is consumed; *sign: that leading character or 0. */
static void lex_tag(parser_t *ps, const char *src, size_t len, size_t *pos, int *line, bool print,
                    piece_t *pc, char *sign)
{
    pool_t *p = ps->p;
    tok_t *t = NULL;
    int nt = 0, cap = 0, depth = 0;
    size_t i = *pos;
    const char *end = print ? "}}" : "%}";
    for (;;) {
        while (i < len && is_space(src[i])) {
            if (src[i] == '\n') (*line)++;
            i++;
        }
        if (i >= len) FAIL(p, pc->line, "a %s tag is not closed (no \"%s\")", print ? "{{" : "{%", end);
        if (depth == 0) {
            size_t k = (src[i] == '-' || src[i] == '+') ? 1 : 0;
            if (i + k + 1 < len && src[i + k] == end[0] && src[i + k + 1] == end[1]) {
                *sign = k ? src[i] : 0;
                *pos = i + k + 2;
                break;
            }
        }
        if (nt + 1 >= cap) {
            cap = cap ? 2 * cap : 16;
            tok_t *nt_ = palloc(p, (size_t)cap * sizeof *nt_);
            if (nt) memcpy(nt_, t, (size_t)nt * sizeof *t);
            t = nt_;
        }
        tok_t tok = {.line = *line};
        char c = src[i];
        if (is_name0(c)) {
            size_t j = i;
            while (j < len && (is_name0(src[j]) || is_digit(src[j]))) j++;
            tok.k = T_NAME, tok.s = src + i, tok.n = j - i;
            i = j;
        } else if (is_digit(c)) {
            size_t j = i;
            while (j < len && (is_digit(src[j]) || src[j] == '_')) j++;
            bool is_float = false;
            if (j + 1 < len && src[j] == '.' && is_digit(src[j + 1])) {
                is_float = true;
                for (j++; j < len && (is_digit(src[j]) || src[j] == '_'); j++) {}
            }
            if (j < len && (src[j] == 'e' || src[j] == 'E')) {
                size_t k = j + 1;
                if (k < len && (src[k] == '+' || src[k] == '-')) k++;
                if (k < len && is_digit(src[k])) {
                    is_float = true;
                    for (j = k; j < len && is_digit(src[j]); j++) {}
                }
            }
            char tmp[64];
            size_t n = 0;
            for (size_t k = i; k < j && n < sizeof tmp - 1; k++)
                if (src[k] != '_') tmp[n++] = src[k];
            tmp[n] = 0;
            errno = 0;
            if (is_float) tok.k = T_FLOAT, tok.f = strtod(tmp, NULL);
            else tok.k = T_INT, tok.i = strtoll(tmp, NULL, 10);
            if (errno) FAIL(p, *line, "the number %s is out of range", tmp);
            i = j;
        } else if (c == '\'' || c == '"') {
            tok = lex_string(p, src, len, &i, line);
        } else {
            static const char *ops2[] = {"//", "**", "==", "!=", "<=", ">="};
            tok.k = T_OP, tok.s = src + i, tok.n = 1;
            for (size_t k = 0; k < sizeof ops2 / sizeof *ops2; k++)
                if (i + 1 < len && src[i] == ops2[k][0] && src[i + 1] == ops2[k][1]) tok.n = 2;
            if (tok.n == 1 && !strchr("+-*/%~<>=()[]{},.:|", c))
                FAIL(p, *line, "unexpected character '%c' in a tag", c);
            if (c == '(' || c == '[' || c == '{') depth++;
            if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
            i += tok.n;
        }
        t[nt++] = tok;
    }
    if (!t) t = palloc(p, sizeof *t);
    t[nt] = (tok_t){.k = T_END, .line = *line};
    pc->t = t;
    pc->nt = nt + 1;
}

/* Split the template into pieces, with Jinja's whitespace control as transformers sets it up:
 * trim_blocks (the newline after a block or comment tag goes), lstrip_blocks (spaces and tabs
 * before a block or comment tag on its own line go), `-` on a tag strips all whitespace on that
 * side, `+` keeps it. */
static void lex(parser_t *ps, const char *src, size_t len)
{
    pool_t *p = ps->p;
    size_t pos = 0;
    int line = 1;
    bool line_starting = true;
    while (pos < len) {
        size_t k = pos;
        while (k + 1 < len && !(src[k] == '{' && (src[k + 1] == '{' || src[k + 1] == '%' || src[k + 1] == '#'))) k++;
        if (k + 1 >= len) k = len;
        const char *text = src + pos;
        size_t tlen = k - pos;
        int text_line = line;
        for (size_t i = pos; i < k; i++) line += src[i] == '\n';
        if (k == len) {
            if (tlen) add_piece(ps, (piece_t){.k = P_TEXT, .line = text_line, .s = text, .n = tlen});
            break;
        }
        char kind = src[k + 1];
        char sign = k + 2 < len && (src[k + 2] == '-' || src[k + 2] == '+') ? src[k + 2] : 0;
        if (sign == '-') {
            while (tlen && is_space(text[tlen - 1])) tlen--;
        } else if (sign != '+' && kind != '{') {
            size_t lp = tlen;
            while (lp && text[lp - 1] != '\n') lp--;
            if (lp > 0 || line_starting) {
                size_t i = lp;
                while (i < tlen && (text[i] == ' ' || text[i] == '\t')) i++;
                if (i == tlen) tlen = lp;
            }
        }
        if (tlen) add_piece(ps, (piece_t){.k = P_TEXT, .line = text_line, .s = text, .n = tlen});
        size_t q = k + 2 + (sign ? 1 : 0);
        char end_sign = 0;
        if (kind == '#') {
            size_t e = q;
            while (e + 1 < len && !(src[e] == '#' && src[e + 1] == '}')) e++;
            if (e + 1 >= len) FAIL(p, line, "a comment {# is not closed");
            for (size_t i = q; i < e; i++) line += src[i] == '\n';
            if (e > q && (src[e - 1] == '-' || src[e - 1] == '+')) end_sign = src[e - 1];
            pos = e + 2;
        } else {
            piece_t pc = {.k = kind == '{' ? P_PRINT : P_BLOCK, .line = line};
            lex_tag(ps, src, len, &q, &line, kind == '{', &pc, &end_sign);
            if (pc.k == P_BLOCK && pc.t[0].k == T_NAME && pc.t[0].n == 3 && !memcmp(pc.t[0].s, "raw", 3))
                FAIL(p, pc.line, "{%% raw %%} is not supported");
            add_piece(ps, pc);
            pos = q;
        }
        if (end_sign == '-') {
            while (pos < len && is_space(src[pos])) line += src[pos++] == '\n';
        } else if (kind != '{' && end_sign != '+' && pos < len && src[pos] == '\n') {
            pos++;
            line++;
        }
        line_starting = pos > 0 && src[pos - 1] == '\n';
    }
}

/* ------------------------------------------------------------------ syntax tree */

typedef enum {
    E_CONST, E_NAME, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER, E_TEST, E_BIN, E_NEG, E_POS,
    E_NOT, E_AND, E_OR, E_COND, E_LIST, E_TUPLE, E_DICT, E_CMP, E_CONCAT,
} ekind_t;

enum { OP_ADD = 1, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW,
       OP_EQ, OP_NE, OP_LT, OP_GT, OP_LE, OP_GE, OP_IN, OP_NOTIN };

typedef struct expr expr_t;

/* Arguments of a call, filter or test; also the items of list, tuple and dict literals (a dict's
 * keys and values alternate). names[i]: the keyword, NULL for a positional argument. */
typedef struct {
    int n;
    expr_t **v;
    const char **names;
} args_t;

struct expr {
    ekind_t k;
    int line;
    int op;
    bool negate;                            /* E_TEST: `is not` */
    value_t c;                              /* E_CONST */
    const char *name;                       /* E_NAME, E_ATTR, E_FILTER, E_TEST */
    expr_t *a, *b, *x;                      /* operands; E_SLICE: a[b:x:y] with y in args */
    args_t args;                            /* E_CALL/E_FILTER/E_TEST arguments, literal items, E_CMP/E_CONCAT operands */
    int *ops;                               /* E_CMP: ops[i] between args.v[i] and args.v[i+1] */
};

typedef enum { S_TEXT, S_PRINT, S_IF, S_FOR, S_SET, S_SETBLOCK, S_MACRO, S_GENERATION, S_BREAK, S_CONTINUE } skind_t;

typedef struct stmt stmt_t;
struct stmt {
    skind_t k;
    int line;
    stmt_t *next;
    const char *text;                       /* S_TEXT */
    size_t n;
    expr_t *e;                              /* S_PRINT, S_SET: the value; S_IF: the test; S_FOR: the iterable */
    expr_t *filter;                         /* S_FOR: `if` after the iterable */
    stmt_t *body, *orelse;                  /* an elif is an S_IF alone in orelse */
    const char **names;                     /* S_FOR, S_SET targets; S_MACRO parameters */
    int nnames;
    const char *attr;                       /* S_SET of names[0].attr */
    expr_t **defaults;                      /* S_MACRO: a parameter's default or NULL */
};

typedef struct macro {
    const stmt_t *def;
    const char *name;
} macro_t;

struct jinja_template {
    pool_t pool;
    stmt_t *body;
    bool has_generation;
};

/* ------------------------------------------------------------------ parser */

static expr_t *new_expr(parser_t *ps, ekind_t k, int line)
{
    expr_t *e = pzalloc(ps->p, sizeof *e);
    e->k = k;
    e->line = line;
    return e;
}

static const tok_t *cur(parser_t *ps) { return ps->t; }
static void advance(parser_t *ps) { if (ps->t->k != T_END) ps->t++; }
static bool tok_is(const tok_t *t, tkind_t k, const char *s)
{
    return t->k == k && (!s || (t->n == strlen(s) && !memcmp(t->s, s, t->n)));
}
static bool is_op(parser_t *ps, const char *s) { return tok_is(ps->t, T_OP, s); }
static bool is_name(parser_t *ps, const char *s) { return tok_is(ps->t, T_NAME, s); }
static bool accept_op(parser_t *ps, const char *s) { if (!is_op(ps, s)) return false; advance(ps); return true; }
static bool accept_name(parser_t *ps, const char *s) { if (!is_name(ps, s)) return false; advance(ps); return true; }

static const char *tok_text(parser_t *ps, const tok_t *t)
{
    switch (t->k) {
    case T_END: return "the end of the tag";
    case T_STR: return "a string";
    case T_INT: case T_FLOAT: return "a number";
    default: return pstrndup(ps->p, t->s, t->n);
    }
}

static void expect_op(parser_t *ps, const char *s)
{
    if (!accept_op(ps, s)) FAIL(ps->p, cur(ps)->line, "expected '%s', found %s", s, tok_text(ps, cur(ps)));
}

static const char *expect_name(parser_t *ps)
{
    if (cur(ps)->k != T_NAME) FAIL(ps->p, cur(ps)->line, "expected a name, found %s", tok_text(ps, cur(ps)));
    const char *s = pstrndup(ps->p, cur(ps)->s, cur(ps)->n);
    advance(ps);
    return s;
}

static expr_t *parse_expr(parser_t *ps);
static expr_t *parse_or(parser_t *ps);
static expr_t *parse_unary(parser_t *ps, bool with_filter);
static expr_t *parse_primary(parser_t *ps);
static expr_t *parse_postfix(parser_t *ps, expr_t *e);

static void args_push(parser_t *ps, args_t *a, const char *name, expr_t *e, int *cap)
{
    if (a->n == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        expr_t **v = palloc(ps->p, (size_t)*cap * sizeof *v);
        const char **nm = palloc(ps->p, (size_t)*cap * sizeof *nm);
        if (a->n) {
            memcpy(v, a->v, (size_t)a->n * sizeof *v);
            memcpy(nm, a->names, (size_t)a->n * sizeof *nm);
        }
        a->v = v;
        a->names = nm;
    }
    a->v[a->n] = e;
    a->names[a->n++] = name;
}

/* Before each item of a bracketed list (call arguments, list and dict literals, macro
 * parameters): false, with the closer consumed, at the list's end. Items after the first follow
 * a comma; a trailing comma is allowed. */
static bool next_item(parser_t *ps, const char *close, int n)
{
    if (accept_op(ps, close)) return false;
    if (n) {
        expect_op(ps, ",");
        if (accept_op(ps, close)) return false;
    }
    return true;
}

/* (a, b=c, ...) after the opening parenthesis. */
static args_t parse_call_args(parser_t *ps)
{
    args_t a = {0};
    int cap = 0;
    while (next_item(ps, ")", a.n)) {
        const char *name = NULL;
        if (cur(ps)->k == T_NAME && tok_is(ps->t + 1, T_OP, "=")) {
            name = expect_name(ps);
            advance(ps);
        } else if (is_op(ps, "*") || is_op(ps, "**"))
            FAIL(ps->p, cur(ps)->line, "*args and **kwargs in calls are not supported");
        args_push(ps, &a, name, parse_expr(ps), &cap);
    }
    return a;
}

static expr_t *parse_filter_expr(parser_t *ps, expr_t *e)
{
    for (;;) {
        int line = cur(ps)->line;
        if (accept_op(ps, "|")) {
            expr_t *f = new_expr(ps, E_FILTER, line);
            f->a = e;
            f->name = expect_name(ps);
            if (accept_op(ps, "(")) f->args = parse_call_args(ps);
            e = f;
        } else if (accept_name(ps, "is")) {
            expr_t *t = new_expr(ps, E_TEST, line);
            t->a = e;
            t->negate = accept_name(ps, "not");
            t->name = expect_name(ps);
            if (accept_op(ps, "(")) t->args = parse_call_args(ps);
            else {
                const tok_t *c = cur(ps);
                bool arg = c->k == T_STR || c->k == T_INT || c->k == T_FLOAT ||
                           tok_is(c, T_OP, "(") || tok_is(c, T_OP, "[") || tok_is(c, T_OP, "{") ||
                           (c->k == T_NAME && !tok_is(c, T_NAME, "else") && !tok_is(c, T_NAME, "or") &&
                            !tok_is(c, T_NAME, "and"));
                if (arg) {
                    if (tok_is(c, T_NAME, "is")) FAIL(ps->p, c->line, "tests cannot be chained with 'is'");
                    int cap = 0;
                    args_push(ps, &t->args, NULL, parse_postfix(ps, parse_primary(ps)), &cap);
                }
            }
            e = t;
        } else if (accept_op(ps, "(")) {
            expr_t *c = new_expr(ps, E_CALL, line);
            c->a = e;
            c->args = parse_call_args(ps);
            e = c;
        } else return e;
    }
}

static expr_t *parse_postfix(parser_t *ps, expr_t *e)
{
    for (;;) {
        int line = cur(ps)->line;
        if (accept_op(ps, ".")) {
            expr_t *a;
            if (cur(ps)->k == T_INT) {          /* x.0 is x[0] */
                a = new_expr(ps, E_ITEM, line);
                a->b = new_expr(ps, E_CONST, line);
                a->b->c = vint(cur(ps)->i);
                advance(ps);
            } else {
                a = new_expr(ps, E_ATTR, line);
                a->name = expect_name(ps);
            }
            a->a = e;
            e = a;
        } else if (accept_op(ps, "[")) {
            expr_t *parts[3] = {0};
            int np = 0;
            bool slice = false;
            for (;;) {
                if (is_op(ps, ":")) {
                    advance(ps);
                    slice = true;
                    if (++np > 2) FAIL(ps->p, line, "a slice has at most three parts");
                    continue;
                }
                if (accept_op(ps, "]")) break;
                if (parts[np]) FAIL(ps->p, cur(ps)->line, "expected ':' or ']' in a subscript");
                parts[np] = parse_expr(ps);
            }
            expr_t *s = new_expr(ps, slice ? E_SLICE : E_ITEM, line);
            s->a = e;
            if (!slice && !parts[0]) FAIL(ps->p, line, "an empty subscript []");
            s->b = parts[0];
            s->x = parts[1];
            if (slice && parts[2]) {
                int cap = 0;
                args_push(ps, &s->args, NULL, parts[2], &cap);
            }
            e = s;
        } else if (accept_op(ps, "(")) {
            expr_t *c = new_expr(ps, E_CALL, line);
            c->a = e;
            c->args = parse_call_args(ps);
            e = c;
        } else return e;
    }
}

static expr_t *parse_primary(parser_t *ps)
{
    const tok_t *t = cur(ps);
    expr_t *e;
    switch (t->k) {
    case T_NAME: {
        static const struct { const char *s; value_t v; } lits[] = {
            {"true", {.t = V_BOOL, .b = true}}, {"True", {.t = V_BOOL, .b = true}},
            {"false", {.t = V_BOOL, .b = false}}, {"False", {.t = V_BOOL, .b = false}},
            {"none", {.t = V_NONE}}, {"None", {.t = V_NONE}},
        };
        for (size_t i = 0; i < sizeof lits / sizeof *lits; i++)
            if (tok_is(t, T_NAME, lits[i].s)) {
                e = new_expr(ps, E_CONST, t->line);
                e->c = lits[i].v;
                advance(ps);
                return e;
            }
        e = new_expr(ps, E_NAME, t->line);
        e->name = expect_name(ps);
        return e;
    }
    case T_STR: {
        e = new_expr(ps, E_CONST, t->line);
        e->c = vstr(t->s, t->n);
        advance(ps);
        while (cur(ps)->k == T_STR) {        /* "a" "b" is "ab" */
            char *s = palloc(ps->p, e->c.s.n + cur(ps)->n + 1);
            memcpy(s, e->c.s.s, e->c.s.n);
            memcpy(s + e->c.s.n, cur(ps)->s, cur(ps)->n + 1);
            e->c = vstr(s, e->c.s.n + cur(ps)->n);
            advance(ps);
        }
        return e;
    }
    case T_INT: case T_FLOAT:
        e = new_expr(ps, E_CONST, t->line);
        e->c = t->k == T_INT ? vint(t->i) : vfloat(t->f);
        advance(ps);
        return e;
    case T_OP: {
        int line = t->line, cap = 0;
        if (accept_op(ps, "(")) {
            if (accept_op(ps, ")")) {
                e = new_expr(ps, E_TUPLE, line);
                return e;
            }
            expr_t *first = parse_expr(ps);
            if (accept_op(ps, ")")) return first;
            e = new_expr(ps, E_TUPLE, line);
            args_push(ps, &e->args, NULL, first, &cap);
            while (accept_op(ps, ",")) {
                if (is_op(ps, ")")) break;
                args_push(ps, &e->args, NULL, parse_expr(ps), &cap);
            }
            expect_op(ps, ")");
            return e;
        }
        if (accept_op(ps, "[")) {
            e = new_expr(ps, E_LIST, line);
            while (next_item(ps, "]", e->args.n)) args_push(ps, &e->args, NULL, parse_expr(ps), &cap);
            return e;
        }
        if (accept_op(ps, "{")) {
            e = new_expr(ps, E_DICT, line);
            while (next_item(ps, "}", e->args.n)) {
                args_push(ps, &e->args, NULL, parse_expr(ps), &cap);
                expect_op(ps, ":");
                args_push(ps, &e->args, NULL, parse_expr(ps), &cap);
            }
            return e;
        }
        break;
    }
    default: break;
    }
    FAIL(ps->p, t->line, "unexpected %s in an expression", tok_text(ps, t));
}

static expr_t *parse_unary(parser_t *ps, bool with_filter)
{
    int line = cur(ps)->line;
    expr_t *e;
    if (accept_op(ps, "-")) {
        e = new_expr(ps, E_NEG, line);
        e->a = parse_unary(ps, false);
    } else if (accept_op(ps, "+")) {
        e = new_expr(ps, E_POS, line);
        e->a = parse_unary(ps, false);
    } else e = parse_primary(ps);
    e = parse_postfix(ps, e);
    return with_filter ? parse_filter_expr(ps, e) : e;
}

static expr_t *binop(parser_t *ps, int op, expr_t *a, expr_t *b, int line)
{
    expr_t *e = new_expr(ps, E_BIN, line);
    e->op = op;
    e->a = a;
    e->b = b;
    return e;
}

static expr_t *parse_pow(parser_t *ps)
{
    expr_t *e = parse_unary(ps, true);
    while (is_op(ps, "**")) {
        int line = cur(ps)->line;
        advance(ps);
        e = binop(ps, OP_POW, e, parse_unary(ps, true), line);
    }
    return e;
}

static expr_t *parse_math2(parser_t *ps)
{
    expr_t *e = parse_pow(ps);
    for (;;) {
        int line = cur(ps)->line, op = is_op(ps, "*") ? OP_MUL : is_op(ps, "/") ? OP_DIV :
                                       is_op(ps, "//") ? OP_FLOORDIV : is_op(ps, "%") ? OP_MOD : 0;
        if (!op) return e;
        advance(ps);
        e = binop(ps, op, e, parse_pow(ps), line);
    }
}

static expr_t *parse_concat(parser_t *ps)
{
    expr_t *e = parse_math2(ps);
    if (!is_op(ps, "~")) return e;
    expr_t *c = new_expr(ps, E_CONCAT, cur(ps)->line);
    int cap = 0;
    args_push(ps, &c->args, NULL, e, &cap);
    while (accept_op(ps, "~")) args_push(ps, &c->args, NULL, parse_math2(ps), &cap);
    return c;
}

static expr_t *parse_math1(parser_t *ps)
{
    expr_t *e = parse_concat(ps);
    for (;;) {
        int line = cur(ps)->line, op = is_op(ps, "+") ? OP_ADD : is_op(ps, "-") ? OP_SUB : 0;
        if (!op) return e;
        advance(ps);
        e = binop(ps, op, e, parse_concat(ps), line);
    }
}

static expr_t *parse_compare(parser_t *ps)
{
    expr_t *first = parse_math1(ps), *e = NULL;
    int cap = 0, nops = 0, opcap = 0;
    for (;;) {
        int line = cur(ps)->line, op = 0;
        static const struct { const char *s; int op; } cmp[] = {
            {"==", OP_EQ}, {"!=", OP_NE}, {"<", OP_LT}, {">", OP_GT}, {"<=", OP_LE}, {">=", OP_GE}};
        for (size_t i = 0; i < sizeof cmp / sizeof *cmp; i++)
            if (is_op(ps, cmp[i].s)) op = cmp[i].op;
        if (op) advance(ps);
        else if (accept_name(ps, "in")) op = OP_IN;
        else if (is_name(ps, "not") && tok_is(ps->t + 1, T_NAME, "in")) {
            advance(ps);
            advance(ps);
            op = OP_NOTIN;
        } else break;
        if (!e) {
            e = new_expr(ps, E_CMP, line);
            args_push(ps, &e->args, NULL, first, &cap);
        }
        if (nops == opcap) {
            opcap = opcap ? 2 * opcap : 4;
            int *o = palloc(ps->p, (size_t)opcap * sizeof *o);
            if (nops) memcpy(o, e->ops, (size_t)nops * sizeof *o);
            e->ops = o;
        }
        e->ops[nops++] = op;
        args_push(ps, &e->args, NULL, parse_math1(ps), &cap);
    }
    return e ? e : first;
}

static expr_t *parse_not(parser_t *ps)
{
    int line = cur(ps)->line;
    if (accept_name(ps, "not")) {
        expr_t *e = new_expr(ps, E_NOT, line);
        e->a = parse_not(ps);
        return e;
    }
    return parse_compare(ps);
}

/* a KW b KW c: left-associative `and` or `or` over the next tighter level. */
static expr_t *parse_logical(parser_t *ps, const char *kw, ekind_t k, expr_t *(*next)(parser_t *))
{
    expr_t *e = next(ps);
    while (is_name(ps, kw)) {
        expr_t *l = new_expr(ps, k, cur(ps)->line);
        advance(ps);
        l->a = e;
        l->b = next(ps);
        e = l;
    }
    return e;
}

static expr_t *parse_and(parser_t *ps) { return parse_logical(ps, "and", E_AND, parse_not); }
static expr_t *parse_or(parser_t *ps) { return parse_logical(ps, "or", E_OR, parse_and); }

/* The full expression: `a if b else c` at the top. */
static expr_t *parse_expr(parser_t *ps)
{
    expr_t *e = parse_or(ps);
    while (is_name(ps, "if")) {
        expr_t *c = new_expr(ps, E_COND, cur(ps)->line);
        advance(ps);
        c->a = e;
        c->b = parse_or(ps);
        if (accept_name(ps, "else")) c->x = parse_expr(ps);
        e = c;
    }
    return e;
}

/* An expression, or several separated by commas (a tuple), as `set x = 1, 2` allows. */
static expr_t *parse_tuple_expr(parser_t *ps)
{
    expr_t *e = parse_expr(ps);
    if (!is_op(ps, ",")) return e;
    expr_t *t = new_expr(ps, E_TUPLE, e->line);
    int cap = 0;
    args_push(ps, &t->args, NULL, e, &cap);
    while (accept_op(ps, ",")) {
        if (cur(ps)->k == T_END) break;
        args_push(ps, &t->args, NULL, parse_expr(ps), &cap);
    }
    return t;
}

static void expect_end(parser_t *ps)
{
    if (cur(ps)->k != T_END)
        FAIL(ps->p, cur(ps)->line, "unexpected %s (expected the end of the tag)", tok_text(ps, cur(ps)));
}

/* The block tag's keyword at piece i, or NULL. */
static bool piece_is(const piece_t *pc, const char *kw)
{
    return pc->k == P_BLOCK && tok_is(&pc->t[0], T_NAME, kw);
}

static stmt_t *parse_body(parser_t *ps, const char *const *ends, const char **found);

static stmt_t *new_stmt(parser_t *ps, skind_t k, int line)
{
    stmt_t *s = pzalloc(ps->p, sizeof *s);
    s->k = k;
    s->line = line;
    return s;
}

static void enter_piece(parser_t *ps)
{
    ps->t = ps->pc[ps->ip].t + 1;           /* past the keyword */
}

/* The current tag ends here: on to the next piece. */
static void end_tag(parser_t *ps)
{
    expect_end(ps);
    ps->ip++;
}

/* A closing tag with nothing after its keyword ({% endif %}, {% else %}): consumed. */
static void close_tag(parser_t *ps)
{
    enter_piece(ps);
    end_tag(ps);
}

static stmt_t *parse_if(parser_t *ps, int line)
{
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    stmt_t *s = new_stmt(ps, S_IF, line);
    s->e = parse_expr(ps);
    end_tag(ps);
    const char *found;
    s->body = parse_body(ps, ends, &found);
    int at = ps->pc[ps->ip].line;
    enter_piece(ps);
    if (!strcmp(found, "elif")) {
        s->orelse = parse_if(ps, at);
        return s;
    }
    if (!strcmp(found, "else")) {
        static const char *const endif[] = {"endif", NULL};
        end_tag(ps);
        s->orelse = parse_body(ps, endif, &found);
        enter_piece(ps);
    }
    end_tag(ps);
    return s;
}

static const char **parse_targets(parser_t *ps, int *n)
{
    const char **names = palloc(ps->p, 8 * sizeof *names);
    *n = 0;
    bool paren = accept_op(ps, "(");
    do {
        if (*n == 8) FAIL(ps->p, cur(ps)->line, "more than 8 loop variables");
        names[(*n)++] = expect_name(ps);
    } while (accept_op(ps, ","));
    if (paren) expect_op(ps, ")");
    return names;
}

static stmt_t *parse_stmt(parser_t *ps)
{
    piece_t *pc = &ps->pc[ps->ip];
    int line = pc->line;
    if (pc->k == P_TEXT) {
        stmt_t *s = new_stmt(ps, S_TEXT, line);
        s->text = pc->s;
        s->n = pc->n;
        ps->ip++;
        return s;
    }
    ps->t = pc->t;
    if (pc->k == P_PRINT) {
        stmt_t *s = new_stmt(ps, S_PRINT, line);
        s->e = parse_tuple_expr(ps);
        end_tag(ps);
        return s;
    }
    if (pc->t[0].k != T_NAME) FAIL(ps->p, line, "a block tag must start with a keyword");
    const char *kw = pstrndup(ps->p, pc->t[0].s, pc->t[0].n);
    enter_piece(ps);
    const char *found;
    if (!strcmp(kw, "if")) return parse_if(ps, line);
    if (!strcmp(kw, "for")) {
        static const char *const ends[] = {"else", "endfor", NULL};
        stmt_t *s = new_stmt(ps, S_FOR, line);
        s->names = parse_targets(ps, &s->nnames);
        if (!accept_name(ps, "in")) FAIL(ps->p, line, "expected 'in' in a for loop");
        s->e = parse_or(ps);
        if (is_op(ps, ",")) {               /* for x in a, b */
            expr_t *t = new_expr(ps, E_TUPLE, line);
            int cap = 0;
            args_push(ps, &t->args, NULL, s->e, &cap);
            while (accept_op(ps, ",")) args_push(ps, &t->args, NULL, parse_or(ps), &cap);
            s->e = t;
        }
        if (accept_name(ps, "if")) s->filter = parse_expr(ps);
        if (is_name(ps, "recursive")) FAIL(ps->p, line, "recursive loops are not supported");
        end_tag(ps);
        s->body = parse_body(ps, ends, &found);
        if (!strcmp(found, "else")) {
            static const char *const endfor[] = {"endfor", NULL};
            close_tag(ps);
            s->orelse = parse_body(ps, endfor, &found);
        }
        close_tag(ps);
        return s;
    }
    if (!strcmp(kw, "set")) {
        stmt_t *s = new_stmt(ps, S_SET, line);
        const char *first = expect_name(ps);
        if (accept_op(ps, ".")) {
            s->names = palloc(ps->p, sizeof *s->names);
            s->names[0] = first;
            s->nnames = 1;
            s->attr = expect_name(ps);
        } else {
            s->names = palloc(ps->p, 8 * sizeof *s->names);
            s->names[0] = first;
            s->nnames = 1;
            while (accept_op(ps, ",")) {
                if (s->nnames == 8) FAIL(ps->p, line, "more than 8 names in a set");
                s->names[s->nnames++] = expect_name(ps);
            }
        }
        if (accept_op(ps, "=")) {
            s->e = parse_tuple_expr(ps);
            end_tag(ps);
            return s;
        }
        if (s->attr || s->nnames > 1) FAIL(ps->p, line, "a block set assigns one plain name");
        if (is_op(ps, "|")) FAIL(ps->p, line, "filters on a block set are not supported");
        expect_end(ps);
        static const char *const ends[] = {"endset", NULL};
        s->k = S_SETBLOCK;
        ps->ip++;
        s->body = parse_body(ps, ends, &found);
        close_tag(ps);
        return s;
    }
    if (!strcmp(kw, "macro")) {
        stmt_t *s = new_stmt(ps, S_MACRO, line);
        const char *name = expect_name(ps);
        expect_op(ps, "(");
        int cap = 16;
        s->names = palloc(ps->p, (size_t)cap * sizeof *s->names);
        s->defaults = palloc(ps->p, (size_t)cap * sizeof *s->defaults);
        while (next_item(ps, ")", s->nnames)) {
            if (s->nnames == cap) FAIL(ps->p, line, "more than %d macro parameters", cap);
            s->names[s->nnames] = expect_name(ps);
            s->defaults[s->nnames++] = accept_op(ps, "=") ? parse_expr(ps) : NULL;
        }
        expect_end(ps);
        macro_t *m = pzalloc(ps->p, sizeof *m);
        m->def = s;
        m->name = name;
        s->e = new_expr(ps, E_CONST, line);
        s->e->c = (value_t){.t = V_MACRO, .m = m};
        s->attr = name;
        static const char *const ends[] = {"endmacro", NULL};
        ps->ip++;
        s->body = parse_body(ps, ends, &found);
        enter_piece(ps);
        if (cur(ps)->k == T_NAME) advance(ps);       /* {% endmacro name %} */
        end_tag(ps);
        return s;
    }
    if (!strcmp(kw, "generation")) {
        static const char *const ends[] = {"endgeneration", NULL};
        stmt_t *s = new_stmt(ps, S_GENERATION, line);
        expect_end(ps);
        ps->has_generation = true;
        ps->ip++;
        s->body = parse_body(ps, ends, &found);
        close_tag(ps);
        return s;
    }
    if (!strcmp(kw, "break") || !strcmp(kw, "continue")) {
        stmt_t *s = new_stmt(ps, kw[0] == 'b' ? S_BREAK : S_CONTINUE, line);
        end_tag(ps);
        return s;
    }
    static const char *const unsupported[] = {"filter", "call", "include", "import", "from", "extends",
                                              "block", "with", "autoescape", "do", "trans", NULL};
    for (int i = 0; unsupported[i]; i++)
        if (!strcmp(kw, unsupported[i])) FAIL(ps->p, line, "{%% %s %%} is not supported", kw);
    FAIL(ps->p, line, "unexpected {%% %s %%}", kw);
}

/* Statements up to a block tag named in `ends` (left current, its name in *found), or to the end
 * of the template when ends is NULL. */
static stmt_t *parse_body(parser_t *ps, const char *const *ends, const char **found)
{
    stmt_t *head = NULL, **tail = &head;
    int start_line = ps->ip > 0 ? ps->pc[ps->ip - 1].line : 1;
    while (ps->ip < ps->npc) {
        if (ends)
            for (int i = 0; ends[i]; i++)
                if (piece_is(&ps->pc[ps->ip], ends[i])) {
                    *found = ends[i];
                    return head;
                }
        stmt_t *s = parse_stmt(ps);
        *tail = s;
        tail = &s->next;
    }
    if (ends) {                             /* the closing keyword is the last one listed */
        int last = 0;
        while (ends[last + 1]) last++;
        FAIL(ps->p, start_line, "the block opened here is not closed (no {%% %s %%})", ends[last]);
    }
    return head;
}

accel_status_t jinja_parse(const char *src, size_t len, jinja_template_t **out, char *err, size_t errlen)
{
    *out = NULL;
    jinja_template_t *t = calloc(1, sizeof *t);
    if (!t) return ACCEL_ERR_NOMEM;
    jmp_buf jb;
    t->pool.jmp = &jb;
    t->pool.err = err;
    t->pool.errlen = errlen;
    if (setjmp(jb)) {
        accel_status_t st = t->pool.st;
        pool_free(&t->pool);
        free(t);
        return st;
    }
    parser_t ps = {.p = &t->pool};
    if (memchr(src, 0, len)) FAIL(&t->pool, 0, "the template holds a NUL byte");
    size_t bad = u8_invalid_at((const unsigned char *)src, len);
    if (bad < len) FAIL(&t->pool, 0, "the template is not UTF-8 text (byte %zu is 0x%02x)", bad, (unsigned char)src[bad]);
    /* Jinja reads \r\n and \r as \n and drops one newline at the end of the template
     * (keep_trailing_newline is off) */
    char *copy = palloc(&t->pool, len + 1);       /* pieces point into it */
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            if (i + 1 < len && src[i + 1] == '\n') i++;
            copy[n++] = '\n';
        } else copy[n++] = src[i];
    }
    if (n && copy[n - 1] == '\n') n--;
    copy[n] = 0;
    lex(&ps, copy, n);
    t->body = parse_body(&ps, NULL, NULL);
    t->has_generation = ps.has_generation;
    t->pool.jmp = NULL;
    *out = t;
    return ACCEL_OK;
}

void jinja_free(jinja_template_t *t)
{
    if (!t) return;
    pool_free(&t->pool);
    free(t);
}

bool jinja_has_generation(const jinja_template_t *t) { return t && t->has_generation; }

/* ------------------------------------------------------------------ evaluator */

typedef struct scope {
    struct scope *parent;
    dict_t *vars;
} scope_t;

enum { FLOW_NONE, FLOW_BREAK, FLOW_CONTINUE };

typedef struct {
    pool_t *p;
    buf_t *out;                             /* where output goes now (a macro call captures its own) */
    buf_t *top;                             /* the render's output */
    jinja_span_t *spans;                    /* malloc'd */
    int nspans, cap_spans;
    scope_t *root;
    int depth;
    int flow;
} ctx_t;

static value_t eval(ctx_t *c, scope_t *sc, const expr_t *e);
static void exec_body(ctx_t *c, scope_t *sc, const stmt_t *s);

static scope_t *scope_new(ctx_t *c, scope_t *parent)
{
    scope_t *s = palloc(c->p, sizeof *s);
    s->parent = parent;
    s->vars = dict_new(c->p);
    return s;
}

static const char *const GLOBALS[] = {"range", "namespace", "raise_exception", "strftime_now", "dict", NULL};

static value_t lookup(ctx_t *c, scope_t *sc, const char *name)
{
    size_t n = strlen(name);
    for (; sc; sc = sc->parent) {
        long i = dict_find(sc->vars, name, n);
        if (i >= 0) return sc->vars->v[i];
    }
    for (int i = 0; GLOBALS[i]; i++)
        if (!strcmp(name, GLOBALS[i])) return (value_t){.t = V_FUNC, .s = {GLOBALS[i], n}};
    (void)c;
    return vundef(name);
}

static const char *undef_name(const value_t *v)
{
    return v->s.s ? v->s.s : "a value";
}

static bool name_in(const char *s, size_t n, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && !memcmp(names[i], s, n)) return true;
    return false;
}

static const char *const STR_METHODS[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower", "title",
    "capitalize", "replace", "find", "rfind", "count", "join", "splitlines", "isdigit", "isalpha",
    "isalnum", "isspace", "islower", "isupper", NULL};
static const char *const DICT_METHODS[] = {"items", "keys", "values", "get", NULL};

static value_t method(ctx_t *c, const value_t *self, const char *name, size_t n)
{
    value_t *s = palloc(c->p, sizeof *s);
    *s = *self;
    return (value_t){.t = V_METHOD, .s = {name, n}, .self = s};
}

/* obj.name: a dict's methods come before its items, as in Python's getattr then getitem. */
static value_t get_attr(ctx_t *c, const value_t *obj, const char *name, int line)
{
    size_t n = strlen(name);
    switch (obj->t) {
    case V_UNDEF: FAIL(c->p, line, "'%s' is undefined (reading its attribute '%s')", undef_name(obj), name);
    case V_DICT:
        if (name_in(name, n, DICT_METHODS)) return method(c, obj, name, n);
        /* fall through */
    case V_NS: {
        long i = dict_find(obj->d, name, n);
        return i >= 0 ? obj->d->v[i] : vundef(name);
    }
    case V_STR:
        if (name_in(name, n, STR_METHODS)) return method(c, obj, name, n);
        return vundef(name);
    default: return vundef(name);
    }
}

static value_t str_index(ctx_t *c, const value_t *s, int64_t i)
{
    size_t count;
    size_t *off = u8_offsets(c->p, s->s.s, s->s.n, &count);
    if (i < 0) i += (int64_t)count;
    if (i < 0 || i >= (int64_t)count) return vundef("an index out of range");
    return vstr(s->s.s + off[i], off[i + 1] - off[i]);
}

static value_t get_item(ctx_t *c, const value_t *obj, const value_t *key, int line)
{
    switch (obj->t) {
    case V_UNDEF: FAIL(c->p, line, "'%s' is undefined (reading an item of it)", undef_name(obj));
    case V_LIST: case V_STR: {
        if (key->t != V_INT && key->t != V_BOOL) {
            if (obj->t == V_STR && key->t == V_STR) return get_attr(c, obj, pstrndup(c->p, key->s.s, key->s.n), line);
            return vundef("an item");
        }
        int64_t i = key->t == V_INT ? key->i : key->b;
        if (obj->t == V_STR) return str_index(c, obj, i);
        if (i < 0) i += (int64_t)obj->l->n;
        return i >= 0 && i < (int64_t)obj->l->n ? obj->l->v[i] : vundef("an index out of range");
    }
    case V_DICT: case V_NS: {
        if (key->t != V_STR) return vundef("an item");
        long i = dict_find(obj->d, key->s.s, key->s.n);
        if (i >= 0) return obj->d->v[i];
        return get_attr(c, obj, pstrndup(c->p, key->s.s, key->s.n), line);
    }
    default: return vundef("an item");
    }
}

/* Python's slice.indices: the first index, the step and how many. */
static void slice_range(ctx_t *c, int64_t len, const value_t *a, const value_t *b, const value_t *st,
                        int64_t *start, int64_t *step, int64_t *count, int line)
{
    const value_t *parts[3] = {a, b, st};
    for (int i = 0; i < 3; i++)
        if (parts[i]->t != V_NONE && parts[i]->t != V_UNDEF && parts[i]->t != V_INT)
            FAIL(c->p, line, "slice indices must be integers, not %s", type_name(parts[i]));
    *step = st->t == V_INT ? st->i : 1;
    if (*step == 0) FAIL(c->p, line, "slice step cannot be zero");
    int64_t lo, hi;
    if (*step > 0) {
        lo = a->t == V_INT ? a->i : 0;
        hi = b->t == V_INT ? b->i : len;
        if (lo < 0) lo += len;
        if (hi < 0) hi += len;
        lo = lo < 0 ? 0 : lo > len ? len : lo;
        hi = hi < 0 ? 0 : hi > len ? len : hi;
        *count = hi > lo ? (hi - lo + *step - 1) / *step : 0;
    } else {
        lo = a->t == V_INT ? a->i : len - 1;
        hi = b->t == V_INT ? b->i : -1 - len;
        if (lo < 0) lo += len;
        if (hi < 0) hi += len;
        lo = lo < -1 ? -1 : lo > len - 1 ? len - 1 : lo;
        hi = hi < -1 ? -1 : hi > len - 1 ? len - 1 : hi;
        *count = lo > hi ? (lo - hi + (-*step) - 1) / (-*step) : 0;
    }
    *start = lo;
}

static value_t do_slice(ctx_t *c, const value_t *obj, const value_t *a, const value_t *b, const value_t *st, int line)
{
    int64_t start, step, count;
    if (obj->t == V_LIST) {
        slice_range(c, (int64_t)obj->l->n, a, b, st, &start, &step, &count, line);
        list_t *l = list_new(c->p, (size_t)count);
        for (int64_t i = 0; i < count; i++) list_push(c->p, l, obj->l->v[start + i * step]);
        l->tuple = obj->l->tuple;
        return vlist(l);
    }
    if (obj->t == V_STR) {
        size_t n;
        size_t *off = u8_offsets(c->p, obj->s.s, obj->s.n, &n);
        slice_range(c, (int64_t)n, a, b, st, &start, &step, &count, line);
        if (step == 1) return vstr(obj->s.s + off[start], off[start + count] - off[start]);
        buf_t bf = {0};
        for (int64_t i = 0; i < count; i++) {
            int64_t k = start + i * step;
            buf_put(c->p, &bf, obj->s.s + off[k], off[k + 1] - off[k]);
        }
        value_t r = vstr(bf.p ? pstrndup(c->p, bf.p, bf.n) : "", bf.n);
        free(bf.p);
        return r;
    }
    if (obj->t == V_UNDEF) FAIL(c->p, line, "'%s' is undefined (slicing it)", undef_name(obj));
    FAIL(c->p, line, "%s cannot be sliced", type_name(obj));
}

static bool equal(const value_t *a, const value_t *b)
{
    if (is_num(a) && is_num(b)) {
        if (a->t != V_FLOAT && b->t != V_FLOAT)
            return (a->t == V_INT ? a->i : a->b) == (b->t == V_INT ? b->i : b->b);
        return num(a) == num(b);
    }
    if (a->t != b->t) return false;
    switch (a->t) {
    case V_UNDEF: case V_NONE: return true;
    case V_STR: return a->s.n == b->s.n && !memcmp(a->s.s, b->s.s, a->s.n);
    case V_LIST:
        if (a->l->n != b->l->n) return false;
        for (size_t i = 0; i < a->l->n; i++)
            if (!equal(&a->l->v[i], &b->l->v[i])) return false;
        return true;
    case V_DICT:
        if (a->d->n != b->d->n) return false;
        for (size_t i = 0; i < a->d->n; i++) {
            long j = dict_find(b->d, a->d->k[i], a->d->kn[i]);
            if (j < 0 || !equal(&a->d->v[i], &b->d->v[j])) return false;
        }
        return true;
    default: return a->d == b->d;
    }
}

/* <0, 0, >0 as Python orders a and b; a TypeError where Python has one. */
static int order(ctx_t *c, const value_t *a, const value_t *b, int line)
{
    if (is_num(a) && is_num(b)) {
        if (a->t == V_INT && b->t == V_INT) return (a->i > b->i) - (a->i < b->i);
        double x = num(a), y = num(b);
        return (x > y) - (x < y);
    }
    if (a->t == V_STR && b->t == V_STR) return key_cmp_n(a->s.s, a->s.n, b->s.s, b->s.n);
    if (a->t == V_LIST && b->t == V_LIST) {
        for (size_t i = 0; i < a->l->n && i < b->l->n; i++)
            if (!equal(&a->l->v[i], &b->l->v[i])) return order(c, &a->l->v[i], &b->l->v[i], line);
        return (a->l->n > b->l->n) - (a->l->n < b->l->n);
    }
    if (a->t == V_UNDEF || b->t == V_UNDEF)
        FAIL(c->p, line, "'%s' is undefined (comparing it)", undef_name(a->t == V_UNDEF ? a : b));
    FAIL(c->p, line, "%s and %s cannot be ordered", type_name(a), type_name(b));
}

static bool contains(ctx_t *c, const value_t *hay, const value_t *x, int line)
{
    switch (hay->t) {
    case V_UNDEF: return false;
    case V_STR:
        if (x->t != V_STR) FAIL(c->p, line, "'in <string>' needs a string on the left, not %s", type_name(x));
        if (!x->s.n) return true;
        return memmem(hay->s.s, hay->s.n, x->s.s, x->s.n) != NULL;
    case V_LIST:
        for (size_t i = 0; i < hay->l->n; i++)
            if (equal(&hay->l->v[i], x)) return true;
        return false;
    case V_DICT: case V_NS:
        return x->t == V_STR && dict_find(hay->d, x->s.s, x->s.n) >= 0;
    default: FAIL(c->p, line, "'in' needs a string, list or dict on the right, not %s", type_name(hay));
    }
}

static value_t concat_str(ctx_t *c, const value_t *a, const value_t *b)
{
    char *s = palloc(c->p, a->s.n + b->s.n + 1);
    memcpy(s, a->s.s, a->s.n);
    memcpy(s + a->s.n, b->s.s, b->s.n);
    s[a->s.n + b->s.n] = 0;
    return vstr(s, a->s.n + b->s.n);
}

static int64_t as_int(const value_t *v) { return v->t == V_INT ? v->i : v->b; }

static value_t arith(ctx_t *c, int op, const value_t *a, const value_t *b, int line)
{
    static const char *names[] = {"", "+", "-", "*", "/", "//", "%", "**"};
    if (a->t == V_UNDEF || b->t == V_UNDEF)
        FAIL(c->p, line, "'%s' is undefined (used with %s)", undef_name(a->t == V_UNDEF ? a : b), names[op]);
    if (op == OP_ADD && a->t == V_STR && b->t == V_STR) return concat_str(c, a, b);
    if (op == OP_ADD && a->t == V_LIST && b->t == V_LIST) {
        list_t *l = list_new(c->p, a->l->n + b->l->n);
        for (size_t i = 0; i < a->l->n; i++) list_push(c->p, l, a->l->v[i]);
        for (size_t i = 0; i < b->l->n; i++) list_push(c->p, l, b->l->v[i]);
        l->tuple = a->l->tuple && b->l->tuple;
        return vlist(l);
    }
    if (op == OP_MUL && ((a->t == V_STR || a->t == V_LIST) && (b->t == V_INT || b->t == V_BOOL))) {
        int64_t k = as_int(b);
        if (a->t == V_STR) {
            buf_t bf = {0};
            for (int64_t i = 0; i < k; i++) buf_put(c->p, &bf, a->s.s, a->s.n);
            value_t r = vstr(bf.p ? pstrndup(c->p, bf.p, bf.n) : "", bf.n);
            free(bf.p);
            return r;
        }
        if (k > 0 && (uint64_t)k * a->l->n > MAX_RANGE) FAIL(c->p, line, "a list of more than %d items", MAX_RANGE);
        list_t *l = list_new(c->p, k > 0 ? (size_t)k * a->l->n : 1);
        for (int64_t i = 0; i < k; i++)
            for (size_t j = 0; j < a->l->n; j++) list_push(c->p, l, a->l->v[j]);
        return vlist(l);
    }
    if (op == OP_MUL && (b->t == V_STR || b->t == V_LIST) && (a->t == V_INT || a->t == V_BOOL))
        return arith(c, op, b, a, line);
    if (!is_num(a) || !is_num(b))
        FAIL(c->p, line, "unsupported operand types for %s: %s and %s", names[op], type_name(a), type_name(b));
    bool ints = a->t != V_FLOAT && b->t != V_FLOAT;
    if (ints && op != OP_DIV) {
        int64_t x = as_int(a), y = as_int(b);
        switch (op) {
        case OP_ADD: return vint(x + y);
        case OP_SUB: return vint(x - y);
        case OP_MUL: return vint(x * y);
        case OP_FLOORDIV: case OP_MOD: {
            if (!y) FAIL(c->p, line, "integer division or modulo by zero");
            int64_t q = x / y, r = x % y;
            if (r && ((r < 0) != (y < 0))) q--, r += y;
            return vint(op == OP_MOD ? r : q);
        }
        case OP_POW:
            if (y >= 0) {
                int64_t r = 1;
                for (int64_t i = 0; i < y && i < 64; i++) r *= x;
                return vint(r);
            }
            return vfloat(pow((double)x, (double)y));
        }
    }
    double x = num(a), y = num(b);
    switch (op) {
    case OP_ADD: return vfloat(x + y);
    case OP_SUB: return vfloat(x - y);
    case OP_MUL: return vfloat(x * y);
    case OP_DIV:
        if (y == 0) FAIL(c->p, line, "division by zero");
        return vfloat(x / y);
    case OP_FLOORDIV:
        if (y == 0) FAIL(c->p, line, "float floor division by zero");
        return vfloat(floor(x / y));
    case OP_MOD: {
        if (y == 0) FAIL(c->p, line, "float modulo by zero");
        double r = fmod(x, y);
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return vfloat(r);
    }
    default: return vfloat(pow(x, y));
    }
}

/* The values a for loop (or a filter over a sequence) walks: a list's items, a dict's keys, a
 * string's characters; nothing for undefined. */
static list_t *iter_items(ctx_t *c, const value_t *v, int line)
{
    switch (v->t) {
    case V_UNDEF: return list_new(c->p, 1);
    case V_LIST: return v->l;
    case V_DICT: case V_NS: {
        list_t *l = list_new(c->p, v->d->n);
        for (size_t i = 0; i < v->d->n; i++) list_push(c->p, l, vstr(v->d->k[i], v->d->kn[i]));
        return l;
    }
    case V_STR: {
        size_t n;
        size_t *off = u8_offsets(c->p, v->s.s, v->s.n, &n);
        list_t *l = list_new(c->p, n);
        for (size_t i = 0; i < n; i++) list_push(c->p, l, vstr(v->s.s + off[i], off[i + 1] - off[i]));
        return l;
    }
    default: FAIL(c->p, line, "%s is not iterable", type_name(v));
    }
}

/* Evaluated call arguments. */
typedef struct {
    int n;
    value_t *v;
    const char **names;
    int line;
    const char *what;                       /* "filter tojson", for messages */
} argv_t;

static argv_t eval_args(ctx_t *c, scope_t *sc, const args_t *a, int line, const char *what)
{
    argv_t r = {.n = a->n, .names = a->names, .line = line, .what = what};
    r.v = palloc(c->p, (size_t)(a->n ? a->n : 1) * sizeof *r.v);
    for (int i = 0; i < a->n; i++) r.v[i] = eval(c, sc, a->v[i]);
    return r;
}

/* Argument `pos` (positional index, counted among positional arguments) or keyword `kw`. */
static const value_t *arg(const argv_t *a, int pos, const char *kw)
{
    int k = 0;
    for (int i = 0; i < a->n; i++) {
        if (!a->names[i]) {
            if (k++ == pos) return &a->v[i];
        } else if (kw && !strcmp(a->names[i], kw)) return &a->v[i];
    }
    return NULL;
}

static int npositional(const argv_t *a)
{
    int k = 0;
    for (int i = 0; i < a->n; i++) k += !a->names[i];
    return k;
}

/* Refuse keywords other than those listed (NULL-terminated), and more than maxpos positional. */
static void check_args(ctx_t *c, const argv_t *a, int maxpos, const char *const *kws)
{
    if (npositional(a) > maxpos)
        FAIL(c->p, a->line, "%s takes at most %d positional arguments, %d given", a->what, maxpos, npositional(a));
    for (int i = 0; i < a->n; i++) {
        if (!a->names[i]) continue;
        bool ok = false;
        for (int k = 0; kws && kws[k]; k++) ok |= !strcmp(kws[k], a->names[i]);
        if (!ok) FAIL(c->p, a->line, "%s has no argument '%s'", a->what, a->names[i]);
    }
}

static const char *want_str(ctx_t *c, const value_t *v, const argv_t *a, size_t *n)
{
    if (v->t != V_STR) FAIL(c->p, a->line, "%s wants a string, not %s", a->what, type_name(v));
    *n = v->s.n;
    return v->s.s;
}

static int64_t want_int(ctx_t *c, const value_t *v, const argv_t *a)
{
    if (v->t != V_INT && v->t != V_BOOL) FAIL(c->p, a->line, "%s wants an integer, not %s", a->what, type_name(v));
    return as_int(v);
}

static bool is_ws_cp(const char *s, size_t n)
{
    if (n == 1) return is_space(s[0]) || (s[0] >= 0x1c && s[0] <= 0x1f);
    /* U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000 */
    static const char *const ws[] = {"\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\xa8", "\xe2\x80\xa9",
                                     "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80", NULL};
    for (int i = 0; ws[i]; i++)
        if (strlen(ws[i]) == n && !memcmp(ws[i], s, n)) return true;
    return n == 3 && (unsigned char)s[0] == 0xe2 && (unsigned char)s[1] == 0x80 &&
           (unsigned char)s[2] >= 0x80 && (unsigned char)s[2] <= 0x8a;
}

/* The code point cp[0..n) is one of the count code points of set (byte offsets off). */
static bool cp_in(const char *cp, size_t n, const char *set, const size_t *off, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (off[i + 1] - off[i] == n && !memcmp(set + off[i], cp, n)) return true;
    return false;
}

/* Python's str.strip/lstrip/rstrip: whitespace, or any of the characters in chars. */
static value_t strip(ctx_t *c, const value_t *s, const value_t *chars, bool left, bool right)
{
    size_t n, cn = 0;
    size_t *off = u8_offsets(c->p, s->s.s, s->s.n, &n);
    size_t *coff = NULL;
    bool use_chars = chars && chars->t == V_STR;
    if (use_chars) coff = u8_offsets(c->p, chars->s.s, chars->s.n, &cn);
    size_t lo = 0, hi = n;
#define STRIPPABLE(k) (use_chars ? cp_in(s->s.s + off[k], off[(k) + 1] - off[k], chars->s.s, coff, cn) \
                                 : is_ws_cp(s->s.s + off[k], off[(k) + 1] - off[k]))
    if (left) while (lo < hi && STRIPPABLE(lo)) lo++;
    if (right) while (hi > lo && STRIPPABLE(hi - 1)) hi--;
#undef STRIPPABLE
    return vstr(s->s.s + off[lo], off[hi] - off[lo]);
}


/* Unicode case mapping (libunistring: full mappings, as Python's str.upper/lower). */
typedef enum { CASE_UPPER, CASE_LOWER } case_t;
static value_t map_case(ctx_t *c, const char *s, size_t n, case_t how)
{
    size_t rn = 0;
    uint8_t *r = how == CASE_UPPER ? u8_toupper((const uint8_t *)s, n, NULL, NULL, NULL, &rn)
                                   : u8_tolower((const uint8_t *)s, n, NULL, NULL, NULL, &rn);
    if (!r) fail_status(c->p, ACCEL_ERR_NOMEM, 0, "out of memory");
    value_t v = vstr(pstrndup(c->p, (const char *)r, rn), rn);
    free(r);
    return v;
}

/* Words capitalised: the first character of each upper-cased, the rest lower-cased. A word starts
 * after a character for which is_sep is true (Jinja's title filter: -, whitespace, brackets;
 * Python's str.title: any non-letter). */
static value_t title_case(ctx_t *c, const value_t *s, bool jinja_rule)
{
    size_t n;
    size_t *off = u8_offsets(c->p, s->s.s, s->s.n, &n);
    buf_t b = {0};
    bool start = true;
    for (size_t i = 0; i < n; i++) {
        const char *cp = s->s.s + off[i];
        size_t k = off[i + 1] - off[i];
        value_t m = map_case(c, cp, k, start ? CASE_UPPER : CASE_LOWER);
        buf_put(c->p, &b, m.s.s, m.s.n);
        bool letter = k > 1 || (cp[0] >= 'a' && cp[0] <= 'z') || (cp[0] >= 'A' && cp[0] <= 'Z');
        start = jinja_rule ? k == 1 && (is_space(cp[0]) || strchr("-({[<", cp[0])) : !letter;
    }
    value_t r = vstr(b.p ? pstrndup(c->p, b.p, b.n) : "", b.n);
    free(b.p);
    return r;
}

static value_t capitalize(ctx_t *c, const value_t *s)
{
    if (!s->s.n) return *s;
    size_t k = u8_char_len((unsigned char)s->s.s[0]);
    value_t a = map_case(c, s->s.s, k, CASE_UPPER), b = map_case(c, s->s.s + k, s->s.n - k, CASE_LOWER);
    return concat_str(c, &a, &b);
}

static value_t replace(ctx_t *c, const value_t *s, const char *old, size_t on, const char *nw, size_t nn, int64_t count)
{
    buf_t b = {0};
    size_t i = 0;
    int64_t done = 0;
    if (!on) {                              /* Python inserts the new text between characters */
        size_t n;
        size_t *off = u8_offsets(c->p, s->s.s, s->s.n, &n);
        for (size_t k = 0; k <= n; k++) {
            if (count < 0 || done < count) buf_put(c->p, &b, nw, nn), done++;
            if (k < n) buf_put(c->p, &b, s->s.s + off[k], off[k + 1] - off[k]);
        }
    } else {
        while (i < s->s.n) {
            const char *at = (count < 0 || done < count) ? memmem(s->s.s + i, s->s.n - i, old, on) : NULL;
            if (!at) break;
            buf_put(c->p, &b, s->s.s + i, (size_t)(at - (s->s.s + i)));
            buf_put(c->p, &b, nw, nn);
            i = (size_t)(at - s->s.s) + on;
            done++;
        }
        buf_put(c->p, &b, s->s.s + i, s->s.n - i);
    }
    value_t r = vstr(b.p ? pstrndup(c->p, b.p, b.n) : "", b.n);
    free(b.p);
    return r;
}

/* Python's str.split(sep, maxsplit) (rsplit when from_right). */
static value_t split(ctx_t *c, const value_t *s, const value_t *sep, int64_t maxsplit, bool from_right)
{
    list_t *l = list_new(c->p, 8);
    const char *p = s->s.s;
    size_t n = s->s.n;
    if (!sep || sep->t == V_NONE) {         /* runs of whitespace; none at the ends */
        size_t cnt;
        size_t *off = u8_offsets(c->p, p, n, &cnt);
        list_t *words = list_new(c->p, 8);
        size_t i = 0;
        while (i < cnt) {
            while (i < cnt && is_ws_cp(p + off[i], off[i + 1] - off[i])) i++;
            if (i == cnt) break;
            size_t j = i;
            while (j < cnt && !is_ws_cp(p + off[j], off[j + 1] - off[j])) j++;
            list_push(c->p, words, vstr(p + off[i], off[j] - off[i]));
            i = j;
        }
        if (maxsplit < 0 || (int64_t)words->n <= maxsplit + 1) return vlist(words);
        /* maxsplit: the last (or first) piece keeps the rest of the text */
        if (!from_right) {
            for (int64_t k = 0; k < maxsplit; k++) list_push(c->p, l, words->v[k]);
            const char *rest = words->v[maxsplit].s.s;
            size_t end = n;
            while (end > 0 && is_space(p[end - 1])) end--;
            list_push(c->p, l, vstr(rest, (size_t)(p + end - rest)));
        } else {
            size_t first = words->n - (size_t)maxsplit - 1;
            const char *start = p;
            while (start < p + n && is_space(*start)) start++;
            const value_t *lw = &words->v[first];
            list_push(c->p, l, vstr(start, (size_t)(lw->s.s + lw->s.n - start)));
            for (size_t k = first + 1; k < words->n; k++) list_push(c->p, l, words->v[k]);
        }
        return vlist(l);
    }
    size_t sn = sep->s.n;
    if (!from_right) {
        size_t i = 0;
        int64_t done = 0;
        for (;;) {
            const char *at = (maxsplit < 0 || done < maxsplit) ? memmem(p + i, n - i, sep->s.s, sn) : NULL;
            if (!at) break;
            list_push(c->p, l, vstr(p + i, (size_t)(at - (p + i))));
            i = (size_t)(at - p) + sn;
            done++;
        }
        list_push(c->p, l, vstr(p + i, n - i));
        return vlist(l);
    }
    /* from the right: find separators backwards, then reverse */
    list_t *rev = list_new(c->p, 8);
    size_t end = n;
    int64_t done = 0;
    while (maxsplit < 0 || done < maxsplit) {
        const char *at = NULL;
        for (size_t k = end >= sn ? end - sn + 1 : 0; k-- > 0;)
            if (!memcmp(p + k, sep->s.s, sn)) { at = p + k; break; }
        if (!at) break;
        list_push(c->p, rev, vstr(at + sn, (size_t)(p + end - (at + sn))));
        end = (size_t)(at - p);
        done++;
    }
    list_push(c->p, l, vstr(p, end));
    for (size_t k = rev->n; k-- > 0;) list_push(c->p, l, rev->v[k]);
    return vlist(l);
}

static value_t call_str_method(ctx_t *c, const value_t *self, const char *name, const argv_t *a)
{
    size_t n;
    const value_t *a0 = arg(a, 0, NULL), *a1 = arg(a, 1, NULL);
    if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
        check_args(c, a, 1, NULL);
        if (a0 && a0->t != V_STR && a0->t != V_NONE) want_str(c, a0, a, &n);
        return strip(c, self, a0, name[0] != 'r', name[0] != 'l');
    }
    if (!strcmp(name, "split") || !strcmp(name, "rsplit")) {
        static const char *const kws[] = {"sep", "maxsplit", NULL};
        check_args(c, a, 2, kws);
        const value_t *sep = arg(a, 0, "sep"), *mx = arg(a, 1, "maxsplit");
        if (sep && sep->t != V_NONE && !want_str(c, sep, a, &n)[0] && !n) FAIL(c->p, a->line, "split: empty separator");
        return split(c, self, sep, mx ? want_int(c, mx, a) : -1, name[0] == 'r');
    }
    if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
        check_args(c, a, 1, NULL);
        if (!a0) FAIL(c->p, a->line, "%s wants an argument", a->what);
        list_t one = {.v = (value_t *)a0, .n = 1};
        const list_t *opts = a0->t == V_LIST ? a0->l : &one;
        for (size_t i = 0; i < opts->n; i++) {
            const char *x = want_str(c, &opts->v[i], a, &n);
            if (n <= self->s.n && !memcmp(name[0] == 's' ? self->s.s : self->s.s + self->s.n - n, x, n)) return vbool(true);
        }
        return vbool(false);
    }
    if (!strcmp(name, "upper") || !strcmp(name, "lower")) {
        check_args(c, a, 0, NULL);
        return map_case(c, self->s.s, self->s.n, name[0] == 'u' ? CASE_UPPER : CASE_LOWER);
    }
    if (!strcmp(name, "title")) return check_args(c, a, 0, NULL), title_case(c, self, false);
    if (!strcmp(name, "capitalize")) return check_args(c, a, 0, NULL), capitalize(c, self);
    if (!strcmp(name, "replace")) {
        check_args(c, a, 3, NULL);
        if (!a0 || !a1) FAIL(c->p, a->line, "%s wants two arguments", a->what);
        size_t on, nn;
        const char *o = want_str(c, a0, a, &on), *nw = want_str(c, a1, a, &nn);
        const value_t *cnt = arg(a, 2, NULL);
        return replace(c, self, o, on, nw, nn, cnt ? want_int(c, cnt, a) : -1);
    }
    if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "count")) {
        check_args(c, a, 1, NULL);
        if (!a0) FAIL(c->p, a->line, "%s wants an argument", a->what);
        const char *x = want_str(c, a0, a, &n);
        if (name[0] == 'c') {
            if (!n) return vint((int64_t)u8_count(self->s.s, self->s.n) + 1);
            int64_t k = 0;
            for (const char *q = self->s.s; (q = memmem(q, (size_t)(self->s.s + self->s.n - q), x, n)); q += n) k++;
            return vint(k);
        }
        const char *at = NULL;
        if (name[0] == 'f') at = memmem(self->s.s, self->s.n, x, n);
        else
            for (size_t k = self->s.n >= n ? self->s.n - n + 1 : 0; k-- > 0;)
                if (!memcmp(self->s.s + k, x, n)) { at = self->s.s + k; break; }
        return vint(at ? (int64_t)u8_count(self->s.s, (size_t)(at - self->s.s)) : -1);
    }
    if (!strcmp(name, "join")) {
        check_args(c, a, 1, NULL);
        if (!a0) FAIL(c->p, a->line, "%s wants an argument", a->what);
        list_t *items = iter_items(c, a0, a->line);
        buf_t b = {0};
        for (size_t i = 0; i < items->n; i++) {
            if (items->v[i].t != V_STR) {
                free(b.p);
                FAIL(c->p, a->line, "join: item %zu is %s, not a string", i, type_name(&items->v[i]));
            }
            if (i) buf_put(c->p, &b, self->s.s, self->s.n);
            buf_put(c->p, &b, items->v[i].s.s, items->v[i].s.n);
        }
        value_t r = vstr(b.p ? pstrndup(c->p, b.p, b.n) : "", b.n);
        free(b.p);
        return r;
    }
    if (!strcmp(name, "splitlines")) {
        check_args(c, a, 0, NULL);
        list_t *l = list_new(c->p, 8);
        size_t i = 0;
        while (i < self->s.n) {
            size_t j = i;
            while (j < self->s.n && self->s.s[j] != '\n' && self->s.s[j] != '\r') j++;
            list_push(c->p, l, vstr(self->s.s + i, j - i));
            if (j < self->s.n && self->s.s[j] == '\r' && j + 1 < self->s.n && self->s.s[j + 1] == '\n') j++;
            i = j + 1;
        }
        return vlist(l);
    }
    /* isdigit, isalpha, isalnum, isspace, islower, isupper: ASCII classes */
    check_args(c, a, 0, NULL);
    bool ok = self->s.n > 0, cased = false;
    for (size_t i = 0; i < self->s.n; i++) {
        unsigned char ch = (unsigned char)self->s.s[i];
        bool dig = ch >= '0' && ch <= '9', up = ch >= 'A' && ch <= 'Z', lo = ch >= 'a' && ch <= 'z';
        cased |= up || lo;
        if (!strcmp(name, "isdigit")) ok &= dig;
        else if (!strcmp(name, "isalpha")) ok &= up || lo;
        else if (!strcmp(name, "isalnum")) ok &= dig || up || lo;
        else if (!strcmp(name, "isspace")) ok &= is_space((char)ch);
        else if (!strcmp(name, "islower")) ok &= !up;
        else ok &= !lo;
    }
    if (!strcmp(name, "islower") || !strcmp(name, "isupper")) ok = ok && cased;
    return vbool(ok);
}

static value_t call_method(ctx_t *c, const value_t *m, const argv_t *a)
{
    const char *name = m->s.s;
    const value_t *self = m->self;
    if (self->t == V_STR) return call_str_method(c, self, name, a);
    /* dict methods */
    if (!strcmp(name, "get")) {
        check_args(c, a, 2, NULL);
        const value_t *k = arg(a, 0, NULL), *d = arg(a, 1, NULL);
        if (!k) FAIL(c->p, a->line, "%s wants a key", a->what);
        long i = k->t == V_STR ? dict_find(self->d, k->s.s, k->s.n) : -1;
        return i >= 0 ? self->d->v[i] : d ? *d : NONE;
    }
    check_args(c, a, 0, NULL);
    list_t *l = list_new(c->p, self->d->n);
    for (size_t i = 0; i < self->d->n; i++) {
        value_t k = vstr(self->d->k[i], self->d->kn[i]);
        if (name[0] == 'k') list_push(c->p, l, k);
        else if (name[0] == 'v') list_push(c->p, l, self->d->v[i]);
        else {
            list_t *pair = list_new(c->p, 2);
            list_push(c->p, pair, k);
            list_push(c->p, pair, self->d->v[i]);
            pair->tuple = true;
            list_push(c->p, l, vlist(pair));
        }
    }
    return vlist(l);
}

/* ------------------------------------------------------------------ tests */

static bool run_test(ctx_t *c, const char *name, const value_t *v, const argv_t *a)
{
    const value_t *x = arg(a, 0, NULL);
#define TEST(n) (!strcmp(name, n))
    if (TEST("defined")) return v->t != V_UNDEF;
    if (TEST("undefined")) return v->t == V_UNDEF;
    if (TEST("none")) return v->t == V_NONE;
    if (TEST("string")) return v->t == V_STR;
    if (TEST("number")) return is_num(v);
    if (TEST("integer")) return v->t == V_INT;
    if (TEST("float")) return v->t == V_FLOAT;
    if (TEST("boolean")) return v->t == V_BOOL;
    if (TEST("true")) return v->t == V_BOOL && v->b;
    if (TEST("false")) return v->t == V_BOOL && !v->b;
    if (TEST("mapping")) return v->t == V_DICT;
    if (TEST("iterable")) return v->t == V_STR || v->t == V_LIST || v->t == V_DICT || v->t == V_UNDEF;
    if (TEST("sequence")) return v->t == V_STR || v->t == V_LIST || v->t == V_DICT || v->t == V_UNDEF;
    if (TEST("callable")) return v->t == V_FUNC || v->t == V_MACRO || v->t == V_METHOD;
    if (TEST("escaped")) return false;
    if (TEST("lower") || TEST("upper")) {
        if (v->t != V_STR) return false;
        value_t m = map_case(c, v->s.s, v->s.n, TEST("lower") ? CASE_LOWER : CASE_UPPER);
        return equal(&m, v);
    }
    if (TEST("odd") || TEST("even")) {
        if (v->t != V_INT && v->t != V_BOOL) FAIL(c->p, a->line, "test %s wants an integer, not %s", name, type_name(v));
        int64_t k = as_int(v);
        return TEST("odd") ? (k & 1) : !(k & 1);
    }
    if (!x) FAIL(c->p, a->line, "test %s wants an argument", name);
    if (TEST("divisibleby")) {
        value_t zero = vint(0), r = arith(c, OP_MOD, v, x, a->line);
        return equal(&r, &zero);
    }
    if (TEST("equalto") || TEST("eq") || TEST("==") || TEST("sameas")) return equal(v, x);
    if (TEST("ne") || TEST("!=")) return !equal(v, x);
    if (TEST("lt") || TEST("lessthan") || TEST("<")) return order(c, v, x, a->line) < 0;
    if (TEST("le") || TEST("<=")) return order(c, v, x, a->line) <= 0;
    if (TEST("gt") || TEST("greaterthan") || TEST(">")) return order(c, v, x, a->line) > 0;
    if (TEST("ge") || TEST(">=")) return order(c, v, x, a->line) >= 0;
    if (TEST("in")) return contains(c, x, v, a->line);
#undef TEST
    FAIL(c->p, a->line, "the test '%s' is not supported", name);
}

/* ------------------------------------------------------------------ filters */

static value_t apply_filter(ctx_t *c, const char *name, const value_t *v, const argv_t *a);

/* The key a sort, unique, min or max compares: the attribute when asked, lower-cased strings
 * unless case-sensitive. */
static value_t sort_key(ctx_t *c, const value_t *v, const value_t *attr, bool case_sensitive, int line)
{
    value_t k = *v;
    if (attr && attr->t == V_STR) k = get_attr(c, v, pstrndup(c->p, attr->s.s, attr->s.n), line);
    if (!case_sensitive && k.t == V_STR) k = map_case(c, k.s.s, k.s.n, CASE_LOWER);
    return k;
}

static value_t list_of(ctx_t *c, const value_t *v, const argv_t *a)
{
    return vlist(iter_items(c, v, a->line));
}

static value_t filter_seq_select(ctx_t *c, const char *name, const value_t *v, const argv_t *a)
{
    bool by_attr = !strcmp(name, "selectattr") || !strcmp(name, "rejectattr");
    bool reject = name[0] == 'r';
    list_t *items = iter_items(c, v, a->line), *out = list_new(c->p, items->n);
    int first = by_attr ? 1 : 0;
    const value_t *attr = by_attr ? arg(a, 0, NULL) : NULL;
    if (by_attr && (!attr || attr->t != V_STR)) FAIL(c->p, a->line, "%s wants an attribute name", a->what);
    const value_t *test = arg(a, first, NULL);
    if (test && test->t != V_STR) FAIL(c->p, a->line, "%s wants a test name", a->what);
    /* the test's own arguments follow its name */
    argv_t targs = {.line = a->line, .what = a->what};
    int np = npositional(a);
    if (np > first + 1) {
        targs.n = np - first - 1;
        targs.v = palloc(c->p, (size_t)targs.n * sizeof *targs.v);
        targs.names = pzalloc(c->p, (size_t)targs.n * sizeof *targs.names);
        for (int i = 0; i < targs.n; i++) targs.v[i] = *arg(a, first + 1 + i, NULL);
    }
    const char *tname = test ? pstrndup(c->p, test->s.s, test->s.n) : NULL;
    for (size_t i = 0; i < items->n; i++) {
        value_t x = by_attr ? get_attr(c, &items->v[i], pstrndup(c->p, attr->s.s, attr->s.n), a->line) : items->v[i];
        bool ok = tname ? run_test(c, tname, &x, &targs) : truthy(&x);
        if (ok != reject) list_push(c->p, out, items->v[i]);
    }
    return vlist(out);
}

static value_t apply_filter(ctx_t *c, const char *name, const value_t *v, const argv_t *a)
{
    const value_t *a0 = arg(a, 0, NULL);
    size_t n;
#define IS(f) (!strcmp(name, f))
    if (IS("trim")) {
        check_args(c, a, 1, NULL);
        value_t s = to_str(c->p, v);
        return strip(c, &s, a0, true, true);
    }
    if (IS("length") || IS("count")) {
        check_args(c, a, 0, NULL);
        switch (v->t) {
        case V_UNDEF: return vint(0);
        case V_STR: return vint((int64_t)u8_count(v->s.s, v->s.n));
        case V_LIST: return vint((int64_t)v->l->n);
        case V_DICT: case V_NS: return vint((int64_t)v->d->n);
        default: FAIL(c->p, a->line, "%s has no length", type_name(v));
        }
    }
    if (IS("string")) return check_args(c, a, 0, NULL), to_str(c->p, v);
    if (IS("safe")) return check_args(c, a, 0, NULL), *v;
    if (IS("upper") || IS("lower")) {
        check_args(c, a, 0, NULL);
        value_t s = to_str(c->p, v);
        return map_case(c, s.s.s, s.s.n, IS("upper") ? CASE_UPPER : CASE_LOWER);
    }
    if (IS("title")) {
        check_args(c, a, 0, NULL);
        value_t s = to_str(c->p, v);
        return title_case(c, &s, true);
    }
    if (IS("capitalize")) {
        check_args(c, a, 0, NULL);
        value_t s = to_str(c->p, v);
        return capitalize(c, &s);
    }
    if (IS("default") || IS("d")) {
        static const char *const kws[] = {"default_value", "boolean", NULL};
        check_args(c, a, 2, kws);
        const value_t *dv = arg(a, 0, "default_value"), *boolean = arg(a, 1, "boolean");
        bool use = v->t == V_UNDEF || (boolean && truthy(boolean) && !truthy(v));
        return use ? (dv ? *dv : vstr("", 0)) : *v;
    }
    if (IS("join")) {
        static const char *const kws[] = {"d", "attribute", NULL};
        check_args(c, a, 2, kws);
        const value_t *sep = arg(a, 0, "d"), *attr = arg(a, 1, "attribute");
        list_t *items = iter_items(c, v, a->line);
        value_t sepv = sep ? to_str(c->p, sep) : vstr("", 0);
        buf_t b = {0};
        for (size_t i = 0; i < items->n; i++) {
            value_t x = attr ? sort_key(c, &items->v[i], attr, true, a->line) : items->v[i];
            if (i) buf_put(c->p, &b, sepv.s.s, sepv.s.n);
            put_value(c->p, &b, &x, false);
        }
        value_t r = vstr(b.p ? pstrndup(c->p, b.p, b.n) : "", b.n);
        free(b.p);
        return r;
    }
    if (IS("first") || IS("last")) {
        check_args(c, a, 0, NULL);
        list_t *items = iter_items(c, v, a->line);
        if (!items->n) return vundef("the first item of an empty sequence");
        return items->v[IS("first") ? 0 : items->n - 1];
    }
    if (IS("list")) return check_args(c, a, 0, NULL), list_of(c, v, a);
    if (IS("items")) {
        check_args(c, a, 0, NULL);
        if (v->t == V_UNDEF) return vlist(list_new(c->p, 1));
        if (v->t != V_DICT) FAIL(c->p, a->line, "items wants a dict, not %s", type_name(v));
        value_t m = {.t = V_METHOD, .s = {"items", 5}, .self = v};
        return call_method(c, &m, a);
    }
    if (IS("replace")) {
        check_args(c, a, 3, NULL);
        const value_t *a1 = arg(a, 1, NULL), *cnt = arg(a, 2, NULL);
        if (!a0 || !a1) FAIL(c->p, a->line, "replace wants two arguments");
        value_t s = to_str(c->p, v), o = to_str(c->p, a0), nw = to_str(c->p, a1);
        return replace(c, &s, o.s.s, o.s.n, nw.s.s, nw.s.n, cnt && cnt->t != V_NONE ? want_int(c, cnt, a) : -1);
    }
    if (IS("int") || IS("float")) {
        static const char *const kws[] = {"default", "base", NULL};
        check_args(c, a, 2, kws);
        const value_t *dv = arg(a, 0, "default");
        bool f = IS("float");
        value_t dflt = dv ? *dv : f ? vfloat(0) : vint(0);
        if (v->t == V_INT || v->t == V_BOOL) return f ? vfloat((double)as_int(v)) : vint(as_int(v));
        if (v->t == V_FLOAT) return f ? *v : isfinite(v->f) ? vint((int64_t)v->f) : dflt;
        if (v->t != V_STR) return dflt;
        char *s = pstrndup(c->p, v->s.s, v->s.n), *end;
        while (is_space(*s)) s++;
        errno = 0;
        if (!f) {
            long long i = strtoll(s, &end, 10);
            while (is_space(*end)) end++;
            if (!errno && end != s && !*end) return vint(i);
        }
        double d = strtod(s, &end);
        while (is_space(*end)) end++;
        if (end == s || *end) return dflt;
        return f ? vfloat(d) : isfinite(d) ? vint((int64_t)d) : dflt;
    }
    if (IS("abs")) {
        check_args(c, a, 0, NULL);
        if (v->t == V_INT || v->t == V_BOOL) return vint(llabs((long long)as_int(v)));
        if (v->t == V_FLOAT) return vfloat(fabs(v->f));
        FAIL(c->p, a->line, "abs wants a number, not %s", type_name(v));
    }
    if (IS("round")) {
        static const char *const kws[] = {"precision", "method", NULL};
        check_args(c, a, 2, kws);
        const value_t *pr = arg(a, 0, "precision"), *me = arg(a, 1, "method");
        int64_t prec = pr ? want_int(c, pr, a) : 0;
        const char *method = me ? want_str(c, me, a, &n) : "common";
        if (!is_num(v)) FAIL(c->p, a->line, "round wants a number, not %s", type_name(v));
        if (v->t != V_FLOAT && !strcmp(method, "common")) return vint(as_int(v));
        double scale = pow(10, (double)prec), x = num(v) * scale;
        x = !strcmp(method, "ceil") ? ceil(x) : !strcmp(method, "floor") ? floor(x) : nearbyint(x);
        return vfloat(x / scale);
    }
    if (IS("selectattr") || IS("rejectattr") || IS("select") || IS("reject")) return filter_seq_select(c, name, v, a);
    if (IS("map")) {
        list_t *items = iter_items(c, v, a->line), *out = list_new(c->p, items->n);
        const value_t *attr = arg(a, -1, "attribute"), *dflt = arg(a, -1, "default");
        if (attr) {
            for (size_t i = 0; i < items->n; i++) {
                value_t x = sort_key(c, &items->v[i], attr, true, a->line);
                list_push(c->p, out, x.t == V_UNDEF && dflt ? *dflt : x);
            }
            return vlist(out);
        }
        if (!a0 || a0->t != V_STR) FAIL(c->p, a->line, "map wants a filter name or attribute=");
        argv_t fargs = {.n = a->n - 1, .v = a->v + 1, .names = a->names + 1, .line = a->line,
                        .what = pstrndup(c->p, a0->s.s, a0->s.n)};
        for (size_t i = 0; i < items->n; i++) list_push(c->p, out, apply_filter(c, fargs.what, &items->v[i], &fargs));
        return vlist(out);
    }
    if (IS("unique") || IS("min") || IS("max")) {
        static const char *const kws[] = {"case_sensitive", "attribute", NULL};
        check_args(c, a, 2, kws);
        const value_t *cs = arg(a, 0, "case_sensitive"), *attr = arg(a, 1, "attribute");
        bool sens = cs && truthy(cs);
        list_t *items = iter_items(c, v, a->line), *out = list_new(c->p, items->n), *keys = list_new(c->p, items->n);
        size_t best = 0;
        for (size_t i = 0; i < items->n; i++) {
            value_t k = sort_key(c, &items->v[i], attr, sens, a->line);
            if (IS("unique")) {
                value_t kv = vlist(keys);
                if (contains(c, &kv, &k, a->line)) continue;
                list_push(c->p, keys, k);
                list_push(c->p, out, items->v[i]);
            } else {
                list_push(c->p, keys, k);
                if (i && order(c, &k, &keys->v[best], a->line) * (IS("min") ? -1 : 1) > 0) best = i;
            }
        }
        if (IS("unique")) return vlist(out);
        return items->n ? items->v[best] : vundef("the min or max of an empty sequence");
    }
    if (IS("reverse")) {
        check_args(c, a, 0, NULL);
        if (v->t == V_STR) {
            value_t none = NONE, step = vint(-1);
            return do_slice(c, v, &none, &none, &step, a->line);
        }
        list_t *items = iter_items(c, v, a->line), *out = list_new(c->p, items->n);
        for (size_t i = items->n; i-- > 0;) list_push(c->p, out, items->v[i]);
        return vlist(out);
    }
    if (IS("sort")) {
        static const char *const kws[] = {"reverse", "case_sensitive", "attribute", NULL};
        check_args(c, a, 3, kws);
        const value_t *rv = arg(a, 0, "reverse"), *cs = arg(a, 1, "case_sensitive"), *attr = arg(a, 2, "attribute");
        bool rev = rv && truthy(rv), sens = cs && truthy(cs);
        list_t *items = iter_items(c, v, a->line), *out = list_new(c->p, items->n);
        value_t *keys = palloc(c->p, (items->n + 1) * sizeof *keys);
        for (size_t i = 0; i < items->n; i++) {      /* a stable insertion sort */
            value_t k = sort_key(c, &items->v[i], attr, sens, a->line);
            size_t j = out->n;
            list_push(c->p, out, items->v[i]);
            while (j > 0 && order(c, &keys[j - 1], &k, a->line) * (rev ? -1 : 1) > 0) {
                out->v[j] = out->v[j - 1];
                keys[j] = keys[j - 1];
                j--;
            }
            out->v[j] = items->v[i];
            keys[j] = k;
        }
        return vlist(out);
    }
    if (IS("sum")) {
        static const char *const kws[] = {"attribute", "start", NULL};
        check_args(c, a, 2, kws);
        const value_t *attr = arg(a, 0, "attribute"), *start = arg(a, 1, "start");
        list_t *items = iter_items(c, v, a->line);
        value_t acc = start ? *start : vint(0);
        for (size_t i = 0; i < items->n; i++) {
            value_t x = attr ? sort_key(c, &items->v[i], attr, true, a->line) : items->v[i];
            acc = arith(c, OP_ADD, &acc, &x, a->line);
        }
        return acc;
    }
    if (IS("indent")) {
        static const char *const kws[] = {"width", "first", "blank", NULL};
        check_args(c, a, 3, kws);
        const value_t *w = arg(a, 0, "width"), *first = arg(a, 1, "first"), *blank = arg(a, 2, "blank");
        value_t ind;
        if (!w) ind = vstr("    ", 4);
        else if (w->t == V_STR) ind = *w;
        else {
            int64_t k = want_int(c, w, a);
            char *sp = palloc(c->p, (size_t)(k > 0 ? k : 0) + 1);
            memset(sp, ' ', (size_t)(k > 0 ? k : 0));
            ind = vstr(sp, (size_t)(k > 0 ? k : 0));
        }
        value_t s = to_str(c->p, v);
        value_t lines = call_str_method(c, &s, "splitlines", &(argv_t){.line = a->line, .what = "indent"});
        buf_t b = {0};
        if (first && truthy(first)) buf_put(c->p, &b, ind.s.s, ind.s.n);
        for (size_t i = 0; i < lines.l->n; i++) {
            const value_t *ln = &lines.l->v[i];
            if (i) {
                buf_put(c->p, &b, "\n", 1);
                if (ln->s.n || (blank && truthy(blank))) buf_put(c->p, &b, ind.s.s, ind.s.n);
            }
            buf_put(c->p, &b, ln->s.s, ln->s.n);
        }
        if (blank && truthy(blank) && !lines.l->n && first && truthy(first)) {}
        value_t r = vstr(b.p ? pstrndup(c->p, b.p, b.n) : "", b.n);
        free(b.p);
        return r;
    }
    if (IS("tojson")) {
        static const char *const kws[] = {"ensure_ascii", "indent", "separators", "sort_keys", NULL};
        check_args(c, a, 4, kws);
        const value_t *asc = arg(a, 0, "ensure_ascii"), *ind = arg(a, 1, "indent"), *sep = arg(a, 2, "separators"),
                      *sk = arg(a, 3, "sort_keys");
        json_style_t st = {.indent = -1, .item_sep = ", ", .key_sep = ": ", .sort_keys = sk && truthy(sk),
                           .ascii = asc && truthy(asc)};
        if (ind && ind->t != V_NONE) {
            st.indent = (int)want_int(c, ind, a);
            if (st.indent < 0) st.indent = 0;
            st.item_sep = ",";
        }
        if (sep && sep->t != V_NONE) {
            if (sep->t != V_LIST || sep->l->n != 2 || sep->l->v[0].t != V_STR || sep->l->v[1].t != V_STR)
                FAIL(c->p, a->line, "tojson: separators must be two strings");
            st.item_sep = pstrndup(c->p, sep->l->v[0].s.s, sep->l->v[0].s.n);
            st.key_sep = pstrndup(c->p, sep->l->v[1].s.s, sep->l->v[1].s.n);
        }
        if (v->t == V_UNDEF) FAIL(c->p, a->line, "tojson: '%s' is undefined", undef_name(v));
        buf_t b = {0};
        put_json(c->p, &b, v, &st, 0, a->line);
        value_t r = vstr(b.p ? pstrndup(c->p, b.p, b.n) : "", b.n);
        free(b.p);
        return r;
    }
#undef IS
    FAIL(c->p, a->line, "the filter '%s' is not supported", name);
}

/* ------------------------------------------------------------------ calls */

static value_t call_global(ctx_t *c, const char *name, const argv_t *a)
{
    if (!strcmp(name, "range")) {
        check_args(c, a, 3, NULL);
        int np = npositional(a);
        if (!np) FAIL(c->p, a->line, "range wants 1 to 3 arguments");
        int64_t lo = 0, hi, step = 1;
        if (np == 1) hi = want_int(c, arg(a, 0, NULL), a);
        else {
            lo = want_int(c, arg(a, 0, NULL), a);
            hi = want_int(c, arg(a, 1, NULL), a);
            if (np == 3) step = want_int(c, arg(a, 2, NULL), a);
        }
        if (!step) FAIL(c->p, a->line, "range: the step cannot be zero");
        int64_t count = step > 0 ? (hi > lo ? (hi - lo + step - 1) / step : 0) : (lo > hi ? (lo - hi - step - 1) / -step : 0);
        if (count > MAX_RANGE) FAIL(c->p, a->line, "range of %lld items (at most %d)", (long long)count, MAX_RANGE);
        list_t *l = list_new(c->p, (size_t)count);
        for (int64_t i = 0; i < count; i++) list_push(c->p, l, vint(lo + i * step));
        return vlist(l);
    }
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        if (npositional(a) > 1) FAIL(c->p, a->line, "%s() takes at most one positional argument", name);
        for (int i = 0; i < a->n; i++)
            if (a->names[i] && a->names[i][0] == '_' && name[0] == 'n')
                FAIL(c->p, a->line, "namespace attributes cannot start with '_' (%s)", a->names[i]);
        dict_t *d = dict_new(c->p);
        const value_t *init = arg(a, 0, NULL);
        if (init) {
            if (init->t != V_DICT && init->t != V_NS) FAIL(c->p, a->line, "%s() wants a dict, not %s", name, type_name(init));
            for (size_t i = 0; i < init->d->n; i++) dict_set(c->p, d, init->d->k[i], init->d->kn[i], init->d->v[i]);
        }
        for (int i = 0; i < a->n; i++)
            if (a->names[i]) dict_setc(c->p, d, a->names[i], a->v[i]);
        return (value_t){.t = name[0] == 'n' ? V_NS : V_DICT, .d = d};
    }
    if (!strcmp(name, "raise_exception")) {
        const value_t *m = arg(a, 0, "message");
        value_t s = m ? to_str(c->p, m) : vstr("", 0);
        FAIL(c->p, a->line, "the template raised an error: %.*s", (int)s.s.n, s.s.s);
    }
    /* strftime_now(format): the local time now */
    check_args(c, a, 1, NULL);
    size_t n = 0;
    const value_t *f = arg(a, 0, NULL);
    if (!f) FAIL(c->p, a->line, "strftime_now wants a format");
    const char *fmt = pstrndup(c->p, want_str(c, f, a, &n), n);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char out[256];
    size_t k = strftime(out, sizeof out, fmt, &tm);
    return vstr(pstrndup(c->p, out, k), k);
}

static value_t call_macro(ctx_t *c, const macro_t *m, const argv_t *a)
{
    const stmt_t *def = m->def;
    if (++c->depth > MAX_DEPTH) FAIL(c->p, a->line, "macro calls nested deeper than %d", MAX_DEPTH);
    scope_t *sc = scope_new(c, c->root);
    int np = npositional(a), k = 0;
    if (np > def->nnames) FAIL(c->p, a->line, "macro %s takes %d arguments, %d given", m->name, def->nnames, np);
    for (int i = 0; i < a->n; i++) {
        if (a->names[i]) {
            int j = 0;
            while (j < def->nnames && strcmp(def->names[j], a->names[i])) j++;
            if (j == def->nnames) FAIL(c->p, a->line, "macro %s has no argument '%s'", m->name, a->names[i]);
            dict_setc(c->p, sc->vars, def->names[j], a->v[i]);
        } else dict_setc(c->p, sc->vars, def->names[k++], a->v[i]);
    }
    for (int j = 0; j < def->nnames; j++)
        if (dict_find(sc->vars, def->names[j], strlen(def->names[j])) < 0)
            dict_setc(c->p, sc->vars, def->names[j], def->defaults[j] ? eval(c, sc, def->defaults[j]) : vundef(def->names[j]));
    buf_t *saved = c->out, b = {0};
    c->out = &b;
    exec_body(c, sc, def->body);
    c->out = saved;
    value_t r = vstr(b.p ? pstrndup(c->p, b.p, b.n) : "", b.n);
    free(b.p);
    c->depth--;
    return r;
}

/* ------------------------------------------------------------------ expressions */

static value_t eval(ctx_t *c, scope_t *sc, const expr_t *e)
{
    switch (e->k) {
    case E_CONST: return e->c;
    case E_NAME: return lookup(c, sc, e->name);
    case E_ATTR: {
        value_t o = eval(c, sc, e->a);
        return get_attr(c, &o, e->name, e->line);
    }
    case E_ITEM: {
        value_t o = eval(c, sc, e->a), k = eval(c, sc, e->b);
        return get_item(c, &o, &k, e->line);
    }
    case E_SLICE: {
        value_t o = eval(c, sc, e->a);
        value_t lo = e->b ? eval(c, sc, e->b) : NONE, hi = e->x ? eval(c, sc, e->x) : NONE,
                st = e->args.n ? eval(c, sc, e->args.v[0]) : NONE;
        return do_slice(c, &o, &lo, &hi, &st, e->line);
    }
    case E_CALL: {
        value_t f = eval(c, sc, e->a);
        const char *what = f.t == V_METHOD || f.t == V_FUNC ? pstrndup(c->p, f.s.s, f.s.n)
                           : f.t == V_MACRO ? f.m->name : "a call";
        argv_t a = eval_args(c, sc, &e->args, e->line, what);
        switch (f.t) {
        case V_FUNC: return call_global(c, f.s.s, &a);
        case V_METHOD: return call_method(c, &f, &a);
        case V_MACRO: return call_macro(c, f.m, &a);
        case V_UNDEF: FAIL(c->p, e->line, "'%s' is undefined (called as a function)", undef_name(&f));
        default: FAIL(c->p, e->line, "%s is not callable", type_name(&f));
        }
    }
    case E_FILTER: {
        value_t v = eval(c, sc, e->a);
        char what[96];
        snprintf(what, sizeof what, "the filter %s", e->name);
        argv_t a = eval_args(c, sc, &e->args, e->line, pstrndup(c->p, what, strlen(what)));
        return apply_filter(c, e->name, &v, &a);
    }
    case E_TEST: {
        value_t v = eval(c, sc, e->a);
        argv_t a = eval_args(c, sc, &e->args, e->line, e->name);
        return vbool(run_test(c, e->name, &v, &a) != e->negate);
    }
    case E_BIN: {
        value_t a = eval(c, sc, e->a), b = eval(c, sc, e->b);
        return arith(c, e->op, &a, &b, e->line);
    }
    case E_NEG: case E_POS: {
        value_t a = eval(c, sc, e->a);
        if (a.t == V_UNDEF) FAIL(c->p, e->line, "'%s' is undefined (used with unary -)", undef_name(&a));
        if (!is_num(&a)) FAIL(c->p, e->line, "bad operand for unary %c: %s", e->k == E_NEG ? '-' : '+', type_name(&a));
        if (e->k == E_POS) return a.t == V_BOOL ? vint(a.b) : a;
        return a.t == V_FLOAT ? vfloat(-a.f) : vint(-as_int(&a));
    }
    case E_NOT: {
        value_t a = eval(c, sc, e->a);
        return vbool(!truthy(&a));
    }
    case E_AND: case E_OR: {
        value_t a = eval(c, sc, e->a);
        if (truthy(&a) == (e->k == E_OR)) return a;
        return eval(c, sc, e->b);
    }
    case E_COND: {
        value_t t = eval(c, sc, e->b);
        if (truthy(&t)) return eval(c, sc, e->a);
        return e->x ? eval(c, sc, e->x) : vundef("the else branch of an inline if");
    }
    case E_LIST: case E_TUPLE: {
        list_t *l = list_new(c->p, (size_t)e->args.n);
        for (int i = 0; i < e->args.n; i++) list_push(c->p, l, eval(c, sc, e->args.v[i]));
        l->tuple = e->k == E_TUPLE;
        return vlist(l);
    }
    case E_DICT: {
        dict_t *d = dict_new(c->p);
        for (int i = 0; i + 1 < e->args.n; i += 2) {
            value_t k = eval(c, sc, e->args.v[i]), v = eval(c, sc, e->args.v[i + 1]);
            if (k.t != V_STR) FAIL(c->p, e->line, "dict keys must be strings here, not %s", type_name(&k));
            dict_set(c->p, d, k.s.s, k.s.n, v);
        }
        return vdict(d);
    }
    case E_CMP: {
        value_t a = eval(c, sc, e->args.v[0]);
        for (int i = 0; i + 1 < e->args.n; i++) {
            value_t b = eval(c, sc, e->args.v[i + 1]);
            bool r;
            switch (e->ops[i]) {
            case OP_EQ: r = equal(&a, &b); break;
            case OP_NE: r = !equal(&a, &b); break;
            case OP_LT: r = order(c, &a, &b, e->line) < 0; break;
            case OP_GT: r = order(c, &a, &b, e->line) > 0; break;
            case OP_LE: r = order(c, &a, &b, e->line) <= 0; break;
            case OP_GE: r = order(c, &a, &b, e->line) >= 0; break;
            case OP_IN: r = contains(c, &b, &a, e->line); break;
            default: r = !contains(c, &b, &a, e->line); break;
            }
            if (!r) return vbool(false);
            a = b;
        }
        return vbool(true);
    }
    case E_CONCAT: {
        buf_t b = {0};
        for (int i = 0; i < e->args.n; i++) {
            value_t v = eval(c, sc, e->args.v[i]);
            put_value(c->p, &b, &v, false);
        }
        value_t r = vstr(b.p ? pstrndup(c->p, b.p, b.n) : "", b.n);
        free(b.p);
        return r;
    }
    }
    FAIL(c->p, e->line, "internal error: unknown expression");
}

/* ------------------------------------------------------------------ statements */

static void assign(ctx_t *c, scope_t *sc, const char *const *names, int n, const value_t *v, int line)
{
    if (n == 1) {
        dict_setc(c->p, sc->vars, names[0], *v);
        return;
    }
    if (v->t != V_LIST || (int)v->l->n != n)
        FAIL(c->p, line, "cannot unpack %s into %d names", type_name(v), n);
    for (int i = 0; i < n; i++) dict_setc(c->p, sc->vars, names[i], v->l->v[i]);
}

static void exec_for(ctx_t *c, scope_t *sc, const stmt_t *s)
{
    value_t it = eval(c, sc, s->e);
    list_t *items = iter_items(c, &it, s->line);
    if (s->filter) {                        /* `for x in xs if cond`: the loop sees the kept items only */
        list_t *kept = list_new(c->p, items->n);
        for (size_t i = 0; i < items->n; i++) {
            scope_t *tmp = scope_new(c, sc);
            assign(c, tmp, s->names, s->nnames, &items->v[i], s->line);
            value_t ok = eval(c, tmp, s->filter);
            if (truthy(&ok)) list_push(c->p, kept, items->v[i]);
        }
        items = kept;
    }
    size_t n = items->n;
    for (size_t i = 0; i < n; i++) {
        scope_t *body = scope_new(c, sc);
        assign(c, body, s->names, s->nnames, &items->v[i], s->line);
        dict_t *loop = dict_new(c->p);
        dict_setc(c->p, loop, "index", vint((int64_t)i + 1));
        dict_setc(c->p, loop, "index0", vint((int64_t)i));
        dict_setc(c->p, loop, "revindex", vint((int64_t)(n - i)));
        dict_setc(c->p, loop, "revindex0", vint((int64_t)(n - i - 1)));
        dict_setc(c->p, loop, "first", vbool(i == 0));
        dict_setc(c->p, loop, "last", vbool(i == n - 1));
        dict_setc(c->p, loop, "length", vint((int64_t)n));
        dict_setc(c->p, loop, "depth", vint(1));
        dict_setc(c->p, loop, "depth0", vint(0));
        dict_setc(c->p, loop, "previtem", i ? items->v[i - 1] : vundef("loop.previtem"));
        dict_setc(c->p, loop, "nextitem", i + 1 < n ? items->v[i + 1] : vundef("loop.nextitem"));
        dict_setc(c->p, body->vars, "loop", vdict(loop));
        exec_body(c, body, s->body);
        if (c->flow == FLOW_BREAK) {
            c->flow = FLOW_NONE;
            break;
        }
        c->flow = FLOW_NONE;
    }
    if (!n && s->orelse) exec_body(c, sc, s->orelse);
}

static void exec_body(ctx_t *c, scope_t *sc, const stmt_t *s)
{
    for (; s && c->flow == FLOW_NONE; s = s->next) {
        switch (s->k) {
        case S_TEXT: buf_put(c->p, c->out, s->text, s->n); break;
        case S_PRINT: {
            value_t v = eval(c, sc, s->e);
            put_value(c->p, c->out, &v, false);
            break;
        }
        case S_IF: {
            value_t t = eval(c, sc, s->e);
            exec_body(c, sc, truthy(&t) ? s->body : s->orelse);
            break;
        }
        case S_FOR: exec_for(c, sc, s); break;
        case S_SET: {
            value_t v = eval(c, sc, s->e);
            if (s->attr) {
                value_t ns = lookup(c, sc, s->names[0]);
                if (ns.t != V_NS)
                    FAIL(c->p, s->line, "cannot set %s.%s: %s is %s, not a namespace", s->names[0], s->attr,
                         s->names[0], type_name(&ns));
                if (s->attr[0] == '_') FAIL(c->p, s->line, "namespace attributes cannot start with '_' (%s)", s->attr);
                dict_setc(c->p, ns.d, s->attr, v);
            } else assign(c, sc, s->names, s->nnames, &v, s->line);
            break;
        }
        case S_SETBLOCK: {
            buf_t *saved = c->out, b = {0};
            c->out = &b;
            exec_body(c, sc, s->body);
            c->out = saved;
            value_t v = vstr(b.p ? pstrndup(c->p, b.p, b.n) : "", b.n);
            free(b.p);
            dict_setc(c->p, sc->vars, s->names[0], v);
            break;
        }
        case S_MACRO: dict_setc(c->p, sc->vars, s->attr, s->e->c); break;
        case S_GENERATION: {
            size_t start = c->out->n;
            exec_body(c, sc, s->body);
            if (c->out == c->top) {         /* spans count in the render's output, as transformers' */
                if (c->nspans == c->cap_spans) {
                    int cap = c->cap_spans ? 2 * c->cap_spans : 8;
                    jinja_span_t *n = realloc(c->spans, (size_t)cap * sizeof *n);
                    if (!n) fail_status(c->p, ACCEL_ERR_NOMEM, 0, "out of memory");
                    c->spans = n;
                    c->cap_spans = cap;
                }
                c->spans[c->nspans++] = (jinja_span_t){start, c->out->n};
            }
            break;
        }
        case S_BREAK: c->flow = FLOW_BREAK; break;
        case S_CONTINUE: c->flow = FLOW_CONTINUE; break;
        }
    }
}

accel_status_t jinja_render(const jinja_template_t *t, const json_t *vars, jinja_output_t *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = 0;
    if (!json_is_object(vars)) {
        accel_errf(err, errlen, "the template's variables must be a JSON object");
        return ACCEL_ERR_INVALID;
    }
    jmp_buf jb;
    pool_t pool = {.jmp = &jb, .err = err, .errlen = errlen};
    buf_t text = {0};
    ctx_t c = {.p = &pool, .out = &text, .top = &text};
    /* volatile-free: everything the error path frees is reached through `c` and `text`, which
     * longjmp leaves as they were at the last store (they live in this frame, not in registers
     * after their address is taken). */
    if (setjmp(jb)) {
        free(text.p);
        free(c.spans);
        pool_free(&pool);
        return pool.st;
    }
    c.root = scope_new(&c, NULL);
    value_t v = from_json(&pool, vars);
    c.root->vars = v.d;
    buf_put(&pool, &text, "", 0);
    exec_body(&c, c.root, t->body);
    if (c.flow != FLOW_NONE) FAIL(&pool, 0, "break or continue outside a loop");
    pool_free(&pool);
    out->text = text.p;
    out->len = text.n;
    out->spans = c.spans;
    out->nspans = c.nspans;
    return ACCEL_OK;
}

void jinja_output_free(jinja_output_t *out)
{
    if (!out) return;
    free(out->text);
    free(out->spans);
    memset(out, 0, sizeof *out);
}
