/* Subcommands of the `accel` tool. Each takes the arguments after its name and returns an exit code. */
#ifndef ACCEL_TOOL_H
#define ACCEL_TOOL_H

#include <stdbool.h>
#include <stddef.h>

int accel_cmd_env(int argc, char **argv);
int accel_cmd_test(int argc, char **argv);
int accel_cmd_config(int argc, char **argv);
int accel_cmd_estimate(int argc, char **argv);
int accel_cmd_launch(int argc, char **argv);

/* accel launch, in pieces that tests can drive with a made-up environment (src/tools/accel_launch.c). */

typedef struct {
    int ntasks;                     /* -n N; 0 = default (allocation's tasks, or the cores here) */
    int nodes;                      /* --nodes M; 0 = default (srun decides) */
    bool dry_run;                   /* print the command, do not run it */
    int cmd_argc;
    char **cmd_argv;                /* the command and its arguments (points into argv) */
} accel_launch_opts_t;

/* Parse argv (argv[0] = "launch"). Returns 0 on success, 1 for --help, -1 with a message in err. */
int accel_launch_cmd_parse(int argc, char **argv, accel_launch_opts_t *o, char *err, size_t errlen);
/* The launcher command for this environment (envp NULL = the process environment), core count and
 * root-ness: a NULL-terminated argv to free with accel_launch_cmd_free, or NULL with a message in err. */
char **accel_launch_cmd_build(const accel_launch_opts_t *o, char *const envp[], int cores, bool root,
                              char *err, size_t errlen);
void accel_launch_cmd_free(char **argv);
/* The command as one shell-quoted line (malloc'd). */
char *accel_launch_cmd_format(char *const argv[]);

#endif
