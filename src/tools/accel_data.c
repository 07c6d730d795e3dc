/* accel_data: make and inspect HDF5 datasets (format: include/accel/dataset.h, docs/datasets.md).
 *   accel_data prepare [--tokenizer T] [--jsonl] [--output FILE] [FILE|DIR ...]   text -> tokens
 *   accel_data import --output FILE [--vocab V] FILE ...                   llm.c .bin, .npy -> tokens
 *   accel_data synth --kind tokens|classification --output FILE [...]      synthetic test data
 *   accel_data info FILE [--context T]                                     what a file holds
 * A serial tool: under mpirun, rank 0 does the work and every rank exits with its status. */
#include "build_config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "accel/accel.h"
#include "accel/dataset.h"
#include "accel/memory.h"
#include "args.h"
#include "outcheck.h"

#define DEFAULT_CORPUS ACCEL_CORPUS_DEFAULT_INPUT
#define DEFAULT_OUTPUT ACCEL_CORPUS_DEFAULT_OUTPUT

/* ------------------------------------------------------------------ option parsing */

static int parse_ll(const char *cmd, const char *opt, const char *text, long long lo, long long hi,
                    long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "accel_data %s: %s '%s' is not an integer in [%lld, %lld]\n", cmd, opt, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_double(const char *cmd, const char *opt, const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v)) {
        fprintf(stderr, "accel_data %s: %s '%s' is not a number\n", cmd, opt, text);
        return -1;
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------ output files */

/* May `path` be (over)written? A missing file or an accel dataset may; another kind of file (a
 * text file given by mistake, weights, another program's HDF5 file) only with --force; an accel
 * checkpoint never (outcheck.c, shared with accel_ckpt). */
static int check_output(const char *cmd, const char *path, int force)
{
    char tool[64];
    snprintf(tool, sizeof tool, "accel_data %s", cmd);
    return accel_out_check(tool, path, ACCEL_OUT_DATASET, force != 0);
}

/* --buffer SIZE: a size accel_parse_bytes reads, at least 16 bytes (tests use tiny blocks). */
static int parse_buffer(const char *cmd, const char *v, size_t *out)
{
    if (accel_parse_bytes(v, out) != ACCEL_OK || *out < 16) {
        fprintf(stderr, "accel_data %s: --buffer '%s' is not a size of at least 16 bytes\n--> hint: "
                "e.g. --buffer 256MiB\n", cmd, v);
        return 1;
    }
    return 0;
}

/* The process's peak resident memory, after prepare or import (what a login node's limit meets). */
static void print_peak_memory(void)
{
    size_t peak = accel_memory_peak();
    if (peak) printf("peak memory %.0f MiB\n", (double)peak / 1048576.0);
}

/* ------------------------------------------------------------------ prepare */

static void prepare_usage(FILE *out)
{
    fprintf(out,
            "usage: accel_data prepare [--tokenizer FILE|DIR|bytes] [--jsonl] [--jsonl-field NAME]\n"
            "                          [--prompt-field NAME] [--chat-template FILE|DIR]\n"
            "                          [--chat-var NAME=VALUE ...] [--train-on assistant|all]\n"
            "                          [--output FILE] [--val-fraction F] [--context T] [--force]\n"
            "                          [--buffer SIZE] [FILE|DIR ...]\n"
            "\n"
            "Tokenize text into an accel token dataset (HDF5). Every document is tokenized and the\n"
            "documents are concatenated in input order:\n"
            "  text files (default)  each file is one document\n"
            "  --jsonl               JSON Lines: each line is a JSON object and its string field\n"
            "                        NAME (--jsonl-field, default \"text\") is one document\n"
            "  --prompt-field NAME   prompt and completion (fine-tuning): the line's string field\n"
            "                        NAME is the prompt, the document follows it, and only the\n"
            "                        document's tokens are trained (a loss mask; implies --jsonl)\n"
            "  conversations         a field holding a list of messages ({\"role\", \"content\"}, as\n"
            "                        TRL's \"messages\" or its conversational prompt/completion) is\n"
            "                        rendered with the model's chat template, and only the\n"
            "                        assistant's messages (the completion) are trained\n"
            "Files are read in the order given (a directory: its regular files in name order, then\n"
            "its symbolic links, recursing into subdirectories; hidden and empty files are skipped,\n"
            "and a file reached twice is read once). Every input file is listed as it is read.\n"
            "\n"
            "Tokenizer: --tokenizer names a Hugging Face tokenizer.json (or a model directory holding\n"
            "one); it is recorded in the dataset (name, hash and the file's bytes). Without it the\n"
            "tokenizer is \"bytes\": every byte is one token, token = byte value (0..255), vocab 256,\n"
            "stored as uint8. Tokens are stored as uint8, uint16, or uint32 when the vocabulary\n"
            "exceeds 65536.\n"
            "Document separators: when the tokenizer has a BOS token every document is preceded by\n"
            "it; else when it has an EOS token every document is followed by it; else (\"bytes\")\n"
            "nothing is added, so the stream is exactly the files' bytes (or the documents' UTF-8\n"
            "bytes). The rule in use is printed. With --prompt-field each line is [BOS] prompt\n"
            "document [EOS], using whichever of BOS and EOS the tokenizer has; the prompt is\n"
            "tokenized on its own, and the file keeps a loss mask (version 2) that trains the\n"
            "document and EOS and not the BOS or prompt: training averages the loss over the\n"
            "trained tokens of each global batch.\n"
            "Conversations: the chat template is --chat-template (a .jinja file, a\n"
            "tokenizer_config.json or a directory), else the --tokenizer directory's\n"
            "(chat_template.jinja or tokenizer_config.json), rendered as transformers'\n"
            "apply_chat_template does (special tokens from tokenizer_config.json; --chat-var sets\n"
            "template variables such as enable_thinking=false). The rendering is tokenized whole\n"
            "with nothing added (the template writes BOS and the end-of-turn tokens). Trained: the\n"
            "template's {%% generation %%} blocks when it has them; else each assistant message as\n"
            "what it adds to the conversation before it (rendered with the generation prompt);\n"
            "with a prompt field, what follows the prompt's generation prompt. A token is trained\n"
            "when its text overlaps trained text, as transformers' assistant masks. --train-on all\n"
            "trains every token. A line's \"tools\" list is passed to the template.\n"
            "Split: the last --val-fraction of the token stream is the validation split, the rest\n"
            "the training split (deterministic, no shuffling; the split may fall inside a document).\n"
            "\n"
            "Inputs that are not text are refused with a hint (NUL bytes, NumPy .npy or llm.c .bin\n"
            "magic -> accel_data import; JSON Lines -> prepare --jsonl), unless --force.\n"
            "\n"
            "Memory: tokens are held in a block of --buffer; a longer stream goes to a temporary\n"
            "file beside FILE (unlinked at once: nothing is left behind), so the output's directory\n"
            "needs room for the tokens twice while FILE is written. JSON Lines files are read in\n"
            "blocks of the same size; a text file is one document and is read whole. The peak memory\n"
            "is printed at the end.\n"
            "\n"
            "With no inputs it reads " DEFAULT_CORPUS " (the license texts every Debian system\n"
            "has, package base-files): a small corpus of English text, about 240 KB.\n"
            "\n"
            "options:\n"
            "  --tokenizer T        tokenizer.json file or directory, or 'bytes' (default bytes)\n"
            "  --jsonl              inputs are JSON Lines (one document per line)\n"
            "  --jsonl-field NAME   the field holding each line's text (default \"text\"; implies --jsonl)\n"
            "  --prompt-field NAME  the field holding each line's prompt, not trained (implies --jsonl)\n"
            "  --chat-template F    the chat template for conversations (default: the tokenizer's)\n"
            "  --chat-var N=V       a template variable, V as JSON or else a string (repeatable)\n"
            "  --train-on WHAT      conversations: assistant (default) or all tokens\n"
            "  --output FILE        dataset to write (default " DEFAULT_OUTPUT ", directory created);\n"
            "                       written under a temporary name and renamed when complete\n"
            "  --val-fraction F     share of the tokens held out for validation, 0 < F < 1 (default 0.1)\n"
            "  --context T          refuse a corpus whose splits hold no sample of T+1 tokens (default 64)\n"
            "  --force              tokenize inputs that do not look like text anyway, and overwrite\n"
            "                       FILE even if it is not an accel dataset (never a checkpoint)\n"
            "  --buffer SIZE        memory for tokens, and for JSON Lines input (default 64MiB)\n"
            "  -h, --help           this help\n"
            "\n"
            "examples:\n"
            "  accel_data prepare                                   licenses -> data/corpus.h5\n"
            "  accel_data prepare --output books.h5 --val-fraction 0.05 books/\n"
            "  accel_data prepare --jsonl --tokenizer gpt2/tokenizer.json --output web.h5 web.jsonl\n"
            "  accel_data prepare --prompt-field prompt --jsonl-field completion \\\n"
            "      --tokenizer llama/ --output sft.h5 sft.jsonl         prompt/completion pairs\n"
            "  accel_data prepare --jsonl-field messages --tokenizer qwen/ --output chat.h5 chat.jsonl\n"
            "                                                       conversations, assistant trained\n"
            "  accel_data info data/corpus.h5 --context 128\n");
}

static int cmd_prepare(int argc, char **argv)
{
    const char *output = NULL, *tokenizer = NULL, *field = NULL, *prompt_field = NULL, *chat_template = NULL;
    double val_fraction = 0.1;
    long long context = 64;
    size_t buffer = 0;
    int force = 0, ninputs = 0, jsonl = 0, nvars = 0, train_all = 0;
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    const char **vars = calloc((size_t)argc + 1, sizeof *vars);
    if (!inputs || !vars) {
        free(inputs);
        free(vars);
        return 1;
    }
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int missing = 0;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { prepare_usage(stdout); rc = 0; goto out; }
        else if ((v = accel_arg_value(argc, argv, &i, "--output", &missing))) output = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--tokenizer", &missing))) tokenizer = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--jsonl-field", &missing))) { field = v; jsonl = 1; }
        else if ((v = accel_arg_value(argc, argv, &i, "--prompt-field", &missing))) { prompt_field = v; jsonl = 1; }
        else if ((v = accel_arg_value(argc, argv, &i, "--chat-template", &missing))) { chat_template = v; jsonl = 1; }
        else if ((v = accel_arg_value(argc, argv, &i, "--chat-var", &missing))) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v) {
                fprintf(stderr, "accel_data prepare: --chat-var '%s' is not NAME=VALUE\n--> hint: e.g. "
                        "--chat-var enable_thinking=false\n", v);
                goto out;
            }
            vars[nvars++] = v;
        } else if ((v = accel_arg_value(argc, argv, &i, "--train-on", &missing))) {
            if (strcmp(v, "assistant") && strcmp(v, "all")) {
                fprintf(stderr, "accel_data prepare: --train-on '%s' is not assistant or all\n", v);
                goto out;
            }
            train_all = !strcmp(v, "all");
        }
        else if ((v = accel_arg_value(argc, argv, &i, "--val-fraction", &missing))) {
            if (parse_double("prepare", "--val-fraction", v, &val_fraction)) goto out;
        } else if ((v = accel_arg_value(argc, argv, &i, "--context", &missing))) {
            if (parse_ll("prepare", "--context", v, 1, INT_MAX - 1, &context)) goto out;
        } else if ((v = accel_arg_value(argc, argv, &i, "--buffer", &missing))) {
            if (parse_buffer("prepare", v, &buffer)) goto out;
        } else if (!strcmp(argv[i], "--force")) force = 1;
        else if (!strcmp(argv[i], "--jsonl")) jsonl = 1;
        else if (missing) { fprintf(stderr, "accel_data prepare: %s needs a value\n", argv[i]); goto out; }
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "accel_data prepare: unknown option '%s'\n", argv[i]);
            prepare_usage(stderr);
            goto out;
        } else inputs[ninputs++] = argv[i];
    }
    if (!(val_fraction > 0 && val_fraction < 1)) {
        fprintf(stderr, "accel_data prepare: --val-fraction %g is outside (0, 1)\n--> hint: 0.1 holds "
                "out the last 10%% of the text for validation\n", val_fraction);
        goto out;
    }
    if (field && !field[0]) {
        fprintf(stderr, "accel_data prepare: --jsonl-field is empty\n--> hint: name the field that "
                "holds each line's text, e.g. --jsonl-field text\n");
        goto out;
    }
    if (prompt_field && (!prompt_field[0] || !strcmp(prompt_field, field ? field : "text"))) {
        fprintf(stderr, "accel_data prepare: --prompt-field %s\n--> hint: name the field that holds "
                "each line's prompt; it must differ from the document field (--jsonl-field, default "
                "\"text\")\n", prompt_field[0] ? "names the document field too" : "is empty");
        goto out;
    }
    if (ninputs == 0 && jsonl) {
        fprintf(stderr, "accel_data prepare: --jsonl needs input files\n--> hint: accel_data prepare "
                "--jsonl FILE.jsonl ...\n");
        goto out;
    }
    if (ninputs == 0) {
        struct stat sb;
        if (stat(DEFAULT_CORPUS, &sb) != 0) {
            fprintf(stderr, "accel_data prepare: no inputs given and the default corpus " DEFAULT_CORPUS
                    " is missing\n--> hint: name text files or directories to read\n");
            goto out;
        }
        inputs[ninputs++] = DEFAULT_CORPUS;
    }
    if (!output) {
        output = DEFAULT_OUTPUT;
        if (mkdir("data", 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "accel_data prepare: cannot create directory 'data': %s\n", strerror(errno));
            rc = 1;
            goto out;
        }
    }
    struct stat csb;
    if (chat_template && stat(chat_template, &csb) != 0) {
        fprintf(stderr, "accel_data prepare: --chat-template '%s': %s\n", chat_template, strerror(errno));
        goto out;
    }
    if (check_output("prepare", output, force)) goto out;

    char err[2048];
    accel_prepare_options_t opt = {
        .tokenizer = tokenizer, .jsonl_field = jsonl ? (field ? field : "text") : NULL,
        .prompt_field = prompt_field,
        .val_fraction = val_fraction, .context = (int)context, .force = force != 0, .progress = stdout,
        .block_bytes = buffer, .chat_template = chat_template, .chat_vars = vars, .nchat_vars = nvars,
        .chat_train_all = train_all != 0,
    };
    accel_status_t st = accel_data_prepare(inputs, ninputs, output, &opt, err, sizeof err);
    if (st != ACCEL_OK) {
        fflush(stdout);
        fprintf(stderr, "accel_data prepare: %s\n", err);
        rc = accel_status_exit_code(st);
        goto out;
    }
    print_peak_memory();
    rc = 0;
out:
    free(inputs);
    free(vars);
    return rc;
}

/* ------------------------------------------------------------------ import */

static void import_usage(FILE *out)
{
    fprintf(out,
            "usage: accel_data import --output FILE [--vocab V] [--tokenizer FILE|DIR]\n"
            "                         [--val-fraction F | --val FILE ...] [--context T] [--force]\n"
            "                         [--buffer SIZE] [--document-start ID|none] FILE|DIR ...\n"
            "\n"
            "Import pre-tokenized token streams into an accel token dataset (HDF5). Each file is\n"
            "recognised by its first bytes (not its name):\n"
            "  llm.c token shards (.bin): 256 int32 header, magic 20240520 version 1 = GPT-2,\n"
            "                      uint16 tokens; magic 20240801 version 7 = Llama-3, uint32 tokens;\n"
            "                      header[2] = token count (the file must be exactly that long)\n"
            "  NumPy .npy arrays:  1-D, C order, little-endian uint8, uint16, uint32, int32 or int64\n"
            "The files' tokens are concatenated in the order given (a directory: its files in name\n"
            "order), exactly as they are: no separators are added. The last --val-fraction of the\n"
            "stream is the validation split; or, with --val, the --val files (in their order, after\n"
            "the others) are exactly the validation split. Each file is listed as it is read.\n"
            "\n"
            "Vocabulary: --vocab V, else the vocabulary of --tokenizer, else the llm.c header's kind\n"
            "(GPT-2 50257, Llama-3 128256); a .npy array states none, so it needs one of the two.\n"
            "Every token must be in [0, V): a token >= V is refused naming file, position and value.\n"
            "Tokens are stored as uint8 (V <= 256), uint16 (V <= 65536) or uint32.\n"
            "Documents: where each begins is recorded (for training with data.document_mask=true):\n"
            "at every token --document-start ID, else at the token llm.c puts before each document\n"
            "(GPT-2 shards: 50256 <|endoftext|>; Llama-3 shards: 128000 <|begin_of_text|>); a .npy\n"
            "array marks none unless --document-start is given.\n"
            "The tokenizer recorded is --tokenizer's (name, hash and tokenizer.json bytes), else\n"
            "\"llm.c-gpt2\", \"llm.c-llama3\" or \"npy\" (\"pretokenized\" when mixed), with no hash.\n"
            "Memory: tokens are held in a block of --buffer; a longer stream goes to a temporary\n"
            "file beside FILE (unlinked at once), so the output's directory needs room for the\n"
            "tokens twice while FILE is written. The peak memory is printed at the end.\n"
            "\n"
            "options:\n"
            "  --output FILE        dataset to write (required); written under a temporary name and\n"
            "                       renamed when complete\n"
            "  --vocab V            vocabulary size\n"
            "  --tokenizer T        the tokenizer.json the tokens were made with (recorded)\n"
            "  --val-fraction F     share of the tokens held out for validation, 0 < F < 1 (default 0.1)\n"
            "  --val FILE           a file whose tokens are the validation split (repeatable), e.g.\n"
            "                       llm.c's *_val_*.bin shard; not with --val-fraction\n"
            "  --context T          refuse a stream whose splits hold no sample of T+1 tokens (default 64)\n"
            "  --force              overwrite FILE even if it is not an accel dataset (an existing\n"
            "                       accel dataset is replaced without it; an accel checkpoint never)\n"
            "  --buffer SIZE        memory for tokens (default 64MiB)\n"
            "  --document-start ID  the token that begins every document (none: record no documents)\n"
            "  -h, --help           this help\n"
            "\n"
            "examples:\n"
            "  accel_data import --output tiny.h5 tiny_shakespeare_train.bin --val tiny_shakespeare_val.bin\n"
            "  accel_data import --output web.h5 --vocab 128256 tokens.npy\n");
}

static int cmd_import(int argc, char **argv)
{
    const char *output = NULL, *tokenizer = NULL;
    double val_fraction = 0.1;
    long long context = 64, vocab = 0, doc_token = -1;
    size_t buffer = 0;
    int force = 0, ninputs = 0, nval = 0, fraction_given = 0, no_documents = 0;
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    const char **vals = calloc((size_t)argc + 1, sizeof *vals);
    if (!inputs || !vals) { free(inputs); free(vals); return 1; }
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int missing = 0;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { import_usage(stdout); rc = 0; goto out; }
        else if ((v = accel_arg_value(argc, argv, &i, "--output", &missing))) output = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--tokenizer", &missing))) tokenizer = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--val", &missing))) vals[nval++] = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--vocab", &missing))) {
            if (parse_ll("import", "--vocab", v, 2, INT32_MAX, &vocab)) goto out;
        } else if ((v = accel_arg_value(argc, argv, &i, "--val-fraction", &missing))) {
            fraction_given = 1;
            if (parse_double("import", "--val-fraction", v, &val_fraction)) goto out;
        } else if ((v = accel_arg_value(argc, argv, &i, "--context", &missing))) {
            if (parse_ll("import", "--context", v, 1, INT_MAX - 1, &context)) goto out;
        } else if ((v = accel_arg_value(argc, argv, &i, "--buffer", &missing))) {
            if (parse_buffer("import", v, &buffer)) goto out;
        } else if ((v = accel_arg_value(argc, argv, &i, "--document-start", &missing))) {
            no_documents = !strcmp(v, "none");
            if (!no_documents && parse_ll("import", "--document-start", v, 0, INT32_MAX, &doc_token)) goto out;
        } else if (!strcmp(argv[i], "--force")) force = 1;
        else if (missing) { fprintf(stderr, "accel_data import: %s needs a value\n", argv[i]); goto out; }
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "accel_data import: unknown option '%s'\n", argv[i]);
            import_usage(stderr);
            goto out;
        } else inputs[ninputs++] = argv[i];
    }
    if (!(val_fraction > 0 && val_fraction < 1)) {
        fprintf(stderr, "accel_data import: --val-fraction %g is outside (0, 1)\n--> hint: 0.1 holds "
                "out the last 10%% of the tokens for validation\n", val_fraction);
        goto out;
    }
    if (nval > 0 && fraction_given) {
        fprintf(stderr, "accel_data import: --val and --val-fraction both say where /val comes from\n"
                "--> hint: give one of them\n");
        goto out;
    }
    if (!output || ninputs == 0) {
        fprintf(stderr, "accel_data import: %s\n--> hint: accel_data import --output tokens.h5 "
                "shard_000.bin shard_001.bin\n", !output ? "--output is required" : "no input files");
        goto out;
    }
    if (check_output("import", output, force)) goto out;
    char err[2048];
    accel_import_options_t opt = { .vocab = (int)vocab, .tokenizer = tokenizer, .val_inputs = vals,
                                   .nval_inputs = nval, .val_fraction = val_fraction,
                                   .context = (int)context, .progress = stdout,
                                   .block_bytes = buffer, .document_token = (int32_t)doc_token,
                                   .documents = no_documents ? ACCEL_DOCUMENTS_NONE
                                                : doc_token >= 0 ? ACCEL_DOCUMENTS_TOKEN : ACCEL_DOCUMENTS_AUTO };
    accel_status_t st = accel_data_import(inputs, ninputs, output, &opt, err, sizeof err);
    if (st != ACCEL_OK) {
        fflush(stdout);
        fprintf(stderr, "accel_data import: %s\n", err);
        rc = accel_status_exit_code(st);
        goto out;
    }
    print_peak_memory();
    rc = 0;
out:
    free(inputs);
    free(vals);
    return rc;
}

/* ------------------------------------------------------------------ synth */

/* Synthetic token stream (kept here: the library may grow its own token generator). Token k is a
 * pure function of (seed, k): mostly a counting sequence, next = previous + 7 (mod vocab), so a
 * model can learn it, with 10% of tokens replaced by uniform noise. */
#define SYNTH_TOKEN_STREAM 0x746f6b656e73ull    /* "tokens" */
static int synth_stream_token(uint64_t seed, int vocab, int64_t k)
{
    if (accel_rng_uniform(seed, ACCEL_RNG_DATA, SYNTH_TOKEN_STREAM, 2 * (uint64_t)k) < 0.1f)
        return (int)(accel_rng_uniform(seed, ACCEL_RNG_DATA, SYNTH_TOKEN_STREAM, 2 * (uint64_t)k + 1) *
                     (float)vocab) % vocab;
    return (int)((k * 7) % vocab);
}

static void synth_usage(FILE *out)
{
    fprintf(out,
            "usage: accel_data synth --kind tokens|classification --output FILE [options]\n"
            "\n"
            "Write a synthetic dataset (for tests and demos); every value is a pure function of\n"
            "(seed, sample index), so the same options always give the same file.\n"
            "  tokens:          a noisy counting sequence (next = previous + 7 mod vocab, 10%% random\n"
            "                   tokens), tokenizer \"synthetic\"; /train holds samples*context+1 tokens\n"
            "  classification:  the built-in task of accel_train (inputs ~ N(0,1)^F, label = argmax of\n"
            "                   a fixed random linear teacher, a fraction --noise of labels random);\n"
            "                   train sample i is synthetic sample i, val sample j is sample N+j\n"
            "\n"
            "options:\n"
            "  --kind K             tokens | classification (required)\n"
            "  --output FILE        dataset to write (required)\n"
            "  --samples N          training samples (default 1024)\n"
            "  --val-samples N      validation samples (default samples/8, at least 1)\n"
            "  --seed S             generator seed (default 1234)\n"
            "  --vocab V            tokens: vocabulary size, 2..65536 (default 256; uint8 when <= 256)\n"
            "  --context T          tokens: context the sample counts refer to (default 64)\n"
            "  --features F         classification: inputs per sample (default 16)\n"
            "  --classes K          classification: number of classes (default 4)\n"
            "  --noise X            classification: fraction of random labels, 0..1 (default 0.05)\n"
            "  --force              overwrite FILE even if it is not an accel dataset (an existing\n"
            "                       accel dataset is replaced without it; an accel checkpoint never)\n"
            "  --buffer SIZE        memory for tokens (default 64MiB)\n"
            "  -h, --help           this help\n");
}

static int cmd_synth(int argc, char **argv)
{
    const char *kind = NULL, *output = NULL;
    long long samples = 1024, val_samples = -1, seed = 1234, vocab = 256, context = 64;
    long long features = 16, classes = 4;
    double noise = 0.05;
    int force = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int missing = 0, bad = 0;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { synth_usage(stdout); return 0; }
        else if ((v = accel_arg_value(argc, argv, &i, "--kind", &missing))) kind = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--output", &missing))) output = v;
        else if ((v = accel_arg_value(argc, argv, &i, "--samples", &missing))) bad = parse_ll("synth", "--samples", v, 1, 1LL << 40, &samples);
        else if ((v = accel_arg_value(argc, argv, &i, "--val-samples", &missing))) bad = parse_ll("synth", "--val-samples", v, 1, 1LL << 40, &val_samples);
        else if ((v = accel_arg_value(argc, argv, &i, "--seed", &missing))) bad = parse_ll("synth", "--seed", v, 0, LLONG_MAX, &seed);
        else if ((v = accel_arg_value(argc, argv, &i, "--vocab", &missing))) bad = parse_ll("synth", "--vocab", v, 2, 65536, &vocab);
        else if ((v = accel_arg_value(argc, argv, &i, "--context", &missing))) bad = parse_ll("synth", "--context", v, 1, 1 << 24, &context);
        else if ((v = accel_arg_value(argc, argv, &i, "--features", &missing))) bad = parse_ll("synth", "--features", v, 1, 1 << 20, &features);
        else if ((v = accel_arg_value(argc, argv, &i, "--classes", &missing))) bad = parse_ll("synth", "--classes", v, 2, 1 << 20, &classes);
        else if ((v = accel_arg_value(argc, argv, &i, "--noise", &missing))) {
            bad = parse_double("synth", "--noise", v, &noise);
            if (!bad && (noise < 0 || noise > 1)) {
                fprintf(stderr, "accel_data synth: --noise %g is outside [0, 1]\n", noise);
                bad = 1;
            }
        } else if (!strcmp(argv[i], "--force")) force = 1;
        else if (missing) { fprintf(stderr, "accel_data synth: %s needs a value\n", argv[i]); return 2; }
        else {
            fprintf(stderr, "accel_data synth: unexpected argument '%s'\n", argv[i]);
            synth_usage(stderr);
            return 2;
        }
        if (bad) return 2;
    }
    if (!kind || !output) {
        fprintf(stderr, "accel_data synth: --kind and --output are required\n--> hint: accel_data synth "
                "--kind tokens --output tokens.h5\n");
        return 2;
    }
    int is_tokens = !strcmp(kind, "tokens");
    if (!is_tokens && strcmp(kind, "classification")) {
        fprintf(stderr, "accel_data synth: --kind '%s' is neither 'tokens' nor 'classification'\n", kind);
        return 2;
    }
    if (val_samples < 0) val_samples = samples / 8 > 0 ? samples / 8 : 1;
    if (check_output("synth", output, force)) return 2;

    accel_status_t st;
    char desc[256];
    if (is_tokens) {
        long long ntrain = samples * context + 1, nval = val_samples * context + 1;
        if (ntrain + nval > (1LL << 34)) {
            fprintf(stderr, "accel_data synth: %lld tokens is more than a synthetic test set needs\n", ntrain + nval);
            return 2;
        }
        int bytes = vocab <= 256 ? 1 : 2;
        void *stream = malloc((size_t)(ntrain + nval) * (size_t)bytes);
        if (!stream) { fprintf(stderr, "accel_data synth: out of memory\n"); return 1; }
        for (long long k = 0; k < ntrain + nval; k++) {
            int t = synth_stream_token((uint64_t)seed, (int)vocab, k);
            if (bytes == 1) ((uint8_t *)stream)[k] = (uint8_t)t;
            else ((uint16_t *)stream)[k] = (uint16_t)t;
        }
        snprintf(desc, sizeof desc, "accel_data synth --kind tokens: counting sequence +7 mod %lld with "
                 "10%% noise, seed %lld", vocab, seed);
        st = accel_dataset_write_tokens(output, "synthetic", (int)vocab, stream, bytes, ntrain, nval, desc);
        free(stream);
        if (st == ACCEL_OK)
            printf("wrote %s: %s v%d, tokenizer synthetic, vocab %lld (%s); train %lld tokens (%lld "
                   "samples at context %lld), val %lld tokens (%lld samples)\n", output,
                   ACCEL_DATASET_FORMAT_TOKENS, ACCEL_DATASET_VERSION, vocab, bytes == 1 ? "uint8" : "uint16",
                   ntrain, samples, context, nval, val_samples);
    } else {
        long long n = samples + val_samples;
        if (n * features > (1LL << 31)) {
            fprintf(stderr, "accel_data synth: %lld x %lld inputs is more than a synthetic test set needs\n",
                    n, features);
            return 2;
        }
        float *x = malloc(sizeof *x * (size_t)(n * features));
        int32_t *y = malloc(sizeof *y * (size_t)n);
        if (!x || !y) { free(x); free(y); fprintf(stderr, "accel_data synth: out of memory\n"); return 1; }
        for (long long i = 0; i < n; i++)
            accel_synthetic_sample((uint64_t)seed, (int)features, (int)classes, noise, i,
                                   x + (size_t)(i * features), &y[i]);
        snprintf(desc, sizeof desc, "accel_data synth --kind classification: accel_synthetic_sample, "
                 "seed %lld, noise %g; val sample j is synthetic sample %lld+j", seed, noise, samples);
        st = accel_dataset_write_classification(output, (int)classes, (int)features, x, y, samples,
                                                x + (size_t)(samples * features), y + samples,
                                                val_samples, desc);
        free(x);
        free(y);
        if (st == ACCEL_OK)
            printf("wrote %s: %s v%d, %lld classes, %lld features; train %lld samples, val %lld samples\n",
                   output, ACCEL_DATASET_FORMAT_CLASSIFICATION, ACCEL_DATASET_VERSION, classes, features,
                   samples, val_samples);
    }
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_data synth: writing '%s' failed: %s\n", output, accel_status_str(st));
        return accel_status_exit_code(st);
    }
    return 0;
}

/* ------------------------------------------------------------------ info */

static void info_usage(FILE *out)
{
    fprintf(out,
            "usage: accel_data info FILE [--context T]\n"
            "\n"
            "Print a dataset's format, version and splits: for token datasets the tokenizer\n"
            "(\"bytes\" = one token per byte, vocab 256) with its hash and whether the file keeps\n"
            "its tokenizer.json (and the chat template, when conversations were rendered), the\n"
            "vocabulary, the stored token width and tokens per split, and with\n"
            "--context T the samples per split (a sample is T+1 tokens; nsamples = (ntokens-1)/T);\n"
            "for classification datasets the classes, features and samples per split.\n"
            "The file is opened and validated exactly as accel_train opens it.\n"
            "\n"
            "options:\n"
            "  --context T          count token samples at context T\n"
            "  -h, --help           this help\n");
}

/* The optional free-text attribute writers leave for people. */
static void print_description(const char *path)
{
    bool h5;
    char format[64], description[4096];
    if (accel_dataset_file_kind(path, &h5, format, sizeof format, description, sizeof description) ==
            ACCEL_OK && description[0])
        printf("description: %s\n", description);
}

static int cmd_info(int argc, char **argv)
{
    const char *path = NULL;
    long long context = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int missing = 0;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { info_usage(stdout); return 0; }
        else if ((v = accel_arg_value(argc, argv, &i, "--context", &missing))) {
            if (parse_ll("info", "--context", v, 1, INT_MAX - 1, &context)) return 2;
        } else if (missing) { fprintf(stderr, "accel_data info: %s needs a value\n", argv[i]); return 2; }
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "accel_data info: unknown option '%s'\n", argv[i]);
            info_usage(stderr);
            return 2;
        } else if (!path) path = argv[i];
        else { fprintf(stderr, "accel_data info: more than one file ('%s', '%s')\n", path, argv[i]); return 2; }
    }
    if (!path) {
        fprintf(stderr, "accel_data info: which file?\n");
        info_usage(stderr);
        return 2;
    }
    static const char *const splits[] = { "train", "val" };
    accel_dataset_t *ds[2] = { NULL, NULL };
    accel_status_t st = ACCEL_OK;
    for (int s = 0; s < 2 && st == ACCEL_OK; s++)
        st = accel_dataset_open(path, splits[s], context > 0 ? (int)context : 1, MPI_COMM_SELF, &ds[s]);
    if (st == ACCEL_OK) {
        const accel_dataset_info_t *in = accel_dataset_info(ds[0]);
        printf("file: %s\n", path);
        if (in->kind == ACCEL_DATASET_TOKENS) {
            printf("format: %s, version %d\n", ACCEL_DATASET_FORMAT_TOKENS, in->version);
            printf("tokenizer: %s%s, vocab %d, stored as %d-byte integers (%sint%d)\n", in->tokenizer,
                   !strcmp(in->tokenizer, "bytes") ? " (one token per byte)" : "", in->vocab,
                   in->token_bytes, in->token_signed ? "" : "u", 8 * in->token_bytes);
            printf("tokenizer hash: %s\n", in->tokenizer_hash[0] ? in->tokenizer_hash : "none");
            if (in->direct_reads) printf("token reads: direct (pread from the file, outside HDF5)\n");
            else printf("token reads: through HDF5 (%s)\n", in->hdf5_reads_why ? in->hdf5_reads_why : "");
            char *json = NULL;
            size_t jlen = 0;
            if (in->has_tokenizer_json && accel_dataset_tokenizer_json(path, &json, &jlen) == ACCEL_OK)
                printf("tokenizer.json: kept in the file (%zu bytes, dataset /tokenizer.json)\n", jlen);
            else
                printf("tokenizer.json: not kept%s\n", !strcmp(in->tokenizer, "bytes") ? " (none needed)" : "");
            free(json);
            /* Only files made from conversations keep one: the others print as before. */
            char *chat = NULL;
            size_t clen = 0;
            if (in->has_chat_template && accel_dataset_chat_template(path, &chat, &clen) == ACCEL_OK)
                printf("chat template: kept in the file (%zu bytes, dataset /chat_template)\n", clen);
            free(chat);
        } else {
            printf("format: %s, version %d\n", ACCEL_DATASET_FORMAT_CLASSIFICATION, in->version);
            printf("classes: %d, features: %d\n", in->classes, in->features);
        }
        print_description(path);
        for (int s = 0; s < 2; s++) {
            in = accel_dataset_info(ds[s]);
            if (in->kind == ACCEL_DATASET_TOKENS && context > 0)
                printf("%-5s: %lld tokens, %lld samples at context %lld\n", splits[s],
                       (long long)in->ntokens, (long long)in->nsamples, context);
            else if (in->kind == ACCEL_DATASET_TOKENS)
                printf("%-5s: %lld tokens\n", splits[s], (long long)in->ntokens);
            else
                printf("%-5s: %lld samples\n", splits[s], (long long)in->nsamples);
            int64_t trained = 0;
            if (in->kind == ACCEL_DATASET_TOKENS && in->has_loss_mask &&
                (st = accel_dataset_loss_mask_count(ds[s], &trained)) == ACCEL_OK)
                printf("%-5s  loss mask: %lld of the tokens are trained (%.1f%%), the rest are context\n",
                       "", (long long)trained, in->ntokens ? 100.0 * (double)trained / (double)in->ntokens : 0.0);
            int64_t docs = 0;
            if (in->kind == ACCEL_DATASET_TOKENS && in->has_document_starts &&
                (st = accel_dataset_document_count(ds[s], &docs)) == ACCEL_OK)
                printf("%-5s  documents: %lld begin here (recorded: data.document_mask can keep them apart)\n",
                       "", (long long)docs);
        }
    }
    for (int s = 0; s < 2; s++) accel_dataset_close(ds[s]);
    return accel_status_exit_code(st);
}

/* ------------------------------------------------------------------ main */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: accel_data <command> [options]\n"
            "\n"
            "Make and inspect accel datasets (HDF5 files read in parallel by accel_train):\n"
            "  prepare   tokenize text files or JSON Lines documents into a token dataset, with a\n"
            "            Hugging Face tokenizer.json (--tokenizer) or byte by byte (tokenizer \"bytes\":\n"
            "            token = byte value, vocab 256); default corpus " DEFAULT_CORPUS "\n"
            "  import    llm.c token shards (.bin) and NumPy .npy token arrays -> a token dataset,\n"
            "            the token stream kept exactly\n"
            "  synth     write a synthetic token or classification dataset (tests, demos)\n"
            "  info      print a dataset's format, splits and sizes\n"
            "\n"
            "'accel_data <command> --help' describes each command; docs/datasets.md the format.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
        printf("accel_data (accel) %s\n", accel_version());
        return 0;
    }
    int (*run)(int, char **) = !strcmp(argv[1], "prepare") ? cmd_prepare
                               : !strcmp(argv[1], "import") ? cmd_import
                               : !strcmp(argv[1], "synth") ? cmd_synth
                               : !strcmp(argv[1], "info") ? cmd_info : NULL;
    if (!run) {
        fprintf(stderr, "accel_data: unknown command '%s'\n\n", argv[1]);
        usage(stderr);
        return 2;
    }
    /* --help needs no MPI. */
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return run(argc - 1, argv + 1);

    accel_runtime_t *rt = NULL;
    accel_status_t st = accel_init(&argc, &argv, &rt);
    int rc;
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_data: start-up failed: %s\n", accel_status_str(st));
        rc = accel_status_exit_code(st);
    } else {
        rc = rt->rank == 0 ? run(argc - 1, argv + 1) : 0;
        fflush(stdout);
        if (accel_mpi_status(MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast (exit status)") != ACCEL_OK)
            rc = 1;
    }
    accel_finalize(rt);
    return rc;
}
