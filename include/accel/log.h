/* Logging with "[rank r/N host]" prefixes. Informational messages come from the main process
 * (rank 0) unless per-rank mode is on; warnings and errors come from every rank. The level comes
 * from log.level in the configuration or ACCEL_LOG_LEVEL (error, warn, info, debug, trace). */
#ifndef ACCEL_LOG_H
#define ACCEL_LOG_H

#include <stdbool.h>
#include <stdio.h>

typedef enum {
    ACCEL_LOG_ERROR = 0,
    ACCEL_LOG_WARN,
    ACCEL_LOG_INFO,
    ACCEL_LOG_DEBUG,
    ACCEL_LOG_TRACE,
} accel_log_level_t;

/* Set the identity printed in the prefix. Called by accel_init; tests may call it directly. */
void accel_log_set_identity(int rank, int size, const char *host);
void accel_log_set_level(accel_log_level_t level);
accel_log_level_t accel_log_get_level(void);
/* Parse "error|warn|info|debug|trace" (or 0..4). Returns -1 when unknown. */
int accel_log_parse_level(const char *text);
/* Per-rank mode: informational messages from every rank, not only rank 0. */
void accel_log_set_all_ranks(bool all_ranks);
/* Send log lines to a stream other than stderr (tests). NULL restores stderr. */
void accel_log_set_stream(FILE *stream);

/* main_only: print only on rank 0 unless per-rank mode is on. */
void accel_log(accel_log_level_t level, bool main_only, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define ACCEL_ERROR(...) accel_log(ACCEL_LOG_ERROR, false, __VA_ARGS__)
#define ACCEL_ERROR0(...) accel_log(ACCEL_LOG_ERROR, true, __VA_ARGS__)
#define ACCEL_WARN(...) accel_log(ACCEL_LOG_WARN, false, __VA_ARGS__)
#define ACCEL_WARN0(...) accel_log(ACCEL_LOG_WARN, true, __VA_ARGS__)
#define ACCEL_INFO(...) accel_log(ACCEL_LOG_INFO, true, __VA_ARGS__)
#define ACCEL_INFO_ALL(...) accel_log(ACCEL_LOG_INFO, false, __VA_ARGS__)
#define ACCEL_DEBUG(...) accel_log(ACCEL_LOG_DEBUG, false, __VA_ARGS__)

#endif
