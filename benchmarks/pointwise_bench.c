/* Pointwise benchmark: bandwidth of add, mul and gelu on float32 and bfloat16, against the same ops as plain C loops
 * compiled in this file (one thread) and against memory copies, all measured in one run.
 *
 *   axon        axon_kernel_binary / axon_kernel_unary on device memory, launch + sync, pool of --threads workers
 *   loop        a plain C loop over host memory on the calling thread (the kernels' per-element formulas)
 *   memcpy      memcpy(3) of one operand's bytes on one thread; axon D2D: axon_memcpy_async on the device
 * GB/s counts bytes read plus bytes written (add: 3 arrays, gelu: 2), as STREAM does; best of --runs runs.
 *
 * Usage: bench_pointwise [--threads N] [--elements N] [--runs N]. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/axon.h"
#include "bench_common.h"


/* ---- the plain loops: what a user would write by hand ---- */

static float bf16_load(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest even (NaN handling left out: a hand-written loop would not bother). */
static uint16_t bf16_store(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static float gelu(float x) { return x * 0.5f * (1.0f + erff(x * 0.70710678f)); }

static void loop_add_f32(float *restrict o, const float *restrict a, const float *restrict b, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i];
}
static void loop_mul_f32(float *restrict o, const float *restrict a, const float *restrict b, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = a[i] * b[i];
}
static void loop_gelu_f32(float *restrict o, const float *restrict a, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = gelu(a[i]);
}
static void loop_add_bf16(uint16_t *restrict o, const uint16_t *restrict a, const uint16_t *restrict b, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = bf16_store(bf16_load(a[i]) + bf16_load(b[i]));
}
static void loop_mul_bf16(uint16_t *restrict o, const uint16_t *restrict a, const uint16_t *restrict b, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = bf16_store(bf16_load(a[i]) * bf16_load(b[i]));
}
static void loop_gelu_bf16(uint16_t *restrict o, const uint16_t *restrict a, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = bf16_store(gelu(bf16_load(a[i])));
}

/* ---- measuring ---- */

typedef struct bench_case {
    const char *op;
    axon_dtype_t dtype;
    int unary;                   /* 1: gelu(a); 0: op(a, b) */
    axon_binary_op_t bop;
} bench_case_t;

static void run_loop(const bench_case_t *c, void *o, const void *a, const void *b, int64_t n) {
    int f32 = c->dtype == AXON_FLOAT32;
    if (c->unary) {
        if (f32) loop_gelu_f32(o, a, n);
        else loop_gelu_bf16(o, a, n);
    } else if (c->bop == AXON_BINARY_ADD) {
        if (f32) loop_add_f32(o, a, b, n);
        else loop_add_bf16(o, a, b, n);
    } else {
        if (f32) loop_mul_f32(o, a, b, n);
        else loop_mul_bf16(o, a, b, n);
    }
}

int main(int argc, char **argv) {
    int threads = 2, runs = 5;
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
    const size_t bytes = (size_t)n * 4; /* one float32 operand; bfloat16 operands use half */
    axon_config_t cfg;
    CHECKED(axon_config_from_env(&cfg));
    cfg.device_count = 1;
    cfg.threads_per_device = threads;
    if (cfg.memory_capacity < 4 * bytes + ((size_t)64 << 20)) cfg.memory_capacity = 4 * bytes + ((size_t)64 << 20);
    axon_runtime_t rt;
    axon_device_t d;
    axon_stream_t s;
    CHECKED(axon_runtime_create(&cfg, &rt));
    CHECKED(axon_device_get(rt, 0, &d));
    CHECKED(axon_stream_default(d, &s));

    /* Host operands: values in [-4, 4) so gelu takes both branches of erf; the bfloat16 copies are rounded. */
    float *ha = malloc(bytes), *hb = malloc(bytes), *ho = malloc(bytes);
    uint16_t *ha16 = malloc(bytes / 2), *hb16 = malloc(bytes / 2);
    for (int64_t i = 0; i < n; i++) {
        ha[i] = (float)((i * 2654435761u) % 8000u) * 1e-3f - 4.0f;
        hb[i] = (float)((i * 40503u) % 8000u) * 1e-3f - 4.0f;
        ha16[i] = bf16_store(ha[i]), hb16[i] = bf16_store(hb[i]);
    }
    memset(ho, 0, bytes);
    void *da, *db, *dout;
    CHECKED(axon_mem_alloc(d, bytes, s, &da));
    CHECKED(axon_mem_alloc(d, bytes, s, &db));
    CHECKED(axon_mem_alloc(d, bytes, s, &dout));
    CHECKED(axon_memset_async(dout, 0, bytes, s));

    /* memcpy on one thread, and the device's own copy on its workers, on one operand's bytes. */
    double best_memcpy = 1e30, best_d2d = 1e30;
    for (int r = 0; r < runs; r++) {
        uint64_t t0 = axon_clock_ns();
        memcpy(ho, ha, bytes);
        double t = (double)(axon_clock_ns() - t0) * 1e-9;
        if (t < best_memcpy) best_memcpy = t;
        t0 = axon_clock_ns();
        CHECKED(axon_memcpy_async(dout, db, bytes, AXON_COPY_DEVICE_TO_DEVICE, s));
        CHECKED(axon_stream_sync(s));
        t = (double)(axon_clock_ns() - t0) * 1e-9;
        if (t < best_d2d) best_d2d = t;
    }
    double memcpy_gbs = 2.0 * (double)bytes / best_memcpy * 1e-9, d2d_gbs = 2.0 * (double)bytes / best_d2d * 1e-9;

    const bench_case_t cases[] = {
        {"add", AXON_FLOAT32, 0, AXON_BINARY_ADD},  {"mul", AXON_FLOAT32, 0, AXON_BINARY_MUL},
        {"gelu", AXON_FLOAT32, 1, AXON_BINARY_ADD}, {"add", AXON_BFLOAT16, 0, AXON_BINARY_ADD},
        {"mul", AXON_BFLOAT16, 0, AXON_BINARY_MUL}, {"gelu", AXON_BFLOAT16, 1, AXON_BINARY_ADD},
    };
    printf("pointwise benchmark: %lld elements; axon on %d threads, plain loop and memcpy on 1\n", (long long)n,
           threads);
    printf("memcpy %.1f GB/s, axon D2D copy %.1f GB/s (read + write)\n", memcpy_gbs, d2d_gbs);
    printf("%-5s %-9s %10s %10s %10s %12s %12s\n", "op", "dtype", "axon GB/s", "loop GB/s", "axon/loop", "axon/memcpy",
           "axon/D2D");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const bench_case_t *bc = &cases[c];
        int f32 = bc->dtype == AXON_FLOAT32;
        size_t es = f32 ? 4 : 2, arrays = bc->unary ? 2 : 3;
        const void *ha_ = f32 ? (const void *)ha : ha16, *hb_ = f32 ? (const void *)hb : hb16;
        CHECKED(axon_memcpy(da, ha_, (size_t)n * es, AXON_COPY_HOST_TO_DEVICE, s));
        CHECKED(axon_memcpy(db, hb_, (size_t)n * es, AXON_COPY_HOST_TO_DEVICE, s));
        axon_tensor_t ta = {da, bc->dtype, 1, {n}, {1}}, tb = {db, bc->dtype, 1, {n}, {1}};
        axon_tensor_t to = {dout, bc->dtype, 1, {n}, {1}};
        double best_axon = 1e30, best_loop = 1e30;
        for (int r = 0; r <= runs; r++) { /* run 0 warms up */
            uint64_t t0 = axon_clock_ns();
            if (bc->unary) CHECKED(axon_kernel_unary(s, AXON_UNARY_GELU, &to, &ta, NULL));
            else CHECKED(axon_kernel_binary(s, bc->bop, &to, &ta, &tb, NULL));
            CHECKED(axon_stream_sync(s));
            double t = (double)(axon_clock_ns() - t0) * 1e-9;
            if (r > 0 && t < best_axon) best_axon = t;
            t0 = axon_clock_ns();
            run_loop(bc, ho, ha_, hb_, n);
            t = (double)(axon_clock_ns() - t0) * 1e-9;
            if (r > 0 && t < best_loop) best_loop = t;
        }
        /* The two must agree on a few elements, or the comparison means nothing. */
        unsigned char check[16];
        CHECKED(axon_memcpy(check, (char *)dout + (size_t)(n / 3) * es, es, AXON_COPY_DEVICE_TO_HOST, s));
        if (memcmp(check, (char *)ho + (size_t)(n / 3) * es, es) != 0 && !bc->unary)
            fprintf(stderr, "warning: %s %s: kernel and loop disagree\n", bc->op, axon_dtype_name(bc->dtype));
        double moved = (double)((size_t)n * es * arrays);
        double axon_gbs = moved / best_axon * 1e-9, loop_gbs = moved / best_loop * 1e-9;
        printf("%-5s %-9s %10.1f %10.1f %9.2fx %11.2fx %11.2fx\n", bc->op, axon_dtype_name(bc->dtype), axon_gbs,
               loop_gbs, axon_gbs / loop_gbs, axon_gbs / memcpy_gbs, axon_gbs / d2d_gbs);
    }
    CHECKED(axon_mem_free(d, da));
    CHECKED(axon_mem_free(d, db));
    CHECKED(axon_mem_free(d, dout));
    free(ha), free(hb), free(ho), free(ha16), free(hb16);
    axon_runtime_destroy(rt);
    return 0;
}
