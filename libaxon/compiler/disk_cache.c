/* The on-disk compile cache (disk_cache.h). */
#include "disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "sha256.h"

static axon_status_t make_dirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return axon_fail(AXON_ERROR_CONFIG, "compile cache: cannot create %s: %s", path, strerror(errno));
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return axon_fail(AXON_ERROR_CONFIG, "compile cache: cannot create %s: %s", path, strerror(errno));
    return AXON_OK;
}

axon_status_t axon_disk_cache_open(axon_disk_cache_t *c) {
    const char *env = getenv("AXON_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int len;
    if (env && *env)
        len = snprintf(c->dir, sizeof c->dir, "%s", env);
    else if (xdg && *xdg)
        len = snprintf(c->dir, sizeof c->dir, "%s/axon", xdg);
    else if (home && *home)
        len = snprintf(c->dir, sizeof c->dir, "%s/.cache/axon", home);
    else
        return axon_fail(AXON_ERROR_CONFIG, "compile cache: set AXON_CACHE_DIR (no HOME or XDG_CACHE_HOME)");
    if (len < 0 || (size_t)len >= sizeof c->dir - 80)
        return axon_fail(AXON_ERROR_CONFIG, "compile cache: directory path too long");
    while (len > 1 && c->dir[len - 1] == '/') c->dir[--len] = '\0';
    return make_dirs(c->dir);
}

/* The hash of a file's bytes as hex; 0 if it cannot be read. */
static int hash_file(const char *path, char hex[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    axon_sha256_t h;
    axon_sha256_init(&h);
    char buf[1 << 14];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) axon_sha256_update(&h, buf, got);
    int ok = !ferror(f);
    fclose(f);
    uint8_t digest[32];
    axon_sha256_final(&h, digest);
    axon_sha256_hex(digest, hex);
    return ok;
}

int axon_disk_cache_lookup(const axon_disk_cache_t *c, const char *key, const char *suffix, char *path, size_t n) {
    char sum_path[AXON_CACHE_PATH_MAX + 160];
    int len = snprintf(path, n, "%s/%s.%s", c->dir, key, suffix);
    if (len < 0 || (size_t)len >= n) return 0;
    snprintf(sum_path, sizeof sum_path, "%s.sha256", path);
    char want[65] = {0}, have[65];
    FILE *f = fopen(sum_path, "rb");
    if (!f) return 0;
    size_t got = fread(want, 1, 64, f);
    fclose(f);
    if (got != 64) return 0;
    return hash_file(path, have) && memcmp(want, have, 64) == 0;
}

axon_status_t axon_disk_cache_temp_path(const axon_disk_cache_t *c, const char *suffix, char *path, size_t n) {
    static atomic_uint counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int len = snprintf(path, n, "%s/.tmp-%ld-%u-%ld.%s", c->dir, (long)getpid(), atomic_fetch_add(&counter, 1),
                       (long)ts.tv_nsec, suffix);
    if (len < 0 || (size_t)len >= n) return axon_fail(AXON_ERROR_INVALID_ARG, "compile cache: path too long");
    return AXON_OK;
}

/* Creates path (which must not exist) holding size bytes. */
static axon_status_t write_file(const char *path, const void *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return axon_fail(AXON_ERROR_CONFIG, "compile cache: cannot write %s: %s", path, strerror(errno));
    const char *p = data;
    size_t left = size;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(path);
            return axon_fail(AXON_ERROR_CONFIG, "compile cache: writing %s failed: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    close(fd);
    return AXON_OK;
}

/* Writes size bytes to a new temporary file and renames it to final_path. */
static axon_status_t write_atomically(const axon_disk_cache_t *c, const char *final_path, const void *data,
                                      size_t size) {
    char tmp[AXON_CACHE_PATH_MAX + 160];
    axon_status_t s = axon_disk_cache_temp_path(c, "part", tmp, sizeof tmp);
    if (s == AXON_OK) s = write_file(tmp, data, size);
    if (s != AXON_OK) return s;
    if (rename(tmp, final_path) != 0) {
        int e = errno;
        unlink(tmp);
        return axon_fail(AXON_ERROR_CONFIG, "compile cache: cannot install %s: %s", final_path, strerror(e));
    }
    return AXON_OK;
}

axon_status_t axon_disk_cache_commit(const axon_disk_cache_t *c, const char *key, const char *suffix,
                                     const char *tmp_path, char *path, size_t n) {
    char hex[65];
    char sum_path[AXON_CACHE_PATH_MAX + 160];
    int len = snprintf(path, n, "%s/%s.%s", c->dir, key, suffix);
    if (len < 0 || (size_t)len >= n) {
        unlink(tmp_path);
        return axon_fail(AXON_ERROR_INVALID_ARG, "compile cache: path too long");
    }
    if (!hash_file(tmp_path, hex)) {
        unlink(tmp_path);
        return axon_fail(AXON_ERROR_CONFIG, "compile cache: cannot read %s", tmp_path);
    }
    /* Payload first, then its hash: a reader that sees the new hash also sees the new payload. A reader that sees
     * an old hash with the new payload finds a mismatch and rebuilds, which is safe. */
    if (rename(tmp_path, path) != 0) {
        int e = errno;
        unlink(tmp_path);
        return axon_fail(AXON_ERROR_CONFIG, "compile cache: cannot install %s: %s", path, strerror(e));
    }
    snprintf(sum_path, sizeof sum_path, "%s.sha256", path);
    return write_atomically(c, sum_path, hex, 64);
}

axon_status_t axon_disk_cache_store(const axon_disk_cache_t *c, const char *key, const char *suffix,
                                    const void *data, size_t size) {
    char tmp[AXON_CACHE_PATH_MAX + 160], path[AXON_CACHE_PATH_MAX + 160];
    axon_status_t s = axon_disk_cache_temp_path(c, suffix, tmp, sizeof tmp);
    if (s == AXON_OK) s = write_file(tmp, data, size);
    if (s != AXON_OK) return s;
    return axon_disk_cache_commit(c, key, suffix, tmp, path, sizeof path);
}
