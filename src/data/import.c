/* Pre-tokenized imports (accel_data import): llm.c token shards and NumPy .npy arrays, recognised by
 * their magic, concatenated in the order given into one token stream, kept exactly (no separators
 * are added: the files already hold whatever their maker put between documents). Also what prepare
 * shares: recognising an input by its first bytes, the token stream at the dataset's width, and
 * its split and atomic publication. */
#define _GNU_SOURCE             /* O_TMPFILE */
#include "build_config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/dataset.h"
#include "accel/tokenizer.h"
#include "import.h"

/* ------------------------------------------------------------------ recognising inputs */

accel_input_kind_t accel_input_sniff(const unsigned char *buf, size_t len, bool jsonl, size_t *nul_at)
{
    static const unsigned char hdf5[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
    if (accel_npy_magic(buf, len)) return ACCEL_INPUT_NPY;
    int32_t m = accel_llmc_magic(buf, len);
    if (m == ACCEL_LLMC_MAGIC_EVAL) return ACCEL_INPUT_LLMC_EVAL;
    if (m) return ACCEL_INPUT_LLMC;
    if (len >= 8 && !memcmp(buf, hdf5, 8)) return ACCEL_INPUT_HDF5;
    const unsigned char *z = memchr(buf, 0, len);
    if (z) {
        if (nul_at) *nul_at = (size_t)(z - buf);
        return ACCEL_INPUT_BINARY;
    }
    if (jsonl && accel_jsonl_sniff((const char *)buf, len)) return ACCEL_INPUT_JSONL;
    return ACCEL_INPUT_TEXT;
}

const char *accel_input_kind_name(accel_input_kind_t k)
{
    switch (k) {
    case ACCEL_INPUT_TEXT: return "text";
    case ACCEL_INPUT_JSONL: return "JSON Lines (every line a JSON object)";
    case ACCEL_INPUT_NPY: return "a NumPy .npy array";
    case ACCEL_INPUT_LLMC: return "an llm.c token shard";
    case ACCEL_INPUT_LLMC_EVAL: return "an llm.c evaluation file";
    case ACCEL_INPUT_HDF5: return "an HDF5 file";
    default: return "binary data";
    }
}

/* ------------------------------------------------------------------ token streams */

accel_status_t accel_tokstream_init(accel_tokstream_t *s, int vocab, const char *output,
                                    size_t block_bytes)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->vocab = vocab;
    s->width = accel_dataset_token_bytes(vocab);
    s->cap = (int64_t)((block_bytes ? block_bytes : ACCEL_TOKSTREAM_DEFAULT_BLOCK) / (size_t)s->width);
    if (s->cap < 1) s->cap = 1;
    /* malloc maps a block this large lazily: a small stream makes only the pages it fills resident */
    s->buf = malloc((size_t)s->cap * (size_t)s->width);
    if (!s->buf) {
        snprintf(s->error, sizeof s->error, "out of memory for a block of %lld tokens",
                 (long long)s->cap);
        return ACCEL_ERR_NOMEM;
    }
    const char *slash = strrchr(output, '/');
    if (!slash) snprintf(s->dir, sizeof s->dir, ".");
    else if (slash == output) snprintf(s->dir, sizeof s->dir, "/");
    else snprintf(s->dir, sizeof s->dir, "%.*s", (int)(slash - output), output);
    return ACCEL_OK;
}

/* write(2) all of it, through short writes and signals. */
static int write_all(int fd, const unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

accel_status_t accel_tokstream_spill(accel_tokstream_t *s)
{
    if (s->fd < 0) {
        /* A file with no name (O_TMPFILE); where the file system has none, one unlinked at once.
         * Either way it lives while it is open, and no longer. */
        s->fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (s->fd < 0 && errno != EACCES && errno != ENOSPC && errno != EROFS) {
            char path[4200];
            snprintf(path, sizeof path, "%s/.accel_data-tokens-XXXXXX", s->dir);
            s->fd = mkstemp(path);
            if (s->fd >= 0) unlink(path);
        }
        if (s->fd < 0) {
            snprintf(s->error, sizeof s->error, "cannot create a temporary file for the token stream in "
                     "%s: %s\n--> hint: the output's directory must be writable", s->dir, strerror(errno));
            return ACCEL_ERR_IO;
        }
    }
    if (write_all(s->fd, s->buf, (size_t)s->nbuf * (size_t)s->width) != 0) {
        snprintf(s->error, sizeof s->error, "writing the token stream (%lld tokens so far) to a temporary "
                 "file in %s failed: %s\n--> hint: the output's directory needs room for the tokens "
                 "twice while the file is written", (long long)s->n, s->dir, strerror(errno));
        return ACCEL_ERR_IO;
    }
    s->nbuf = 0;
    return ACCEL_OK;
}

accel_status_t accel_docstarts_add(accel_docstarts_t *d, int64_t at)
{
    if (d->n > 0 && d->at[d->n - 1] == at) return ACCEL_OK;
    if (d->n == d->cap) {
        int64_t cap = d->cap ? 2 * d->cap : 4096;
        int64_t *p = realloc(d->at, sizeof *p * (size_t)cap);
        if (!p) return ACCEL_ERR_NOMEM;
        d->at = p;
        d->cap = cap;
    }
    d->at[d->n++] = at;
    return ACCEL_OK;
}

void accel_docstarts_free(accel_docstarts_t *d)
{
    free(d->at);
    *d = (accel_docstarts_t){ 0 };
}

accel_status_t accel_tokstream_put_bytes(accel_tokstream_t *s, const unsigned char *p, size_t len)
{
    while (len > 0) {
        if (s->nbuf == s->cap) {
            accel_status_t st = accel_tokstream_spill(s);
            if (st != ACCEL_OK) return st;
        }
        size_t k = (size_t)(s->cap - s->nbuf) < len ? (size_t)(s->cap - s->nbuf) : len;
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += (int64_t)k;
        s->n += (int64_t)k;
        p += k;
        len -= k;
    }
    return ACCEL_OK;
}

void accel_tokstream_free(accel_tokstream_t *s)
{
    if (s->buf && s->fd >= 0) close(s->fd);     /* a stream never initialised has neither */
    free(s->buf);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

/* The stream's tokens [first, first + count) (count <= its block): from the block while nothing
 * was spilled, else read back from the spill file into the (now free) block buffer. */
static const void *stream_source(void *ctx, int64_t first, int64_t count)
{
    accel_tokstream_t *s = ctx;
    if (s->fd < 0) return s->buf + (size_t)first * (size_t)s->width;
    size_t want = (size_t)count * (size_t)s->width, got = 0;
    off_t at = (off_t)first * s->width;
    while (got < want) {
        ssize_t r = pread(s->fd, s->buf + got, want - got, at + (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            snprintf(s->error, sizeof s->error, "reading the token stream back from its temporary "
                     "file in %s failed: %s", s->dir, r < 0 ? strerror(errno) : "it is shorter than written");
            return NULL;
        }
        got += (size_t)r;
    }
    return s->buf;
}

accel_status_t accel_tokstream_publish(accel_tokstream_t *s, accel_tokstream_t *mask, const char *output,
                                       const accel_token_meta_t *meta_in, double val_fraction,
                                       int64_t nval_given, int context, FILE *progress, char *err,
                                       size_t errlen)
{
    long long total = s->n;
    long long nval = nval_given >= 0 ? nval_given : llround((double)total * val_fraction);
    long long ntrain = total - nval;
    if (progress && nval_given >= 0)
        fprintf(progress, "%lld tokens: train %lld, val %lld (the --val files: the last %lld tokens "
                "of the stream)\n", total, ntrain, nval, nval);
    else if (progress)
        fprintf(progress, "%lld tokens: train %lld, val %lld (val fraction %g: the last %lld tokens "
                "of the stream)\n", total, ntrain, nval, val_fraction, nval);
    if (ntrain < context + 1 || nval < context + 1) {
        snprintf(err, errlen, "too little data: %lld tokens give %lld training and %lld validation "
                 "tokens, but one sample at context %d needs %d tokens in each split\n--> hint: add "
                 "data, or lower the context (--context)", total, ntrain, nval, context, context + 1);
        return ACCEL_ERR_SHAPE;
    }
    accel_token_meta_t meta = *meta_in;
    if (mask) {                     /* as many mask bytes as tokens, served from a block as large */
        meta.loss_mask = stream_source;
        meta.loss_mask_ctx = mask;
    }
    accel_status_t st;
    accel_tokstream_t *streams[2] = { s, mask };
    for (int i = 0; i < 2; i++) {   /* a spilled stream's last block joins its file */
        if (!streams[i]) continue;
        if (streams[i]->fd >= 0 && (st = accel_tokstream_spill(streams[i])) != ACCEL_OK) {
            snprintf(err, errlen, "%s", streams[i]->error);
            return st;
        }
        streams[i]->error[0] = '\0';
    }
    if (progress && s->fd >= 0) {
        fprintf(progress, "writing %s from the token stream's temporary file\n", output);
        fflush(progress);
    }
    st = accel_dataset_write_tokens_from(output, &meta, stream_source, s, s->cap, s->width, ntrain, nval);
    if (st != ACCEL_OK && mask && mask->error[0]) snprintf(s->error, sizeof s->error, "%s", mask->error);
    if (st != ACCEL_OK) {
        if (s->error[0]) snprintf(err, errlen, "writing '%s' failed: %s", output, s->error);
        else snprintf(err, errlen, "writing '%s' failed: %s", output, accel_status_str(st));
        return st;
    }
    if (progress)
        fprintf(progress, "wrote %s: %s v%d, tokenizer %s%s%s, vocab %d (uint%d); at context %d: %lld "
                "train and %lld val samples\n", output, ACCEL_DATASET_FORMAT_TOKENS,
                mask ? ACCEL_DATASET_VERSION : ACCEL_DATASET_VERSION_PLAIN, meta.tokenizer,
                meta.tokenizer_hash && meta.tokenizer_hash[0] ? " hash " : "",
                meta.tokenizer_hash ? meta.tokenizer_hash : "", meta.vocab, 8 * s->width, context,
                (ntrain - 1) / context, (nval - 1) / context);
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ import */

/* Copy one file's tokens into the stream, checking each against [0, vocab); with docs, each
 * occurrence of doc_token begins a document. */
static accel_status_t copy_tokens(FILE *f, const char *path, const accel_tokfile_t *tf,
                                  accel_tokstream_t *s, int64_t doc_token, accel_docstarts_t *docs,
                                  FILE *progress, char *err, size_t errlen)
{
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc((size_t)CHUNK * (size_t)tf->itemsize);
    if (!buf) {
        snprintf(err, errlen, "out of memory reading %s", path);
        return ACCEL_ERR_NOMEM;
    }
    accel_status_t st = ACCEL_OK;
    if (fseek(f, (long)tf->offset, SEEK_SET) != 0) st = ACCEL_ERR_IO;
    int64_t done = 0, next_report = 64LL << 20;
    while (st == ACCEL_OK && done < tf->count) {
        size_t want = (size_t)(tf->count - done < CHUNK ? tf->count - done : CHUNK);
        if (fread(buf, (size_t)tf->itemsize, want, f) != want) {
            snprintf(err, errlen, "%s: read failed after %lld of %lld tokens: %s", path,
                     (long long)done, (long long)tf->count, ferror(f) ? strerror(errno)
                     : "the file became shorter while being read");
            st = ACCEL_ERR_IO;
            break;
        }
        for (size_t i = 0; i < want; i++) {
            const unsigned char *p = buf + i * (size_t)tf->itemsize;
            uint64_t u = 0;
            for (int b = 0; b < tf->itemsize; b++) u |= (uint64_t)p[b] << (8 * b);   /* little-endian */
            int64_t v = (int64_t)u;
            if (tf->is_signed && tf->itemsize < 8 && (u >> (8 * tf->itemsize - 1)) & 1)
                v = (int64_t)(u | ~((1ULL << (8 * tf->itemsize)) - 1));               /* sign-extend */
            if (v < 0 || v >= s->vocab) {
                char what[64];
                if (v < 0) snprintf(what, sizeof what, "negative");
                else snprintf(what, sizeof what, ">= vocab %d", s->vocab);
                snprintf(err, errlen, "%s: token %lld at position %lld (of %lld) is %s\n"
                         "--> hint: %s", path, (long long)v, (long long)(done + (int64_t)i),
                         (long long)tf->count, what,
                         v < 0 ? "token ids are non-negative; the file is not a token array"
                               : "give the vocabulary the tokens were made with (--vocab V or "
                                 "--tokenizer tokenizer.json)");
                st = ACCEL_ERR_INVALID;
                break;
            }
            if (docs && v == doc_token && (st = accel_docstarts_add(docs, s->n)) != ACCEL_OK) {
                snprintf(err, errlen, "out of memory recording where %lld documents begin", (long long)docs->n);
                break;
            }
            if ((st = accel_tokstream_put(s, (uint32_t)v)) != ACCEL_OK) {
                snprintf(err, errlen, "%s", s->error);
                break;
            }
        }
        done += (int64_t)want;
        if (progress && done >= next_report && done < tf->count) {
            fprintf(progress, "    %lld / %lld tokens\n", (long long)done, (long long)tf->count);
            fflush(progress);
            next_report += 64LL << 20;
        }
    }
    if (st == ACCEL_ERR_IO && !err[0]) snprintf(err, errlen, "%s: cannot seek to the tokens", path);
    free(buf);
    return st;
}

/* Open and recognise one input; a file that is not pre-tokenized says what it looks like. */
static accel_status_t open_tokfile(const char *path, int64_t size, FILE **fp, accel_tokfile_t *tf,
                                   char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        return ACCEL_ERR_NOT_FOUND;
    }
    unsigned char head[4096];
    size_t n = fread(head, 1, sizeof head, f);
    accel_input_kind_t k = accel_input_sniff(head, n, true, NULL);
    accel_status_t st;
    if (k == ACCEL_INPUT_NPY) st = accel_npy_open(f, path, size, tf, err, errlen);
    else if (k == ACCEL_INPUT_LLMC || k == ACCEL_INPUT_LLMC_EVAL) st = accel_llmc_open(f, path, size, tf, err, errlen);
    else if (k == ACCEL_INPUT_BINARY || k == ACCEL_INPUT_HDF5) {
        long first = n >= 4 ? (long)(int32_t)((uint32_t)head[0] | (uint32_t)head[1] << 8 |
                                             (uint32_t)head[2] << 16 | (uint32_t)head[3] << 24) : 0;
        snprintf(err, errlen, "%s is %s but neither an llm.c token shard (its first int32 is %ld, not "
                 "the magic %d or %d) nor a NumPy .npy file (no \\x93NUMPY magic)\n--> hint: llm.c "
                 "shards are written by llm.c's dev/data scripts, .npy files by numpy.save; text goes "
                 "through accel_data prepare", path, accel_input_kind_name(k), first,
                 ACCEL_LLMC_MAGIC_GPT2, ACCEL_LLMC_MAGIC_LLAMA3);
        st = ACCEL_ERR_INVALID;
    } else {
        snprintf(err, errlen, "%s is %s, not pre-tokenized: import reads llm.c token shards (magic %d "
                 "or %d) and NumPy .npy token arrays\n--> hint: tokenize text with: accel_data "
                 "prepare%s [--tokenizer tokenizer.json] %s", path, accel_input_kind_name(k),
                 ACCEL_LLMC_MAGIC_GPT2, ACCEL_LLMC_MAGIC_LLAMA3, k == ACCEL_INPUT_JSONL ? " --jsonl" : "",
                 path);
        st = ACCEL_ERR_INVALID;
    }
    if (st != ACCEL_OK) fclose(f);
    else *fp = f;
    return st;
}

accel_status_t accel_data_import(const char *const *inputs, int ninputs, const char *output,
                                 const accel_import_options_t *opt, char *err, size_t errlen)
{
    accel_filelist_t files = { 0 }, vfiles = { 0 };
    accel_tokfile_t *tf = NULL;
    accel_tokenizer_t *tok = NULL;
    accel_tokstream_t s = { 0 };
    accel_docstarts_t docs = { 0 };
    FILE *progress = opt->progress;
    err[0] = '\0';
    accel_status_t st = ACCEL_ERR_INVALID;
    if (ninputs < 1) {
        snprintf(err, errlen, "no inputs\n--> hint: name llm.c .bin shards or .npy token arrays");
        goto cleanup;
    }
    if (opt->tokenizer && (st = accel_data_tokenizer_open(opt->tokenizer, &tok, err, errlen)) != ACCEL_OK)
        goto cleanup;
    if ((st = accel_filelist_collect(inputs, ninputs, &files, err, errlen)) != ACCEL_OK) goto cleanup;
    /* --val files follow the training files in the stream and form /val exactly. */
    const int ntrain_files = files.n;
    if (opt->nval_inputs > 0) {
        if ((st = accel_filelist_collect(opt->val_inputs, opt->nval_inputs, &vfiles, err, errlen)) != ACCEL_OK)
            goto cleanup;
        for (int v = 0; v < vfiles.n; v++)
            for (int i = 0; i < ntrain_files; i++)
                if (vfiles.dev[v] == files.dev[i] && vfiles.ino[v] == files.ino[i]) {
                    snprintf(err, errlen, "%s is both a training input and a --val file (as %s)\n"
                             "--> hint: a file belongs to one split", vfiles.paths[v], files.paths[i]);
                    st = ACCEL_ERR_INVALID;
                    goto cleanup;
                }
        struct stat sb;
        for (int v = 0; v < vfiles.n; v++)
            if (stat(vfiles.paths[v], &sb) != 0 || accel_filelist_add(&files, vfiles.paths[v], &sb) != 0) {
                snprintf(err, errlen, "cannot list '%s': %s", vfiles.paths[v], strerror(errno));
                st = ACCEL_ERR_NOMEM;
                goto cleanup;
            }
    }
    tf = calloc((size_t)files.n, sizeof *tf);
    if (!tf) {
        st = ACCEL_ERR_NOMEM;
        goto cleanup;
    }
    /* Headers first: the vocabulary (hence the width) and the total are known before any copy. */
    int64_t total = 0;
    for (int i = 0; i < files.n; i++) {
        FILE *f = NULL;
        if ((st = open_tokfile(files.paths[i], files.sizes[i], &f, &tf[i], err, errlen)) != ACCEL_OK)
            goto cleanup;
        fclose(f);
        total += tf[i].count;
    }
    int vocab = opt->vocab;
    const char *vocab_from = "--vocab";
    if (tok && vocab > 0 && vocab != accel_tokenizer_vocab(tok)) {
        snprintf(err, errlen, "--vocab %d disagrees with tokenizer %s (vocab %d)\n--> hint: give one "
                 "of them", vocab, accel_tokenizer_name(tok), accel_tokenizer_vocab(tok));
        st = ACCEL_ERR_INVALID;
        goto cleanup;
    }
    if (vocab <= 0 && tok) {
        vocab = accel_tokenizer_vocab(tok);
        vocab_from = "the tokenizer";
    }
    bool same = true;
    for (int i = 1; i < files.n; i++) same = same && !strcmp(tf[i].format, tf[0].format);
    if (vocab <= 0) {
        int first_unknown = -1;
        for (int i = 0; i < files.n && first_unknown < 0; i++)
            if (!tf[i].vocab) first_unknown = i;
        if (first_unknown >= 0 || !same) {
            snprintf(err, errlen, "the vocabulary is unknown: %s\n--> hint: give --vocab V (e.g. "
                     "50257 for GPT-2 tokens, 128256 for Llama-3) or --tokenizer tokenizer.json",
                     first_unknown >= 0 ? "a .npy array does not record it" :
                     "the llm.c shards are of different kinds (GPT-2 and Llama-3)");
            st = ACCEL_ERR_INVALID;
            goto cleanup;
        }
        vocab = tf[0].vocab;
        vocab_from = "the llm.c header";
    }
    if (progress)
        fprintf(progress, "vocab %d (from %s), stored as uint%d; %d file(s), %lld tokens, "
                "concatenated in order as they are (no separators added)\n", vocab, vocab_from,
                8 * accel_dataset_token_bytes(vocab), files.n, (long long)total);
    /* Documents: the token given, else the one the format puts before each (when all agree). */
    int64_t doc_token = opt->documents == ACCEL_DOCUMENTS_TOKEN ? opt->document_token : -1;
    if (opt->documents == ACCEL_DOCUMENTS_AUTO && same) doc_token = tf[0].document_start;
    if (doc_token >= vocab) {
        snprintf(err, errlen, "--document-start %lld is outside the vocabulary [0, %d)", (long long)doc_token,
                 vocab);
        st = ACCEL_ERR_INVALID;
        goto cleanup;
    }
    if (progress) {
        if (doc_token >= 0)
            fprintf(progress, "documents: each begins at token %lld%s (recorded for data.document_mask)\n",
                    (long long)doc_token, opt->documents == ACCEL_DOCUMENTS_TOKEN ? " (--document-start)"
                    : " (the token llm.c puts before every document)");
        else
            fprintf(progress, "documents: not recorded (%s)\n", opt->documents == ACCEL_DOCUMENTS_NONE
                    ? "--document-start none" : "the files do not mark them; --document-start ID names the "
                    "token that begins each");
    }
    if ((st = accel_tokstream_init(&s, vocab, output, opt->block_bytes)) != ACCEL_OK) {
        snprintf(err, errlen, "%s", s.error);
        goto cleanup;
    }
    for (int i = 0; i < files.n; i++) {
        if (progress) {
            fprintf(progress, "  import %-44s %s, %lld tokens%s\n", files.paths[i], tf[i].what,
                    (long long)tf[i].count, i >= ntrain_files ? " (val)" : "");
            fflush(progress);
        }
        FILE *f = fopen(files.paths[i], "rb");
        if (!f) {
            snprintf(err, errlen, "cannot read '%s': %s", files.paths[i], strerror(errno));
            st = ACCEL_ERR_IO;
            goto cleanup;
        }
        st = copy_tokens(f, files.paths[i], &tf[i], &s, doc_token, doc_token >= 0 ? &docs : NULL, progress,
                         err, errlen);
        fclose(f);
        if (st != ACCEL_OK) goto cleanup;
    }
    char name[64], desc[512];
    snprintf(name, sizeof name, "%s", same ? tf[0].format : "pretokenized");
    size_t jlen = 0;
    const char *json = tok ? accel_tokenizer_json(tok, &jlen) : NULL;
    int64_t nval = -1;
    if (opt->nval_inputs > 0) {
        nval = 0;
        for (int i = ntrain_files; i < files.n; i++) nval += tf[i].count;
        snprintf(desc, sizeof desc, "accel_data import: %d file(s) (%s), %lld tokens concatenated in "
                 "order; vocab %d from %s; /val is the last %d file(s)", files.n, name,
                 (long long)total, vocab, vocab_from, files.n - ntrain_files);
    } else {
        snprintf(desc, sizeof desc, "accel_data import: %d file(s) (%s), %lld tokens concatenated in "
                 "order; vocab %d from %s; last %g of the stream is /val", files.n, name,
                 (long long)total, vocab, vocab_from, opt->val_fraction);
    }
    accel_token_meta_t meta = {
        .tokenizer = tok ? accel_tokenizer_name(tok) : name,
        .tokenizer_hash = tok ? accel_tokenizer_hash(tok) : "",
        .tokenizer_json = json, .tokenizer_json_len = jlen,
        .vocab = vocab, .description = desc,
        .document_starts = doc_token >= 0 ? docs.at : NULL, .ndocuments = docs.n,
    };
    if (progress && doc_token >= 0)
        fprintf(progress, "documents: %lld begin in the stream\n", (long long)docs.n);
    st = accel_tokstream_publish(&s, NULL, output, &meta, opt->val_fraction, nval, opt->context, progress,
                                err, errlen);
cleanup:
    accel_docstarts_free(&docs);
    accel_tokstream_free(&s);
    if (tok) accel_tokenizer_free(tok);
    free(tf);
    accel_filelist_free(&files);
    accel_filelist_free(&vfiles);
    return st;
}
