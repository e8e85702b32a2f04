/* The multi-tensor engine: list checks, packing lists into argument blocks, and the kernel that runs a block.
 *
 * A chunk's tensors form one range of elements (start[] is the prefix sum of their sizes), split over the pool in
 * grains of AXON_KERNEL_GRAIN elements regardless of tensor boundaries: a list of many small tensors parallelizes
 * as well as one big tensor, and a big tensor is not left to one thread. Each grain finds its first tensor by binary
 * search and then walks tensor by tensor, handing the family one contiguous piece at a time. */
#include <stdio.h>
#include <string.h>

#include "foreach_impl.h"
#include "internal.h"

static int fe_same_sizes(const axon_tensor_t *a, const axon_tensor_t *b) {
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d]) return 0;
    return 1;
}

axon_status_t axon_fe_check_list(const char *op, const char *role, int64_t n, const axon_tensor_t *lst,
                                 const axon_tensor_t *ref, const char *ref_role, int dst) {
    if (lst == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: the %s list is NULL", op, role);
    char what[64], sa[160], sb[160];
    for (int64_t i = 0; i < n; i++) {
        const axon_tensor_t *t = &lst[i];
        /* The element's name ("params[3]") is formatted only for a message: snprintf per tensor was most of a
         * 64-tensor optimizer step's launch cost. A failed operand check is repeated with the name. */
        if (axon_kernel_check_operand(t, op, role, dst) != AXON_OK) {
            snprintf(what, sizeof what, "%s[%lld]", role, (long long)i);
            return axon_kernel_check_operand(t, op, what, dst);
        }
        const int float_ok = axon_dtype_is_floating(t->dtype), same = t->dtype == lst[0].dtype, dense = axon_tensor_is_contiguous(t);
        const int shape_ok = !ref || fe_same_sizes(t, &ref[i]);
        if (float_ok && same && dense && shape_ok) continue;
        snprintf(what, sizeof what, "%s[%lld]", role, (long long)i);
        if (!float_ok)
            return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16",
                             op, what, axon_dtype_name(t->dtype));
        if (!same)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s is %s but %s[0] is %s (one dtype per list)", op, what,
                             axon_dtype_name(t->dtype), role, axon_dtype_name(lst[0].dtype));
        if (!dense)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", op, what,
                             axon_shape_format(t, sa, sizeof sa));
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s does not match %s[%lld] shape %s", op, what,
                         axon_shape_format(t, sa, sizeof sa), ref_role, (long long)i,
                         axon_shape_format(&ref[i], sb, sizeof sb));
    }
    return AXON_OK;
}

axon_status_t axon_fe_check_number(const char *op, const char *role, const axon_tensor_t *t) {
    axon_status_t st = axon_kernel_check_operand(t, op, role, 0);
    if (st != AXON_OK) return st;
    if (!axon_dtype_is_floating(t->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: %s dtype %s is not float32, float64, float16 or bfloat16", op,
                         role, axon_dtype_name(t->dtype));
    if (axon_tensor_numel(t) != 1)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must hold one element, it has %lld", op, role,
                         (long long)axon_tensor_numel(t));
    return AXON_OK;
}

axon_status_t axon_fe_set_number(fe_launch_t *l, int k, const char *role, const axon_tensor_t *t, double value) {
    l->cmd.num_val[k] = value;
    if (t == NULL) return AXON_OK;
    axon_status_t st = axon_fe_check_number(l->name, role, t);
    if (st != AXON_OK) return st;
    l->cmd.num_ptr[k] = t->data;
    l->cmd.num_dtype[k] = t->dtype;
    return AXON_OK;
}

/* ---- running a command ---- */

static void fe_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const fe_job_t *j = ctx;
    const fe_cmd_t *c = j->c;
    const int64_t *st = fe_start(c);
    if (c->per_tensor) {
        for (int64_t i = begin; i < end; i++) c->piece(j, i, 0, st[i + 1] - st[i]);
        return;
    }
    int64_t lo = 0, hi = c->n; /* the last tensor starting at or before `begin` */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (st[mid] <= begin) lo = mid;
        else hi = mid;
    }
    for (int64_t i = lo; i < c->n && begin < end; i++) {
        int64_t e = st[i + 1] < end ? st[i + 1] : end;
        if (e <= begin) continue; /* an empty tensor */
        c->piece(j, i, begin - st[i], e - st[i]);
        begin = e;
    }
}

static axon_status_t fe_kernel(const void *args, const axon_exec_t *ex) {
    const fe_cmd_t *c = args;
    fe_job_t j;
    j.c = c;
    for (int k = 0; k < FE_MAX_NUMBERS; k++) {
        j.num[k] = c->num_val[k];
        if (c->num_ptr[k]) axon_convert_get(c->num_dtype[k], AXON_FLOAT64)((char *)&j.num[k], 1, c->num_ptr[k], 1, 1);
    }
    if (c->skip_num >= 0 && j.num[c->skip_num] == 1.0) return AXON_OK; /* found_inf: the step is skipped */
    if (c->per_tensor) axon_parallel_for(ex->pool, 0, c->n, 1, fe_range, &j);
    else axon_parallel_for(ex->pool, 0, fe_start(c)[c->n], AXON_KERNEL_GRAIN, fe_range, &j);
    return AXON_OK;
}

/* ---- packing and launching ---- */

axon_status_t axon_fe_submit(axon_stream_t s, const fe_launch_t *l) {
    /* 16-byte aligned like the stream's own copy, so the arrays after the header are aligned too. */
    _Alignas(16) unsigned char block[AXON_LAUNCH_MAX_ARGS];
    const int nl = l->cmd.nlists, hv = l->values != NULL;
    const size_t fixed = sizeof(fe_cmd_t) + sizeof(int64_t); /* header and start[m] */
    const size_t per = sizeof(int64_t) + (hv ? sizeof(double) : 0) + (size_t)nl * sizeof(char *);
    const int64_t cap = (int64_t)((sizeof block - fixed) / per);
    const axon_tensor_t *shape = l->lists[l->shape_list];
    for (int64_t first = 0; first < l->n; first += cap) {
        const int64_t m = l->n - first < cap ? l->n - first : cap;
        fe_cmd_t *c = (fe_cmd_t *)(void *)block;
        *c = l->cmd;
        c->n = m;
        c->has_values = hv;
        c->f64 = l->lists[l->compute_list][0].dtype == AXON_FLOAT64;
        for (int k = 0; k < nl; k++) c->dtype[k] = l->lists[k] ? l->lists[k][0].dtype : AXON_FLOAT32;
        int64_t *start = (int64_t *)(void *)(c + 1);
        double *values = (double *)(start + m + 1);
        char **ptr = (char **)(void *)(values + (hv ? m : 0));
        uint64_t bytes = 0;
        start[0] = 0;
        for (int64_t i = 0; i < m; i++) {
            int64_t numel = axon_tensor_numel(&shape[first + i]);
            start[i + 1] = start[i] + numel;
            if (hv) values[i] = l->values[first + i];
            for (int k = 0; k < nl; k++) {
                const axon_tensor_t *t = l->lists[k] ? &l->lists[k][first + i] : NULL;
                ptr[(int64_t)k * m + i] = t ? (char *)t->data : NULL;
                if (t) bytes += (uint64_t)axon_tensor_numel(t) * axon_dtype_size(t->dtype);
            }
        }
        if (start[m] == 0 && !c->per_tensor) continue; /* nothing to compute */
        const size_t size = fixed + (size_t)m * per;
        axon_launch_t launch = {fe_kernel, block, size, l->name, bytes};
        axon_status_t st = axon_stream_launch(s, &launch);
        if (st != AXON_OK) return st;
    }
    return AXON_OK;
}

/* ---- block access for the families ---- */

static axon_dtype_t fe_compute(const fe_cmd_t *c) { return c->f64 ? AXON_FLOAT64 : AXON_FLOAT32; }

void *axon_fe_load(const fe_cmd_t *c, int k, int64_t i, int64_t off, int64_t m, void *buf) {
    char *p = fe_ptr(c, k, i) + off * (int64_t)axon_dtype_size(c->dtype[k]);
    if (c->dtype[k] == fe_compute(c)) return p;
    axon_convert_get(c->dtype[k], fe_compute(c))((char *)buf, 1, p, 1, m);
    return buf;
}

void *axon_fe_out(const fe_cmd_t *c, int k, int64_t i, int64_t off, int64_t m, void *buf) {
    (void)m;
    char *p = fe_ptr(c, k, i) + off * (int64_t)axon_dtype_size(c->dtype[k]);
    return c->dtype[k] == fe_compute(c) ? p : buf;
}

void axon_fe_store(const fe_cmd_t *c, int k, int64_t i, int64_t off, int64_t m, const void *v) {
    char *p = fe_ptr(c, k, i) + off * (int64_t)axon_dtype_size(c->dtype[k]);
    if ((const char *)v == p) return;
    axon_convert_get(fe_compute(c), c->dtype[k])(p, 1, (const char *)v, 1, m);
}
