/* Runtime benchmark: the costs every eager op pays, measured against the host equivalents in the same run.
 *
 *   enqueue          time for the host to enqueue one empty kernel (batches of 1000, median batch)
 *   round trip       enqueue one empty kernel and wait until the host sees it done (median, p90, p99)
 *   alloc/free       one cached axon_mem_alloc + axon_mem_free pair, against malloc + free of the same size
 *   copy 256 MiB     async device-to-device copy + sync, against memcpy(3) on the same sizes (best of runs)
 *
 * Usage: bench_runtime [--threads N] [--quick]. Prints a table; the figures go into docs/benchmarks.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/axon.h"
#include "bench_common.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(double *v, int n, double p) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

static axon_status_t noop_kernel(const void *args, const axon_exec_t *ex) {
    (void)args;
    (void)ex;
    return AXON_OK;
}


int main(int argc, char **argv) {
    int threads = 2, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else {
            fprintf(stderr, "usage: %s [--threads N] [--quick]\n", argv[0]);
            return 2;
        }
    }
    const size_t copy_bytes = (size_t)256 << 20;
    axon_config_t cfg;
    CHECKED(axon_config_from_env(&cfg));
    cfg.device_count = 1;
    cfg.threads_per_device = threads;
    if (cfg.memory_capacity < 3 * copy_bytes) cfg.memory_capacity = 3 * copy_bytes;
    axon_runtime_t rt;
    CHECKED(axon_runtime_create(&cfg, &rt));
    axon_device_t d;
    axon_stream_t s;
    CHECKED(axon_device_get(rt, 0, &d));
    CHECKED(axon_stream_default(d, &s));
    const axon_launch_t noop = {noop_kernel, NULL, 0, "noop", 0};

    /* Enqueue: batches small enough to fit the queue, so backpressure never enters the figure. */
    enum { BATCH = 1000 };
    int batches = quick ? 50 : 300;
    double *per_enqueue = malloc(sizeof(double) * (size_t)batches);
    for (int b = 0; b < batches; b++) {
        CHECKED(axon_stream_sync(s));
        uint64_t t0 = axon_clock_ns();
        for (int i = 0; i < BATCH; i++) CHECKED(axon_stream_launch(s, &noop));
        per_enqueue[b] = (double)(axon_clock_ns() - t0) / BATCH;
    }
    CHECKED(axon_stream_sync(s));
    double enqueue_ns = percentile(per_enqueue, batches, 0.5);

    /* Round trip. */
    int trips = quick ? 2000 : 20000;
    double *rtt = malloc(sizeof(double) * (size_t)trips);
    for (int i = 0; i < trips; i++) {
        uint64_t t0 = axon_clock_ns();
        CHECKED(axon_stream_launch(s, &noop));
        CHECKED(axon_stream_sync(s));
        rtt[i] = (double)(axon_clock_ns() - t0) / 1e3;
    }
    double rtt50 = percentile(rtt, trips, 0.5), rtt90 = percentile(rtt, trips, 0.9),
           rtt99 = percentile(rtt, trips, 0.99);

    /* Cached alloc/free against malloc/free. */
    int pairs = quick ? 200000 : 2000000;
    void *p;
    CHECKED(axon_mem_alloc(d, 4096, s, &p)); /* warm the cache */
    CHECKED(axon_mem_free(d, p));
    uint64_t t0 = axon_clock_ns();
    for (int i = 0; i < pairs; i++) {
        CHECKED(axon_mem_alloc(d, 4096, s, &p));
        CHECKED(axon_mem_free(d, p));
    }
    double axon_pair_ns = (double)(axon_clock_ns() - t0) / pairs;
    t0 = axon_clock_ns();
    for (int i = 0; i < pairs; i++) {
        void *volatile q = malloc(4096);
        free(q);
    }
    double malloc_pair_ns = (double)(axon_clock_ns() - t0) / pairs;

    /* 256 MiB copies; both sides pre-touched so page faults stay out of both figures. */
    void *a, *b;
    CHECKED(axon_mem_alloc(d, copy_bytes, s, &a));
    CHECKED(axon_mem_alloc(d, copy_bytes, s, &b));
    CHECKED(axon_memset_async(a, 1, copy_bytes, s));
    CHECKED(axon_memset_async(b, 2, copy_bytes, s));
    CHECKED(axon_stream_sync(s));
    char *ha = malloc(copy_bytes), *hb = malloc(copy_bytes);
    memset(ha, 1, copy_bytes);
    memset(hb, 2, copy_bytes);
    int runs = quick ? 3 : 7;
    double best_axon = 1e30, best_memcpy = 1e30;
    for (int r = 0; r < runs; r++) {
        t0 = axon_clock_ns();
        CHECKED(axon_memcpy_async(b, a, copy_bytes, AXON_COPY_DEVICE_TO_DEVICE, s));
        CHECKED(axon_stream_sync(s));
        double t = (double)(axon_clock_ns() - t0) / 1e9;
        if (t < best_axon) best_axon = t;
        t0 = axon_clock_ns();
        memcpy(hb, ha, copy_bytes);
        t = (double)(axon_clock_ns() - t0) / 1e9;
        if (t < best_memcpy) best_memcpy = t;
    }
    /* Copy bandwidth counts bytes read plus bytes written, as STREAM does. */
    double axon_gbs = 2.0 * (double)copy_bytes / best_axon / 1e9, memcpy_gbs = 2.0 * (double)copy_bytes / best_memcpy / 1e9;
    if (hb[12345] != 1) fprintf(stderr, "memcpy check failed\n");

    printf("libaxon runtime benchmark (threads per device: %d)\n", threads);
    printf("%-34s %12s %12s %10s   %s\n", "measure", "axon", "host", "ratio", "target");
    printf("%-34s %9.1f ns %12s %10s   <= 1000 ns\n", "enqueue one empty kernel", enqueue_ns, "-", "-");
    printf("%-34s %9.2f us %12s %10s   median <= 10 us (p90 %.2f us, p99 %.2f us)\n", "empty-kernel round trip", rtt50,
           "-", "-", rtt90, rtt99);
    printf("%-34s %9.1f ns %9.1f ns %9.2fx   <= 100 ns\n", "cached alloc+free pair (4 KiB)", axon_pair_ns, malloc_pair_ns,
           axon_pair_ns / malloc_pair_ns);
    printf("%-34s %7.1f GB/s %7.1f GB/s %9.2fx   >= 0.80x memcpy\n", "async D2D copy, 256 MiB", axon_gbs, memcpy_gbs,
           axon_gbs / memcpy_gbs);

    free(per_enqueue);
    free(rtt);
    free(ha);
    free(hb);
    CHECKED(axon_mem_free(d, a));
    CHECKED(axon_mem_free(d, b));
    axon_runtime_destroy(rt);
    return 0;
}
