/* The on-disk compile cache: content-addressed entries shared by every process of the user.
 *
 * An entry is <dir>/<key>.<suffix> (the payload, e.g. a tier-1 shared object) plus <dir>/<key>.<suffix>.sha256 (the
 * payload's hash). Both are written to a temporary name in the same directory and renamed into place, so readers
 * never see a partial file, and several processes filling the same entry at once each install a complete one. A
 * lookup re-hashes the payload against its .sha256: a truncated or corrupted entry is a miss, rebuilt and replaced.
 *
 * AXON_API here (and in sha256.h, tier1.h) exports a name for libaxon's own C tests; these headers are not installed.
 *
 * The directory: $AXON_CACHE_DIR, else $XDG_CACHE_HOME/axon, else $HOME/.cache/axon; created on first use. */
#ifndef AXON_DISK_CACHE_H
#define AXON_DISK_CACHE_H

#include <stddef.h>

#include "axon/status.h"

#define AXON_CACHE_PATH_MAX 4096

typedef struct axon_disk_cache {
    char dir[AXON_CACHE_PATH_MAX];
} axon_disk_cache_t;

/* Resolves and creates the directory. AXON_ERROR_CONFIG naming the path if it cannot be created. */
AXON_API axon_status_t axon_disk_cache_open(axon_disk_cache_t *c);

/* 1 and the payload's path in path (n bytes) if a verified entry key.suffix exists, else 0. */
AXON_API int axon_disk_cache_lookup(const axon_disk_cache_t *c, const char *key, const char *suffix, char *path,
                                    size_t n);

/* A fresh temporary file name in the cache directory (not created) for a payload being built. */
AXON_API axon_status_t axon_disk_cache_temp_path(const axon_disk_cache_t *c, const char *suffix, char *path,
                                                 size_t n);

/* Installs the finished file tmp_path as the entry key.suffix (hash first, then an atomic rename), and writes the
 * final path to path (n bytes). The temporary file is gone afterwards, on success or failure. */
AXON_API axon_status_t axon_disk_cache_commit(const axon_disk_cache_t *c, const char *key, const char *suffix,
                                     const char *tmp_path, char *path, size_t n);

/* Writes n bytes as the entry key.suffix (through a temporary file and commit). */
AXON_API axon_status_t axon_disk_cache_store(const axon_disk_cache_t *c, const char *key, const char *suffix,
                                    const void *data, size_t size);

#endif
