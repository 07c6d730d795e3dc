/* accel config: write a commented job YAML. Interactive on a terminal (asks for the few keys that
 * matter most), --defaults otherwise. Writes only where told (stdout or -o FILE): never a hidden
 * per-user default. */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"
#include "tool.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: accel config [--defaults] [-o FILE] [key=value ...]\n"
                 "  Write a job YAML with every key, its default and its meaning.\n"
                 "  --defaults   do not ask questions, even on a terminal\n"
                 "  -o FILE      write to FILE instead of standard output (refuses to overwrite)\n"
                 "  key=value    set keys in the written file\n");
}

int accel_cmd_config(int argc, char **argv)
{
    const char *path = NULL;
    bool defaults = false;
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--defaults")) { defaults = true; continue; }
        if (!strcmp(argv[i], "-o") && i + 1 < argc) { path = argv[++i]; continue; }
        if (accel_config_is_override(argv[i])) {
            char key[256];
            const char *eq = strchr(argv[i], '=');
            snprintf(key, sizeof key, "%.*s", (int)(eq - argv[i]), argv[i]);
            if (accel_config_set(&cfg, key, eq + 1, err, sizeof err) != ACCEL_OK) {
                fprintf(stderr, "accel config: %s\n", err);
                return 2;
            }
            continue;
        }
        fprintf(stderr, "accel config: unexpected argument '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    if (!defaults && isatty(STDIN_FILENO) && isatty(STDERR_FILENO)) {
        static const char *const questions[] = { "model.name", "train.steps", "train.global_batch",
                                                 "precision", "dist.strategy", "device" };
        fprintf(stderr, "accel config: press Enter to keep the value in [brackets].\n");
        for (size_t q = 0; q < sizeof questions / sizeof questions[0]; q++) {
            for (;;) {
                char line[256];
                fprintf(stderr, "%s: ", questions[q]);
                if (!fgets(line, sizeof line, stdin)) break;
                line[strcspn(line, "\n")] = '\0';
                if (!line[0]) break;
                if (accel_config_set(&cfg, questions[q], line, err, sizeof err) == ACCEL_OK) break;
                fprintf(stderr, "  %s\n", err);
            }
        }
    }
    FILE *out = stdout;
    if (path) {
        if (access(path, F_OK) == 0) {
            fprintf(stderr, "accel config: '%s' exists; not overwriting it\n", path);
            return 2;
        }
        out = fopen(path, "w");
        if (!out) { perror(path); return 1; }
    }
    fprintf(out, "# accel job configuration (accel %s). Override any key on the command line\n"
                 "# (train.steps=500) or with ACCEL_* variables (ACCEL_TRAIN_STEPS=500).\n"
                 "# Keys left out of a job file keep these defaults.\n", accel_version());
    accel_config_print_commented(&cfg, out);
    if (path) {
        fclose(out);
        fprintf(stderr, "accel config: wrote %s\n", path);
    }
    return 0;
}
