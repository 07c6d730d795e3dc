/* Regression driver for the fuzz harnesses (tests/fuzz/fuzz_*.c): runs LLVMFuzzerTestOneInput once
 * over every file named on the command line, or every file of a named directory (the committed seed
 * corpora and the inputs that once crashed). `make check` builds each harness with this driver and
 * any compiler; `make fuzz` (tests/fuzz/README.md) builds them with clang's libFuzzer and the
 * address and undefined-behaviour sanitizers for long runs. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "fuzz driver: cannot open %s\n", path); return 1; }
    size_t cap = 1 << 16, n = 0, got;
    uint8_t *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) { uint8_t *b = realloc(buf, cap *= 2); if (!b) { free(buf); buf = NULL; } else buf = b; }
    }
    fclose(f);
    if (!buf) { fprintf(stderr, "fuzz driver: out of memory reading %s\n", path); return 1; }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int inputs = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) { fprintf(stderr, "fuzz driver: no such input %s\n", argv[i]); errors++; continue; }
        if (!S_ISDIR(st.st_mode)) { errors += run_file(argv[i]); inputs++; continue; }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            errors += run_file(path);
            inputs++;
        }
        if (d) closedir(d);
    }
    printf("%s: %d inputs run, %d unreadable\n", argv[0], inputs, errors);
    return errors ? 1 : 0;
}
