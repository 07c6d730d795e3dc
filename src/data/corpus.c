/* Text corpora: text files and JSON Lines documents tokenized into an accel token dataset (the
 * work of `accel_data prepare`, and of accel_train when its default corpus is missing), and the
 * input file lists that prepare and import share. Files are read one at a time, so memory holds
 * one file and the token stream at the dataset's width (one byte per token for "bytes"). */
#include "build_config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "accel/chat.h"
#include "accel/dataset.h"
#include "accel/log.h"
#include "accel/tokenizer.h"
#include "import.h"

/* The first error of a collect_* call, reported by accel_corpus_prepare. */
static char g_err[1024];

int accel_filelist_add(accel_filelist_t *l, const char *path, const struct stat *sb)
{
    for (int i = 0; i < l->n; i++)
        if (l->dev[i] == sb->st_dev && l->ino[i] == sb->st_ino) return 0;   /* a link to a file we have */
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        char **p = realloc(l->paths, sizeof *p * (size_t)cap);
        if (p) l->paths = p;
        long long *s = realloc(l->sizes, sizeof *s * (size_t)cap);
        if (s) l->sizes = s;
        dev_t *d = realloc(l->dev, sizeof *d * (size_t)cap);
        if (d) l->dev = d;
        ino_t *in = realloc(l->ino, sizeof *in * (size_t)cap);
        if (in) l->ino = in;
        if (!p || !s || !d || !in) return -1;
        l->cap = cap;
    }
    l->paths[l->n] = strdup(path);
    if (!l->paths[l->n]) return -1;
    l->sizes[l->n] = (long long)sb->st_size;
    l->dev[l->n] = sb->st_dev;
    l->ino[l->n] = sb->st_ino;
    l->n++;
    return 0;
}

void accel_filelist_free(accel_filelist_t *l)
{
    for (int i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    free(l->sizes);
    free(l->dev);
    free(l->ino);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Regular files under dir, in name order, recursively; hidden entries and empty files skipped. */
static int collect_dir(accel_filelist_t *l, const char *dir, int depth)
{
    if (depth > 16) return 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(g_err, sizeof g_err, "cannot read directory '%s': %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **p = realloc(names, sizeof *p * (size_t)cap);
            if (!p) { rc = -1; break; }
            names = p;
        }
        if (!(names[n] = strdup(e->d_name))) { rc = -1; break; }
        n++;
    }
    closedir(d);
    if (rc == 0) qsort(names, (size_t)n, sizeof *names, cmp_name);
    /* Entries themselves first, then symbolic links: a link to a file read already (GFDL ->
     * GFDL-1.3 in the default corpus) is skipped, so its text is read once, under its own name. */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n && rc == 0; i++) {
            char path[PATH_MAX];
            struct stat sb, lsb;
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path) continue;
            if (lstat(path, &lsb) != 0 || S_ISLNK(lsb.st_mode) != (pass == 1)) continue;
            if (stat(path, &sb) != 0) continue;               /* dangling link */
            if (S_ISDIR(sb.st_mode)) rc = collect_dir(l, path, depth + 1);
            else if (S_ISREG(sb.st_mode) && sb.st_size > 0) rc = accel_filelist_add(l, path, &sb);
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

static int collect_input(accel_filelist_t *l, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(g_err, sizeof g_err, "cannot read input '%s': %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(sb.st_mode)) {
        int before = l->n;
        if (collect_dir(l, path, 0) != 0) return -1;
        if (l->n == before) {
            snprintf(g_err, sizeof g_err, "directory '%s' holds no non-empty files", path);
            return -1;
        }
        return 0;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(g_err, sizeof g_err, "input '%s' is not a regular file or directory", path);
        return -1;
    }
    if (sb.st_size == 0) {
        snprintf(g_err, sizeof g_err, "input '%s' is empty\n--> hint: give files with text in them", path);
        return -1;
    }
    return accel_filelist_add(l, path, &sb);
}

accel_status_t accel_filelist_collect(const char *const *inputs, int ninputs, accel_filelist_t *l,
                                      char *err, size_t errlen)
{
    g_err[0] = '\0';
    for (int i = 0; i < ninputs; i++)
        if (collect_input(l, inputs[i])) {
            snprintf(err, errlen, "%s", g_err[0] ? g_err : "out of memory listing the inputs");
            return g_err[0] ? ACCEL_ERR_NOT_FOUND : ACCEL_ERR_NOMEM;
        }
    return ACCEL_OK;
}

accel_status_t accel_data_tokenizer_open(const char *path, accel_tokenizer_t **out, char *err,
                                         size_t errlen)
{
    if (!path || !strcmp(path, ACCEL_TOKENIZER_BYTES)) return accel_tokenizer_bytes(out);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, errlen, "cannot read tokenizer '%s': %s\n--> hint: --tokenizer takes a Hugging "
                 "Face tokenizer.json file or a model directory holding one (or 'bytes')", path,
                 strerror(errno));
        return ACCEL_ERR_NOT_FOUND;
    }
    char terr[512] = "";
    accel_status_t st = accel_tokenizer_load(path, out, terr, sizeof terr);
    if (st != ACCEL_OK)
        snprintf(err, errlen, "cannot use tokenizer '%s': %s", path, terr[0] ? terr : accel_status_str(st));
    return st;
}

/* The first byte of buf[0..len) where UTF-8 is invalid (overlong forms, surrogates and code points
 * above U+10FFFF included), or len when it is all valid. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned min;
        if (c < 0x80) { i++; continue; }
        else if ((c & 0xe0) == 0xc0) { n = 1; min = 0x80; c &= 0x1f; }
        else if ((c & 0xf0) == 0xe0) { n = 2; min = 0x800; c &= 0x0f; }
        else if ((c & 0xf8) == 0xf0) { n = 3; min = 0x10000; c &= 0x07; }
        else return i;
        for (size_t k = 1; k <= n; k++) {
            if (i + k >= len || (s[i + k] & 0xc0) != 0x80) return i;
            c = c << 6 | (s[i + k] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return i;
        i += n + 1;
    }
    return len;
}

/* Tokenizing one document into the stream, with the separator rule. */
typedef struct {
    accel_tokenizer_t *tok;
    accel_tokstream_t *s;
    accel_tokstream_t *mask;        /* with a prompt field: 1 per trained token, 0 per context one */
    long long trained;              /* tokens the mask trains */
    int bos, eos;                   /* what is added around each document; -1: nothing */
    bool is_bytes;                  /* token = byte: copied straight in, no id array */
    int32_t *ids;
    size_t cap;
    const char *path;
    long long docs;
    long long doc_bytes, next_report;   /* JSON Lines progress, every 64 MiB of documents */
    FILE *progress;
    char *err;
    size_t errlen;
    /* conversations: the template, read at the first one; the mask is made then if there is none */
    const accel_prepare_options_t *opt;
    accel_chat_template_t *chat;
    accel_tokstream_t *mask_store;
    const char *output;
    long long conversations;
    long long by_end_of_turn;       /* assistant messages spanned by the end-of-turn rule */
    accel_docstarts_t starts;       /* where each document begins in the stream */
} encoder_t;

/* One token and, with a mask, whether it is trained. */
static accel_status_t put_token(encoder_t *e, uint32_t tok, bool trained)
{
    accel_status_t st = accel_tokstream_put(e->s, tok);
    if (st == ACCEL_OK && e->mask) st = accel_tokstream_put(e->mask, trained);
    e->trained += trained;
    if (st != ACCEL_OK) snprintf(e->err, e->errlen, "%s", e->mask && e->mask->error[0] ? e->mask->error
                                                                                     : e->s->error);
    return st;
}

/* The tokens of text[0..len) (a document, or the prompt before it) into the stream. */
static accel_status_t encode_text(encoder_t *e, const char *text, size_t len, bool trained, long long line)
{
    if (e->is_bytes) {              /* a file's bytes are its tokens; no 4-byte id per byte */
        accel_status_t st = accel_tokstream_put_bytes(e->s, (const unsigned char *)text, len);
        for (size_t i = 0; i < len && st == ACCEL_OK && e->mask; i++) st = accel_tokstream_put(e->mask, trained);
        e->trained += trained ? (long long)len : 0;
        if (st != ACCEL_OK)
            snprintf(e->err, e->errlen, "%s", e->mask && e->mask->error[0] ? e->mask->error : e->s->error);
        return st;
    }
    size_t n = 0;
    accel_status_t st = accel_tokenizer_encode(e->tok, text, len, &e->ids, &n, &e->cap);
    if (st != ACCEL_OK) {
        if (line > 0)
            snprintf(e->err, e->errlen, "%s:%lld: the tokenizer refused the %s: %s", e->path, line,
                     trained ? "document" : "prompt", accel_status_str(st));
        else
            snprintf(e->err, e->errlen, "%s: the tokenizer refused the text: %s", e->path,
                     accel_status_str(st));
        return st;
    }
    for (size_t i = 0; i < n && st == ACCEL_OK; i++) {
        if (e->ids[i] < 0 || e->ids[i] >= e->s->vocab) {
            snprintf(e->err, e->errlen, "%s: the tokenizer produced id %d outside its vocabulary [0, %d)",
                     e->path, (int)e->ids[i], e->s->vocab);
            return ACCEL_ERR_CORRUPT;
        }
        st = put_token(e, (uint32_t)e->ids[i], trained);
    }
    return st;
}

/* The chat template for the first conversation: --chat-template, else the tokenizer's; its special
 * tokens from the tokenizer when tokenizer_config.json gave none. A mask stream starts here if
 * there was none, every token before trained. */
static accel_status_t chat_open(encoder_t *e, long long line)
{
    const accel_prepare_options_t *opt = e->opt;
    const char *path = opt->chat_template ? opt->chat_template : opt->tokenizer;
    char why[2048];
    if (!path || !strcmp(path, ACCEL_TOKENIZER_BYTES)) {
        snprintf(e->err, e->errlen, "%s:%lld: the line holds a conversation (a list of messages) but there is no "
                 "chat template to render it\n--> hint: --tokenizer HF_DIR (the model's tokenizer directory, "
                 "with its tokenizer_config.json or chat_template.jinja), or --chat-template FILE", e->path, line);
        return ACCEL_ERR_INVALID;
    }
    accel_status_t st = accel_chat_template_load(path, &e->chat, why, sizeof why);
    for (int i = 0; st == ACCEL_OK && i < opt->nchat_vars; i++)
        st = accel_chat_template_set(e->chat, opt->chat_vars[i], why, sizeof why);
    if (st != ACCEL_OK) {
        snprintf(e->err, e->errlen, "%s:%lld: a conversation needs the chat template: %s", e->path, line, why);
        return st;
    }
    accel_chat_template_use_tokenizer(e->chat, e->tok);
    if (!e->mask) {
        st = accel_tokstream_init(e->mask_store, 2, e->output, (size_t)e->s->cap);
        for (int64_t i = 0; st == ACCEL_OK && i < e->s->n; i++) st = accel_tokstream_put(e->mask_store, 1);
        if (st != ACCEL_OK) {
            snprintf(e->err, e->errlen, "%s", e->mask_store->error);
            return st;
        }
        e->mask = e->mask_store;
    }
    if (e->progress) {
        fprintf(e->progress, "conversations: rendered with %s; trained: %s; nothing is added around a "
                "conversation (the rule above is for text)\n", accel_chat_template_origin(e->chat),
                opt->chat_train_all ? "every token (--train-on all)"
                : opt->prompt_field ? "the completion (after the prompt's generation prompt)"
                : accel_chat_template_has_generation(e->chat) ? "the assistant messages (the template's "
                                                                "{% generation %} blocks)"
                : "the assistant messages (what each adds to the conversation before it)");
        fflush(e->progress);
    }
    return ACCEL_OK;
}

/* The tokens of ids[0..n) with a mask: a token is trained when its bytes [start, end) overlap a
 * trained span (transformers' rule for assistant masks). */
static accel_status_t put_masked(encoder_t *e, const int32_t *ids, size_t n, const accel_chat_span_t *spans,
                                 int nspans)
{
    accel_status_t st = ACCEL_OK;
    size_t start = 0;
    int span = 0;
    for (size_t i = 0; i < n && st == ACCEL_OK; i++) {
        size_t k = 0;
        accel_tokenizer_token_bytes(e->tok, ids[i], i == 0, &k);
        size_t end = start + k;
        while (span < nspans && start >= spans[span].end) span++;
        if (ids[i] < 0 || ids[i] >= e->s->vocab) {
            snprintf(e->err, e->errlen, "%s: the tokenizer produced id %d outside its vocabulary [0, %d)",
                     e->path, (int)ids[i], e->s->vocab);
            return ACCEL_ERR_CORRUPT;
        }
        st = put_token(e, (uint32_t)ids[i], span < nspans && end > spans[span].start);
        start = end;
    }
    return st;
}

/* The spans carried into the normalized text (a normalizer such as NFC rewrote it): each boundary
 * moves to the normalized length of the text before it, stretch by stretch. 0 when the stretches
 * do not add up to the whole text's normalized length `total` (a character composed across a
 * boundary). */
static int normalized_spans(encoder_t *e, const char *text, size_t len, const accel_chat_span_t *spans,
                            int nspans, size_t total, accel_chat_span_t *out)
{
    size_t at = 0, nat = 0;
    for (int i = 0; i <= 2 * nspans; i++) {
        size_t b = i == 2 * nspans ? len : i % 2 == 0 ? spans[i / 2].start : spans[i / 2].end;
        char *norm = NULL;
        size_t nn = 0;
        if (b > at && accel_tokenizer_normalize(e->tok, text + at, b - at, &norm, &nn) != ACCEL_OK) return 0;
        free(norm);
        nat += nn;
        at = b > at ? b : at;
        if (i < 2 * nspans) {
            if (i % 2 == 0) out[i / 2].start = nat;
            else out[i / 2].end = nat;
        }
    }
    return nat == total;
}

/* The trained bytes' tokens: the text is tokenized whole, as transformers does, and a token is
 * trained when its bytes overlap a trained span. A token's bytes are known by decoding it; when a
 * normalizer rewrote the text (NFC), they add up to the normalized text and the spans are carried
 * there; failing both, each stretch is tokenized on its own. */
static accel_status_t encode_spans(encoder_t *e, const char *text, size_t len, const accel_chat_span_t *spans,
                                   int nspans, long long line)
{
    size_t n = 0;
    accel_status_t st = accel_tokenizer_encode(e->tok, text, len, &e->ids, &n, &e->cap);
    if (st != ACCEL_OK) {
        snprintf(e->err, e->errlen, "%s:%lld: the tokenizer refused the conversation: %s", e->path, line,
                 accel_tokenizer_last_error(e->tok)[0] ? accel_tokenizer_last_error(e->tok) : accel_status_str(st));
        return st;
    }
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        if (!accel_tokenizer_token_bytes(e->tok, e->ids[i], i == 0, &k)) break;
        total += k;
    }
    if (total == len) return put_masked(e, e->ids, n, spans, nspans);
    accel_chat_span_t *moved = malloc((size_t)(nspans ? nspans : 1) * sizeof *moved);
    if (!moved) return ACCEL_ERR_NOMEM;
    if (normalized_spans(e, text, len, spans, nspans, total, moved)) {
        st = put_masked(e, e->ids, n, moved, nspans);
        free(moved);
        return st;
    }
    free(moved);
    size_t at = 0;                          /* stretch by stretch */
    for (int i = 0; i <= nspans && st == ACCEL_OK; i++) {
        size_t end = i < nspans ? spans[i].start : len;
        if (end > at) st = encode_text(e, text + at, end - at, false, line);
        if (st == ACCEL_OK && i < nspans) st = encode_text(e, text + spans[i].start, spans[i].end - spans[i].start,
                                                           true, line);
        if (i < nspans) at = spans[i].end;
    }
    return st;
}

/* A conversation: its rendering, nothing added around it (the template writes the special tokens). */
static accel_status_t encode_chat(encoder_t *e, const accel_jsonl_doc_t *doc, long long line)
{
    accel_status_t st = e->chat ? ACCEL_OK : chat_open(e, line);
    if (st != ACCEL_OK) return st;
    accel_chat_text_t ct;
    char why[2048];
    st = accel_chat_training_text(e->chat, doc->messages, doc->completion, doc->tools,
                                  e->opt->chat_train_all ? ACCEL_CHAT_TRAIN_ALL : ACCEL_CHAT_TRAIN_ASSISTANT, &ct,
                                  why, sizeof why);
    if (st != ACCEL_OK) {
        snprintf(e->err, e->errlen, "%s:%lld: %s", e->path, line, why);
        return st;
    }
    e->doc_bytes += (long long)ct.len;
    e->by_end_of_turn += ct.by_end_of_turn;
    st = encode_spans(e, ct.text, ct.len, ct.trained, ct.ntrained, line);
    accel_chat_text_free(&ct);
    if (st == ACCEL_OK) {
        e->docs++;
        e->conversations++;
    }
    return st;
}

/* A document: [BOS] [prompt] text [EOS]. With a prompt field only the text and the EOS after it
 * are trained: the prompt is tokenized on its own, so its tokens are the same whatever follows. */
static accel_status_t encode_doc(void *ctx, const accel_jsonl_doc_t *doc, long long line)
{
    encoder_t *e = ctx;
    e->doc_bytes += (long long)(doc->len + doc->prompt_len);
    if (e->progress && line > 0 && e->doc_bytes >= e->next_report) {
        fprintf(e->progress, "    line %lld: %lld documents, %lld tokens so far\n", line, e->docs,
                (long long)e->s->n);
        fflush(e->progress);
        e->next_report += 64LL << 20;
    }
    accel_status_t st = accel_docstarts_add(&e->starts, e->s->n);
    if (st != ACCEL_OK) {
        snprintf(e->err, e->errlen, "out of memory recording where %lld documents begin",
                 (long long)e->starts.n + 1);
        return st;
    }
    if (doc->messages) return encode_chat(e, doc, line);
    if (e->bos >= 0) st = put_token(e, (uint32_t)e->bos, !doc->prompt);
    if (st == ACCEL_OK && doc->prompt) st = encode_text(e, doc->prompt, doc->prompt_len, false, line);
    if (st == ACCEL_OK) st = encode_text(e, doc->text, doc->len, true, line);
    if (st == ACCEL_OK && e->eos >= 0) st = put_token(e, (uint32_t)e->eos, true);
    if (st == ACCEL_OK) e->docs++;
    return st;
}

/* Refuse an input prepare should not tokenize as text; the hint names the command that reads it. */
static accel_status_t check_kind(const char *path, const unsigned char *buf, size_t len, bool jsonl,
                                 char *err, size_t errlen)
{
    size_t nul = 0;
    accel_input_kind_t k = accel_input_sniff(buf, len, !jsonl, &nul);
    const char *hint = NULL;
    switch (k) {
    case ACCEL_INPUT_TEXT: return ACCEL_OK;
    case ACCEL_INPUT_JSONL:
        hint = "tokenize the documents of its \"text\" field with: accel_data prepare --jsonl "
               "[--jsonl-field NAME]";
        break;
    case ACCEL_INPUT_NPY:
    case ACCEL_INPUT_LLMC:
        hint = "import pre-tokenized files with: accel_data import";
        break;
    case ACCEL_INPUT_LLMC_EVAL:
        snprintf(err, errlen, "%s is an llm.c evaluation file (HellaSwag/MMLU examples), not text\n"
                 "--> hint: evaluation files hold examples, not a token stream: neither prepare nor "
                 "import reads them (--force tokenizes its bytes anyway)", path);
        return ACCEL_ERR_INVALID;
    case ACCEL_INPUT_HDF5: hint = "an HDF5 file (an accel dataset?) is not text: inspect it with accel_data info"; break;
    case ACCEL_INPUT_BINARY:
        if (jsonl) return ACCEL_OK;          /* the JSON parser names the line */
        hint = "give text files, or import pre-tokenized files with accel_data import";
        break;
    }
    if (k == ACCEL_INPUT_BINARY)
        snprintf(err, errlen, "%s is not text: it holds a NUL byte at offset %zu\n--> hint: %s, or pass "
                 "--force to tokenize its bytes anyway", path, nul, hint);
    else if (k == ACCEL_INPUT_JSONL && jsonl)
        return ACCEL_OK;
    else
        snprintf(err, errlen, "%s looks like %s, not %s\n--> hint: %s %s, or pass --force to %s "
                 "anyway", path, accel_input_kind_name(k), jsonl ? "JSON Lines" : "text", hint, path,
                 jsonl ? "read it as JSON Lines" : "tokenize its bytes as text");
    return ACCEL_ERR_INVALID;
}

/* A text file is one document: read whole (its tokens go to the stream, which spills). */
static accel_status_t prepare_text(const char *path, size_t size, const accel_prepare_options_t *opt,
                                   bool is_bytes, encoder_t *enc, char *err, size_t errlen)
{
    unsigned char *text = malloc(size + 1);
    FILE *f = text ? fopen(path, "rb") : NULL;
    size_t n = f ? fread(text, 1, size, f) : 0;
    accel_status_t st = ACCEL_OK;
    if (!text || !f || n != size || fgetc(f) != EOF) {
        snprintf(err, errlen, "cannot read '%s': %s", path, !text ? "out of memory"
                 : f ? "it changed size while being read" : strerror(errno));
        st = text ? ACCEL_ERR_IO : ACCEL_ERR_NOMEM;
    }
    if (f) fclose(f);
    if (st == ACCEL_OK) {
        text[size] = '\0';
        if (!opt->force) st = check_kind(path, text, size, false, err, errlen);
    }
    if (st == ACCEL_OK) {
        /* File tokenizers take UTF-8 only; say where it breaks rather than just refusing. */
        size_t bad = is_bytes ? size : utf8_invalid_at(text, size);
        if (bad < size) {
            snprintf(err, errlen, "%s: invalid UTF-8 at byte offset %zu (byte 0x%02x)\n--> hint: "
                     "tokenizer %s reads UTF-8 text; convert the file (iconv -t UTF-8)", path, bad,
                     text[bad], accel_tokenizer_name(enc->tok));
            st = ACCEL_ERR_INVALID;
        } else {
            accel_jsonl_doc_t doc = { .text = (const char *)text, .len = size };
            st = encode_doc(enc, &doc, 0);
        }
    }
    free(text);
    return st;
}

/* A JSON Lines file, read in blocks that end at a line break (a line longer than a block grows
 * it): a file of any size takes about a block of memory. */
static accel_status_t prepare_jsonl(const char *path, size_t size, const accel_prepare_options_t *opt,
                                    encoder_t *enc, char *err, size_t errlen)
{
    size_t cap = opt->block_bytes ? opt->block_bytes : ACCEL_TOKSTREAM_DEFAULT_BLOCK, have = 0, seen = 0;
    char *buf = malloc(cap);
    FILE *f = buf ? fopen(path, "rb") : NULL;
    if (!buf || !f) {
        snprintf(err, errlen, "cannot read '%s': %s", path, buf ? strerror(errno) : "out of memory");
        free(buf);
        return buf ? ACCEL_ERR_IO : ACCEL_ERR_NOMEM;
    }
    accel_status_t st = ACCEL_OK;
    long long lines = 0;
    for (bool first = true;; first = false) {
        if (have == cap) {          /* one line fills the block: make room for the rest of it */
            char *p = realloc(buf, cap * 2);
            if (!p) {
                snprintf(err, errlen, "%s:%lld: out of memory for a line over %zu bytes", path, lines + 1, cap);
                st = ACCEL_ERR_NOMEM;
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + have, 1, cap - have, f);
        if (got == 0 && ferror(f)) {
            snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
            st = ACCEL_ERR_IO;
            break;
        }
        have += got;
        seen += got;
        const bool eof = got < cap - (have - got);
        if (first && !opt->force &&
            (st = check_kind(path, (const unsigned char *)buf, have, true, err, errlen)) != ACCEL_OK)
            break;
        size_t end = have;
        if (!eof) {
            while (end > 0 && buf[end - 1] != '\n') end--;
            if (end == 0) continue; /* no whole line yet */
        }
        long long nd;
        st = accel_jsonl_each(path, buf, end, opt->jsonl_field, opt->prompt_field, encode_doc, enc, &lines,
                              &nd, err, errlen);
        if (st != ACCEL_OK || eof) break;
        memmove(buf, buf + end, have - end);
        have -= end;
    }
    if (st == ACCEL_OK && seen != size) {
        snprintf(err, errlen, "cannot read '%s': it changed size while being read", path);
        st = ACCEL_ERR_IO;
    }
    fclose(f);
    free(buf);
    return st;
}

accel_status_t accel_data_prepare(const char *const *inputs, int ninputs, const char *output,
                                  const accel_prepare_options_t *opt, char *err, size_t errlen)
{
    static const char *const default_inputs[] = { ACCEL_CORPUS_DEFAULT_INPUT };
    if (ninputs == 0) {
        inputs = default_inputs;
        ninputs = 1;
    }
    FILE *progress = opt->progress;
    const bool jsonl = opt->jsonl_field != NULL;
    accel_filelist_t files = { 0 };
    accel_tokenizer_t *tok = NULL;
    accel_tokstream_t s = { 0 }, mask = { 0 };
    encoder_t enc = { .err = err, .errlen = errlen, .bos = -1, .eos = -1, .opt = opt, .mask_store = &mask,
                      .output = output };
    err[0] = '\0';
    accel_status_t st = accel_data_tokenizer_open(opt->tokenizer, &tok, err, errlen);
    if (st != ACCEL_OK) goto cleanup;
    const bool is_bytes = !strcmp(accel_tokenizer_name(tok), ACCEL_TOKENIZER_BYTES) &&
                          !accel_tokenizer_hash(tok)[0];
    if ((st = accel_filelist_collect(inputs, ninputs, &files, err, errlen)) != ACCEL_OK) goto cleanup;
    const int vocab = accel_tokenizer_vocab(tok);
    if ((st = accel_tokstream_init(&s, vocab, output, opt->block_bytes)) != ACCEL_OK) {
        snprintf(err, errlen, "%s", s.error);
        goto cleanup;
    }
    if (opt->prompt_field) {        /* a mask byte per token, spilled when the tokens are */
        if (!jsonl) {
            snprintf(err, errlen, "a prompt field needs JSON Lines input\n--> hint: add --jsonl");
            st = ACCEL_ERR_INVALID;
            goto cleanup;
        }
        if ((st = accel_tokstream_init(&mask, 2, output, (size_t)s.cap)) != ACCEL_OK) {
            snprintf(err, errlen, "%s", mask.error);
            goto cleanup;
        }
        enc.mask = &mask;
    }
    enc.tok = tok;
    enc.s = &s;
    enc.is_bytes = is_bytes && s.width == 1 && accel_tokenizer_bos(tok) < 0 && accel_tokenizer_eos(tok) < 0;
    enc.progress = progress;
    enc.next_report = 64LL << 20;
    enc.bos = accel_tokenizer_bos(tok);
    /* Prompt and answer: the model must learn where an answer ends, so EOS follows even with BOS. */
    enc.eos = enc.bos >= 0 && !enc.mask ? -1 : accel_tokenizer_eos(tok);
    char rule[200];
    char bos[32] = "", eos[32] = "";
    if (enc.bos >= 0) snprintf(bos, sizeof bos, "BOS (id %d), ", enc.bos);
    if (enc.eos >= 0) snprintf(eos, sizeof eos, ", EOS (id %d)", enc.eos);
    if (enc.mask)
        snprintf(rule, sizeof rule, "each line is %sprompt, document%s; only the document%s trained",
                 bos, eos, enc.eos >= 0 ? " and EOS are" : " is");
    else if (enc.bos >= 0) snprintf(rule, sizeof rule, "each document is preceded by BOS (id %d)", enc.bos);
    else if (enc.eos >= 0) snprintf(rule, sizeof rule, "each document is followed by EOS (id %d)", enc.eos);
    else snprintf(rule, sizeof rule, "documents are concatenated as they are (the tokenizer has no BOS or EOS)");
    if (progress)
        fprintf(progress, "tokenizer %s%s%s, vocab %d, stored as uint%d; %s; documents: %s\n",
                accel_tokenizer_name(tok), is_bytes ? "" : " hash ", accel_tokenizer_hash(tok), vocab,
                8 * s.width, rule, jsonl ? "the string field of each JSON line" : "one per file");
    long long total = 0, ndocs = 0;
    for (int i = 0; i < files.n; i++) {
        const char *path = files.paths[i];
        size_t size = (size_t)files.sizes[i];
        enc.path = path;
        long long before = enc.s->n, docs_before = enc.docs;
        st = jsonl ? prepare_jsonl(path, size, opt, &enc, err, errlen)
                   : prepare_text(path, size, opt, is_bytes, &enc, err, errlen);
        if (st != ACCEL_OK) goto cleanup;
        if (jsonl && enc.docs == docs_before) {
            snprintf(err, errlen, "%s holds no JSON lines\n--> hint: one JSON object per line, the "
                     "document in field \"%s\"", path, opt->jsonl_field);
            st = ACCEL_ERR_INVALID;
            goto cleanup;
        }
        total += (long long)size;
        ndocs += enc.docs - docs_before;
        if (progress) {
            if (jsonl)
                fprintf(progress, "  read %-50s %10lld bytes, %lld documents -> %lld tokens\n", path,
                        (long long)size, enc.docs - docs_before, (long long)(s.n - before));
            else if (is_bytes)          /* one token per byte: the line scripts already parse */
                fprintf(progress, "  read %-50s %10lld bytes\n", path, (long long)size);
            else
                fprintf(progress, "  read %-50s %10lld bytes -> %lld tokens\n", path, (long long)size,
                        (long long)(s.n - before));
            fflush(progress);
        }
    }
    if (enc.mask && enc.trained == 0) {
        if (enc.conversations)
            snprintf(err, errlen, "no conversation has a token to train (field \"%s\"): no assistant message, "
                     "or only empty ones\n--> hint: the assistant's messages are trained (role \"assistant\"); "
                     "--train-on all trains every token", opt->jsonl_field);
        else
            snprintf(err, errlen, "no line has a non-empty document (field \"%s\"): nothing would be trained"
                     "\n--> hint: --jsonl-field names the field holding the completion to train on",
                     opt->jsonl_field);
        st = ACCEL_ERR_INVALID;
        goto cleanup;
    }
    if (progress && enc.by_end_of_turn)
        fprintf(progress, "note: %lld assistant message(s) are rendered differently once later messages follow "
                "(e.g. the last turn's empty think block); each is trained from its generation prompt to the end "
                "of its turn in the whole conversation\n", enc.by_end_of_turn);
    if (progress && !enc.conversations && (opt->chat_template || opt->chat_train_all || opt->nchat_vars))
        fprintf(progress, "note: no line holds a conversation (a list of messages): the chat options had no "
                "effect\n");
    if (progress) fprintf(progress, "read %d file(s), %lld bytes -> ", files.n, total);
    size_t jlen = 0;
    const char *json = accel_tokenizer_json(tok, &jlen);
    char desc[5120];
    char chat[4400] = "";
    if (enc.conversations)
        snprintf(chat, sizeof chat, "; %lld conversation(s) rendered with %s, %s trained", enc.conversations,
                 accel_chat_template_origin(enc.chat), opt->chat_train_all ? "every token" : "the assistant's text");
    const bool only_chat = enc.conversations == ndocs;     /* the text rule applied to nothing */
    snprintf(desc, sizeof desc, "accel_data prepare: %d file(s), %lld bytes, %lld document(s) (%s), "
             "tokenizer %s; %s%s; last %g of the stream is /val", files.n, total, ndocs,
             jsonl ? "JSON Lines" : "text files", accel_tokenizer_name(tok),
             only_chat ? "conversations as the template renders them, nothing added" : rule, chat,
             opt->val_fraction);
    accel_token_meta_t meta = {
        .tokenizer = accel_tokenizer_name(tok), .tokenizer_hash = accel_tokenizer_hash(tok),
        .tokenizer_json = json, .tokenizer_json_len = jlen, .vocab = vocab, .description = desc,
        .document_starts = enc.starts.at, .ndocuments = enc.starts.n,
    };
    /* The template travels with the data (then checkpoints and exports), as the tokenizer does. */
    if (enc.conversations > 0 && enc.chat)
        meta.chat_template = accel_chat_template_source(enc.chat, &meta.chat_template_len);
    /* every token trained: no mask (the file stays readable by versions without loss masks) */
    st = accel_tokstream_publish(&s, enc.mask && enc.trained < s.n ? enc.mask : NULL, output, &meta,
                                 opt->val_fraction, -1, opt->context, progress, err, errlen);
cleanup:
    accel_chat_template_free(enc.chat);
    free(enc.ids);
    accel_docstarts_free(&enc.starts);
    accel_tokstream_free(&s);
    accel_tokstream_free(&mask);
    if (tok) accel_tokenizer_free(tok);
    accel_filelist_free(&files);
    return st;
}

accel_status_t accel_corpus_prepare(const char *const *inputs, int ninputs, const char *output,
                                    double val_fraction, int context, FILE *progress, char *err,
                                    size_t errlen)
{
    accel_prepare_options_t opt = { .val_fraction = val_fraction, .context = context,
                                    .progress = progress };
    return accel_data_prepare(inputs, ninputs, output, &opt, err, errlen);
}
