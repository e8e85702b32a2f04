/* Complex pointwise ops against a long double reference: every complex (op, dtype) pair the kernels define.
 *
 * Values: special ones (0, 1, -1, i, -i, 1e15 and 1e-15 parts of both signs, whose products stay in float32's
 * range) and pseudo-random ones with magnitudes
 * from 1e-3 to 1e3. The reference computes in long double complex (<complex.h>'s l functions; products and quotients
 * with the textbook formulas) and the result is compared part by part:
 *   exact   add, sub and mul in the kernel's own formula (x.re y.re - x.im y.im, ...) computed here in the same type,
 *           so a different formula or a fused multiply-add shows; neg, conj, comparisons, logical ops, where;
 *   close   within tol * (|want| + 1e-30) of the long double reference (|want| the reference's modulus), with tol
 *           1e-5 for complex64 and 1e-12 for complex128: a few roundings of a few terms. A value whose reference is
 *           not finite must match in kind (both NaN, or the same infinity).
 * Also checked: number operands (a complex alpha and a complex scalar), a strided complex128 input (the executor's
 * buffered path, whose blocks hold half as many 16-byte elements), abs storing float32 from complex64, and a real
 * input converted on load. */
#include <complex.h>
#include <math.h>

#include "../kernels/dtype.h"
#include "axon/pointwise.h"
#include "kernels_check.h"

#define N 96
typedef long double complex lcx;

static uint64_t rng_state = 99;
static double rnd(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0; /* [0, 1) */
}

static const double specials[][2] = {{0, 0}, {1, 0}, {-1, 0}, {0, 1},     {0, -1},   {1e15, -1e15},
                                     {-1e-15, 1e-15}, {3, 4}, {0.5, -0.25}, {-2, -7}, {1e-3, 1e3}};
#define NSPECIAL ((int)(sizeof specials / sizeof specials[0]))

/* Element i of operand `which` (0, 1, 2): specials crossed so pairs of specials meet, then random values. */
static lcx value(int which, int i) {
    if (i < NSPECIAL * NSPECIAL) {
        int s = which == 0 ? i % NSPECIAL : which == 1 ? i / NSPECIAL : (i * 7) % NSPECIAL;
        return CMPLXL(specials[s][0], specials[s][1]);
    }
    double m = pow(10.0, rnd() * 6 - 3), a = rnd() * 6.283185307179586;
    return CMPLXL(m * cos(a), m * sin(a));
}

/* POWER: as CLOSE, but where a part overflows the type, any infinity passes: the phase of a power that large is
 * lost to rounding in the type (the long double reference keeps it). */
/* LOST: as CLOSE, but where a part of the reference is not finite, any non-finite part passes: sinc of a huge z is
 * an infinity over an infinity, whose parts come out as inf or NaN depending on the rounding of pi z. */
enum kind { EXACT, CLOSE, POWER, LOST };

/* x / y; over 0, each part over +0 (PyTorch's answer) */
static lcx ref_div(lcx x, lcx y) {
    if (y == 0) return CMPLXL(creall(x) / 0.0L, cimagl(x) / 0.0L);
    long double d = creall(y) * creall(y) + cimagl(y) * cimagl(y);
    return (creall(x) * creall(y) + cimagl(x) * cimagl(y)) / d + (cimagl(x) * creall(y) - creall(x) * cimagl(y)) / d * I;
}

#define PI_L 3.141592653589793238462643383279502884L

/* The reference of a unary op; *kind says how to compare. */
static lcx unary_ref(axon_unary_op_t op, lcx x, int c64, enum kind *kind) {
    *kind = CLOSE;
    switch (op) {
    case AXON_UNARY_NEG: *kind = EXACT; return -x;
    case AXON_UNARY_CONJ: *kind = EXACT; return conjl(x);
    case AXON_UNARY_ABS: return cabsl(x);
    case AXON_UNARY_SIGN: return x == 0 ? 0 : x / cabsl(x);
    case AXON_UNARY_RECIPROCAL: return ref_div(1, x);
    case AXON_UNARY_SQUARE: return x * x;
    case AXON_UNARY_CUBE: return x * x * x;
    case AXON_UNARY_RSQUARE: return ref_div(1, x * x);
    case AXON_UNARY_SQRT: return csqrtl(x);
    case AXON_UNARY_RSQRT: return ref_div(1, csqrtl(x));
    case AXON_UNARY_EXP: return cexpl(x);
    case AXON_UNARY_LOG: return clogl(x);
    case AXON_UNARY_LOG2: return clogl(x) / logl(2);
    case AXON_UNARY_LOG10: return clogl(x) / logl(10);
    case AXON_UNARY_SIN: return csinl(x);
    case AXON_UNARY_COS: return ccosl(x);
    case AXON_UNARY_TAN: return ctanl(x);
    case AXON_UNARY_ASIN: return casinl(x);
    case AXON_UNARY_ACOS: return cacosl(x);
    case AXON_UNARY_ATAN: return catanl(x);
    case AXON_UNARY_SINH: return csinhl(x);
    case AXON_UNARY_COSH: return ccoshl(x);
    case AXON_UNARY_TANH: return ctanhl(x);
    case AXON_UNARY_ASINH: return casinhl(x);
    case AXON_UNARY_ACOSH: return cacoshl(x);
    case AXON_UNARY_ATANH: return catanhl(x);
    case AXON_UNARY_SIGMOID: return ref_div(1, 1 + cexpl(-x));
    case AXON_UNARY_ISNAN: *kind = EXACT; return isnan(creall(x)) || isnan(cimagl(x));
    case AXON_UNARY_LOGICAL_NOT: *kind = EXACT; return x == 0;
    case AXON_UNARY_ANGLE: return cargl(x);
    case AXON_UNARY_EXP2: {
        /* exp of ln 2 z rounded to the type, as the kernel (and PyTorch) compute it; an overflowing result's phase
         * is still lost to rounding (POWER) */
        lcx w = x * logl(2);
        *kind = POWER;
        if (c64) return cexpl(CMPLXL((float)creall(w), (float)cimagl(w)));
        return cexpl(CMPLXL((double)creall(w), (double)cimagl(w)));
    }
    /* exp(z) - 1 and log(1 + z) cancel near 0 even in long double: their parts from identities without that */
    case AXON_UNARY_EXPM1:
        return CMPLXL(expm1l(creall(x)) * cosl(cimagl(x)) - 2 * sinl(cimagl(x) / 2) * sinl(cimagl(x) / 2),
                      expl(creall(x)) * sinl(cimagl(x)));
    case AXON_UNARY_LOG1P: {
        long double re = creall(x), im = cimagl(x);
        return CMPLXL(log1pl(re * (2 + re) + im * im) / 2, atan2l(im, 1 + re));
    }
    case AXON_UNARY_SINC: *kind = LOST; return x == 0 ? 1 : csinl(x * PI_L) / (x * PI_L);
    case AXON_UNARY_SILU: return ref_div(x, 1 + cexpl(-x));
    default: return NAN;
    }
}

static int is_bool_op(int arity, int op) {
    if (arity == 1) return op == AXON_UNARY_ISNAN || op == AXON_UNARY_LOGICAL_NOT;
    return arity == 2 && (op == AXON_BINARY_EQ || op == AXON_BINARY_NE || op == AXON_BINARY_LOGICAL_AND ||
                          op == AXON_BINARY_LOGICAL_OR || op == AXON_BINARY_LOGICAL_XOR);
}

/* The kernel's own product and sum formulas in type R, for the exact checks. */
#define KERNEL_MUL(R, x, y)                                                                                   \
    ((long double)((R)creall(x) * (R)creall(y) - (R)cimagl(x) * (R)cimagl(y)) +                                 \
     (long double)((R)creall(x) * (R)cimagl(y) + (R)cimagl(x) * (R)creall(y)) * I)

static lcx binary_ref(axon_binary_op_t op, lcx x, lcx y, int c64, enum kind *kind) {
    *kind = EXACT;
    lcx p = c64 ? KERNEL_MUL(float, x, y) : KERNEL_MUL(double, x, y);
    switch (op) {
    case AXON_BINARY_ADD: return x + y;
    case AXON_BINARY_SUB: return x - y;
    case AXON_BINARY_MUL: return p;
    case AXON_BINARY_DIV: *kind = CLOSE; return ref_div(x, y);
    case AXON_BINARY_POW: *kind = POWER; return cpowl(x, y);
    case AXON_BINARY_EQ: return x == y;
    case AXON_BINARY_NE: return x != y;
    case AXON_BINARY_LOGICAL_AND: return x != 0 && y != 0;
    case AXON_BINARY_LOGICAL_OR: return x != 0 || y != 0;
    case AXON_BINARY_LOGICAL_XOR: return (x != 0) != (y != 0);
    case AXON_BINARY_SIGMOID_BACKWARD: *kind = CLOSE; return x * conjl((1 - y) * y);
    case AXON_BINARY_TANH_BACKWARD: *kind = CLOSE; return x * conjl(1 - y * y);
    default: return NAN;
    }
}

/* *scale: the size of the terms, which bounds the rounding errors of a sum that cancels. */
static lcx ternary_ref(axon_ternary_op_t op, lcx x, lcx y, lcx z, enum kind *kind, long double *scale) {
    *kind = CLOSE;
    switch (op) {
    case AXON_TERNARY_WHERE: *kind = EXACT; return x != 0 ? y : z;
    case AXON_TERNARY_ADDCMUL: *scale = cabsl(x) + cabsl(y) * cabsl(z); return x + y * z;
    case AXON_TERNARY_ADDCDIV: *scale = cabsl(x) + cabsl(y) / cabsl(z); return x + ref_div(y, z);
    case AXON_TERNARY_LERP:
        *scale = cabsl(x) + cabsl(y) + cabsl(z) * cabsl(y - x);
        return x + z * (y - x);
    default: return NAN;
    }
}

/* got against want: exact, or close as the header says. The reference's parts are first rounded to the type. */
static int matches(lcx got, lcx want, enum kind kind, int c64, long double scale) {
    long double w[2] = {creall(want), cimagl(want)}, g[2] = {creall(got), cimagl(got)};
    long double tol = c64 ? 1e-5L : 1e-12L;
    for (int k = 0; k < 2; k++) {
        long double wk = c64 ? (long double)(float)w[k] : (long double)(double)w[k];
        if (kind == POWER && isinf(wk)) {
            if (!isinf(g[k])) return 0;
            continue;
        }
        if (kind == LOST && !isfinite(wk)) {
            if (isfinite(g[k])) return 0;
            continue;
        }
        if (isnan(wk) || isinf(wk)) {
            if (isnan(wk) ? !isnan(g[k]) : g[k] != wk) return 0;
            continue;
        }
        if (kind == EXACT ? g[k] != wk : !(fabsl(g[k] - wk) <= tol * (scale + 1e-30L))) return 0;
    }
    return 1;
}

static void store(axon_dtype_t d, void *buf, int i, lcx v) {
    if (d == AXON_COMPLEX64) {
        ((float *)buf)[2 * i] = (float)creall(v), ((float *)buf)[2 * i + 1] = (float)cimagl(v);
    } else {
        ((double *)buf)[2 * i] = (double)creall(v), ((double *)buf)[2 * i + 1] = (double)cimagl(v);
    }
}

static lcx load(axon_dtype_t d, const void *buf, int i) {
    switch (d) {
    /* CMPLXL, not re + im * I, which makes NaN of an infinite part */
    case AXON_COMPLEX64: return CMPLXL(((const float *)buf)[2 * i], ((const float *)buf)[2 * i + 1]);
    case AXON_COMPLEX128: return CMPLXL(((const double *)buf)[2 * i], ((const double *)buf)[2 * i + 1]);
    case AXON_FLOAT32: return ((const float *)buf)[i];
    case AXON_FLOAT64: return ((const double *)buf)[i];
    default: return ((const uint8_t *)buf)[i];
    }
}

/* Runs op on N elements of dtype d and compares; returns the number of mismatches (printing the first few). */
static int check_op(kc_dev_t *k, int arity, int op, axon_dtype_t d) {
    const int c64 = d == AXON_COMPLEX64;
    const size_t esz = axon_dtype_size(d);
    const axon_dtype_t out_dt = is_bool_op(arity, op)                       ? AXON_BOOL
                                : arity == 1 && (op == AXON_UNARY_ABS || op == AXON_UNARY_ANGLE)
                                    ? (c64 ? AXON_FLOAT32 : AXON_FLOAT64)
                                                                           : d;
    const int where = arity == 3 && op == AXON_TERNARY_WHERE;
    static unsigned char host[3][N * 16], got[N * 16];
    lcx x[3][N];
    for (int a = 0; a < arity; a++)
        for (int i = 0; i < N; i++) {
            x[a][i] = value(a, i);
            if (a == 0 && where) x[a][i] = (i % 3 == 0);
            if (a == 0 && where) ((uint8_t *)host[a])[i] = (uint8_t)(i % 3 == 0);
            else store(d, host[a], i, x[a][i]);
            x[a][i] = a == 0 && where ? x[a][i] : load(d, host[a], i); /* the reference sees the stored value */
        }
    int64_t sizes[1] = {N};
    void *dev[4] = {NULL, NULL, NULL, NULL};
    axon_tensor_t in[3];
    for (int a = 0; a < arity; a++) {
        axon_dtype_t ad = a == 0 && where ? AXON_BOOL : d;
        dev[a] = kc_upload(k, host[a], N * axon_dtype_size(ad));
        in[a] = kc_tensor(dev[a], ad, 1, sizes, NULL);
    }
    dev[3] = kc_upload(k, NULL, N * esz);
    axon_tensor_t out = kc_tensor(dev[3], out_dt, 1, sizes, NULL);
    axon_status_t st = arity == 1   ? axon_kernel_unary(k->s, (axon_unary_op_t)op, &out, &in[0], NULL)
                       : arity == 2 ? axon_kernel_binary(k->s, (axon_binary_op_t)op, &out, &in[0], &in[1], NULL)
                                    : axon_kernel_ternary(k->s, (axon_ternary_op_t)op, &out, &in[0], &in[1], &in[2],
                                                          NULL);
    int bad = 0;
    if (st != AXON_OK || !kc_download(k, got, dev[3], N * axon_dtype_size(out_dt))) {
        fprintf(stderr, "  op %d arity %d %s: %s\n", op, arity, axon_dtype_name(d), axon_last_error());
        bad = 1;
    }
    for (int i = 0; !bad && i < N; i++) {
        enum kind kind;
        long double scale = -1;
        lcx want = arity == 1 ? unary_ref((axon_unary_op_t)op, x[0][i], c64, &kind)
                   : arity == 2 ? binary_ref((axon_binary_op_t)op, x[0][i], x[1][i], c64, &kind)
                                : ternary_ref((axon_ternary_op_t)op, x[0][i], x[1][i], x[2][i], &kind, &scale);
        lcx g = load(out_dt, got, i);
        /* sinc near a zero of sin(pi z): pi z is rounded to the type first, an absolute error of one rounding */
        if (arity == 1 && op == AXON_UNARY_SINC) scale = cabsl(want) + 1;
        if (!matches(g, want, kind, c64, scale < 0 ? cabsl(want) : scale) && bad++ < 3)
            fprintf(stderr, "  %s %s [%d]: got %.9Lg%+.9Lgi, want %.9Lg%+.9Lgi\n",
                    arity == 1 ? axon_unary_op_name(op) : arity == 2 ? axon_binary_op_name(op)
                                                                     : axon_ternary_op_name(op),
                    axon_dtype_name(d), i, creall(g), cimagl(g), creall(want), cimagl(want));
    }
    for (int a = 0; a < 4; a++)
        if (dev[a]) axon_mem_free(k->dev, dev[a]);
    return bad;
}

static void test_every_complex_op_matches_the_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const axon_dtype_t dts[2] = {AXON_COMPLEX64, AXON_COMPLEX128};
    int checked = 0;
    for (int t = 0; t < 2; t++) {
        for (int op = 0; op < AXON_UNARY_COUNT; op++)
            if (axon_unary_supports((axon_unary_op_t)op, dts[t])) checked++, check_failures_in_test += check_op(&k, 1, op, dts[t]);
        for (int op = 0; op < AXON_BINARY_COUNT; op++)
            if (axon_binary_supports((axon_binary_op_t)op, dts[t])) checked++, check_failures_in_test += check_op(&k, 2, op, dts[t]);
        for (int op = 0; op < AXON_TERNARY_COUNT; op++)
            if (axon_ternary_supports((axon_ternary_op_t)op, dts[t])) checked++, check_failures_in_test += check_op(&k, 3, op, dts[t]);
    }
    CHECK(checked == 2 * (35 + 12 + 4)); /* the op lists of pointwise.h, both types */
    axon_runtime_destroy(k.rt);
}

/* x - alpha * y with a complex alpha and a complex number operand, on a strided complex128 input (every other
 * element, so the executor converts it into 16-byte blocks), and a float32 tensor added to a complex64 number. */
static void test_numbers_strides_and_mixed_dtypes(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { M = 1000 };
    static double xs[2 * M][2];
    static double got[M][2];
    for (int i = 0; i < 2 * M; i++) xs[i][0] = i * 0.5, xs[i][1] = -i * 0.25;
    void *dx = kc_upload(&k, xs, sizeof xs), *dout = kc_upload(&k, NULL, sizeof got);
    REQUIRE(dx && dout);
    int64_t sizes[1] = {M}, every_other[1] = {2};
    axon_tensor_t x = kc_tensor(dx, AXON_COMPLEX128, 1, sizes, every_other);
    axon_tensor_t out = kc_tensor(dout, AXON_COMPLEX128, 1, sizes, NULL);
    axon_op_params_t p = axon_op_params_default();
    p.alpha = axon_scalar_complex(0.0, 2.0);
    p.operand[1] = axon_scalar_complex(1.0, -1.0);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_SUB, &out, &x, NULL, &p));
    REQUIRE(kc_download(&k, got, dout, sizeof got));
    int bad = 0;
    for (int i = 0; i < M; i++) {
        /* x - 2i (1 - i) = x - (2 + 2i) */
        double re = xs[2 * i][0] - 2.0, im = xs[2 * i][1] - 2.0;
        bad += got[i][0] != re || got[i][1] != im;
    }
    CHECK(bad == 0);

    /* float32 tensor + complex64 number: the tensor converts to complex64 on load */
    static float fs[M], gc[M][2];
    for (int i = 0; i < M; i++) fs[i] = (float)i;
    void *df = kc_upload(&k, fs, sizeof fs), *dc = kc_upload(&k, NULL, sizeof gc);
    REQUIRE(df && dc);
    axon_tensor_t f = kc_tensor(df, AXON_FLOAT32, 1, sizes, NULL), oc = kc_tensor(dc, AXON_COMPLEX64, 1, sizes, NULL);
    p = axon_op_params_default();
    p.operand[1] = axon_scalar_complex(0.5, 3.0);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_MUL, &oc, &f, NULL, &p));
    REQUIRE(kc_download(&k, gc, dc, sizeof gc));
    bad = 0;
    for (int i = 0; i < M; i++) bad += gc[i][0] != fs[i] * 0.5f || gc[i][1] != fs[i] * 3.0f;
    CHECK(bad == 0);

    /* a complex alpha with a real compute dtype is refused, naming it */
    axon_tensor_t fo = kc_tensor(dc, AXON_FLOAT32, 1, sizes, NULL);
    p = axon_op_params_default();
    p.alpha = axon_scalar_complex(1.0, 1.0);
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_ADD, &fo, &f, &f, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("alpha is complex");
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, dx);
    axon_mem_free(k.dev, dout);
    axon_mem_free(k.dev, df);
    axon_mem_free(k.dev, dc);
    axon_runtime_destroy(k.rt);
}

/* PyTorch's sub is x + (-alpha) y: with a -0 real part in x and y, the result's real part is +0 (x - alpha y gives
 * -0), in both complex dtypes. */
static void test_sub_negates_alpha_as_pytorch(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    static const float x64[2] = {-0.0f, 0.0f};
    static const double x128[2] = {-0.0, 0.0};
    float g64[2];
    double g128[2];
    void *d64 = kc_upload(&k, x64, sizeof x64), *d128 = kc_upload(&k, x128, sizeof x128);
    void *o64 = kc_upload(&k, NULL, sizeof g64), *o128 = kc_upload(&k, NULL, sizeof g128);
    REQUIRE(d64 && d128 && o64 && o128);
    int64_t one[1] = {1};
    axon_op_params_t p = axon_op_params_default();
    p.operand[1] = axon_scalar_complex(-0.0, -3.0);
    axon_tensor_t a = kc_tensor(d64, AXON_COMPLEX64, 1, one, NULL), oa = kc_tensor(o64, AXON_COMPLEX64, 1, one, NULL);
    axon_tensor_t b = kc_tensor(d128, AXON_COMPLEX128, 1, one, NULL);
    axon_tensor_t ob = kc_tensor(o128, AXON_COMPLEX128, 1, one, NULL);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_SUB, &oa, &a, NULL, &p));
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_SUB, &ob, &b, NULL, &p));
    REQUIRE(kc_download(&k, g64, o64, sizeof g64) && kc_download(&k, g128, o128, sizeof g128));
    CHECK(g64[0] == 0 && !signbit(g64[0]) && g64[1] == 3.0f);
    CHECK(g128[0] == 0 && !signbit(g128[0]) && g128[1] == 3.0);
    axon_mem_free(k.dev, d64);
    axon_mem_free(k.dev, d128);
    axon_mem_free(k.dev, o64);
    axon_mem_free(k.dev, o128);
    axon_runtime_destroy(k.rt);
}

/* complex32, a storage dtype: operands load as complex64, the op computes in complex64 and the result rounds to
 * float16 parts once (to nearest even), as PyTorch CPU computes complex32 products; complex32 is no compute dtype. */
static void test_complex32_operands_compute_in_complex64(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { M = 300 };
    static uint16_t xs[M][2], ys[M][2], got[M][2];
    for (int i = 0; i < M; i++) {
        for (int part = 0; part < 2; part++) {
            xs[i][part] = axon_f32_to_f16((float)((rnd() - 0.5) * 200));
            ys[i][part] = axon_f32_to_f16((float)((rnd() - 0.5) * 3));
        }
    }
    xs[0][0] = 0x7C00; /* +inf real part: inf * y.re + (-x.im) * y.im */
    void *dx = kc_upload(&k, xs, sizeof xs), *dy = kc_upload(&k, ys, sizeof ys);
    void *dout = kc_upload(&k, NULL, sizeof got);
    REQUIRE(dx && dy && dout);
    int64_t sizes[1] = {M};
    axon_tensor_t x = kc_tensor(dx, AXON_COMPLEX32, 1, sizes, NULL), y = kc_tensor(dy, AXON_COMPLEX32, 1, sizes, NULL);
    axon_tensor_t out = kc_tensor(dout, AXON_COMPLEX32, 1, sizes, NULL);
    axon_op_params_t p = axon_op_params_default();
    p.compute = AXON_COMPLEX64;
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_MUL, &out, &x, &y, &p));
    REQUIRE(kc_download(&k, got, dout, sizeof got));
    int bad = 0;
    for (int i = 0; i < M; i++) {
        float a = axon_f16_to_f32(xs[i][0]), b = axon_f16_to_f32(xs[i][1]);
        float c = axon_f16_to_f32(ys[i][0]), d = axon_f16_to_f32(ys[i][1]);
        volatile float ac = a * c, bd = b * d, ad = a * d, bc = b * c; /* unfused, as the kernel's formula */
        uint16_t re = axon_f32_to_f16(ac - bd), im = axon_f32_to_f16(ad + bc);
        int nan_re = (re & 0x7FFF) > 0x7C00 && (got[i][0] & 0x7FFF) > 0x7C00;
        bad += (got[i][0] != re && !nan_re) || got[i][1] != im;
    }
    CHECK(bad == 0);
    /* complex32 itself is no compute dtype */
    p.compute = AXON_COMPLEX32;
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_MUL, &out, &x, &y, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, dx);
    axon_mem_free(k.dev, dy);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_complex_op_matches_the_reference);
    RUN(test_numbers_strides_and_mixed_dtypes);
    RUN(test_sub_negates_alpha_as_pytorch);
    RUN(test_complex32_operands_compute_in_complex64);
    return check_report();
}
