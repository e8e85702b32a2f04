/* Copies and fills: every direction, synchronous and asynchronous, pinned and pageable, and pointer validation. */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "check.h"

static axon_status_t sleep_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    sleep_ms(*(const int *)args);
    return AXON_OK;
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 131u + seed) >> 3);
}

static void test_round_trip_through_two_devices(void) {
    axon_runtime_t rt = check_runtime(2, 64 << 20, 2, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d0 = check_device(rt, 0), d1 = check_device(rt, 1);
    axon_stream_t s0, s1;
    CHECK_OK(axon_stream_default(d0, &s0));
    CHECK_OK(axon_stream_default(d1, &s1));
    size_t sizes[] = {1, 100, 4096, (3u << 20) + 17}; /* small copies run inline, big ones in parallel */
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        unsigned char *src = malloc(n), *back = calloc(1, n);
        void *a, *b;
        fill_pattern(src, n, (unsigned)k);
        CHECK_OK(axon_mem_alloc(d0, n, s0, &a));
        CHECK_OK(axon_mem_alloc(d1, n, s1, &b));
        CHECK_OK(axon_memcpy(a, src, n, AXON_COPY_HOST_TO_DEVICE, s0));
        CHECK_OK(axon_memcpy(b, a, n, AXON_COPY_DEVICE_TO_DEVICE, s0)); /* peer copy on the source's stream */
        CHECK_OK(axon_memcpy(back, b, n, AXON_COPY_DEVICE_TO_HOST, s1));
        CHECK(memcmp(src, back, n) == 0);
        CHECK_OK(axon_mem_free(d0, a));
        CHECK_OK(axon_mem_free(d1, b));
        free(src);
        free(back);
    }
    axon_runtime_destroy(rt);
}

static void test_pinned_copy_is_asynchronous(void) {
    axon_runtime_t rt = check_runtime(1, 64 << 20, 2, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(d, &s));
    size_t n = 1 << 20;
    unsigned char *pinned, *out;
    void *dev;
    CHECK_OK(axon_host_alloc(rt, n, (void **)&pinned));
    CHECK_OK(axon_host_alloc(rt, n, (void **)&out));
    CHECK_OK(axon_mem_alloc(d, n, s, &dev));
    fill_pattern(pinned, n, 5);
    memset(out, 0, n);
    atomic_int gate = 0;
    CHECK_OK(check_hold_stream(s, &gate));
    CHECK_OK(axon_memcpy_async(dev, pinned, n, AXON_COPY_HOST_TO_DEVICE, s));
    CHECK_OK(axon_memcpy_async(out, dev, n, AXON_COPY_DEVICE_TO_HOST, s));
    /* Both calls returned although the gate holds the stream: the copies are queued, not done. */
    CHECK_STATUS(axon_stream_query(s), AXON_ERROR_NOT_READY);
    int untouched = 1;
    for (size_t i = 0; i < n; i++) untouched &= out[i] == 0;
    CHECK(untouched);
    atomic_store(&gate, 1);
    CHECK_OK(axon_stream_sync(s));
    CHECK(memcmp(pinned, out, n) == 0);
    CHECK_OK(axon_mem_free(d, dev));
    CHECK_OK(axon_host_free(rt, pinned));
    CHECK_OK(axon_host_free(rt, out));
    axon_runtime_destroy(rt);
}

static void test_pageable_copy_waits_for_earlier_work(void) {
    axon_runtime_t rt = check_runtime(1, 64 << 20, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(d, &s));
    size_t n = 4096;
    unsigned char src[4096], out[4096];
    void *dev;
    CHECK_OK(axon_mem_alloc(d, n, s, &dev));
    CHECK_OK(axon_memset_async(dev, 0xAB, n, s));
    int ms = 50;
    axon_launch_t l = {sleep_kernel, &ms, sizeof ms, "sleep", 0};
    CHECK_OK(axon_stream_launch(s, &l));
    memset(out, 0, n);
    CHECK_OK(axon_memcpy_async(out, dev, n, AXON_COPY_DEVICE_TO_HOST, s)); /* returns with the data */
    int all_ab = 1;
    for (size_t i = 0; i < n; i++) all_ab &= out[i] == 0xAB;
    CHECK(all_ab);
    fill_pattern(src, n, 9);
    CHECK_OK(axon_memcpy_async(dev, src, n, AXON_COPY_HOST_TO_DEVICE, s));
    memset(src, 0, n); /* the caller may reuse pageable memory at once */
    CHECK_OK(axon_memcpy(out, dev, n, AXON_COPY_DEVICE_TO_HOST, s));
    fill_pattern(src, n, 9);
    CHECK(memcmp(src, out, n) == 0);
    CHECK_OK(axon_mem_free(d, dev));
    axon_runtime_destroy(rt);
}

static void test_copies_validate_their_pointers(void) {
    axon_runtime_t rt = check_runtime(2, 64 << 20, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d0 = check_device(rt, 0), d1 = check_device(rt, 1);
    axon_stream_t s0;
    CHECK_OK(axon_stream_default(d0, &s0));
    void *a, *b;
    CHECK_OK(axon_mem_alloc(d0, 4096, s0, &a));
    CHECK_OK(axon_mem_alloc(d1, 4096, NULL, &b));
    char host[64];
    CHECK_STATUS(axon_memcpy(host, host + 1, 8, AXON_COPY_HOST_TO_DEVICE, s0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not device memory");
    CHECK_STATUS(axon_memcpy(a, a, 8, AXON_COPY_HOST_TO_DEVICE, s0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not host memory");
    CHECK_STATUS(axon_memcpy(b, host, 8, AXON_COPY_HOST_TO_DEVICE, s0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("axon:1");
    CHECK_STATUS(axon_memcpy(NULL, host, 8, AXON_COPY_HOST_TO_DEVICE, s0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_memcpy(a, host, 8, (axon_copy_kind_t)9, s0), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_memcpy(a, host, 8, AXON_COPY_HOST_TO_DEVICE, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_memset_async(host, 0, 8, s0), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_memcpy(a, host, 0, AXON_COPY_HOST_TO_DEVICE, s0)); /* nothing to copy */
    CHECK_OK(axon_mem_free(d0, a));
    CHECK_OK(axon_mem_free(d1, b));
    axon_runtime_destroy(rt);
}

int main(void) {
    RUN(test_round_trip_through_two_devices);
    RUN(test_pinned_copy_is_asynchronous);
    RUN(test_pageable_copy_waits_for_earlier_work);
    RUN(test_copies_validate_their_pointers);
    return check_report();
}
