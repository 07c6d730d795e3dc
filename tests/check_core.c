/* Unit tests of the core layer (single process): status codes, logging, configuration, launcher
 * detection, topology, dtype conversions, keyed RNG. The other layers have their own programs
 * (check_device, check_arena, check_data, check_nn, check_train, ...). */
#include <check.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/config.h"
#include "accel/dtype.h"
#include "accel/launch.h"
#include "accel/log.h"
#include "accel/rng.h"
#include "accel/runtime.h"
#include "accel/status.h"

/* ---------------------------------------------------------------- status */
START_TEST(test_status_strings)
{
    for (int s = 0; s >= ACCEL_ERR_STOPPED; s--) {
        const char *text = accel_status_str((accel_status_t)s);
        ck_assert_ptr_nonnull(text);
        ck_assert_str_ne(text, "unknown status");
        for (int t = s - 1; t >= ACCEL_ERR_STOPPED; t--)
            ck_assert_str_ne(text, accel_status_str((accel_status_t)t));
    }
    ck_assert_int_eq(accel_status_exit_code(ACCEL_OK), 0);
    ck_assert_int_eq(accel_status_exit_code(ACCEL_ERR_CONFIG), 2);
    ck_assert_int_eq(accel_status_exit_code(ACCEL_ERR_MPI), 1);
}
END_TEST

/* ---------------------------------------------------------------- logging */
static char *capture_log(void (*emit)(void))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    accel_log_set_stream(f);
    emit();
    accel_log_set_stream(NULL);
    fclose(f);
    return buf;
}

static void emit_as_rank3(void)
{
    accel_log_set_identity(3, 8, "node7");
    accel_log_set_level(ACCEL_LOG_INFO);
    accel_log_set_all_ranks(false);
    ACCEL_INFO("main only %d", 1);       /* suppressed: not rank 0 */
    ACCEL_WARN("warn from %s", "all");
    ACCEL_DEBUG("hidden at info level");
    accel_log_set_all_ranks(true);
    ACCEL_INFO("per-rank %d", 2);
    accel_log_set_all_ranks(false);
}

START_TEST(test_log_format_and_filters)
{
    char *out = capture_log(emit_as_rank3);
    ck_assert_ptr_null(strstr(out, "main only"));
    ck_assert_ptr_nonnull(strstr(out, "[rank 3/8 node7] WARNING: warn from all\n"));
    ck_assert_ptr_null(strstr(out, "hidden"));
    ck_assert_ptr_nonnull(strstr(out, "[rank 3/8 node7] per-rank 2\n"));
    free(out);
    ck_assert_int_eq(accel_log_parse_level("debug"), ACCEL_LOG_DEBUG);
    ck_assert_int_eq(accel_log_parse_level("WARN"), ACCEL_LOG_WARN);
    ck_assert_int_eq(accel_log_parse_level("2"), ACCEL_LOG_INFO);
    ck_assert_int_eq(accel_log_parse_level("loud"), -1);
    accel_log_set_identity(0, 1, "test");
}
END_TEST

/* ---------------------------------------------------------------- configuration */
static char g_tmpdir[256];

static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static char *const g_no_env[] = { NULL };

START_TEST(test_config_defaults)
{
    accel_config_t c;
    accel_config_defaults(&c);
    ck_assert_str_eq(c.model.name, "gpt");
    ck_assert_int_eq(c.train.grad_accum, 1);
    ck_assert_str_eq(c.optim.name, "adamw");
    ck_assert(c.data.drop_last);
    ck_assert_double_eq_tol(c.dist.timeout, 600.0, 1e-9);
}
END_TEST

START_TEST(test_config_yaml_overrides_env)
{
    const char *path = write_file("job.yaml",
        "# a job\nseed: 7\nmodel:\n  name: mlp\n  hidden: 64\ntrain:\n  steps: 12\n  global_batch: 32\n"
        "  sync_each_batch: yes\noptim:\n  lr: 1e-3\n  schedule: linear\n");
    char *overrides[] = { "train.steps=20", "optim.warmup=3" };
    char *env[] = { "ACCEL_TRAIN_STEPS=30", "ACCEL_OPTIM_BETA2=0.95", "UNRELATED=1", NULL };
    accel_config_t c;
    char err[512];
    ck_assert_int_eq(accel_config_load(&c, path, 2, overrides, env, err, sizeof err), ACCEL_OK);
    ck_assert_uint_eq(c.seed, 7);
    ck_assert_int_eq(c.model.hidden, 64);
    ck_assert_int_eq(c.train.global_batch, 32);
    ck_assert(c.train.sync_each_batch);
    ck_assert_double_eq_tol(c.optim.lr, 1e-3, 1e-15);
    ck_assert_str_eq(c.optim.schedule, "linear");
    ck_assert_int_eq(c.optim.warmup, 3);                       /* override beats the file */
    ck_assert_int_eq(c.train.steps, 30);                       /* environment beats the override */
    ck_assert_double_eq_tol(c.optim.beta2, 0.95, 1e-15);
}
END_TEST

START_TEST(test_config_print_round_trip)
{
    accel_config_t a, b;
    char err[512];
    char *ov[] = { "model.plugin=/tmp/x.so", "train.metrics=m.jsonl", "dist.hybrid=true", "optim.eps=2.5e-7" };
    ck_assert_int_eq(accel_config_load(&a, NULL, 4, ov, g_no_env, err, sizeof err), ACCEL_OK);
    char *yaml = accel_config_to_yaml(&a);
    const char *path = write_file("round.yaml", yaml);
    free(yaml);
    ck_assert_int_eq(accel_config_load(&b, path, 0, NULL, g_no_env, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
}
END_TEST

static void expect_config_error(const char *yaml, int nov, char **ov, accel_status_t want_st,
                                const char *want1, const char *want2)
{
    const char *path = yaml ? write_file("bad.yaml", yaml) : NULL;
    accel_config_t c;
    char err[1024] = "";
    accel_status_t st = accel_config_load(&c, path, nov, ov, g_no_env, err, sizeof err);
    ck_assert_int_eq(st, want_st);
    ck_assert_msg(strstr(err, want1), "message '%s' lacks '%s'", err, want1);
    if (want2) ck_assert_msg(strstr(err, want2), "message '%s' lacks '%s'", err, want2);
}

START_TEST(test_config_errors)
{
    expect_config_error("train:\n  stpes: 10\n", 0, NULL, ACCEL_ERR_CONFIG, "unknown configuration key 'train.stpes'", "did you mean 'train.steps'");
    expect_config_error("train:\n  steps: ten\n", 0, NULL, ACCEL_ERR_CONFIG, "'train.steps' expects an integer, got 'ten'", "bad.yaml:2");
    expect_config_error("train:\n  steps: [1, 2]\n", 0, NULL, ACCEL_ERR_CONFIG, "list value", NULL);
    expect_config_error("train: 5\n", 0, NULL, ACCEL_ERR_CONFIG, "'train' is a section", NULL);
    expect_config_error("model:\n  name:\n    x: 1\n", 0, NULL, ACCEL_ERR_CONFIG, "takes a single value", NULL);
    expect_config_error("model: {name: mlp\n", 0, NULL, ACCEL_ERR_CONFIG, "malformed YAML", "bad.yaml:");
    expect_config_error("precision: fp8\n", 0, NULL, ACCEL_ERR_CONFIG, "expected one of fp32|bf16|fp16", NULL);
    expect_config_error("optim:\n  lr: -1\n", 0, NULL, ACCEL_ERR_CONFIG, "must not be negative", NULL);
    expect_config_error("train:\n  sync_each_batch: maybe\n", 0, NULL, ACCEL_ERR_CONFIG, "true or false", NULL);
    char *ov[] = { "nosuchkey=1" };
    expect_config_error(NULL, 1, ov, ACCEL_ERR_CONFIG, "command line: unknown configuration key 'nosuchkey'", NULL);
    char *ov2[] = { "train.steps=9999999999999" };
    expect_config_error(NULL, 1, ov2, ACCEL_ERR_CONFIG, "expects an integer", NULL);
    accel_config_t c;
    char err[512];
    ck_assert_int_eq(accel_config_load(&c, "/nonexistent/job.yaml", 0, NULL, g_no_env, err, sizeof err),
                     ACCEL_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err, "cannot open configuration file '/nonexistent/job.yaml'"));
    char *env[] = { "ACCEL_TRAIN_STEPS=abc", NULL };
    ck_assert_int_eq(accel_config_load(&c, NULL, 0, NULL, env, err, sizeof err), ACCEL_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err, "environment variable ACCEL_TRAIN_STEPS"));
    ck_assert(accel_config_is_override("train.steps=3"));
    ck_assert(!accel_config_is_override("job.yaml"));
    ck_assert(!accel_config_is_override("dir/a=b.yaml"));
}
END_TEST

START_TEST(test_config_empty_file)
{
    const char *path = write_file("empty.yaml", "");
    accel_config_t c, d;
    char err[256];
    ck_assert_int_eq(accel_config_load(&c, path, 0, NULL, g_no_env, err, sizeof err), ACCEL_OK);
    accel_config_defaults(&d);
    ck_assert_int_eq(memcmp(&c, &d, sizeof c), 0);
}
END_TEST

/* Hostile YAML: duplicate keys (in one mapping, or nested and flat), a second document, aliases,
 * NUL characters, nesting 200,000 deep and inputs beyond 1 MiB are refused at once, with a line. */
static void expect_yaml_error(const char *yaml, size_t size, const char *want1, const char *want2)
{
    accel_config_t c;
    char err[1024] = "";
    ck_assert_int_eq(accel_config_from_yaml_buffer(&c, yaml, size, "job.yaml", err, sizeof err), ACCEL_ERR_CONFIG);
    ck_assert_msg(strstr(err, want1), "message '%s' lacks '%s'", err, want1);
    if (want2) ck_assert_msg(strstr(err, want2), "message '%s' lacks '%s'", err, want2);
}
#define EXPECT_YAML_ERROR(text, want1, want2) expect_yaml_error(text, sizeof text - 1, want1, want2)

/* "prefix" + open x n + "1" + close x n */
static char *nested(const char *prefix, const char *open, const char *close, int n)
{
    size_t lp = strlen(prefix), lo = strlen(open), lc = strlen(close);
    char *s = malloc(lp + (lo + lc) * (size_t)n + 3), *p = s;
    memcpy(p, prefix, lp); p += lp;
    for (int i = 0; i < n; i++, p += lo) memcpy(p, open, lo);
    *p++ = '1';
    for (int i = 0; i < n; i++, p += lc) memcpy(p, close, lc);
    *p++ = '\n';
    *p = '\0';
    return s;
}

START_TEST(test_config_hostile_yaml)
{
    EXPECT_YAML_ERROR("model:\n  name: mlp\n  hidden: 8\n  name: gpt\n", "key 'model.name' is given twice",
                      "on line 2 and on line 4");
    EXPECT_YAML_ERROR("model: {layers: 3}\nmodel.layers: 4\n", "key 'model.layers' is given twice",
                      "on line 1 and on line 2");
    EXPECT_YAML_ERROR("model.layers: 4\nmodel:\n  layers: 3\n", "key 'model.layers' is given twice",
                      "on line 1 and on line 3");
    EXPECT_YAML_ERROR("model:\n  layers: 3\ntrain:\n  steps: 2\nmodel:\n  width: 8\n", "key 'model' is given twice",
                      "on line 1 and on line 5");
    EXPECT_YAML_ERROR("seed: 1\nseed: 1\n", "key 'seed' is given twice", "job.yaml:2");
    EXPECT_YAML_ERROR("seed: 1\n---\nseed: 2\n", "job.yaml:2: a second YAML document", NULL);
    EXPECT_YAML_ERROR("---\nseed: 1\n...\n---\n", "a second YAML document", NULL);
    EXPECT_YAML_ERROR("train:\n  metrics: &m a.jsonl\n  tensorboard: *m\n", "job.yaml:3: key 'train.tensorboard' is an alias", NULL);
    EXPECT_YAML_ERROR("model: &m {name: *m}\n", "is an alias", NULL);
    EXPECT_YAML_ERROR("ckpt:\n  dir: \"a\\0b\"\n", "job.yaml:2: the value of key 'ckpt.dir' holds a NUL", NULL);
    EXPECT_YAML_ERROR("bogus: {}\n", "unknown configuration key 'bogus'", NULL);
    EXPECT_YAML_ERROR("[1, 2]\n", "expected a mapping", NULL);
    /* 200,000 levels (the parse used to take minutes): refused after the first few tokens. */
    const char *forms[][3] = { { "", "[", "]" }, { "model: ", "{a: ", "}" }, { "train:\n  steps: ", "[", "]" },
                               { "model: ", "{name: ", "}" }, { "", "- ", "" } };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        int n = (int)((1u << 20) - 64) / (int)(strlen(forms[i][1]) + strlen(forms[i][2]));  /* under 1 MiB */
        char *deep = nested(forms[i][0], forms[i][1], forms[i][2], n < 200000 ? n : 200000);
        accel_config_t c;
        char err[1024] = "";
        ck_assert_int_eq(accel_config_from_yaml_buffer(&c, deep, strlen(deep), "deep.yaml", err, sizeof err),
                         ACCEL_ERR_CONFIG);
        ck_assert_msg(!strncmp(err, "deep.yaml:1", 11) || !strncmp(err, "deep.yaml:2", 11), "%s", err);
        free(deep);
    }
    /* More than 1 MiB: refused before parsing, from memory and from a file. */
    size_t big = (1u << 20) + 1;
    char *text = malloc(big + 1);
    memset(text, '#', big);
    text[big] = '\0';
    expect_yaml_error(text, big, "too large for a configuration", NULL);
    const char *path = write_file("big.yaml", text);
    free(text);
    accel_config_t c;
    char err[512];
    ck_assert_int_eq(accel_config_load(&c, path, 0, NULL, g_no_env, err, sizeof err), ACCEL_ERR_CONFIG);
    ck_assert_msg(strstr(err, "too large for a configuration"), "%s", err);
}
END_TEST

/* Every numeric key has a range: values outside are refused naming key, value and range; the ends
 * themselves are accepted where the range includes them. */
START_TEST(test_config_ranges)
{
    static const char *const bad[][2] = {
        { "optim.beta1=2", "[0, 1)" }, { "optim.beta1=1", "[0, 1)" }, { "optim.beta2=1.5", "[0, 1)" },
        { "optim.eps=0", "(0, 1]" }, { "optim.min_lr_ratio=5", "[0, 1]" }, { "optim.lr=0", "(0, 1000]" },
        { "optim.momentum=1", "[0, 1)" }, { "threads=100000", "[0, 1024]" },
        { "data.samples=4611686018427387904", "[1, 1099511627776]" }, { "data.samples=0", "[1, " },
        { "data.eval_samples=1099511627777", "[0, 1099511627776]" }, { "data.noise=1.5", "[0, 1]" },
        { "train.steps=0", "[1, 2147483647]" }, { "train.global_batch=0", "[1, " },
        { "train.grad_accum=0", "[1, " }, { "train.loss_scale=0", "(0, " }, { "train.loss_scale_window=0", "[1, " },
        { "model.classes=1", "[2, " }, { "model.vocab=1", "[2, " }, { "model.layers=0", "[1, 100000]" },
        { "model.width=0", "[1, " }, { "model.heads=0", "[1, " }, { "model.context=0", "[1, " },
        { "model.rms_eps=0", "(0, 1)" }, { "model.rms_eps=1", "(0, 1)" }, { "model.rope_theta=1", "(1, " },
        { "model.rope_factor=0.5", "[1, " }, { "model.rope_low_freq_factor=0", "(0, " },
        { "dist.bucket_mb=1e300", "[0, 1048576]" }, { "dist.timeout=1e12", "[0, 1000000000]" },
        { "train.memory_limit=2000000TB", "[0, " }, { "train.micro_batch=100000000", "[0, 16777216]" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *ov[] = { (char *)bad[i][0] };
        char key[64];
        snprintf(key, sizeof key, "'%.*s'", (int)(strchr(bad[i][0], '=') - bad[i][0]), bad[i][0]);
        expect_config_error(NULL, 1, ov, ACCEL_ERR_CONFIG, key, bad[i][1]);
        expect_config_error(NULL, 1, ov, ACCEL_ERR_CONFIG, strchr(bad[i][0], '=') + 1, "--> hint:");
    }
    char *good[] = { "optim.beta1=0", "optim.beta2=0.9999", "optim.eps=1e-12", "optim.min_lr_ratio=1",
                     "threads=1024", "data.samples=1099511627776", "data.eval_samples=0", "train.steps=1",
                     "train.clip=0", "model.rms_eps=1e-6", "dist.timeout=0", "optim.min_lr_ratio=0" };
    accel_config_t c;
    char err[1024];
    ck_assert_msg(accel_config_load(&c, NULL, sizeof good / sizeof good[0], good, g_no_env, err, sizeof err) == ACCEL_OK,
                  "%s", err);
    ck_assert_int_eq(c.data.samples, 1LL << 40);
    /* The schema defaults are in range (accel_config_defaults ignores statuses: check them here). */
    accel_config_defaults(&c);
    char *yaml = accel_config_to_yaml(&c);
    ck_assert_int_eq(accel_config_from_yaml(&c, yaml, "defaults", err, sizeof err), ACCEL_OK);
    free(yaml);
    /* Numbers start at once: " -1" is not 2^64 - 1; subnormals (which may not read back) are refused. */
    ck_assert_int_eq(accel_config_set(&c, "seed", " -1", err, sizeof err), ACCEL_ERR_CONFIG);
    ck_assert_int_eq(accel_config_set(&c, "optim.eps", "1e-310", err, sizeof err), ACCEL_ERR_CONFIG);
}
END_TEST

/* Strings: invalid UTF-8 is refused naming the key and the byte; every other value, however
 * nasty, prints as YAML that reads back to the same configuration. */
START_TEST(test_config_string_round_trip)
{
    static const char *const bad_utf8[][2] = {
        { "caf\xe9", "byte 3 is 0xe9" }, { "\xc0\x80", "byte 0 is 0xc0" }, { "x\xed\xa0\x80", "byte 1 is 0xed" },
        { "\xf4\x90\x80\x80", "byte 0" }, { "ab\xe2\x82", "byte 2" }, { "\x80", "byte 0" }, { "\xff", "byte 0" },
    };
    accel_config_t a, b;
    char err[1024];
    for (size_t i = 0; i < sizeof bad_utf8 / sizeof bad_utf8[0]; i++) {
        accel_config_defaults(&a);
        ck_assert_int_eq(accel_config_set(&a, "ckpt.dir", bad_utf8[i][0], err, sizeof err), ACCEL_ERR_CONFIG);
        ck_assert_msg(strstr(err, "'ckpt.dir': value is not valid UTF-8") && strstr(err, bad_utf8[i][1]) &&
                      strstr(err, "--> hint:"), "%s", err);
    }
    char longest[ACCEL_STR_MAX];                    /* the longest value, every byte escaped */
    memset(longest, '\x01', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    const char *nasty[] = {
        "line1\nline2", "a\tb", "\r", "\x01\x02\x1f\x7f", "\xc2\x80\xc2\x85\xc2\x9f", "\xe2\x80\xa8 \xe2\x80\xa9",
        "\xef\xbb\xbf" "bom", "\xef\xbf\xbe\xef\xbf\xbf", "caf\xc3\xa9 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", " lead",
        "trail ", "The ", "- dash", "-", "key: value", "a:b", "# hash", "x #y", "'single'", "\"double\"",
        "back\\slash", "{[,]}", "&anchor", "*alias", "!tag", "|", ">", "%", "@", "`", "~", "null", "---", "...",
        "?x", "", "  ", "a  b", "\\n", "\\x41", "\xc2\xa0nbsp\xc2\xa0", "/tmp/a b/c:d", longest,
    };
    int accepted = 0;
    for (size_t i = 0; i < sizeof nasty / sizeof nasty[0]; i++) {
        /* Every key of the schema, read off the printed defaults: those taking free text accept it. */
        accel_config_defaults(&a);
        char *keys = accel_config_to_yaml(&a), *save = NULL, section[64] = "";
        for (char *line = strtok_r(keys, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char key[128];
            const char *colon = strchr(line, ':');
            if (line[0] != ' ' && colon[1] == '\0') { snprintf(section, sizeof section, "%.*s", (int)(colon - line), line); continue; }
            if (line[0] == ' ') snprintf(key, sizeof key, "%s.%.*s", section, (int)(colon - line - 2), line + 2);
            else snprintf(key, sizeof key, "%.*s", (int)(colon - line), line);
            accel_config_defaults(&a);
            if (accel_config_set(&a, key, nasty[i], err, sizeof err) != ACCEL_OK) continue;
            accepted++;
            char *yaml = accel_config_to_yaml(&a);
            ck_assert_msg(accel_config_from_yaml(&b, yaml, "printed", err, sizeof err) == ACCEL_OK,
                          "%s=<%s>: %s\n%s", key, nasty[i], err, yaml);
            ck_assert_msg(!memcmp(&a, &b, sizeof a), "%s=<%s> read back different:\n%s", key, nasty[i], yaml);
            const char *path = write_file("printed.yaml", yaml);     /* the file path too */
            ck_assert_msg(accel_config_load(&b, path, 0, NULL, g_no_env, err, sizeof err) == ACCEL_OK, "%s", err);
            ck_assert_msg(!memcmp(&a, &b, sizeof a), "%s=<%s> read back different from a file", key, nasty[i]);
            free(yaml);
        }
        free(keys);
    }
    /* 8 free-text keys (model.plugin data.path train.init_from train.metrics train.tensorboard
     * train.sample_prompt ckpt.dir resume) take every value. */
    ck_assert_int_ge(accepted, 8 * (int)(sizeof nasty / sizeof nasty[0]));
    /* A value that only looks like YAML syntax stays text. */
    ck_assert_int_eq(accel_config_from_yaml(&b, "train:\n  sample_prompt: \"\\x41\\u00e9\\n\"\n", "t", err, sizeof err), ACCEL_OK);
    ck_assert_str_eq(b.train.sample_prompt, "A\xc3\xa9\n");
}
END_TEST

/* Lists of numbers (LongRoPE's factors): YAML flow or block lists and "a,b" overrides; the full
 * list prints as YAML that reads back bit for bit; malformed lists are refused naming the key. */
START_TEST(test_config_numbers)
{
    accel_config_t a, b;
    char err[1024];
    char *ov[] = { "model.rope_short_factor=[1, 1.5, 2.25]", "model.rope_long_factor=0.1,1e3" };
    ck_assert_int_eq(accel_config_load(&a, NULL, 2, ov, g_no_env, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(a.model.rope_short_factor.n, 3);
    ck_assert(a.model.rope_short_factor.v[2] == 2.25);
    ck_assert_int_eq(a.model.rope_long_factor.n, 2);
    ck_assert(a.model.rope_long_factor.v[0] == 0.1 && a.model.rope_long_factor.v[1] == 1000);
    ck_assert_int_eq(accel_config_from_yaml(&b, "model:\n  rope_short_factor:\n    - 1\n    - 2.5\n", "t", err,
                                            sizeof err), ACCEL_OK);
    ck_assert_int_eq(b.model.rope_short_factor.n, 2);
    ck_assert(b.model.rope_short_factor.v[1] == 2.5);
    /* ACCEL_NUMBERS_MAX numbers needing all 17 digits: printed, read back, the same bytes */
    char list[ACCEL_NUMBERS_MAX * 24 + 64];
    size_t n = (size_t)snprintf(list, sizeof list, "model.rope_long_factor=");
    for (int i = 0; i < ACCEL_NUMBERS_MAX; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%.17g", i ? "," : "", 1.0800000429153442 + i / 3.0);
    char *ov2[] = { list };
    ck_assert_int_eq(accel_config_load(&a, NULL, 1, ov2, g_no_env, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(a.model.rope_long_factor.n, ACCEL_NUMBERS_MAX);
    char *yaml = accel_config_to_yaml(&a);
    ck_assert_int_eq(accel_config_from_yaml(&b, yaml, "printed", err, sizeof err), ACCEL_OK);
    ck_assert_msg(!memcmp(&a, &b, sizeof a), "the list read back different:\n%s", yaml);
    free(yaml);
    snprintf(list + n, sizeof list - n, ",2");     /* one too many */
    expect_config_error(NULL, 1, ov2, ACCEL_ERR_CONFIG, "'model.rope_long_factor' takes at most 128 numbers", NULL);
    static const char *const bad[][2] = {
        { "model.rope_short_factor=[1,", "expects a list of numbers" }, { "model.rope_short_factor=1,,2", "expects a list" },
        { "model.rope_short_factor=[1] x", "expects a list" }, { "model.rope_short_factor=1 2", "expects a list" },
        { "model.rope_short_factor=1,", "expects a list" }, { "model.rope_short_factor=nan", "expects a list" },
        { "model.rope_short_factor=1,-2", "must not be negative" }, { "model.rope_short_factor=0", "outside its range" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *one[] = { (char *)bad[i][0] };
        expect_config_error(NULL, 1, one, ACCEL_ERR_CONFIG, bad[i][1], NULL);
    }
    expect_config_error("model:\n  rope_long_factor: [1, [2]]\n", 0, NULL, ACCEL_ERR_CONFIG,
                        "key 'model.rope_long_factor' takes a list of numbers", "bad.yaml:2");
    expect_config_error("model:\n  rope_long_factor: [1, '']\n", 0, NULL, ACCEL_ERR_CONFIG, "takes a list of numbers", NULL);
    expect_config_error("model:\n  rope_long_factor: [1, '2,3']\n", 0, NULL, ACCEL_ERR_CONFIG, "takes a list of numbers", NULL);
    expect_config_error("model:\n  rope_long_factor: [1, x]\n", 0, NULL, ACCEL_ERR_CONFIG, "expects a list of numbers", NULL);
    expect_config_error("model:\n  rope_long_factor: {a: 1}\n", 0, NULL, ACCEL_ERR_CONFIG, "takes a single value", NULL);
}
END_TEST

/* ---------------------------------------------------------------- launcher detection */
START_TEST(test_launch_singleton)
{
    char *env[] = { "HOME=/root", NULL };
    accel_launch_t l;
    ck_assert_int_eq(accel_launch_detect(env, &l), ACCEL_OK);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_SINGLETON);
    ck_assert_int_eq(l.expected_size, -1);
    ck_assert(!l.in_slurm_allocation);
}
END_TEST

START_TEST(test_launch_mpirun)
{
    char *env[] = { "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_RANK=2", "PMIX_RANK=2", NULL };
    accel_launch_t l;
    accel_launch_detect(env, &l);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_MPIRUN);
    ck_assert_int_eq(l.expected_size, 4);
    ck_assert_int_eq(l.expected_rank, 2);
    ck_assert(l.pmix);
    ck_assert_str_eq(accel_launcher_name(l.launcher), "mpirun");
}
END_TEST

START_TEST(test_launch_srun)
{
    char *env[] = { "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=4",
                    "SLURM_STEP_NUM_TASKS=4", "SLURM_CPUS_PER_TASK=2", "SLURM_JOB_NUM_NODES=2",
                    "PMIX_RANK=1", NULL };
    accel_launch_t l;
    accel_launch_detect(env, &l);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_SRUN);
    ck_assert_int_eq(l.expected_size, 4);
    ck_assert_int_eq(l.expected_rank, 1);
    ck_assert_int_eq(l.slurm_cpus_per_task, 2);
    ck_assert_int_eq(l.slurm_nnodes, 2);
    ck_assert_int_eq(l.slurm_job_id, 4242);
    ck_assert(l.in_slurm_allocation);
}
END_TEST

START_TEST(test_launch_batch_script_and_mpirun_in_allocation)
{
    /* The batch script itself (no step): a singleton inside an allocation. */
    char *batch[] = { "SLURM_JOB_ID=7", "SLURM_NTASKS=8", NULL };
    accel_launch_t l;
    accel_launch_detect(batch, &l);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_SINGLETON);
    ck_assert(l.in_slurm_allocation);
    ck_assert_int_eq(l.slurm_ntasks, 8);
    /* mpirun inside an allocation: mpirun's own size wins. */
    char *mixed[] = { "SLURM_JOB_ID=7", "SLURM_NTASKS=8", "SLURM_STEP_ID=0", "SLURM_PROCID=0",
                      "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=1", NULL };
    accel_launch_detect(mixed, &l);
    ck_assert_int_eq(l.launcher, ACCEL_LAUNCH_MPIRUN);
    ck_assert_int_eq(l.expected_size, 2);
}
END_TEST

/* ---------------------------------------------------------------- topology (singleton) */
START_TEST(test_topology_singleton)
{
    accel_runtime_t *rt = NULL;
    int argc = 0;
    char **argv = NULL;
    ck_assert_int_eq(accel_init(&argc, &argv, &rt), ACCEL_OK);
#if defined(M_MMAP_THRESHOLD)
    /* accel_init keeps freed memory in the heap: a 16 MiB block (an MPI scratch buffer's size) is
     * not a fresh mapping of its own, so freeing and taking it again every step costs no faults. */
    if (!getenv("GLIBC_TUNABLES") && !getenv("MALLOC_MMAP_THRESHOLD_")) {
        size_t mapped = mallinfo2().hblkhd;
        void *big = malloc(16u << 20);
        ck_assert_ptr_nonnull(big);
        ck_assert_uint_eq(mallinfo2().hblkhd, mapped);
        free(big);
    }
#endif
    ck_assert_int_eq(rt->size, 1);
    ck_assert_int_eq(rt->local_rank, 0);
    ck_assert_int_eq(rt->local_size, 1);
    ck_assert_int_eq(rt->node, 0);
    ck_assert_int_eq(rt->nnodes, 1);
    ck_assert_int_eq(accel_runtime_build_topology(rt, 1), ACCEL_OK);
    ck_assert_int_eq(rt->nnodes, 1);
    ck_assert_int_eq(accel_runtime_build_topology(rt, 3), ACCEL_ERR_CONFIG); /* 3 does not divide 1 */
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    snprintf(cfg.device, sizeof cfg.device, "cpu");
    ck_assert_int_eq(accel_runtime_configure(rt, &cfg), ACCEL_OK);
    ck_assert_int_eq(rt->device.kind, ACCEL_DEVICE_CPU);   /* the record until the device layer chooses */
    ck_assert_int_ge(rt->threads, 1);
    accel_finalize(rt);      /* does not finalize MPI: the test main owns it */
}
END_TEST

/* ---------------------------------------------------------------- dtypes */
START_TEST(test_half_conversions)
{
    const float exact[] = { 0.0f, 1.0f, -2.0f, 0.5f, 1024.0f, 65504.0f, -0.125f, 3.0f };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        ck_assert_float_eq(accel_f16_to_f32(accel_f32_to_f16(exact[i])), exact[i]);
        if (exact[i] != 65504.0f) /* not representable in bf16's 8-bit mantissa */
            ck_assert_float_eq(accel_bf16_to_f32(accel_f32_to_bf16(exact[i])), exact[i]);
    }
    ck_assert_uint_eq(accel_f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(accel_f32_to_f16(65520.0f), 0x7c00);           /* rounds to +inf */
    ck_assert(isinf(accel_f16_to_f32(accel_f32_to_f16(1e6f))));
    ck_assert(isnan(accel_f16_to_f32(accel_f32_to_f16(NAN))));
    ck_assert(isnan(accel_bf16_to_f32(accel_f32_to_bf16(NAN))));
    ck_assert_float_eq(accel_f16_to_f32(0x0001), ldexpf(1.0f, -24));  /* smallest subnormal */
    ck_assert_uint_eq(accel_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
    /* ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 and rounds to 1. */
    ck_assert_uint_eq(accel_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    ck_assert_uint_eq(accel_f32_to_bf16(1.0f + ldexpf(1.0f, -8)), 0x3f80);
    ck_assert_uint_eq(accel_f32_to_bf16(1.0f + 3 * ldexpf(1.0f, -8)), 0x3f82);
    ck_assert_int_eq(accel_dtype_parse("bfloat16"), ACCEL_BF16);
    ck_assert_int_eq(accel_dtype_parse("float64"), -1);
    ck_assert_uint_eq(accel_dtype_size(ACCEL_I64), 8);
}
END_TEST

/* ---------------------------------------------------------------- keyed RNG */
START_TEST(test_rng_keyed)
{
    ck_assert_float_eq(accel_rng_uniform(1, 2, 3, 4), accel_rng_uniform(1, 2, 3, 4));
    ck_assert_float_ne(accel_rng_uniform(1, 2, 3, 4), accel_rng_uniform(1, 2, 3, 5));
    ck_assert_float_ne(accel_rng_uniform(1, 2, 3, 4), accel_rng_uniform(1, 3, 3, 4));
    double sum = 0, sq = 0;
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        float u = accel_rng_uniform(9, ACCEL_RNG_DATA, 0, (uint64_t)i);
        ck_assert(u >= 0.0f && u < 1.0f);
        float z = accel_rng_normal(9, ACCEL_RNG_DATA, 1, (uint64_t)i);
        sum += z;
        sq += (double)z * z;
    }
    ck_assert_double_lt(fabs(sum / n), 0.03);
    ck_assert_double_lt(fabs(sq / n - 1.0), 0.05);
    /* Filling a range equals element-wise draws: sharded initialisation matches full initialisation. */
    float full[64], part[16];
    accel_rng_fill_normal(full, 64, 0.5f, 3, ACCEL_RNG_INIT, 11, 0);
    accel_rng_fill_normal(part, 16, 0.5f, 3, ACCEL_RNG_INIT, 11, 40);
    ck_assert_int_eq(memcmp(full + 40, part, sizeof part), 0);
}
END_TEST

START_TEST(test_rng_permutation)
{
    enum { N = 1000 };
    uint64_t a[N], b[N], c[N];
    accel_rng_permutation(a, N, 5, 0);
    accel_rng_permutation(b, N, 5, 0);
    accel_rng_permutation(c, N, 5, 1);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    ck_assert_int_ne(memcmp(a, c, sizeof a), 0);
    char seen[N] = { 0 };
    for (int i = 0; i < N; i++) {
        ck_assert_uint_lt(a[i], N);
        ck_assert(!seen[a[i]]);
        seen[a[i]] = 1;
    }
}
END_TEST

static void make_tmpdir(void)
{
    snprintf(g_tmpdir, sizeof g_tmpdir, "%s/accel-check-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(g_tmpdir));
}

static void remove_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmpdir);
    if (system(cmd)) { /* best effort */ }
}

static Suite *make_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
    tcase_add_test(tc, test_status_strings);
    tcase_add_test(tc, test_log_format_and_filters);
    tcase_add_test(tc, test_config_defaults);
    tcase_add_test(tc, test_config_yaml_overrides_env);
    tcase_add_test(tc, test_config_print_round_trip);
    tcase_add_test(tc, test_config_errors);
    tcase_add_test(tc, test_config_empty_file);
    tcase_add_test(tc, test_config_hostile_yaml);
    tcase_add_test(tc, test_config_ranges);
    tcase_add_test(tc, test_config_string_round_trip);
    tcase_add_test(tc, test_config_numbers);
    tcase_add_test(tc, test_launch_singleton);
    tcase_add_test(tc, test_launch_mpirun);
    tcase_add_test(tc, test_launch_srun);
    tcase_add_test(tc, test_launch_batch_script_and_mpirun_in_allocation);
    tcase_add_test(tc, test_topology_singleton);
    tcase_add_test(tc, test_half_conversions);
    tcase_add_test(tc, test_rng_keyed);
    tcase_add_test(tc, test_rng_permutation);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"
