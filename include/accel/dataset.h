/* HDF5 datasets: the on-disk format, a collective MPI-IO loader that reads exactly the requested
 * samples with hyperslab selections, and serial writers (used by accel_data).
 *
 * Format (version 1, or 2 when the file has loss masks; docs/datasets.md has the full description):
 *
 *   token dataset            file attributes  format = "accel-tokens", version = 1 (2 with masks),
 *                                             vocab (int), tokenizer (string, e.g. "bytes"),
 *                                             tokenizer_hash (string, "" when none)
 *     /train/tokens          1-D unsigned integers: uint16; uint8 allowed when vocab <= 256,
 *                            uint32 when vocab > 65536
 *     /val/tokens            same
 *     /train/loss_mask       optional (version 2): 1-D uint8, one per token: 1 = the token is a
 *     /val/loss_mask         training target, 0 = context only (a prompt); absent = all are targets
 *     /tokenizer.json        1-D uint8, optional: the tokenizer.json bytes the tokens were made with
 *     /chat_template         1-D uint8, optional: the chat template (Jinja text) conversations
 *                            were rendered with (accel_data prepare of messages); older readers
 *                            ignore it, so it changes no version
 *   Sample i of a split at context T is tokens[i*T .. i*T+T] (T+1 tokens: T inputs and the T
 *   next-token targets; consecutive samples share one token). nsamples = (ntokens - 1) / T, so the
 *   context is chosen when the file is opened, not when it is written.
 *   tokenizer "bytes": byte-level tokens, token = byte value, vocab = 256.
 *
 *   classification dataset   file attributes  format = "accel-classification", version = 1,
 *                                             classes (int)
 *     /train/inputs          [N, F] float32
 *     /train/labels          [N] int32, each in [0, classes)
 *     /val/inputs, /val/labels   same, with their own N
 *
 * Readers ignore attributes they do not know (writers add `description`), and refuse a version
 * newer than theirs. The loader also accepts other integer/float widths (e.g. files written by
 * h5py), converting on read. */
#ifndef ACCEL_DATASET_H
#define ACCEL_DATASET_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "accel/status.h"

#define ACCEL_DATASET_VERSION 2          /* the newest version this accel reads */
#define ACCEL_DATASET_VERSION_PLAIN 1    /* written when there are no loss masks: older accel reads it */
#define ACCEL_DATASET_FORMAT_TOKENS "accel-tokens"
#define ACCEL_DATASET_FORMAT_CLASSIFICATION "accel-classification"

typedef enum {
    ACCEL_DATASET_TOKENS = 1,
    ACCEL_DATASET_CLASSIFICATION = 2,
} accel_dataset_kind_t;

typedef struct {
    accel_dataset_kind_t kind;
    int version;
    const char *path;               /* as given to accel_dataset_open */
    const char *split;              /* "train", "val" */
    int64_t nsamples;
    /* token datasets */
    int context;                    /* T: a sample is T+1 tokens */
    int64_t ntokens;                /* tokens in this split */
    int vocab;
    int token_bytes;                /* width on disk: 1, 2 or 4 (other integer widths are converted) */
    char tokenizer[64];             /* attribute 'tokenizer' ("unknown" when absent) */
    /* classification datasets */
    int features;                   /* F */
    int classes;
    /* accounting: dataset elements (tokens, or input values + labels) this rank has read so far.
     * A read of n samples touches at most n*(T+1) tokens or n*(F+1) values: no rank reads more. */
    int64_t elements_read;
    /* token datasets, continued: attribute 'tokenizer_hash' (xxh64 of the tokenizer.json bytes as
     * 16 hex digits; "" for "bytes", pre-tokenized imports without --tokenizer, older files), and
     * whether the file keeps the tokenizer.json bytes (read them with accel_dataset_tokenizer_json) */
    char tokenizer_hash[24];
    bool has_tokenizer_json;
    bool token_signed;              /* the tokens' integer type on disk is signed (h5py files) */
    bool direct_reads;              /* tokens read by pread straight from the file (contiguous,
                                     * unfiltered, little-endian, stored as read), not through HDF5 */
    const char *hdf5_reads_why;     /* when not direct: why, and how to make them direct */
    bool has_loss_mask;             /* /split/loss_mask: read it with accel_dataset_read_loss_mask */
    bool has_chat_template;         /* /chat_template: read it with accel_dataset_chat_template */
    bool has_document_starts;       /* /split/document_start: read it with
                                     * accel_dataset_read_document_starts */
} accel_dataset_info_t;

typedef struct accel_dataset accel_dataset_t;

/* Open split `split` of the dataset at `path`, collectively over `comm` (every rank of comm calls
 * it with the same arguments) with the MPI-IO driver. `context` (T) is used by token datasets and
 * ignored by classification datasets. Validates format, version and shapes; on failure rank 0 of
 * comm logs what is wrong (naming file and dataset) and every rank returns the same status:
 * ACCEL_ERR_NOT_FOUND (no file, no split), ACCEL_ERR_CORRUPT (not HDF5, wrong format, bad shapes),
 * ACCEL_ERR_UNSUPPORTED (newer version), ACCEL_ERR_SHAPE (too few tokens for one sample),
 * ACCEL_ERR_INVALID (bad arguments). */
/* What a file on disk is, for tools about to write over it or describe it, read on one process:
 * *is_hdf5, the root "format" attribute into format[flen] ("" when none: then it is no accel file)
 * and the "description" attribute writers leave for people into description[dlen] (may be NULL;
 * "" when none). ACCEL_ERR_NOT_FOUND when the file cannot be read. */
accel_status_t accel_dataset_file_kind(const char *path, bool *is_hdf5, char *format, size_t flen,
                                       char *description, size_t dlen);
/* True for the format names of accel datasets (not checkpoints or other accel files). */
bool accel_dataset_format_known(const char *format);

accel_status_t accel_dataset_open(const char *path, const char *split, int context, MPI_Comm comm,
                                  accel_dataset_t **out);
/* Collective over the communicator the dataset was opened with. NULL is ignored. */
void accel_dataset_close(accel_dataset_t *ds);
const accel_dataset_info_t *accel_dataset_info(const accel_dataset_t *ds);

/* Read samples indices[0..n) (each in [0, nsamples); any order, duplicates allowed) into
 * accel_batch_t-compatible buffers, sample j at row j:
 *   token datasets:          tokens[n * (T+1)] (int32); inputs and labels may be NULL
 *   classification datasets: inputs[n * F] (float) and labels[n] (int32); tokens may be NULL
 * The samples are read with one hyperslab selection per HDF5 dataset (the union of the samples'
 * blocks) and one independent H5Dread, so ranks may call it with different n, different numbers
 * of times, or not at all. Not collective. A token outside [0, vocab), a label outside
 * [0, classes) or a non-finite input is ACCEL_ERR_CORRUPT (logged with file, dataset, sample);
 * an index out of range is ACCEL_ERR_INVALID. Errors are local to the calling rank: a caller
 * that must stay in step with other ranks agrees on the outcome (e.g. MPI_Allreduce of a flag). */
accel_status_t accel_dataset_read(accel_dataset_t *ds, const int64_t *indices, int n,
                                  int32_t *tokens, float *inputs, int32_t *labels);

/* The loss mask of token samples indices[0..n) (a token dataset with has_loss_mask), laid out as
 * accel_dataset_read's tokens: mask[j * (T+1) + t] is 1 when token t of sample j is a training
 * target, 0 when it is context only. Same selection rules and errors as accel_dataset_read; a
 * value other than 0 or 1 is ACCEL_ERR_CORRUPT. Not collective. */
accel_status_t accel_dataset_read_loss_mask(accel_dataset_t *ds, const int64_t *indices, int n,
                                            uint8_t *mask);

/* Where documents begin in token samples indices[0..n) (a token dataset with has_document_starts),
 * laid out as accel_dataset_read's tokens: starts[j * (T+1) + t] is 1 when token t of sample j is
 * the first of a document. Same rules and errors as accel_dataset_read_loss_mask. */
accel_status_t accel_dataset_read_document_starts(accel_dataset_t *ds, const int64_t *indices, int n,
                                                  uint8_t *starts);

/* How many tokens of the split its loss mask trains (the whole mask is read, a block at a time;
 * a value other than 0 or 1 is ACCEL_ERR_CORRUPT). Not collective. */
accel_status_t accel_dataset_loss_mask_count(accel_dataset_t *ds, int64_t *trained);
/* How many documents begin in the split (a token dataset with has_document_starts), read as
 * accel_dataset_loss_mask_count reads the mask. */
accel_status_t accel_dataset_document_count(accel_dataset_t *ds, int64_t *documents);

/* The tokenizer.json bytes a token dataset keeps (dataset /tokenizer.json), read on one process
 * (serial, no MPI): *json is a malloc'd NUL-terminated copy of *len bytes (free it). A file
 * without them (tokenizer "bytes", pre-tokenized imports without --tokenizer) gives
 * ACCEL_ERR_NOT_FOUND with *json = NULL, *len = 0; a file that is not an accel token dataset
 * ACCEL_ERR_CORRUPT (logged). */
accel_status_t accel_dataset_tokenizer_json(const char *path, char **json, size_t *len);
/* The chat template a token dataset keeps (dataset /chat_template: the template's text, as the
 * conversations were rendered with it), read like accel_dataset_tokenizer_json: *text malloc'd and
 * NUL-terminated (*len bytes); ACCEL_ERR_NOT_FOUND (*text = NULL, *len = 0) when the file keeps
 * none (no conversations, or a file made before templates were kept). */
accel_status_t accel_dataset_chat_template(const char *path, char **text, size_t *len);
/* The tokenizer a token dataset was made with, ready to decode (serial, one process): "bytes", or
 * the kept tokenizer.json (accel_tokenizer_open_recorded). ACCEL_ERR_NOT_FOUND, with err saying
 * so, when the file records a tokenizer without its bytes (e.g. "llm.c-gpt2", "npy", "synthetic"). */
struct accel_tokenizer;
accel_status_t accel_dataset_tokenizer(const char *path, struct accel_tokenizer **out, char *err,
                                       size_t errlen);

/* Serial writers (one process). The file is written to a temporary name beside `path`, flushed
 * to disk and renamed over `path`, so a failure never leaves a half-written dataset.
 * Token stream: `stream` holds ntrain + nval tokens of token_bytes (1: uint8, needs vocab <= 256;
 * 2: uint16, needs vocab <= 65536; 4: uint32, for larger vocabularies) each; the first ntrain form /train/tokens, the rest /val/tokens.
 * `description` (may be NULL) is stored as an attribute for people reading the file. */
accel_status_t accel_dataset_write_tokens(const char *path, const char *tokenizer, int vocab,
                                          const void *stream, int token_bytes, int64_t ntrain,
                                          int64_t nval, const char *description);
/* Where streamed tokens come from (accel_dataset_write_tokens_from): tokens [first, first + count)
 * of the stream, count x token_bytes, valid until the next call; NULL after reporting why. */
typedef const void *(*accel_token_source_fn)(void *ctx, int64_t first, int64_t count);

/* What a token dataset records besides its tokens. */
typedef struct {
    const char *tokenizer;          /* attribute 'tokenizer': "bytes", "gpt2", "llm.c-gpt2", "npy" */
    const char *tokenizer_hash;     /* attribute 'tokenizer_hash'; NULL is written as "" */
    const char *tokenizer_json;     /* kept as /tokenizer.json when not NULL */
    size_t tokenizer_json_len;
    const char *chat_template;      /* kept as /chat_template when not NULL (the template the
                                     * conversations were rendered with) */
    size_t chat_template_len;
    int vocab;
    const char *description;        /* may be NULL */
    /* Optional loss mask, one byte (0 or 1) per token of the stream, from a source as the tokens'
     * (accel_dataset_write_tokens_from; it must serve as many at a time): written as
     * /train/loss_mask and /val/loss_mask, and the file as version 2. NULL: no mask. */
    accel_token_source_fn loss_mask;
    void *loss_mask_ctx;
    /* Optional: where each document begins, ndocuments ascending stream offsets (the first token
     * of each document): written as /train/document_start and /val/document_start, one byte per
     * token (1 at a start), chunked and compressed. NULL: not recorded. */
    const int64_t *document_starts;
    int64_t ndocuments;
} accel_token_meta_t;
/* As accel_dataset_write_tokens, with the tokenizer's hash and bytes; token_bytes 1, 2 or 4
 * (uint32, for vocab > 65536). */
accel_status_t accel_dataset_write_tokens_meta(const char *path, const accel_token_meta_t *meta,
                                               const void *stream, int token_bytes, int64_t ntrain,
                                               int64_t nval);
/* As accel_dataset_write_tokens_meta, for streams larger than memory: the tokens come from
 * `source`, asked for tokens [first, first + count) of the stream in order, at most `block` at a
 * time; it returns them (count x token_bytes, valid until its next call) or NULL after reporting
 * why (the file is then not written). */
accel_status_t accel_dataset_write_tokens_from(const char *path, const accel_token_meta_t *meta,
                                               accel_token_source_fn source, void *ctx, int64_t block,
                                               int token_bytes, int64_t ntrain, int64_t nval);
/* The narrowest width (1, 2 or 4 bytes) that holds every token of a vocabulary of `vocab`. */
int accel_dataset_token_bytes(int vocab);
accel_status_t accel_dataset_write_classification(const char *path, int classes, int features,
                                                  const float *train_inputs,
                                                  const int32_t *train_labels, int64_t ntrain,
                                                  const float *val_inputs,
                                                  const int32_t *val_labels, int64_t nval,
                                                  const char *description);

/* Text corpora. The default corpus is the license texts every Debian system has (package
 * base-files), tokenised byte by byte. */
#define ACCEL_CORPUS_DEFAULT_INPUT "/usr/share/common-licenses"
#define ACCEL_CORPUS_DEFAULT_OUTPUT "data/corpus.h5"

/* Byte-level tokenise the inputs (files, or directories read recursively in name order; none = the
 * default corpus) into a token dataset at `output`: the last val_fraction of the stream is /val.
 * Lists each file read on `progress` (may be NULL). On error, err says what and why. */
accel_status_t accel_corpus_prepare(const char *const *inputs, int ninputs, const char *output,
                                    double val_fraction, int context, FILE *progress, char *err,
                                    size_t errlen);

/* Text and JSON Lines -> tokens (accel_data prepare). Every document is a text file, or the string
 * field `jsonl_field` of each line of a JSON Lines file. Documents are tokenized one by one and
 * concatenated in input order; when the tokenizer has a BOS token every document is preceded by
 * it, else when it has an EOS token every document is followed by it, else (the byte tokenizer)
 * nothing is added: the stream is the files' bytes exactly. Inputs that do not look like text
 * (NUL bytes, .npy or llm.c magic, HDF5; in text mode also JSON Lines) are refused with a hint
 * naming the right command, unless `force`. The last val_fraction of the stream is /val. */
typedef struct {
    const char *tokenizer;          /* tokenizer.json (or its directory); NULL or "bytes": bytes */
    const char *jsonl_field;        /* NULL: text files; else JSON Lines, the document field */
    const char *prompt_field;       /* JSON Lines: NULL, or the field holding each document's prompt:
                                     * the line is [BOS] prompt document [EOS], and a loss mask
                                     * trains the document and EOS only (file version 2) */
    double val_fraction;            /* in (0, 1) */
    int context;                    /* refuse splits without one sample of context+1 tokens */
    bool force;                     /* tokenize inputs that do not look like text */
    FILE *progress;                 /* files read, the separator rule, counts; may be NULL */
    size_t block_bytes;             /* tokens held in memory before they go to a temporary file
                                     * beside the output (0: 64 MiB); JSON Lines are read in blocks
                                     * of at least this much too */
    /* Conversations: a JSON Lines field holding a list of messages (TRL's "messages", or with a
     * prompt field its conversational prompt/completion) is rendered with a chat template
     * (include/accel/chat.h) and tokenized whole, nothing added around it; a loss mask trains the
     * assistant's messages (the completion), or every token with chat_train_all. */
    const char *chat_template;      /* template file or tokenizer directory; NULL: the tokenizer's */
    const char *const *chat_vars;   /* NAME=VALUE variables for the template (accel_chat_template_set) */
    int nchat_vars;
    bool chat_train_all;
} accel_prepare_options_t;
accel_status_t accel_data_prepare(const char *const *inputs, int ninputs, const char *output,
                                  const accel_prepare_options_t *opt, char *err, size_t errlen);

/* Pre-tokenized files -> tokens (accel_data import): llm.c token shards (GPT-2: magic 20240520 v1,
 * uint16; Llama-3: magic 20240801 v7, uint32) and NumPy .npy 1-D C-order little-endian
 * uint8/uint16/uint32/int32/int64 arrays, recognised by their magic, concatenated in input order
 * exactly as they are. The vocabulary: `vocab`, else the tokenizer's, else the llm.c header kind
 * (GPT-2 50257, Llama-3 128256); otherwise refused. A token >= vocab is refused naming the file,
 * position and value. */
typedef struct {
    int vocab;                      /* 0: from the tokenizer or the llm.c header */
    const char *tokenizer;          /* recorded with its hash and bytes when given; may be NULL */
    const char *const *val_inputs;  /* when nval_inputs > 0: these files (after the inputs) are /val
                                     * exactly, and val_fraction is not used (llm.c's *_val_* shards) */
    int nval_inputs;
    double val_fraction;
    int context;
    FILE *progress;
    size_t block_bytes;             /* as accel_prepare_options_t's */
    /* Where documents begin (recorded for data.document_mask): ACCEL_DOCUMENTS_AUTO (zero), the
     * token the files' format puts before every document (llm.c shards: GPT-2 50256
     * <|endoftext|>, Llama-3 128000 <|begin_of_text|>; .npy: none); ACCEL_DOCUMENTS_NONE; or
     * ACCEL_DOCUMENTS_TOKEN: each occurrence of document_token begins a document. */
    enum { ACCEL_DOCUMENTS_AUTO = 0, ACCEL_DOCUMENTS_NONE, ACCEL_DOCUMENTS_TOKEN } documents;
    int32_t document_token;
} accel_import_options_t;
accel_status_t accel_data_import(const char *const *inputs, int ninputs, const char *output,
                                 const accel_import_options_t *opt, char *err, size_t errlen);

#endif
