/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3", SC'11): a counter-based
 * generator, so block b of a stream is computed directly from (key, b) with no state to carry between threads.
 * Checked against the paper's Random123 known-answer vectors in test_kernels_random.c. */
#ifndef AXON_KERNELS_PHILOX_H
#define AXON_KERNELS_PHILOX_H

#include <stdint.h>

#define AXON_PHILOX_M0 0xD2511F53u
#define AXON_PHILOX_M1 0xCD9E8D57u
#define AXON_PHILOX_W0 0x9E3779B9u /* golden ratio */
#define AXON_PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

/* out = Philox4x32-10(ctr, key). Ten rounds; the key is bumped between rounds, not before the first. */
static inline void axon_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) k0 += AXON_PHILOX_W0, k1 += AXON_PHILOX_W1;
        uint64_t p0 = (uint64_t)AXON_PHILOX_M0 * c0, p1 = (uint64_t)AXON_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* Block b of stream (seed, offset): key = seed's two halves, counter = offset + b as a 64-bit number in the low two
 * words. */
static inline void axon_philox_block(uint64_t seed, uint64_t offset, uint64_t b, uint32_t out[4]) {
    uint64_t c = offset + b;
    const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    axon_philox4x32(ctr, key, out);
}

#endif
