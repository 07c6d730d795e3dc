/* accel: the toolkit's command-line front end (env, test, config, estimate-memory, launch, trace). */
#include "build_config.h"

#include <stdio.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/trace.h"
#include "tool.h"

/* accel trace DIR: the flight recorder's report from the rings the ranks wrote. */
static int cmd_trace(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        FILE *out = argc == 2 ? stdout : stderr;
        fprintf(out, "usage: accel trace DIR\n"
                     "  Compare the flight-recorder rings (trace-rank<R>.txt) that the ranks of a job\n"
                     "  wrote to DIR (dist.trace_dir) when a wait passed dist.timeout, or on SIGUSR2:\n"
                     "  which collective the ranks wait in, and which ranks never entered it.\n");
        return argc == 2 ? 0 : 2;
    }
    accel_status_t st = accel_trace_report(argv[1], stdout);
    if (st == ACCEL_ERR_NOT_FOUND) {
        fprintf(stderr, "accel trace: no flight-recorder rings (trace-rank<R>.txt) in '%s'\n"
                        "--> hint: the rings go to dist.trace_dir (default ./accel-trace) of the job\n", argv[1]);
        return 1;
    }
    return st == ACCEL_OK ? 0 : accel_status_exit_code(st);
}

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} g_commands[] = {
    { "env", accel_cmd_env, "versions, launcher, rank/host/device table, environment (paste into bug reports)" },
    { "test", accel_cmd_test, "pre-flight check: collectives, bandwidth, parallel HDF5 (run under mpirun/srun)" },
    { "config", accel_cmd_config, "write a commented job YAML with every key and its default" },
    { "estimate-memory", accel_cmd_estimate, "bytes per rank for each strategy and world size, from a job configuration" },
    { "launch", accel_cmd_launch, "run a command on N ranks: srun inside a Slurm allocation, mpirun outside" },
    { "trace", cmd_trace, "report from the flight recorder: which ranks never entered the collective the others wait in" },
};
#define NCOMMANDS (sizeof g_commands / sizeof g_commands[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: accel <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++) fprintf(out, "  %-16s %s\n", g_commands[i].name, g_commands[i].help);
    fprintf(out, "\n'accel <command> --help' describes each command. Training: accel_train --help.\n");
}

int main(int argc, char **argv)
{
    accel_blas_fixup(argc, argv);
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
        printf("accel %s\n", accel_version());
        return 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(argv[1], g_commands[i].name)) return g_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "accel: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
