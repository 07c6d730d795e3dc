/* Logging: one line per call, "[rank r/N host] LEVEL: message", written with a single fwrite so
 * lines from different ranks sharing a terminal do not interleave mid-line. */
#include "build_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "accel/log.h"

static struct {
    int rank, size;
    char host[64];
    accel_log_level_t level;
    bool all_ranks;
    bool level_from_env;
    FILE *stream;
} g_log = { 0, 1, "localhost", ACCEL_LOG_INFO, false, false, NULL };

static const char *const g_level_names[] = { "error", "warn", "info", "debug", "trace" };

int accel_log_parse_level(const char *text)
{
    if (!text || !*text) return -1;
    for (int i = 0; i <= ACCEL_LOG_TRACE; i++)
        if (!strcasecmp(text, g_level_names[i])) return i;
    if (!strcasecmp(text, "warning")) return ACCEL_LOG_WARN;
    if (text[0] >= '0' && text[0] <= '4' && text[1] == '\0') return text[0] - '0';
    return -1;
}

void accel_log_set_identity(int rank, int size, const char *host)
{
    g_log.rank = rank;
    g_log.size = size;
    snprintf(g_log.host, sizeof g_log.host, "%s", host ? host : "?");
    /* ACCEL_LOG_LEVEL applies from the first line, before the configuration is read. */
    int lvl = accel_log_parse_level(getenv("ACCEL_LOG_LEVEL"));
    if (lvl >= 0) g_log.level = (accel_log_level_t)lvl;
}

void accel_log_set_level(accel_log_level_t level) { g_log.level = level; }
accel_log_level_t accel_log_get_level(void) { return g_log.level; }
void accel_log_set_all_ranks(bool all_ranks) { g_log.all_ranks = all_ranks; }
void accel_log_set_stream(FILE *stream) { g_log.stream = stream; }

void accel_log(accel_log_level_t level, bool main_only, const char *fmt, ...)
{
    if (level > g_log.level) return;
    if (main_only && !g_log.all_ranks && g_log.rank != 0) return;
    char line[4096];
    int n = snprintf(line, sizeof line, "[rank %d/%d %s] ", g_log.rank, g_log.size, g_log.host);
    if (level != ACCEL_LOG_INFO && n < (int)sizeof line)
        n += snprintf(line + n, sizeof line - n, "%s: ", level == ACCEL_LOG_ERROR ? "ERROR"
                      : level == ACCEL_LOG_WARN ? "WARNING" : g_level_names[level]);
    if (n < (int)sizeof line) {
        va_list ap;
        va_start(ap, fmt);
        n += vsnprintf(line + n, sizeof line - n, fmt, ap);
        va_end(ap);
    }
    if (n >= (int)sizeof line - 1) n = (int)sizeof line - 2;
    if (n > 0 && line[n - 1] != '\n') line[n++] = '\n';
    FILE *out = g_log.stream ? g_log.stream : stderr;
    fwrite(line, 1, (size_t)n, out);
    fflush(out);
}
