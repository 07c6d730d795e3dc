/* Subcommands of the `accel` tool. Each takes the arguments after its name and returns an exit code. */
#ifndef ACCEL_TOOL_H
#define ACCEL_TOOL_H

int accel_cmd_env(int argc, char **argv);
int accel_cmd_test(int argc, char **argv);
int accel_cmd_config(int argc, char **argv);
int accel_cmd_estimate(int argc, char **argv);

#endif
