/* The GEMMs' scratch memory (packed panels, operands widened or made contiguous, a float32 out), kept per calling
 * thread (a stream's worker) from one product to the next in a few slots, one per role: a fresh multi-MiB malloc is
 * an mmap whose page faults measured 10-20% of a 1024^3 AMX product on 2 threads, and most of a 4 x 4096 x 4096
 * float16 Linear on an AVX2 host (its weight widened into 64 MiB of new pages every call). Buffers larger than
 * GEMM_KEEP_BYTES are freed after use, so an odd huge product does not pin its memory; 64 MiB sent a Llama LM head's
 * input gradient (512 x 32000 x 1024, 66 MB of packed B) through fresh pages every call, 16 of its 46 ms. */
#include <pthread.h>
#include <stdlib.h>

#include "gemm_impl.h"

#define GEMM_KEEP_BYTES ((size_t)256 << 20)

typedef struct gemm_scratch {
    void *p[AXON_GEMM_SCRATCH_SLOTS];
    size_t cap[AXON_GEMM_SCRATCH_SLOTS];
} gemm_scratch_t;

static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static pthread_key_t scratch_key;
static int scratch_ok;

static void scratch_free(void *v) {
    gemm_scratch_t *t = v;
    if (!t) return;
    for (int i = 0; i < AXON_GEMM_SCRATCH_SLOTS; i++) free(t->p[i]);
    free(t);
}

static void scratch_init(void) { scratch_ok = pthread_key_create(&scratch_key, scratch_free) == 0; }

void *axon_gemm_scratch(int slot, size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    pthread_once(&scratch_once, scratch_init);
    if (bytes > GEMM_KEEP_BYTES || !scratch_ok || slot < 0 || slot >= AXON_GEMM_SCRATCH_SLOTS)
        return aligned_alloc(64, bytes ? bytes : 64);
    gemm_scratch_t *t = pthread_getspecific(scratch_key);
    if (!t) {
        if ((t = calloc(1, sizeof *t)) == NULL) return NULL;
        if (pthread_setspecific(scratch_key, t) != 0) {
            free(t);
            return NULL;
        }
    }
    if (bytes > t->cap[slot]) {
        free(t->p[slot]);
        t->cap[slot] = 0;
        if ((t->p[slot] = aligned_alloc(64, bytes)) == NULL) return NULL;
        t->cap[slot] = bytes;
    }
    return t->p[slot];
}

void axon_gemm_scratch_done(int slot, void *p) {
    gemm_scratch_t *t = scratch_ok ? pthread_getspecific(scratch_key) : NULL;
    if (!t || slot < 0 || slot >= AXON_GEMM_SCRATCH_SLOTS || p != t->p[slot]) free(p);
}
