/* Checkpoints: one parallel-HDF5 file per save, every tensor of every state arena stored at its
 * full logical shape, written collectively by all ranks (each rank writes only the elements it
 * owns) and readable by any number of ranks with any ownership. Blockwise xxh3 checksums that do
 * not depend on how the writers split the tensors; atomic publication (tmp file, fsync, rename,
 * `latest` pointer). The on-disk format is described in docs/checkpoint-format.md. */
#ifndef ACCEL_CKPT_H
#define ACCEL_CKPT_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "accel/arena.h"
#include "accel/status.h"

#define ACCEL_CKPT_FORMAT_NAME "accel-checkpoint"
#define ACCEL_CKPT_FORMAT_VERSION 1         /* files with a larger version are refused */
#define ACCEL_CKPT_BLOCK_ELEMS 65536        /* checksum block: elements of one tensor, logical order */
#define ACCEL_CKPT_PATH_MAX 4096
#define ACCEL_CKPT_EXTRA_MAX 16
/* Run identity and timeline, kept in /meta/extra (docs/checkpoint-format.md, "Runs and timelines"):
 * run_id: 32 hex digits, random at a fresh start, kept through resume; model_hash: 16 hex digits
 * naming the model's tensor table; ckpt_id: 16 random hex digits of this checkpoint; parent_id:
 * the ckpt_id of the checkpoint this state continues (empty at a fresh start). */
#define ACCEL_CKPT_EXTRA_RUN_ID "run_id"
#define ACCEL_CKPT_EXTRA_MODEL_HASH "model_hash"
#define ACCEL_CKPT_EXTRA_CKPT_ID "ckpt_id"
#define ACCEL_CKPT_EXTRA_PARENT_ID "parent_id"

/* One piece of a rank's share of an arena: arena elements [begin, end), element `begin` stored at
 * data[offset]. Field for field the same as accel_range_t (dist.h: begin, end, owned), so the
 * trainer's owned-vector ranges can be copied over directly. */
typedef struct {
    size_t begin, end, offset;
} accel_ckpt_range_t;

/* One state arena: a flat float buffer laid out by the layout (tensor t at t->offset).
 * name is the HDF5 group the tensors go to: "model", "optim/exp_avg", "optim/exp_avg_sq",
 * "optim/momentum", ... (not "meta" or "checksums", no leading '/').
 * Which elements this rank holds, and where:
 *   replicated = true: every rank holds the whole arena, data[0] is element 0. On save the library
 *     splits each tensor among the ranks; on load every rank reads all of it.
 *   nranges > 0: the rank holds ranges[0..nranges) (ZeRO: one slice per layer, packed into an owned
 *     vector): element g of range k is data[ranges[k].offset + g - ranges[k].begin].
 *   otherwise one range [begin, end): data[0] is element 0 (a full-size buffer), or element `begin`
 *     with shard_buffer (a buffer of end - begin elements).
 * On save the ranges of all ranks must cover every tensor element exactly once (padding between
 * tensors may be left out, a rank may hold nothing); only those elements are read. On load each rank
 * reads its own ranges, any ranges at all; only those elements are written. */
typedef struct {
    const char *name;
    float *data;
    size_t begin, end;
    bool replicated;
    bool shard_buffer;
    const accel_ckpt_range_t *ranges;
    int nranges;
} accel_ckpt_arena_t;

/* A free-form key/value pair: room for state this struct does not name yet. */
typedef struct {
    char key[64];
    char value[192];
} accel_ckpt_extra_t;

/* Training state stored next to the tensors. The caller fills the first part before a save (from
 * rank 0: the library broadcasts it, so every rank need not agree); a load fills all of it.
 * Fields missing in an older file read as zero/empty; attributes this version does not know are
 * ignored, so new fields can be added without a format version change. */
typedef struct {
    int64_t step;                   /* optimizer steps completed */
    int64_t tokens;                 /* tokens (or samples) seen */
    int64_t epoch;                  /* data position: epoch ... */
    int64_t data_offset;            /* ... and global sample offset inside it */
    uint64_t rng_seed;              /* keyed RNG: seed and the counter of draws consumed */
    uint64_t rng_counter;
    double lr;                      /* learning rate of the last step */
    int64_t sched_step;             /* learning-rate schedule position (optimizer steps) */
    double loss_scale;              /* fp16 dynamic loss scale (0: none) */
    int64_t loss_scale_good_steps;  /* steps since the last overflow (growth tracker) */
    int64_t skipped_steps;          /* steps skipped for overflow */
    char strategy[16];              /* dist.strategy at save time: ddp, zero1, ... */
    char precision[16];             /* fp32, bf16, fp16 */
    char *config_yaml;              /* effective configuration (accel_config_to_yaml); save: read
                                       only, may be NULL; load: malloc'ed, see accel_ckpt_meta_free */
    /* The tokenizer the training data was made with (from the dataset; docs/tokenizers.md):
     * name ("" = unknown), xxh64 hash of its tokenizer.json ("" for "bytes") and the JSON bytes
     * themselves (NULL = none kept), so generation and exports decode without the original file.
     * save: read only; load: malloc'ed, see accel_ckpt_meta_free. */
    char tokenizer[64];
    char tokenizer_hash[24];
    char *tokenizer_json;
    size_t tokenizer_json_len;
    /* The chat template the data's conversations were rendered with (the Jinja text, NULL = none;
     * /meta/chat_template), so exports carry it (chat_template.jinja). save: read only; load:
     * malloc'ed, see accel_ckpt_meta_free. */
    char *chat_template;
    size_t chat_template_len;
    int nextra;
    accel_ckpt_extra_t extra[ACCEL_CKPT_EXTRA_MAX];
    /* Filled by the library (ignored on save). */
    int world_size;                 /* ranks that wrote the file */
    int format_version;
    char accel_version[32];
    char created[32];               /* UTC, ISO 8601 */
} accel_ckpt_meta_t;

void accel_ckpt_meta_init(accel_ckpt_meta_t *meta);
/* Frees config_yaml, tokenizer_json and chat_template of a loaded meta (not of one the caller
 * filled). */
void accel_ckpt_meta_free(accel_ckpt_meta_t *meta);
/* Add or replace a key in meta->extra. */
accel_status_t accel_ckpt_meta_set_extra(accel_ckpt_meta_t *meta, const char *key, const char *value);
/* Value of a key in meta->extra, or NULL. */
const char *accel_ckpt_meta_get_extra(const accel_ckpt_meta_t *meta, const char *key);

/* Collective over comm. Writes <dir>/step-<08d step>.h5.tmp with every tensor of every arena,
 * fsyncs it, renames it to step-<08d>.h5, then replaces <dir>/latest (file name inside). keep_last
 * > 0 then removes all but the newest keep_last checkpoints of the same run (meta->extra run_id;
 * never the new one, never another run's, never a higher step of an abandoned timeline). A
 * step-<08d>.h5 of another run is never replaced (ACCEL_ERR_INVALID). dir is created if missing. The arenas are only read. On any error every rank returns the same status, the tmp
 * file is removed and the previous checkpoint and `latest` are untouched. path_out (may be NULL,
 * ACCEL_CKPT_PATH_MAX bytes) receives the published file. */
accel_status_t accel_ckpt_save(MPI_Comm comm, const char *dir, const accel_layout_t *layout,
                               const accel_ckpt_arena_t *arenas, int narenas,
                               const accel_ckpt_meta_t *meta, int keep_last, char *path_out);

/* Collective over comm. Validates the file (HDF5, format name and version, every tensor of every
 * requested arena present with the layout's shape, checksum tables) before writing any caller
 * buffer; then reads each rank's elements and verifies every checksum block it touched. On a
 * format, version, missing-tensor or shape error the buffers are untouched. On a checksum or read
 * error found while reading (ACCEL_ERR_CORRUPT, ACCEL_ERR_IO) the requested ranges are undefined
 * and the caller must not train on them. meta may be NULL. Every rank returns the same status. */
accel_status_t accel_ckpt_load(MPI_Comm comm, const char *path, const accel_layout_t *layout,
                               const accel_ckpt_arena_t *arenas, int narenas,
                               accel_ckpt_meta_t *meta);

/* Newest complete checkpoint in dir: the file `latest` names (or a higher step-*.h5 that continues
 * it: its parent_id is the ckpt_id of latest's file, as after a crash between the rename and the
 * `latest` update; a higher file of an abandoned timeline is never chosen), checked to be an accel
 * checkpoint that was closed completely; otherwise the highest step-*.h5 passing that check. ACCEL_ERR_NOT_FOUND when there is none. Local (no MPI): call it on one rank and broadcast,
 * or on every rank of a shared file system. path_out: ACCEL_CKPT_PATH_MAX bytes. */
accel_status_t accel_ckpt_find_latest(const char *dir, char *path_out);

/* Read only the metadata of a checkpoint (local, no MPI). meta: free with accel_ckpt_meta_free. */
accel_status_t accel_ckpt_read_meta(const char *path, accel_ckpt_meta_t *meta);

/* Verify a whole file (local, no MPI, streams block by block): format, completeness, every
 * tensor against its checksum table. Problems are printed to `report` (may be NULL), naming the
 * tensor and block; verbose also prints one line per good tensor. *nproblems (may be NULL)
 * receives their count. ACCEL_OK when the file is sound, ACCEL_ERR_CORRUPT (or the open error)
 * otherwise. */
accel_status_t accel_ckpt_verify(const char *path, FILE *report, bool verbose, int *nproblems);
/* The same, and every tensor of the model's layout (its names and shapes, e.g. built from the stored
 * configuration) must be present in every state with that shape; tensors the layout lacks are
 * problems too. layout NULL: accel_ckpt_verify. */
accel_status_t accel_ckpt_verify_layout(const char *path, const accel_layout_t *layout, FILE *report,
                                        bool verbose, int *nproblems);

/* ------------------------------------------------------------------ reading one file
 * Read-only access to one checkpoint, or to weights exported from one (accel_ckpt export
 * --format hdf5: tensors at the root), for tools and inference: local (no MPI), serial HDF5
 * without file locks. Callers name states ("model", "optim/exp_avg"; "" is the root group) and
 * tensors; the layout of the file stays the library's business. Nothing is checked against
 * checksums here (accel_ckpt_verify does that). */
typedef struct accel_ckpt_file accel_ckpt_file_t;

#define ACCEL_CKPT_NAME_MAX 256
#define ACCEL_CKPT_MAX_RANK 32

typedef struct {
    char name[ACCEL_CKPT_NAME_MAX];     /* relative to its state ("h.0.attn.qkv.weight") */
    int ndim;                           /* 0: scalar */
    uint64_t dims[ACCEL_CKPT_MAX_RANK];
    uint64_t numel;
    char dtype[8];                      /* fp32, fp64, bf16, int64, uint64, int32, uint32, integer,
                                           string, float, other; unalloc: data never
                                           written; toobig: size overflows (neither readable) */
    bool fp32;                          /* stored as 4-byte floats */
    bool readable;                      /* accel_ckpt_file_read can give it as fp32: any float type,
                                           or bf16 bits (uint16 with attribute dtype="bf16") */
    uint64_t bytes;                     /* storage allocated in the file */
    int64_t offset;                     /* file offset of contiguous data, -1 when there is none */
} accel_ckpt_tensor_info_t;

/* Open path for reading. Not logged: on failure err (may be NULL) receives one line ("<path>: No
 * such file or directory", "<path> is not an HDF5 file", "cannot open <path> (truncated or
 * damaged?)") and the status says which (ACCEL_ERR_NOT_FOUND / IO, ACCEL_ERR_CORRUPT). */
accel_status_t accel_ckpt_file_open(const char *path, accel_ckpt_file_t **out, char *err, size_t errlen);
void accel_ckpt_file_close(accel_ckpt_file_t *f);
/* Reads of a checkpoint's states are checked against its block checksums and /meta checksum (a
 * damaged tensor reads as ACCEL_ERR_CORRUPT, logged). checked = false turns that off for this
 * handle: for comparing a damaged file with a good one (accel_ckpt diff), never for using it. */
void accel_ckpt_file_set_checked(accel_ckpt_file_t *f, bool checked);

/* Whether the file says it is an accel checkpoint (format name), its format version (0 when not
 * one) and whether its save completed. Any pointer may be NULL. */
void accel_ckpt_file_format(const accel_ckpt_file_t *f, bool *checkpoint, int *version, bool *complete);

/* The states the file holds, in stored order: its list of arenas, or "model" for a file without
 * one that has a /model group. Returns their count; names live until close. */
int accel_ckpt_file_states(const accel_ckpt_file_t *f, const char *const **names);

/* Whether a state group exists ("" is the root). */
bool accel_ckpt_file_has_state(const accel_ckpt_file_t *f, const char *state);

/* Every dataset under a state, sorted by name (names relative to the state, nested ones with
 * '/'). *infos is malloc'ed (free it); ACCEL_ERR_NOT_FOUND when the state is missing. */
accel_status_t accel_ckpt_file_list(accel_ckpt_file_t *f, const char *state,
                                    accel_ckpt_tensor_info_t **infos, int *n);

/* The bookkeeping datasets (checksum tables, then metadata), names relative to the root
 * ("checksums/model/w", "meta/config.yaml"). *infos is malloc'ed (free it). */
accel_status_t accel_ckpt_file_list_bookkeeping(accel_ckpt_file_t *f, accel_ckpt_tensor_info_t **infos,
                                                int *n);

/* One dataset's description; ACCEL_ERR_NOT_FOUND when there is no dataset state/name. */
accel_status_t accel_ckpt_file_tensor(accel_ckpt_file_t *f, const char *state, const char *name,
                                      accel_ckpt_tensor_info_t *info);

/* Flat elements [begin, end) (row-major) of state/name as fp32, for tensors of 1 to
 * ACCEL_TENSOR_MAX_DIMS dimensions that are `readable`. Not logged (callers say which tensor of
 * what failed): ACCEL_ERR_NOT_FOUND, ACCEL_ERR_INVALID (not readable, bad range) or ACCEL_ERR_IO
 * (HDF5 cannot read it: a damaged file). Reading one tensor in pieces keeps it open between calls. */
accel_status_t accel_ckpt_file_read(accel_ckpt_file_t *f, const char *state, const char *name,
                                    uint64_t begin, uint64_t end, float *buf);

/* The stored configuration (YAML, malloc'ed: free it), or NULL when the file holds none. */
accel_status_t accel_ckpt_file_config(accel_ckpt_file_t *f, char **yaml);

/* Export a state's tensors as weights for inference (the file accel_weights_open reads), with
 * the file's configuration and tokenizer in /meta (accel_ckpt_weights_write): one
 * dataset per tensor at /<name>, fp32, or bf16 (a 16-bit HDF5 float type, rounded to nearest
 * even) with attribute dtype = "fp32" / "bf16". Streams, and publishes output atomically
 * (output.tmp, fsync, rename). Every tensor must be readable with 1 to ACCEL_TENSOR_MAX_DIMS
 * dimensions. Logged. *ntensors (may be NULL) receives the count written. */
accel_status_t accel_ckpt_file_export_hdf5(accel_ckpt_file_t *f, const char *state, const char *output,
                                           bool bf16, int *ntensors);

/* The tokenizer a file carries (/meta/tokenizer.json: the tokenizer.json bytes; attributes
 * `tokenizer` and `tokenizer_hash` on /meta). *json is malloc'ed and NUL-terminated (*len bytes
 * without it); name and hash (may be NULL) receive the attributes or "". ACCEL_ERR_NOT_FOUND when
 * the file has none. */
accel_status_t accel_ckpt_file_tokenizer(accel_ckpt_file_t *f, char **json, size_t *len, char *name,
                                         size_t namelen, char *hash, size_t hashlen);
/* The chat template a file carries (/meta/chat_template: the Jinja text, 1-D uint8): *text
 * malloc'ed and NUL-terminated (*len bytes without it). ACCEL_ERR_NOT_FOUND when the file has
 * none; ACCEL_ERR_INVALID when it is there but not a byte array within the limit. */
accel_status_t accel_ckpt_file_chat_template(accel_ckpt_file_t *f, char **text, size_t *len);

/* ------------------------------------------------------------------ writing weights files
 * A weights file (the one accel_ckpt export --format hdf5 and accel_ckpt import write, and
 * accel_weights_open reads): one dataset per tensor at /<name> (fp32, or a bf16 float type with
 * attribute dtype), and /meta/config.yaml (the configuration, as a checkpoint stores it),
 * /meta/tokenizer.json and /meta/chat_template when given. */
typedef struct {
    const char *name;
    int ndim;
    uint64_t dims[ACCEL_TENSOR_MAX_DIMS];
} accel_ckpt_wtensor_t;

typedef struct {
    const char *config_yaml;        /* may be NULL */
    const void *tokenizer;          /* tokenizer.json bytes, may be NULL */
    size_t tokenizer_len;
    const char *tokenizer_name;     /* may be NULL */
    const char *tokenizer_hash;     /* NULL: computed (XXH64 of the bytes, 16 hex digits) */
    const char *chat_template;      /* the chat template's text, may be NULL */
    size_t chat_template_len;
    const char *source;             /* where the weights came from (attribute on /meta), may be NULL */
} accel_ckpt_weights_meta_t;

/* Gives elements [begin, end) of tensor `index` as fp32 into dst (logs what it cannot read). */
typedef accel_status_t (*accel_ckpt_fill_fn)(void *ctx, int index, uint64_t begin, uint64_t end, float *dst);

/* A fill source reading a file's tensors: ctx is an accel_ckpt_file_source_t, index into ts. */
typedef struct {
    accel_ckpt_file_t *f;
    const char *state;
    const accel_ckpt_tensor_info_t *ts;
} accel_ckpt_file_source_t;
accel_status_t accel_ckpt_file_fill(void *ctx, int index, uint64_t begin, uint64_t end, float *dst);

/* Streams the tensors from fill and publishes output atomically (output.tmp, fsync, rename).
 * Logged. meta may be NULL. */
accel_status_t accel_ckpt_weights_write(const char *output, const accel_ckpt_wtensor_t *tensors, int n,
                                        accel_ckpt_fill_fn fill, void *ctx, bool bf16,
                                        const accel_ckpt_weights_meta_t *meta);

/* Low level: split the flat range [begin, end) of a row-major tensor of the given shape into at most
 * 2*ndim-1 rectangles (start[d], count[d]), in flat order, that together hold each element of the
 * range exactly once. Returns the number of boxes (0 for an empty range). */
#define ACCEL_CKPT_MAX_BOXES (2 * ACCEL_TENSOR_MAX_DIMS - 1)
typedef struct {
    uint64_t start[ACCEL_TENSOR_MAX_DIMS], count[ACCEL_TENSOR_MAX_DIMS];
} accel_ckpt_box_t;
int accel_ckpt_decompose(int ndim, const int64_t *shape, uint64_t begin, uint64_t end,
                         accel_ckpt_box_t *boxes);

/* Low level: checksum of one block of little-endian fp32 values (XXH3-64, seed 0), and the tensor
 * checksum derived from its block checksums (XXH3-64 of the little-endian uint64 array). */
uint64_t accel_ckpt_hash_block(const float *values, size_t n);
uint64_t accel_ckpt_hash_tensor(const uint64_t *block_hashes, size_t nblocks);

#endif
