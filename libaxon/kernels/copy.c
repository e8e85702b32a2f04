/* axon_kernel_copy: dst = src for any strides and any dtype pair.
 *
 * The two descriptors are merged into one iterator walked in dst's memory order, with dimensions that are
 * contiguous in both coalesced. What remains picks the path:
 *   - one contiguous run, same dtype: memcpy in parallel chunks (the raw copy's contiguous branch);
 *   - runs that are contiguous on both sides: the pair's typed conversion loop, which the compiler vectorizes;
 *   - short rows (a pad's interior, a slice of the last dimension, an expand): one loop over the rows, each moved
 *     inline, filled from a broadcast element, or converted;
 *   - a transpose (src's fastest dimension is not dst's): square tiles, so that the strided side of each tile stays
 *     in L1 instead of touching a new cache line per element;
 *   - anything else: strided runs along dst's fastest dimension.
 * Work is split over the device's pool in chunks of at least AXON_KERNEL_GRAIN elements (or whole tiles). */

#include "internal.h"
#include "kernels_impl.h"

struct copy_args {
    axon_tensor_t dst, src;
};

struct copy_job {
    axon_iter_t it;
    axon_convert_fn fn;
    int64_t tile;                /* tiled path: tile edge in elements */
    int64_t tiles0, tiles1;      /* tiles along dimensions 0 and 1 */
    int block;                   /* tiled path moving elements of one dtype, each side contiguous along its own
                                    dimension: block x block squares through a buffer (copy_block_fn), else 0 */
    void (*block_fn)(char *dst, int64_t dr, const char *src, int64_t sc);
    int same_dtype;
};

static int copy_same_view(const axon_tensor_t *a, const axon_tensor_t *b) {
    if (a->data != b->data || a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->sizes[i] != b->sizes[i] || (a->sizes[i] > 1 && a->strides[i] != b->strides[i])) return 0;
    return 1;
}

static void copy_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    const struct copy_job *j = ctx;
    j->fn(ptr[0], stride[0], ptr[1], stride[1], n);
}

static void copy_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct copy_job *j = ctx;
    axon_iter_runs(&j->it, begin, end, copy_run, (void *)j);
}

/* One square block of a transpose: its runs of src (contiguous: 16 elements of 4 bytes, 32 of 2, one 64-byte line
 * each; 16 of 8 bytes, two lines; 32 of 1, half a line, so that a [n, 32, h, w] image's channels make a block) into a
 * buffer, then contiguous runs of dst out of it. Each line of either side is then touched once per block: a tile's
 * rows, 4 KiB apart in a [1024, 1024] transpose, all map to the same L1 set, so a row-by-row walk that comes back to
 * each line 16 times finds it evicted (2.5x CPU's time on AMD Zen 4; 2.3x for 2-byte elements on Zen 3 before they had
 * blocks). sc: src's stride between the runs, dr: dst's; in elements. */
#define COPY_BLOCK_DEFINE(NAME, T, B)                                                                              \
    static void NAME(char *dst, int64_t dr, const char *src, int64_t sc) {                                       \
        T buf[B][B];                                                                                               \
        const T *s = (const T *)(const void *)src;                                                                 \
        T *d = (T *)(void *)dst;                                                                                   \
        for (int c = 0; c < B; c++)                                                                                \
            for (int r = 0; r < B; r++) buf[r][c] = s[c * sc + r];                                                 \
        for (int r = 0; r < B; r++)                                                                                \
            for (int c = 0; c < B; c++) d[r * dr + c] = buf[r][c];                                                 \
    }
COPY_BLOCK_DEFINE(copy_block1, uint8_t, 32)
COPY_BLOCK_DEFINE(copy_block2, uint16_t, 32)
COPY_BLOCK_DEFINE(copy_block4, uint32_t, 16)
COPY_BLOCK_DEFINE(copy_block8, uint64_t, 16)
#undef COPY_BLOCK_DEFINE

/* Each index is one tile: dimension 0 (dst's fastest) by dimension 1 (src's fastest), at one position of the outer
 * dimensions. Rows of the tile run along dimension 0, so dst is written contiguously and the strided reads of src
 * revisit the same few cache lines from row to row. */
static void copy_tiles(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct copy_job *j = ctx;
    const axon_iter_t *it = &j->it;
    const int64_t es0 = (int64_t)it->esize[0], es1 = (int64_t)it->esize[1];
    for (int64_t u = begin; u < end; u++) {
        int64_t t0 = u % j->tiles0, rest = u / j->tiles0;
        int64_t t1 = rest % j->tiles1, outer = rest / j->tiles1;
        int64_t off0 = 0, off1 = 0;
        for (int d = 2; d < it->ndim; d++) {
            int64_t i = outer % it->sizes[d];
            outer /= it->sizes[d];
            off0 += i * it->strides[0][d];
            off1 += i * it->strides[1][d];
        }
        int64_t c0 = t0 * j->tile, cols = it->sizes[0] - c0 < j->tile ? it->sizes[0] - c0 : j->tile;
        int64_t r0 = t1 * j->tile, r1 = it->sizes[1] - r0 < j->tile ? it->sizes[1] : r0 + j->tile;
        if (j->block) { /* whole blocks; what is left of a partial tile goes row by row below */
            const int64_t B = j->block, full_c = cols / B * B, full_r = r0 + (r1 - r0) / B * B;
            for (int64_t rb = r0; rb < full_r; rb += B)
                for (int64_t cb = c0; cb < c0 + full_c; cb += B) {
                    const int64_t d = off0 + rb * it->strides[0][1] + cb;
                    const int64_t s = off1 + rb + cb * it->strides[1][0];
                    j->block_fn(it->data[0] + d * es0, it->strides[0][1], it->data[1] + s * es1, it->strides[1][0]);
                }
            for (int64_t r = r0; r < r1; r++) { /* the columns past the last whole block, and the rows below */
                const int64_t from = r < full_r ? c0 + full_c : c0;
                if (from == c0 + cols) continue;
                const int64_t d = off0 + r * it->strides[0][1] + from;
                const int64_t s = off1 + r + from * it->strides[1][0];
                j->fn(it->data[0] + d * es0, 1, it->data[1] + s * es1, it->strides[1][0], c0 + cols - from);
            }
            continue;
        }
        for (int64_t r = r0; r < r1; r++) {
            int64_t d = off0 + r * it->strides[0][1] + c0 * it->strides[0][0];
            int64_t s = off1 + r * it->strides[1][1] + c0 * it->strides[1][0];
            j->fn(it->data[0] + d * es0, it->strides[0][0], it->data[1] + s * es1, it->strides[1][0], cols);
        }
    }
}

/* Rows up to this many bytes go through copy_rows: below it the run callback and the typed loop's call cost as much
 * as moving the row (or more: 16-element rows of a float -> half cast took 2x CPU's time through the runs). */
#define COPY_SHORT_ROW_BYTES 2048

/* Rows moved as bytes prefetch the row this many rows ahead along dimension 1: in a transpose of rows (a head
 * permute) consecutive rows lie far apart in src, which the hardware prefetcher does not follow (bfloat16
 * [8, 256, 12, 64].permute(0, 2, 1, 3), 128-byte rows, 1 thread, a Zen 3: 176 -> 141 us). */
#define COPY_ROWS_AHEAD 8

/* Rows [begin, end) of dimension 0, each moved inline when both sides are contiguous along it in one dtype, filled
 * when src is broadcast along it, else by the pair's conversion loop. The outer coordinates are stepped like an
 * odometer on local pointers: for rows of a few bytes the stepping is most of the cost. */
AXON_CLONES static void copy_rows(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct copy_job *j = ctx;
    const axon_iter_t *it = &j->it;
    const int64_t n = it->sizes[0], ds = it->strides[0][0], ss = it->strides[1][0];
    const int64_t des = (int64_t)it->esize[0], ses = (int64_t)it->esize[1];
    const int same = j->same_dtype && ds == 1, bytes = same && ss == 1, fill = same && ss == 0;
    int64_t idx[AXON_MAX_DIMS] = {0};
    for (int64_t r = begin, d = 1; d < it->ndim; d++) {
        idx[d] = r % it->sizes[d];
        r /= it->sizes[d];
    }
    char *dp = axon_iter_at(it, 0, begin * n);
    const char *sp = axon_iter_at(it, 1, begin * n);
    const int64_t ahead = it->ndim > 1 ? COPY_ROWS_AHEAD * it->strides[1][1] * ses : 0, row_bytes = n * ses;
    for (int64_t r = begin; r < end; r++) {
        if (bytes)
            for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(sp + ahead + o);
        if (bytes)
            axon_copy_bytes_short(dp, sp, (size_t)(n * des));
        else if (fill)
            axon_fill_elements(dp, 1, n, sp, (size_t)des);
        else
            j->fn(dp, ds, sp, ss, n);
        for (int d = 1; d < it->ndim; d++) {
            dp += it->strides[0][d] * des, sp += it->strides[1][d] * ses;
            if (++idx[d] < it->sizes[d]) break;
            dp -= it->strides[0][d] * it->sizes[d] * des, sp -= it->strides[1][d] * it->sizes[d] * ses;
            idx[d] = 0;
        }
    }
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* Set up the tiled path if src's fastest dimension is not dimension 0 and dimension 0 strides src by at least a
 * cache line. Moves that dimension to position 1. Returns 1 if tiling applies (0 when dimension 0 is narrow, with
 * src's fastest dimension moved to position 0). */
static int copy_plan_tiles(struct copy_job *j) {
    axon_iter_t *it = &j->it;
    if (it->ndim < 2 || it->strides[1][0] == 0) return 0;
    int best = -1;
    for (int d = 1; d < it->ndim; d++) {
        int64_t s = abs64(it->strides[1][d]);
        if (s != 0 && (best < 0 || s < abs64(it->strides[1][best]))) best = d;
    }
    if (best < 0 || abs64(it->strides[1][best]) >= abs64(it->strides[1][0])) return 0;
    if (abs64(it->strides[1][0]) * (int64_t)it->esize[1] < 64 || it->sizes[best] < 8) return 0;
    /* A narrow dimension 0 (an RGB image into channels-last, pixel_shuffle's pairs) makes no tile: rotate `best`
     * down to position 0 instead, so that runs follow src and write dst a few elements apart, not a conversion call
     * per few elements each reading a new line of src (1.4x torch CPU's time for [32, 3, 224, 224]). */
    const int narrow = it->sizes[0] < 8;
    /* Rotate `best` down to position 1 (0 when narrow); the outer dimensions keep their relative order. */
    for (int d = best; d > (narrow ? 0 : 1); d--) {
        int64_t t = it->sizes[d];
        it->sizes[d] = it->sizes[d - 1];
        it->sizes[d - 1] = t;
        for (int k = 0; k < 2; k++) {
            t = it->strides[k][d];
            it->strides[k][d] = it->strides[k][d - 1];
            it->strides[k][d - 1] = t;
        }
    }
    if (narrow) return 0;
    /* 64 x 64 tiles of 4-byte elements: 16 KiB per side, so both sides fit in a 48 KiB L1 together. */
    size_t es = it->esize[0] > it->esize[1] ? it->esize[0] : it->esize[1];
    j->tile = es <= 4 ? 64 : 32;
    j->tiles0 = (it->sizes[0] + j->tile - 1) / j->tile;
    j->tiles1 = (it->sizes[1] + j->tile - 1) / j->tile;
    return 1;
}

void axon_copy_execute(const axon_tensor_t *dst, const axon_tensor_t *src, axon_pool_t pool) {
    if (axon_tensor_numel(dst) == 0 || copy_same_view(dst, src)) return;
    struct copy_job j;
    const axon_tensor_t *ts[2] = {dst, src};
    axon_iter_init(&j.it, 2, ts, 1);
    j.fn = axon_convert_get(src->dtype, dst->dtype);
    if (copy_plan_tiles(&j)) {
        /* blocks move bytes (no conversion), each side contiguous along its own dimension; a block's edge divides
         * the tile's */
        static const struct {
            int edge;
            void (*fn)(char *, int64_t, const char *, int64_t);
        } blocks[9] = {[1] = {32, copy_block1}, [2] = {32, copy_block2}, [4] = {16, copy_block4},
                       [8] = {16, copy_block8}};
        const size_t es = j.it.esize[0];
        const int movable = src->dtype == dst->dtype && es <= 8 && j.it.strides[0][0] == 1 && j.it.strides[1][1] == 1;
        j.block = movable ? blocks[es].edge : 0;
        j.block_fn = movable ? blocks[es].fn : NULL;
        int64_t units = j.tiles0 * j.tiles1 * (j.it.numel / (j.it.sizes[0] * j.it.sizes[1]));
        int64_t grain = AXON_KERNEL_GRAIN / (j.tile * j.tile);
        axon_parallel_for(pool, 0, units, grain < 1 ? 1 : grain, copy_tiles, &j);
        return;
    }
    j.same_dtype = src->dtype == dst->dtype;
    const size_t wide = j.it.esize[0] > j.it.esize[1] ? j.it.esize[0] : j.it.esize[1];
    if (j.it.ndim >= 2 && (int64_t)wide * j.it.sizes[0] <= COPY_SHORT_ROW_BYTES) {
        int64_t grain = AXON_KERNEL_GRAIN / j.it.sizes[0];
        axon_parallel_for(pool, 0, j.it.numel / j.it.sizes[0], grain < 1 ? 1 : grain, copy_rows, &j);
        return;
    }
    axon_parallel_for(pool, 0, j.it.numel, AXON_KERNEL_GRAIN, copy_range, &j);
}

static axon_status_t copy_kernel(const void *args, const axon_exec_t *ex) {
    const struct copy_args *a = args;
    axon_copy_execute(&a->dst, &a->src, ex->pool);
    return AXON_OK;
}

axon_status_t axon_kernel_copy(axon_stream_t s, const axon_tensor_t *dst, const axon_tensor_t *src) {
    axon_status_t st = axon_kernel_check_dst(dst, "copy: dst");
    if (st != AXON_OK) return st;
    if ((st = axon_kernel_check_src(src, "copy: src")) != AXON_OK) return st;
    int same = dst->ndim == src->ndim;
    for (int i = 0; same && i < dst->ndim; i++) same = dst->sizes[i] == src->sizes[i];
    if (!same) {
        char a[160], b[160];
        return axon_fail(AXON_ERROR_INVALID_ARG, "copy: dst shape %s does not match src shape %s",
                         axon_shape_format(dst, a, sizeof a), axon_shape_format(src, b, sizeof b));
    }
    int64_t n = axon_tensor_numel(dst);
    if (n == 0) return AXON_OK;
    struct copy_args a = {*dst, *src};
    axon_launch_t l = {copy_kernel, &a, sizeof a, "tensor_copy",
                       (uint64_t)n * (axon_dtype_size(dst->dtype) + axon_dtype_size(src->dtype))};
    return axon_stream_launch(s, &l);
}
