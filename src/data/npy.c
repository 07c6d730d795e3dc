/* NumPy .npy token arrays (numpy.lib.format, versions 1.0, 2.0, 3.0): the magic "\x93NUMPY", a
 * version, a header length, and a header that is a Python dict literal such as
 *     {'descr': '<u2', 'fortran_order': False, 'shape': (1000,), }
 * padded with spaces to a newline, then the raw array. The header is parsed strictly: exactly the
 * three keys, each once; descr a quoted string; fortran_order True or False; shape a tuple of
 * non-negative integers ("(5)" is not a tuple). Token arrays must be 1-D, C order, and one of the
 * little-endian integer types below; anything else is refused with its dtype or shape named. */
#include "build_config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

static const char NPY_MAGIC[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

bool accel_npy_magic(const unsigned char *head, size_t n)
{
    return n >= sizeof NPY_MAGIC && !memcmp(head, NPY_MAGIC, sizeof NPY_MAGIC);
}

typedef struct {
    const char *p, *end;
} cursor_t;

static void skip_ws(cursor_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t')) c->p++;
}

static bool eat(cursor_t *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A Python string literal without escapes ('...' or "..."), as numpy writes keys and descr. */
static bool parse_str(cursor_t *c, char *out, size_t len)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    size_t k = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || *c->p == '\n' || k + 1 >= len) return false;
        out[k++] = *c->p++;
    }
    if (c->p >= c->end) return false;
    c->p++;
    out[k] = '\0';
    return true;
}

static bool parse_word(cursor_t *c, const char *w)
{
    skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n)) return false;
    if ((size_t)(c->end - c->p) > n && (isalnum((unsigned char)c->p[n]) || c->p[n] == '_')) return false;
    c->p += n;
    return true;
}

/* "(N,)", "()", "(A, B)": up to 8 non-negative integers; a single element needs its comma. */
static bool parse_shape(cursor_t *c, int64_t *dims, int *ndim)
{
    if (!eat(c, '(')) return false;
    int n = 0;
    bool comma = false;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ')') {
            c->p++;
            break;
        }
        if (n > 0 && !comma) return false;
        if (c->p >= c->end || !isdigit((unsigned char)*c->p) || n == 8) return false;
        int64_t v = 0;
        while (c->p < c->end && isdigit((unsigned char)*c->p)) {
            if (v > (INT64_MAX - 9) / 10) return false;
            v = v * 10 + (*c->p++ - '0');
        }
        dims[n++] = v;
        comma = eat(c, ',');
    }
    if (n == 1 && !comma) return false;
    *ndim = n;
    return true;
}

static void shape_str(const int64_t *dims, int ndim, char *out, size_t len)
{
    size_t k = (size_t)snprintf(out, len, "(");
    for (int i = 0; i < ndim && k < len; i++)
        k += (size_t)snprintf(out + k, len - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (k < len) snprintf(out + k, len - k, "%s)", ndim == 1 ? "," : "");
}

/* The token types: little-endian (or byte-order free) unsigned 8/16/32 and signed 32/64 bits. */
static bool token_dtype(const char *descr, int *itemsize, bool *is_signed)
{
    static const struct { const char *descr; int size; bool sgn; } ok[] = {
        { "|u1", 1, false }, { "<u1", 1, false }, { "<u2", 2, false }, { "<u4", 4, false },
        { "<i4", 4, true }, { "<i8", 8, true },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(descr, ok[i].descr)) {
            *itemsize = ok[i].size;
            *is_signed = ok[i].sgn;
            return true;
        }
    return false;
}

/* Words for a refused dtype: "float32", "big-endian uint16", ... */
static void dtype_words(const char *d, char *out, size_t len)
{
    const char *order = d[0] == '>' ? "big-endian " : "";
    const char *kind = d[1] == 'f' ? "float" : d[1] == 'i' ? "int" : d[1] == 'u' ? "uint"
                       : d[1] == 'b' ? "bool" : d[1] == 'c' ? "complex" : d[1] == 'U' ? "unicode string"
                       : d[1] == 'S' ? "byte string" : d[1] == 'O' ? "Python object" : NULL;
    int bytes = atoi(d + 2);
    if (!d[0] || !d[1] || !kind) snprintf(out, len, "an unknown type");
    else if (d[1] == 'b' || d[1] == 'U' || d[1] == 'S' || d[1] == 'O') snprintf(out, len, "%s%s", order, kind);
    else snprintf(out, len, "%s%s%d", order, kind, bytes * 8);
}

accel_status_t accel_npy_open(FILE *f, const char *path, int64_t size, accel_tokfile_t *out,
                              char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->document_start = -1;       /* an array of ids says nothing of documents */
    unsigned char pre[12];
    char *hdr = NULL;
    accel_status_t st = ACCEL_ERR_CORRUPT;
    size_t got = fseek(f, 0, SEEK_SET) == 0 ? fread(pre, 1, sizeof pre, f) : 0;
    if (got < 10 || !accel_npy_magic(pre, got)) {
        snprintf(err, errlen, "%s: not a .npy file (no \\x93NUMPY magic and version)", path);
        goto cleanup;
    }
    int major = pre[6], minor = pre[7];
    int64_t hlen, hstart;
    if (major == 1) {
        hlen = pre[8] | pre[9] << 8;
        hstart = 10;
    } else if ((major == 2 || major == 3) && got >= 12) {
        hlen = (int64_t)((uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
                         (uint32_t)pre[11] << 24);
        hstart = 12;
    } else {
        snprintf(err, errlen, "%s: .npy format version %d.%d is not one accel reads (1.0, 2.0, 3.0)\n"
                 "--> hint: write it with numpy.save", path, major, minor);
        goto cleanup;
    }
    if (hlen < 2 || hlen > (1 << 20) || hstart + hlen > size) {
        snprintf(err, errlen, "%s: malformed .npy header: length %lld does not fit the %lld-byte file\n"
                 "--> hint: the file is truncated or damaged; write it again with numpy.save", path,
                 (long long)hlen, (long long)size);
        goto cleanup;
    }
    hdr = malloc((size_t)hlen + 1);
    if (!hdr) {
        st = ACCEL_ERR_NOMEM;
        snprintf(err, errlen, "%s: out of memory", path);
        goto cleanup;
    }
    if (fseek(f, (long)hstart, SEEK_SET) != 0 || fread(hdr, 1, (size_t)hlen, f) != (size_t)hlen) {
        st = ACCEL_ERR_IO;
        snprintf(err, errlen, "%s: cannot read the .npy header", path);
        goto cleanup;
    }
    hdr[hlen] = '\0';
    /* Keep the header printable for the messages below. */
    char shown[160];
    snprintf(shown, sizeof shown, "%.*s", (int)(hlen < 150 ? hlen : 150), hdr);
    for (char *q = shown; *q; q++)
        if ((unsigned char)*q < 32 || (unsigned char)*q > 126) *q = '?';
    for (size_t k = strlen(shown); k > 0 && (shown[k - 1] == ' ' || shown[k - 1] == '?'); k--)
        shown[k - 1] = '\0';               /* numpy's padding and the final newline */
    if (hdr[hlen - 1] != '\n') {
        snprintf(err, errlen, "%s: malformed .npy header (it does not end with a newline): %s\n"
                 "--> hint: write the file with numpy.save", path, shown);
        goto cleanup;
    }
    cursor_t c = { hdr, hdr + hlen - 1 };
    char descr[32] = "", key[32];
    int64_t dims[8];
    int ndim = -1, fortran = -1;
    bool ok = eat(&c, '{');
    const char *why = "it is not a dict literal";
    while (ok) {
        if (eat(&c, '}')) break;
        if (!parse_str(&c, key, sizeof key) || !eat(&c, ':')) { ok = false; why = "a key is not a quoted string followed by ':'"; break; }
        if (!strcmp(key, "descr") && !descr[0]) {
            ok = parse_str(&c, descr, sizeof descr) && descr[0];
            why = "'descr' is not a quoted type string";
        } else if (!strcmp(key, "fortran_order") && fortran < 0) {
            fortran = parse_word(&c, "True") ? 1 : parse_word(&c, "False") ? 0 : -1;
            ok = fortran >= 0;
            why = "'fortran_order' is neither True nor False";
        } else if (!strcmp(key, "shape") && ndim < 0) {
            ok = parse_shape(&c, dims, &ndim);
            why = "'shape' is not a tuple of non-negative integers";
        } else {
            ok = false;
            why = !strcmp(key, "descr") || !strcmp(key, "fortran_order") || !strcmp(key, "shape")
                  ? "a key appears twice" : "it has a key other than 'descr', 'fortran_order', 'shape'";
        }
        if (ok && !eat(&c, ',')) {
            ok = eat(&c, '}');
            why = "entries are not separated by commas";
            break;
        }
    }
    if (ok) {
        skip_ws(&c);
        ok = c.p == c.end;
        why = "text follows the dict";
    }
    if (ok && (!descr[0] || fortran < 0 || ndim < 0)) {
        ok = false;
        why = "'descr', 'fortran_order' or 'shape' is missing";
    }
    if (!ok) {
        snprintf(err, errlen, "%s: malformed .npy header: %s: %s\n--> hint: write the file with "
                 "numpy.save", path, why, shown);
        goto cleanup;
    }
    char shape[128];
    shape_str(dims, ndim, shape, sizeof shape);
    st = ACCEL_ERR_INVALID;
    if (!token_dtype(descr, &out->itemsize, &out->is_signed)) {
        char words[64];
        dtype_words(descr, words, sizeof words);
        snprintf(err, errlen, "%s: dtype '%s' (%s) is not a token type; accel imports little-endian "
                 "uint8, uint16, uint32, int32 or int64 arrays\n--> hint: convert it in Python: "
                 "np.save(\"%s\", a.astype(\"<u4\"))  (little-endian uint32)", path, descr, words, path);
        goto cleanup;
    }
    if (fortran) {
        snprintf(err, errlen, "%s: fortran_order is True (a Fortran-order array of shape %s); accel reads "
                 "1-D C-order token arrays\n--> hint: np.save(\"%s\", np.ascontiguousarray(a).reshape(-1)) "
                 "if its rows follow each other", path, shape, path);
        goto cleanup;
    }
    if (ndim != 1) {
        snprintf(err, errlen, "%s: shape %s is %d-D; a token array is 1-D\n--> hint: a token stream "
                 "is one flat array: np.save(\"%s\", a.reshape(-1)) if its rows follow each other",
                 path, shape, ndim, path);
        goto cleanup;
    }
    out->count = dims[0];
    out->offset = hstart + hlen;
    int64_t want = out->offset + out->count * out->itemsize;
    if (out->count > (INT64_MAX - out->offset) / out->itemsize || size != want) {
        snprintf(err, errlen, "%s: shape %s of %s needs %lld bytes after the header but the file has "
                 "%lld\n--> hint: the file is %s; write it again with numpy.save", path, shape, descr,
                 (long long)(out->count * out->itemsize), (long long)(size - out->offset),
                 size < want ? "truncated" : "longer than its header says");
        st = ACCEL_ERR_CORRUPT;
        goto cleanup;
    }
    snprintf(out->format, sizeof out->format, "npy");
    snprintf(out->what, sizeof out->what, ".npy array %s, shape %s", descr, shape);
    st = ACCEL_OK;
cleanup:
    free(hdr);
    return st;
}
