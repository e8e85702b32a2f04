/* Index-computed pads (shape.h): reflect, replicate and circular, forward and backward.
 *
 * Both sides are described as planes (one position of the leading, unpadded dimensions) of up to three padded
 * dimensions. Forward hands out rows of the padded tensor (every dimension but the last) in parallel and maps each
 * output coordinate to its source per dimension. Backward adds several grad_out elements into one grad_in element,
 * so each plane goes to one thread, which adds in grad_out's row-major order, the order of PyTorch's CPU loops. */
#include <inttypes.h>

#include "axon/shape.h"
#include "internal.h"
#include "index_impl.h"

static const char *const pad_names[] = {"reflect", "replicate", "circular"};
_Static_assert(sizeof pad_names / sizeof pad_names[0] == AXON_PAD_MODE_COUNT, "every axon_pad_mode_t needs a name");

const char *axon_pad_mode_name(axon_pad_mode_t m) {
    return (unsigned)m < AXON_PAD_MODE_COUNT ? pad_names[m] : "invalid";
}

struct pad_args {
    axon_tensor_t big, small;    /* padded (out / grad_out) and unpadded (in / grad_in) */
    int nsp, backward;
    int64_t before[3];
    axon_pad_mode_t mode;
};

struct pad_job {
    const struct pad_args *a;
    int lead;                    /* leading dimensions */
    int64_t rows_per_plane, width;
    size_t es;
    axon_convert_fn to_f64, from_f64;
    axon_iter_t zero;            /* backward: grad_in */
};

/* Source coordinate in [0, n) of padded coordinate x (checked at launch to land there). */
static inline int64_t pad_source(axon_pad_mode_t mode, int64_t x, int64_t n) {
    switch (mode) {
    case AXON_PAD_REFLECT: return x < 0 ? -x : x >= n ? 2 * (n - 1) - x : x;
    case AXON_PAD_REPLICATE: return x < 0 ? 0 : x >= n ? n - 1 : x;
    default: return x < 0 ? x + n : x >= n ? x - n : x;
    }
}

/* Byte offsets into big and small of row r (leading coordinates, then padded ones but the last). */
static void pad_row(const struct pad_job *j, int64_t r, int64_t *ob, int64_t *os) {
    const struct pad_args *a = j->a;
    const int nd = a->big.ndim;
    int64_t b = 0, s = 0;
    for (int d = nd - 2; d >= 0; d--) {
        int64_t c = r % a->big.sizes[d];
        r /= a->big.sizes[d];
        int sp = d - j->lead;
        int64_t src = sp >= 0 ? pad_source(a->mode, c - a->before[sp], a->small.sizes[d]) : c;
        b += c * a->big.strides[d], s += src * a->small.strides[d];
    }
    *ob = b * (int64_t)j->es, *os = s * (int64_t)j->es;
}

static void pad_forward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct pad_job *j = ctx;
    const struct pad_args *a = j->a;
    const int last = a->big.ndim - 1, sp = last - j->lead;
    const int64_t n = a->small.sizes[last], bs = a->big.strides[last] * (int64_t)j->es;
    const int64_t ss = a->small.strides[last] * (int64_t)j->es;
    for (int64_t r = begin; r < end; r++) {
        int64_t ob, os;
        pad_row(j, r, &ob, &os);
        char *out = (char *)a->big.data + ob;
        const char *in = (const char *)a->small.data + os;
        for (int64_t x = 0; x < j->width; x++)
            ix_move(out + x * bs, in + pad_source(a->mode, x - a->before[sp], n) * ss, j->es);
    }
}

static void pad_zero_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    const struct pad_job *j = ctx;
    for (int64_t i = 0; i < n; i++) memset(ptr[0] + i * stride[0] * (int64_t)j->es, 0, j->es);
}

static void pad_zero_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct pad_job *j = ctx;
    axon_iter_runs(&j->zero, begin, end, pad_zero_run, j);
}

static void pad_backward_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct pad_job *j = ctx;
    const struct pad_args *a = j->a;
    const int last = a->big.ndim - 1, sp = last - j->lead;
    const int64_t n = a->small.sizes[last], bs = a->big.strides[last] * (int64_t)j->es;
    const int64_t ss = a->small.strides[last] * (int64_t)j->es;
    for (int64_t r = begin * j->rows_per_plane; r < end * j->rows_per_plane; r++) {
        int64_t ob, os;
        pad_row(j, r, &ob, &os);
        const char *g = (const char *)a->big.data + ob;
        char *gi = (char *)a->small.data + os;
        for (int64_t x = 0; x < j->width; x++) {
            char *d = gi + pad_source(a->mode, x - a->before[sp], n) * ss;
            double u, v;
            j->to_f64((char *)&u, 1, d, 1, 1);
            j->to_f64((char *)&v, 1, g + x * bs, 1, 1);
            u += v;
            j->from_f64(d, 1, (const char *)&u, 1, 1);
        }
    }
}

static axon_status_t pad_kernel(const void *args, const axon_exec_t *ex) {
    const struct pad_args *a = args;
    struct pad_job j;
    j.a = a;
    j.lead = a->big.ndim - a->nsp;
    j.es = axon_dtype_size(a->big.dtype);
    j.width = a->big.sizes[a->big.ndim - 1];
    int64_t planes = 1, rows = 1;
    for (int d = 0; d < a->big.ndim - 1; d++) {
        if (d < j.lead) planes *= a->big.sizes[d];
        else rows *= a->big.sizes[d];
    }
    j.rows_per_plane = rows;
    if (!a->backward) {
        int64_t grain = AXON_KERNEL_GRAIN / (j.width ? j.width : 1);
        axon_parallel_for(ex->pool, 0, planes * rows, grain < 1 ? 1 : grain, pad_forward_range, &j);
        return AXON_OK;
    }
    /* grad_in = 0 first: all-zero bytes are 0.0 in every floating dtype. */
    const axon_tensor_t *ts[1] = {&a->small};
    axon_iter_init(&j.zero, 1, ts, 1);
    axon_parallel_for(ex->pool, 0, j.zero.numel, AXON_KERNEL_GRAIN, pad_zero_range, &j);
    j.to_f64 = axon_convert_get(a->big.dtype, AXON_FLOAT64);
    j.from_f64 = axon_convert_get(AXON_FLOAT64, a->big.dtype);
    int64_t per_plane = rows * j.width > 0 ? rows * j.width : 1;
    int64_t grain = AXON_KERNEL_GRAIN / per_plane;
    axon_parallel_for(ex->pool, 0, planes, grain < 1 ? 1 : grain, pad_backward_range, &j);
    return AXON_OK;
}

static axon_status_t pad_launch(axon_stream_t s, axon_pad_mode_t mode, const axon_tensor_t *big,
                                const axon_tensor_t *small, int nsp, const int64_t *before, int backward) {
    const char *op = backward ? "pad_backward" : "pad";
    char sa[160], sb[160];
    if ((unsigned)mode >= AXON_PAD_MODE_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: mode %d is not an axon_pad_mode_t", op, (int)mode);
    if (nsp < 1 || nsp > 3 || !before || big->ndim < nsp || big->ndim != small->ndim || big->dtype != small->dtype)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s and %s (%s, %s) must have one dtype and ndim >= nspatial "
                         "(%d, in 1..3), with before given", op, axon_shape_format(big, sa, sizeof sa),
                         axon_shape_format(small, sb, sizeof sb), axon_dtype_name(big->dtype),
                         axon_dtype_name(small->dtype), nsp);
    struct pad_args a;
    memset(&a, 0, sizeof a);
    a.big = *big, a.small = *small, a.nsp = nsp, a.backward = backward, a.mode = mode;
    const int lead = big->ndim - nsp;
    for (int d = 0; d < big->ndim; d++) {
        int sp = d - lead;
        int64_t n = small->sizes[d], m = big->sizes[d];
        if (sp < 0) {
            if (n != m)
                return axon_fail(AXON_ERROR_INVALID_ARG, "%s: sizes %s and %s differ at unpadded dimension %d", op,
                                 axon_shape_format(big, sa, sizeof sa), axon_shape_format(small, sb, sizeof sb), d);
            continue;
        }
        int64_t lo = -before[sp], hi = m - 1 - before[sp];   /* source range before mapping */
        a.before[sp] = before[sp];
        if (m == 0) continue;
        int ok = n >= 1;
        if (mode == AXON_PAD_REFLECT) ok = ok && -lo <= n - 1 && hi <= 2 * (n - 1) && lo <= n - 1 && hi >= -(n - 1);
        /* replicate clamps every position into [0, n), even where the pads crop past the input (PyTorch's too) */
        if (mode == AXON_PAD_CIRCULAR) ok = ok && lo >= -n && hi < 2 * n && hi >= lo;
        if (!ok)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s (%s): dimension %d of size %" PRId64 " padded by %" PRId64
                             " before and %" PRId64 " after has positions with no source", op, axon_pad_mode_name(mode),
                             d, n, before[sp], m - n - before[sp]);
    }
    int64_t numel = axon_tensor_numel(big);
    if (numel == 0 && !(backward && axon_tensor_numel(small)))
        return AXON_OK;
    axon_launch_t l = {pad_kernel, &a, sizeof a, op, (uint64_t)numel * 2 * axon_dtype_size(big->dtype)};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_pad(axon_stream_t s, axon_pad_mode_t mode, const axon_tensor_t *out,
                              const axon_tensor_t *in, int nspatial, const int64_t *before) {
    axon_status_t st;
    if ((st = axon_kernel_check_operand(out, "pad", "out", 1)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(in, "pad", "in", 0)) != AXON_OK) return st;
    return pad_launch(s, mode, out, in, nspatial, before, 0);
}

axon_status_t axon_kernel_pad_backward(axon_stream_t s, axon_pad_mode_t mode, const axon_tensor_t *grad_in,
                                       const axon_tensor_t *grad_out, int nspatial, const int64_t *before) {
    axon_status_t st;
    if ((st = axon_kernel_check_operand(grad_in, "pad_backward", "grad_in", 1)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(grad_out, "pad_backward", "grad_out", 0)) != AXON_OK) return st;
    if (!axon_dtype_is_floating(grad_in->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "pad_backward: dtype %s (floating dtypes only)",
                         axon_dtype_name(grad_in->dtype));
    return pad_launch(s, mode, grad_out, grad_in, nspatial, before, 1);
}
