/* Output-file guard shared by the writer tools (see outcheck.h). The kind of an existing file comes
 * from its bytes (HDF5 signature and root `format` attribute, the safetensors header), never from
 * its name. */
#include "build_config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "accel/ckpt.h"
#include "accel/dataset.h"
#include "outcheck.h"

static bool is_safetensors(const char *path, long long size)
{
    unsigned char b[9];
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool ok = fread(b, 1, 9, f) == 9;
    fclose(f);
    if (!ok) return false;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    return n >= 2 && n <= (uint64_t)size - 8 && b[8] == '{';
}

static const char *kind_name(accel_out_kind_t kind)
{
    switch (kind) {
    case ACCEL_OUT_DATASET: return "an accel dataset";
    case ACCEL_OUT_WEIGHTS_H5: return "an HDF5 weights file";
    case ACCEL_OUT_SAFETENSORS: return "a safetensors file";
    default: return "a Hugging Face model directory";
    }
}

/* A directory may receive an hf export when it is empty or holds one already (config.json). */
static bool dir_ok(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return false;
    bool empty = true, has_config = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        empty = false;
        if (!strcmp(de->d_name, "config.json") || !strcmp(de->d_name, "adapter_config.json")) has_config = true;
    }
    closedir(d);
    return empty || has_config;
}

int accel_out_check(const char *tool, const char *path, accel_out_kind_t kind, bool force)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) return 0;
        fprintf(stderr, "%s: cannot check output '%s': %s\n--> hint: check the path and its "
                "permissions\n", tool, path, strerror(errno));
        return -1;
    }
    char what[160] = "";
    bool never = false;
    if (kind == ACCEL_OUT_DIRECTORY) {
        if (S_ISDIR(sb.st_mode)) {
            if (force || dir_ok(path)) return 0;
            snprintf(what, sizeof what, "a non-empty directory that holds no Hugging Face model or adapter (no config.json, "
                     "adapter_config.json)");
        } else {
            snprintf(what, sizeof what, "not a directory");
            never = true;
        }
    } else if (!S_ISREG(sb.st_mode)) {
        snprintf(what, sizeof what, "not a regular file");
        never = true;
    } else {
        bool h5 = false;
        char format[64] = "";
        accel_dataset_file_kind(path, &h5, format, sizeof format, NULL, 0);
        if (h5 && !strcmp(format, ACCEL_CKPT_FORMAT_NAME)) {
            snprintf(what, sizeof what, "an accel checkpoint (format '%s')", format);
            never = true;
        } else if (h5 && accel_dataset_format_known(format)) {
            if (kind == ACCEL_OUT_DATASET) return 0;
            snprintf(what, sizeof what, "an accel dataset (format '%s')", format);
        } else if (h5 && !format[0]) {
            if (kind == ACCEL_OUT_WEIGHTS_H5) return 0;
            snprintf(what, sizeof what, "an HDF5 file that is not an accel dataset");
        } else if (h5) {
            snprintf(what, sizeof what, "an HDF5 file of format '%s'", format);
        } else if (is_safetensors(path, (long long)sb.st_size)) {
            if (kind == ACCEL_OUT_SAFETENSORS) return 0;
            snprintf(what, sizeof what, "a safetensors file");
        } else {
            snprintf(what, sizeof what, "not an HDF5 file");
        }
    }
    if (force && !never) return 0;
    fprintf(stderr, "%s: output '%s' exists and is %s; refusing to overwrite it (this command "
            "writes %s)\n--> hint: choose another output or remove the file yourself%s\n", tool, path,
            what, kind_name(kind),
            never ? " (--force never replaces a checkpoint or a non-regular file)"
                  : ", or pass --force to replace it");
    return -1;
}
