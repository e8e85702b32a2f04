/* This host's ceilings, measured rather than quoted: the fp32 FMA peak, the bf16 peak (AVX512_BF16 dot products and,
 * where the CPU and kernel allow it, AMX tiles) and STREAM bandwidth, on 1 and 2 threads (one pthread per core,
 * pinned). docs/benchmarks.md ("Against this host's peaks") and benchmarks/ops.py compare the kernels with these.
 *
 * - fp32 FMA: 16 independent accumulator chains of vfmadd (zmm with AVX-512, else ymm with AVX2+FMA), all in
 *   registers, so the loop is bound by the FMA ports alone; 2 flops per lane per FMA.
 * - bf16 dot: the same with vdpbf16ps zmm (16 lanes, 2 bf16 products + 2 adds per lane = 64 flops per instruction).
 * - AMX: tdpbf16ps on four 16x16 fp32 accumulator tiles from four 16x32 bf16 source tiles (2 x 16 x 16 x 32 = 16384
 *   flops per instruction), after arch_prctl(ARCH_REQ_XCOMP_PERM) grants the tile state. The bf16 peak is the higher
 *   of the two.
 * - STREAM: copy c = a, scale b = s*c, add c = a+b, triad a = b+s*c over three arrays of doubles (default 1 GiB
 *   each, far above the LLC), each thread on its own contiguous slice that it first touched; bytes counted as STREAM
 *   does (2 or 3 arrays per element, no write-allocate traffic); plain compiled loops, no non-temporal stores.
 * Every figure is the best of several timed repetitions (STREAM's convention; on a shared machine the best is the
 * one least disturbed). The instruction set is chosen at run
 * time (__builtin_cpu_supports, target attributes), so this builds and runs on any x86-64 and, minus the compute
 * loops, elsewhere.
 *
 * Usage: bench_peak [stream MiB per array, default 1024; 0 skips STREAM]
 * The last line is "peaks: key=value ..." (fp32_1, fp32_2, bf16_1, ..., triad_2) for scripts. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define PEAK_X86 1
#include <immintrin.h>
#include <sys/syscall.h>
#else
#define PEAK_X86 0
#endif

#define MAX_THREADS 2
#define COMPUTE_ITERS 20000000L /* loop trips per timing: about 0.1-0.3 s at these rates */
#define REPS 5          /* STREAM repetitions */
#define COMPUTE_REPS 40 /* short compute timings: the best of many finds a quiet moment on a shared machine */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- compute loops: each returns a value that depends on every accumulator, so none is dropped ---- */

#if PEAK_X86
/* Sixteen named accumulators (an array would live on the stack): X16(F) applies F to each index. */
#define X16(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15)
#define X12(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)

/* acc = acc * 0.999999 + 1e-6 converges to 1: the values stay normal (no denormal slowdowns, no overflow). */
__attribute__((target("avx512f"))) static double fma_avx512(long iters) {
    __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-6f), s = _mm512_setzero_ps();
#define DECL(j) __m512 acc##j = _mm512_set1_ps((float)j);
#define STEP(j) acc##j = _mm512_fmadd_ps(acc##j, x, y);
#define SUM(j) s = _mm512_add_ps(s, acc##j);
    X16(DECL)
    for (long i = 0; i < iters; i++) {
        X16(STEP)
    }
    X16(SUM)
#undef DECL
#undef STEP
    return (double)_mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static double fma_avx2(long iters) {
    __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-6f), s = _mm256_setzero_ps();
#define DECL(j) __m256 acc##j = _mm256_set1_ps((float)j);
#define STEP(j) acc##j = _mm256_fmadd_ps(acc##j, x, y);
#undef SUM
#define SUM(j) s = _mm256_add_ps(s, acc##j);
    X12(DECL)
    for (long i = 0; i < iters; i++) {
        X12(STEP)
    }
    X12(SUM)
#undef DECL
#undef STEP
    float f[8];
    _mm256_storeu_ps(f, s);
    return (double)(f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7]);
}

/* acc += 1.0 * 2^-20 per pair: linear growth, far from overflow in any run. */
__attribute__((target("avx512f,avx512bf16"))) static double dot_bf16(long iters) {
    __m512bh a = (__m512bh)_mm512_set1_epi16(0x3F80), b = (__m512bh)_mm512_set1_epi16(0x3580); /* 1.0, 2^-20 */
    __m512 s = _mm512_setzero_ps();
#define DECL(j) __m512 acc##j = _mm512_set1_ps((float)j); /* distinct, or the compiler merges equal chains */
#define STEP(j) acc##j = _mm512_dpbf16_ps(acc##j, a, b);
#undef SUM
#define SUM(j) s = _mm512_add_ps(s, acc##j);
    X16(DECL)
    for (long i = 0; i < iters; i++) {
        X16(STEP)
    }
    X16(SUM)
#undef DECL
#undef STEP
#undef SUM
    return (double)_mm512_reduce_add_ps(s);
}

/* Palette 1, eight tiles of 16 rows x 64 bytes. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config_t;

/* Four accumulators (tmm0-3) from two A tiles (tmm4-5) and two B tiles (tmm6-7), as a 32 x 32 GEMM block does: each
 * source tile feeds two products, and the four products are independent. */
__attribute__((target("amx-tile,amx-bf16"))) static double amx_bf16(long iters) {
    tile_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    static _Thread_local uint16_t src[16 * 32];
    static _Thread_local float dst[16 * 16];
    for (int i = 0; i < 16 * 32; i++) src[i] = 0x3580; /* 2^-20 */
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg)); /* GCC 12's _tile_loadconfig names only 8 bytes as read */
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, src, 64);
    _tile_loadd(5, src, 64);
    _tile_loadd(6, src, 64);
    _tile_loadd(7, src, 64);
    for (long i = 0; i < iters; i++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    double sum = 0;
    _tile_stored(0, dst, 64);
    sum += dst[0];
    _tile_stored(3, dst, 64);
    sum += dst[255];
    _tile_release();
    return sum;
}

/* The tile data state is off until the process asks for it (Linux 5.16+); without it the first tile instruction
 * faults. 1 when AMX may be used. */
static int amx_enable(void) {
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) return 0;
    const long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
}
#endif

typedef enum { K_FMA512, K_FMA256, K_DOT_BF16, K_AMX } kernel_t;

static const char *kernel_name[] = {"fp32 FMA, AVX-512", "fp32 FMA, AVX2", "bf16 dot, AVX512_BF16",
                                    "bf16 AMX tdpbf16ps"};

/* flops per loop trip */
static const double kernel_flops[] = {16 * 2 * 16, 12 * 2 * 8, 16 * 64, 4 * 16384};

/* AMX instructions are long (16 cycles each): fewer trips give the same time. */
static long kernel_iters(kernel_t k) { return k == K_AMX ? COMPUTE_ITERS / 8 : COMPUTE_ITERS; }

static double run_kernel(kernel_t k, long iters) {
#if PEAK_X86
    switch (k) {
    case K_FMA512: return fma_avx512(iters);
    case K_FMA256: return fma_avx2(iters);
    case K_DOT_BF16: return dot_bf16(iters);
    case K_AMX: return amx_bf16(iters);
    }
#endif
    (void)k, (void)iters;
    return 0;
}

/* ---- threads: one per core, pinned, meeting at a barrier around every timed region ---- */

typedef struct {
    int nthreads, tid, cpu;
    pthread_barrier_t *bar;
    /* compute */
    kernel_t kernel;
    /* stream: this thread's slice [lo, hi) */
    double *a, *b, *c;
    size_t lo, hi;
    double seconds[4]; /* per stream kernel, or [0] for compute: this rep's time */
    double sink;
    int job; /* 0 compute, 1 stream first touch, 2 stream */
} worker_t;

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void stream_touch(worker_t *w) {
    for (size_t i = w->lo; i < w->hi; i++) w->a[i] = 1.0, w->b[i] = 2.0, w->c[i] = 0.0;
}

/* Each kernel is timed from a barrier to a barrier on thread 0, so the figure is the slowest thread's. */
static void stream_run(worker_t *w) {
    double *restrict a = w->a, *restrict b = w->b, *restrict c = w->c, s = 3.0;
    size_t lo = w->lo, hi = w->hi;
    double t;
    pthread_barrier_wait(w->bar);
    t = now();
    for (size_t i = lo; i < hi; i++) c[i] = a[i];
    pthread_barrier_wait(w->bar);
    w->seconds[0] = now() - t;
    t = now();
    for (size_t i = lo; i < hi; i++) b[i] = s * c[i];
    pthread_barrier_wait(w->bar);
    w->seconds[1] = now() - t;
    t = now();
    for (size_t i = lo; i < hi; i++) c[i] = a[i] + b[i];
    pthread_barrier_wait(w->bar);
    w->seconds[2] = now() - t;
    t = now();
    for (size_t i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
    pthread_barrier_wait(w->bar);
    w->seconds[3] = now() - t;
}

static void *worker_main(void *arg) {
    worker_t *w = arg;
    pin(w->cpu);
    if (w->job == 1) {
        stream_touch(w);
    } else if (w->job == 2) {
        stream_run(w);
    } else {
        long iters = kernel_iters(w->kernel);
        pthread_barrier_wait(w->bar);
        double t = now();
        w->sink = run_kernel(w->kernel, iters);
        pthread_barrier_wait(w->bar);
        w->seconds[0] = now() - t;
    }
    return NULL;
}

static int cpus[MAX_THREADS];

/* Runs job on nthreads pinned threads (thread 0 on the calling thread's first allowed CPU). 0 on success. */
static int run_threads(worker_t *ws, int nthreads) {
    pthread_barrier_t bar;
    pthread_t th[MAX_THREADS];
    if (pthread_barrier_init(&bar, NULL, (unsigned)nthreads) != 0) return -1;
    for (int t = 0; t < nthreads; t++) {
        ws[t].bar = &bar, ws[t].nthreads = nthreads, ws[t].tid = t, ws[t].cpu = cpus[t];
        if (pthread_create(&th[t], NULL, worker_main, &ws[t]) != 0) {
            fprintf(stderr, "bench_peak: pthread_create failed\n");
            exit(1);
        }
    }
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&bar);
    return 0;
}

/* Best GFLOP/s of COMPUTE_REPS timings of kernel k on nthreads threads (the sum over threads). */
static double compute_peak(kernel_t k, int nthreads) {
    worker_t ws[MAX_THREADS];
    double best = 0;
    for (int rep = 0; rep < COMPUTE_REPS; rep++) {
        memset(ws, 0, sizeof ws);
        for (int t = 0; t < nthreads; t++) ws[t].kernel = k, ws[t].job = 0;
        run_threads(ws, nthreads);
        double g = kernel_flops[k] * (double)kernel_iters(k) * nthreads / ws[0].seconds[0] * 1e-9;
        if (g > best) best = g;
    }
    return best;
}

/* Best GB/s of each STREAM kernel over REPS repetitions on nthreads threads; 0 on success. */
static int stream_peak(size_t n, int nthreads, double gbs[4]) {
    double *a = NULL, *b = NULL, *c = NULL;
    /* 2 MiB alignment lets the kernel back the arrays with huge pages (fewer TLB misses, as STREAM builds use). */
    if (posix_memalign((void **)&a, 1 << 21, n * sizeof *a) || posix_memalign((void **)&b, 1 << 21, n * sizeof *b) ||
        posix_memalign((void **)&c, 1 << 21, n * sizeof *c)) {
        fprintf(stderr, "bench_peak: cannot allocate 3 x %zu MiB for STREAM\n", n * sizeof(double) >> 20);
        free(a), free(b), free(c);
        return -1;
    }
    worker_t ws[MAX_THREADS];
    memset(ws, 0, sizeof ws);
    for (int t = 0; t < nthreads; t++) {
        ws[t].a = a, ws[t].b = b, ws[t].c = c;
        ws[t].lo = n * (size_t)t / (size_t)nthreads, ws[t].hi = n * (size_t)(t + 1) / (size_t)nthreads;
        ws[t].job = 1;
    }
    run_threads(ws, nthreads); /* first touch: each thread's pages are faulted in by that thread */
    static const double arrays[4] = {2, 2, 3, 3};
    for (int j = 0; j < 4; j++) gbs[j] = 0;
    for (int rep = 0; rep < REPS; rep++) {
        for (int t = 0; t < nthreads; t++) ws[t].job = 2;
        run_threads(ws, nthreads);
        for (int j = 0; j < 4; j++) {
            double g = arrays[j] * (double)n * sizeof(double) / ws[0].seconds[j] * 1e-9;
            if (g > gbs[j]) gbs[j] = g;
        }
    }
    double check = a[n / 2] + b[n / 3] + c[n - 1]; /* keeps the stores observable */
    free(a), free(b), free(c);
    return check == check ? 0 : -1;
}

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 1024;
    if (mib < 0) {
        fprintf(stderr, "usage: bench_peak [MiB per STREAM array, default 1024; 0 skips STREAM]\n");
        return 2;
    }
    cpu_set_t allowed;
    int ncpu = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) CPU_ZERO(&allowed);
    for (int c = 0; c < CPU_SETSIZE && ncpu < MAX_THREADS; c++)
        if (CPU_ISSET(c, &allowed)) cpus[ncpu++] = c;
    if (ncpu == 0) cpus[ncpu++] = 0;
    int maxt = ncpu;

    int nk = 0;
    kernel_t ks[4];
#if PEAK_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) ks[nk++] = K_FMA512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ks[nk++] = K_FMA256;
    if (__builtin_cpu_supports("avx512bf16")) ks[nk++] = K_DOT_BF16;
    if (amx_enable()) ks[nk++] = K_AMX;
#endif

    double res[4][MAX_THREADS] = {{0}};
    printf("bench_peak: %d thread(s) available (one per core, pinned); best of %d compute and %d STREAM timings\n", ncpu,
           COMPUTE_REPS, REPS);
    printf("%-26s%14s%14s\n", "GFLOP/s", "1 thread", maxt > 1 ? "2 threads" : "");
    double fp32[MAX_THREADS] = {0}, bf16[MAX_THREADS] = {0};
    for (int i = 0; i < nk; i++) {
        printf("%-26s", kernel_name[ks[i]]);
        for (int t = 1; t <= maxt; t++) {
            res[i][t - 1] = compute_peak(ks[i], t);
            printf("%14.1f", res[i][t - 1]);
            double *peak = ks[i] == K_FMA512 || ks[i] == K_FMA256 ? fp32 : bf16;
            if (res[i][t - 1] > peak[t - 1]) peak[t - 1] = res[i][t - 1];
        }
        printf("\n");
    }
    if (nk == 0) printf("(no x86-64 FMA instructions here: compute peaks not measured)\n");

    static const char *stream_name[4] = {"copy", "scale", "add", "triad"};
    double gbs[MAX_THREADS][4] = {{0}};
    if (mib > 0) {
        size_t n = (size_t)mib * (1u << 20) / sizeof(double);
        printf("STREAM GB/s, 3 x %ld MiB  %14s%14s\n", mib, "1 thread", maxt > 1 ? "2 threads" : "");
        for (int t = 1; t <= maxt; t++)
            if (stream_peak(n, t, gbs[t - 1]) != 0) return 1;
        for (int j = 0; j < 4; j++) {
            printf("%-26s", stream_name[j]);
            for (int t = 1; t <= maxt; t++) printf("%14.1f", gbs[t - 1][j]);
            printf("\n");
        }
    }

    printf("peaks:");
    for (int t = 1; t <= maxt; t++) {
        printf(" fp32_%d=%.1f bf16_%d=%.1f", t, fp32[t - 1], t, bf16[t - 1]);
        for (int j = 0; j < 4 && mib > 0; j++) printf(" %s_%d=%.1f", stream_name[j], t, gbs[t - 1][j]);
    }
    printf("\n");
    return 0;
}
