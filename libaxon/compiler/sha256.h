/* SHA-256 (FIPS 180-4), for content-addressed compile-cache keys: the key of a cache entry is the hash of everything
 * that decides its bytes, so a collision would hand a program the wrong machine code. */
#ifndef AXON_SHA256_H
#define AXON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "axon/export.h"

typedef struct axon_sha256 {
    uint32_t state[8];
    uint64_t length;            /* bytes hashed so far */
    uint8_t block[64];
    size_t used;                /* bytes waiting in block */
} axon_sha256_t;

AXON_API void axon_sha256_init(axon_sha256_t *h);
AXON_API void axon_sha256_update(axon_sha256_t *h, const void *data, size_t n);
/* Writes the digest; h must be initialized again before reuse. */
AXON_API void axon_sha256_final(axon_sha256_t *h, uint8_t digest[32]);
/* The digest as 64 lower-case hex digits and a NUL. */
AXON_API void axon_sha256_hex(const uint8_t digest[32], char hex[65]);

#endif
