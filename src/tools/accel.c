/* accel: the toolkit's command-line front end (env, test, config, launch). */
#include "build_config.h"

#include <stdio.h>
#include <string.h>

#include "accel/accel.h"
#include "tool.h"

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
