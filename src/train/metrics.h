/* What the trainer records per step, in one place: the JSON-lines file (train.metrics,
 * docs/metrics.md) and TensorBoard event files (train.tensorboard), both written by rank 0, and
 * their trimming when a run resumes from a checkpoint. On other ranks the recorder is NULL and
 * every call does nothing. */
#ifndef ACCEL_TRAIN_METRICS_H
#define ACCEL_TRAIN_METRICS_H

#include <stdbool.h>

#include "accel/config.h"
#include "accel/runtime.h"

typedef struct accel_metrics accel_metrics_t;

/* One optimizer step's values. */
typedef struct {
    int step;                   /* steps done, counted from the start of training */
    double loss, lr, grad_norm, loss_scale;
    bool skipped;
    double time;                /* seconds since this run's loop started */
    double tflops;              /* achieved per rank in this step */
    double mfu;                 /* fraction; < 0: the peak is unknown */
    double units_per_s;         /* tokens (or samples, per unit_name) per second in this step */
    double memory_gib;          /* peak resident memory of rank 0 so far */
} accel_metrics_step_t;

/* Collective. Rank 0 opens train.metrics (after a resume: keeps its rows up to start_step; a file
 * it cannot write is a warning) and train.tensorboard (a new event file; after a resume its first
 * event after the version is a SessionLog START, so TensorBoard drops the interrupted run's steps
 * after the checkpoint). A TensorBoard directory that cannot be written is an error on every
 * rank. unit_name: "tokens" or "samples", the throughput's unit. */
accel_status_t accel_metrics_open(const accel_runtime_t *rt, const accel_config_t *cfg, int start_step,
                                  bool resumed, const char *unit_name, accel_metrics_t **out);
/* Records one step and flushes (a crash loses no step recorded before it). */
void accel_metrics_step(accel_metrics_t *m, const accel_metrics_step_t *s);
/* Records one evaluation after `step` steps. */
void accel_metrics_eval(accel_metrics_t *m, int step, double loss, double accuracy, long long samples,
                        double time);
/* The end-of-run summary row (JSON lines only). */
void accel_metrics_summary(accel_metrics_t *m, int step, int steps_this_run, long skipped,
                           double peak_bytes, double seconds, double bytes_per_step);
void accel_metrics_close(accel_metrics_t *m);

#endif
