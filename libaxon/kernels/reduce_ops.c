/* The folds of every reduction kind, generated once per work type (float, double, int64).
 *
 * A fold keeps RD_LANES independent accumulators and walks its block RD_LANES elements at a time: that is the loop
 * shape GCC vectorizes without reassociating floating adds (each lane is its own chain), and it also splits a float
 * sum into short chains, so the block's error is that of RD_BLOCK / RD_LANES additions plus a 6-level tree.
 * RD_LANES is 64 (four AVX-512 registers of floats): with 32 the add chains' latency, not the loads, bounded a float
 * sum of rows in cache. Max and min propagate NaN without a flag: `v > a | v != v` picks a NaN v, and a NaN a is
 * never replaced because every comparison with it is false. Integer + and * go through uint64_t so that overflow
 * wraps instead of being undefined. */
#include <math.h>
#include <string.h>

#include "reduce_impl.h"
#include "vec16.h"

#ifdef AXON_HAVE_LIBMVEC
/* libmvec's vector exp (kernels/pointwise_unary.c says why), so that logsumexp's sum of exponentials vectorizes */
float expf(float) __attribute__((simd("notinbranch")));
double exp(double) __attribute__((simd("notinbranch")));
#endif

#define RD_LANES 64
#define RD_TREE_UNROLL _Pragma("GCC unroll 64")  /* the lanes' final tree: RD_FINISH_SCALAR says why */

/* Per work type: the type, its +, *, |x|, pow, exp, log, sqrt, and whether it is floating. */
#define RD_ADD_f32(a, b) ((a) + (b))
#define RD_ADD_f64(a, b) ((a) + (b))
#define RD_ADD_i64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define RD_MUL_f32(a, b) ((a) * (b))
#define RD_MUL_f64(a, b) ((a) * (b))
#define RD_MUL_i64(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
#define RD_ABS_f32(x) fabsf(x)
#define RD_ABS_f64(x) fabs(x)
#define RD_ABS_i64(x) ((x) < 0 ? (int64_t)(0 - (uint64_t)(x)) : (x))
#define RD_POW_f32(x, p) powf(fabsf(x), (float)(p))
#define RD_POW_f64(x, p) pow(fabs(x), (p))
#define RD_POW_i64(x, p) ((int64_t)pow(fabs((double)(x)), (p)))
#define RD_EXP_f32(x) expf(x)
#define RD_EXP_f64(x) exp(x)
#define RD_EXP_i64(x) ((int64_t)exp((double)(x)))
#define RD_LOG_f32(x) logf(x)
#define RD_LOG_f64(x) log(x)
#define RD_LOG_i64(x) ((int64_t)log((double)(x)))
#define RD_SQRT_f32(x) sqrtf(x)
#define RD_SQRT_f64(x) sqrt(x)
#define RD_SQRT_i64(x) ((int64_t)sqrt((double)(x)))
#define RD_XOR_i64(a, b) ((a) ^ (b))
/* xor is an int64 kind (the launch refuses floats); the float forms exist for rd_comb's switch and xor the bits */
#define RD_XOR_f32(a, b) rd_xor_bits_f32(a, b)
#define RD_XOR_f64(a, b) rd_xor_bits_f64(a, b)
#define RD_FIELD_f32 f
#define RD_FIELD_f64 d
#define RD_FIELD_i64 i
#define RD_INF_f32 INFINITY
#define RD_INF_f64 INFINITY
#define RD_INF_i64 INT64_MAX
#define RD_LOWEST_f32 (-INFINITY)
#define RD_LOWEST_f64 (-INFINITY)
#define RD_LOWEST_i64 INT64_MIN

/* x ^ y of two floats' bits */
#define RD_XOR_BITS(NAME, T, U)                                                                                     \
    static inline T NAME(T a, T b) {                                                                                \
        U x, y;                                                                                                     \
        memcpy(&x, &a, sizeof x);                                                                                   \
        memcpy(&y, &b, sizeof y);                                                                                   \
        x ^= y;                                                                                                     \
        memcpy(&a, &x, sizeof a);                                                                                   \
        return a;                                                                                                   \
    }
RD_XOR_BITS(rd_xor_bits_f32, float, uint32_t)
RD_XOR_BITS(rd_xor_bits_f64, double, uint64_t)

#define RD_MAXC(a, v) (((v) > (a)) | ((v) != (v)) ? (v) : (a))
#define RD_MINC(a, v) (((v) < (a)) | ((v) != (v)) ? (v) : (a))

/* Every kind as (kind, combine class, map): MAP reads v = x[...] and names the mapped value v again. */
#define RD_KINDS(X, S, W)                                 \
    X(S, W, RD_SUM, ADD, v)                               \
    X(S, W, RD_PROD, MUL, v)                              \
    X(S, W, RD_MAX, MAX, v)                               \
    X(S, W, RD_MIN, MIN, v)                               \
    X(S, W, RD_NZ_SUM, ADD, (W)(v != 0))                  \
    X(S, W, RD_NZ_MAX, MAX, (W)(v != 0))                  \
    X(S, W, RD_NZ_MIN, MIN, (W)(v != 0))                  \
    X(S, W, RD_ABS_SUM, ADD, RD_ABS_##S(v))               \
    X(S, W, RD_SQ_SUM, ADD, RD_MUL_##S(v, v))             \
    X(S, W, RD_ABS_MAX, MAX, RD_ABS_##S(v))               \
    X(S, W, RD_ABS_MIN, MIN, RD_ABS_##S(v))               \
    X(S, W, RD_POW_SUM, ADD, RD_POW_##S(v, p))            \
    X(S, W, RD_EXP_SUM, ADD, RD_EXP_##S(v - (W)p))         \
    X(S, W, RD_NAN_SUM, ADD, (v != v ? (W)0 : v))          \
    RD_KIND_XOR_##S(X, S, W)

/* xor folds int64 only: the float generators' vector trees have no xor */
#define RD_KIND_XOR_i64(X, S, W) X(S, W, RD_XOR, XOR, v)
#define RD_KIND_XOR_f32(X, S, W)
#define RD_KIND_XOR_f64(X, S, W)

/* One generator per work type S (f32, f64, i64) with C type W. */
#define RD_DEFINE(S, W)                                                                                             \
    static W rd_identity_##S(rd_kind_t k) {                                                                         \
        switch (k) {                                                                                                \
        case RD_PROD: case RD_NZ_MIN: return (W)1;                                                                  \
        case RD_MAX: return RD_LOWEST_##S;                                                                          \
        case RD_MIN: case RD_ABS_MIN: return (W)RD_INF_##S;                                                         \
        default: return (W)0;                                                                                       \
        }                                                                                                           \
    }                                                                                                               \
                                                                                                                    \
    /* acc[l] = acc[l] COMB MAP(x[i + l]) over the block, then the lanes pairwise into acc[0]. */                   \
    /* inlined into the AXON_CLONES folds, so that each clone vectorizes it for its own ISA */                     \
    static inline __attribute__((always_inline)) W rd_lanes_##S(rd_kind_t k, double p, const W *restrict x,         \
                                                                 int64_t n) {                                       \
        W acc[RD_LANES];                                                                                            \
        const W id = rd_identity_##S(k);                                                                            \
        for (int l = 0; l < RD_LANES; l++) acc[l] = id;                                                             \
        int64_t i = 0, nv = n - n % RD_LANES;                                                                       \
        (void)p;                                                                                                    \
        /* the tail goes to lane 0 after the vector part, in a fixed order */                                       \
        switch (k) {                                                                                                \
        RD_KINDS(RD_LOOP, S, W)                                                                                     \
        default: break;                                                                                             \
        }                                                                                                           \
        return acc[0];                                                                                              \
    }                                                                                                               \
                                                                                                                    \
    static W rd_comb_##S(rd_kind_t k, W a, W v) {                                                                   \
        switch (k) {                                                                                                \
        case RD_PROD: return RD_MUL_##S(a, v);                                                                      \
        case RD_MAX: case RD_NZ_MAX: case RD_ABS_MAX: return RD_MAXC(a, v);                                         \
        case RD_MIN: case RD_NZ_MIN: case RD_ABS_MIN: return RD_MINC(a, v);                                         \
        case RD_XOR: return RD_XOR_##S(a, v);                                                                       \
        default: return RD_ADD_##S(a, v);                                                                          \
        }                                                                                                           \
    }                                                                                                               \
                                                                                                                    \
    static void rd_init_##S(const rd_op_t *op, rd_state_t *st) {                                                    \
        memset(st, 0, sizeof *st);                                                                                  \
        st->a.RD_FIELD_##S = rd_kind_is_simple(op->kind) ? rd_identity_##S(op->kind) : (W)0;                        \
    }                                                                                                               \
                                                                                                                    \
    AXON_CLONES static void rd_fold_##S(const rd_op_t *op, rd_state_t *st, const void *xv, int64_t n) {             \
        const W *restrict x = xv;                                                                                   \
        memset(st, 0, sizeof *st);                                                                                  \
        if (op->kind == RD_VAR) {                                                                                   \
            /* Two passes over a block that is in L1: the mean, then squared deviations from it. */                 \
            W mean = rd_lanes_##S(RD_SUM, 0, x, n) / (W)n, acc[RD_LANES];                                           \
            for (int l = 0; l < RD_LANES; l++) acc[l] = 0;                                                          \
            int64_t i = 0, nv = n - n % RD_LANES;                                                                   \
            for (; i < nv; i += RD_LANES)                                                                           \
                for (int l = 0; l < RD_LANES; l++) acc[l] += (x[i + l] - mean) * (x[i + l] - mean);                 \
            for (; i < n; i++) acc[0] += (x[i] - mean) * (x[i] - mean);                                             \
            RD_TREE_UNROLL for (int w = RD_LANES / 2; w >= 1; w /= 2)                                               \
                RD_TREE_UNROLL for (int l = 0; l < w; l++) acc[l] += acc[l + w];                                    \
            st->n = n;                                                                                              \
            st->a.RD_FIELD_##S = mean;                                                                              \
            st->b.RD_FIELD_##S = acc[0];                                                                            \
        } else if (op->kind == RD_LSE) {                                                                            \
            /* Shift by the block's maximum when it is finite (0 otherwise: all -inf gives 0, +inf gives inf,  */   \
            /* NaN gives NaN, which is what log(sum(exp)) means there). */                                          \
            /* The sum of exp in rd_lanes' chains, so that it vectorizes (libmvec's exp); LSE's work type is */     \
            /* floating, so c survives the trip through a double exactly. */                                        \
            W m = rd_lanes_##S(RD_MAX, 0, x, n);                                                                    \
            W c = (m - m == 0) ? m : (W)0;                                                                          \
            st->a.RD_FIELD_##S = c;                                                                                 \
            st->b.RD_FIELD_##S = rd_lanes_##S(RD_EXP_SUM, (double)c, x, n);                                         \
        } else {                                                                                                    \
            st->a.RD_FIELD_##S = rd_lanes_##S(op->kind, op->p, x, n);                                               \
        }                                                                                                           \
    }                                                                                                               \
                                                                                                                    \
    static void rd_merge_##S(const rd_op_t *op, rd_state_t *x, const rd_state_t *y) {                              \
        if (op->kind == RD_VAR) {                                                                                   \
            /* Chan, Golub and LeVeque's pairwise update. */                                                        \
            if (y->n == 0) return;                                                                                  \
            if (x->n == 0) {                                                                                        \
                *x = *y;                                                                                            \
                return;                                                                                             \
            }                                                                                                       \
            int64_t n = x->n + y->n;                                                                                \
            W d = y->a.RD_FIELD_##S - x->a.RD_FIELD_##S, fb = (W)y->n / (W)n;                                       \
            x->a.RD_FIELD_##S += d * fb;                                                                            \
            x->b.RD_FIELD_##S += y->b.RD_FIELD_##S + d * d * (W)x->n * fb;                                          \
            x->n = n;                                                                                               \
        } else if (op->kind == RD_LSE) {                                                                            \
            W c1 = x->a.RD_FIELD_##S, c2 = y->a.RD_FIELD_##S, c = c1 > c2 ? c1 : c2;                                \
            x->b.RD_FIELD_##S = x->b.RD_FIELD_##S * RD_EXP_##S(c1 - c) + y->b.RD_FIELD_##S * RD_EXP_##S(c2 - c);    \
            x->a.RD_FIELD_##S = c;                                                                                  \
        } else {                                                                                                    \
            x->a.RD_FIELD_##S = rd_comb_##S(op->kind, x->a.RD_FIELD_##S, y->a.RD_FIELD_##S);                        \
        }                                                                                                           \
    }                                                                                                               \
                                                                                                                    \
    static W rd_fin_##S(const rd_op_t *op, W v, int64_t count) {                                                    \
        switch (op->fin) {                                                                                          \
        case RD_FIN_MEAN: return v / (W)count;                                                                      \
        case RD_FIN_SQRT: return RD_SQRT_##S(v);                                                                    \
        case RD_FIN_ROOT: return (W)pow((double)v, 1.0 / op->p);                                                    \
        default: return v;                                                                                          \
        }                                                                                                           \
    }                                                                                                               \
                                                                                                                    \
    static void rd_finish_##S(const rd_op_t *op, const rd_state_t *st, int64_t count, void *out) {                  \
        W r;                                                                                                        \
        if (op->fin == RD_FIN_VAR || op->fin == RD_FIN_STD) {                                                       \
            double dof = (double)st->n - op->correction;                                                            \
            r = st->b.RD_FIELD_##S / (W)(dof > 0 ? dof : 0);                                                        \
            if (op->fin == RD_FIN_STD) r = RD_SQRT_##S(r);                                                          \
        } else if (op->fin == RD_FIN_LSE) {                                                                         \
            r = RD_LOG_##S(st->b.RD_FIELD_##S) + st->a.RD_FIELD_##S;                                                \
        } else {                                                                                                    \
            r = rd_fin_##S(op, st->a.RD_FIELD_##S, count);                                                          \
        }                                                                                                           \
        memcpy(out, &r, sizeof r);                                                                                  \
    }                                                                                                               \
                                                                                                                    \
    /* the common kinds with the kind a constant, so each row's lanes stay in registers */                          \
    AXON_CLONES static void rd_fold_rows_##S(const rd_op_t *op, void *outv, const char *x, int64_t pitch,           \
                                            int64_t rows, int64_t n) {                                              \
        W *out = outv;                                                                                              \
        if (n < RD_LANES) {                                                                                         \
            const double p = op->p;                                                                                 \
            (void)p;                                                                                                \
            switch (op->kind) {                                                                                     \
            RD_KINDS(RD_SHORT, S, W)                                                                                \
            default: break;                                                                                         \
            }                                                                                                       \
            return;                                                                                                 \
        }                                                                                                           \
        switch (op->kind) {                                                                                         \
        RD_ROWS(S, W, RD_SUM)                                                                                       \
        RD_ROWS(S, W, RD_PROD)                                                                                      \
        RD_ROWS(S, W, RD_MAX)                                                                                       \
        RD_ROWS(S, W, RD_MIN)                                                                                       \
        RD_ROWS(S, W, RD_SQ_SUM)                                                                                    \
        RD_ROWS(S, W, RD_ABS_SUM)                                                                                   \
        default:                                                                                                    \
            for (int64_t r = 0; r < rows; r++) out[r] = rd_lanes_##S(op->kind, op->p, (const W *)(x + r * pitch), n); \
            break;                                                                                                  \
        }                                                                                                           \
    }                                                                                                               \
                                                                                                                    \
    static void rd_vinit_##S(const rd_op_t *op, void *accv, int64_t n) {                                            \
        W *acc = accv, id = rd_identity_##S(op->kind);                                                              \
        for (int64_t j = 0; j < n; j++) acc[j] = id;                                                                \
    }                                                                                                               \
                                                                                                                    \
    static inline __attribute__((always_inline)) void rd_vfold_in_##S(const rd_op_t *op, void *accv,               \
                                                                     const void *rowv, int64_t n) {                 \
        W *restrict acc = accv;                                                                                     \
        const W *restrict x = rowv;                                                                                 \
        const double p = op->p;                                                                                     \
        (void)p;                                                                                                    \
        switch (op->kind) {                                                                                         \
        RD_VLOOP(W, RD_SUM, RD_ADD_##S(a, v), v)                                                                       \
        RD_VLOOP(W, RD_PROD, RD_MUL_##S(a, v), v)                                                                      \
        RD_VLOOP(W, RD_MAX, RD_MAXC(a, v), v)                                                                          \
        RD_VLOOP(W, RD_MIN, RD_MINC(a, v), v)                                                                          \
        RD_VLOOP(W, RD_NZ_SUM, RD_ADD_##S(a, v), (W)(v != 0))                                                          \
        RD_VLOOP(W, RD_NZ_MAX, RD_MAXC(a, v), (W)(v != 0))                                                             \
        RD_VLOOP(W, RD_NZ_MIN, RD_MINC(a, v), (W)(v != 0))                                                             \
        RD_VLOOP(W, RD_ABS_SUM, RD_ADD_##S(a, v), RD_ABS_##S(v))                                                       \
        RD_VLOOP(W, RD_SQ_SUM, RD_ADD_##S(a, v), RD_MUL_##S(v, v))                                                     \
        RD_VLOOP(W, RD_ABS_MAX, RD_MAXC(a, v), RD_ABS_##S(v))                                                          \
        RD_VLOOP(W, RD_ABS_MIN, RD_MINC(a, v), RD_ABS_##S(v))                                                          \
        RD_VLOOP(W, RD_POW_SUM, RD_ADD_##S(a, v), RD_POW_##S(v, p))                                                    \
        RD_VLOOP(W, RD_NAN_SUM, RD_ADD_##S(a, v), (v != v ? (W)0 : v))                                                 \
        RD_VLOOP(W, RD_XOR, RD_XOR_##S(a, v), v)                                                                       \
        default: break;                                                                                             \
        }                                                                                                           \
    }                                                                                                               \
                                                                                                                    \
    AXON_CLONES static void rd_vfold_##S(const rd_op_t *op, void *acc, const void *row, int64_t n) {                \
        rd_vfold_in_##S(op, acc, row, n);                                                                           \
    }                                                                                                               \
                                                                                                                    \
    AXON_CLONES static void rd_vfold_rows_##S(const rd_op_t *op, void *acc, const char *rows, int64_t pitch,        \
                                             int64_t nrows, int64_t n) {                                            \
        for (int64_t r = 0; r < nrows; r++) rd_vfold_in_##S(op, acc, rows + r * pitch, n);                          \
    }                                                                                                               \
                                                                                                                    \
    /* rd_comb_##S per element, with the kind switched once outside the loops so that they vectorize */          \
    AXON_CLONES static void rd_vmerge_##S(const rd_op_t *op, void *av, const void *bv, int64_t n) {                 \
        W *restrict acc = av;                                                                                       \
        const W *restrict x = bv;                                                                                   \
        const double p = op->p;                                                                                     \
        (void)p;                                                                                                    \
        switch (op->kind) {                                                                                         \
        RD_VLOOP(W, RD_PROD, RD_MUL_##S(a, v), v)                                                                      \
        RD_VLOOP(W, RD_MAX, RD_MAXC(a, v), v)                                                                          \
        RD_VLOOP(W, RD_NZ_MAX, RD_MAXC(a, v), v)                                                                       \
        RD_VLOOP(W, RD_ABS_MAX, RD_MAXC(a, v), v)                                                                      \
        RD_VLOOP(W, RD_MIN, RD_MINC(a, v), v)                                                                          \
        RD_VLOOP(W, RD_NZ_MIN, RD_MINC(a, v), v)                                                                       \
        RD_VLOOP(W, RD_ABS_MIN, RD_MINC(a, v), v)                                                                      \
        RD_VLOOP(W, RD_XOR, RD_XOR_##S(a, v), v)                                                                       \
        default:                                                                                                    \
            for (int64_t j = 0; j < n; j++) acc[j] = RD_ADD_##S(acc[j], x[j]);                                      \
            break;                                                                                                  \
        }                                                                                                           \
    }                                                                                                               \
                                                                                                                    \
    static void rd_vfinish_##S(const rd_op_t *op, void *accv, int64_t n, int64_t count) {                           \
        W *acc = accv;                                                                                              \
        if (op->fin == RD_FIN_NONE) return;                                                                         \
        for (int64_t j = 0; j < n; j++) acc[j] = rd_fin_##S(op, acc[j], count);                                     \
    }

/* A combine by class: + and * per work type (integers wrap), max and min with NaN for all. */
#define RD_COMB(S, CLS, a, v) RD_COMB_##CLS(S, a, v)
#define RD_COMB_ADD(S, a, v) RD_ADD_##S(a, v)
#define RD_COMB_MUL(S, a, v) RD_MUL_##S(a, v)
#define RD_COMB_MAX(S, a, v) RD_MAXC(a, v)
#define RD_COMB_MIN(S, a, v) RD_MINC(a, v)
#define RD_COMB_XOR(S, a, v) RD_XOR_##S(a, v)

/* One case of rd_lanes: the lane loop, then RD_FINISH_S: the tail into lane 0 and the lanes pairwise into acc[0].
 * MAP reads v = x[...] and names the mapped value v again. The kinds whose map is also an expression on GCC vectors
 * (VMAP) keep their lanes in vector registers for float and double (RD_LOOP_VEC); the others, and int64, fold an
 * array of lanes (RD_LOOP_SCALAR). */
#define RD_LOOP(S, W, K, CLS, MAP) RD_LOOP_##K(S, W, K, CLS, MAP)
#define RD_LOOP_RD_SUM(S, W, K, CLS, MAP) RD_LOOP_V_##S(S, W, K, CLS, MAP, v)
#define RD_LOOP_RD_PROD(S, W, K, CLS, MAP) RD_LOOP_V_##S(S, W, K, CLS, MAP, v)
#define RD_LOOP_RD_MAX(S, W, K, CLS, MAP) RD_LOOP_V_##S(S, W, K, CLS, MAP, v)
#define RD_LOOP_RD_MIN(S, W, K, CLS, MAP) RD_LOOP_V_##S(S, W, K, CLS, MAP, v)
#define RD_LOOP_RD_SQ_SUM(S, W, K, CLS, MAP) RD_LOOP_V_##S(S, W, K, CLS, MAP, (v) * (v))
#define RD_LOOP_RD_NZ_SUM RD_LOOP_SCALAR
#define RD_LOOP_RD_NZ_MAX RD_LOOP_SCALAR
#define RD_LOOP_RD_NZ_MIN RD_LOOP_SCALAR
#define RD_LOOP_RD_ABS_SUM RD_LOOP_SCALAR
#define RD_LOOP_RD_ABS_MAX RD_LOOP_SCALAR
#define RD_LOOP_RD_ABS_MIN RD_LOOP_SCALAR
#define RD_LOOP_RD_POW_SUM RD_LOOP_SCALAR
#define RD_LOOP_RD_EXP_SUM RD_LOOP_SCALAR
#define RD_LOOP_RD_NAN_SUM(S, W, K, CLS, MAP) RD_LOOP_V_##S(S, W, K, CLS, MAP, RD_NAN_ZERO_##S(v))
#define RD_LOOP_RD_XOR RD_LOOP_SCALAR
#define RD_LOOP_V_i64(S, W, K, CLS, MAP, VMAP) RD_LOOP_SCALAR(S, W, K, CLS, MAP)
#define RD_LOOP_SCALAR(S, W, K, CLS, MAP)                                                                       \
    case K:                                                                                                     \
        for (; i < nv; i += RD_LANES)                                                                           \
            for (int l = 0; l < RD_LANES; l++) {                                                                \
                W v = x[i + l];                                                                                 \
                v = MAP;                                                                                        \
                W a = acc[l];                                                                                   \
                acc[l] = RD_COMB(S, CLS, a, v);                                                                 \
            }                                                                                                   \
        RD_FINISH_##S(S, W, CLS, MAP)                                                                           \
        break;

/* The tail and the tree on scalars, fully unrolled (as loops GCC kept the lanes in memory and reloaded vectors
 * that straddled its own narrower stores). */
#define RD_FINISH_SCALAR(S, W, CLS, MAP)                                                                        \
    for (; i < n; i++) {                                                                                        \
        W v = x[i];                                                                                             \
        v = MAP;                                                                                                \
        W a = acc[0];                                                                                           \
        acc[0] = RD_COMB(S, CLS, a, v);                                                                         \
    }                                                                                                           \
    RD_TREE_UNROLL for (int w = RD_LANES / 2; w >= 1; w /= 2)                                                   \
        RD_TREE_UNROLL for (int l = 0; l < w; l++) {                                                            \
            W a = acc[l], v = acc[l + w];                                                                       \
            acc[l] = RD_COMB(S, CLS, a, v);                                                                     \
        }
#define RD_FINISH_i64 RD_FINISH_SCALAR

#if defined(__GNUC__) && (__GNUC__ >= 12 || defined(__clang__)) /* __builtin_shufflevector */
/* The tree on 32-byte vectors (vec16.h says why not 64-byte ones): the same combines in the same order as
 * RD_FINISH_SCALAR (lane l with lane l + w for w = 32 .. 1, the tail into lane 0 first), so the same bits, but in
 * registers: the scalar form cost more than the fold of a 1024-element row, and 4x CPU's whole row sum on rows of
 * 64. The 64 lanes are RD_VN vectors of RD_VL lanes: first vector k with vector k + w, then lanes within vector 0. */
typedef double rd_v4d __attribute__((vector_size(32)));
typedef int64_t rd_v4l __attribute__((vector_size(32)));
static inline __attribute__((always_inline)) rd_v4d rd_v4d_select(rd_v4l m, rd_v4d a, rd_v4d b) {
    return (rd_v4d)(((rd_v4l)a & m) | ((rd_v4l)b & ~m));
}
/* Lane 0 of v replaced by a, in registers: `u[0][0] = a` stored the lane into the vector's stack copy, and the
 * tree's next load of the whole vector waited on a store forward that cannot succeed (a 4-byte store under a
 * 32-byte load): on an AVX2 EPYC sums of [16384, 64] rows took 20 ns per row, 2.7x torch CPU's time. */
static inline __attribute__((always_inline)) v8f rd_set_lane0_v8f(v8f v, float a) {
    return v8_select((v8i){-1}, (v8f){0} + a, v);
}
static inline __attribute__((always_inline)) rd_v4d rd_set_lane0_v4d(rd_v4d v, double a) {
    return rd_v4d_select((rd_v4l){-1}, (rd_v4d){0} + a, v);
}
#define RD_SET_LANE0(v, a) _Generic((v), v8f: rd_set_lane0_v8f, rd_v4d: rd_set_lane0_v4d)(v, a)
#define RD_VCOMB_ADD(SEL, a, v) ((a) + (v))
#define RD_VCOMB_MUL(SEL, a, v) ((a) * (v))
#define RD_VCOMB_MAX(SEL, a, v) SEL(((v) > (a)) | ((v) != (v)), (v), (a))
#define RD_VCOMB_MIN(SEL, a, v) SEL(((v) < (a)) | ((v) != (v)), (v), (a))
#define RD_VSTEP(CLS, SEL, t, ...) t = RD_VCOMB_##CLS(SEL, t, __builtin_shufflevector(t, t, __VA_ARGS__))
/* The tail into lane 0, then the tree, on the lanes in u (RD_VN vectors of type VT); the result into acc[0]. */
#define RD_TREE_VEC(VT, SEL, S, W, CLS, MAP, LANE_STEPS)                                                          \
    {                                                                                                           \
        if (i < n) {                                                                                            \
            W a = u[0][0];                                                                                      \
            for (; i < n; i++) {                                                                                \
                W v = x[i];                                                                                     \
                v = MAP;                                                                                        \
                a = RD_COMB(S, CLS, a, v);                                                                      \
            }                                                                                                   \
            u[0] = RD_SET_LANE0(u[0], a);                                                                       \
        }                                                                                                       \
        RD_TREE_UNROLL for (int w = RD_VN / 2; w >= 1; w /= 2)                                                  \
            RD_TREE_UNROLL for (int q = 0; q < w; q++) u[q] = RD_VCOMB_##CLS(SEL, u[q], u[q + w]);              \
        LANE_STEPS                                                                                              \
        acc[0] = u[0][0];                                                                                       \
    }
#define RD_FINISH_VEC(VT, SEL, S, W, CLS, MAP, LANE_STEPS)                                                        \
    {                                                                                                           \
        enum { RD_VN = RD_LANES * sizeof(W) / sizeof(VT) };                                                     \
        VT u[RD_VN];                                                                                            \
        memcpy(u, acc, sizeof u);                                                                               \
        RD_TREE_VEC(VT, SEL, S, W, CLS, MAP, LANE_STEPS)                                                        \
    }
/* The lane loop on vectors: lane l is lane l % VL of u[l / VL], combined in the same order as RD_LOOP_SCALAR's
 * (so the same bits), but in registers: on AVX2 the array of lanes was initialized with rep stos and folded through
 * memory, 4.6x CPU's time for the sums of rows of 64. */
#define RD_LOOP_VEC(VT, SEL, S, W, K, CLS, MAP, VMAP, LANE_STEPS)                                                 \
    case K: {                                                                                                   \
        enum { RD_VN = RD_LANES * sizeof(W) / sizeof(VT), RD_VL = sizeof(VT) / sizeof(W) };                     \
        VT u[RD_VN];                                                                                            \
        RD_TREE_UNROLL for (int q = 0; q < RD_VN; q++) u[q] = (VT){0} + id;                                     \
        for (; i < nv; i += RD_LANES)                                                                           \
            RD_TREE_UNROLL for (int q = 0; q < RD_VN; q++) {                                                    \
                VT v;                                                                                           \
                memcpy(&v, x + i + q * RD_VL, sizeof v);                                                        \
                v = VMAP;                                                                                       \
                u[q] = RD_VCOMB_##CLS(SEL, u[q], v);                                                            \
            }                                                                                                   \
        RD_TREE_VEC(VT, SEL, S, W, CLS, MAP, LANE_STEPS)                                                        \
        break;                                                                                                  \
    }
#define RD_STEPS_f32(CLS)                                                                                       \
    RD_VSTEP(CLS, v8_select, u[0], 4, 5, 6, 7, 4, 5, 6, 7);                                                     \
    RD_VSTEP(CLS, v8_select, u[0], 2, 3, 2, 3, 2, 3, 2, 3);                                                     \
    RD_VSTEP(CLS, v8_select, u[0], 1, 1, 1, 1, 1, 1, 1, 1);
#define RD_STEPS_f64(CLS)                                                                                       \
    RD_VSTEP(CLS, rd_v4d_select, u[0], 2, 3, 2, 3);                                                             \
    RD_VSTEP(CLS, rd_v4d_select, u[0], 1, 1, 1, 1);
#define RD_FINISH_f32(S, W, CLS, MAP) RD_FINISH_VEC(v8f, v8_select, S, W, CLS, MAP, RD_STEPS_f32(CLS))
#define RD_FINISH_f64(S, W, CLS, MAP) RD_FINISH_VEC(rd_v4d, rd_v4d_select, S, W, CLS, MAP, RD_STEPS_f64(CLS))
#define RD_LOOP_V_f32(S, W, K, CLS, MAP, VMAP) RD_LOOP_VEC(v8f, v8_select, S, W, K, CLS, MAP, VMAP, RD_STEPS_f32(CLS))
/* NaN lanes to 0 (RD_NAN_SUM's map on vectors) */
#define RD_NAN_ZERO_f32(v) v8_select((v) == (v), (v), (v8f){0})
#define RD_NAN_ZERO_f64(v) rd_v4d_select((v) == (v), (v), (rd_v4d){0})
#define RD_LOOP_V_f64(S, W, K, CLS, MAP, VMAP)                                                                  \
    RD_LOOP_VEC(rd_v4d, rd_v4d_select, S, W, K, CLS, MAP, VMAP, RD_STEPS_f64(CLS))
_Static_assert(sizeof(v8f) == 8 * sizeof(float) && sizeof(rd_v4d) == 4 * sizeof(double), "the lane steps above");
#else
#define RD_FINISH_f32 RD_FINISH_SCALAR
#define RD_FINISH_f64 RD_FINISH_SCALAR
#define RD_LOOP_V_f32(S, W, K, CLS, MAP, VMAP) RD_LOOP_SCALAR(S, W, K, CLS, MAP)
#define RD_LOOP_V_f64(S, W, K, CLS, MAP, VMAP) RD_LOOP_SCALAR(S, W, K, CLS, MAP)
#endif

#define RD_VLOOP(W, K, COMB, MAP)                                                  \
    case K:                                                                     \
        for (int64_t j = 0; j < n; j++) {                                       \
            W v = x[j];                                        \
            v = MAP;                                                            \
            W a = acc[j];                                      \
            acc[j] = COMB;                                                      \
        }                                                                       \
        break;

/* fold_rows' case for rows shorter than the lanes: all of a row lands in lane 0 in order, and the tree then combines
 * it with identities only, which one final combine with the identity reproduces (s + 0 turns -0 into +0, the rest
 * keep s). So the row's bits, computed for RD_SHORT_ROWS rows at once, one row per lane: independent chains that
 * the compiler can vectorize across rows, instead of one chain and a 64-lane tree per row. */
#define RD_SHORT_ROWS 16
#define RD_SHORT(S, W, K, CLS, MAP)                                                                           \
    case K: {                                                                                                 \
        const W id = rd_identity_##S(K);                                                                      \
        int64_t r = 0;                                                                                        \
        for (; r + RD_SHORT_ROWS <= rows; r += RD_SHORT_ROWS) {                                               \
            W acc[RD_SHORT_ROWS];                                                                             \
            for (int l = 0; l < RD_SHORT_ROWS; l++) acc[l] = id;                                              \
            for (int64_t i = 0; i < n; i++)                                                                   \
                for (int l = 0; l < RD_SHORT_ROWS; l++) {                                                     \
                    W v = ((const W *)(x + (r + l) * pitch))[i];                                              \
                    v = MAP;                                                                                  \
                    W a = acc[l];                                                                             \
                    acc[l] = RD_COMB(S, CLS, a, v);                                                           \
                }                                                                                             \
            for (int l = 0; l < RD_SHORT_ROWS; l++) {                                                         \
                W a = acc[l], v = id;                                                                         \
                out[r + l] = RD_COMB(S, CLS, a, v);                                                           \
            }                                                                                                 \
        }                                                                                                     \
        for (; r < rows; r++) {                                                                               \
            W a = id;                                                                                         \
            for (int64_t i = 0; i < n; i++) {                                                                 \
                W v = ((const W *)(x + r * pitch))[i];                                                        \
                v = MAP;                                                                                      \
                a = RD_COMB(S, CLS, a, v);                                                                    \
            }                                                                                                 \
            W v = id;                                                                                         \
            out[r] = RD_COMB(S, CLS, a, v);                                                                   \
        }                                                                                                     \
        break;                                                                                                \
    }

#define RD_ROWS(S, W, K)                                                                                     \
    case K:                                                                                                 \
        for (int64_t r = 0; r < rows; r++) out[r] = rd_lanes_##S(K, op->p, (const W *)(x + r * pitch), n); \
        break;

RD_DEFINE(f32, float)
RD_DEFINE(f64, double)
RD_DEFINE(i64, int64_t)

#define RD_OPS(S, D)                                                                                            \
    {D, rd_init_##S, rd_fold_##S, rd_merge_##S, rd_finish_##S, rd_vinit_##S, rd_vfold_##S, rd_vmerge_##S,        \
     rd_vfinish_##S, rd_fold_rows_##S, rd_vfold_rows_##S}

const rd_work_ops_t axon_rd_work_ops[RD_W_COUNT] = {
    RD_OPS(f32, AXON_FLOAT32),
    RD_OPS(f64, AXON_FLOAT64),
    RD_OPS(i64, AXON_INT64),
};
