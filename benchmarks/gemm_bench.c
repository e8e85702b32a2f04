/* GFLOP/s of axon_kernel_matmul for float32 and bfloat16, square sizes 64..4096 and a few skinny shapes, on devices
 * with 1 and 2 worker threads, as a fraction of the FMA peak figures in /work/shared/design/FACTS.md section 5
 * (float32 111 GFLOP/s per core, bf16 dot 226 per core; the upper ends of the measured ranges). bfloat16 runs on
 * oneDNN's matmul when libaxon was built with it (axon/gemm.h); on a CPU with AMX (ONEDNN_VERBOSE=1 then names
 * brg:avx512_core_amx_bf16) it can pass the bf16-dot figure, so "of peak" may exceed 100%.
 * Each figure is the best of 3 timings of back-to-back launches covering at least 0.2 s, each ended by a sync, so it
 * includes launch and synchronization costs. Operands are host memory (kernels accept it), contiguous row-major.
 *
 * Usage: bench_gemm [max_size]   (default 4096; smaller for a quick run) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axon/axon.h"
#include "bench_common.h"

#define PEAK_F32_PER_CORE 111.0
#define PEAK_BF16_PER_CORE 226.0

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static axon_tensor_t mat(void *data, axon_dtype_t dt, int64_t bsz, int64_t r, int64_t c) {
    axon_tensor_t t;
    memset(&t, 0, sizeof t);
    t.data = data, t.dtype = dt;
    if (bsz > 1) {
        t.ndim = 3;
        t.sizes[0] = bsz, t.sizes[1] = r, t.sizes[2] = c;
        t.strides[0] = r * c, t.strides[1] = c, t.strides[2] = 1;
    } else {
        t.ndim = 2;
        t.sizes[0] = r, t.sizes[1] = c;
        t.strides[0] = c, t.strides[1] = 1;
    }
    return t;
}

/* Values in [base, base + 1): normal numbers, since denormal products would run at a small fraction of the speed. */
static void fill(char *p, axon_dtype_t dt, int64_t n, float base) {
    for (int64_t i = 0; i < n; i++) {
        float v = base + (float)(i % 17) / 17.0f;
        if (dt == AXON_FLOAT32) {
            memcpy(p + i * 4, &v, 4);
        } else { /* bfloat16: the upper half of the float32 */
            uint32_t u;
            memcpy(&u, &v, 4);
            uint16_t h = (uint16_t)(u >> 16);
            memcpy(p + i * 2, &h, 2);
        }
    }
}

/* GFLOP/s of out(bsz, m, n) = a(bsz, m, k) @ b(bsz, k, n), or a negative number on failure. */
static double bench(axon_stream_t s, axon_dtype_t dt, int64_t bsz, int64_t m, int64_t k, int64_t n) {
    size_t es = axon_dtype_size(dt);
    char *a = malloc((size_t)(bsz * m * k) * es), *b = malloc((size_t)(bsz * k * n) * es);
    char *o = malloc((size_t)(bsz * m * n) * es);
    double best = -1;
    if (!a || !b || !o) goto done;
    fill(a, dt, bsz * m * k, 0.25f);
    fill(b, dt, bsz * k * n, -0.5f);
    axon_tensor_t ta = mat(a, dt, bsz, m, k), tb = mat(b, dt, bsz, k, n), to = mat(o, dt, bsz, m, n);
    if (axon_kernel_matmul(s, &to, &ta, &tb, NULL) != AXON_OK || axon_stream_sync(s) != AXON_OK) goto done;
    double flop = 2.0 * (double)bsz * (double)m * (double)n * (double)k;
    for (int rep = 0; rep < 3; rep++) {
        int iters = 0;
        double t0 = now(), t;
        do {
            if (axon_kernel_matmul(s, &to, &ta, &tb, NULL) != AXON_OK || axon_stream_sync(s) != AXON_OK) goto done;
            iters++;
        } while ((t = now() - t0) < 0.2);
        double g = flop * iters / t * 1e-9;
        if (g > best) best = g;
    }
done:
    free(a), free(b), free(o);
    return best;
}

int main(int argc, char **argv) {
    int64_t max = argc > 1 ? atoll(argv[1]) : 4096;
    static const int64_t skinny[][4] = {{1, 64, 4096, 4096}, {1, 4096, 64, 4096}, {1, 4096, 4096, 64},
                                        {32, 128, 64, 128}};
    printf("%-8s %-8s %-22s %9s %9s\n", "threads", "dtype", "bsz x m x k x n", "GFLOP/s", "of peak");
    for (int threads = 1; threads <= 2; threads++) {
        axon_config_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.device_count = 1, cfg.memory_capacity = (size_t)1 << 30, cfg.threads_per_device = threads;
        axon_runtime_t rt = NULL;
        axon_device_t d = NULL;
        axon_stream_t s = NULL;
        if (axon_runtime_create(&cfg, &rt) != AXON_OK || axon_device_get(rt, 0, &d) != AXON_OK ||
            axon_stream_default(d, &s) != AXON_OK) {
            fprintf(stderr, "bench_gemm: %s\n", axon_last_error());
            return 1;
        }
        for (int di = 0; di < 2; di++) {
            axon_dtype_t dt = di ? AXON_BFLOAT16 : AXON_FLOAT32;
            double peak = threads * (di ? PEAK_BF16_PER_CORE : PEAK_F32_PER_CORE);
            for (int64_t sz = 64; sz <= max; sz *= 2) {
                double g = bench(s, dt, 1, sz, sz, sz);
                char shape[64];
                snprintf(shape, sizeof shape, "1x%lldx%lldx%lld", (long long)sz, (long long)sz, (long long)sz);
                printf("%-8d %-8s %-22s %9.1f %8.0f%%\n", threads, axon_dtype_name(dt), shape, g, 100 * g / peak);
                fflush(stdout);
            }
            for (int i = 0; i < 4; i++) {
                if (skinny[i][1] > max || skinny[i][2] > max || skinny[i][3] > max) continue;
                double g = bench(s, dt, skinny[i][0], skinny[i][1], skinny[i][2], skinny[i][3]);
                char shape[64];
                snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)skinny[i][0], (long long)skinny[i][1],
                         (long long)skinny[i][2], (long long)skinny[i][3]);
                printf("%-8d %-8s %-22s %9.1f %8.0f%%\n", threads, axon_dtype_name(dt), shape, g, 100 * g / peak);
                fflush(stdout);
            }
        }
        axon_runtime_destroy(rt);
    }
    return 0;
}
