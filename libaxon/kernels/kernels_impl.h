/* What the kernel files share inside libaxon: the conversion table (convert.c), the strided iterator (iter.c), the
 * common argument checks, and the copy body that fill reuses (copy.c). Never installed. */
#ifndef AXON_KERNELS_IMPL_H
#define AXON_KERNELS_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "axon/kernels.h"
#include "axon/pool.h"
#include "axon/tensor.h"
#include "internal.h"

/* Hot element-wise loops (pointwise ops, conversions, softmax rows) are compiled three times, for AVX-512
 * (x86-64-v4), AVX2 (x86-64-v3) and the x86-64 baseline, and the dynamic loader picks one by the CPU's features
 * (GCC's target_clones: an ifunc resolved once).
 * The library runs on any x86-64 CPU; the wide versions move 2-4x the elements per instruction and call libmvec's
 * 8- and 16-lane functions. Kernel sources build with -ffp-contract=off, so no version fuses a multiply and an add
 * that the others round twice: the three give the same results except where libmvec's lane widths differ by an
 * ulp. AXON_NO_CLONES (or another compiler or CPU family) builds the baseline only. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AXON_NO_CLONES)
#define AXON_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define AXON_CLONES
#endif

/* Below this many elements a parallel-for chunk costs more in wake-ups than it saves. */
#define AXON_KERNEL_GRAIN ((int64_t)1 << 15)

/* Sums in AXON_PARTS running partial sums (layer norm's statistics, the element-wise losses): x[0..m) added element
 * i into part i % AXON_PARTS (m a multiple of AXON_PARTS except at a run's end, whose tail goes into the parts in
 * order), then the parts added in order. Independent additions vectorize, where one running sum is a chain of
 * dependent adds; the order depends on the lengths alone, not on the thread count. */
#define AXON_PARTS 8
static inline void axon_parts_add(double *part, const double *x, int64_t m) {
    int64_t i = 0;
    for (; i + AXON_PARTS <= m; i += AXON_PARTS)
        for (int k = 0; k < AXON_PARTS; k++) part[k] += x[i + k];
    for (int k = 0; i < m; i++, k++) part[k] += x[i];
}

static inline double axon_parts_total(const double *part) {
    double t = 0.0;
    for (int k = 0; k < AXON_PARTS; k++) t += part[k];
    return t;
}

/* ---- conversions (convert.c) ---- */

/* Convert n elements: dst[i * dst_stride] = convert(src[i * src_stride]), strides in elements (may be 0 or negative
 * for src; a 0 src stride broadcasts one element). dst and src must not overlap. */
typedef void (*axon_convert_fn)(char *dst, int64_t dst_stride, const char *src, int64_t src_stride, int64_t n);

/* The function for (src, dst). For src == dst it copies the bytes unchanged (NaN payloads, bool bytes). Both dtypes
 * must be valid. */
axon_convert_fn axon_convert_get(axon_dtype_t src, axon_dtype_t dst);

/* How float16 <-> float32 conversions of contiguous runs go: 2 AVX-512F's instructions, 1 F16C's, 0 bit arithmetic
 * (detected once). */
int axon_convert_f16_level(void);

/* v rounded to a floating dtype's precision, the half types through float32 as c10's arithmetic rounds them: one
 * arithmetic step of PyTorch's in that dtype, repeated in double and rounded this way, gives PyTorch's bits (a double
 * holds any one sum, product or quotient of two floats closely enough). */
static inline double axon_round_to(axon_dtype_t d, double v) {
    if (d == AXON_FLOAT64) return v;
    float f = (float)v;
    if (d == AXON_FLOAT32) return (double)f;
    unsigned char tmp[2];
    axon_convert_get(AXON_FLOAT32, d)((char *)tmp, 1, (const char *)&f, 1, 1);
    axon_convert_get(d, AXON_FLOAT32)((char *)&f, 1, (const char *)tmp, 1, 1);
    return (double)f;
}

/* ---- argument checks (tensor.c) ---- */

/* axon_tensor_check, plus: data aligned for its dtype (kernels access elements through typed pointers), and no
 * stride of 0 on a dimension of size > 1 ("dst has overlapping elements"). `what` prefixes messages ("fill: dst"). */
axon_status_t axon_kernel_check_dst(const axon_tensor_t *t, const char *what);

/* axon_tensor_check plus the alignment check, for tensors that are only read. */
axon_status_t axon_kernel_check_src(const axon_tensor_t *t, const char *what);

/* axon_kernel_check_dst (is_dst) or _src of an op's operand, with messages prefixed "op: role". */
axon_status_t axon_kernel_check_operand(const axon_tensor_t *t, const char *op, const char *role, int is_dst);

/* Element i of a float64 (f64) or float32 buffer as a double, and a double stored into one (rounded once): the
 * kernels that support exactly these two dtypes (CTC and margin losses, distances) load and store through these. */
static inline double axon_f3264_load(const void *p, int64_t i, int f64) {
    return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}
static inline void axon_f3264_store(void *p, int64_t i, double v, int f64) {
    if (f64) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
}

/* axon_kernel_check_operand, then: dtype dt (else UNSUPPORTED, "op: role dtype X, expected Y"), contiguous, and
 * ndim dimensions of the given sizes (-1: any), else INVALID_ARG pointing at `header`, the public header that
 * documents the op's shapes. */
axon_status_t axon_kernel_check_shaped(const axon_tensor_t *t, const char *op, const char *role, int is_dst,
                                       axon_dtype_t dt, int ndim, const int64_t *sizes, const char *header);

/* "[2, 3]" into buf (truncated to n bytes); returns buf. */
const char *axon_shape_format(const axon_tensor_t *t, char *buf, size_t n);

/* ---- strided iteration (iter.c) ---- */

/* Most tensors one iterator walks together: a ternary op's output and its three inputs. */
#define AXON_ITER_MAX_TENSORS 4

/* Up to AXON_ITER_MAX_TENSORS tensors of the same shape, walked together. Dimensions are stored innermost first;
 * dimensions of size 1 are dropped and neighbours that are contiguous with each other in every tensor are merged. */
typedef struct axon_iter {
    int ndim;                             /* >= 1 after init (a scalar becomes one dimension of size 1) */
    int ntensors;                         /* 1..AXON_ITER_MAX_TENSORS */
    int64_t numel;
    int64_t sizes[AXON_MAX_DIMS];
    int64_t strides[AXON_ITER_MAX_TENSORS][AXON_MAX_DIMS];    /* in elements */
    char *data[AXON_ITER_MAX_TENSORS];
    size_t esize[AXON_ITER_MAX_TENSORS];
} axon_iter_t;

/* Drops the size-1 dimensions of sizes[0..*ndim) (row-major: outermost first) and merges each dimension into the one
 * outside it where every one of the n tensors steps over both as over one (strides[k][outer] == strides[k][inner] *
 * sizes[inner]; a broadcast's 0 and 0 merge), so that runs along the innermost dimension are as long as they can be.
 * strides[k] are tensor k's strides, rewritten in place; the row-major order of the elements is unchanged. Tier 1's
 * launches and tier 0's fused groups use it (the iterator below merges the same way, innermost first). */
void axon_dims_coalesce(int *ndim, int64_t *sizes, int n, int64_t *const *strides);

/* Build an iterator over t[0..n) (n = 1..AXON_ITER_MAX_TENSORS, same sizes). With `reorder`, dimensions are sorted so that t[0] is
 * walked in memory order and its negative strides are flipped (in every tensor), which changes only the order of
 * the visit: use it for element-wise work. Without it the visit is t[0]'s logical row-major order, which the random
 * kernels need. */
void axon_iter_init(axon_iter_t *it, int n, const axon_tensor_t *const *t, int reorder);

/* A run of n elements along the innermost dimension: ptr[k] is tensor k's first element, stride[k] its stride (in
 * elements), `pos` the position of the first element in the visit order. */
typedef void (*axon_run_fn)(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos);

/* Call fn for each run covering visit positions [begin, end), in order. */
void axon_iter_runs(const axon_iter_t *it, int64_t begin, int64_t end, axon_run_fn fn, void *ctx);

/* Pointer of tensor k's element at visit position pos. */
char *axon_iter_at(const axon_iter_t *it, int k, int64_t pos);

/* A cursor over an iterator's rows: the runs of its dimension 0 (sizes[0] elements each), row r starting at visit
 * position r * sizes[0]. For kernels whose rows are short, where a call per run would cost more than the run. */
typedef struct axon_iter_row {
    int64_t idx[AXON_MAX_DIMS];                           /* the row's index in dimensions 1..ndim-1 */
    int64_t off[AXON_ITER_MAX_TENSORS];                   /* byte offset of tensor k's first element of the row */
} axon_iter_row_t;

/* Place the cursor at row `row`. */
void axon_iter_row_seek(const axon_iter_t *it, axon_iter_row_t *r, int64_t row);

/* Advance the cursor to the next row. */
static inline void axon_iter_row_next(const axon_iter_t *it, axon_iter_row_t *r) {
    for (int d = 1; d < it->ndim; d++) {
        for (int k = 0; k < it->ntensors; k++) r->off[k] += it->strides[k][d] * (int64_t)it->esize[k];
        if (++r->idx[d] < it->sizes[d]) return;
        for (int k = 0; k < it->ntensors; k++) r->off[k] -= it->sizes[d] * it->strides[k][d] * (int64_t)it->esize[k];
        r->idx[d] = 0;
    }
}

/* t with row-major strides (same data, dtype and shape): how checks written for contiguous operands see a dense
 * tensor of another layout (a channels-last one) whose kernel computes its offsets itself. */
static inline axon_tensor_t axon_tensor_row_major(const axon_tensor_t *t) {
    axon_tensor_t r = *t;
    int64_t stride = 1;
    for (int i = t->ndim - 1; i >= 0; i--) r.strides[i] = stride, stride *= t->sizes[i];
    return r;
}

/* ---- the copy body (copy.c) ---- */

/* memcpy of n bytes for callers where short pieces are common (cat along the last dim, a pad's interior): up to 64
 * bytes as two overlapping fixed-size moves, a few loads and stores instead of a call. d and s must not overlap. */
static inline void axon_copy_bytes_short(char *d, const char *s, size_t n) {
    if (n > 64) {
        axon_move_bytes(d, s, n);
    } else if (n >= 32) {
        memcpy(d, s, 32), memcpy(d + n - 32, s + n - 32, 32);
    } else if (n >= 16) {
        memcpy(d, s, 16), memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        memcpy(d, s, 8), memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        memcpy(d, s, 4), memcpy(d + n - 4, s + n - 4, 4);
    } else if (n >= 2) {
        memcpy(d, s, 2), memcpy(d + n - 2, s + n - 2, 2);
    } else if (n == 1) {
        *d = *s;
    }
}

/* n elements of es bytes from p, `stride` elements apart, set to the element at v: typed stores for 1, 2, 4 and
 * 8 bytes (a fill from a broadcast element in copy_rows, index_fill's slices, the pointwise rows' buffers). */
static inline void axon_fill_elements(char *p, int64_t stride, int64_t n, const void *v, size_t es) {
#define AXON_FILL_AS(T)                                                                                        \
    do {                                                                                                       \
        T x;                                                                                                   \
        memcpy(&x, v, sizeof x);                                                                               \
        T *d = (T *)(void *)p;                                                                                 \
        for (int64_t i = 0; i < n; i++) d[i * stride] = x;                                                     \
    } while (0)
    switch (es) {
    case 1: AXON_FILL_AS(uint8_t); break;
    case 2: AXON_FILL_AS(uint16_t); break;
    case 4: AXON_FILL_AS(uint32_t); break;
    case 8: AXON_FILL_AS(uint64_t); break;
    default:
        for (int64_t i = 0; i < n; i++) memcpy(p + i * stride * (int64_t)es, v, es);
        break;
    }
#undef AXON_FILL_AS
}

/* dst = src with the copy rules, on the calling thread and pool. Descriptors must have passed the copy checks.
 * Cannot fail. */
void axon_copy_execute(const axon_tensor_t *dst, const axon_tensor_t *src, axon_pool_t pool);

#endif
