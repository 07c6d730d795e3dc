/* accel_generate: big-model inference from a checkpoint or exported weights, within a memory
 * budget: empty initialisation, a device map (auto within --max-memory, or explicit), layers on
 * disk streamed with prefetch (include/accel/infer.h, docs/inference.md).
 *   accel_generate WEIGHTS [--prompt TEXT] [-n N] [--temperature T --top-k K --seed S]
 *   accel_generate WEIGHTS --score FILE
 * One process, no MPI. Generated text goes to stdout; the map and the reports go to stderr. */
#include "build_config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "accel/accel.h"
#include "accel/chat.h"
#include "accel/file.h"
#include "accel/infer.h"
#include "args.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

static void usage(FILE *out)
{
    fprintf(out,
        "usage: accel_generate WEIGHTS [options] [key=value ...]\n"
        "\n"
        "Run a GPT or Llama from a checkpoint (step-*.h5 from accel_train, or a checkpoint directory: its\n"
        "'latest' file names the checkpoint), from weights exported by accel_ckpt export (hdf5,\n"
        "safetensors, hf) or imported by accel_ckpt import, or from a Hugging Face model directory\n"
        "(GPT-2 and the Llama family: docs/huggingface.md lists them), with weights larger than the\n"
        "memory you give it: layers that do not fit are read from the file when they are used,\n"
        "prefetched on a background thread.\n"
        "Model sizes come from the configuration stored with the weights (config.json for Hugging\n"
        "Face models); key=value overrides it (older exports store none: give model.name=gpt\n"
        "model.layers=... on the command line).\n"
        "\n"
        "modes:\n"
        "  --prompt TEXT         generate after TEXT (default: a newline); the text goes to stdout\n"
        "  --prompt-file FILE    the prompt from a file\n"
        "  --score FILE          perplexity of FILE (read whole): non-overlapping windows of\n"
        "                        model.context predicted tokens (each also sees the token before it)\n"
        "  --tokenizer T         tokenizer.json (file or directory) or 'bytes' (default: the one kept\n"
        "                        with the weights, else bytes: one token per byte). A tokenizer with a\n"
        "                        beginning-of-text token puts it before the prompt and the scored text\n"
        "chat (docs/chat.md):\n"
        "  --chat                the prompt is a user message: the model's chat template renders it\n"
        "                        with the generation prompt, and only the reply is printed; the reply\n"
        "                        ends at an end-of-turn token (the tokenizer's EOS, the template's\n"
        "                        eos_token and end of turn, generation_config.json's eos_token_id,\n"
        "                        --stop)\n"
        "  --system TEXT         a system message before it\n"
        "  --messages FILE       the conversation so far, a JSON list of {\"role\", \"content\"}\n"
        "                        messages (implies --chat; --prompt adds a user message after it)\n"
        "  --chat-template T     the template: a .jinja file, tokenizer_config.json or directory\n"
        "                        (default: the model directory's, else the one kept with the\n"
        "                        weights, else the --tokenizer directory's)\n"
        "  --chat-var N=V        a template variable, V as JSON or else a string (repeatable),\n"
        "                        e.g. enable_thinking=false\n"
        "  --stop TOKEN          also end the reply at this token (repeatable), e.g. '<|eot_id|>'\n"
        "  -i, --interactive     a conversation: each line of standard input is a user message\n"
        "                        (after --prompt, if given), each reply joins the conversation;\n"
        "                        /reset starts over, end of input ends it\n"
        "generation:\n"
        "  -n, --tokens N        new tokens (default 64)\n"
        "  --temperature T       0 = greedy (default); > 0 samples from softmax(logits / T)\n"
        "  --top-k K             sample among the K most likely tokens (default 0 = all)\n"
        "  --seed S              sampling seed (default 1): a seed always gives the same text\n"
        "  --no-kv-cache         recompute the whole window for every new token (for comparisons;\n"
        "                        the same logits, slower)\n"
        "memory:\n"
        "  --max-memory SPEC     budget per tier, e.g. cpu=64MiB,disk=10GiB (default: cpu\n"
        "                        unlimited). The cpu budget holds the resident layers, the disk\n"
        "                        ring and the workspace; gpu is not available (counts as 0)\n"
        "  --device-map SPEC     auto (default) or LAYERS=TIER items: 0-3=cpu,4-=disk, 0=cpu,*=disk\n"
        "                        (layer 0: embeddings, 1..L: blocks, L+1: final norm)\n"
        "  --ring-slots N        disk layers resident at once, >= 2 (default 2: one computes, one\n"
        "                        is read)\n"
        "  --print-map           print the device map and exit (reads no weights)\n"
        "reports:\n"
        "  --stats               load time, tokens/s, disk reads, prefetch, peak memory (stderr)\n"
        "  --logits-out FILE     append every pass's fp32 logits to FILE (raw, for comparisons)\n"
        "  -q, --quiet           no map printout\n"
        "  -h, --help, -V, --version\n"
        "\n"
        "The prompt must fit in model.context tokens (a longer one is refused); generation past\n"
        "the context keeps the most recent model.context tokens. Inside the context each new\n"
        "token costs one position's forward (a key/value cache); past it the window slides and\n"
        "each token recomputes its window. A rotary model (llama) runs with the context this run\n"
        "holds (prompt + new tokens, or the scored text) when that is shorter than model.context,\n"
        "the same logits with smaller buffers; model.context=N on the command line sets it, and an\n"
        "interactive chat keeps the model's. Details: docs/inference.md\n");
}

typedef struct {
    const char *weights, *prompt, *prompt_file, *score, *max_memory, *device_map, *logits_out, *tokenizer;
    int ntokens, top_k, ring_slots;
    double temperature;
    unsigned long long seed;
    bool print_map, stats, quiet, no_kv_cache;
    char **overrides;
    int noverrides;
    /* chat */
    bool chat, interactive;
    const char *system, *messages, *chat_template;
    const char **chat_vars, **stops;
    int nchat_vars, nstops;
} opts_t;

static int parse_int(const char *opt, const char *text, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "accel_generate: %s '%s' is not an integer in [%lld, %lld]\n", opt, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* 0 ok, 1 exit 0 (help/version), 2 usage error. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->ntokens = 64;
    o->seed = 1;
    o->ring_slots = 2;
    o->overrides = calloc((size_t)argc + 1, sizeof *o->overrides);
    o->chat_vars = calloc((size_t)argc + 1, sizeof *o->chat_vars);
    o->stops = calloc((size_t)argc + 1, sizeof *o->stops);
    if (!o->overrides || !o->chat_vars || !o->stops) return 2;
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *v;
        long long n;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 1; }
        if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
            printf("accel_generate (accel) %s\n", accel_version());
            return 1;
        }
        if ((v = accel_arg_value(argc, argv, &i, "--prompt-file", &missing))) o->prompt_file = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--prompt", &missing))) o->prompt = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--score", &missing))) o->score = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--tokenizer", &missing))) o->tokenizer = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--max-memory", &missing))) o->max_memory = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--device-map", &missing))) o->device_map = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--logits-out", &missing))) o->logits_out = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--system", &missing))) { o->system = v; o->chat = true; }
        else if ((v = accel_arg_value(argc, argv, &i, "--messages", &missing))) { o->messages = v; o->chat = true; }
        else if ((v = accel_arg_value(argc, argv, &i, "--chat-template", &missing))) { o->chat_template = v; o->chat = true; }
        else if ((v = accel_arg_value(argc, argv, &i, "--chat-var", &missing))) {
            if (!strchr(v, '=') || v[0] == '=') {
                fprintf(stderr, "accel_generate: --chat-var '%s' is not NAME=VALUE\n--> hint: e.g. "
                        "--chat-var enable_thinking=false\n", v);
                return 2;
            }
            o->chat_vars[o->nchat_vars++] = v;
        } else if ((v = accel_arg_value(argc, argv, &i, "--stop", &missing))) o->stops[o->nstops++] = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--tokens", &missing)) ||
                 (v = accel_arg_value(argc, argv, &i, "-n", &missing))) {
            if (parse_int("--tokens", v, 0, 100000000, &n)) return 2;
            o->ntokens = (int)n;
        } else if ((v = accel_arg_value(argc, argv, &i, "--top-k", &missing))) {
            if (parse_int("--top-k", v, 0, INT_MAX, &n)) return 2;
            o->top_k = (int)n;
        } else if ((v = accel_arg_value(argc, argv, &i, "--ring-slots", &missing))) {
            if (parse_int("--ring-slots", v, 2, 1024, &n)) return 2;
            o->ring_slots = (int)n;
        } else if ((v = accel_arg_value(argc, argv, &i, "--seed", &missing))) {
            if (parse_int("--seed", v, 0, LLONG_MAX, &n)) return 2;
            o->seed = (unsigned long long)n;
        } else if ((v = accel_arg_value(argc, argv, &i, "--temperature", &missing))) {
            char *end;
            errno = 0;
            o->temperature = strtod(v, &end);
            if (errno || end == v || *end || !isfinite(o->temperature) || o->temperature < 0) {
                fprintf(stderr, "accel_generate: --temperature '%s' is not a number >= 0\n", v);
                return 2;
            }
        } else if (!strcmp(argv[i], "--print-map")) o->print_map = true;
        else if (!strcmp(argv[i], "--stats")) o->stats = true;
        else if (!strcmp(argv[i], "--no-kv-cache")) o->no_kv_cache = true;
        else if (!strcmp(argv[i], "--chat")) o->chat = true;
        else if (!strcmp(argv[i], "-i") || !strcmp(argv[i], "--interactive")) o->chat = o->interactive = true;
        else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) o->quiet = true;
        else if (missing) {
            fprintf(stderr, "accel_generate: option %s needs a value\n", argv[i]);
            return 2;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "accel_generate: unknown option '%s'\n--> hint: accel_generate --help "
                    "lists the options\n", argv[i]);
            return 2;
        } else if (accel_config_is_override(argv[i])) {
            o->overrides[o->noverrides++] = argv[i];
        } else if (!o->weights) {
            o->weights = argv[i];
        } else {
            fprintf(stderr, "accel_generate: more than one weights file ('%s' and '%s')\n",
                    o->weights, argv[i]);
            return 2;
        }
        if (missing) {
            fprintf(stderr, "accel_generate: option %s needs a value\n", argv[i]);
            return 2;
        }
    }
    if (!o->weights) {
        fprintf(stderr, "accel_generate: no weights file\n");
        usage(stderr);
        return 2;
    }
    if ((o->prompt || o->prompt_file) && o->score) {
        fprintf(stderr, "accel_generate: --score and --prompt/--prompt-file exclude each other\n");
        return 2;
    }
    if (o->prompt && o->prompt_file) {
        fprintf(stderr, "accel_generate: give --prompt or --prompt-file, not both\n");
        return 2;
    }
    if (o->chat && o->score) {
        fprintf(stderr, "accel_generate: --score reads text as it is; the chat options render prompts\n");
        return 2;
    }
    if (o->chat && !o->interactive && !o->prompt && !o->prompt_file && !o->messages) {
        fprintf(stderr, "accel_generate: --chat needs the user's message (--prompt or --prompt-file) or a "
                "conversation (--messages FILE)\n--> hint: --interactive reads the user's messages from the "
                "terminal\n");
        return 2;
    }
    return 0;
}

/* A checkpoint directory: the file its `latest` names (a Hugging Face model directory is read
 * as it is). */
static int resolve_weights(const char *path, char *out, size_t outlen)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode) || accel_hf_is_model(path)) {
        snprintf(out, outlen, "%s", path);
        return 0;
    }
    char latest[4096];
    snprintf(latest, sizeof latest, "%s/latest", path);
    FILE *f = fopen(latest, "r");
    char name[1024] = "";
    if (!f || !fgets(name, sizeof name, f)) {
        fprintf(stderr, "accel_generate: '%s' is a directory without a readable 'latest' file\n"
                "--> hint: pass a checkpoint file (DIR/step-*.h5)\n", path);
        if (f) fclose(f);
        return -1;
    }
    fclose(f);
    name[strcspn(name, "\r\n")] = '\0';
    snprintf(out, outlen, "%s/%s", path, name);
    return 0;
}

/* Whole file into memory (prompts, scored text). */
static char *read_file(const char *path, size_t *len)
{
    char *text = accel_file_read(path, len);
    if (!text) fprintf(stderr, "accel_generate: cannot read '%s': %s\n", path, strerror(errno));
    return text;
}

/* The tokenizer: --tokenizer, else the one kept with the weights, else bytes. Its ids must be
 * the model's (a file tokenizer larger than model.vocab is refused; byte ids are checked one by one
 * in encode_text, so byte-level models with a small vocabulary read what they can). */
static accel_status_t open_tokenizer(const opts_t *o, const accel_weights_t *w, int V,
                                     accel_tokenizer_t **tok)
{
    char err[2048] = "";
    accel_status_t st;
    if (o->tokenizer && !strcmp(o->tokenizer, ACCEL_TOKENIZER_BYTES)) st = accel_tokenizer_bytes(tok);
    else if (o->tokenizer) st = accel_tokenizer_load(o->tokenizer, tok, err, sizeof err);
    else if ((st = accel_weights_tokenizer(w, tok, err, sizeof err)) == ACCEL_ERR_NOT_FOUND) {
        st = accel_tokenizer_bytes(tok);
        if (V != 256)   /* a byte-level model has exactly 256 ids; this one was trained on others */
            fprintf(stderr, "accel_generate: %s keeps no tokenizer: reading and writing text one byte "
                    "per token, which a model with model.vocab=%d was probably not trained on\n--> hint: "
                    "--tokenizer tokenizer.json (or the model's directory)\n", accel_weights_path(w), V);
    }
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_generate: %s\n--> hint: --tokenizer FILE|bytes chooses another\n",
                err[0] ? err : accel_status_str(st));
        return st;
    }
    int tv = accel_tokenizer_vocab(*tok);
    if (strcmp(accel_tokenizer_name(*tok), ACCEL_TOKENIZER_BYTES) && tv > V) {
        fprintf(stderr, "accel_generate: tokenizer '%s' has %d tokens but the model's vocabulary is "
                "model.vocab=%d\n--> hint: use the tokenizer the model was trained with\n",
                accel_tokenizer_name(*tok), tv, V);
        return ACCEL_ERR_SHAPE;
    }
    return ACCEL_OK;
}

/* text[0..n) as token ids (after the tokenizer's beginning-of-text token when it has one and
 * add_bos: a chat template writes its own) in a
 * malloc'ed array with room for `extra` more; every id checked against the model's vocabulary. */
static int32_t *encode_text(accel_tokenizer_t *tok, const char *text, size_t n, int V, size_t extra,
                            size_t *ntok, const char *what, bool add_bos)
{
    size_t cnt = 0, cap = 64;
    int32_t *ids = malloc(sizeof *ids * cap);
    int bos = add_bos ? accel_tokenizer_bos(tok) : -1;
    accel_status_t st = ids ? ACCEL_OK : ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK && bos >= 0) ids[cnt++] = bos;
    if (st == ACCEL_OK) st = accel_tokenizer_encode(tok, text, n, &ids, &cnt, &cap);
    if (st == ACCEL_OK && cap < cnt + extra) {
        int32_t *p = realloc(ids, sizeof *ids * (cnt + extra));
        if (!p) st = ACCEL_ERR_NOMEM;
        else ids = p;
    }
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_generate: tokenizer '%s' cannot encode the %s: %s%s\n",
                accel_tokenizer_name(tok), what, accel_status_str(st),
                st == ACCEL_ERR_INVALID ? " (not UTF-8 text?)" : "");
        free(ids);
        return NULL;
    }
    for (size_t i = 0; i < cnt; i++)
        if (ids[i] < 0 || ids[i] >= V) {
            fprintf(stderr, "accel_generate: %s token %zu is %d, outside the vocabulary 0..%d\n"
                    "--> hint: this model (model.vocab=%d) cannot read this text with tokenizer '%s'\n",
                    what, i, ids[i], V - 1, V, accel_tokenizer_name(tok));
            free(ids);
            return NULL;
        }
    *ntok = cnt;
    return ids;
}

/* ------------------------------------------------------------------ chat */

/* The chat template: --chat-template, else the model directory's, else the one kept with the
 * weights, else the --tokenizer directory's; bos_token and eos_token from the tokenizer where no
 * tokenizer_config.json gives them. */
static accel_status_t open_chat_template(const opts_t *o, const accel_weights_t *w, const char *path,
                                         const accel_tokenizer_t *tok, accel_chat_template_t **t)
{
    char err[8192];
    struct stat sb;
    size_t len = 0;
    const char *kept = accel_weights_chat_template(w, &len);
    accel_status_t st;
    if (o->chat_template) st = accel_chat_template_load(o->chat_template, t, err, sizeof err);
    else if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))      /* with tokenizer_config.json's special tokens */
        st = accel_chat_template_load(path, t, err, sizeof err);
    else if (kept) st = accel_chat_template_parse(kept, len, path, t, err, sizeof err);
    else if (o->tokenizer && strcmp(o->tokenizer, ACCEL_TOKENIZER_BYTES))
        st = accel_chat_template_load(o->tokenizer, t, err, sizeof err);
    else {
        snprintf(err, sizeof err, "%s keeps no chat template\n--> hint: --chat-template FILE (a .jinja file, "
                 "or the model's tokenizer_config.json or directory)", path);
        st = ACCEL_ERR_NOT_FOUND;
    }
    if (st == ACCEL_OK) accel_chat_template_use_tokenizer(*t, tok);    /* where tokenizer_config.json gave none */
    for (int i = 0; st == ACCEL_OK && i < o->nchat_vars; i++)
        st = accel_chat_template_set(*t, o->chat_vars[i], err, sizeof err);
    if (st != ACCEL_OK) fprintf(stderr, "accel_generate: %s\n", err);
    return st;
}

static json_t *message(const char *role, const char *content, size_t len)
{
    json_t *m = json_object();
    json_object_set_new(m, "role", json_string(role));
    json_object_set_new(m, "content", json_stringn(content, len));
    return m;
}

/* The conversation so far: --messages, then --system before it; NULL (said why) on error. */
static json_t *chat_start(const opts_t *o)
{
    json_t *conv;
    if (o->messages) {
        json_error_t je;
        conv = json_load_file(o->messages, 0, &je);
        if (!conv || !json_is_array(conv)) {
            fprintf(stderr, "accel_generate: --messages %s: %s\n--> hint: a JSON list of messages, e.g. "
                    "[{\"role\": \"user\", \"content\": \"Hello\"}]\n", o->messages,
                    conv ? "not a list" : je.text);
            json_decref(conv);
            return NULL;
        }
    } else conv = json_array();
    if (o->system) json_array_insert_new(conv, 0, message("system", o->system, strlen(o->system)));
    return conv;
}

/* The conversation (--messages, --system, then the prompt as the user's message) rendered with
 * the generation prompt into *text. */
static accel_status_t chat_render(const opts_t *o, const accel_chat_template_t *t, const char *user,
                                  size_t user_len, char **text, size_t *len)
{
    char err[4096];
    json_t *conv = chat_start(o);
    if (!conv) return ACCEL_ERR_INVALID;
    if (user) {
        json_t *m = message("user", user, user_len);
        if (!json_object_get(m, "content")) {
            fprintf(stderr, "accel_generate: the prompt is not UTF-8 text\n");
            json_decref(m);
            json_decref(conv);
            return ACCEL_ERR_INVALID;
        }
        json_array_append_new(conv, m);
    }
    accel_status_t st = accel_chat_render(t, conv, NULL, true, text, len, err, sizeof err);
    if (st != ACCEL_OK) fprintf(stderr, "accel_generate: %s\n", err);
    json_decref(conv);
    return st;
}

/* The tokens that end a reply: the tokenizer's EOS, the template's eos_token and the token it
 * ends an assistant's turn with, the model directory's generation_config.json eos_token_id (a
 * number or a list), --stop. */
static int add_stop(int32_t *stops, int n, int id)
{
    for (int i = 0; i < n; i++)
        if (stops[i] == id) return n;
    if (id >= 0 && n < 64) stops[n++] = id;
    return n;
}

static accel_status_t chat_stops(const opts_t *o, const accel_chat_template_t *t, accel_tokenizer_t *tok,
                                 const char *path, int32_t *stops, int *nstops)
{
    int n = add_stop(stops, 0, accel_tokenizer_eos(tok));
    const char *eos = accel_chat_template_var_string(t, "eos_token");
    if (eos) n = add_stop(stops, n, accel_tokenizer_token_id(tok, eos));
    n = add_stop(stops, n, accel_chat_template_end_of_turn(t, tok));
    char gc[8192];
    snprintf(gc, sizeof gc, "%s/generation_config.json", path);
    json_t *g = json_load_file(gc, 0, NULL), *e = json_object_get(g, "eos_token_id");
    if (json_is_integer(e)) n = add_stop(stops, n, (int)json_integer_value(e));
    size_t i;
    json_t *v;
    json_array_foreach(e, i, v)
        if (json_is_integer(v)) n = add_stop(stops, n, (int)json_integer_value(v));
    json_decref(g);
    for (int k = 0; k < o->nstops; k++) {
        int id = accel_tokenizer_token_id(tok, o->stops[k]);
        if (id < 0) {
            fprintf(stderr, "accel_generate: --stop '%s' is not a token of tokenizer '%s'\n--> hint: give a "
                    "token as the tokenizer spells it, e.g. '<|eot_id|>'\n", o->stops[k], accel_tokenizer_name(tok));
            return ACCEL_ERR_INVALID;
        }
        n = add_stop(stops, n, id);
    }
    *nstops = n;
    return ACCEL_OK;
}

static int write_logits(FILE *f, const float *z, size_t n)
{
    if (f && fwrite(z, sizeof(float), n, f) != n) {
        fprintf(stderr, "accel_generate: writing the logits failed: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

static void report_disk(const accel_dispatch_stats_t *s, FILE *out)
{
    if (!s->layer_reads) {
        fprintf(out, "disk:   no layer streamed\n");
        return;
    }
    double hidden = s->read_seconds > 0 ? 1.0 - s->wait_seconds / s->read_seconds : 1.0;
    if (hidden < 0) hidden = 0;
    fprintf(out, "disk:   %lld layer reads, %.1f MiB in %.3f s (%.0f MiB/s, page cache as found: "
            "warm unless dropped); compute waited %.3f s: %.0f%% of the read time hidden by "
            "prefetch; %lld unforeseen fetches\n", (long long)s->layer_reads, s->bytes_read / MIB,
            s->read_seconds, s->read_seconds > 0 ? s->bytes_read / MIB / s->read_seconds : 0.0,
            s->wait_seconds, 100.0 * hidden, (long long)s->misses);
}

/* Up to o->ntokens new tokens after seq[0..prompt_len) (seq has room for them), each printed as it
 * comes; ends early at a stop token (not printed). *n: the tokens made (appended to seq). */
static accel_status_t generate(const opts_t *o, accel_dispatch_t *d, accel_tokenizer_t *tok, int32_t *seq,
                               size_t prompt_len, int V, int T, float *logits, FILE *lf, const int32_t *stops,
                               int nstops, long long *n)
{
    int prev_start = 0, prev_n = 0;
    accel_status_t st = ACCEL_OK;
    *n = 0;
    for (int i = 0; i < o->ntokens; i++) {
        int len = (int)prompt_len + i, window = len < T ? len : T, start = len - window;
        if (o->no_kv_cache) {
            st = accel_dispatch_logits(d, seq + start, window, window - 1, logits);
        } else {
            st = accel_dispatch_next_logits(d, seq + start, window,
                                            accel_kv_reusable(prev_start, prev_n, start, window), logits);
            prev_start = start;
            prev_n = window;
        }
        if (st != ACCEL_OK) return st;
        if (write_logits(lf, logits, (size_t)V)) return ACCEL_ERR_IO;
        int32_t next;
        st = accel_model_pick_token(logits, V, (float)o->temperature, o->top_k, o->seed, i, &next);
        if (st != ACCEL_OK) return st;
        bool stop = false;
        for (int k = 0; k < nstops; k++) stop |= next == stops[k];
        if (stop) break;            /* the end of the reply: not printed */
        seq[len] = next;
        size_t nb = 0;
        const char *piece = accel_tokenizer_token_bytes(tok, next, 0, &nb);
        if (piece) fwrite(piece, 1, nb, stdout);    /* a character may span tokens: bytes as they come */
        fflush(stdout);
        (*n)++;
    }
    putchar('\n');
    return ACCEL_OK;
}

/* --interactive: user messages from standard input, one a line, after `first` (first_len bytes:
 * --prompt or --prompt-file, may be NULL); each reply printed and added to the conversation.
 * *produced: the tokens made. */
static accel_status_t chat_loop(const opts_t *o, accel_dispatch_t *d, const accel_chat_template_t *t,
                                accel_tokenizer_t *tok, int V, int T, float *logits, FILE *lf, const int32_t *stops,
                                int nstops, const char *first, size_t first_len, long long *produced)
{
    json_t *conv = chat_start(o);
    if (!conv) return ACCEL_ERR_INVALID;
    const bool tty = isatty(STDIN_FILENO);
    char *line = NULL, *text = NULL, err[4096];
    size_t cap = 0, len;
    accel_status_t st = ACCEL_OK;
    while (st == ACCEL_OK) {
        size_t n;
        if (first) {
            free(line);
            if ((line = malloc(first_len + 1))) {
                memcpy(line, first, first_len);
                line[first_len] = 0;
            }
            n = first_len;
            first = NULL;
        } else {
            if (tty) fputs("> ", stderr);
            ssize_t got = getline(&line, &cap, stdin);
            if (got < 0) break;
            n = (size_t)got;
            while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        }
        if (!line) { st = ACCEL_ERR_NOMEM; break; }
        if (!n) continue;
        if (!strcmp(line, "/reset")) {
            json_decref(conv);
            if (!(conv = chat_start(o))) { st = ACCEL_ERR_INVALID; break; }
            if (tty) fputs("(a new conversation)\n", stderr);
            continue;
        }
        json_t *m = message("user", line, n);
        if (!json_object_get(m, "content")) {
            fprintf(stderr, "accel_generate: the message is not UTF-8 text: skipped\n");
            json_decref(m);
            continue;
        }
        json_array_append_new(conv, m);
        free(text);
        text = NULL;
        if ((st = accel_chat_render(t, conv, NULL, true, &text, &len, err, sizeof err)) != ACCEL_OK) {
            fprintf(stderr, "accel_generate: %s\n", err);
            break;
        }
        size_t ntok = 0;
        int32_t *seq = encode_text(tok, text, len, V, (size_t)o->ntokens, &ntok, "conversation", false);
        if (!seq) { st = ACCEL_ERR_INVALID; break; }
        if (ntok > (size_t)T) {
            fprintf(stderr, "accel_generate: the conversation has %zu tokens, the model's context %d: the "
                    "message is dropped\n--> hint: /reset starts a new conversation\n", ntok, T);
            json_array_remove(conv, json_array_size(conv) - 1);
            free(seq);
            continue;
        }
        long long made = 0;
        st = generate(o, d, tok, seq, ntok, V, T, logits, lf, stops, nstops, &made);
        char *reply = NULL;
        size_t rlen = 0;
        if (st == ACCEL_OK && (st = accel_tokenizer_decode(tok, seq + ntok, (size_t)made, &reply, &rlen)) == ACCEL_OK)
            json_array_append_new(conv, message("assistant", reply, rlen));
        free(reply);
        free(seq);
        *produced += made;
    }
    free(line);
    free(text);
    json_decref(conv);
    return st;
}

/* Whether the command line sets model.context. */
static bool context_given(const opts_t *o)
{
    for (int i = 0; i < o->noverrides; i++)
        if (!strncmp(o->overrides[i], "model.context=", 14)) return true;
    return false;
}

int main(int argc, char **argv)
{
    accel_blas_fixup(argc, argv);
    opts_t o;
    int pr = parse_args(argc, argv, &o);
    if (pr) {
        free(o.overrides);
        free(o.chat_vars);
        free(o.stops);
        return pr == 1 ? 0 : 2;
    }
    int rc = 1;
    accel_status_t st = ACCEL_OK;
    accel_weights_t *w = NULL;
    accel_model_t model;
    memset(&model, 0, sizeof model);
    bool have_model = false, have_map = false;
    accel_device_map_t map;
    accel_dispatch_t *d = NULL;
    int32_t *seq = NULL;
    float *logits = NULL;
    char *text = NULL;
    accel_tokenizer_t *tok = NULL;
    accel_chat_template_t *chat = NULL;
    int32_t stops[64];
    int nstops = 0;
    FILE *lf = NULL;
    char path[4096 + 1100], err[2048];
    const double t_start = accel_now();

    if (resolve_weights(o.weights, path, sizeof path)) goto out;
    st = accel_weights_open(path, &w);
    if (st != ACCEL_OK) goto out;
    accel_config_t cfg;
    st = accel_weights_load_config(w, o.noverrides, o.overrides, &cfg, err, sizeof err);
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_generate: %s\n", err);
        goto out;
    }
    if (!accel_weights_config_yaml(w) && !o.noverrides)
        fprintf(stderr, "accel_generate: %s holds %s without a configuration: using the built-in "
                "defaults\n--> hint: give the model sizes, e.g. model.name=gpt model.layers=12 "
                "model.width=768 model.heads=12 model.context=256 model.vocab=256\n", path,
                accel_weights_kind(w));
    if (cfg.threads > 0) accel_blas_set_threads(cfg.threads);
    int lvl = accel_log_parse_level(cfg.log.level);
    if (lvl >= 0 && !getenv("ACCEL_LOG_LEVEL")) accel_log_set_level((accel_log_level_t)lvl);

    /* Empty initialisation: the model and its tensor table, no weight memory. */
    st = accel_model_create(&cfg, &model);
    if (st != ACCEL_OK) goto out;
    have_model = true;
    if (!model.ops->logits_range || !model.ops->logits_bytes) {
        fprintf(stderr, "accel_generate: model '%s' is not a language model with layer-by-layer "
                "logits\n--> hint: accel_generate runs model.name=gpt and llama checkpoints\n", model.ops->name);
        st = ACCEL_ERR_UNSUPPORTED;
        goto out;
    }
    st = accel_infer_pad_layout(&model.layout);
    if (st != ACCEL_OK) goto out;
    /* Every tensor there with the right shape, before any map or budget talk. */
    st = accel_weights_check(w, &model.layout);
    if (st != ACCEL_OK) goto out;
    const int V = model.vocab, model_context = model.context;
    int T = model.context;

    st = open_tokenizer(&o, w, V, &tok);
    if (st != ACCEL_OK) goto out;

    /* The text (prompt or scored file) as tokens, before any map or weights. */
    size_t text_len = 0, prompt_len = 0, ntext = 0;
    if (o.score || o.prompt_file) {
        text = read_file(o.score ? o.score : o.prompt_file, &text_len);
        if (!text) { st = ACCEL_ERR_IO; goto out; }
    } else if (o.prompt || !o.chat) {
        if (!o.prompt) o.prompt = "\n";
        text_len = strlen(o.prompt);
    }
    const char *src_text = o.prompt && !o.score ? o.prompt : text;
    if (o.interactive) {            /* the messages come later: the template and stop tokens now */
        if ((st = open_chat_template(&o, w, path, tok, &chat)) != ACCEL_OK ||
            (st = chat_stops(&o, chat, tok, path, stops, &nstops)) != ACCEL_OK)
            goto out;
    } else if (o.chat) {            /* the prompt is the user's message: the template renders it */
        char *rendered = NULL;
        size_t rlen = 0;
        const bool user = o.prompt || o.prompt_file;
        if ((st = open_chat_template(&o, w, path, tok, &chat)) != ACCEL_OK ||
            (st = chat_render(&o, chat, user ? src_text : NULL, user ? text_len : 0, &rendered, &rlen)) != ACCEL_OK ||
            (st = chat_stops(&o, chat, tok, path, stops, &nstops)) != ACCEL_OK) {
            free(rendered);
            goto out;
        }
        free(text);
        src_text = text = rendered;
        text_len = rlen;
    }
    if (!o.interactive) {
        seq = encode_text(tok, src_text, text_len, V, o.score ? 0 : (size_t)o.ntokens, &ntext,
                          o.score ? "text" : "prompt", !o.chat);
        if (!seq) { st = ACCEL_ERR_INVALID; goto out; }
    }
    if (o.interactive) {
        prompt_len = (size_t)T;     /* the workspace holds a whole context's tokens */
    } else if (!o.score) {
        prompt_len = ntext;
        if (prompt_len < 1) {
            fprintf(stderr, "accel_generate: the prompt is empty\n--> hint: give at least one "
                    "character (the default prompt is a newline)\n");
            st = ACCEL_ERR_INVALID;
            goto out;
        }
        if (prompt_len > (size_t)T) {
            fprintf(stderr, "accel_generate: the prompt has %zu tokens, but the model's context is "
                    "%d tokens\n--> hint: shorten the prompt (the model sees only its context); "
                    "generation past the context keeps the most recent tokens\n", prompt_len, T);
            st = ACCEL_ERR_INVALID;
            goto out;
        }
    } else if (ntext < 2) {
        fprintf(stderr, "accel_generate: '%s' has fewer than 2 tokens: nothing to score\n", o.score);
        st = ACCEL_ERR_INVALID;
        goto out;
    }

    /* A rotary model's context is a choice its weights do not fix: a run that never holds more
     * than `need` tokens computes the same with a context of `need`, and the inference buffers grow
     * with the context (a whole-context prefill, its T x T scores, the KV cache: Llama 3.1's
     * 131,072 positions would take tens of GiB). model.context on the command line is kept as
     * given; an interactive chat keeps the model's. */
    const size_t need = o.score ? ntext : prompt_len + (size_t)o.ntokens;
    if (!o.interactive && !strcmp(cfg.model.name, "llama") && !cfg.model.plugin[0] && need < (size_t)T &&
        !context_given(&o)) {
        accel_model_destroy(&model);
        have_model = false;
        cfg.model.context = (int)need;
        st = accel_model_create(&cfg, &model);
        if (st != ACCEL_OK) goto out;
        have_model = true;
        st = accel_infer_pad_layout(&model.layout);
        if (st != ACCEL_OK) goto out;
        T = model.context;
    }

    /* Workspace: the model's inference buffers, the logits, the tokens and the text. */
    size_t logit_rows = o.score ? (size_t)T : 1;
    size_t seq_len = o.score ? ntext : prompt_len + (size_t)o.ntokens;
    size_t workspace = model.ops->logits_bytes(&cfg) + logit_rows * (size_t)V * sizeof(float) +
                       seq_len * sizeof(int32_t) + text_len;
    accel_map_opts_t mo = { .ring_slots = o.ring_slots, .workspace = workspace };
    mo.max_memory[ACCEL_TIER_GPU] = 0;
    mo.max_memory[ACCEL_TIER_CPU] = SIZE_MAX;
    mo.max_memory[ACCEL_TIER_DISK] = SIZE_MAX;
    if (o.max_memory && accel_parse_max_memory(o.max_memory, mo.max_memory, err, sizeof err) != ACCEL_OK) {
        fprintf(stderr, "accel_generate: %s\n", err);
        st = ACCEL_ERR_INVALID;
        goto out;
    }
    if (!o.device_map || !strcmp(o.device_map, "auto")) {
        st = accel_device_map_auto(&model.layout, &mo, &map);
    } else {
        st = accel_device_map_parse(o.device_map, &model.layout, &mo, &map, err, sizeof err);
        if (st != ACCEL_OK) fprintf(stderr, "accel_generate: %s\n", err);
    }
    if (st != ACCEL_OK) goto out;
    have_map = true;
    if (!o.quiet || o.print_map) {
        FILE *mout = o.print_map ? stdout : stderr;
        char a[32];
        fprintf(mout, "accel_generate: %s (%s), model %s: %d layers, %zu parameters (%s fp32)\n",
                path, accel_weights_kind(w), model.ops->name, model.layout.nlayers,
                accel_layout_params(&model.layout),
                accel_infer_fmt_bytes(accel_layout_params(&model.layout) * sizeof(float), a, sizeof a));
        accel_device_map_print(&map, &model.layout, mout);
        const char *th = accel_tokenizer_hash(tok);
        fprintf(mout, "  tokenizer %s%s%s%s, %d tokens\n", accel_tokenizer_name(tok), th[0] ? " (xxh64 " : "",
                th, th[0] ? ")" : "", accel_tokenizer_vocab(tok));
        if (chat) {
            if (o.interactive)
                fprintf(mout, "  chat: each turn rendered with %s; the reply ends at", accel_chat_template_origin(chat));
            else
                fprintf(mout, "  chat: the conversation rendered with %s, %zu tokens; the reply ends at",
                        accel_chat_template_origin(chat), prompt_len);
            for (int k = 0; k < nstops; k++) {
                size_t nb = 0;
                const char *b = accel_tokenizer_token_bytes(tok, stops[k], 0, &nb);
                fprintf(mout, "%s %.*s (id %d)", k ? "," : "", (int)nb, b ? b : "?", stops[k]);
            }
            fprintf(mout, "%s\n", nstops ? "" : " no token (--stop adds one)");
        }
        if (T < model_context)
            fprintf(mout, "  context: %d of the model's %d positions, all this run holds (model.context=N sets "
                    "another)\n", T, model_context);
        if (o.no_kv_cache || !model.ops->logits_cached)
            fprintf(mout, "  no KV cache: each new token recomputes its window of up to %d tokens\n", T);
        else
            fprintf(mout, "  KV cache (in the workspace): one position's forward per new token up to "
                    "%d tokens, then the window slides and each token recomputes it\n", T);
    }
    if (o.print_map) {
        rc = 0;
        goto out;
    }

    logits = malloc(sizeof *logits * logit_rows * (size_t)V);
    if (!logits) { st = ACCEL_ERR_NOMEM; goto out; }
    if (o.logits_out && !(lf = fopen(o.logits_out, "wb"))) {
        fprintf(stderr, "accel_generate: cannot write '%s': %s\n", o.logits_out, strerror(errno));
        st = ACCEL_ERR_IO;
        goto out;
    }

    const size_t rss_before = accel_memory_resident();
    st = accel_dispatch_create(&model, w, &map, &d);
    if (st != ACCEL_OK) goto out;
    accel_dispatch_stats_t s0;
    accel_dispatch_stats(d, &s0);
    const double t_run = accel_now();
    long long produced = 0;
    if (o.interactive) {
        st = chat_loop(&o, d, chat, tok, V, T, logits, lf, stops, nstops, o.prompt || o.prompt_file ? src_text : NULL,
                       text_len, &produced);
        if (st != ACCEL_OK) goto out;
    } else if (!o.score) {
        if (!o.chat) fwrite(src_text, 1, text_len, stdout);     /* a chat prints the reply only */
        st = generate(&o, d, tok, seq, prompt_len, V, T, logits, lf, stops, nstops, &produced);
        if (st != ACCEL_OK) goto out;
    } else {
        /* Windows of T+1 tokens overlapping by one: inputs 0..n-1 predict 1..n. */
        double nll = 0;
        long long scored = 0, windows = 0;
        for (size_t at = 0; at + 1 < ntext; at += (size_t)T) {
            int n = (int)(ntext - at - 1 < (size_t)T ? ntext - at - 1 : (size_t)T);
            st = accel_dispatch_logits(d, seq + at, n, 0, logits);
            if (st != ACCEL_OK) goto out;
            if (write_logits(lf, logits, (size_t)n * (size_t)V)) { st = ACCEL_ERR_IO; goto out; }
            for (int t = 0; t < n; t++) {
                const float *z = logits + (size_t)t * V;
                double mx = z[0], sum = 0;
                for (int v = 1; v < V; v++) if (z[v] > mx) mx = z[v];
                for (int v = 0; v < V; v++) sum += exp((double)z[v] - mx);
                nll += mx + log(sum) - (double)z[seq[at + (size_t)t + 1]];
            }
            scored += n;
            windows++;
        }
        produced = scored;
        printf("score: %s: %lld tokens in %lld windows of up to %d: mean loss %.6f nats/token, "
               "perplexity %.4f, %.4f bits/byte\n", o.score, scored, windows, T, nll / scored,
               exp(nll / scored), nll / log(2.0) / (double)text_len);
    }
    const double t_end = accel_now();
    if (o.stats) {
        accel_dispatch_stats_t s;
        accel_dispatch_stats(d, &s);
        double run = t_end - t_run;
        fprintf(stderr, "load:   %.3f s to read %.1f MiB of resident weights (start-up to first "
                "pass %.3f s)\n", s.load_seconds, s.resident_bytes / MIB, t_run - t_start);
        fprintf(stderr, "%s %lld tokens in %.3f s = %.2f tokens/s (%lld passes)\n",
                o.score ? "score: " : "gen:   ", produced, run, run > 0 ? produced / run : 0.0,
                (long long)s.passes);
        report_disk(&s, stderr);
        size_t peak = accel_memory_peak();
        char a[32], b[32], c[32], e[32], f[32];
        fprintf(stderr, "memory: peak resident %s, before loading %s, peak - before %s; cpu budget "
                "%s (map total %s)\n", accel_infer_fmt_bytes(peak, a, sizeof a),
                accel_infer_fmt_bytes(rss_before, b, sizeof b),
                accel_infer_fmt_bytes(peak > rss_before ? peak - rss_before : 0, c, sizeof c),
                accel_infer_fmt_bytes(map.max_memory[ACCEL_TIER_CPU], e, sizeof e),
                accel_infer_fmt_bytes(map.cpu_total, f, sizeof f));
        fprintf(stderr, "memory-bytes: peak=%zu before=%zu budget=%zu map_total=%zu\n", peak,
                rss_before, map.max_memory[ACCEL_TIER_CPU] == SIZE_MAX ? 0 : map.max_memory[ACCEL_TIER_CPU],
                map.cpu_total);
    }
    rc = 0;
out:
    if (st != ACCEL_OK && rc) rc = accel_status_exit_code(st);
    if (rc == 0 && st != ACCEL_OK) rc = 1;
    if (lf && fclose(lf) && !rc) {
        fprintf(stderr, "accel_generate: writing '%s' failed: %s\n", o.logits_out, strerror(errno));
        rc = 1;
    }
    accel_dispatch_destroy(d);
    if (have_map) accel_device_map_free(&map);
    if (have_model) accel_model_destroy(&model);
    accel_weights_close(w);
    accel_tokenizer_free(tok);
    accel_chat_template_free(chat);
    free(seq);
    free(logits);
    free(text);
    free(o.overrides);
    free(o.chat_vars);
    free(o.stops);
    return rc;
}
