/* Helpers for the compiler's C tests: run a compiled program on host memory (the CPU port accepts it) and wait. */
#ifndef AXON_COMPILE_CHECK_H
#define AXON_COMPILE_CHECK_H

#include <stdlib.h>

#include "kernels_check.h"

/* Prepare, allocate the outputs (host memory) and the workspace, run (axon_program_run_philox from seed and offset
 * when philox is 1) and wait. outs[k].data is malloc'd; the caller frees it. Returns the status of the first failing
 * call; *ws_bytes gets the workspace size. */
static inline axon_status_t tc_run_with(const kc_dev_t *k, const axon_program_t *p, int nin, const axon_tensor_t *ins,
                                        int nout, axon_tensor_t *outs, size_t *ws_bytes, int philox, uint64_t seed,
                                        uint64_t offset) {
    size_t ws = 0;
    axon_status_t st = axon_program_prepare(p, nin, ins, nout, outs, &ws);
    if (st != AXON_OK) return st;
    for (int i = 0; i < nout; i++) {
        size_t bytes = (size_t)axon_tensor_numel(&outs[i]) * axon_dtype_size(outs[i].dtype);
        outs[i].data = calloc(1, bytes ? bytes : 1);
    }
    void *w = ws ? aligned_alloc(64, (ws + 63) / 64 * 64) : NULL;
    st = philox ? axon_program_run_philox(p, k->s, nin, ins, nout, outs, w, ws, seed, offset)
                : axon_program_run(p, k->s, nin, ins, nout, outs, w, ws);
    if (st == AXON_OK) st = axon_stream_sync(k->s);
    free(w);
    if (ws_bytes) *ws_bytes = ws;
    return st;
}

static inline axon_status_t tc_run(const kc_dev_t *k, const axon_program_t *p, int nin, const axon_tensor_t *ins,
                                   int nout, axon_tensor_t *outs, size_t *ws_bytes) {
    return tc_run_with(k, p, nin, ins, nout, outs, ws_bytes, 0, 0, 0);
}

/* n pseudo-random floats in [-1, 1] (multiples of 1/1000), the same for the same seed. */
static inline void tc_fill(float *x, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
}

static inline void tc_free_outs(int nout, axon_tensor_t *outs) {
    for (int i = 0; i < nout; i++) free(outs[i].data);
}

#endif
