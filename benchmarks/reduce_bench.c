/* Reduction benchmark: bandwidth of float32 sums through axon_kernel_reduce against plain C loops in this file, all
 * measured in one run (figures vary 5-10% between runs; compare the ratios).
 *
 *   axon        axon_kernel_reduce on device memory, launch + sync, pool of --threads workers
 *   loop        the plain loop a user writes: `s += a[i]` on the calling thread (one dependency chain, as C's
 *               ordering rules force without -ffast-math)
 *   lanes       a hand-vectorizable loop with 32 accumulators on one thread: one core's read bandwidth
 * Cases: full sum of n elements, row-wise sum (sum over dim 1 of [n/4096, 4096]), column-wise sum (dim 0).
 * GB/s counts bytes read (n * 4); best of --runs runs after one warm-up.
 *
 * Usage: bench_reduce [--threads N] [--elements N] [--runs N]. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/axon.h"
#include "bench_common.h"


/* ---- the plain loops ---- */

static void loop_rows(float *restrict o, const float *restrict a, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        float s = 0;
        for (int64_t c = 0; c < cols; c++) s += a[r * cols + c];
        o[r] = s;
    }
}

static void loop_cols(float *restrict o, const float *restrict a, int64_t rows, int64_t cols) {
    for (int64_t c = 0; c < cols; c++) o[c] = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) o[c] += a[r * cols + c];
}

static void lanes_rows(float *restrict o, const float *restrict a, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        float acc[32] = {0};
        const float *x = a + r * cols;
        int64_t c = 0;
        for (; c + 32 <= cols; c += 32)
            for (int l = 0; l < 32; l++) acc[l] += x[c + l];
        for (; c < cols; c++) acc[0] += x[c];
        float s = 0;
        for (int l = 0; l < 32; l++) s += acc[l];
        o[r] = s;
    }
}

typedef struct bench_case {
    const char *name;
    int64_t rows, cols;          /* in viewed as [rows, cols] */
    int dim;                     /* reduced dim: -1 all, 0 or 1 */
} bench_case_t;

static void run_loop(const bench_case_t *c, int lanes, float *o, const float *a) {
    if (c->dim == 0) loop_cols(o, a, c->rows, c->cols); /* already vectorizes: independent columns */
    else if (c->dim == 1) (lanes ? lanes_rows : loop_rows)(o, a, c->rows, c->cols);
    else (lanes ? lanes_rows : loop_rows)(o, a, 1, c->rows * c->cols);
}

int main(int argc, char **argv) {
    int threads = 2, runs = 7;
    int64_t n = (int64_t)1 << 24;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--elements") == 0 && i + 1 < argc) n = atoll(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--threads N] [--elements N] [--runs N]\n", argv[0]);
            return 2;
        }
    }
    n = n / 4096 * 4096;
    if (n <= 0) n = 4096;
    const size_t bytes = (size_t)n * 4;
    axon_config_t cfg;
    CHECKED(axon_config_from_env(&cfg));
    cfg.device_count = 1;
    cfg.threads_per_device = threads;
    if (cfg.memory_capacity < 2 * bytes + ((size_t)64 << 20)) cfg.memory_capacity = 2 * bytes + ((size_t)64 << 20);
    axon_runtime_t rt;
    axon_device_t d;
    axon_stream_t s;
    CHECKED(axon_runtime_create(&cfg, &rt));
    CHECKED(axon_device_get(rt, 0, &d));
    CHECKED(axon_stream_default(d, &s));

    float *ha = malloc(bytes), *ho = malloc(bytes / 16 + 4096 * 4), *hk = malloc(bytes / 16 + 4096 * 4);
    for (int64_t i = 0; i < n; i++) ha[i] = (float)((i * 2654435761u) % 8000u) * 1e-3f - 4.0f;
    void *da, *dout;
    CHECKED(axon_mem_alloc(d, bytes, s, &da));
    CHECKED(axon_mem_alloc(d, bytes / 16 + 4096 * 4, s, &dout));
    CHECKED(axon_memcpy(da, ha, bytes, AXON_COPY_HOST_TO_DEVICE, s));

    const bench_case_t cases[] = {
        {"full sum", n, 1, -1},
        {"row sum", n / 4096, 4096, 1},
        {"col sum", n / 4096, 4096, 0},
    };
    printf("reduce benchmark: float32, %lld elements; axon on %d threads, loops on 1\n", (long long)n, threads);
    printf("%-9s %10s %10s %10s %10s %11s\n", "case", "axon GB/s", "loop GB/s", "lanes GB/s", "axon/loop",
           "axon/lanes");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const bench_case_t *bc = &cases[c];
        axon_tensor_t in = {da, AXON_FLOAT32, 2, {bc->rows, bc->cols}, {bc->cols, 1}};
        axon_tensor_t out = {dout, AXON_FLOAT32, 2, {bc->dim == 1 ? bc->rows : 1, bc->dim == 0 ? bc->cols : 1},
                             {bc->dim == 0 ? 0 : 1, 1}};
        if (bc->dim == 0) out.strides[0] = bc->cols;
        double best[3] = {1e30, 1e30, 1e30};
        for (int r = 0; r <= runs; r++) { /* run 0 warms up */
            uint64_t t0 = axon_clock_ns();
            CHECKED(axon_kernel_reduce(s, AXON_REDUCE_SUM, &out, &in, NULL));
            CHECKED(axon_stream_sync(s));
            double t = (double)(axon_clock_ns() - t0) * 1e-9;
            if (r > 0 && t < best[0]) best[0] = t;
            for (int lanes = 0; lanes < 2; lanes++) {
                if (bc->dim == 0 && lanes) continue;
                t0 = axon_clock_ns();
                run_loop(bc, lanes, ho, ha);
                t = (double)(axon_clock_ns() - t0) * 1e-9;
                if (r > 0 && t < best[1 + lanes]) best[1 + lanes] = t;
            }
        }
        if (bc->dim == 0) best[2] = best[1]; /* the column loop is already lane-parallel */
        /* The results must agree, or the comparison means nothing. */
        int64_t nout = bc->dim == 1 ? bc->rows : bc->dim == 0 ? bc->cols : 1;
        CHECKED(axon_memcpy(hk, dout, (size_t)nout * 4, AXON_COPY_DEVICE_TO_HOST, s));
        run_loop(bc, 1, ho, ha);
        for (int64_t i = 0; i < nout; i++)
            if (fabsf(hk[i] - ho[i]) > 1e-3f * (fabsf(ho[i]) + (float)(n / nout))) {
                fprintf(stderr, "warning: %s: axon %g, loop %g at %lld\n", bc->name, hk[i], ho[i], (long long)i);
                break;
            }
        double g[3];
        for (int k = 0; k < 3; k++) g[k] = (double)bytes / best[k] * 1e-9;
        printf("%-9s %10.1f %10.1f %10.1f %9.2fx %10.2fx\n", bc->name, g[0], g[1], g[2], g[0] / g[1], g[0] / g[2]);
    }
    CHECKED(axon_mem_free(d, da));
    CHECKED(axon_mem_free(d, dout));
    free(ha), free(ho), free(hk);
    axon_runtime_destroy(rt);
    return 0;
}
