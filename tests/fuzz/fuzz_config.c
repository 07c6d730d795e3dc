/* Fuzz harness of the job-configuration reader (src/core/config.c). The input is read twice:
 * as a YAML configuration file, and as the text of one value given to accel_config_set for a
 * string, a number and a size key (what a key=value argument or an ACCEL_* variable delivers, bytes YAML cannot
 * carry included). Whatever is accepted must print as YAML that reads back to the same
 * configuration, byte for byte, and print the same again; whatever is refused must say why. A
 * crash, a sanitizer report or an abort() here is a bug. Run over the seed corpus by `make check`
 * (tests/fuzz_config.sh), and for long runs by `make fuzz` (tests/fuzz/README.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static accel_config_t g_a, g_b;                     /* large: kept off the stack */

static void check_round_trip(const accel_config_t *a)
{
    char err[2048];
    char *yaml = accel_config_to_yaml(a);
    if (!yaml) abort();
    if (accel_config_from_yaml_buffer(&g_b, yaml, strlen(yaml), "printed", err, sizeof err) != ACCEL_OK) {
        fprintf(stderr, "fuzz_config: the printed configuration does not read back: %s\n%s", err, yaml);
        abort();
    }
    if (memcmp(a, &g_b, sizeof *a)) {
        fprintf(stderr, "fuzz_config: the printed configuration reads back different:\n%s", yaml);
        abort();
    }
    char *again = accel_config_to_yaml(&g_b);
    if (!again || strcmp(yaml, again)) {
        fprintf(stderr, "fuzz_config: printing is not stable:\n%s---\n%s", yaml, again ? again : "(null)");
        abort();
    }
    free(again);
    free(yaml);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[2048] = "";
    if (accel_config_from_yaml_buffer(&g_a, data, size, "input", err, sizeof err) == ACCEL_OK)
        check_round_trip(&g_a);
    else if (!err[0]) {
        fprintf(stderr, "fuzz_config: refused without a message\n");
        abort();
    }
    /* One key of each kind whose text is free: a string, a double, a size with units. */
    static const char *const keys[] = { "train.sample_prompt", "optim.lr", "train.memory_limit" };
    static accel_config_t defaults;
    static int have_defaults;
    if (!have_defaults) { accel_config_defaults(&defaults); have_defaults = 1; }
    char value[ACCEL_STR_MAX + 8];
    size_t n = size < sizeof value - 1 ? size : sizeof value - 1;
    memcpy(value, data, n);
    value[n] = '\0';
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        g_a = defaults;
        err[0] = '\0';
        if (accel_config_set(&g_a, keys[i], value, err, sizeof err) == ACCEL_OK) check_round_trip(&g_a);
        else if (!err[0]) {
            fprintf(stderr, "fuzz_config: %s refused without a message\n", keys[i]);
            abort();
        }
    }
    return 0;
}
