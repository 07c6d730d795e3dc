/* accel_ckpt: inspect, verify, compare and export accel checkpoints (plain HDF5 files).
 *   accel_ckpt ls FILE | info FILE | verify FILE | diff A B | export FILE --format ...
 * Runs as one process without MPI; every command streams tensors in chunks, so memory stays far
 * below the model size. It reads files only through the checkpoint library (accel_ckpt_file_*),
 * which alone knows their layout: no HDF5 call here. */
#include "build_config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"
#include "outcheck.h"

#define CHUNK_ELEMS (1u << 20)     /* elements per streamed read: 4 MiB of fp32 */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: accel_ckpt <command> [options]\n"
            "\n"
            "Inspect accel checkpoints (one HDF5 file per save; h5ls/h5dump/h5py read them too).\n"
            "\n"
            "commands:\n"
            "  ls FILE [-a]             tensors: shape, dtype, bytes, file offset (-a: also checksum\n"
            "                           tables and metadata)\n"
            "  info FILE                metadata: step, tokens, data position, world size, strategy,\n"
            "                           precision, RNG, schedule, loss scale, and the configuration\n"
            "  verify FILE [-v]         every tensor against its checksums, and completeness; exit\n"
            "                           status non-zero on any problem, naming tensor and block\n"
            "  diff A B [--atol X]      per tensor max |a-b| and max relative difference; exit 0 when\n"
            "                           all differences are <= X (default 0), 1 otherwise, 2 on errors\n"
            "  export FILE --format safetensors|hdf5|hf [--dtype fp32|bf16] [--output OUT] [--group G]\n"
            "         [--force]\n"
            "                           the consolidated model weights (group G, default 'model') as one\n"
            "                           safetensors or plain HDF5 file, or a Hugging Face directory (hf),\n"
            "                           with the model configuration (default OUT: FILE with the\n"
            "                           extension .safetensors, .model.h5 or .hf)\n"
            "  import DIR|FILE|ADAPTER_DIR -o OUT [--base DIR] [--force]\n"
            "                           a Hugging Face model (GPT-2 and the Llama family: Llama, Mistral,\n"
            "                           Qwen, Phi-3, OLMo, SmolLM3, Granite, Gemma, gpt-oss, Seed-OSS,\n"
            "                           GLM, EXAONE 3.5, EXAONE 4, DeepSeek-V2/V3, ERNIE 4.5, HunYuan,\n"
            "                           HunYuan-MoE, MiniMax-M2, CWM, VaultGemma, Granite SWA, HyperCLOVA X,\n"
            "                           K-EXAONE, Youtu-LLM, Mellum, Solar Open, Helium, Ministral,\n"
            "                           InternLM3, IQuest-Coder, StarCoder2, Nemotron, Jais 2, Arcee,\n"
            "                           Apertus, StableLM, GPT-NeoX (Pythia), Cohere, Cohere 2, Phi-2,\n"
            "                           GPT-J, Qwen3.5, Qwen3-Next, LFM2, LFM2-MoE, LFM3, Granite 4.0-H,\n"
            "                           Bamba, Nemotron-H (Nemotron Nano 2, Nemotron 3 Nano and Super),\n"
            "                           Mamba, Falcon Mamba, Jamba, OLMo Hybrid, FlexOlmo, Llama 4, the\n"
            "                           Qwen VLs', GLM-4.xV's, Llama 4's, EXAONE 4.5's, Granite Vision 4's,\n"
            "                           SmolVLM's, Idefics3's, Granite-Docling's, Kimi K2.5's and GLM-OCR's\n"
            "                           language models, their mixtures of experts; config.json +\n"
            "                           safetensors;\n"
            "                           FP8, MXFP4 and compressed-tensors INT4/INT8, FP8 and NVFP4\n"
            "                           weights dequantized)\n"
            "                           as accel weights with their configuration (docs/huggingface.md\n"
            "                           lists the architectures), or a PEFT LoRA adapter merged into\n"
            "                           its base (--base DIR, else the one adapter_config.json names)\n"
            "  export and import replace an existing OUT only when it is of the kind they write\n"
            "  (safetensors, HDF5 weights, an hf directory); --force replaces another kind, except an\n"
            "  accel checkpoint, which they never overwrite\n"
            "  latest DIR               the newest complete checkpoint in DIR\n"
            "\n"
            "options:\n"
            "  -h, --help               this help\n"
            "  -V, --version            print the version\n");
}

/* ------------------------------------------------------------------ helpers */

static accel_ckpt_file_t *open_file(const char *path)
{
    accel_ckpt_file_t *f = NULL;
    char err[ACCEL_CKPT_PATH_MAX + 64] = "";
    accel_status_t st = accel_ckpt_file_open(path, &f, err, sizeof err);
    if (st != ACCEL_OK) fprintf(stderr, "accel_ckpt: %s\n", err[0] ? err : accel_status_str(st));
    return f;
}

static void shape_str(char *buf, size_t len, const accel_ckpt_tensor_info_t *t)
{
    if (t->ndim == 0) {
        snprintf(buf, len, "scalar");
        return;
    }
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < t->ndim && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", d ? ", " : "", (unsigned long long)t->dims[d]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

static int cmp_info(const void *a, const void *b)
{
    return strcmp(((const accel_ckpt_tensor_info_t *)a)->name, ((const accel_ckpt_tensor_info_t *)b)->name);
}

static const accel_ckpt_tensor_info_t *find_info(const accel_ckpt_tensor_info_t *v, int n, const char *name)
{
    accel_ckpt_tensor_info_t key;
    snprintf(key.name, sizeof key.name, "%s", name);
    return n ? bsearch(&key, v, (size_t)n, sizeof *v, cmp_info) : NULL;
}

/* The states of a file; a weights file (export, import) without a /model group has one: its
 * root (""). */
static int file_states(accel_ckpt_file_t *f, const char *const **names)
{
    static const char *const root[] = { "" };
    int n = accel_ckpt_file_states(f, names);
    accel_ckpt_tensor_info_t *ts = NULL;
    int nt = 0;
    if (!n && accel_ckpt_file_list(f, "", &ts, &nt) == ACCEL_OK && nt) {
        *names = root;
        n = 1;
    }
    free(ts);
    return n;
}

/* ------------------------------------------------------------------ ls */

/* One line per dataset; state NULL: the bookkeeping datasets (names already relative to the root). */
static int ls_state(accel_ckpt_file_t *f, const char *state, unsigned long long *total, int *count)
{
    accel_ckpt_tensor_info_t *ts;
    int n;
    accel_status_t st = state ? accel_ckpt_file_list(f, state, &ts, &n) : accel_ckpt_file_list_bookkeeping(f, &ts, &n);
    if (st != ACCEL_OK) return -1;
    for (int i = 0; i < n; i++) {
        char name[2 * ACCEL_CKPT_NAME_MAX + 2], shape[128], offs[32] = "-";
        snprintf(name, sizeof name, "%s%s%s", state ? state : "", state ? "/" : "", ts[i].name);
        shape_str(shape, sizeof shape, &ts[i]);
        if (ts[i].offset >= 0) snprintf(offs, sizeof offs, "%llu", (unsigned long long)ts[i].offset);
        printf("%-48s %-22s %-6s %14llu %14s\n", name, shape, ts[i].dtype, (unsigned long long)ts[i].bytes, offs);
        *total += ts[i].bytes;
        (*count)++;
    }
    free(ts);
    return 0;
}

static int cmd_ls(int argc, char **argv)
{
    const char *path = NULL;
    bool all = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-a") || !strcmp(argv[i], "--all")) all = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel_ckpt ls FILE [-a]\n  One line per tensor: name, shape, dtype, bytes, file "
                   "offset of the data\n  (for dd/hexdump). -a adds the checksum tables and metadata.\n");
            return 0;
        } else if (!path) path = argv[i];
        else { fprintf(stderr, "accel_ckpt ls: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!path) { fprintf(stderr, "usage: accel_ckpt ls FILE [-a]\n"); return 2; }
    accel_ckpt_file_t *f = open_file(path);
    if (!f) return 2;
    const char *const *states;
    int nstates = file_states(f, &states);
    if (!nstates) {
        fprintf(stderr, "accel_ckpt: %s holds no checkpoint state (no 'arenas' attribute, no /model)\n", path);
        accel_ckpt_file_close(f);
        return 2;
    }
    printf("%-48s %-22s %-6s %14s %14s\n", "# tensor", "shape", "dtype", "bytes", "offset");
    unsigned long long total = 0;
    int count = 0, rc = 0;
    for (int i = 0; i < nstates; i++)
        if (ls_state(f, states[i], &total, &count) < 0) {
            fprintf(stderr, "accel_ckpt: %s: state '%s' is missing\n", path, states[i]);
            rc = 1;
        }
    printf("# %d tensors, %llu bytes (%.3f GB) of state\n", count, total, total / 1e9);
    if (all) {
        unsigned long long extra = 0;
        int n2 = 0;
        ls_state(f, NULL, &extra, &n2);
        printf("# %d checksum/metadata datasets, %llu bytes\n", n2, extra);
    }
    accel_ckpt_file_close(f);
    return rc;
}

/* ------------------------------------------------------------------ info */

static void print_indented(const char *text)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        printf("  %.*s\n", n, p);
        p += n + (nl ? 1 : 0);
    }
}

/* A weights file (export, import): no training state, but tensors, configuration, tokenizer. */
static int info_weights(accel_ckpt_file_t *f, const char *path)
{
    const char *state = accel_ckpt_file_has_state(f, "model") ? "model" : "";
    accel_ckpt_tensor_info_t *ts = NULL;
    int n = 0;
    accel_ckpt_file_list(f, state, &ts, &n);
    uint64_t numel = 0;
    for (int i = 0; i < n; i++) numel += ts[i].numel;
    printf("file:            %s\n", path);
    printf("format:          accel weights file (an export or import: no training state)\n");
    printf("tensors:         %d (%llu parameters)%s\n", n, (unsigned long long)numel, n ? "" : " -- none");
    char *tok = NULL, name[128] = "", hash[128] = "";
    size_t toklen = 0;
    if (accel_ckpt_file_tokenizer(f, &tok, &toklen, name, sizeof name, hash, sizeof hash) == ACCEL_OK)
        printf("tokenizer:       %s (%zu bytes of tokenizer.json%s%s)\n", name[0] ? name : "-", toklen,
               hash[0] ? ", hash " : "", hash);
    else
        printf("tokenizer:       (none stored)\n");
    char *chat = NULL;
    size_t chatlen = 0;
    if (accel_ckpt_file_chat_template(f, &chat, &chatlen) == ACCEL_OK)
        printf("chat template:   kept (%zu bytes, /meta/chat_template)\n", chatlen);
    else
        printf("chat template:   (none stored)\n");
    free(chat);
    char *yaml = NULL;
    accel_ckpt_file_config(f, &yaml);
    printf("configuration:\n");
    if (yaml && *yaml) print_indented(yaml);
    else printf("  (none stored)\n");
    free(yaml);
    free(tok);
    free(ts);
    return 0;
}

static int cmd_info(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        printf("usage: accel_ckpt info FILE\n  The checkpoint's metadata and stored configuration.\n");
        return argc == 2 ? 0 : 2;
    }
    const char *path = argv[1];
    accel_ckpt_file_t *wf = open_file(path);
    if (!wf) return 2;
    bool is_ckpt = false;
    accel_ckpt_file_format(wf, &is_ckpt, NULL, NULL);
    if (!is_ckpt) {
        int rc = info_weights(wf, path);
        accel_ckpt_file_close(wf);
        return rc;
    }
    accel_ckpt_file_close(wf);
    accel_ckpt_meta_t m;
    accel_status_t st = accel_ckpt_read_meta(path, &m);
    if (st != ACCEL_OK) return accel_status_exit_code(st);
    accel_ckpt_file_t *f = open_file(path);
    const char *const *states = NULL;
    int nstates = f ? accel_ckpt_file_states(f, &states) : 0;
    bool complete = false;
    if (f) accel_ckpt_file_format(f, NULL, NULL, &complete);
    printf("file:            %s\n", path);
    printf("format:          %s version %d%s\n", ACCEL_CKPT_FORMAT_NAME, m.format_version,
           complete ? "" : " (INCOMPLETE: the save did not finish)");
    printf("written by:      accel %s, %d rank%s, %s\n", m.accel_version, m.world_size,
           m.world_size == 1 ? "" : "s", m.created);
    printf("strategy:        %s\n", m.strategy[0] ? m.strategy : "-");
    printf("precision:       %s\n", m.precision[0] ? m.precision : "-");
    printf("step:            %lld\n", (long long)m.step);
    printf("tokens seen:     %lld\n", (long long)m.tokens);
    printf("data position:   epoch %lld, offset %lld\n", (long long)m.epoch, (long long)m.data_offset);
    printf("rng:             seed %llu, counter %llu\n", (unsigned long long)m.rng_seed,
           (unsigned long long)m.rng_counter);
    printf("lr schedule:     step %lld, lr %.6g\n", (long long)m.sched_step, m.lr);
    printf("loss scale:      %.6g (good steps %lld, skipped steps %lld)\n", m.loss_scale,
           (long long)m.loss_scale_good_steps, (long long)m.skipped_steps);
    printf("state:          ");
    for (int i = 0; i < nstates; i++) {
        accel_ckpt_tensor_info_t *ts = NULL;
        int n = 0;
        accel_ckpt_file_list(f, states[i], &ts, &n);
        printf(" %s (%d tensors)%s", states[i], n, i + 1 < nstates ? "," : "");
        free(ts);
    }
    printf("\n");
    for (int i = 0; i < m.nextra; i++) printf("extra:           %s = %s\n", m.extra[i].key, m.extra[i].value);
    if (m.tokenizer[0])
        printf("tokenizer:       %s%s%s (%s)\n", m.tokenizer, m.tokenizer_hash[0] ? ", hash " : "",
               m.tokenizer_hash, m.tokenizer_json ? "tokenizer.json kept" : "no tokenizer.json kept");
    else
        printf("tokenizer:       (not recorded)\n");
    if (m.chat_template)
        printf("chat template:   kept (%zu bytes, /meta/chat_template)\n", m.chat_template_len);
    else
        printf("chat template:   (none kept)\n");
    printf("configuration:\n");
    if (m.config_yaml && m.config_yaml[0]) {
        print_indented(m.config_yaml);
    } else {
        printf("  (none stored)\n");
    }
    accel_ckpt_file_close(f);
    accel_ckpt_meta_free(&m);
    return 0;
}

/* ------------------------------------------------------------------ verify */

static int cmd_verify(int argc, char **argv)
{
    const char *path = NULL;
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) verbose = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel_ckpt verify FILE [-v]\n  Reads every tensor and checks each block of %d "
                   "elements against the stored\n  xxh3 checksums; checks the format, version and that "
                   "the save completed.\n  Exit 0 when sound, non-zero otherwise (BAD lines name tensor "
                   "and block).\n  -v prints one line per good tensor too.\n", ACCEL_CKPT_BLOCK_ELEMS);
            return 0;
        } else if (!path) path = argv[i];
        else { fprintf(stderr, "accel_ckpt verify: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!path) { fprintf(stderr, "usage: accel_ckpt verify FILE [-v]\n"); return 2; }
    /* The tensors and shapes the file must hold come from its stored model configuration, so a
     * tensor reshaped, replaced or deleted together with its checksum table is found too. */
    accel_model_t model;
    accel_layout_t lora;
    bool have_model = false, have_lora = false, lora_config = false;
    accel_ckpt_file_t *f = NULL;
    char err[2048] = "", *yaml = NULL;
    /* Quiet open: an unreadable file is reported once, by the verification below. */
    if (accel_ckpt_file_open(path, &f, err, sizeof err) == ACCEL_OK && accel_ckpt_file_config(f, &yaml) == ACCEL_OK &&
        yaml && yaml[0]) {
        accel_config_t cfg;
        err[0] = '\0';
        if (accel_config_from_yaml(&cfg, yaml, path, err, sizeof err) == ACCEL_OK &&
            accel_model_create(&cfg, &model) == ACCEL_OK)
            have_model = true;
        else
            fprintf(stderr, "accel_ckpt verify: the stored configuration of %s does not give a model (%s): "
                    "tensor names and shapes are not checked\n", path, err[0] ? err : "model creation failed");
        /* A LoRA fine-tune's checkpoint holds its adapters, not the model. */
        if (have_model && cfg.lora.rank > 0) {
            lora_config = true;
            accel_layout_init(&lora);
            have_lora = accel_hf_lora_layout(&cfg, &model.layout, &lora, err, sizeof err) == ACCEL_OK;
            if (!have_lora)
                fprintf(stderr, "accel_ckpt verify: the stored LoRA configuration of %s does not give the adapters "
                        "(%s): tensor names and shapes are not checked\n", path, err);
        }
    }
    free(yaml);
    accel_ckpt_file_close(f);
    int problems = 0;
    const accel_layout_t *want = have_lora ? &lora : have_model && !lora_config ? &model.layout : NULL;
    accel_status_t st = accel_ckpt_verify_layout(path, want, stdout, verbose, &problems);
    if (have_lora) accel_layout_free(&lora);
    if (have_model) accel_model_destroy(&model);
    return accel_status_exit_code(st);
}

/* ------------------------------------------------------------------ diff */

/* Max |a-b| and max relative difference of one fp32 tensor in both files; <0 on a read error. */
static int diff_tensor(accel_ckpt_file_t *fa, accel_ckpt_file_t *fb, const char *state, const char *name,
                       uint64_t numel, float *x, float *y, double *mabs, double *mrel, bool *nan_mismatch)
{
    *mabs = *mrel = 0;
    *nan_mismatch = false;
    for (uint64_t b = 0; b < numel; b += CHUNK_ELEMS) {
        uint64_t e = b + CHUNK_ELEMS < numel ? b + CHUNK_ELEMS : numel;
        if (accel_ckpt_file_read(fa, state, name, b, e, x) != ACCEL_OK ||
            accel_ckpt_file_read(fb, state, name, b, e, y) != ACCEL_OK)
            return -1;
        for (uint64_t q = 0; q < e - b; q++) {
            double u = x[q], v = y[q];
            if (isnan(u) || isnan(v)) {
                if (isnan(u) != isnan(v)) *nan_mismatch = true;
                continue;
            }
            double dd = fabs(u - v), den = fmax(fabs(u), fabs(v));
            if (dd > *mabs) *mabs = dd;
            if (den > 0 && dd / den > *mrel) *mrel = dd / den;
        }
    }
    return 0;
}

static int cmd_diff(int argc, char **argv)
{
    const char *pa = NULL, *pb = NULL;
    double atol = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--atol") && i + 1 < argc) atol = atof(argv[++i]);
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel_ckpt diff A B [--atol X]\n  For every tensor of every state: max |a-b| and "
                   "max |a-b|/max(|a|,|b|).\n  Exit 0 when every difference is <= X (default 0: "
                   "identical), 1 when not\n  (or tensors/shapes differ), 2 on errors.\n");
            return 0;
        } else if (!pa) pa = argv[i];
        else if (!pb) pb = argv[i];
        else { fprintf(stderr, "accel_ckpt diff: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!pa || !pb) { fprintf(stderr, "usage: accel_ckpt diff A B [--atol X]\n"); return 2; }
    accel_ckpt_file_t *fa = open_file(pa), *fb = fa ? open_file(pb) : NULL;
    /* diff compares bytes, also of a damaged file (verify says which blocks are bad) */
    accel_ckpt_file_set_checked(fa, false);
    accel_ckpt_file_set_checked(fb, false);
    if (!fa || !fb) {
        accel_ckpt_file_close(fa);
        return 2;
    }
    const char *const *sa, *const *sb;
    int nsa = file_states(fa, &sa), nsb = file_states(fb, &sb);
    float *x = malloc(sizeof(float) * CHUNK_ELEMS), *y = malloc(sizeof(float) * CHUNK_ELEMS);
    int rc = 0, ndiff = 0, ntensors = 0;
    double worst_abs = 0, worst_rel = 0;
    if (!x || !y) { fprintf(stderr, "accel_ckpt: out of memory\n"); rc = 2; goto out; }
    for (int i = 0; i < nsb; i++) {
        bool found = false;
        for (int j = 0; j < nsa; j++) found |= !strcmp(sa[j], sb[i]);
        if (!found) { printf("only in B: state %s\n", sb[i]); ndiff++; }
    }
    printf("%-48s %14s %14s\n", "# tensor", "max_abs", "max_rel");
    for (int i = 0; i < nsa && rc != 2; i++) {
        const char *state = sa[i];
        accel_ckpt_tensor_info_t *na = NULL, *nb = NULL;
        int nna = 0, nnb = 0;
        accel_ckpt_file_list(fa, state, &na, &nna);
        if (accel_ckpt_file_has_state(fb, state)) accel_ckpt_file_list(fb, state, &nb, &nnb);
        else { printf("only in A: state %s\n", state); ndiff++; }
        for (int k = 0; k < nnb; k++)
            if (!find_info(na, nna, nb[k].name)) {
                printf("only in B: %s/%s\n", state, nb[k].name);
                ndiff++;
            }
        for (int k = 0; k < nna && nnb; k++) {
            char path[2 * ACCEL_CKPT_NAME_MAX + 2];
            snprintf(path, sizeof path, "%s/%s", state, na[k].name);
            const accel_ckpt_tensor_info_t *ta = &na[k], *tb = find_info(nb, nnb, na[k].name);
            if (!tb) {
                printf("only in A: %s\n", path);
                ndiff++;
                continue;
            }
            bool same_shape = ta->ndim == tb->ndim;
            for (int d = 0; same_shape && d < ta->ndim; d++) same_shape = ta->dims[d] == tb->dims[d];
            if (!ta->fp32 || !tb->fp32 || ta->ndim > ACCEL_TENSOR_MAX_DIMS) {
                printf("%-48s cannot be compared (not an fp32 tensor of 1..4 dims)\n", path);
                ndiff++;
            } else if (!same_shape) {
                char s1[128], s2[128];
                shape_str(s1, sizeof s1, ta);
                shape_str(s2, sizeof s2, tb);
                printf("%-48s shapes differ: %s vs %s\n", path, s1, s2);
                ndiff++;
            } else {
                double mabs, mrel;
                bool nan_mismatch;
                if (diff_tensor(fa, fb, state, ta->name, ta->numel, x, y, &mabs, &mrel, &nan_mismatch) < 0) {
                    fprintf(stderr, "accel_ckpt: cannot read %s (damaged file?)\n", path);
                    rc = 2;
                    break;
                }
                ntensors++;
                if (nan_mismatch) mabs = mrel = INFINITY;
                printf("%-48s %14.6g %14.6g%s\n", path, mabs, mrel, nan_mismatch ? "  (NaN in one only)" : "");
                if (mabs > worst_abs) worst_abs = mabs;
                if (mrel > worst_rel) worst_rel = mrel;
                if (mabs > atol) ndiff++;
            }
        }
        free(na);
        free(nb);
    }
    if (rc != 2) {
        printf("# %d tensors compared, max_abs %.6g, max_rel %.6g: %s\n", ntensors, worst_abs, worst_rel,
               ndiff ? "DIFFERENT" : "same");
        rc = ndiff ? 1 : 0;
    }
out:
    free(x);
    free(y);
    accel_ckpt_file_close(fa);
    accel_ckpt_file_close(fb);
    return rc;
}

/* ------------------------------------------------------------------ export */

static accel_status_t get_tensor(void *ctx, const char *name, uint64_t numel, float *dst)
{
    accel_ckpt_file_source_t *s = ctx;
    accel_ckpt_tensor_info_t in;
    if (accel_ckpt_file_tensor(s->f, s->state, name, &in) != ACCEL_OK) {
        fprintf(stderr, "accel_ckpt export: the file has no tensor %s%s%s, which the configuration's model "
                "has\n--> hint: the stored configuration does not describe these weights\n", s->state,
                *s->state ? "/" : "", name);
        return ACCEL_ERR_NOT_FOUND;
    }
    if (in.numel != numel) {
        fprintf(stderr, "accel_ckpt export: tensor %s has %llu elements, the configuration's model %llu\n", name,
                (unsigned long long)in.numel, (unsigned long long)numel);
        return ACCEL_ERR_SHAPE;
    }
    return accel_ckpt_file_read(s->f, s->state, name, 0, numel, dst);
}

/* safetensors with the configuration in __metadata__ (accel_config), so accel_generate and
 * train.init_from need nothing else. */
static int write_safetensors(accel_ckpt_file_t *f, const char *path, const char *group,
                             const accel_ckpt_tensor_info_t *ts, int n, bool bf16, const char *output)
{
    accel_st_entry_t *e = calloc((size_t)n, sizeof *e);
    if (!e) return 2;
    for (int i = 0; i < n; i++) {
        e[i].name = ts[i].name;
        e[i].dtype = bf16 ? ACCEL_ST_BF16 : ACCEL_ST_F32;
        e[i].ndim = ts[i].ndim;
        for (int d = 0; d < ts[i].ndim; d++) e[i].dims[d] = ts[i].dims[d];
    }
    char *yaml = NULL, source[64], step[32] = "";
    accel_ckpt_file_config(f, &yaml);
    accel_ckpt_meta_t m;
    bool checkpoint = false;
    accel_ckpt_file_format(f, &checkpoint, NULL, NULL);
    if (checkpoint && accel_ckpt_read_meta(path, &m) == ACCEL_OK) {
        snprintf(step, sizeof step, "%lld", (long long)m.step);
        accel_ckpt_meta_free(&m);
    }
    snprintf(source, sizeof source, "accel %s", accel_version());
    /* The tokenizer travels too (safetensors metadata are strings; tokenizer.json is UTF-8). */
    char *tok = NULL, *chat = NULL, tname[64] = "";
    size_t toklen = 0, chatlen = 0;
    accel_ckpt_file_tokenizer(f, &tok, &toklen, tname, sizeof tname, NULL, 0);
    accel_ckpt_file_chat_template(f, &chat, &chatlen);
    const char *meta[24] = { "format", "pt", "source", source, "accel_format", "accel-weights",
                             "accel_format_version", "1" };
    int nmeta = 4;
    if (step[0]) { meta[2 * nmeta] = "step"; meta[2 * nmeta + 1] = step; nmeta++; }
    if (yaml) { meta[2 * nmeta] = "accel_config"; meta[2 * nmeta + 1] = yaml; nmeta++; }
    if (tok && strlen(tok) == toklen) {
        meta[2 * nmeta] = "accel_tokenizer"; meta[2 * nmeta + 1] = tname; nmeta++;
        meta[2 * nmeta] = "accel_tokenizer_json"; meta[2 * nmeta + 1] = tok; nmeta++;
    }
    /* And the chat template (Jinja text), for apply_chat_template-style rendering. */
    if (chat && strlen(chat) == chatlen) { meta[2 * nmeta] = "accel_chat_template"; meta[2 * nmeta + 1] = chat; nmeta++; }
    if (!yaml)
        fprintf(stderr, "accel_ckpt export: %s stores no configuration: the export will not carry one\n", path);
    accel_ckpt_file_source_t src = { f, group, ts };
    accel_status_t st = accel_st_write(output, e, n, meta, nmeta, accel_ckpt_file_fill, &src);
    free(tok);
    free(chat);
    free(yaml);
    free(e);
    return st == ACCEL_OK ? 0 : accel_status_exit_code(st);
}

/* The file's stored model configuration into cfg: 0, or 2 with the reason printed. */
static int stored_config(accel_ckpt_file_t *f, const char *path, accel_config_t *cfg)
{
    char *yaml = NULL, err[2048];
    if (accel_ckpt_file_config(f, &yaml) != ACCEL_OK || !yaml) {
        fprintf(stderr, "accel_ckpt export: %s stores no model configuration, so the Hugging Face names (and "
                "config.json) cannot be derived\n--> hint: export from a checkpoint, an import, or an export "
                "made by this version\n", path);
        return 2;
    }
    accel_status_t st = accel_config_from_yaml(cfg, yaml, path, err, sizeof err);
    free(yaml);
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_ckpt export: the stored configuration of %s: %s\n", path, err);
        return 2;
    }
    return 0;
}

/* A LoRA checkpoint's weights as the model has them: its base with the adapters added (the weights
 * reader merges them), by the model's tensor names. */
typedef struct {
    accel_weights_t *w;
    accel_model_t model;
} merged_source_t;

static accel_status_t get_merged(void *ctx, const char *name, uint64_t numel, float *dst)
{
    merged_source_t *m = ctx;
    for (int i = 0; i < m->model.layout.ntensors; i++)
        if (!strcmp(m->model.layout.tensors[i].name, name))
            return m->model.layout.tensors[i].numel == numel ? accel_weights_read(m->w, i, dst) : ACCEL_ERR_SHAPE;
    fprintf(stderr, "accel_ckpt export: the model has no tensor %s\n", name);
    return ACCEL_ERR_NOT_FOUND;
}

/* A Hugging Face directory: names, layouts and config.json from the stored configuration. */
static int write_hf(accel_ckpt_file_t *f, const char *path, const char *group, accel_hf_dtype_t dtype,
                    const char *outdir)
{
    accel_config_t cfg;
    if (stored_config(f, path, &cfg)) return 2;
    char *tok = NULL, tname[128] = "";
    size_t toklen = 0;
    accel_ckpt_file_tokenizer(f, &tok, &toklen, tname, sizeof tname, NULL, 0);
    /* The special tokens come from the tokenizer itself (its post-processor and added tokens). */
    accel_hf_tokenizer_t ht = { .json = tok, .len = toklen, .name = tname, .bos_id = -1, .eos_id = -1 };
    char *chat = NULL;              /* the chat template: chat_template.jinja */
    if (accel_ckpt_file_chat_template(f, &chat, &ht.chat_template_len) == ACCEL_OK) ht.chat_template = chat;
    accel_tokenizer_t *t = NULL;
    char terr[1024] = "", *bos = NULL, *eos = NULL;
    if (tok && accel_tokenizer_from_json(tok, toklen, tname, &t, terr, sizeof terr) == ACCEL_OK) {
        size_t n;
        const char *p;
        ht.bos_id = accel_tokenizer_bos(t);
        ht.eos_id = accel_tokenizer_eos(t);
        if (ht.bos_id >= 0 && (p = accel_tokenizer_token_bytes(t, ht.bos_id, 0, &n))) ht.bos = bos = strndup(p, n);
        if (ht.eos_id >= 0 && (p = accel_tokenizer_token_bytes(t, ht.eos_id, 0, &n))) ht.eos = eos = strndup(p, n);
    } else if (tok) {
        fprintf(stderr, "accel_ckpt export: the stored tokenizer.json cannot be read (%s): exported as it "
                "is, without bos/eos ids\n", terr);
    }
    accel_ckpt_file_source_t src = { f, group, NULL };
    merged_source_t merged = { 0 };
    accel_status_t st = ACCEL_OK;
    if (cfg.lora.rank > 0) {        /* the fine-tuned model: the base with the adapters merged */
        st = accel_weights_open(path, &merged.w);
        if (st == ACCEL_OK) st = accel_model_create(&cfg, &merged.model);
        if (st == ACCEL_OK) st = accel_weights_check(merged.w, &merged.model.layout);
    }
    if (st == ACCEL_OK)
        st = cfg.lora.rank > 0 ? accel_hf_export(&cfg, get_merged, &merged, dtype, outdir, &ht)
                               : accel_hf_export(&cfg, get_tensor, &src, dtype, outdir, &ht);
    if (st == ACCEL_OK && cfg.lora.rank > 0)
        printf("the model: train.init_from=%s with the checkpoint's rank-%d LoRA adapters merged\n",
               cfg.train.init_from, cfg.lora.rank);
    if (merged.model.ops) accel_model_destroy(&merged.model);
    accel_weights_close(merged.w);
    accel_tokenizer_free(t);
    free(bos);
    free(eos);
    free(tok);
    free(chat);
    return st == ACCEL_OK ? 0 : accel_status_exit_code(st) ? accel_status_exit_code(st) : 2;
}

/* A PEFT LoRA adapter of a base model: the change from it, as rank-R factors. */
static int write_peft(accel_ckpt_file_t *f, const char *path, const char *group, const char *base, int rank,
                      bool rank_given, const char *whole, const char *outdir)
{
    accel_config_t cfg;
    if (stored_config(f, path, &cfg)) return 2;
    char found[8400], err[4096];
    if (cfg.lora.rank > 0) {        /* a LoRA fine-tune's checkpoint: its adapters as they are */
        if (rank_given || *whole) {
            fprintf(stderr, "accel_ckpt export: %s holds rank-%d LoRA adapters (lora.rank), written as they "
                    "are: --rank and --whole do not apply\n", path, cfg.lora.rank);
            return 2;
        }
        if (!base && accel_hf_base_of(cfg.train.init_from, found, sizeof found, err, sizeof err) == ACCEL_OK)
            base = found;
        accel_ckpt_file_source_t src = { f, group, NULL };
        accel_status_t st = accel_hf_export_lora(&cfg, get_tensor, &src, base ? base : cfg.train.init_from, outdir);
        if (st == ACCEL_OK) printf("exported %s's rank-%d LoRA adapters (lora.targets=%s) to %s\n", path,
                                   cfg.lora.rank, cfg.lora.targets, outdir);
        return st == ACCEL_OK ? 0 : accel_status_exit_code(st) ? accel_status_exit_code(st) : 2;
    }
    if (!base) {                    /* the model train.init_from started from (an adapter's: its base) */
        if (!cfg.train.init_from[0]) {
            fprintf(stderr, "accel_ckpt export: --format peft needs the Hugging Face model the weights were fine-tuned "
                    "from, and %s records no train.init_from\n--> hint: name it with --base HF_DIR\n", path);
            return 2;
        }
        if (accel_hf_base_of(cfg.train.init_from, found, sizeof found, err, sizeof err) != ACCEL_OK) {
            fprintf(stderr, "accel_ckpt export: --format peft needs the Hugging Face model the weights were fine-tuned "
                    "from; %s's train.init_from=%s gives none: %s\n--> hint: name it with --base HF_DIR\n", path,
                    cfg.train.init_from, err);
            return 2;
        }
        base = found;
        printf("the base: %s (train.init_from=%s)\n", base, cfg.train.init_from);
        fflush(stdout);
    }
    accel_ckpt_file_source_t src = { f, group, NULL };
    accel_status_t st = accel_hf_export_adapter(&cfg, get_tensor, &src, base, rank, whole, outdir);
    if (st == ACCEL_OK) printf("exported %s as a rank-%d PEFT LoRA adapter to %s\n", path, rank, outdir);
    return st == ACCEL_OK ? 0 : accel_status_exit_code(st) ? accel_status_exit_code(st) : 2;
}

static int cmd_export(int argc, char **argv)
{
    const char *path = NULL, *format = NULL, *dtype = "fp32", *output = NULL, *group = "model";
    const char *base = NULL, *whole = "", *rank_text = "16";
    bool group_given = false, force = false, rank_given = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc) format = argv[++i];
        else if (!strcmp(argv[i], "--base") && i + 1 < argc) base = argv[++i];
        else if (!strcmp(argv[i], "--rank") && i + 1 < argc) rank_text = argv[++i], rank_given = true;
        else if (!strcmp(argv[i], "--whole") && i + 1 < argc) whole = argv[++i];
        else if (!strcmp(argv[i], "--force")) force = true;
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dtype = argv[++i];
        else if ((!strcmp(argv[i], "--output") || !strcmp(argv[i], "-o")) && i + 1 < argc) output = argv[++i];
        else if (!strcmp(argv[i], "--group") && i + 1 < argc) group = argv[++i], group_given = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel_ckpt export FILE --format safetensors|hdf5|hf [--dtype fp32|bf16|fp8|nvfp4]\n"
                   "                         [--output OUT] [--group G] [--force]\n"
                   "       accel_ckpt export FILE --format peft [--base HF_DIR] [--rank R] [--whole NAMES]\n"
                   "                         [--output OUT] [--force]\n"
                   "  Writes the consolidated tensors of group G (default 'model': the fp32\n"
                   "  weights) for inference or other tools, with the model configuration:\n"
                   "  safetensors: 8-byte little-endian header size, JSON header (dtype F32/BF16,\n"
                   "               shape, data_offsets), raw data; tensors sorted by name; the\n"
                   "               configuration YAML in __metadata__ accel_config (the\n"
                   "               tokenizer in accel_tokenizer_json, the chat template in\n"
                   "               accel_chat_template, when the file has them).\n"
                   "  hdf5:        one dataset per tensor at /<name>, fp32 or a bf16 float type;\n"
                   "               the configuration in /meta/config.yaml (and /meta/tokenizer.json,\n"
                   "               /meta/chat_template).\n"
                   "  hf:          a Hugging Face model directory OUT (model.safetensors with HF\n"
                   "               names and layouts, config.json, generation_config.json, the\n"
                   "               tokenizer and chat_template.jinja when the file has them)\n"
                   "               that from_pretrained loads.\n"
                   "  peft:        a PEFT LoRA adapter directory OUT (adapter_config.json,\n"
                   "               adapter_model.safetensors) of the Hugging Face model HF_DIR the\n"
                   "               weights were fine-tuned from (default: the checkpoint's\n"
                   "               train.init_from, or the base of the adapter it names): each matrix's\n"
                   "               change as rank-R factors (truncated SVD, default rank 16: exact\n"
                   "               when the change has that rank, else the closest; the error is\n"
                   "               printed), the other tensors that changed whole (modules_to_save,\n"
                   "               biases), and whole the matrices of the modules NAMES lists\n"
                   "               (comma-separated last names, e.g. lm_head,embed_tokens). PEFT's\n"
                   "               PeftModel.from_pretrained and accel (import, init_from) read it.\n"
                   "               A LoRA fine-tune's checkpoint (lora.rank) writes its adapters\n"
                   "               as trained (no --rank, no --whole; docs/lora.md); its hf export\n"
                   "               is the base with them merged.\n"
                   "  bf16 rounds to nearest even. fp8 (hf only): the blocks' linear layers in float8\n"
                   "  e4m3 by rows with F32 scales (compressed-tensors' FP8-dynamic, which vLLM and\n"
                   "  transformers load), the rest bf16; nvfp4 (hf only): those layers in NVFP4 (e2m1\n"
                   "  by groups of 16 with e4m3 scales over a global one; weights only, NVFP4A16).\n"
                   "  Default OUT: FILE with .safetensors / .model.h5 / .hf.\n"
                   "  An existing OUT is replaced only when it is of the kind written (a safetensors\n"
                   "  file, an HDF5 weights file, an hf directory: empty or with a config.json);\n"
                   "  --force replaces another kind, but never an accel checkpoint.\n");
            return 0;
        } else if (!path) path = argv[i];
        else { fprintf(stderr, "accel_ckpt export: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!path || !format) {
        fprintf(stderr, "usage: accel_ckpt export FILE --format safetensors|hdf5|hf|peft [--dtype fp32|bf16] [--output OUT]\n");
        return 2;
    }
    bool st_fmt = !strcmp(format, "safetensors"), hf_fmt = !strcmp(format, "hf"), peft_fmt = !strcmp(format, "peft");
    if (!st_fmt && !hf_fmt && !peft_fmt && strcmp(format, "hdf5")) {
        fprintf(stderr, "accel_ckpt export: unknown format '%s'\n--> hint: use safetensors, hdf5, hf or peft\n", format);
        return 2;
    }
    char *end = NULL;
    const long rank = strtol(rank_text, &end, 10);
    if (peft_fmt && (*end || rank < 1 || rank > 4096)) {
        fprintf(stderr, "accel_ckpt export: --format peft needs a --rank from 1 to 4096, not %s\n", rank_text);
        return 2;
    }
    if (!peft_fmt && (base || *whole)) {
        fprintf(stderr, "accel_ckpt export: --base and --whole go with --format peft\n");
        return 2;
    }
    const bool fp8 = !strcmp(dtype, "fp8"), nvfp4 = !strcmp(dtype, "nvfp4");
    int dt = fp8 || nvfp4 ? ACCEL_BF16 : accel_dtype_parse(dtype);
    if ((dt != ACCEL_F32 && dt != ACCEL_BF16) || ((fp8 || nvfp4) && !hf_fmt)) {
        fprintf(stderr, "accel_ckpt export: unsupported dtype '%s'%s\n--> hint: use fp32 or bf16 (fp8, nvfp4: with "
                "--format hf)\n", dtype, fp8 || nvfp4 ? " for this format" : "");
        return 2;
    }
    bool bf16 = dt == ACCEL_BF16;
    char outbuf[ACCEL_CKPT_PATH_MAX + 32];
    if (!output) {
        snprintf(outbuf, sizeof outbuf, "%s", path);
        char *dot = strrchr(outbuf, '.'), *slash = strrchr(outbuf, '/');
        if (dot && (!slash || dot > slash)) *dot = '\0';
        strcat(outbuf, st_fmt ? ".safetensors" : hf_fmt ? ".hf" : peft_fmt ? ".peft" : ".model.h5");
        output = outbuf;
    }
    if (accel_out_check("accel_ckpt export", output, st_fmt ? ACCEL_OUT_SAFETENSORS : hf_fmt || peft_fmt ?
                        ACCEL_OUT_DIRECTORY : ACCEL_OUT_WEIGHTS_H5, force))
        return 2;

    accel_ckpt_file_t *f = open_file(path);
    if (!f) return 2;
    int rc = 0;
    accel_ckpt_tensor_info_t *ts = NULL;
    int n = 0;
    /* Weights files (exports, imports) keep their tensors at the root. */
    if (!group_given && !accel_ckpt_file_has_state(f, group)) group = "";
    if (!accel_ckpt_file_has_state(f, group) || accel_ckpt_file_list(f, group, &ts, &n) != ACCEL_OK || !n) {
        fprintf(stderr, "accel_ckpt export: %s has no tensors in group '%s'\n", path, group);
        rc = 2;
        goto out;
    }
    for (int i = 0; i < n; i++)
        if (!ts[i].fp32 || ts[i].ndim < 1 || ts[i].ndim > ACCEL_TENSOR_MAX_DIMS) {
            fprintf(stderr, "accel_ckpt export: /%s/%s is not an fp32 tensor of 1..4 dimensions (it is %s, "
                    "%d-D)\n--> hint: 'unalloc' or 'toobig' mean a damaged file; 'accel_ckpt verify %s' "
                    "tells more\n", group, ts[i].name, ts[i].dtype, ts[i].ndim, path);
            rc = 2;
            goto out;
        }
    if (peft_fmt) {
        rc = write_peft(f, path, group, base, (int)rank, rank_given, whole, output);
        goto out;
    }
    if (hf_fmt) {
        rc = write_hf(f, path, group, fp8 ? ACCEL_HF_FP8 : nvfp4 ? ACCEL_HF_NVFP4 : bf16 ? ACCEL_HF_BF16 : ACCEL_HF_FP32,
                      output);
        if (!rc) printf("exported %d tensors of '%s' from %s to %s (hf, %s)\n", n, group, path, output,
                        fp8 ? "fp8 linear layers, the rest bf16" : nvfp4 ? "nvfp4 linear layers, the rest bf16" :
                        bf16 ? "bf16" : "fp32");
        goto out;
    }
    if (!st_fmt) {
        /* The library writes (and atomically publishes) the format accel_generate reads. */
        int written = 0;
        accel_status_t st = accel_ckpt_file_export_hdf5(f, group, output, bf16, &written);
        if (st != ACCEL_OK) rc = accel_status_exit_code(st);
        else printf("exported %d tensors of '%s' from %s to %s (%s, %s)\n", written, group, path, output,
                    "hdf5", bf16 ? "bf16" : "fp32");
        goto out;
    }
    rc = write_safetensors(f, path, group, ts, n, bf16, output);
    if (!rc)
        printf("exported %d tensors of '%s' from %s to %s (%s, %s)\n", n, group, path, output,
               "safetensors", bf16 ? "bf16" : "fp32");
out:
    free(ts);
    accel_ckpt_file_close(f);
    return rc;
}

/* ------------------------------------------------------------------ import */

typedef struct {
    accel_hf_t *hf;
    const accel_hf_tensor_t *t;
    float *buf;                     /* the whole tensor `cached` */
    int cached;
} import_t;

static accel_status_t fill_import(void *ctx, int index, uint64_t begin, uint64_t end, float *dst)
{
    import_t *c = ctx;
    if (c->cached != index) {
        const accel_hf_tensor_t *t = &c->t[index];
        uint64_t numel = t->dims[0] * (t->ndim == 2 ? t->dims[1] : 1);
        free(c->buf);
        c->buf = malloc(sizeof(float) * (numel ? numel : 1));
        c->cached = -1;
        if (!c->buf) return ACCEL_ERR_NOMEM;
        char err[2048];
        accel_status_t st = accel_hf_read(c->hf, t->name, c->buf, err, sizeof err);
        if (st != ACCEL_OK) {
            fprintf(stderr, "accel_ckpt import: %s\n", err);
            return st;
        }
        c->cached = index;
    }
    memcpy(dst, c->buf + begin, sizeof(float) * (end - begin));
    return ACCEL_OK;
}

static int cmd_import(int argc, char **argv)
{
    const char *src = NULL, *output = NULL, *dtype = "fp32", *base = NULL;
    bool force = false;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--output") || !strcmp(argv[i], "-o")) && i + 1 < argc) output = argv[++i];
        else if (!strcmp(argv[i], "--base") && i + 1 < argc) base = argv[++i];
        else if (!strcmp(argv[i], "--force")) force = true;
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dtype = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel_ckpt import DIR|FILE -o OUT.h5 [--dtype fp32|bf16] [--force]\n"
                   "       accel_ckpt import ADAPTER_DIR [--base DIR] -o OUT.h5 [--dtype ...] [--force]\n"
                   "  Reads a Hugging Face model (a directory with config.json and model.safetensors,\n"
                   "  or sharded with model.safetensors.index.json; or one .safetensors file in such a\n"
                   "  directory) of GPT2LMHeadModel or the Llama family (LlamaForCausalLM, Mistral,\n"
                   "  Mixtral, Qwen2/3 and their MoE, Phi3 (with LongRoPE: Phi-3.5, Phi-4-mini),\n"
                   "  Olmo2/3, Olmoe, SmolLM3, Granite, Gemma, Gemma2, Gemma3,\n"
                   "  Gemma3ForConditionalGeneration's language model, GptOss with its MXFP4 experts,\n"
                   "  SeedOss, Glm, Glm4, GraniteMoe, Glm4Moe, Dots1, Exaone4, DeepseekV2 and V3:\n"
                   "  docs/huggingface.md) and writes accel weights (the layout of export --format hdf5)\n"
                   "  with the model configuration, the tokenizer.json and the chat template\n"
                   "  (chat_template.jinja, else tokenizer_config.json's) in /meta. BF16/F16 weights\n"
                   "  become fp32. accel_generate and train.init_from=OUT.h5 read the result as it is.\n"
                   "  A PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors)\n"
                   "  is merged into its base model as PEFT's merge_and_unload does (W + scale B A;\n"
                   "  modules_to_save in place of the base's tensors); the base is --base DIR, else\n"
                   "  adapter_config.json's base_model_name_or_path: a directory, or that model in\n"
                   "  the Hugging Face cache (HF_HUB_CACHE, HF_HOME). The adapter's tokenizer and\n"
                   "  chat template, where it keeps them, win over the base's.\n"
                   "  An existing OUT is replaced only when it is an HDF5 weights file; --force\n"
                   "  replaces another kind, but never an accel checkpoint.\n");
            return 0;
        } else if (!src) src = argv[i];
        else { fprintf(stderr, "accel_ckpt import: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!src || !output) {
        fprintf(stderr, "usage: accel_ckpt import DIR|FILE -o OUT.h5 [--dtype fp32|bf16] [--force] [--base DIR]\n");
        return 2;
    }
    if (base && !accel_hf_is_adapter(src)) {
        fprintf(stderr, "accel_ckpt import: --base %s names the base of a PEFT adapter, but %s is not an adapter "
                "directory (adapter_config.json)\n", base, src);
        return 2;
    }
    if (accel_out_check("accel_ckpt import", output, ACCEL_OUT_WEIGHTS_H5, force)) return 2;
    int dt = accel_dtype_parse(dtype);
    if (dt != ACCEL_F32 && dt != ACCEL_BF16) {
        fprintf(stderr, "accel_ckpt import: unsupported dtype '%s'\n--> hint: use fp32 or bf16\n", dtype);
        return 2;
    }
    char err[4096] = "";
    accel_hf_t *hf = NULL;
    accel_status_t st = base ? accel_hf_open_adapter(src, base, &hf, err, sizeof err) : accel_hf_open(src, &hf, err, sizeof err);
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_ckpt import: %s\n", err[0] ? err : accel_status_str(st));
        return accel_status_exit_code(st) ? accel_status_exit_code(st) : 2;
    }
    const accel_hf_tensor_t *t;
    int n = accel_hf_tensors(hf, &t);
    accel_ckpt_wtensor_t *wt = calloc((size_t)n, sizeof *wt);
    import_t ctx = { hf, t, NULL, -1 };
    size_t toklen = 0, chatlen = 0;
    char *tok = accel_hf_tokenizer(hf, &toklen);
    char *chat = accel_hf_chat_template(hf, &chatlen);
    if (!wt) st = ACCEL_ERR_NOMEM;
    for (int i = 0; wt && i < n; i++) {
        wt[i].name = t[i].name;
        wt[i].ndim = t[i].ndim;
        wt[i].dims[0] = t[i].dims[0];
        wt[i].dims[1] = t[i].dims[1];
    }
    char source[4200], tokname[64];
    snprintf(source, sizeof source, "%s (%s%s)", src, accel_hf_adapter(hf) ? "LoRA adapter on " : "",
             accel_hf_architecture(hf));
    /* The tokenizer's name: the model directory's (as tokenizers are called after their model). */
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", src);
    size_t dl = strlen(dirbuf);
    while (dl > 1 && dirbuf[dl - 1] == '/') dirbuf[--dl] = '\0';
    const char *last = strrchr(dirbuf, '/');
    snprintf(tokname, sizeof tokname, "%s", last ? last + 1 : dirbuf);
    accel_ckpt_weights_meta_t meta = { .config_yaml = accel_hf_config_yaml(hf), .tokenizer = tok,
                                       .tokenizer_len = toklen, .tokenizer_name = tok ? tokname : NULL,
                                       .chat_template = chat, .chat_template_len = chatlen, .source = source };
    if (st == ACCEL_OK) st = accel_ckpt_weights_write(output, wt, n, fill_import, &ctx, dt == ACCEL_BF16, &meta);
    if (st == ACCEL_OK)
        printf("imported %s (%s%s, model.name=%s, %d tensors%s%s) to %s\n", src, accel_hf_adapter(hf) ?
               "LoRA adapter merged into " : "", accel_hf_architecture(hf), accel_hf_config(hf)->model.name, n,
               tok ? ", tokenizer.json" : "", chat ? ", chat template" : "", output);
    free(tok);
    free(chat);
    free(ctx.buf);
    free(wt);
    accel_hf_close(hf);
    return st == ACCEL_OK ? 0 : 2;
}

/* ------------------------------------------------------------------ latest */

static int cmd_latest(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        printf("usage: accel_ckpt latest DIR\n  Prints the newest complete checkpoint in DIR (the one "
               "'latest' names, or a\n  newer complete step-*.h5); exit 2 when there is none.\n");
        return argc == 2 ? 0 : 2;
    }
    char path[ACCEL_CKPT_PATH_MAX];
    accel_status_t st = accel_ckpt_find_latest(argv[1], path);
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_ckpt: no complete checkpoint in %s\n", argv[1]);
        return accel_status_exit_code(st);
    }
    printf("%s\n", path);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } cmds[] = { { "ls", cmd_ls }, { "info", cmd_info }, { "verify", cmd_verify }, { "diff", cmd_diff },
                 { "export", cmd_export }, { "import", cmd_import }, { "latest", cmd_latest } };
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
        printf("accel_ckpt (accel) %s\n", accel_version());
        return 0;
    }
    accel_log_set_identity(0, 1, "accel_ckpt");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "accel_ckpt: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
