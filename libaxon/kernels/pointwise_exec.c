/* The pointwise executor: runs one launch's loop over its operands' memory.
 *
 * The operands go into one iterator walked in out's memory order, which drops size-1 dimensions and merges the ones
 * that are contiguous in every tensor, so a contiguous or scalar-broadcast op is one run per chunk. For each run the
 * executor decides, per operand, how the loop sees it:
 *   - a number (params), or a tensor with stride 0 in the run: one work value, the loop's "number" version;
 *   - stride 1 and already the load dtype: the memory itself;
 *   - anything else (strided, or another dtype): converted into a stack buffer, PW_BLOCK elements at a time, with
 *     the copy kernel's conversion loops (kernels.h's rules).
 * out is written directly when it has stride 1 and the result dtype, else through a buffer and a conversion.
 * The fast path (every operand direct) is thus just the loop over the whole run. A launch whose tensors are all
 * contiguous in the loop's dtypes (pw_args.flat, decided at launch) does not even build the iterator: its loop runs
 * over flat ranges, which for a tiny op is most of the kernel's cost saved. Work is split with
 * axon_parallel_for in chunks of at least AXON_KERNEL_GRAIN elements: below that the op runs on the stream's thread
 * alone, which keeps small ops at launch-latency cost. */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "kernels_impl.h"
#include "pointwise_impl.h"

/* A block's buffers: 4 KiB each, 512 elements of 8 bytes (256 of complex128), so the four fill 16 KiB, half of L1,
 * and a block is long enough that the per-block bookkeeping is lost in the loop. */
#define PW_BLOCK_BYTES 4096
#define PW_BLOCK 512

/* Rows of at most this many elements go through pw_rows_range: a call of the loop per run would cost more than the
 * run itself (about 20 ns a run against 1 ns for 16 floats). */
#define PW_SHORT_ROW 256

/* Rows of one value per row (x * scale[:, None]) up to this many elements have it spread over a buffer for a group of
 * rows (pw_rows_range), longer ones take a loop call per row with the value as a number (pw_rows_each_range). A call
 * per row took, against the spread, 4.8x the time in rows of 8, 3.4x in rows of 16, 1.4x in 64, the same in 128 and
 * 0.86x in 256 ([2^20 / R, R] float32 times [2^20 / R, 1], 1 thread, a Zen 3, 2026-12-07). */
#define PW_SPREAD_ROW 128

/* Rows of one value per row from this many elements take the op's row loop where it has one (pw_row_loop_fn): the
 * spread's stores doubled the stores per element, [2^20 / R, R] float32 times [2^20 / R, 1] on a Zen 3, 1 thread:
 * rows of 32 223 -> 148 us, 64 211 -> 146, 128 194 -> 163 (x * 2.0 on the same tensor 110). float32 and float64 rows
 * of 8 and 16 have vector bodies of their own (pointwise_binary.c); the half types' rows of 8 and 16 stay spread. */
static int64_t pw_row_loop_min(axon_dtype_t compute) {
    return compute == AXON_FLOAT32 || compute == AXON_FLOAT64 ? 8 : 32;
}

/* How pw_rows_range feeds operand k to the loop. */
enum pw_row_kind {
    PW_ROW_NUMBER,               /* a number, or one element broadcast over everything: the loop's number version */
    PW_ROW_PACKED,               /* at data + position * size, in the load dtype: the memory itself */
    PW_ROW_SAME,                 /* the same row everywhere (a broadcast bias): converted into its buffer once */
    PW_ROW_GATHER,               /* anything else: each row converted into its buffer */
};

struct pw_job {
    const pw_args_t *a;
    axon_iter_t it;
    int slot[3];                 /* iterator tensor of operand k; -1 for a number */
    enum pw_row_kind row_kind[3];
    int out_packed;              /* out is at data + position * size, in the result dtype */
    int row_values;              /* an operand has one value per row: pw_rows_each_range, a loop call per row */
    int row_which;               /* the operand with one value per row that the op's row loop takes, or -1 */
    axon_convert_fn load_fn[3];  /* operand k's dtype -> its load dtype */
    axon_convert_fn store_fn;    /* result dtype -> out's dtype */
    size_t in_size[3], load_size[3], out_size, result_size;
    int64_t block;               /* elements per buffered block: PW_BLOCK_BYTES over the widest element */
    atomic_int bad;              /* some chunk saw an integer division by zero */
};

/* Per parallel-for chunk, on its thread's stack. */
struct pw_chunk {
    struct pw_job *j;
    int bad;
    _Alignas(16) unsigned char buf[4][PW_BLOCK_BYTES]; /* operands 0..2, then out */
};

void axon_pw_widen(axon_dtype_t d, const void *storage, pw_value_t *out) {
    memset(out, 0, sizeof *out);
    switch (d) {
    case AXON_FLOAT16: out->f = axon_f16_to_f32(*(const uint16_t *)storage); break;
    case AXON_BFLOAT16: out->f = axon_bf16_to_f32(*(const uint16_t *)storage); break;
    case AXON_BOOL: out->bytes[0] = *(const uint8_t *)storage != 0; break;
    default: memcpy(out->bytes, storage, axon_dtype_size(d)); break;
    }
}

/* Operand k's element at p, converted to its load dtype and widened: what the loop's number versions take. */
static void pw_hold(const struct pw_job *j, int k, const char *p, pw_value_t *v) {
    union {
        unsigned char bytes[16];
        double align;
    } tmp;
    j->load_fn[k]((char *)tmp.bytes, 1, p, 0, 1);
    axon_pw_widen(j->a->load[k], tmp.bytes, v);
}

static void pw_run(void *ctx, char *const *ptr, const int64_t *stride, int64_t n, int64_t pos) {
    (void)pos;
    struct pw_chunk *c = ctx;
    const struct pw_job *j = c->j;
    const pw_args_t *a = j->a;
    const char *in[3] = {NULL, NULL, NULL};
    pw_value_t held[3];
    unsigned sm = a->scalar;
    int buffered = 0; /* bit k: operand k goes through buffer k */
    for (int k = 0; k < a->arity; k++) {
        int t = j->slot[k];
        if (t < 0) {
            in[k] = (const char *)a->value[k].bytes;
        } else if (stride[t] == 0 && a->arity > 1) {
            /* Unary loops have no number version; a broadcast unary input is rare and takes the buffer. */
            pw_hold(j, k, ptr[t], &held[k]);
            in[k] = (const char *)held[k].bytes;
            sm |= 1u << k;
        } else if (stride[t] == 1 && a->in[k].dtype == a->load[k]) {
            in[k] = ptr[t];
        } else {
            buffered |= 1 << k;
        }
    }
    int out_direct = stride[0] == 1 && a->out.dtype == a->result;
    if (!buffered && out_direct) {
        c->bad |= a->loop(ptr[0], in, sm, n, &a->ctx);
        return;
    }
    for (int64_t off = 0; off < n; off += j->block) {
        int64_t m = n - off < j->block ? n - off : j->block;
        const char *bin[3] = {NULL, NULL, NULL};
        for (int k = 0; k < a->arity; k++) {
            int t = j->slot[k];
            if (buffered >> k & 1) {
                j->load_fn[k]((char *)c->buf[k], 1, ptr[t] + off * stride[t] * (int64_t)j->in_size[k], stride[t], m);
                bin[k] = (const char *)c->buf[k];
            } else if (sm >> k & 1) {
                bin[k] = in[k];
            } else {
                bin[k] = in[k] + off * (int64_t)j->load_size[k];
            }
        }
        char *o = out_direct ? ptr[0] + off * (int64_t)j->result_size : (char *)c->buf[3];
        c->bad |= a->loop(o, bin, sm, m, &a->ctx);
        if (!out_direct)
            j->store_fn(ptr[0] + off * stride[0] * (int64_t)j->out_size, stride[0], (const char *)c->buf[3], 1, m);
    }
}

static void pw_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct pw_chunk c;
    c.j = ctx;
    c.bad = 0;
    axon_iter_runs(&c.j->it, begin, end, pw_run, &c);
    if (c.bad) atomic_store_explicit(&c.j->bad, 1, memory_order_relaxed);
}

/* Whether iterator tensor t's element at visit position p is at data + p * its size. */
static int pw_packed(const axon_iter_t *it, int t) {
    int64_t expect = 1;
    for (int d = 0; d < it->ndim; d++) {
        if (it->strides[t][d] != expect) return 0;
        expect *= it->sizes[d];
    }
    return 1;
}

static void pw_rows_prepare(struct pw_job *j) {
    const axon_iter_t *it = &j->it;
    const pw_args_t *a = j->a;
    j->out_packed = pw_packed(it, 0) && a->out.dtype == a->result;
    for (int k = 0; k < a->arity; k++) {
        const int t = j->slot[k];
        if (t < 0) {
            j->row_kind[k] = PW_ROW_NUMBER;
            continue;
        }
        int outer_zero = 1;
        for (int d = 1; d < it->ndim; d++) outer_zero &= it->strides[t][d] == 0;
        if (outer_zero && it->strides[t][0] == 0 && a->arity > 1)
            j->row_kind[k] = PW_ROW_NUMBER;
        else if (pw_packed(it, t) && a->in[k].dtype == a->load[k])
            j->row_kind[k] = PW_ROW_PACKED;
        else
            j->row_kind[k] = outer_zero ? PW_ROW_SAME : PW_ROW_GATHER;
        /* Spreading a row's one value over a buffer costs more than a call of the loop's number version, unless
         * the rows are short. Unary loops have no number version. */
        if (j->row_kind[k] == PW_ROW_GATHER && it->strides[t][0] == 0 && a->arity > 1 && it->sizes[0] > PW_SPREAD_ROW)
            j->row_values = 1;
    }
    /* A binary op with a row form, one operand with one value per row and the other an array: the row loop, on groups
     * of rows, with neither a spread nor a call per row */
    j->row_which = -1;
    for (int k = 0; a->row_loop && a->arity == 2 && it->sizes[0] >= pw_row_loop_min(a->compute) && k < 2; k++) {
        const int t = j->slot[k], other = j->slot[1 - k];
        if (t >= 0 && other >= 0 && j->row_kind[k] == PW_ROW_GATHER && it->strides[t][0] == 0 &&
            j->row_kind[1 - k] != PW_ROW_NUMBER)
            j->row_which = k;
    }
    if (j->row_which >= 0) j->row_values = 0;
}

/* pw_hold for an operand already in its load dtype, other than the ones widened (float16, bfloat16, bool): the
 * bytes themselves. */
static inline void pw_hold_row(const struct pw_job *j, int k, const char *p, pw_value_t *v) {
    const axon_dtype_t d = j->a->in[k].dtype;
    if (d == j->a->load[k] && d != AXON_FLOAT16 && d != AXON_BFLOAT16 && d != AXON_BOOL)
        memcpy(v->bytes, p, j->load_size[k]);
    else
        pw_hold(j, k, p, v);
}

/* Rows [0, g) of a same-dtype operand, row i at src + i * step bytes with its elements stride apart, into dst one after
 * another, R elements each: typed copies inline, compiled per instruction set, so that a short row costs a few vector
 * moves (a call of the conversion table's copy per row of a few elements cost as much as the rest); stride 0 spreads
 * the row's one value (x * scale[:, None]). */
#define PW_ROWS_COPY(T)                                                                                        \
    do {                                                                                                       \
        T *d = (T *)dst;                                                                                       \
        for (int64_t i = 0; i < g; i++, d += R) {                                                              \
            const T *p = (const T *)(src + i * step);                                                          \
            if (stride == 0) {                                                                                 \
                const T v = *p;                                                                                \
                for (int64_t l = 0; l < R; l++) d[l] = v;                                                      \
            } else if (stride == 1) {                                                                          \
                for (int64_t l = 0; l < R; l++) d[l] = p[l];                                                   \
            } else {                                                                                           \
                for (int64_t l = 0; l < R; l++) d[l] = p[l * stride];                                          \
            }                                                                                                  \
        }                                                                                                      \
    } while (0)

AXON_CLONES static void pw_rows_copy(char *dst, const char *src, int64_t step, int64_t g, int64_t R, int64_t stride,
                                     size_t es) {
    switch (es) {
    case 1: PW_ROWS_COPY(uint8_t); break;
    case 2: PW_ROWS_COPY(uint16_t); break;
    case 4: PW_ROWS_COPY(uint32_t); break;
    default: PW_ROWS_COPY(uint64_t); break;
    }
}
#undef PW_ROWS_COPY

/* Rows [0, g) of operand k (as pw_rows_copy) converted into its load dtype in dst. */
static void pw_rows_load(const struct pw_job *j, int k, char *dst, const char *src, int64_t step, int64_t g,
                         int64_t R, int64_t stride) {
    const size_t es = j->load_size[k];
    if (j->a->in[k].dtype == j->a->load[k] && (es == 1 || es == 2 || es == 4 || es == 8)) {
        pw_rows_copy(dst, src, step, g, R, stride, es);
        return;
    }
    for (int64_t i = 0; i < g; i++) j->load_fn[k](dst + i * R * (int64_t)es, 1, src + i * step, stride, R);
}

/* g rows of operand k's values, one per row at src + row * step, as work values into dst (the row loop's array of
 * them). */
static void pw_rows_values(const struct pw_job *j, int k, char *dst, const char *src, int64_t step, int64_t g) {
    const axon_dtype_t d = j->a->load[k];
    const size_t ws = d == AXON_FLOAT16 || d == AXON_BFLOAT16 ? sizeof(float) : j->load_size[k];
    /* the common cases inline: a call of memcpy per value cost more than the row loop saves */
    if (j->a->in[k].dtype == d && (d == AXON_FLOAT32 || d == AXON_FLOAT64)) {
        for (int64_t q = 0; q < g; q++) {
            if (ws == 4) memcpy(dst + q * 4, src + q * step, 4);
            else memcpy(dst + q * 8, src + q * step, 8);
        }
        return;
    }
    if (j->a->in[k].dtype == d && (d == AXON_FLOAT16 || d == AXON_BFLOAT16)) {
        float *w = (float *)(void *)dst;
        for (int64_t q = 0; q < g; q++) {
            uint16_t h;
            memcpy(&h, src + q * step, sizeof h);
            w[q] = d == AXON_FLOAT16 ? axon_f16_to_f32(h) : axon_bf16_to_f32(h);
        }
        return;
    }
    for (int64_t q = 0; q < g; q++) {
        pw_value_t v;
        pw_hold_row(j, k, src + q * step, &v);
        memcpy(dst + q * (int64_t)ws, v.bytes, ws);
    }
}

/* The operands that are one value for every row (numbers, and tensors broadcast over everything) into in[] (held
 * for the latter); returns the loop's number mask. */
static unsigned pw_rows_numbers(const struct pw_job *j, const char **in, pw_value_t *held) {
    const pw_args_t *a = j->a;
    unsigned sm = a->scalar;
    for (int k = 0; k < a->arity; k++) {
        if (j->slot[k] < 0) {
            in[k] = (const char *)a->value[k].bytes;
        } else if (j->row_kind[k] == PW_ROW_NUMBER) {
            pw_hold(j, k, j->it.data[j->slot[k]], &held[k]);
            in[k] = (const char *)held[k].bytes;
            sm |= 1u << k;
        }
    }
    return sm;
}

/* Rows [begin, end), one loop call each: an operand with one value per row (x * scale[:, None]) goes to the loop as
 * a number, the others as their memory when they have stride 1 in the load dtype, else through a buffer. */
static void pw_rows_each_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct pw_chunk c;
    c.j = ctx;
    c.bad = 0;
    const struct pw_job *j = c.j;
    const pw_args_t *a = j->a;
    const axon_iter_t *it = &j->it;
    const int64_t R = it->sizes[0];
    const char *in[3] = {NULL, NULL, NULL};
    pw_value_t held[3];
    const unsigned fixed = pw_rows_numbers(j, in, held);
    const int out_direct = it->strides[0][0] == 1 && a->out.dtype == a->result;
    axon_iter_row_t cur;
    axon_iter_row_seek(it, &cur, begin);
    for (int64_t r = begin; r < end; r++) {
        unsigned sm = fixed;
        for (int k = 0; k < a->arity; k++) {
            const int t = j->slot[k];
            if (fixed >> k & 1) continue;
            const char *p = it->data[t] + cur.off[t];
            const int64_t st = it->strides[t][0];
            if (st == 0) {
                pw_hold_row(j, k, p, &held[k]);
                in[k] = (const char *)held[k].bytes;
                sm |= 1u << k;
            } else if (st == 1 && a->in[k].dtype == a->load[k]) {
                in[k] = p;
            } else {
                pw_rows_load(j, k, (char *)c.buf[k], p, 0, 1, R, st);
                in[k] = (const char *)c.buf[k];
            }
        }
        char *o = it->data[0] + cur.off[0];
        c.bad |= a->loop(out_direct ? o : (char *)c.buf[3], in, sm, R, &a->ctx);
        if (!out_direct) j->store_fn(o, it->strides[0][0], (const char *)c.buf[3], 1, R);
        axon_iter_row_next(it, &cur);
    }
    if (c.bad) atomic_store_explicit(&c.j->bad, 1, memory_order_relaxed);
}

/* The cursor past a run of `run` rows along dimension 1 (which must not cross its end): onto the run's last row, then
 * one row on, wrapping dimension 1 if the run ends it. */
static inline void pw_rows_past_run(const axon_iter_t *it, axon_iter_row_t *cur, int64_t run) {
    for (int t = 0; t < it->ntensors; t++) cur->off[t] += (run - 1) * it->strides[t][1] * (int64_t)it->esize[t];
    cur->idx[1] += run - 1;
    axon_iter_row_next(it, cur);
}

/* Rows [begin, end) of an iterator whose rows are short: groups of rows converted into the chunk's buffers (unless
 * packed) so that the loop runs once per group, not once per row; out stored row by row unless packed. A group's rows
 * are taken in runs along dimension 1, where each tensor's rows are a fixed step apart: a step of the row cursor per
 * row kept its offsets in memory, a store and a reload per tensor and row (rows of 8 floats times one value each took
 * 1.7x the time of these runs, 1 thread on a Zen 3). */
static void pw_rows_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct pw_chunk c;
    c.j = ctx;
    c.bad = 0;
    const struct pw_job *j = c.j;
    const pw_args_t *a = j->a;
    const axon_iter_t *it = &j->it;
    const int64_t R = it->sizes[0], G = j->block / R;
    const char *in[3] = {NULL, NULL, NULL};
    pw_value_t held[3];
    const unsigned sm = pw_rows_numbers(j, in, held);
    for (int k = 0; k < a->arity; k++)
        if (j->slot[k] >= 0 && j->row_kind[k] != PW_ROW_NUMBER && j->row_kind[k] != PW_ROW_PACKED)
            in[k] = (const char *)c.buf[k];
    /* the group's runs: first row and out's offset; rows have 2 elements or more (size-1 dims are dropped) */
    int64_t run_row[PW_BLOCK / 2 + 1], run_out[PW_BLOCK / 2 + 1];
    axon_iter_row_t cur;
    axon_iter_row_seek(it, &cur, begin);
    int same_filled = 0, gathers = 0;
    for (int k = 0; k < a->arity; k++) gathers |= j->row_kind[k] == PW_ROW_GATHER;
    const int64_t out_step = it->strides[0][1] * (int64_t)j->out_size;
    for (int64_t r0 = begin; r0 < end; r0 += G) {
        const int64_t g = end - r0 < G ? end - r0 : G;
        int runs = 0;
        /* the rows' offsets are needed only to gather, to fill the same-row buffers (the first group), or to store */
        for (int64_t i = 0; (gathers || !same_filled || !j->out_packed) && i < g; runs++) {
            const int64_t run = g - i < it->sizes[1] - cur.idx[1] ? g - i : it->sizes[1] - cur.idx[1];
            for (int k = 0; k < a->arity; k++) {
                const int t = j->slot[k];
                if (j->row_kind[k] == PW_ROW_GATHER || (j->row_kind[k] == PW_ROW_SAME && !same_filled))
                    pw_rows_load(j, k, (char *)c.buf[k] + i * R * (int64_t)j->load_size[k], it->data[t] + cur.off[t],
                                 it->strides[t][1] * (int64_t)j->in_size[k], run, R, it->strides[t][0]);
            }
            run_row[runs] = i, run_out[runs] = cur.off[0];
            pw_rows_past_run(it, &cur, run);
            i += run;
        }
        same_filled = 1;
        for (int k = 0; k < a->arity; k++)
            if (j->row_kind[k] == PW_ROW_PACKED)
                in[k] = it->data[j->slot[k]] + r0 * R * (int64_t)j->in_size[k];
        char *o = j->out_packed ? it->data[0] + r0 * R * (int64_t)j->result_size : (char *)c.buf[3];
        c.bad |= a->loop(o, in, sm, g * R, &a->ctx);
        if (j->out_packed) continue;
        run_row[runs] = g;
        for (int q = 0; q < runs; q++)
            for (int64_t i = run_row[q]; i < run_row[q + 1]; i++)
                j->store_fn(it->data[0] + run_out[q] + (i - run_row[q]) * out_step, it->strides[0][0],
                            (const char *)c.buf[3] + i * R * (int64_t)j->result_size, 1, R);
    }
    if (c.bad) atomic_store_explicit(&c.j->bad, 1, memory_order_relaxed);
}

/* Rows [begin, end) through the op's row loop (j->row_which has one value per row): runs of rows along dimension 1,
 * where each tensor's rows are a fixed step apart, at most a group of rows per call. The values (float32 and float64
 * stored as such), the other operand's rows and out's rows are used in place when their rows have stride 1 in the
 * loop's dtype, with the run's steps (kron's repeated rows: a step of 0); anything else goes through the chunk's
 * buffers, and out is then stored row by row. */
static void pw_row_loop_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct pw_chunk c;
    c.j = ctx;
    c.bad = 0;
    const struct pw_job *j = c.j;
    const pw_args_t *a = j->a;
    const axon_iter_t *it = &j->it;
    const int w = j->row_which, ke = 1 - w, tv = j->slot[w], te = j->slot[ke];
    const int64_t R = it->sizes[0], G = j->block / R;
    const int v_direct = a->in[w].dtype == a->load[w] && (a->load[w] == AXON_FLOAT32 || a->load[w] == AXON_FLOAT64);
    const int e_direct = it->strides[te][0] == 1 && a->in[ke].dtype == a->load[ke];
    const int o_direct = it->strides[0][0] == 1 && a->out.dtype == a->result;
    pw_rows_t rows;
    rows.which = w;
    rows.R = R;
    axon_iter_row_t cur;
    axon_iter_row_seek(it, &cur, begin);
    for (int64_t r = begin; r < end;) {
        int64_t g = end - r < G ? end - r : G;
        if (g > it->sizes[1] - cur.idx[1]) g = it->sizes[1] - cur.idx[1];
        const char *pv = it->data[tv] + cur.off[tv], *pe = it->data[te] + cur.off[te];
        char *po = it->data[0] + cur.off[0];
        rows.g = g;
        if (v_direct) {
            rows.v = pv, rows.vstep = it->strides[tv][1];
        } else {
            pw_rows_values(j, w, (char *)c.buf[w], pv, it->strides[tv][1] * (int64_t)j->in_size[w], g);
            rows.v = (const char *)c.buf[w], rows.vstep = 1;
        }
        if (e_direct) {
            rows.e = pe, rows.estep = it->strides[te][1];
        } else {
            pw_rows_load(j, ke, (char *)c.buf[ke], pe, it->strides[te][1] * (int64_t)j->in_size[ke], g, R,
                         it->strides[te][0]);
            rows.e = (const char *)c.buf[ke], rows.estep = R;
        }
        rows.out = o_direct ? po : (char *)c.buf[3];
        rows.ostep = o_direct ? it->strides[0][1] : R;
        c.bad |= a->row_loop(&rows, &a->ctx);
        if (!o_direct)
            for (int64_t i = 0; i < g; i++)
                j->store_fn(po + i * it->strides[0][1] * (int64_t)j->out_size, it->strides[0][0],
                            (const char *)c.buf[3] + i * R * (int64_t)j->result_size, 1, R);
        pw_rows_past_run(it, &cur, g);
        r += g;
    }
    if (c.bad) atomic_store_explicit(&c.j->bad, 1, memory_order_relaxed);
}

/* The loop over flat positions [begin, end) of a flat launch; nonzero on an integer division by zero. */
static int pw_flat_run(const pw_args_t *a, int64_t begin, int64_t end) {
    const char *in[3] = {NULL, NULL, NULL};
    for (int k = 0; k < a->arity; k++)
        in[k] = a->scalar >> k & 1 ? (const char *)a->value[k].bytes
                                   : (const char *)a->in[k].data + begin * (int64_t)a->flat_size[k + 1];
    return a->loop((char *)a->out.data + begin * (int64_t)a->flat_size[0], in, a->scalar, end - begin, &a->ctx);
}

struct pw_flat_job {
    const pw_args_t *a;
    atomic_int bad;
};

static void pw_flat_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    struct pw_flat_job *j = ctx;
    if (pw_flat_run(j->a, begin, end)) atomic_store_explicit(&j->bad, 1, memory_order_relaxed);
}

static axon_status_t pw_division_by_zero(const pw_args_t *a) {
    return axon_fail(AXON_ERROR_INVALID_ARG, "ZeroDivisionError: integer %s by zero (%s)", a->name,
                     axon_dtype_name(a->compute));
}

axon_status_t axon_pw_kernel(const void *args, const axon_exec_t *ex) {
    const pw_args_t *a = args;
    if (a->flat) {
        /* Small ops (every tiny eager op) run right here: no iterator, no pool. */
        int64_t n = axon_tensor_numel(&a->out);
        int bad;
        if (n <= AXON_KERNEL_GRAIN) {
            bad = pw_flat_run(a, 0, n);
        } else {
            struct pw_flat_job fj;
            fj.a = a;
            atomic_init(&fj.bad, 0);
            axon_parallel_for(ex->pool, 0, n, AXON_KERNEL_GRAIN, pw_flat_range, &fj);
            bad = atomic_load(&fj.bad);
        }
        return bad ? pw_division_by_zero(a) : AXON_OK;
    }
    struct pw_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    const axon_tensor_t *ts[AXON_ITER_MAX_TENSORS] = {&a->out};
    int n = 1;
    for (int k = 0; k < a->arity; k++) {
        j.load_size[k] = axon_dtype_size(a->load[k]);
        if (a->scalar >> k & 1) {
            j.slot[k] = -1;
            continue;
        }
        j.slot[k] = n;
        ts[n++] = &a->in[k];
        j.in_size[k] = axon_dtype_size(a->in[k].dtype);
        j.load_fn[k] = axon_convert_get(a->in[k].dtype, a->load[k]);
    }
    j.out_size = axon_dtype_size(a->out.dtype);
    j.result_size = axon_dtype_size(a->result);
    size_t widest = j.out_size > j.result_size ? j.out_size : j.result_size;
    for (int k = 0; k < a->arity; k++) {
        if (j.in_size[k] > widest) widest = j.in_size[k];
        if (j.load_size[k] > widest) widest = j.load_size[k];
    }
    j.block = (int64_t)(PW_BLOCK_BYTES / widest) < PW_BLOCK ? (int64_t)(PW_BLOCK_BYTES / widest) : PW_BLOCK;
    j.store_fn = axon_convert_get(a->result, a->out.dtype);
    axon_iter_init(&j.it, n, ts, 1);
    atomic_init(&j.bad, 0);
    if (j.it.ndim >= 2 && j.it.sizes[0] <= PW_SHORT_ROW && j.it.sizes[0] <= j.block) {
        pw_rows_prepare(&j);
        const int64_t rows = j.it.numel / j.it.sizes[0], grain = AXON_KERNEL_GRAIN / j.it.sizes[0];
        axon_parallel_for(ex->pool, 0, rows, grain < 1 ? 1 : grain,
                          j.row_which >= 0 ? pw_row_loop_range : j.row_values ? pw_rows_each_range : pw_rows_range,
                          &j);
    } else {
        axon_parallel_for(ex->pool, 0, j.it.numel, AXON_KERNEL_GRAIN, pw_range, &j);
    }
    return atomic_load(&j.bad) ? pw_division_by_zero(a) : AXON_OK;
}
