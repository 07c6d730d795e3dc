/* The data layer's importers, private to libaccel (the public API is include/accel/dataset.h):
 * the pre-tokenized file formats (llmc.c: llm.c token shards; npy.c: NumPy .npy arrays), JSON Lines
 * documents (jsonl.c), recognising a file by its first bytes, input file lists, and the token
 * stream that prepare and import fill and publish (import.c). Functions return accel_status_t and
 * put what went wrong, with a hint, into err; none logs or exits. */
#ifndef ACCEL_DATA_IMPORT_H
#define ACCEL_DATA_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#include "accel/dataset.h"
#include "accel/status.h"

/* ------------------------------------------------------------------ pre-tokenized files */

/* Where a pre-tokenized file keeps its tokens: `count` little-endian integers of `itemsize` bytes
 * (signed or not) from byte `offset` to the end of the file. */
typedef struct {
    char format[32];                /* "llm.c-gpt2", "llm.c-llama3", "npy" (recorded as tokenizer) */
    char what[192];                 /* for people: "llm.c GPT-2 shard, uint16 tokens" */
    int64_t count;
    int64_t offset;
    int itemsize;                   /* 1, 2, 4 or 8 */
    bool is_signed;
    int vocab;                      /* the vocabulary the format implies; 0 when it says none */
    int32_t document_start;         /* the token the format puts before every document (llm.c's
                                     * <|endoftext|> or <|begin_of_text|>); -1 when it says none */
} accel_tokfile_t;

/* llm.c (karpathy/llm.c, dev/data/data_common.py write_datafile): a header of 256 int32 (magic,
 * version, token count, zeros), then the tokens. */
#define ACCEL_LLMC_HEADER_BYTES 1024
#define ACCEL_LLMC_MAGIC_GPT2 20240520      /* version 1, uint16 tokens, GPT-2 vocab 50257 */
#define ACCEL_LLMC_MAGIC_LLAMA3 20240801    /* version 7, uint32 tokens, Llama-3 vocab 128256 */
#define ACCEL_LLMC_MAGIC_EVAL 20240522      /* write_evalfile: HellaSwag/MMLU examples, not a stream */
/* The first 4 bytes of `head` (n bytes) are an llm.c magic: its value, else 0. */
int32_t accel_llmc_magic(const unsigned char *head, size_t n);
accel_status_t accel_llmc_open(FILE *f, const char *path, int64_t size, accel_tokfile_t *out,
                               char *err, size_t errlen);

/* NumPy .npy, format versions 1.0, 2.0 and 3.0 (numpy.lib.format). */
bool accel_npy_magic(const unsigned char *head, size_t n);
accel_status_t accel_npy_open(FILE *f, const char *path, int64_t size, accel_tokfile_t *out,
                              char *err, size_t errlen);

/* ------------------------------------------------------------------ JSON Lines */

/* One line's document: the UTF-8 text of the document field (len bytes, NUL-terminated) and, when
 * a prompt field is asked for, the prompt that goes before it (else prompt is NULL). Or, when the
 * field holds a list of messages, a conversation (text is NULL): `messages` is the document
 * field's list, or with a prompt field the prompt's, the document field's being `completion`;
 * `tools` is the line's "tools" list when it has one. */
typedef struct {
    const char *text;
    size_t len;
    const char *prompt;
    size_t prompt_len;
    const json_t *messages, *completion, *tools;
} accel_jsonl_doc_t;
/* Called with each document and its 1-based line number. A status other than ACCEL_OK stops the
 * walk and is returned. */
typedef accel_status_t (*accel_jsonl_doc_fn)(void *ctx, const accel_jsonl_doc_t *doc, long long line);
/* Every non-blank line of buf[0..len) must be a JSON object whose `field` (and `prompt_field`,
 * when not NULL) is a string, or a list of messages (both fields alike); blank lines are skipped. Errors name path and line. *lines: the
 * lines of the file before buf on entry (a file read in pieces), through buf on return; *ndocs:
 * documents passed to fn. */
accel_status_t accel_jsonl_each(const char *path, const char *buf, size_t len, const char *field,
                                const char *prompt_field, accel_jsonl_doc_fn fn, void *ctx,
                                long long *lines, long long *ndocs, char *err, size_t errlen);
/* The file looks like JSON Lines: its first non-blank lines (up to 8) all parse as JSON objects. */
bool accel_jsonl_sniff(const char *buf, size_t len);

/* ------------------------------------------------------------------ recognising inputs */

typedef enum {
    ACCEL_INPUT_TEXT = 0,
    ACCEL_INPUT_JSONL,
    ACCEL_INPUT_NPY,
    ACCEL_INPUT_LLMC,               /* a token shard (either magic) */
    ACCEL_INPUT_LLMC_EVAL,
    ACCEL_INPUT_HDF5,
    ACCEL_INPUT_BINARY,             /* holds NUL bytes */
} accel_input_kind_t;

/* What the bytes buf[0..len) (a whole file, or its start) are; *nul_at: offset of the first NUL
 * for ACCEL_INPUT_BINARY. JSON Lines is told apart from text only when `jsonl` is true. */
accel_input_kind_t accel_input_sniff(const unsigned char *buf, size_t len, bool jsonl, size_t *nul_at);
const char *accel_input_kind_name(accel_input_kind_t k);

/* ------------------------------------------------------------------ file lists (corpus.c) */

typedef struct {
    char **paths;
    long long *sizes;
    int n, cap;
    dev_t *dev;
    ino_t *ino;
} accel_filelist_t;

/* Files to read, in order: a file as given, a directory's regular files in name order, then its
 * symbolic links, recursively (hidden and empty files skipped, a file reached twice kept once). */
accel_status_t accel_filelist_collect(const char *const *inputs, int ninputs, accel_filelist_t *l,
                                      char *err, size_t errlen);
void accel_filelist_free(accel_filelist_t *l);
/* Append one file (0; -1 when out of memory); a file already listed (same device and inode) is
 * not added again. */
struct stat;
int accel_filelist_add(accel_filelist_t *l, const char *path, const struct stat *sb);

/* ------------------------------------------------------------------ tokenizers (corpus.c) */

/* "bytes" (or NULL): the byte tokenizer; else accel_tokenizer_load(path), after checking the path
 * exists so that a missing file is named as such. */
struct accel_tokenizer;
accel_status_t accel_data_tokenizer_open(const char *path, struct accel_tokenizer **out, char *err,
                                         size_t errlen);

/* ------------------------------------------------------------------ token streams (import.c) */

/* Tokens at the dataset's width (1, 2 or 4 bytes, from the vocabulary), filled in order. A block
 * of them is held in memory; each time it fills it is appended to a spill file in the output's
 * directory (one with no name, O_TMPFILE, else unlinked as soon as it is made: nothing is left
 * behind, whatever happens), so a stream of any length takes one block of memory. A stream that
 * fits one block never touches the disk. */
#define ACCEL_TOKSTREAM_DEFAULT_BLOCK ((size_t)64 << 20)
typedef struct {
    unsigned char *buf;             /* the block */
    int64_t n;                      /* tokens in the stream */
    int64_t nbuf, cap;              /* tokens in the block, its capacity */
    int width;
    int vocab;
    int fd;                         /* the spill file, -1 until the first block fills */
    char dir[4096];                 /* where it is made: the output's directory */
    char error[4352];               /* why a spill or a read-back failed */
} accel_tokstream_t;

/* block_bytes: the memory for the block (0: ACCEL_TOKSTREAM_DEFAULT_BLOCK). */
accel_status_t accel_tokstream_init(accel_tokstream_t *s, int vocab, const char *output,
                                    size_t block_bytes);
/* Append the block to the spill file and empty it; on failure s->error says why. */
accel_status_t accel_tokstream_spill(accel_tokstream_t *s);
/* Append one token; the caller has checked 0 <= tok < vocab. */
static inline accel_status_t accel_tokstream_put(accel_tokstream_t *s, uint32_t tok)
{
    if (s->nbuf == s->cap) {
        accel_status_t st = accel_tokstream_spill(s);
        if (st != ACCEL_OK) return st;
    }
    if (s->width == 1) s->buf[s->nbuf] = (unsigned char)tok;
    else if (s->width == 2) ((uint16_t *)s->buf)[s->nbuf] = (uint16_t)tok;
    else ((uint32_t *)s->buf)[s->nbuf] = tok;
    s->nbuf++;
    s->n++;
    return ACCEL_OK;
}
/* Append len one-byte tokens (a stream of width 1: the byte tokenizer). */
accel_status_t accel_tokstream_put_bytes(accel_tokstream_t *s, const unsigned char *p, size_t len);
void accel_tokstream_free(accel_tokstream_t *s);

/* Where documents begin in a stream: ascending offsets, one per document (8 bytes a document). */
typedef struct {
    int64_t *at;
    int64_t n, cap;
} accel_docstarts_t;
/* A document begins at stream offset `at` (>= the last; a repeat of the last is one document: an
 * empty document merges with the next). ACCEL_ERR_NOMEM when the list cannot grow. */
accel_status_t accel_docstarts_add(accel_docstarts_t *d, int64_t at);
void accel_docstarts_free(accel_docstarts_t *d);

/* Split the stream (the last val_fraction of it, rounded, is /val; or, when nval >= 0, the last
 * nval tokens), check that each split holds a sample at `context`, write `output` atomically and
 * report on progress (may be NULL). `mask` (may be NULL): the loss mask, a stream of as many
 * 0/1 bytes made with a block of as many (accel_tokstream_init with vocab 2 and block_bytes / the
 * tokens' width). */
accel_status_t accel_tokstream_publish(accel_tokstream_t *s, accel_tokstream_t *mask, const char *output,
                                       const accel_token_meta_t *meta, double val_fraction,
                                       int64_t nval, int context, FILE *progress, char *err,
                                       size_t errlen);

#endif
