/* The HDF5 signature probe (see h5util.h): recognising an HDF5 file without opening it through
 * HDF5. Moved here from src/core: it is HDF5 knowledge. */
#include "build_config.h"

#include <stdio.h>
#include <string.h>

#include "h5util.h"

int accel_h5_probe(const char *path, long long size)
{
    static const unsigned char sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int found = 0;
    for (long long off = 0; !found && off + 8 <= size; off = off ? 2 * off : 512) {
        unsigned char buf[8];
        found = fseek(f, (long)off, SEEK_SET) == 0 && fread(buf, 1, 8, f) == 8 && !memcmp(buf, sig, 8);
    }
    fclose(f);
    return found;
}
