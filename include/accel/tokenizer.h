/* Tokenizers: text <-> token ids, in C.
 *
 *   "bytes"          built in: one token per byte, token = byte value, vocab 256
 *   tokenizer.json   a Hugging Face tokenizer file (read with jansson):
 *                    - byte-level BPE (GPT-2, Llama-3, Qwen2 style): pre-tokenizer regex with Unicode
 *                      classes (PCRE2), byte-to-unicode mapping, merges by rank, added/special tokens
 *                    - BPE with byte fallback and the metaspace convention (Llama-2, TinyLlama,
 *                      Mistral style): "▁" for spaces, <0xAB> tokens for bytes not in the vocabulary
 *
 * A tokenizer is identified by a name (for people: "bytes", or the name of the file's directory or
 * file, e.g. "gpt2") and a hash (xxh64 of the tokenizer.json bytes as 16 hex digits; "" for
 * "bytes"). Datasets and checkpoints record both and keep the tokenizer.json bytes, so any file made
 * with a tokenizer can be decoded without the original file (accel_tokenizer_from_json).
 *
 * Encoding follows the HF `tokenizers` library's `encode(text, add_special_tokens=False)`: added
 * tokens found in the text become their ids, the rest goes through normalizer, pre-tokenizer and
 * model. Decoding inverts it: decode(encode(x)) == x for any valid UTF-8 x. */
#ifndef ACCEL_TOKENIZER_H
#define ACCEL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "accel/status.h"

#define ACCEL_TOKENIZER_BYTES "bytes"
#define ACCEL_TOKENIZER_NAME_MAX 64
#define ACCEL_TOKENIZER_HASH_LEN 16       /* hex digits of the xxh64 of the tokenizer.json bytes */

typedef struct accel_tokenizer accel_tokenizer_t;

/* The built-in byte tokenizer. */
accel_status_t accel_tokenizer_bytes(accel_tokenizer_t **out);
/* Read a Hugging Face tokenizer.json: `path` is the file or a directory holding tokenizer.json.
 * The name is the directory's base name (the file's when it is not called tokenizer.json).
 * A file that is not JSON, not a tokenizer, or a model/normalizer/pre-tokenizer accel does not
 * support is ACCEL_ERR_CORRUPT / ACCEL_ERR_UNSUPPORTED with err naming the JSON key. */
accel_status_t accel_tokenizer_load(const char *path, accel_tokenizer_t **out, char *err,
                                    size_t errlen);
/* The same from the file's bytes (as kept in datasets and checkpoints); `name` as recorded. */
accel_status_t accel_tokenizer_from_json(const char *json, size_t len, const char *name,
                                         accel_tokenizer_t **out, char *err, size_t errlen);
/* Open by what a dataset or checkpoint records: name "bytes" -> the byte tokenizer, otherwise
 * from the kept JSON bytes (json may be NULL only for "bytes"). */
accel_status_t accel_tokenizer_open_recorded(const char *name, const char *json, size_t len,
                                             accel_tokenizer_t **out, char *err, size_t errlen);
void accel_tokenizer_free(accel_tokenizer_t *t);

const char *accel_tokenizer_name(const accel_tokenizer_t *t);
const char *accel_tokenizer_hash(const accel_tokenizer_t *t);   /* "" for "bytes" */
/* The tokenizer.json bytes (NULL and *len = 0 for "bytes"). */
const char *accel_tokenizer_json(const accel_tokenizer_t *t, size_t *len);
/* Ids are in [0, vocab): the model's vocabulary plus added tokens. */
int accel_tokenizer_vocab(const accel_tokenizer_t *t);
/* Beginning/end-of-text ids (from the post-processor and the added tokens, e.g. <s>, </s>,
 * <|endoftext|>, <|begin_of_text|>); -1 when the tokenizer has none. */
int accel_tokenizer_bos(const accel_tokenizer_t *t);
int accel_tokenizer_eos(const accel_tokenizer_t *t);

/* The id of a token given as the tokenizer.json spells it (an added token's content such as
 * "<|im_end|>", or a vocabulary entry such as "Ġthe" or "▁the"); -1 when there is none. For
 * "bytes", a one-character string gives its byte. Linear in the vocabulary: look ids up once. */
int accel_tokenizer_token_id(const accel_tokenizer_t *t, const char *token);

/* text[0..len) as the tokenizer's normalizers leave it (tokenizer.json "normalizer": NFC,
 * lowercase, ...), malloc'd into *out. What encoding tokenizes, and what the tokens' bytes add up
 * to when the normalizer is not undone by decoding (everything but metaspace's). */
accel_status_t accel_tokenizer_normalize(accel_tokenizer_t *t, const char *text, size_t len, char **out,
                                         size_t *out_len);

/* The id is an added token marked special (<|im_end|>, <|eot_id|>, </s>, ...). */
int accel_tokenizer_is_special(const accel_tokenizer_t *t, int id);

/* Encode text[0..len) (UTF-8; invalid UTF-8 is ACCEL_ERR_INVALID for file tokenizers, any byte
 * is fine for "bytes"), appending the ids to the growable array *ids (capacity *cap, count *n;
 * *ids may start NULL). Not thread-safe on one tokenizer (it keeps a cache of encoded words). */
accel_status_t accel_tokenizer_encode(accel_tokenizer_t *t, const char *text, size_t len,
                                      int32_t **ids, size_t *n, size_t *cap);
/* Why the last accel_tokenizer_encode on t failed (e.g. the byte offset of invalid UTF-8), "" after
 * a success. */
const char *accel_tokenizer_last_error(const accel_tokenizer_t *t);
/* Decode ids into a NUL-terminated malloc'd string (*len bytes, not counting the NUL), with the
 * decoder's clean-up (metaspace -> spaces, byte fallback, the leading space the encoder added):
 * HF's Tokenizer.decode(ids, skip_special_tokens=False), special tokens written as their content.
 * Bytes that do not form valid UTF-8 (e.g. a prefix of the ids ending inside a character) become
 * U+FFFD as in HF: one per maximal invalid sequence for byte-level tokens, one per byte for a run
 * of <0xAB> byte-fallback tokens. An id outside [0, vocab) is ACCEL_ERR_INVALID. Thread-safe. */
accel_status_t accel_tokenizer_decode(const accel_tokenizer_t *t, const int32_t *ids, size_t n,
                                      char **text, size_t *len);
/* The raw bytes one token stands for, for printing token by token as they are generated (a
 * multi-byte character may span tokens: the caller prints bytes as they come). `first`: the
 * token opens the text (metaspace tokenizers drop the space they prepended). NULL for an id out
 * of range; special tokens give their content. */
const char *accel_tokenizer_token_bytes(const accel_tokenizer_t *t, int32_t id, int first,
                                        size_t *len);

#endif
