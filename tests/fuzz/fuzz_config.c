/* Fuzz harness of the job-configuration reader (src/core/config.c): the input is a YAML
 * configuration file. Accepted ones must print as YAML that reads back to the same configuration,
 * byte for byte, and print the same again; anything else must be refused with a message. A crash,
 * a sanitizer report or an abort() here is a bug. Run over the seed corpus by `make check`
 * (tests/fuzz_config.sh), and for long runs by `make fuzz` (tests/fuzz/README.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static accel_config_t a, b;                     /* large: keep them off the stack */
    char err[2048];
    if (accel_config_from_yaml_buffer(&a, data, size, "input", err, sizeof err) != ACCEL_OK) {
        if (!err[0]) { fprintf(stderr, "fuzz_config: refused without a message\n"); abort(); }
        return 0;
    }
    char *yaml = accel_config_to_yaml(&a);
    if (!yaml) abort();
    if (accel_config_from_yaml_buffer(&b, yaml, strlen(yaml), "printed", err, sizeof err) != ACCEL_OK) {
        fprintf(stderr, "fuzz_config: the printed configuration does not read back: %s\n%s", err, yaml);
        abort();
    }
    if (memcmp(&a, &b, sizeof a)) {
        fprintf(stderr, "fuzz_config: the printed configuration reads back different:\n%s", yaml);
        abort();
    }
    char *again = accel_config_to_yaml(&b);
    if (!again || strcmp(yaml, again)) {
        fprintf(stderr, "fuzz_config: printing is not stable:\n%s---\n%s", yaml, again ? again : "(null)");
        abort();
    }
    free(again);
    free(yaml);
    return 0;
}
