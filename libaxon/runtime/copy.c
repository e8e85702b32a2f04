/* Contiguous copies and fills in stream order. Strided and dtype-converting copies are kernels, not this file.
 *
 * Pinned host buffers are copied asynchronously. Pageable host memory could be changed or freed by the caller as soon
 * as the call returns, so, like CUDA, the copy happens before returning: after the stream's earlier work, on the
 * calling thread (with the device's pool for bandwidth). */
#include "internal.h"

static const char *const kind_names[] = {"host-to-device", "device-to-host", "device-to-device"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == AXON_COPY_KIND_COUNT, "every copy kind needs a name");

/* The device of rt whose memory holds [p, p+n), or NULL. */
static axon_device_t device_holding(axon_runtime_t rt, const void *p, size_t n) {
    for (int i = 0; i < axon_device_count(rt); i++)
        if (axon_mem_contains(&rt->devs[i], p, n)) return &rt->devs[i];
    return NULL;
}

static int is_device_memory(axon_runtime_t rt, const void *p) { return device_holding(rt, p, 1) != NULL; }

static axon_status_t check_device_side(axon_stream_t s, const void *p, size_t n, const char *role, int any_device) {
    axon_device_t sd = axon_stream_device(s);
    axon_device_t holder = device_holding(sd->rt, p, n);
    if (holder == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "copy: %s %p (+%zu bytes) is not device memory of this runtime%s", role,
                         p, n, is_device_memory(sd->rt, p) ? " (the range runs past its segment)" : "");
    if (!any_device && holder != sd)
        return axon_fail(AXON_ERROR_INVALID_ARG, "copy: %s %p is memory of axon:%d, but the stream belongs to axon:%d",
                         role, p, holder->index, sd->index);
    return AXON_OK;
}

static axon_status_t check_host_side(axon_stream_t s, const void *p, const char *role) {
    axon_device_t holder = device_holding(axon_stream_device(s)->rt, p, 1);
    if (holder)
        return axon_fail(AXON_ERROR_INVALID_ARG, "copy: %s %p is device memory of axon:%d, not host memory", role, p,
                         holder->index);
    return AXON_OK;
}

/* 1 if [p, p+n) lies inside one live pinned buffer. */
static int pinned_range(axon_runtime_t rt, const void *p, size_t n) {
    void *base;
    size_t size;
    if (!axon_host_is_pinned(rt, p)) return 0; /* the common pageable case, without formatting an error */
    if (axon_host_lookup(rt, p, &base, &size) != AXON_OK) {
        axon_clear_error(); /* freed meanwhile by another thread */
        return 0;
    }
    return (const char *)p + n <= (const char *)base + size;
}

struct copy_args {
    void *dst;
    const void *src;
    size_t n;
    axon_copy_kind_t kind;
    int value;
};

static axon_status_t run_copy(const void *args, const axon_exec_t *ex) {
    const struct copy_args *a = args;
    return ex->device->hw->copy(ex->device->hw_ctx, a->dst, a->src, a->n, a->kind, ex);
}

static axon_status_t run_fill(const void *args, const axon_exec_t *ex) {
    const struct copy_args *a = args;
    return ex->device->hw->fill(ex->device->hw_ctx, a->dst, a->value, a->n, ex);
}

axon_status_t axon_memcpy_async(void *dst, const void *src, size_t n, axon_copy_kind_t kind, axon_stream_t s) {
    axon_status_t st = axon_stream_check(s, "axon_memcpy_async");
    if (st != AXON_OK) return st;
    if ((unsigned)kind >= AXON_COPY_KIND_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_memcpy_async: unknown copy kind %d", (int)kind);
    if (n == 0) return AXON_OK;
    if (dst == NULL || src == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s copy of %zu bytes: %s pointer is NULL", kind_names[kind], n,
                         dst ? "source" : "destination");
    axon_device_t d = axon_stream_device(s);
    const void *host = NULL;
    switch (kind) {
    case AXON_COPY_HOST_TO_DEVICE:
        if ((st = check_device_side(s, dst, n, "destination", 0)) == AXON_OK) st = check_host_side(s, src, "source");
        host = src;
        break;
    case AXON_COPY_DEVICE_TO_HOST:
        if ((st = check_device_side(s, src, n, "source", 0)) == AXON_OK) st = check_host_side(s, dst, "destination");
        host = dst;
        break;
    default:
        if ((st = check_device_side(s, src, n, "source", 1)) == AXON_OK)
            st = check_device_side(s, dst, n, "destination", 1);
        break;
    }
    if (st != AXON_OK) return st;

    struct copy_args a = {dst, src, n, kind, 0};
    if (host == NULL || pinned_range(d->rt, host, n)) {
        axon_launch_t l = {run_copy, &a, sizeof a, "memcpy", n};
        return axon_stream_submit(s, &l, AXON_ROUTE_RUNTIME, NULL);
    }
    /* Pageable host memory: copy now, in stream order, on this thread. */
    axon_stream_wait_completed(s, axon_stream_enqueued(s), 0);
    const axon_exec_t ex = {d, s, d->pool};
    axon_strict_enter(d->rt);
    st = d->hw->copy(d->hw_ctx, dst, src, n, kind, &ex);
    axon_strict_leave(d->rt);
    return st;
}

axon_status_t axon_memcpy(void *dst, const void *src, size_t n, axon_copy_kind_t kind, axon_stream_t s) {
    axon_status_t st = axon_memcpy_async(dst, src, n, kind, s);
    if (st != AXON_OK) return st;
    return axon_stream_sync(s);
}

axon_status_t axon_memset_async(void *dst, int value, size_t n, axon_stream_t s) {
    axon_status_t st = axon_stream_check(s, "axon_memset_async");
    if (st != AXON_OK) return st;
    if (n == 0) return AXON_OK;
    if (dst == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_memset_async: destination is NULL");
    if ((st = check_device_side(s, dst, n, "destination", 0)) != AXON_OK) return st;
    struct copy_args a = {dst, NULL, n, AXON_COPY_DEVICE_TO_DEVICE, value};
    axon_launch_t l = {run_fill, &a, sizeof a, "memset", n};
    return axon_stream_submit(s, &l, AXON_ROUTE_RUNTIME, NULL);
}
