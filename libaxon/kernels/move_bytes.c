/* axon_move_bytes: memcpy without glibc's slow case on AMD Zen 3.
 *
 * glibc 2.36 copies 2112 bytes to 512 KiB with `rep movsb`, which on Zen 3 runs at a seventh of its usual rate when
 * the destination lies 1-63 bytes after the source modulo a page: each 4 KiB row of a [2048, 1024] float32 roll
 * (out[:, 3:] = x[:, :-3]) took 3.1 ms where the aligned copy took 0.4, and torch CPU's vectorized copy loop does not
 * have the problem. Those copies take a loop of 32-byte moves with the destination aligned instead (within 10-30% of
 * glibc's rate in the other cases, so everything else still goes to memcpy). */
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "kernels_impl.h"

#define MOVE_REP_MIN 2048     /* below it glibc moves vectors itself */
#define MOVE_SHORT_AHEAD 64   /* destination this far ahead of the source, modulo a page: the slow case */

AXON_CLONES static void move_vectors(char *restrict d, const char *restrict s, size_t n) {
    const size_t head = (32 - ((uintptr_t)d & 31)) & 31;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 128; n -= 128, d += 128, s += 128) {
        unsigned char v[4][32]; /* fixed-size moves: vector loads and stores, never a call */
        for (int k = 0; k < 4; k++) __builtin_memcpy(v[k], s + 32 * k, 32);
        for (int k = 0; k < 4; k++) __builtin_memcpy(d + 32 * k, v[k], 32);
    }
    memcpy(d, s, n);
}

void axon_move_bytes(void *dst, const void *src, size_t n) {
    const uintptr_t ahead = ((uintptr_t)dst - (uintptr_t)src) & 4095;
    if (n >= MOVE_REP_MIN && ahead != 0 && ahead < MOVE_SHORT_AHEAD) move_vectors(dst, src, n);
    else memcpy(dst, src, n);
}
