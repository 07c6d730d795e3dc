/* Whole files into memory (include/accel/file.h). */
#include "build_config.h"

#include "accel/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

char *accel_file_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, r;
    do {
        if (n == cap) {
            char *b = realloc(buf, (cap = cap ? 2 * cap : 65536) + 1);
            if (!b) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = b;
        }
        r = fread(buf + n, 1, cap - n, f);
        n += r;
    } while (r > 0);
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}
