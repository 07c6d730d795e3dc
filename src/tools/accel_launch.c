/* accel launch: start a command on N ranks with the launcher that fits where it runs: srun --mpi=pmix
 * inside a Slurm allocation (SLURM_JOB_ID set), mpirun outside. Prints the command, then execs it, so
 * the launcher's exit status is the tool's. The command is built from a given environment by
 * functions declared in tool.h, so tests can check it for any environment. */
#define _GNU_SOURCE     /* sched_getaffinity, CPU_COUNT */
#include "build_config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/launch.h"
#include "tool.h"

extern char **environ;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: accel launch [-n N] [--nodes M] [--dry-run] [--] CMD [ARGS...]\n"
            "  Run CMD on N ranks with the launcher that fits, and print the command it runs:\n"
            "    inside a Slurm allocation (salloc, sbatch; SLURM_JOB_ID set):\n"
            "      srun --mpi=pmix [-n N] [-N M] [--cpus-per-task=C] CMD ARGS...\n"
            "      N defaults to the allocation's tasks (SLURM_NTASKS), C to SLURM_CPUS_PER_TASK\n"
            "      (Slurm 22.05's srun no longer takes it from the allocation by itself);\n"
            "      from a shell inside a job step (srun --pty bash) give -n; --overlap is added\n"
            "    elsewhere:\n"
            "      mpirun -np N [--oversubscribe] [--allow-run-as-root] CMD ARGS...\n"
            "      N defaults to the cores this process may use; --oversubscribe is added when N\n"
            "      exceeds them, --allow-run-as-root when running as root\n"
            "  The exit status is the launcher's.\n"
            "\n"
            "  -n, --ntasks N   ranks to start\n"
            "  -N, --nodes M    nodes to spread them over (inside an allocation only)\n"
            "  --dry-run        print the command and exit without running it\n"
            "  -h, --help       this help\n"
            "  The launchers are 'srun' and 'mpirun' from PATH, or the programs named by ACCEL_SRUN\n"
            "  and ACCEL_MPIRUN.\n"
            "\n"
            "examples:\n"
            "  accel launch -n 4 -- accel_train job.yaml          4 ranks here, or 4 tasks under Slurm\n"
            "  salloc -N 2 -n 8 accel launch accel test           the whole allocation\n"
            "  accel launch --dry-run accel_train                 show what would run\n");
}

static const char *env_get(char *const envp[], const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* A positive count; false for "", "0", "-3", "4x", and values that do not fit an int. */
static bool parse_count(const char *text, int *out)
{
    if (!text || !*text) return false;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (*end || errno || v < 1 || v > INT_MAX) return false;
    *out = (int)v;
    return true;
}

int accel_launch_cmd_parse(int argc, char **argv, accel_launch_opts_t *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL, *name = NULL;
        int *dest = NULL;
        if (!strcmp(a, "--")) { i++; break; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (!strcmp(a, "--dry-run")) { o->dry_run = true; continue; }
        if (!strcmp(a, "-n") || !strcmp(a, "--ntasks") || !strcmp(a, "-N") || !strcmp(a, "--nodes")) {
            name = a;
            if (i + 1 >= argc) {
                snprintf(err, errlen, "option '%s' needs a number", a);
                return -1;
            }
            val = argv[++i];
        } else if (!strncmp(a, "--ntasks=", 9) || !strncmp(a, "--nodes=", 8)) {
            name = a;
            val = strchr(a, '=') + 1;
        } else if ((!strncmp(a, "-n", 2) || !strncmp(a, "-N", 2)) && a[2]) {
            name = a;
            val = a + 2;
        } else if (a[0] == '-' && a[1]) {
            snprintf(err, errlen, "unknown option '%s'\n--> hint: put the command after '--' if it starts "
                     "with '-'; 'accel launch --help' lists the options", a);
            return -1;
        } else {
            break;                                  /* the command starts here */
        }
        dest = (!strncmp(name, "-N", 2) || !strncmp(name, "--nodes", 7)) ? &o->nodes : &o->ntasks;
        if (!parse_count(val, dest)) {
            snprintf(err, errlen, "option '%s' expects a positive number, got '%s'", name, val);
            return -1;
        }
    }
    if (i >= argc) {
        snprintf(err, errlen, "no command to launch\n--> hint: accel launch [-n N] -- CMD [ARGS...], "
                 "e.g. accel launch -n 2 -- accel_train job.yaml");
        return -1;
    }
    o->cmd_argc = argc - i;
    o->cmd_argv = argv + i;
    return 0;
}

/* A growing NULL-terminated argv of copied strings. */
typedef struct {
    char **v;
    int n, cap;
    bool failed;
} argv_t;

static void push(argv_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void push(argv_t *a, const char *fmt, ...)
{
    if (a->failed) return;
    if (a->n + 2 > a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        char **v = realloc(a->v, sizeof *v * (size_t)cap);
        if (!v) { a->failed = true; return; }
        a->v = v;
        a->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int rc = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (rc < 0) { a->failed = true; return; }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

char **accel_launch_cmd_build(const accel_launch_opts_t *o, char *const envp[], int cores, bool root,
                              char *err, size_t errlen)
{
    if (!envp) envp = environ;
    accel_launch_t l;
    accel_launch_detect(envp, &l);
    argv_t a = { 0 };
    if (l.in_slurm_allocation) {
        /* Inside a job step (srun --pty bash, or by mistake srun -n 4 accel launch): the new step
         * must share the step's CPUs (--overlap, Slurm >= 20.11), else srun waits for them forever;
         * and SLURM_NTASKS there is the step's own count, not the allocation's. */
        bool in_step = env_get(envp, "SLURM_STEP_ID") || env_get(envp, "SLURM_STEPID");
        int step_tasks = 0;
        if (in_step && parse_count(env_get(envp, "SLURM_STEP_NUM_TASKS"), &step_tasks) && step_tasks > 1) {
            snprintf(err, errlen, "accel launch is running as one of the %d tasks of a job step, so each "
                     "task would start its own srun\n--> hint: run accel launch once, from the batch "
                     "script or the salloc shell, not under srun", step_tasks);
            return NULL;
        }
        if (in_step && o->ntasks <= 0) {
            snprintf(err, errlen, "inside a job step (an 'srun --pty' shell?) the number of ranks is not "
                     "known: SLURM_NTASKS is the step's own\n--> hint: give it, e.g. accel launch -n 4 -- CMD");
            return NULL;
        }
        const char *srun = env_get(envp, "ACCEL_SRUN");
        push(&a, "%s", srun && *srun ? srun : "srun");
        push(&a, "--mpi=pmix");
        if (in_step) push(&a, "--overlap");
        int ntasks = o->ntasks > 0 ? o->ntasks : l.slurm_ntasks;
        if (ntasks > 0) { push(&a, "-n"); push(&a, "%d", ntasks); }
        if (o->nodes > 0) { push(&a, "-N"); push(&a, "%d", o->nodes); }
        /* Slurm 22.05's srun ignores the allocation's --cpus-per-task unless told again. */
        int cpt = 0;
        if (!env_get(envp, "SRUN_CPUS_PER_TASK") && parse_count(env_get(envp, "SLURM_CPUS_PER_TASK"), &cpt))
            push(&a, "--cpus-per-task=%d", cpt);
    } else {
        if (o->nodes > 0) {
            snprintf(err, errlen, "--nodes %d needs a Slurm allocation (SLURM_JOB_ID is not set)\n"
                     "--> hint: run inside salloc or sbatch, or drop --nodes to start the ranks on this "
                     "machine with mpirun", o->nodes);
            return NULL;
        }
        if (cores < 1) cores = 1;
        int np = o->ntasks > 0 ? o->ntasks : cores;
        const char *mpirun = env_get(envp, "ACCEL_MPIRUN");
        push(&a, "%s", mpirun && *mpirun ? mpirun : "mpirun");
        push(&a, "-np");
        push(&a, "%d", np);
        if (np > cores) push(&a, "--oversubscribe");
        if (root) push(&a, "--allow-run-as-root");
    }
    for (int i = 0; i < o->cmd_argc; i++) push(&a, "%s", o->cmd_argv[i]);
    if (a.failed || !a.v) {
        accel_launch_cmd_free(a.v);
        snprintf(err, errlen, "out of memory building the launch command");
        return NULL;
    }
    return a.v;
}

void accel_launch_cmd_free(char **argv)
{
    if (!argv) return;
    for (char **p = argv; *p; p++) free(*p);
    free(argv);
}

/* Shell-quote a word only when it needs it, so the printed line can be pasted into a shell. */
static bool needs_quotes(const char *s)
{
    if (!*s) return true;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *s))
            return true;
    return false;
}

char *accel_launch_cmd_format(char *const argv[])
{
    size_t len = 1;
    for (char *const *p = argv; *p; p++) {
        len += strlen(*p) + 3;
        for (const char *c = *p; *c; c++) if (*c == '\'') len += 3;
    }
    char *out = malloc(len), *w = out;
    if (!out) return NULL;
    for (char *const *p = argv; *p; p++) {
        if (p != argv) *w++ = ' ';
        if (!needs_quotes(*p)) {
            w = stpcpy(w, *p);
            continue;
        }
        *w++ = '\'';
        for (const char *c = *p; *c; c++) {
            if (*c == '\'') w = stpcpy(w, "'\\''");
            else *w++ = *c;
        }
        *w++ = '\'';
    }
    *w = '\0';
    return out;
}

/* Physical cores this process may run on (what mpirun counts as slots), from the affinity mask and
 * sysfs topology; the logical CPU count when the topology is unreadable. */
static int usable_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int)n : 1;
    }
    int ncpu = CPU_COUNT(&set), ncores = 0;
    long *seen = malloc(sizeof *seen * (size_t)(ncpu > 0 ? ncpu : 1));
    if (!seen) return ncpu > 0 ? ncpu : 1;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        char path[128];
        long pkg = -1, core = -1;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
        FILE *f = fopen(path, "r");
        if (f) { if (fscanf(f, "%ld", &pkg) != 1) pkg = -1; fclose(f); }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
        f = fopen(path, "r");
        if (f) { if (fscanf(f, "%ld", &core) != 1) core = -1; fclose(f); }
        if (pkg < 0 || core < 0) { free(seen); return ncpu > 0 ? ncpu : 1; }
        long key = pkg * 1000000 + core;
        bool dup = false;
        for (int i = 0; i < ncores && !dup; i++) dup = seen[i] == key;
        if (!dup) seen[ncores++] = key;
    }
    free(seen);
    return ncores > 0 ? ncores : 1;
}

int accel_cmd_launch(int argc, char **argv)
{
    accel_launch_opts_t o;
    char err[512];
    int rc = accel_launch_cmd_parse(argc, argv, &o, err, sizeof err);
    if (rc == 1) { usage(stdout); return 0; }
    if (rc < 0) {
        fprintf(stderr, "accel launch: %s\n", err);
        return 2;
    }
    char **cmd = accel_launch_cmd_build(&o, NULL, usable_cores(), geteuid() == 0, err, sizeof err);
    if (!cmd) {
        fprintf(stderr, "accel launch: %s\n", err);
        return 2;
    }
    char *line = accel_launch_cmd_format(cmd);
    if (o.dry_run) {
        printf("%s\n", line ? line : cmd[0]);
        free(line);
        accel_launch_cmd_free(cmd);
        return 0;
    }
    fprintf(stderr, "accel launch: %s\n", line ? line : cmd[0]);
    free(line);
    fflush(stdout);
    fflush(stderr);
    execvp(cmd[0], cmd);
    int e = errno;
    fprintf(stderr, "accel launch: cannot run '%s': %s\n--> hint: %s\n", cmd[0], strerror(e),
            !strcmp(cmd[0], "srun") ? "Slurm's srun must be in PATH inside the allocation (or set ACCEL_SRUN)"
            : !strcmp(cmd[0], "mpirun") ? "put Open MPI's mpirun in PATH (or set ACCEL_MPIRUN)"
            : "check the path in ACCEL_SRUN / ACCEL_MPIRUN");
    accel_launch_cmd_free(cmd);
    return e == ENOENT ? 127 : 126;
}
