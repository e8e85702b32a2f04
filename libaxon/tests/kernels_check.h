/* Helpers for the kernel tests: descriptors over host or device buffers, uploads and downloads, and a device
 * context that bundles a runtime, its first device and its default stream. */
#ifndef AXON_KERNELS_CHECK_H
#define AXON_KERNELS_CHECK_H

#include <stdint.h>
#include <stdlib.h>

#include "axon/kernels.h"
#include "check.h"

/* A descriptor over data; strides NULL = contiguous row-major. */
static inline axon_tensor_t kc_tensor(void *data, axon_dtype_t dtype, int ndim, const int64_t *sizes,
                                      const int64_t *strides) {
    axon_tensor_t t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.ndim = ndim;
    int64_t step = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t.sizes[i] = sizes[i];
        t.strides[i] = strides ? strides[i] : step;
        step = (int64_t)((uint64_t)step * (uint64_t)sizes[i]); /* wraps for the too-large shapes tests build */
    }
    return t;
}

/* A contiguous vector of n elements over data. */
static inline axon_tensor_t kc_vector(void *data, axon_dtype_t dtype, int64_t n) {
    return kc_tensor(data, dtype, 1, &n, NULL);
}

/* The next value of a small linear congruential generator (24 bits), for test data that must be the same every run. */
static inline uint32_t kc_next_u24(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

typedef struct kc_dev {
    axon_runtime_t rt;
    axon_device_t dev;
    axon_stream_t s;
} kc_dev_t;

/* A CPU-port runtime with one device of 1 GiB and `threads` workers; rt is NULL on failure. */
static inline kc_dev_t kc_open(int threads) {
    kc_dev_t k = {check_runtime(1, (size_t)1 << 30, threads, NULL, NULL), NULL, NULL};
    if (k.rt) {
        k.dev = check_device(k.rt, 0);
        if (axon_stream_default(k.dev, &k.s) != AXON_OK) k.s = NULL;
    }
    return k;
}

/* Device memory holding a copy of n host bytes (zeros if host is NULL); NULL on failure or n == 0. */
static inline void *kc_upload(const kc_dev_t *k, const void *host, size_t n) {
    void *p = NULL;
    if (axon_mem_alloc(k->dev, n, k->s, &p) != AXON_OK || p == NULL) return NULL;
    axon_status_t st = host ? axon_memcpy(p, host, n, AXON_COPY_HOST_TO_DEVICE, k->s)
                            : axon_memset_async(p, 0, n, k->s);
    if (st != AXON_OK) {
        axon_mem_free(k->dev, p);
        return NULL;
    }
    return p;
}

/* Wait for the stream, then copy n device bytes to host. 1 on success. */
static inline int kc_download(const kc_dev_t *k, void *host, const void *dev, size_t n) {
    return axon_stream_sync(k->s) == AXON_OK &&
           axon_memcpy(host, dev, n, AXON_COPY_DEVICE_TO_HOST, k->s) == AXON_OK;
}

/* n doubles as a malloc'ed host buffer of float32 or float64 (d), zeros past n up to 8 bytes each; free() it. */
static inline void *kc_doubles_as(const double *x, int n, axon_dtype_t d) {
    void *p = calloc((size_t)(n > 0 ? n : 1), 8);
    for (int i = 0; p && i < n; i++) {
        if (d == AXON_FLOAT64) ((double *)p)[i] = x[i];
        else ((float *)p)[i] = (float)x[i];
    }
    return p;
}

/* Element i of a float32 or float64 (d) host buffer, as a double. */
static inline double kc_double_at(const void *p, int i, axon_dtype_t d) {
    return d == AXON_FLOAT64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* Index of the first differing byte, or -1. */
static inline int64_t kc_first_diff(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return (int64_t)i;
    return -1;
}

#endif
