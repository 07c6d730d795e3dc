/* Unit tests of `accel launch`: option parsing and the launcher command built for a given
 * environment (inside a Slurm allocation -> srun --mpi=pmix, outside -> mpirun), core count and
 * root-ness. Nothing is run. */
#include "build_config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/tools/tool.h"

/* Build the command for "launch ARGS..." in environment ENV and return it as one line ("" on error,
 * with the message in g_err). */
static char g_err[512];
static char g_line[1024];

static const char *build(char *const env[], int cores, bool root, const char *args)
{
    char buf[512], *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", args);
    argv[argc++] = "launch";
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) argv[argc++] = t;
    argv[argc] = NULL;
    g_err[0] = g_line[0] = '\0';
    accel_launch_opts_t o;
    if (accel_launch_cmd_parse(argc, argv, &o, g_err, sizeof g_err) != 0) return g_line;
    char **cmd = accel_launch_cmd_build(&o, env, cores, root, g_err, sizeof g_err);
    if (!cmd) return g_line;
    char *line = accel_launch_cmd_format(cmd);
    snprintf(g_line, sizeof g_line, "%s", line);
    free(line);
    accel_launch_cmd_free(cmd);
    return g_line;
}

static char *const no_env[] = { "PATH=/usr/bin", NULL };

START_TEST(outside_defaults_to_cores)
{
    ck_assert_str_eq(build(no_env, 8, false, "accel_train job.yaml"), "mpirun -np 8 accel_train job.yaml");
    ck_assert_str_eq(build(no_env, 2, true, "-- ./accel test"), "mpirun -np 2 --allow-run-as-root ./accel test");
}
END_TEST

START_TEST(outside_oversubscribes_beyond_cores)
{
    ck_assert_str_eq(build(no_env, 2, false, "-n 4 x"), "mpirun -np 4 --oversubscribe x");
    ck_assert_str_eq(build(no_env, 2, true, "-n4 x"), "mpirun -np 4 --oversubscribe --allow-run-as-root x");
    ck_assert_str_eq(build(no_env, 4, false, "--ntasks=4 x"), "mpirun -np 4 x");
    ck_assert_str_eq(build(no_env, 4, false, "--ntasks 3 x"), "mpirun -np 3 x");
}
END_TEST

START_TEST(outside_rejects_nodes)
{
    ck_assert_str_eq(build(no_env, 2, false, "--nodes 2 x"), "");
    ck_assert_ptr_nonnull(strstr(g_err, "needs a Slurm allocation"));
}
END_TEST

START_TEST(inside_uses_srun_and_allocation_tasks)
{
    char *const env[] = { "SLURM_JOB_ID=42", "SLURM_NTASKS=6", "SLURM_JOB_NUM_NODES=2", NULL };
    /* cores and root do not matter to srun */
    ck_assert_str_eq(build(env, 2, true, "accel_train train.steps=5"),
                     "srun --mpi=pmix -n 6 accel_train train.steps=5");
    ck_assert_str_eq(build(env, 2, true, "-n 2 --nodes 2 x"), "srun --mpi=pmix -n 2 -N 2 x");
    ck_assert_str_eq(build(env, 2, true, "-N1 x"), "srun --mpi=pmix -n 6 -N 1 x");
}
END_TEST

START_TEST(inside_without_ntasks_lets_srun_decide)
{
    char *const env[] = { "SLURM_JOBID=7", NULL };      /* the old name counts too */
    ck_assert_str_eq(build(env, 2, false, "x"), "srun --mpi=pmix x");
    ck_assert_str_eq(build(env, 2, false, "--nodes=3 x"), "srun --mpi=pmix -N 3 x");
}
END_TEST

START_TEST(inside_passes_cpus_per_task)
{
    char *const env[] = { "SLURM_JOB_ID=1", "SLURM_NTASKS=2", "SLURM_CPUS_PER_TASK=4", NULL };
    ck_assert_str_eq(build(env, 2, false, "x"), "srun --mpi=pmix -n 2 --cpus-per-task=4 x");
    char *const env2[] = { "SLURM_JOB_ID=1", "SLURM_NTASKS=2", "SLURM_CPUS_PER_TASK=4", "SRUN_CPUS_PER_TASK=4", NULL };
    ck_assert_str_eq(build(env2, 2, false, "x"), "srun --mpi=pmix -n 2 x");
}
END_TEST

START_TEST(inside_a_step_overlaps)
{
    /* An 'srun --pty bash' shell: one-task step; the new step must share its CPUs. */
    char *const env[] = { "SLURM_JOB_ID=9", "SLURM_NTASKS=1", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_TASKS=1",
                          "SLURM_PROCID=0", NULL };
    ck_assert_str_eq(build(env, 2, false, "-n 4 x"), "srun --mpi=pmix --overlap -n 4 x");
    ck_assert_str_eq(build(env, 2, false, "x"), "");
    ck_assert_ptr_nonnull(strstr(g_err, "give it"));
    /* srun -n 4 accel launch: every task would start its own srun. */
    char *const env4[] = { "SLURM_JOB_ID=9", "SLURM_NTASKS=4", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_TASKS=4",
                           "SLURM_PROCID=2", NULL };
    ck_assert_str_eq(build(env4, 2, false, "-n 4 x"), "");
    ck_assert_ptr_nonnull(strstr(g_err, "one of the 4 tasks"));
}
END_TEST

START_TEST(launcher_programs_from_env)
{
    char *const env[] = { "ACCEL_MPIRUN=/opt/ompi/bin/mpirun", NULL };
    ck_assert_str_eq(build(env, 1, false, "x"), "/opt/ompi/bin/mpirun -np 1 x");
    char *const env2[] = { "SLURM_JOB_ID=1", "ACCEL_SRUN=/opt/slurm/bin/srun", NULL };
    ck_assert_str_eq(build(env2, 1, false, "x"), "/opt/slurm/bin/srun --mpi=pmix x");
}
END_TEST

START_TEST(command_options_belong_to_the_command)
{
    /* Parsing stops at the command: its own -n is not ours. */
    ck_assert_str_eq(build(no_env, 2, false, "-n 2 head -n 3"), "mpirun -np 2 head -n 3");
    ck_assert_str_eq(build(no_env, 2, false, "--dry-run -- -weird"), "mpirun -np 2 -weird");
}
END_TEST

START_TEST(bad_options)
{
    const char *bad[] = { "", "-n", "-n 0 x", "-n -2 x", "-n abc x", "--nodes=0 x", "-n 99999999999 x",
                          "--frobnicate x", "--" };
    const char *why[] = { "no command", "needs a number", "positive number", "positive number",
                          "positive number", "positive number", "positive number", "unknown option",
                          "no command" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(!strcmp(build(no_env, 2, false, bad[i]), ""), "'%s' was accepted", bad[i]);
        ck_assert_msg(strstr(g_err, why[i]) != NULL, "'%s': message '%s' lacks '%s'", bad[i], g_err, why[i]);
    }
}
END_TEST

START_TEST(dry_run_and_help_flags)
{
    char *argv[] = { "launch", "--dry-run", "-n", "2", "x", "y", NULL };
    accel_launch_opts_t o;
    ck_assert_int_eq(accel_launch_cmd_parse(6, argv, &o, g_err, sizeof g_err), 0);
    ck_assert(o.dry_run);
    ck_assert_int_eq(o.ntasks, 2);
    ck_assert_int_eq(o.cmd_argc, 2);
    ck_assert_str_eq(o.cmd_argv[0], "x");
    char *help[] = { "launch", "--help", NULL };
    ck_assert_int_eq(accel_launch_cmd_parse(2, help, &o, g_err, sizeof g_err), 1);
}
END_TEST

START_TEST(format_quotes_for_the_shell)
{
    char *argv[] = { "srun", "a b", "it's", "", "k=v", "$HOME", NULL };
    char *line = accel_launch_cmd_format(argv);
    ck_assert_str_eq(line, "srun 'a b' 'it'\\''s' '' k=v '$HOME'");
    free(line);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("launch");
    TCase *tc = tcase_create("command");
    tcase_add_test(tc, outside_defaults_to_cores);
    tcase_add_test(tc, outside_oversubscribes_beyond_cores);
    tcase_add_test(tc, outside_rejects_nodes);
    tcase_add_test(tc, inside_uses_srun_and_allocation_tasks);
    tcase_add_test(tc, inside_without_ntasks_lets_srun_decide);
    tcase_add_test(tc, inside_passes_cpus_per_task);
    tcase_add_test(tc, inside_a_step_overlaps);
    tcase_add_test(tc, launcher_programs_from_env);
    tcase_add_test(tc, command_options_belong_to_the_command);
    tcase_add_test(tc, bad_options);
    tcase_add_test(tc, dry_run_and_help_flags);
    tcase_add_test(tc, format_quotes_for_the_shell);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"
