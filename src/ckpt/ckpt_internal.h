/* Helpers shared by the checkpoint sources (save, load, meta, verify) and nowhere else. */
#ifndef ACCEL_CKPT_INTERNAL_H
#define ACCEL_CKPT_INTERNAL_H

#include <hdf5.h>
#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/ckpt.h"
#include "../h5/h5util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint checksums hash the little-endian bytes of the file; add byte swapping for this host"
#endif

/* Root attributes. */
#define CK_ATTR_FORMAT "format"
#define CK_ATTR_VERSION "format_version"
#define CK_ATTR_COMPLETE "complete"
#define CK_ATTR_ARENAS "arenas"
#define CK_ATTR_ALGO "checksum_algorithm"
#define CK_ATTR_BLOCK "checksum_block_elems"
#define CK_ALGO_NAME "xxh3_64"
/* Per-dataset attribute: tensor checksum (accel_ckpt_hash_tensor of its block table). */
#define CK_ATTR_XXH "xxh3_64"
/* Per-dataset attribute binding the checksums to the tensor's place: XXH3-64 of "arena/name" (with
 * its NUL) then the block table (ck_hash_named). A root attribute says the file has them (files
 * written before have neither), so two tensors swapped together with their tables do not verify. */
#define CK_ATTR_XXH_NAMED "xxh3_64_named"
#define CK_ATTR_NAMED_SUMS "checksums_named"
#define CK_GROUP_META "meta"
#define CK_GROUP_SUMS "checksums"
#define CK_DSET_CONFIG "config.yaml"
#define CK_DSET_TOKENIZER "tokenizer.json"  /* 1-D uint8 in /meta: the tokenizer file's bytes */
#define CK_TOKENIZER_MAX ((size_t)1 << 30) /* larger is damage: real ones are a few MiB */
#define CK_DSET_CHAT_TEMPLATE "chat_template" /* 1-D uint8 in /meta, optional: the chat template's text */
#define CK_CHAT_TEMPLATE_MAX ((size_t)1 << 26) /* larger is damage: real ones are a few KiB */
/* /meta attribute beside it: XXH3-64 of its bytes. Apart from the /meta digest, which leaves the
 * template out, so readers that do not know templates still verify a file that keeps one. */
#define CK_ATTR_CHAT_XXH "chat_template_xxh3_64"

/* Write/read the metadata group (/meta) and the root format attributes except `complete`
 * (written by rank 0 alone, serial file). created: ck_now_utc. */
void ck_now_utc(char *buf, size_t len);
int ck_meta_write(hid_t file, const accel_ckpt_meta_t *meta, int world_size, const char *arenas,
                  const char *created);
/* The configuration YAML as the scalar string dataset CK_DSET_CONFIG in group g; <0 on error. */
int ck_write_config(hid_t g, const char *yaml);
#define CK_ATTR_TOKENIZER "tokenizer"
#define CK_ATTR_TOKENIZER_HASH "tokenizer_hash"
accel_status_t ck_meta_read(hid_t file, const char *path, accel_ckpt_meta_t *meta, bool log);

/* Check the root attributes: format name, version (not from the future), complete flag, checksum
 * algorithm. *block receives the checksum block size. Logs a message naming path when log. */
accel_status_t ck_check_format(hid_t file, const char *path, uint64_t *block, bool need_complete,
                               bool log);
/* "/<arena>/<tensor>" and "/checksums/<arena>/<tensor>". */
void ck_data_path(char *buf, size_t len, const char *arena, const char *tensor);
void ck_sum_path(char *buf, size_t len, const char *arena, const char *tensor);

/* Select the flat range [begin, end) of a dataspace of the given shape (hyperslab union; none when
 * empty). Returns <0 on error. */
int ck_select_range(hid_t space, int ndim, const int64_t *shape, uint64_t begin, uint64_t end);

/* Elements moved per H5Dread/H5Dwrite call and rank: MPI counts are ints, so transfers stay well
 * below 2 GiB (ACCEL_CKPT_IO_CHUNK overrides, for tests). */
uint64_t ck_io_chunk(void);

/* ceil(a / b), for block and call counts (no overflow for any a; b > 0). */
uint64_t ck_hash_named(const char *arena, const char *name, const uint64_t *sums, size_t nblocks);
/* A tensor's checksum attributes against its block table: NULL when they match, else the name of
 * the attribute that does not (CK_ATTR_XXH, or CK_ATTR_XXH_NAMED in files that have them). */
const char *ck_tensor_sums_mismatch(hid_t dset, const char *arena, const char *name,
                                    const uint64_t *sums, size_t nblocks);

static inline uint64_t ck_div_up(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* Checked arithmetic for sizes read from files: false when the result does not fit. */
static inline bool ck_mul(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline bool ck_add(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_add_overflow(a, b, r); }

/* Limits on what a file may claim before we allocate or loop on it. The block size sizes the
 * scratch buffers (load: 2 blocks of fp32 per rank), so a damaged attribute must not reach malloc. */
#define CK_BLOCK_MAX ((uint64_t)1 << 24)
/* Product of a dataset's dimensions as elements, checked: false (and *n untouched) when it
 * overflows or when n * elem_bytes would. */
bool ck_dims_numel(int ndim, const hsize_t *dims, size_t elem_bytes, uint64_t *n);
/* The object at path is a dataset (not a group, not missing): 1; otherwise 0. Quiet. */
int ck_is_dataset(hid_t file, const char *path);
/* The dataset has file space for all of its nbytes (H5Dget_space_status and the storage size):
 * reading unallocated data returns fill values, not what was saved. */
bool ck_storage_ok(hid_t dset, uint64_t nbytes);

/* Digest of the metadata as written (/meta attributes, config.yaml, tokenizer.json, extra, and the
 * root attribute `arenas`), in a canonical order independent of HDF5's storage order. Stored as the
 * /meta attribute CK_ATTR_META_XXH at save; checked by verify and load, with the chat template's
 * own CK_ATTR_CHAT_XXH when the file keeps one. */
#define CK_ATTR_META_XXH "meta_xxh3_64"
uint64_t ck_meta_digest(const accel_ckpt_meta_t *meta, const char *arenas);
/* Check the stored /meta digest against the metadata read: ACCEL_OK, ACCEL_ERR_CORRUPT (mismatch,
 * logs when log), or *absent = true when there is none: ACCEL_OK for a checkpoint written before
 * the digest, ACCEL_ERR_CORRUPT for one whose other markers say it must have one. */
accel_status_t ck_meta_check(hid_t file, const char *path, const accel_ckpt_meta_t *meta, bool log, bool *absent);
/* The chat template (meta->chat_template as read) against CK_ATTR_CHAT_XXH: ACCEL_OK when both are
 * absent or they match, else ACCEL_ERR_CORRUPT (logs when log). Part of ck_meta_check. */
accel_status_t ck_chat_check(hid_t file, const char *path, const accel_ckpt_meta_t *meta, bool log);

/* snprintf that may truncate silently (paths in messages). */
void ck_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Every rank of a save/load must pass the same layout and arena list (names, replicated flags):
 * otherwise the collectives would not match and the job would hang. Returns ACCEL_OK on every rank
 * or ACCEL_ERR_INVALID on every rank (rank 0 logs). */
accel_status_t ck_check_same_call(MPI_Comm comm, const accel_layout_t *layout,
                                  const accel_ckpt_arena_t *arenas, int narenas, const char *what);

/* A piece of one tensor held by this rank: tensor-local elements [b, e), element b at mem. */
typedef struct {
    uint64_t b, e;
    float *mem;
} ck_piece_t;

/* This rank's pieces of every tensor, from the arena's ranges (not replicated), sorted by b.
 * pieces[t] / npieces[t] point into *storage (free it). Ranges that overlap each other within a
 * tensor are refused when `disjoint` (save). Logs and returns ACCEL_ERR_INVALID / NOMEM. */
accel_status_t ck_pieces(const accel_layout_t *layout, const accel_ckpt_arena_t *a, bool disjoint,
                         ck_piece_t **pieces, int *npieces, ck_piece_t **storage);
/* First tensor whose end lies past arena element g (tensors are in increasing offset order). */
int ck_first_tensor_after(const accel_layout_t *layout, uint64_t g);
/* The arena's ranges as a list (the single-range form gives one range, or none when empty). */
int ck_ranges(const accel_ckpt_arena_t *a, accel_ckpt_range_t *one, const accel_ckpt_range_t **out);
/* Number of H5Dwrite/H5Dread calls this rank needs for a tensor's pieces (chunk elements each). */
uint64_t ck_calls(const ck_piece_t *p, int n, uint64_t chunk);
/* The c-th call of a tensor's pieces: [b, e) and the memory of b; false when past the last. */
bool ck_call(const ck_piece_t *p, int n, uint64_t chunk, uint64_t c, uint64_t *b, uint64_t *e, float **mem);

/* Checkpoint file names: step-<digits>.h5 (with tmp: step-<digits>.h5.tmp) -> the step, -1 for any
 * other name. */
long long ck_step_of(const char *name, bool tmp);
/* Steps above `above` that have a step-<N>.h5 file in dir, newest first, into a malloc'ed array
 * (*steps, NULL when none). Returns their count; an unreadable dir has none. */
size_t ck_list_steps(const char *dir, long long above, long long **steps);

/* The datasets anywhere under the group at gpath, as paths relative to it in name order. */
typedef struct {
    char **v;
    int n, cap;
} ck_names_t;
/* ACCEL_ERR_IO when the group cannot be opened or walked (quietly: callers say what it was). */
accel_status_t ck_list_datasets(hid_t file, const char *gpath, ck_names_t *names);
void ck_names_free(ck_names_t *names);

#endif
