/* Atomic publication of finished files (see h5util.h): a reader, or a job restarted after a crash,
 * sees the previous file or the complete new one, never a part. The order is the one POSIX needs:
 * data on disk (fsync of the file), then the name (rename), then the name on disk (fsync of the
 * directory). */
#include "build_config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "accel/log.h"
#include "h5util.h"

int accel_h5_fsync_path(const char *path, bool directory)
{
    int fd = open(path, directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    /* Some file systems cannot fsync a directory (EINVAL); the rename is still ordered. */
    if (rc && directory && (errno == EINVAL || errno == EBADF)) rc = 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* The directory holding path ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, len, ".");
    else if (slash == path) snprintf(dir, len, "/");
    else snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

accel_status_t accel_h5_publish(const char *tmp, const char *path)
{
    char dir[PATH_MAX];
    dir_of(path, dir, sizeof dir);
    bool synced = accel_h5_fsync_path(tmp, false) == 0;
    if (synced && rename(tmp, path) == 0) {
        if (accel_h5_fsync_path(dir, true) == 0) return ACCEL_OK;
        /* The new file is in place (tmp is gone), but its name may not survive a crash yet. */
        int e = errno;
        ACCEL_ERROR("published %s, but the fsync of its directory %s failed: %s\n--> hint: check "
                    "the file system's health", path, dir, strerror(e));
        errno = e;
        return ACCEL_ERR_IO;
    }
    int e = errno;
    ACCEL_ERROR("cannot publish %s: %s %s%s failed: %s\n--> hint: check free space and the permissions "
                "of %s; %s is untouched", path, synced ? "renaming" : "fsync of", tmp,
                synced ? " to it" : "", strerror(e), dir, path);
    unlink(tmp);
    errno = e;
    return ACCEL_ERR_IO;
}

accel_status_t accel_h5_publish_text(const char *path, const char *content)
{
    char tmp[PATH_MAX + 8];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        ACCEL_ERROR("cannot write %s: path too long", path);
        errno = ENAMETOOLONG;
        return ACCEL_ERR_INVALID;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        int e = errno;
        ACCEL_ERROR("cannot create %s: %s\n--> hint: check free space and permissions", tmp, strerror(e));
        errno = e;
        return ACCEL_ERR_IO;
    }
    size_t n = strlen(content);
    ssize_t w = write(fd, content, n);
    int e = w == (ssize_t)n ? 0 : (w < 0 ? errno : ENOSPC);
    if (close(fd) && !e) e = errno;
    if (e) {
        ACCEL_ERROR("cannot write %s: %s\n--> hint: check free space and quotas", tmp, strerror(e));
        unlink(tmp);
        errno = e;
        return ACCEL_ERR_IO;
    }
    return accel_h5_publish(tmp, path);
}
