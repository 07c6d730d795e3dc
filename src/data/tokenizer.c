/* Tokenizers (include/accel/tokenizer.h): the built-in byte tokenizer and Hugging Face
 * tokenizer.json files (byte-level BPE and byte-fallback BPE). */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/tokenizer.h"

struct accel_tokenizer {
    char name[ACCEL_TOKENIZER_NAME_MAX];
    char hash[ACCEL_TOKENIZER_HASH_LEN + 1];
    int vocab;
    int bos, eos;
    int is_bytes;
    char byte_piece[256];                /* "bytes": the one-byte piece of each token */
};

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

accel_status_t accel_tokenizer_load(const char *path, accel_tokenizer_t **out, char *err,
                                    size_t errlen)
{
    (void)out;
    snprintf(err, errlen, "%s: tokenizer.json files are not read yet", path);
    return ACCEL_ERR_UNSUPPORTED;
}

accel_status_t accel_tokenizer_from_json(const char *json, size_t len, const char *name,
                                         accel_tokenizer_t **out, char *err, size_t errlen)
{
    (void)json; (void)len; (void)out;
    snprintf(err, errlen, "tokenizer '%s': tokenizer.json files are not read yet", name);
    return ACCEL_ERR_UNSUPPORTED;
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
    free(t);
}

const char *accel_tokenizer_name(const accel_tokenizer_t *t) { return t->name; }
const char *accel_tokenizer_hash(const accel_tokenizer_t *t) { return t->hash; }
int accel_tokenizer_vocab(const accel_tokenizer_t *t) { return t->vocab; }
int accel_tokenizer_bos(const accel_tokenizer_t *t) { return t->bos; }
int accel_tokenizer_eos(const accel_tokenizer_t *t) { return t->eos; }

const char *accel_tokenizer_json(const accel_tokenizer_t *t, size_t *len)
{
    (void)t;
    *len = 0;
    return NULL;
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

accel_status_t accel_tokenizer_encode(accel_tokenizer_t *t, const char *text, size_t len,
                                      int32_t **ids, size_t *n, size_t *cap)
{
    if (!t->is_bytes) return ACCEL_ERR_UNSUPPORTED;
    if (ids_reserve(ids, cap, *n + len)) return ACCEL_ERR_NOMEM;
    for (size_t i = 0; i < len; i++) (*ids)[(*n)++] = (unsigned char)text[i];
    return ACCEL_OK;
}

accel_status_t accel_tokenizer_decode(const accel_tokenizer_t *t, const int32_t *ids, size_t n,
                                      char **text, size_t *len)
{
    if (!t->is_bytes) return ACCEL_ERR_UNSUPPORTED;
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

const char *accel_tokenizer_token_bytes(const accel_tokenizer_t *t, int32_t id, int first,
                                        size_t *len)
{
    (void)first;
    if (id < 0 || id >= t->vocab) return NULL;
    *len = 1;
    return &t->byte_piece[id];
}
