/* The trainer's record of a run (src/train/metrics.h): JSON-lines rows and TensorBoard scalars,
 * from the same values, so the two always agree. Rank 0 alone writes. A write error on the
 * metrics stream is reported once and recording stops; training goes on. */
#include "build_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "accel/log.h"
#include "accel/tensorboard.h"
#include "../h5/h5util.h"
#include "metrics.h"

struct accel_metrics {
    FILE *jsonl;
    char jsonl_path[ACCEL_STR_MAX];
    accel_tb_writer_t *tb;
    char rate_key[32];          /* "tokens_per_s" or "samples_per_s" */
    char rate_tag[48];          /* "train/" rate_key */
};

/* The step a metrics row belongs to, or -1 for a row without one (an older format) or a partial
 * last line (a crash mid-write). */
static long row_step(const char *line, size_t len)
{
    if (len == 0 || line[len - 1] != '\n') return -1;
    const char *p = strstr(line, "\"step\": ");
    if (!p || p >= line + len) return -1;
    char *end;
    long step = strtol(p + 8, &end, 10);
    return end == p + 8 || step < 0 ? -1 : step;
}

/* On resume, keeps only the rows of steps up to the checkpoint's (rows of steps trained past it
 * would come again) and publishes the file atomically, so a crash here leaves the old file whole. */
static accel_status_t keep_upto(const char *path, int step)
{
    FILE *in = fopen(path, "r");
    if (!in) return errno == ENOENT ? ACCEL_OK : ACCEL_ERR_IO;
    char *line = NULL, *kept = NULL;
    size_t cap = 0, used = 0, room = 0;
    ssize_t n;
    accel_status_t st = ACCEL_OK;
    while (st == ACCEL_OK && (n = getline(&line, &cap, in)) > 0) {
        long s = row_step(line, (size_t)n);
        if (s < 0 || s > step) continue;
        if (used + (size_t)n + 1 > room) {
            size_t want = 2 * room + (size_t)n + 4096;
            char *p = realloc(kept, want);
            if (!p) { st = ACCEL_ERR_NOMEM; break; }
            kept = p;
            room = want;
        }
        memcpy(kept + used, line, (size_t)n);
        used += (size_t)n;
    }
    if (ferror(in)) st = ACCEL_ERR_IO;
    fclose(in);
    free(line);
    if (st == ACCEL_OK) {
        if (kept) kept[used] = '\0';
        st = accel_h5_publish_text(path, kept ? kept : "");
    }
    free(kept);
    return st;
}

static void open_jsonl(accel_metrics_t *m, const char *path, int start_step)
{
    bool append = start_step > 0;
    if (append && keep_upto(path, start_step) != ACCEL_OK) {
        ACCEL_WARN("cannot drop the metrics rows after step %d from '%s'; starting it afresh", start_step, path);
        append = false;
    }
    snprintf(m->jsonl_path, sizeof m->jsonl_path, "%s", path);
    m->jsonl = fopen(path, append ? "a" : "w");
    if (!m->jsonl) ACCEL_WARN("cannot write metrics to '%s'", path);
}

/* TensorBoard: a new event file; a resumed run starts its part of the curve with a SessionLog
 * START at the first step it records (start_step + 1), because TensorBoard keeps only the earlier
 * events' steps below it: the interrupted run's steps after the checkpoint go, the checkpoint's
 * own step stays (as the JSON-lines rows do). */
static accel_status_t open_tb(accel_metrics_t *m, const char *dir, int start_step, bool resumed)
{
    char err[ACCEL_TB_PATH_MAX + 256];
    accel_status_t st = accel_tb_open(dir, &m->tb, err, sizeof err);
    if (st != ACCEL_OK) {
        ACCEL_ERROR("train.tensorboard=%s: %s\n--> hint: give a directory rank 0 can create and write, "
                    "or train.tensorboard= (empty) for none", dir, err);
        return st;
    }
    if (resumed) {
        st = accel_tb_session_start(m->tb, (int64_t)start_step + 1);
        if (st == ACCEL_OK) st = accel_tb_flush(m->tb);
        if (st != ACCEL_OK) {
            ACCEL_ERROR("train.tensorboard: cannot write to '%s': %s", accel_tb_path(m->tb), strerror(errno));
            return st;
        }
    }
    ACCEL_INFO("tensorboard: writing %s%s", accel_tb_path(m->tb), resumed ? " (a resumed run: the "
               "interrupted run's later steps are dropped by TensorBoard)" : "");
    return ACCEL_OK;
}

accel_status_t accel_metrics_open(const accel_runtime_t *rt, const accel_config_t *cfg, int start_step,
                                  bool resumed, const char *unit_name, accel_metrics_t **out)
{
    *out = NULL;
    accel_metrics_t *m = NULL;
    accel_status_t st = ACCEL_OK;
    if (rt->rank == 0 && (cfg->train.metrics[0] || cfg->train.tensorboard[0])) {
        if (!(m = calloc(1, sizeof *m))) st = ACCEL_ERR_NOMEM;
        if (m) {
            snprintf(m->rate_key, sizeof m->rate_key, "%s_per_s", unit_name);
            snprintf(m->rate_tag, sizeof m->rate_tag, "train/%s", m->rate_key);
            if (cfg->train.metrics[0]) open_jsonl(m, cfg->train.metrics, start_step);
            if (cfg->train.tensorboard[0]) st = open_tb(m, cfg->train.tensorboard, start_step, resumed);
        }
    }
    /* Rank 0 alone can fail here: every rank learns it before training starts. */
    st = accel_agree(rt->world, st);
    if (st != ACCEL_OK) {
        accel_metrics_close(m);
        return st;
    }
    *out = m;
    return ACCEL_OK;
}

/* A write error on the event file: said once, then TensorBoard output stops (training goes on,
 * as it does when the metrics file cannot be written). */
static void tb_done(accel_metrics_t *m, accel_status_t st)
{
    if (st == ACCEL_OK || !m->tb) return;
    ACCEL_WARN("train.tensorboard: writing '%s' failed (%s); no more TensorBoard events in this run",
               accel_tb_path(m->tb), accel_status_str(st));
    accel_tb_close(m->tb);
    m->tb = NULL;
}

void accel_metrics_step(accel_metrics_t *m, const accel_metrics_step_t *s)
{
    if (!m) return;
    if (m->jsonl) {
        char mfu[32] = "null";
        if (s->mfu >= 0) snprintf(mfu, sizeof mfu, "%.6g", s->mfu);
        fprintf(m->jsonl, "{\"step\": %d, \"kind\": \"train\", \"loss\": %.9g, \"lr\": %.6g, \"grad_norm\": %.6g, "
                "\"loss_scale\": %g, \"skipped\": %s, \"time\": %.4f, \"tflops\": %.6g, \"mfu\": %s, "
                "\"%s\": %.6g, \"memory_gib\": %.6g}\n",
                s->step, s->loss, s->lr, s->grad_norm, s->loss_scale, s->skipped ? "true" : "false",
                s->time, s->tflops, mfu, m->rate_key, s->units_per_s, s->memory_gib);
        fflush(m->jsonl);
    }
    if (m->tb) {
        accel_tb_writer_t *w = m->tb;
        int64_t step = s->step;
        accel_status_t st = accel_tb_scalar(w, "train/loss", step, (float)s->loss);
        if (st == ACCEL_OK) st = accel_tb_scalar(w, "train/lr", step, (float)s->lr);
        if (st == ACCEL_OK) st = accel_tb_scalar(w, "train/grad_norm", step, (float)s->grad_norm);
        if (st == ACCEL_OK) st = accel_tb_scalar(w, "train/loss_scale", step, (float)s->loss_scale);
        if (st == ACCEL_OK) st = accel_tb_scalar(w, m->rate_tag, step, (float)s->units_per_s);
        if (st == ACCEL_OK) st = accel_tb_scalar(w, "train/tflops", step, (float)s->tflops);
        if (st == ACCEL_OK && s->mfu >= 0) st = accel_tb_scalar(w, "train/mfu", step, (float)s->mfu);
        if (st == ACCEL_OK) st = accel_tb_scalar(w, "train/memory_gib", step, (float)s->memory_gib);
        if (st == ACCEL_OK) st = accel_tb_flush(w);
        tb_done(m, st);
    }
}

void accel_metrics_eval(accel_metrics_t *m, int step, double loss, double accuracy, long long samples,
                        double time)
{
    if (!m) return;
    if (m->jsonl) {
        fprintf(m->jsonl, "{\"step\": %d, \"kind\": \"eval\", \"eval_loss\": %.9g, \"eval_accuracy\": %.6g, "
                "\"eval_samples\": %lld, \"time\": %.4f}\n", step, loss, accuracy, samples, time);
        fflush(m->jsonl);
    }
    if (m->tb) {
        accel_status_t st = accel_tb_scalar(m->tb, "eval/loss", step, (float)loss);
        if (st == ACCEL_OK) st = accel_tb_scalar(m->tb, "eval/accuracy", step, (float)accuracy);
        if (st == ACCEL_OK) st = accel_tb_flush(m->tb);
        tb_done(m, st);
    }
}

void accel_metrics_summary(accel_metrics_t *m, int step, int steps_this_run, long skipped,
                           double peak_bytes, double seconds, double bytes_per_step)
{
    if (!m || !m->jsonl) return;
    fprintf(m->jsonl, "{\"step\": %d, \"kind\": \"summary\", \"steps_this_run\": %d, \"skipped_steps\": %ld, "
            "\"peak_bytes\": %.0f, \"seconds\": %.4f, \"bytes_sent_per_step\": %.0f}\n",
            step, steps_this_run, skipped, peak_bytes, seconds, bytes_per_step);
    fflush(m->jsonl);
}

void accel_metrics_close(accel_metrics_t *m)
{
    if (!m) return;
    if (m->jsonl && fclose(m->jsonl) != 0) ACCEL_WARN("closing the metrics file '%s' failed", m->jsonl_path);
    if (m->tb && accel_tb_close(m->tb) != ACCEL_OK)
        ACCEL_WARN("closing the TensorBoard event file failed: its last events may be missing");
    free(m);
}
