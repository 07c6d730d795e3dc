/* Command-line helpers shared by the tools. */
#ifndef ACCEL_TOOLS_ARGS_H
#define ACCEL_TOOLS_ARGS_H

/* Option `name` with a value, as "--name VALUE" or "--name=VALUE". Returns the value and advances
 * *i, or NULL when argv[*i] is not this option; *missing is set when the value is absent. */
const char *accel_arg_value(int argc, char **argv, int *i, const char *name, int *missing);

#endif
