/* Chat templates as transformers applies them (include/accel/chat.h): where a tokenizer keeps its
 * template and special tokens, the variables a template sees, and which bytes of a rendered
 * conversation are trained. The Jinja interpreter is jinja.c. */
#define _GNU_SOURCE               /* memmem */
#include "build_config.h"

#include "accel/chat.h"
#include "accel/file.h"
#include "accel/tokenizer.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jinja.h"
#include "json_type.h"

struct accel_chat_template {
    jinja_template_t *jinja;
    char *source;
    size_t len;
    char origin[4096];
    json_t *vars;                           /* special tokens and options every render sees */
};

/* The special tokens transformers passes to every template (its special_tokens_map). */
static const char *const SPECIAL_TOKENS[] = {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                                             "cls_token", "mask_token", NULL};

accel_status_t accel_chat_template_parse(const char *source, size_t len, const char *origin,
                                         accel_chat_template_t **out, char *err, size_t errlen)
{
    *out = NULL;
    accel_chat_template_t *t = calloc(1, sizeof *t);
    if (!t || !(t->source = malloc(len + 1)) || !(t->vars = json_object())) {
        accel_chat_template_free(t);
        return ACCEL_ERR_NOMEM;
    }
    memcpy(t->source, source, len);
    t->source[len] = 0;
    t->len = len;
    snprintf(t->origin, sizeof t->origin, "%s", origin ? origin : "the chat template");
    char why[1024];
    accel_status_t st = jinja_parse(source, len, &t->jinja, why, sizeof why);
    if (st != ACCEL_OK) {
        accel_errf(err, errlen, "%s: %s\n--> hint: docs/chat.md lists the Jinja accel runs; write the "
                   "template without the construct named, and pass it with --chat-template FILE",
                   t->origin, why);
        accel_chat_template_free(t);
        return st;
    }
    *out = t;
    return ACCEL_OK;
}

void accel_chat_template_free(accel_chat_template_t *t)
{
    if (!t) return;
    jinja_free(t->jinja);
    free(t->source);
    json_decref(t->vars);
    free(t);
}

const char *accel_chat_template_origin(const accel_chat_template_t *t) { return t->origin; }

const char *accel_chat_template_source(const accel_chat_template_t *t, size_t *len)
{
    if (len) *len = t->len;
    return t->source;
}

bool accel_chat_template_has_generation(const accel_chat_template_t *t) { return jinja_has_generation(t->jinja); }

bool accel_chat_template_has_var(const accel_chat_template_t *t, const char *name)
{
    return json_object_get(t->vars, name) != NULL;
}

/* tokenizer_config.json's special tokens: "<s>" or {"content": "<s>", ...}. */
static void read_special_tokens(accel_chat_template_t *t, const json_t *config)
{
    for (int i = 0; SPECIAL_TOKENS[i]; i++) {
        const json_t *v = json_object_get(config, SPECIAL_TOKENS[i]);
        if (json_is_object(v)) v = json_object_get(v, "content");
        if (json_is_string(v)) json_object_set_new(t->vars, SPECIAL_TOKENS[i], json_string(json_string_value(v)));
    }
}

/* The "chat_template" of tokenizer_config.json: a string, or named templates of which "default". */
static accel_status_t config_template(const json_t *config, const char *path, const char **src, char *err,
                                      size_t errlen)
{
    const json_t *ct = json_object_get(config, "chat_template");
    *src = NULL;
    if (!ct || json_is_null(ct)) return ACCEL_ERR_NOT_FOUND;
    if (json_is_string(ct)) {
        *src = json_string_value(ct);
        return ACCEL_OK;
    }
    if (json_is_array(ct)) {
        size_t i;
        const json_t *e;
        json_array_foreach(ct, i, e) {
            const json_t *name = json_object_get(e, "name"), *tpl = json_object_get(e, "template");
            if (json_is_string(name) && !strcmp(json_string_value(name), "default") && json_is_string(tpl)) {
                *src = json_string_value(tpl);
                return ACCEL_OK;
            }
        }
        accel_errf(err, errlen, "%s: \"chat_template\" lists named templates but none called \"default\"\n"
                   "--> hint: save the one to use as a file and pass it with --chat-template FILE", path);
        return ACCEL_ERR_INVALID;
    }
    accel_errf(err, errlen, "%s: \"chat_template\" is %s, not a string\n--> hint: the template is Jinja "
               "text", path, accel_json_type_name(ct));
    return ACCEL_ERR_INVALID;
}

accel_status_t accel_chat_template_load(const char *path, accel_chat_template_t **out, char *err, size_t errlen)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        accel_errf(err, errlen, "cannot read the chat template '%s': %s", path, strerror(errno));
        return ACCEL_ERR_NOT_FOUND;
    }
    const bool is_dir = S_ISDIR(sb.st_mode);
    /* The directory the tokenizer files are in, and the file the template is in. */
    char dir[4096], file[4200], config_path[4200];
    if (is_dir) snprintf(dir, sizeof dir, "%s", path);
    else {
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
    }
    snprintf(config_path, sizeof config_path, "%s/tokenizer_config.json", dir);
    json_error_t je;
    json_t *config = NULL;
    if (stat(config_path, &sb) == 0 && !(config = json_load_file(config_path, 0, &je))) {
        accel_errf(err, errlen, "%s is not JSON: %s (line %d)", config_path, je.text, je.line);
        return ACCEL_ERR_CORRUPT;
    }
    if (config && !json_is_object(config)) {
        accel_errf(err, errlen, "%s is %s, not a JSON object", config_path, accel_json_type_name(config));
        json_decref(config);
        return ACCEL_ERR_CORRUPT;
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    bool path_is_config = !is_dir && !strcmp(base, "tokenizer_config.json");
    accel_status_t st;
    char *text = NULL;
    size_t len = 0;
    const char *src = NULL;
    if (!is_dir && !path_is_config) {
        snprintf(file, sizeof file, "%s", path);                  /* a template file */
        text = accel_file_read(file, &len);
    } else {
        snprintf(file, sizeof file, "%s/chat_template.jinja", dir);
        if (!path_is_config && stat(file, &sb) == 0) text = accel_file_read(file, &len);
        else if (config) {
            snprintf(file, sizeof file, "%s", config_path);
            st = config_template(config, config_path, &src, err, errlen);
            if (st == ACCEL_ERR_NOT_FOUND)
                accel_errf(err, errlen, "%s has no chat template (no chat_template.jinja, no \"chat_template\" "
                           "in tokenizer_config.json)\n--> hint: pass the template with --chat-template FILE",
                           dir);
            if (st != ACCEL_OK) {
                json_decref(config);
                return st;
            }
            len = strlen(src);
        } else {
            accel_errf(err, errlen, "%s has no chat template (no chat_template.jinja, no tokenizer_config.json)"
                       "\n--> hint: pass the template with --chat-template FILE", dir);
            return ACCEL_ERR_NOT_FOUND;
        }
    }
    if (!src && !text) {
        accel_errf(err, errlen, "cannot read the chat template '%s': %s", file, strerror(errno));
        json_decref(config);
        return ACCEL_ERR_IO;
    }
    st = accel_chat_template_parse(src ? src : text, len, file, out, err, errlen);
    if (st == ACCEL_OK && config) read_special_tokens(*out, config);
    free(text);
    json_decref(config);
    return st;
}

accel_status_t accel_chat_template_set(accel_chat_template_t *t, const char *assignment, char *err, size_t errlen)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment) {
        accel_errf(err, errlen, "'%s' is not NAME=VALUE\n--> hint: e.g. enable_thinking=false", assignment);
        return ACCEL_ERR_INVALID;
    }
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - assignment), assignment);
    json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
    if (!v) v = json_string(eq + 1);                /* not JSON: a plain string */
    if (!v || json_object_set_new(t->vars, name, v)) {
        accel_errf(err, errlen, "'%s': the value is not valid UTF-8", assignment);
        return ACCEL_ERR_INVALID;
    }
    return ACCEL_OK;
}

const char *accel_chat_template_var_string(const accel_chat_template_t *t, const char *name)
{
    return json_string_value(json_object_get(t->vars, name));
}

void accel_chat_template_use_tokenizer(accel_chat_template_t *t, const accel_tokenizer_t *tok)
{
    const struct { const char *name; int id; } special[] = {{"bos_token", accel_tokenizer_bos(tok)},
                                                            {"eos_token", accel_tokenizer_eos(tok)}};
    for (int i = 0; i < 2; i++) {
        size_t n = 0;
        const char *bytes = special[i].id >= 0 ? accel_tokenizer_token_bytes(tok, special[i].id, 0, &n) : NULL;
        if (bytes && !json_object_get(t->vars, special[i].name))
            accel_chat_template_set_string(t, special[i].name, bytes, n);
    }
}

accel_status_t accel_chat_template_set_string(accel_chat_template_t *t, const char *name, const char *value,
                                              size_t len)
{
    json_t *v = json_stringn(value, len);
    if (!v) return ACCEL_ERR_INVALID;           /* not UTF-8 */
    return json_object_set_new(t->vars, name, v) ? ACCEL_ERR_NOMEM : ACCEL_OK;
}

/* ------------------------------------------------------------------ rendering */

/* A conversation as transformers hands it to the template: each message an object with a string
 * role; keys holding null dropped; reasoning given under "thinking" or "reasoning" also under
 * "reasoning_content", and the other way round. */
static accel_status_t normalize(const json_t *messages, json_t **out, char *err, size_t errlen)
{
    if (!json_is_array(messages)) {
        accel_errf(err, errlen, "the conversation is %s, not a list of messages", accel_json_type_name(messages));
        return ACCEL_ERR_INVALID;
    }
    json_t *list = json_array();
    size_t i;
    const json_t *m;
    json_array_foreach(messages, i, m) {
        const json_t *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role)) {
            accel_errf(err, errlen, "message %zu %s\n--> hint: a message is {\"role\": \"user\", \"content\": "
                       "\"...\"}", i + 1, json_is_object(m) ? "has no string \"role\"" : "is not an object");
            json_decref(list);
            return ACCEL_ERR_INVALID;
        }
        static const char *const reasoning[] = {"reasoning_content", "thinking", "reasoning", NULL};
        const json_t *r = NULL;
        for (int k = 0; reasoning[k] && !r; k++) {
            r = json_object_get(m, reasoning[k]);
            if (json_is_null(r)) r = NULL;
        }
        json_t *copy = json_object();
        if (r) json_object_set(copy, "thinking", (json_t *)r);
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)m, key, v)
            if (!json_is_null(v)) json_object_set(copy, key, v);
        if (r) json_object_set(copy, "reasoning_content", (json_t *)r);
        json_array_append_new(list, copy);
    }
    *out = list;
    return ACCEL_OK;
}

/* Render the normalized messages[0..n). */
static accel_status_t render_n(const accel_chat_template_t *t, const json_t *messages, size_t n,
                               const json_t *tools, bool add_generation_prompt, jinja_output_t *out, char *err,
                               size_t errlen)
{
    json_t *vars = json_copy(t->vars), *part = json_array();
    for (size_t i = 0; i < n; i++) json_array_append(part, json_array_get(messages, i));
    json_object_set_new(vars, "messages", part);
    json_object_set(vars, "tools", tools ? (json_t *)tools : json_null());
    if (!json_object_get(vars, "documents")) json_object_set_new(vars, "documents", json_null());
    json_object_set_new(vars, "add_generation_prompt", json_boolean(add_generation_prompt));
    char why[1024];
    accel_status_t st = jinja_render(t->jinja, vars, out, why, sizeof why);
    json_decref(vars);
    if (st != ACCEL_OK) accel_errf(err, errlen, "%s: %s", t->origin, why);
    return st;
}

accel_status_t accel_chat_render(const accel_chat_template_t *t, const json_t *messages, const json_t *tools,
                                 bool add_generation_prompt, char **text, size_t *text_len, char *err,
                                 size_t errlen)
{
    *text = NULL;
    *text_len = 0;
    json_t *norm = NULL;
    accel_status_t st = normalize(messages, &norm, err, errlen);
    if (st != ACCEL_OK) return st;
    jinja_output_t o;
    st = render_n(t, norm, json_array_size(norm), tools, add_generation_prompt, &o, err, errlen);
    json_decref(norm);
    if (st != ACCEL_OK) return st;
    free(o.spans);
    *text = o.text;
    *text_len = o.len;
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ training text */

static accel_status_t add_span(accel_chat_text_t *ct, size_t start, size_t end)
{
    if (end <= start) return ACCEL_OK;
    accel_chat_span_t *s = realloc(ct->trained, (size_t)(ct->ntrained + 1) * sizeof *s);
    if (!s) return ACCEL_ERR_NOMEM;
    ct->trained = s;
    s[ct->ntrained++] = (accel_chat_span_t){start, end};
    return ACCEL_OK;
}

static bool is_prefix(const jinja_output_t *p, const jinja_output_t *of)
{
    return p->len <= of->len && !memcmp(p->text, of->text, p->len);
}

static const char END_OF_TURN_PROBE[] = "accel end-of-turn probe";

/* The text the template writes after an assistant message's content when it ends the
 * conversation ("<|im_end|>\n", "<|eot_id|>"): rendered around a probe message. Malloc'd, or NULL
 * when the template writes nothing there or the probe does not render. */
static char *end_of_turn_text(const accel_chat_template_t *t, size_t *len)
{
    json_t *conv = json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "user", "content", "Hello", "role", "assistant",
                             "content", END_OF_TURN_PROBE);
    jinja_output_t o = {0};
    char err[256], *eot = NULL;
    if (conv && render_n(t, conv, 2, NULL, false, &o, err, sizeof err) == ACCEL_OK) {
        const char *at = memmem(o.text, o.len, END_OF_TURN_PROBE, sizeof END_OF_TURN_PROBE - 1);
        size_t n = at ? o.len - (size_t)(at - o.text) - (sizeof END_OF_TURN_PROBE - 1) : 0;
        if (n && (eot = malloc(n + 1))) {
            memcpy(eot, at + sizeof END_OF_TURN_PROBE - 1, n);
            eot[n] = 0;
            *len = n;
        }
    }
    jinja_output_free(&o);
    json_decref(conv);
    return eot;
}

int accel_chat_template_end_of_turn(const accel_chat_template_t *t, accel_tokenizer_t *tok)
{
    size_t len = 0, n = 0, cap = 0;
    char *eot = end_of_turn_text(t, &len);
    int32_t *ids = NULL;
    int found = -1;
    if (eot && accel_tokenizer_encode(tok, eot, len, &ids, &n, &cap) == ACCEL_OK)
        for (size_t i = 0; i < n && found < 0; i++)
            if (accel_tokenizer_is_special(tok, ids[i])) found = ids[i];
    free(ids);
    free(eot);
    return found;
}

accel_status_t accel_chat_training_text(const accel_chat_template_t *t, const json_t *messages,
                                        const json_t *completion, const json_t *tools, accel_chat_train_t what,
                                        accel_chat_text_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_t *msgs = NULL, *comp = NULL;
    jinja_output_t full = {0}, p = {0}, q = {0};
    char *eot = NULL;                       /* the end-of-turn text, found when first needed */
    size_t eot_len = 0;
    bool eot_tried = false;
    accel_status_t st = normalize(messages, &msgs, err, errlen);
    if (st == ACCEL_OK && completion) {
        if ((st = normalize(completion, &comp, err, errlen)) == ACCEL_OK) {
            if (json_array_extend(msgs, comp)) st = ACCEL_ERR_NOMEM;
        }
    }
    if (st != ACCEL_OK) goto done;
    if (!json_array_size(msgs)) {
        accel_errf(err, errlen, "the conversation is empty");
        st = ACCEL_ERR_INVALID;
        goto done;
    }
    size_t n = json_array_size(msgs);
    if ((st = render_n(t, msgs, n, tools, false, &full, err, errlen)) != ACCEL_OK) goto done;
    if (what == ACCEL_CHAT_TRAIN_ALL) st = add_span(out, 0, full.len);
    else if (comp) {
        size_t np = n - json_array_size(comp);
        if (!json_array_size(comp)) {
            accel_errf(err, errlen, "the completion is empty");
            st = ACCEL_ERR_INVALID;
            goto done;
        }
        if ((st = render_n(t, msgs, np, tools, true, &p, err, errlen)) != ACCEL_OK) goto done;
        if (!is_prefix(&p, &full)) {
            accel_errf(err, errlen, "%s renders the prompt with its generation prompt differently from the "
                       "start of prompt + completion, so the completion cannot be told apart\n--> hint: "
                       "use a template that marks the assistant's text with {%% generation %%}, or "
                       "--train-on all", t->origin);
            st = ACCEL_ERR_INVALID;
            goto done;
        }
        st = add_span(out, p.len, full.len);
    } else if (jinja_has_generation(t->jinja)) {
        for (int i = 0; i < full.nspans && st == ACCEL_OK; i++) st = add_span(out, full.spans[i].start, full.spans[i].end);
    } else {
        for (size_t i = 0; i < n && st == ACCEL_OK; i++) {
            const char *role = json_string_value(json_object_get(json_array_get(msgs, i), "role"));
            if (strcmp(role, "assistant")) continue;
            jinja_output_free(&p);
            jinja_output_free(&q);
            if ((st = render_n(t, msgs, i, tools, true, &p, err, errlen)) != ACCEL_OK) break;
            if ((st = render_n(t, msgs, i + 1, tools, false, &q, err, errlen)) != ACCEL_OK) break;
            if (is_prefix(&p, &q) && is_prefix(&q, &full)) {
                st = add_span(out, p.len, q.len);
                continue;
            }
            /* Rendered differently once later messages follow: up to the end of its turn. */
            if (!eot_tried) {
                eot = end_of_turn_text(t, &eot_len);
                eot_tried = true;
            }
            const char *end = eot && is_prefix(&p, &full) ? memmem(full.text + p.len, full.len - p.len, eot, eot_len)
                                                         : NULL;
            if (end) {
                st = add_span(out, p.len, (size_t)(end - full.text) + eot_len);
                out->by_end_of_turn++;
                continue;
            }
            accel_errf(err, errlen, "%s renders the conversation before message %zu (assistant) differently %s, "
                       "and %s, so that message's text cannot be told apart\n--> hint: use a template that marks "
                       "the assistant's text with {%% generation %%}, or --train-on all", t->origin, i + 1,
                       !is_prefix(&p, &q) ? "with its generation prompt than with the message"
                                          : "once later messages follow",
                       eot ? "its end-of-turn text does not follow it" : "writes nothing after an assistant's turn");
            st = ACCEL_ERR_INVALID;
            break;
        }
    }
    if (st == ACCEL_OK) {
        out->text = full.text;
        out->len = full.len;
        full.text = NULL;
    }
done:
    if (st != ACCEL_OK) accel_chat_text_free(out);
    if (st == ACCEL_ERR_NOMEM && err && !err[0]) accel_errf(err, errlen, "out of memory");
    jinja_output_free(&full);
    jinja_output_free(&p);
    jinja_output_free(&q);
    free(eot);
    json_decref(msgs);
    json_decref(comp);
    return st;
}

void accel_chat_text_free(accel_chat_text_t *ct)
{
    if (!ct) return;
    free(ct->text);
    free(ct->trained);
    memset(ct, 0, sizeof *ct);
}
