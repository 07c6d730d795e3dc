/* JSON Lines documents: one JSON object per line, the document being one string field of it
 * (e.g. {"text": "...", "id": 7}). Parsed with jansson, which also checks UTF-8 (raw bytes and
 * \u escapes, surrogate pairs included). Blank lines are skipped; any other line that is not an
 * object with a string in that field is an error naming the file and the line. */
#include "build_config.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "import.h"
#include "json_type.h"

static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return false;
    return true;
}

/* The field of a line's object: a string, or a list (a conversation); else an error naming what the
 * line holds instead. */
static accel_status_t doc_field(json_t *obj, const char *field, const char *flag, const char *path,
                                long long line, json_t **out, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, field);
    if (!v) {
        char keys[256] = "";
        size_t k = 0;
        const char *key;
        json_t *val;
        json_object_foreach(obj, key, val) {
            (void)val;
            if (k < sizeof keys) k += (size_t)snprintf(keys + k, sizeof keys - k, "%s\"%s\"", k ? ", " : "", key);
        }
        snprintf(err, errlen, "%s:%lld: no field \"%s\" (the object has %s)\n--> hint: name the "
                 "field that holds the text with %s NAME", path, line, field, keys[0] ? keys : "no fields",
                 flag);
        return ACCEL_ERR_INVALID;
    }
    if (!json_is_string(v) && !json_is_array(v)) {
        snprintf(err, errlen, "%s:%lld: field \"%s\" is %s, not a string\n--> hint: the %s field "
                 "must hold the text as a JSON string (or a conversation as a list of messages)", path,
                 line, field, accel_json_type_name(v), strcmp(flag, "--prompt-field") ? "document" : "prompt");
        return ACCEL_ERR_INVALID;
    }
    *out = v;
    return ACCEL_OK;
}

accel_status_t accel_jsonl_each(const char *path, const char *buf, size_t len, const char *field,
                                const char *prompt_field, accel_jsonl_doc_fn fn, void *ctx,
                                long long *lines, long long *ndocs, char *err, size_t errlen)
{
    *ndocs = 0;
    long long line = *lines;
    size_t pos = 0;
    while (pos < len) {
        const char *s = buf + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl ? 1 : 0);
        *lines = ++line;
        if (blank(s, n)) continue;
        json_error_t je;
        /* JSON_ALLOW_NUL: "\u0000" is valid JSON; the document keeps it (its length is explicit). */
        json_t *obj = json_loadb(s, n, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &je);
        if (!obj && !strncmp(je.text, "unable to decode byte", 21)) {
            snprintf(err, errlen, "%s:%lld: invalid UTF-8 (%s, column %d)\n--> hint: JSON text is "
                     "UTF-8; convert the file (iconv -t UTF-8)", path, line, je.text, je.column);
            return ACCEL_ERR_INVALID;
        }
        if (!obj) {
            snprintf(err, errlen, "%s:%lld: not JSON: %s (column %d)\n--> hint: every line of a JSON "
                     "Lines file is one JSON object, e.g. {\"%s\": \"...\"}; text files go through "
                     "accel_data prepare without --jsonl", path, line, je.text, je.column, field);
            return ACCEL_ERR_INVALID;
        }
        accel_status_t st = ACCEL_OK;
        json_t *v = NULL, *p = NULL;
        if (!json_is_object(obj)) {
            snprintf(err, errlen, "%s:%lld: the line is %s, not a JSON object\n--> hint: every line "
                     "is one object holding the document in field \"%s\"", path, line,
                     accel_json_type_name(obj), field);
            st = ACCEL_ERR_INVALID;
        }
        if (st == ACCEL_OK && prompt_field)
            st = doc_field(obj, prompt_field, "--prompt-field", path, line, &p, err, errlen);
        if (st == ACCEL_OK) st = doc_field(obj, field, "--jsonl-field", path, line, &v, err, errlen);
        if (st == ACCEL_OK && p && json_typeof(p) != json_typeof(v)) {
            snprintf(err, errlen, "%s:%lld: the prompt (\"%s\") is %s but the completion (\"%s\") is %s"
                     "\n--> hint: both are strings (text), or both lists of messages (a conversation)", path,
                     line, prompt_field, accel_json_type_name(p), field, accel_json_type_name(v));
            st = ACCEL_ERR_INVALID;
        }
        if (st == ACCEL_OK) {
            accel_jsonl_doc_t doc = { 0 };
            if (json_is_string(v)) {
                doc.text = json_string_value(v);
                doc.len = json_string_length(v);
                doc.prompt = p ? json_string_value(p) : NULL;
                doc.prompt_len = p ? json_string_length(p) : 0;
            } else {
                doc.messages = p ? p : v;
                doc.completion = p ? v : NULL;
                doc.tools = json_object_get(obj, "tools");
                if (json_is_null(doc.tools)) doc.tools = NULL;
            }
            st = fn(ctx, &doc, line);
            if (st == ACCEL_OK) (*ndocs)++;
        }
        json_decref(obj);
        if (st != ACCEL_OK) return st;
    }
    return ACCEL_OK;
}

bool accel_jsonl_sniff(const char *buf, size_t len)
{
    int objects = 0;
    size_t pos = 0;
    while (pos < len && objects < 8) {
        const char *s = buf + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl ? 1 : 0);
        if (blank(s, n)) continue;
        json_t *obj = json_loadb(s, n, JSON_ALLOW_NUL, NULL);
        bool ok = obj && json_is_object(obj);
        json_decref(obj);
        if (!ok) return false;
        objects++;
    }
    return objects > 0;
}
