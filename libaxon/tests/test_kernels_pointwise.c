/* Pointwise ops against a straightforward reference: every (op, dtype) pair, supported or not.
 *
 * Each supported pair runs on N elements: every pair (and, for ternary ops, triple) of special values (zeros of both
 * signs, +-inf, NaN, integer limits, halves, near-overflow arguments) followed by pseudo-random values. The reference
 * computes in long double (floats, with libm's long double functions) or in 128-bit integers (ints), then rounds or
 * wraps to the dtype. Tolerances, against the reference rounded to the dtype:
 *   EXACT   equal (NaN matches NaN): selections, rounding, sign ops, comparisons, bitwise and all integer ops;
 *   ROUND1  one rounding: equal for float32; one ulp for float16/bfloat16, which compute in float32 and round
 *           again, and for float64, whose long double reference can round twice;
 *   ARITH   a few roundings: 2 ulps (1 for halves) plus 4 eps of the work type times the size of the terms, which
 *           bounds the cancellation in a + alpha b, lerp, addcmul, addcdiv, remainder, div_floor;
 *   TRANS   libm functions: 4 ulps or 1e-6 relative for float32 (1e-13 for float64); one ulp for halves;
 *   ACT     composite activations: TRANS, or 8 eps of the work type times max(1, |x|), since 1 + erf(x) and similar
 *           lose all relative precision where the result is tiny (PyTorch computes them the same way);
 *   GRAD    activation backward ops: TRANS, or 8 eps of the work type times the size of the terms the reference
 *           reports (|g| times the derivative's largest term), since 1 - tanh^2, 1 - s and similar cancel.
 *   ELSEWHERE  only whether the pair exists: the special functions (lgamma, digamma, polygamma, zeta, the Bessel
 *           and normal-distribution functions, the orthogonal polynomials, heaviside) have no long double
 *           reference here; test_kernels_pointwise_special.c checks them at known values.
 * Unsupported pairs must fail at launch with UNSUPPORTED, naming the op and the dtype. */
#include <float.h>
#include <inttypes.h>

#include "kernels_check.h"
#include "pointwise_ref.h"

enum tol { EXACT, ROUND1, ARITH, TRANS, ACT, GRAD, ELSEWHERE };

#define N 1000
#define NDT AXON_DTYPE_COUNT

/* Dtype sets, the test's own statement of which pairs exist. */
#define F ((1u << AXON_FLOAT32) | (1u << AXON_FLOAT64) | (1u << AXON_FLOAT16) | (1u << AXON_BFLOAT16))
#define I ((1u << AXON_INT8) | (1u << AXON_UINT8) | (1u << AXON_INT16) | (1u << AXON_INT32) | (1u << AXON_INT64))
#define B (1u << AXON_BOOL)
/* ops PyTorch CPU defines for float32 and float64 only */
#define FD ((1u << AXON_FLOAT32) | (1u << AXON_FLOAT64))
/* The complex pairs' values are checked in test_kernels_pointwise_complex.c; here only that they exist. */
#define C ((1u << AXON_COMPLEX64) | (1u << AXON_COMPLEX128))

typedef struct op_case {
    int op;
    unsigned dtypes;
    enum tol tol;
    int bool_result;
} op_case_t;

static const op_case_t unary_cases[] = {
    {AXON_UNARY_NEG, F | I | C, EXACT, 0},        {AXON_UNARY_ABS, F | I | C, EXACT, 0},
    {AXON_UNARY_SIGN, F | I | B | C, EXACT, 0},   {AXON_UNARY_RECIPROCAL, F | C, ROUND1, 0},
    {AXON_UNARY_SQRT, F | C, ROUND1, 0},          {AXON_UNARY_RSQRT, F | C, TRANS, 0},
    {AXON_UNARY_EXP, F | C, TRANS, 0},            {AXON_UNARY_EXP2, F | C, TRANS, 0},
    {AXON_UNARY_EXPM1, F | C, TRANS, 0},          {AXON_UNARY_LOG, F | C, TRANS, 0},
    {AXON_UNARY_LOG2, F | C, TRANS, 0},           {AXON_UNARY_LOG10, F | C, TRANS, 0},
    {AXON_UNARY_LOG1P, F | C, TRANS, 0},          {AXON_UNARY_SIN, F | C, TRANS, 0},
    {AXON_UNARY_COS, F | C, TRANS, 0},            {AXON_UNARY_TAN, F | C, TRANS, 0},
    {AXON_UNARY_ASIN, F | C, TRANS, 0},           {AXON_UNARY_ACOS, F | C, TRANS, 0},
    {AXON_UNARY_ATAN, F | C, TRANS, 0},           {AXON_UNARY_SINH, F | C, TRANS, 0},
    {AXON_UNARY_COSH, F | C, TRANS, 0},           {AXON_UNARY_TANH, F | C, TRANS, 0},
    {AXON_UNARY_ASINH, F | C, TRANS, 0},          {AXON_UNARY_ACOSH, F | C, TRANS, 0},
    {AXON_UNARY_ATANH, F | C, TRANS, 0},          {AXON_UNARY_ERF, F, TRANS, 0},
    {AXON_UNARY_ERFC, F, TRANS, 0},           {AXON_UNARY_SIGMOID, F | C, ACT, 0},
    {AXON_UNARY_RELU, F | I, EXACT, 0},       {AXON_UNARY_GELU, F, ACT, 0},
    {AXON_UNARY_GELU_TANH, F, ACT, 0},        {AXON_UNARY_SILU, F | C, ACT, 0},
    {AXON_UNARY_MISH, F, ACT, 0},             {AXON_UNARY_SOFTPLUS, F, ACT, 0},
    {AXON_UNARY_HARDSIGMOID, F, ACT, 0},      {AXON_UNARY_HARDSWISH, F, ACT, 0},
    {AXON_UNARY_HARDTANH, F | I, EXACT, 0},   {AXON_UNARY_LEAKY_RELU, F, ACT, 0},
    {AXON_UNARY_ELU, F, ACT, 0},              {AXON_UNARY_FLOOR, F | I, EXACT, 0},
    {AXON_UNARY_CEIL, F | I, EXACT, 0},       {AXON_UNARY_ROUND, F | I, EXACT, 0},
    {AXON_UNARY_TRUNC, F | I, EXACT, 0},      {AXON_UNARY_FRAC, F, EXACT, 0},
    {AXON_UNARY_LOGICAL_NOT, F | I | B | C, EXACT, 1}, {AXON_UNARY_BITWISE_NOT, I | B, EXACT, 0},
    {AXON_UNARY_ISNAN, F | I | B | C, EXACT, 1},  {AXON_UNARY_ISINF, F | I | B, EXACT, 1},
    {AXON_UNARY_ISFINITE, F | I | B, EXACT, 1}, {AXON_UNARY_SQUARE, F | I | C, ROUND1, 0},
    {AXON_UNARY_LOG_SIGMOID, F, ACT, 0},      {AXON_UNARY_LOGIT, F, ACT, 0},
    {AXON_UNARY_SOFTSHRINK, F, ROUND1, 0},    {AXON_UNARY_HARDSHRINK, F, EXACT, 0},
    {AXON_UNARY_THRESHOLD, F | I, EXACT, 0},  {AXON_UNARY_ISPOSINF, F | I | B, EXACT, 1},
    {AXON_UNARY_ISNEGINF, F | I | B, EXACT, 1}, {AXON_UNARY_SIGNBIT, F | I | B, EXACT, 1},
    {AXON_UNARY_CUBE, F | C, ARITH, 0},       {AXON_UNARY_RSQUARE, F | C, ARITH, 0},
    {AXON_UNARY_CONJ, F | I | B | C, EXACT, 0}, {AXON_UNARY_LGAMMA, F, ELSEWHERE, 0},
    {AXON_UNARY_DIGAMMA, F, ELSEWHERE, 0},    {AXON_UNARY_POLYGAMMA, F, ELSEWHERE, 0},
    {AXON_UNARY_BESSEL_J0, FD, ELSEWHERE, 0},  {AXON_UNARY_BESSEL_J1, FD, ELSEWHERE, 0},
    {AXON_UNARY_BESSEL_Y0, FD, ELSEWHERE, 0},  {AXON_UNARY_BESSEL_Y1, FD, ELSEWHERE, 0},
    {AXON_UNARY_MODIFIED_BESSEL_I0, FD, ELSEWHERE, 0}, {AXON_UNARY_MODIFIED_BESSEL_I1, FD, ELSEWHERE, 0},
    {AXON_UNARY_MODIFIED_BESSEL_K0, FD, ELSEWHERE, 0}, {AXON_UNARY_MODIFIED_BESSEL_K1, FD, ELSEWHERE, 0},
    {AXON_UNARY_SCALED_MODIFIED_BESSEL_K0, FD, ELSEWHERE, 0},
    {AXON_UNARY_SCALED_MODIFIED_BESSEL_K1, FD, ELSEWHERE, 0},
    {AXON_UNARY_I0, F, ELSEWHERE, 0},          {AXON_UNARY_I0E, F, ELSEWHERE, 0},
    {AXON_UNARY_I1, F, ELSEWHERE, 0},          {AXON_UNARY_I1E, F, ELSEWHERE, 0},
    {AXON_UNARY_SPHERICAL_BESSEL_J0, FD, ELSEWHERE, 0}, {AXON_UNARY_ERFCX, FD, ELSEWHERE, 0},
    {AXON_UNARY_LOG_NDTR, FD, ELSEWHERE, 0},   {AXON_UNARY_NDTRI, FD, ELSEWHERE, 0},
    {AXON_UNARY_ENTR, F, ELSEWHERE, 0},        {AXON_UNARY_SINC, F | C, ELSEWHERE, 0},
    {AXON_UNARY_ERFINV, F, ELSEWHERE, 0},      {AXON_UNARY_NAN_TO_NUM, F | I | B, EXACT, 0},
    {AXON_UNARY_ROUND_DECIMALS, F, EXACT, 0},  {AXON_UNARY_ANGLE, F | C, EXACT, 0},
    {AXON_UNARY_FREXP_MANTISSA, F, EXACT, 0},  {AXON_UNARY_FREXP_EXPONENT, F, EXACT, 0},
    {AXON_UNARY_RENORM_FACTOR, F, ARITH, 0},   {AXON_UNARY_AIRY_AI, FD, ELSEWHERE, 0},
};
_Static_assert(sizeof unary_cases / sizeof unary_cases[0] == AXON_UNARY_COUNT, "a case for every unary op");

static const op_case_t binary_cases[] = {
    {AXON_BINARY_ADD, F | I | B | C, ROUND1, 0},  {AXON_BINARY_SUB, F | I | C, ROUND1, 0},
    {AXON_BINARY_MUL, F | I | B | C, ROUND1, 0},  {AXON_BINARY_DIV, F | C, ROUND1, 0},
    {AXON_BINARY_DIV_FLOOR, F | I, ARITH, 0}, {AXON_BINARY_DIV_TRUNC, F | I, EXACT, 0},
    {AXON_BINARY_REMAINDER, F | I, ARITH, 0}, {AXON_BINARY_FMOD, F | I, EXACT, 0},
    {AXON_BINARY_POW, F | I | C, TRANS, 0},   {AXON_BINARY_ATAN2, F, TRANS, 0},
    {AXON_BINARY_MAXIMUM, F | I | B, EXACT, 0}, {AXON_BINARY_MINIMUM, F | I | B, EXACT, 0},
    {AXON_BINARY_FMAX, F | I | B, EXACT, 0},  {AXON_BINARY_FMIN, F | I | B, EXACT, 0},
    {AXON_BINARY_EQ, F | I | B | C, EXACT, 1},    {AXON_BINARY_NE, F | I | B | C, EXACT, 1},
    {AXON_BINARY_LT, F | I | B, EXACT, 1},    {AXON_BINARY_LE, F | I | B, EXACT, 1},
    {AXON_BINARY_GT, F | I | B, EXACT, 1},    {AXON_BINARY_GE, F | I | B, EXACT, 1},
    {AXON_BINARY_LOGICAL_AND, F | I | B | C, EXACT, 1}, {AXON_BINARY_LOGICAL_OR, F | I | B | C, EXACT, 1},
    {AXON_BINARY_LOGICAL_XOR, F | I | B | C, EXACT, 1}, {AXON_BINARY_BITWISE_AND, I | B, EXACT, 0},
    {AXON_BINARY_BITWISE_OR, I | B, EXACT, 0}, {AXON_BINARY_BITWISE_XOR, I | B, EXACT, 0},
    {AXON_BINARY_SHIFT_LEFT, I, EXACT, 0},    {AXON_BINARY_SHIFT_RIGHT, I, EXACT, 0},
    {AXON_BINARY_HYPOT, F, TRANS, 0},         {AXON_BINARY_COPYSIGN, F, EXACT, 0},
    {AXON_BINARY_XLOGY, F, TRANS, 0},
    {AXON_BINARY_GELU_BACKWARD, F, GRAD, 0},    {AXON_BINARY_GELU_TANH_BACKWARD, F, GRAD, 0},
    {AXON_BINARY_SILU_BACKWARD, F, GRAD, 0},    {AXON_BINARY_MISH_BACKWARD, F, GRAD, 0},
    {AXON_BINARY_SIGMOID_BACKWARD, F | C, GRAD, 0}, {AXON_BINARY_TANH_BACKWARD, F | C, GRAD, 0},
    {AXON_BINARY_THRESHOLD_BACKWARD, F, EXACT, 0}, {AXON_BINARY_HARDTANH_BACKWARD, F, EXACT, 0},
    {AXON_BINARY_LEAKY_RELU_BACKWARD, F, ROUND1, 0}, {AXON_BINARY_ELU_BACKWARD, F, GRAD, 0},
    {AXON_BINARY_SOFTPLUS_BACKWARD, F, GRAD, 0}, {AXON_BINARY_HARDSWISH_BACKWARD, F, GRAD, 0},
    {AXON_BINARY_HARDSIGMOID_BACKWARD, F, ROUND1, 0},
    {AXON_BINARY_LOG_SIGMOID_BACKWARD, F, GRAD, 0}, {AXON_BINARY_LOGIT_BACKWARD, F, GRAD, 0},
    {AXON_BINARY_SHRINK_BACKWARD, F, EXACT, 0},      {AXON_BINARY_GLU, F, ACT, 0},
    {AXON_BINARY_PRELU, F, ROUND1, 0},               {AXON_BINARY_PRELU_BACKWARD_WEIGHT, F, ROUND1, 0},
    {AXON_BINARY_ZETA, F, ELSEWHERE, 0},       {AXON_BINARY_IGAMMA, F, ELSEWHERE, 0},
    {AXON_BINARY_IGAMMAC, F, ELSEWHERE, 0},
    {AXON_BINARY_CHEBYSHEV_T, FD, ELSEWHERE, 0}, {AXON_BINARY_CHEBYSHEV_U, FD, ELSEWHERE, 0},
    {AXON_BINARY_CHEBYSHEV_V, FD, ELSEWHERE, 0}, {AXON_BINARY_CHEBYSHEV_W, FD, ELSEWHERE, 0},
    {AXON_BINARY_SHIFTED_CHEBYSHEV_T, FD, ELSEWHERE, 0}, {AXON_BINARY_SHIFTED_CHEBYSHEV_U, FD, ELSEWHERE, 0},
    {AXON_BINARY_SHIFTED_CHEBYSHEV_V, FD, ELSEWHERE, 0}, {AXON_BINARY_SHIFTED_CHEBYSHEV_W, FD, ELSEWHERE, 0},
    {AXON_BINARY_HERMITE_H, FD, ELSEWHERE, 0},  {AXON_BINARY_HERMITE_HE, FD, ELSEWHERE, 0},
    {AXON_BINARY_LAGUERRE_L, FD, ELSEWHERE, 0}, {AXON_BINARY_LEGENDRE_P, FD, ELSEWHERE, 0},
    {AXON_BINARY_XLOG1PY, F, ELSEWHERE, 0},     {AXON_BINARY_LOGADDEXP, F, ELSEWHERE, 0},
    {AXON_BINARY_LOGADDEXP2, F, ELSEWHERE, 0},  {AXON_BINARY_HEAVISIDE, F | I | B, ELSEWHERE, 0},
    {AXON_BINARY_NEXTAFTER, F, ELSEWHERE, 0},    {AXON_BINARY_GCD, I, EXACT, 0},
    {AXON_BINARY_LCM, I, EXACT, 0},
};
_Static_assert(sizeof binary_cases / sizeof binary_cases[0] == AXON_BINARY_COUNT, "a case for every binary op");

static const op_case_t ternary_cases[] = {
    {AXON_TERNARY_WHERE, F | I | B | C, EXACT, 0}, {AXON_TERNARY_LERP, F | C, ARITH, 0},
    {AXON_TERNARY_ADDCMUL, F | I | C, ARITH, 0},   {AXON_TERNARY_ADDCDIV, F | C, ARITH, 0},
    {AXON_TERNARY_CLAMP, F | I, EXACT, 0},     {AXON_TERNARY_GLU_BACKWARD, F, GRAD, 0},
    {AXON_TERNARY_PRELU_BACKWARD, F, ROUND1, 0},  {AXON_TERNARY_ADDR, F | I, ARITH, 0},
};
_Static_assert(sizeof ternary_cases / sizeof ternary_cases[0] == AXON_TERNARY_COUNT, "a case for every ternary op");

/* ---- inputs ---- */

static const double float_specials[] = {
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.5, 3.0, -3.0, 0.25, 1e-3, -0.7, 0.7, 100.0, -100.0,
    1e4, 1e-30, -1e30, 88.5, -88.5, 700.0, 0.9999, INFINITY, -INFINITY, NAN,
};
#define NFS (int)(sizeof float_specials / sizeof float_specials[0])

static const int64_t int_specials[] = {
    0, 1, -1, 2, -2, 3, -3, 7, -7, 8, 9, 31, 63, 64, 100, -100, 127, -128, 255, 32767, -32768,
    INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 1000003,
};
#define NIS (int)(sizeof int_specials / sizeof int_specials[0])

static uint64_t rng_state;

static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rnd_unit(void) { return (double)(rnd() >> 11) * 0x1p-53; }

/* Operand k's special-value index at element i: operand 0 cycles fastest, so the first S^arity elements hold every
 * combination (up to N). Returns -1 past the specials. */
static int special_index(int i, int k, int arity, int s) {
    int combos = arity == 1 ? s : arity == 2 ? s * s : s * s * s;
    if (i >= combos || i >= N - N / 4) return -1;
    return k == 0 ? i % s : k == 1 ? (i / s) % s : (i / s / s) % s;
}

/* Fill buf with N elements of dtype d for operand k. `kind` narrows integers for ops that need it. */
enum gen_kind { GEN_ANY, GEN_NONZERO, GEN_EXPONENT, GEN_SHIFT };

static void make_operand(axon_dtype_t d, void *buf, int k, int arity, enum gen_kind kind) {
    size_t es = axon_dtype_size(d);
    for (int i = 0; i < N; i++) {
        char *p = (char *)buf + (size_t)i * es;
        if (d == AXON_BOOL) {
            int s = special_index(i, k, arity, 3);
            *(uint8_t *)p = (uint8_t)(s >= 0 ? (uint64_t)s : rnd() % 3);
            continue; /* byte 2 must read as true */
        }
        if (ref_is_float(d)) {
            int s = special_index(i, k, arity, NFS);
            long double v;
            if (s >= 0) {
                v = float_specials[s];
            } else {
                switch (rnd() % 3) {
                case 0: v = (rnd_unit() - 0.5) * 8; break;
                case 1: v = (rnd_unit() - 0.5) * 60; break;
                default: v = (rnd() & 1 ? -1 : 1) * pow(10.0, rnd_unit() * 12 - 6); break;
                }
            }
            ref_store_f(d, p, v);
            continue;
        }
        int s = special_index(i, k, arity, NIS);
        int64_t v = s >= 0 ? int_specials[s] : rnd() & 1 ? (int64_t)rnd() : (int64_t)(rnd() % 101) - 50;
        v = ref_wrap(d, v);
        if (kind == GEN_NONZERO && v == 0) v = 1;
        if (kind == GEN_EXPONENT) v = ref_wrap(d, (int64_t)((uint64_t)v % 44) - 3 + (d == AXON_UINT8 ? 3 : 0));
        if (kind == GEN_SHIFT) v = ref_wrap(d, (int64_t)((uint64_t)v % 70) - 3 + (d == AXON_UINT8 ? 3 : 0));
        ref_store_i(d, p, v);
    }
}

/* ---- float references ---- */

static long double ref_relu(long double x) { return isnan(x) ? x : x < 0 ? 0 : x; }

static long double ref_clamp(long double x, long double lo, long double hi) {
    if (isnan(x) || isnan(lo) || isnan(hi)) return NAN;
    return x < lo ? (lo > hi ? hi : lo) : x > hi ? hi : x;
}

static long double unary_ref_f(int op, long double x, const axon_op_params_t *p) {
    const long double pi = 3.141592653589793238462643383279503L;
    switch (op) {
    case AXON_UNARY_NEG: return -x;
    case AXON_UNARY_ABS: return fabsl(x);
    case AXON_UNARY_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case AXON_UNARY_RECIPROCAL: return 1 / x;
    case AXON_UNARY_SQRT: return sqrtl(x);
    case AXON_UNARY_RSQRT: return 1 / sqrtl(x);
    case AXON_UNARY_EXP: return expl(x);
    case AXON_UNARY_EXP2: return exp2l(x);
    case AXON_UNARY_EXPM1: return expm1l(x);
    case AXON_UNARY_LOG: return logl(x);
    case AXON_UNARY_LOG2: return log2l(x);
    case AXON_UNARY_LOG10: return log10l(x);
    case AXON_UNARY_LOG1P: return log1pl(x);
    case AXON_UNARY_SIN: return sinl(x);
    case AXON_UNARY_COS: return cosl(x);
    case AXON_UNARY_TAN: return tanl(x);
    case AXON_UNARY_ASIN: return asinl(x);
    case AXON_UNARY_ACOS: return acosl(x);
    case AXON_UNARY_ATAN: return atanl(x);
    case AXON_UNARY_SINH: return sinhl(x);
    case AXON_UNARY_COSH: return coshl(x);
    case AXON_UNARY_TANH: return tanhl(x);
    case AXON_UNARY_ASINH: return asinhl(x);
    case AXON_UNARY_ACOSH: return acoshl(x);
    case AXON_UNARY_ATANH: return atanhl(x);
    case AXON_UNARY_ERF: return erfl(x);
    case AXON_UNARY_ERFC: return erfcl(x);
    case AXON_UNARY_SIGMOID: return 1 / (1 + expl(-x));
    case AXON_UNARY_RELU: return ref_relu(x);
    case AXON_UNARY_GELU: return x / 2 * (1 + erfl(x / sqrtl(2)));
    case AXON_UNARY_GELU_TANH: return x / 2 * (1 + tanhl(sqrtl(2 / pi) * (x + 0.044715L * x * x * x)));
    case AXON_UNARY_SILU: return x / (1 + expl(-x));
    case AXON_UNARY_MISH: return x * tanhl(log1pl(expl(x)));
    case AXON_UNARY_SOFTPLUS: return x * p->beta > p->threshold ? x : log1pl(expl(x * p->beta)) / p->beta;
    case AXON_UNARY_HARDSIGMOID: return ref_clamp(x + 3, 0, 6) / 6;
    case AXON_UNARY_HARDSWISH: return x * ref_clamp(x + 3, 0, 6) / 6;
    case AXON_UNARY_HARDTANH: return ref_clamp(x, p->min_val, p->max_val);
    case AXON_UNARY_LEAKY_RELU: return x > 0 ? x : x * p->negative_slope;
    case AXON_UNARY_ELU:
        return x > 0 ? x * p->elu_scale : expm1l(x * p->elu_input_scale) * p->elu_alpha * p->elu_scale;
    case AXON_UNARY_FLOOR: return floorl(x);
    case AXON_UNARY_CEIL: return ceill(x);
    case AXON_UNARY_ROUND: return nearbyintl(x);
    case AXON_UNARY_TRUNC: return truncl(x);
    case AXON_UNARY_FRAC: return x - truncl(x);
    case AXON_UNARY_LOGICAL_NOT: return x == 0;
    case AXON_UNARY_ISNAN: return isnan(x) != 0;
    case AXON_UNARY_ISINF: return isinf(x) != 0;
    case AXON_UNARY_ISFINITE: return isfinite(x) != 0;
    case AXON_UNARY_ISPOSINF: return isinf(x) && x > 0;
    case AXON_UNARY_ISNEGINF: return isinf(x) && x < 0;
    case AXON_UNARY_SIGNBIT: return signbit(x) != 0;
    case AXON_UNARY_SQUARE: return x * x;
    case AXON_UNARY_CUBE: return x * x * x;
    case AXON_UNARY_RSQUARE: return 1 / (x * x);
    case AXON_UNARY_CONJ: return x;
    case AXON_UNARY_LOG_SIGMOID: return fminl(x, 0) - log1pl(expl(-fabsl(x)));
    case AXON_UNARY_LOGIT: {
        long double e = p->logit_eps, z = e < 0 ? x : ref_clamp(x, e, 1 - e);
        return logl(z / (1 - z));
    }
    case AXON_UNARY_SOFTSHRINK: return x > p->lambd ? x - p->lambd : x < -p->lambd ? x + p->lambd : x * 0;
    case AXON_UNARY_HARDSHRINK: return x >= -p->lambd && x <= p->lambd ? 0 : x;
    case AXON_UNARY_THRESHOLD: return x <= p->threshold ? p->value : x;
    case AXON_UNARY_NAN_TO_NUM:
        return isnan(x) ? p->nan_value : isinf(x) ? (x > 0 ? p->posinf_value : p->neginf_value) : x;
    case AXON_UNARY_ROUND_DECIMALS: return nearbyintl(x); /* the default decimals, 0 */
    case AXON_UNARY_ANGLE: return isnan(x) ? x : x < 0 ? pi : 0;
    case AXON_UNARY_RENORM_FACTOR: return x > p->maxnorm ? p->maxnorm / (x + 1e-7L) : 1;
    case AXON_UNARY_FREXP_MANTISSA:
    case AXON_UNARY_FREXP_EXPONENT: {
        int e = 0;
        long double m = isfinite(x) ? frexpl(x, &e) : x;
        return op == AXON_UNARY_FREXP_MANTISSA ? m : (long double)e;
    }
    default: return NAN;
    }
}

/* Floor division like Python: the exact remainder fixes the quotient. */
static long double ref_div_floor(long double a, long double b) {
    if (b == 0) return a / b;
    long double mod = fmodl(a, b), q = nearbyintl((a - mod) / b);
    if (mod != 0 && (b < 0) != (mod < 0)) q -= 1;
    return q == 0 ? copysignl(0, a / b) : q;
}

/* The activation backward ops (x the gradient, y the forward's input or output), in the same structure as PyTorch's
 * CPU kernels. R() rounds the intermediates that can overflow or underflow to the work type, and the parameters to
 * it (PyTorch's opmath scalars), so infinities, zeros and NaN arise where they do in float arithmetic; the libm parts
 * stay long double. `scale` is the size of the largest term, for GRAD's cancellation allowance. */
static long double backward_ref_f(int op, long double g, long double y, const axon_op_params_t *p, axon_dtype_t work,
                                  long double *scale) {
#define R(v) ref_round(work, (v))
    const long double pi = 3.141592653589793238462643383279503L, ay = fmaxl(1, fabsl(y));
    const long double s = 1 / (1 + R(expl(-y)));
    *scale = fabsl(g) * ay;
    switch (op) {
    case AXON_BINARY_GELU_BACKWARD: {
        long double cdf = (1 + R(erfl(y / sqrtl(2)))) / 2, pdf = R(expl(R(y * y) / -2)) / sqrtl(2 * pi);
        return g * (cdf + y * pdf);
    }
    case AXON_BINARY_GELU_TANH_BACKWARD: {
        long double kb = sqrtl(2 / pi), kk = 0.044715L, ysq = R(y * y), t = R(tanhl(R(kb * (y + kk * R(ysq * y)))));
        *scale = fabsl(g) * ay * ay * ay;
        return g * ((1 + t) / 2 + R(R(y / 2 * (1 - t * t)) * R(kb * (1 + 3 * kk * ysq))));
    }
    case AXON_BINARY_SILU_BACKWARD: return g * s * (1 + y * (1 - s));
    case AXON_BINARY_MISH_BACKWARD: {
        long double t = tanhl(log1pl(R(expl(y))));
        return g * (t + y * s * (1 - t * t));
    }
    case AXON_BINARY_SIGMOID_BACKWARD: *scale = fabsl(g) * ay * ay; return R(g * (1 - y)) * y;
    case AXON_BINARY_TANH_BACKWARD: *scale = fabsl(g) * ay * ay; return g * (1 - R(y * y));
    case AXON_BINARY_THRESHOLD_BACKWARD: return y <= R(p->threshold) ? 0 : g;
    case AXON_BINARY_HARDTANH_BACKWARD: return y > R(p->min_val) && y < R(p->max_val) ? g : 0;
    case AXON_BINARY_LEAKY_RELU_BACKWARD: return y > 0 ? g : g * R(p->negative_slope);
    case AXON_BINARY_ELU_BACKWARD: {
        long double a = R(R(p->elu_alpha) * R(p->elu_scale)), sc = R(p->elu_scale), is = R(p->elu_input_scale);
        *scale = fabsl(g) * (fabsl(a) + fabsl(sc) + fabsl(is * y)) * fmaxl(1, fabsl(is));
        if (p->elu_is_result) return y > 0 ? g * sc : R(g * is) * (y + a);
        return y > 0 ? g * sc : R(R(g * is) * a) * R(expl(R(y * is)));
    }
    case AXON_BINARY_SOFTPLUS_BACKWARD: {
        long double b = R(p->beta), z = R(expl(R(y * b)));
        return R(y * b) > R(p->threshold) ? g : R(g * z) / (z + 1);
    }
    case AXON_BINARY_HARDSWISH_BACKWARD: return y <= -3 ? 0 : y >= 3 ? g : g * (y / 3 + 0.5L);
    case AXON_BINARY_HARDSIGMOID_BACKWARD: return y > -3 && y < 3 ? g * (1.0f / 6.0f) : 0; /* PyTorch's float 1/6 */
    case AXON_BINARY_LOG_SIGMOID_BACKWARD: {
        long double z = R(expl(-fabsl(y))); /* 0 in the work type for large |y|: then inf g gives NaN there too */
        return g * ((y < 0 ? 1 : 0) - (y < 0 ? 1 : -1) * z / (1 + z));
    }
    case AXON_BINARY_LOGIT_BACKWARD: {
        long double e = p->logit_eps;
        *scale = fabsl(g) / fmaxl(fabsl(y * (1 - y)), 1e-30L);
        if (e < 0) return y < 0 || y > 1 ? NAN : g / (y * (1 - y));
        return y < e || y > 1 - e ? 0 : g / (y * (1 - y));
    }
    case AXON_BINARY_SHRINK_BACKWARD: return y >= -p->lambd && y <= p->lambd ? 0 : g;
    case AXON_BINARY_GLU: return g * s;
    case AXON_BINARY_PRELU: return g > 0 ? g : y * g;
    case AXON_BINARY_PRELU_BACKWARD_WEIGHT: return y > 0 ? 0 : y * g;
    default: return NAN;
    }
#undef R
}

/* `work` rounds to the type the kernel computes in (float32 for halves): div_trunc truncates a rounded quotient.
 * Alpha is taken in the tensors' dtype d, as PyTorch's CPU loops take it (-0.3 is -0.30078125 in bfloat16). */
static long double binary_ref_f(int op, long double x, long double y, const axon_op_params_t *p, axon_dtype_t d,
                                axon_dtype_t work, long double *scale) {
    long double alpha = p->alpha.dtype == AXON_FLOAT64 ? p->alpha.f : (long double)p->alpha.i;
    if (ref_is_half(d)) alpha = ref_round(d, ref_round(AXON_FLOAT32, alpha));
    *scale = fmaxl(fabsl(x), fabsl(y));
    switch (op) {
    case AXON_BINARY_ADD: *scale = fabsl(x) + fabsl(alpha * y); return x + alpha * y;
    case AXON_BINARY_SUB: *scale = fabsl(x) + fabsl(alpha * y); return x - alpha * y;
    case AXON_BINARY_MUL: return x * y;
    case AXON_BINARY_DIV: return x / y;
    case AXON_BINARY_DIV_FLOOR: *scale = 0; return ref_div_floor(x, y);
    case AXON_BINARY_DIV_TRUNC: return truncl(ref_round(work, x / y));
    case AXON_BINARY_REMAINDER: {
        *scale = fabsl(y);
        long double m = fmodl(x, y);
        return m != 0 && (y < 0) != (m < 0) ? m + y : m;
    }
    case AXON_BINARY_FMOD: return fmodl(x, y);
    case AXON_BINARY_POW: return powl(x, y);
    case AXON_BINARY_ATAN2: return atan2l(x, y);
    case AXON_BINARY_MAXIMUM: return isnan(x) || isnan(y) ? NAN : fmaxl(x, y);
    case AXON_BINARY_MINIMUM: return isnan(x) || isnan(y) ? NAN : fminl(x, y);
    case AXON_BINARY_FMAX: return fmaxl(x, y);
    case AXON_BINARY_FMIN: return fminl(x, y);
    case AXON_BINARY_EQ: return x == y;
    case AXON_BINARY_NE: return x != y;
    case AXON_BINARY_LT: return x < y;
    case AXON_BINARY_LE: return x <= y;
    case AXON_BINARY_GT: return x > y;
    case AXON_BINARY_GE: return x >= y;
    case AXON_BINARY_LOGICAL_AND: return x != 0 && y != 0;
    case AXON_BINARY_LOGICAL_OR: return x != 0 || y != 0;
    case AXON_BINARY_LOGICAL_XOR: return (x != 0) != (y != 0);
    case AXON_BINARY_HYPOT: return hypotl(x, y);
    case AXON_BINARY_COPYSIGN: return copysignl(x, y);
    case AXON_BINARY_XLOGY: return isnan(y) ? NAN : x == 0 ? 0 : x * logl(y);
    default: return backward_ref_f(op, x, y, p, work, scale);
    }
}

static long double ternary_ref_f(int op, long double x, long double y, long double z, const axon_op_params_t *p,
                                 axon_dtype_t work,
                                 long double *scale) {
    long double v = p->alpha.dtype == AXON_FLOAT64 ? p->alpha.f : (long double)p->alpha.i;
    switch (op) {
    case AXON_TERNARY_WHERE: return x != 0 ? y : z;
    case AXON_TERNARY_LERP: /* PyTorch's two-sided formula, which also decides where infinities give NaN */
        *scale = fabsl(x) + fabsl(y) + fabsl(z * (y - x));
        return fabsl(z) < 0.5L ? x + z * (y - x) : y - (y - x) * (1 - z);
    case AXON_TERNARY_ADDCMUL: *scale = fabsl(x) + fabsl(v * y * z); return x + v * y * z;
    case AXON_TERNARY_ADDCDIV: *scale = fabsl(x) + fabsl(v * y / z); return x + v * y / z;
    case AXON_TERNARY_CLAMP: return ref_clamp(x, y, z);
    case AXON_TERNARY_GLU_BACKWARD: {
        /* s in the work type: s (1 - s) cancels there, and exp overflows to give s = 0, as in PyTorch's kernel. */
        long double s = ref_round(work, 1 / (1 + ref_round(work, expl(-z))));
        *scale = fabsl(x * y);
        return x * y * s * (1 - s);
    }
    case AXON_TERNARY_PRELU_BACKWARD: return y > 0 ? x : z * x;
    case AXON_TERNARY_ADDR:
        *scale = fabsl(p->beta * x) + fabsl(v * y * z);
        return p->beta == 0 ? v * y * z : p->beta * x + v * y * z;
    default: return NAN;
    }
}

/* ---- integer references, in 128 bits (wrapped to the dtype by the caller) ---- */

typedef __int128 i128;
typedef unsigned __int128 u128;

static i128 unary_ref_i(int op, i128 x, axon_dtype_t d, const axon_op_params_t *p) {
    int is_bool = d == AXON_BOOL;
    switch (op) {
    case AXON_UNARY_NEG: return -x;
    case AXON_UNARY_ABS: return x < 0 ? -x : x;
    case AXON_UNARY_SIGN: return (x > 0) - (x < 0);
    case AXON_UNARY_CONJ: return x;
    case AXON_UNARY_RELU: return x < 0 ? 0 : x;
    case AXON_UNARY_HARDTANH: {
        i128 lo = ref_wrap(d, (int64_t)p->min_val), hi = ref_wrap(d, (int64_t)p->max_val);
        return x < lo ? (lo > hi ? hi : lo) : x > hi ? hi : x;
    }
    case AXON_UNARY_FLOOR:
    case AXON_UNARY_CEIL:
    case AXON_UNARY_ROUND:
    case AXON_UNARY_TRUNC: return x;
    case AXON_UNARY_LOGICAL_NOT: return x == 0;
    case AXON_UNARY_BITWISE_NOT: return is_bool ? !x : ~x;
    case AXON_UNARY_ISNAN:
    case AXON_UNARY_ISINF:
    case AXON_UNARY_ISPOSINF:
    case AXON_UNARY_ISNEGINF: return 0;
    case AXON_UNARY_SIGNBIT: return x < 0;
    case AXON_UNARY_ISFINITE: return 1;
    case AXON_UNARY_SQUARE: return (i128)((u128)x * (u128)x);
    case AXON_UNARY_THRESHOLD: return x <= ref_wrap(d, (int64_t)p->threshold) ? ref_wrap(d, (int64_t)p->value) : x;
    case AXON_UNARY_NAN_TO_NUM: return x;
    default: return 0;
    }
}

static i128 binary_ref_i(int op, i128 x, i128 y, axon_dtype_t d, const axon_op_params_t *p) {
    int bits = ref_bits(d), is_signed = d != AXON_UINT8 && d != AXON_BOOL;
    i128 alpha = p->alpha.i;
    if (d == AXON_BOOL) {
        switch (op) {
        case AXON_BINARY_ADD: return x | (alpha != 0 && y);
        case AXON_BINARY_MUL:
        case AXON_BINARY_MINIMUM:
        case AXON_BINARY_FMIN:
        case AXON_BINARY_BITWISE_AND: return x & y;
        case AXON_BINARY_MAXIMUM:
        case AXON_BINARY_FMAX:
        case AXON_BINARY_BITWISE_OR: return x | y;
        case AXON_BINARY_BITWISE_XOR: return x ^ y;
        default: break; /* comparisons and logical ops: as for integers */
        }
    }
    switch (op) {
    case AXON_BINARY_ADD: return (i128)((u128)x + (u128)alpha * (u128)y);
    case AXON_BINARY_SUB: return (i128)((u128)x - (u128)alpha * (u128)y);
    case AXON_BINARY_MUL: return (i128)((u128)x * (u128)y);
    case AXON_BINARY_DIV_FLOOR: return x / y - (x % y != 0 && (x < 0) != (y < 0));
    case AXON_BINARY_DIV_TRUNC: return x / y;
    case AXON_BINARY_REMAINDER: return x % y != 0 && (x % y < 0) != (y < 0) ? x % y + y : x % y;
    case AXON_BINARY_FMOD: return x % y;
    case AXON_BINARY_POW: {
        if (y < 0) return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
        u128 r = 1;
        for (i128 e = 0; e < y; e++) r *= (u128)x;
        return (i128)r;
    }
    case AXON_BINARY_MAXIMUM:
    case AXON_BINARY_FMAX: return x > y ? x : y;
    case AXON_BINARY_MINIMUM:
    case AXON_BINARY_FMIN: return x < y ? x : y;
    case AXON_BINARY_EQ: return x == y;
    case AXON_BINARY_NE: return x != y;
    case AXON_BINARY_LT: return x < y;
    case AXON_BINARY_LE: return x <= y;
    case AXON_BINARY_GT: return x > y;
    case AXON_BINARY_GE: return x >= y;
    case AXON_BINARY_LOGICAL_AND: return x != 0 && y != 0;
    case AXON_BINARY_LOGICAL_OR: return x != 0 || y != 0;
    case AXON_BINARY_LOGICAL_XOR: return (x != 0) != (y != 0);
    case AXON_BINARY_BITWISE_AND: return x & y;
    case AXON_BINARY_BITWISE_OR: return x | y;
    case AXON_BINARY_BITWISE_XOR: return x ^ y;
    case AXON_BINARY_SHIFT_LEFT: return y < 0 || y >= bits ? 0 : (i128)((u128)x << (int)y);
    case AXON_BINARY_SHIFT_RIGHT: {
        int top = bits - is_signed;
        return y < 0 || y >= top ? x >> top : x >> (int)y;
    }
    case AXON_BINARY_GCD:
    case AXON_BINARY_LCM: {
        u128 a = (u128)(x < 0 ? -x : x), b = (u128)(y < 0 ? -y : y), g = b;
        for (u128 c; a != 0; c = a, a = g % a, g = c) {}
        if (op == AXON_BINARY_GCD) return (i128)g;
        if (g == 0) return 0;
        i128 prod = x / (i128)g * y; /* exact; wrapped as C's int (32 bits) or int64 arithmetic would */
        if (bits == 64) prod = (int64_t)(uint64_t)(u128)prod;
        else prod = (int32_t)(uint32_t)(u128)prod;
        return prod < 0 ? -prod : prod;
    }
    default: return 0;
    }
}

static i128 ternary_ref_i(int op, i128 x, i128 y, i128 z, const axon_op_params_t *p) {
    switch (op) {
    case AXON_TERNARY_WHERE: return x != 0 ? y : z;
    case AXON_TERNARY_ADDCMUL: return (i128)((u128)x + (u128)p->alpha.i * (u128)y * (u128)z);
    case AXON_TERNARY_ADDR: return (i128)((u128)(int64_t)p->beta * (u128)x + (u128)p->alpha.i * (u128)y * (u128)z);
    case AXON_TERNARY_CLAMP: return x < y ? (y > z ? z : y) : x > z ? z : x;
    default: return 0;
    }
}

/* ---- comparing ---- */

static int close_enough(axon_dtype_t d, enum tol tol, long double got, long double exact, long double scale,
                        long double x) {
    long double want = ref_round(d, exact);
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (got == want) return 1;
    if (tol == EXACT || isinf(want) || isinf(got)) return 0;
    long double diff = fabsl(got - want), ulp = ref_ulp(d, want);
    long double eps = d == AXON_FLOAT64 ? 0x1p-53L : 0x1p-24L;
    int half = ref_is_half(d);
    switch (tol) {
    case ROUND1: /* long double keeps only 11 bits more than double: the float64 reference may round twice */
        return (half || d == AXON_FLOAT64) && diff <= ulp;
    case ARITH: return diff <= ulp * (half ? 1 : 2) + 4 * eps * scale;
    case TRANS:
    case ACT:
        if (diff <= ulp * (half ? 1 : 4)) return 1;
        if (!half && diff <= (d == AXON_FLOAT64 ? 1e-13L : 1e-6L) * fabsl(want)) return 1;
        return tol == ACT && diff <= ulp + 8 * eps * fmaxl(1, fabsl(x));
    case GRAD:
        if (diff <= ulp * (half ? 1 : 4)) return 1;
        if (!half && diff <= (d == AXON_FLOAT64 ? 1e-13L : 1e-6L) * fabsl(want)) return 1;
        return diff <= ulp + 8 * eps * scale;
    default: return 0;
    }
}

/* ---- running one (op, dtype) ---- */

/* Run the op on host inputs through device memory; out gets N elements of out_dt. Returns the launch status. */
static axon_status_t run_op(const kc_dev_t *k, int arity, int op, axon_dtype_t out_dt, void *out,
                            const axon_dtype_t *in_dt, void *const *in, const axon_op_params_t *p) {
    int64_t n = N;
    void *dev_in[3] = {NULL, NULL, NULL};
    axon_tensor_t t[3];
    for (int j = 0; j < arity; j++) {
        dev_in[j] = kc_upload(k, in[j], N * axon_dtype_size(in_dt[j]));
        t[j] = kc_tensor(dev_in[j], in_dt[j], 1, &n, NULL);
    }
    void *dev_out = kc_upload(k, NULL, N * axon_dtype_size(out_dt));
    axon_tensor_t to = kc_tensor(dev_out, out_dt, 1, &n, NULL);
    axon_status_t st = arity == 1   ? axon_kernel_unary(k->s, (axon_unary_op_t)op, &to, &t[0], p)
                       : arity == 2 ? axon_kernel_binary(k->s, (axon_binary_op_t)op, &to, &t[0], &t[1], p)
                                    : axon_kernel_ternary(k->s, (axon_ternary_op_t)op, &to, &t[0], &t[1], &t[2], p);
    if (st == AXON_OK && !kc_download(k, out, dev_out, N * axon_dtype_size(out_dt))) st = AXON_ERROR_INTERNAL;
    for (int j = 0; j < arity; j++) axon_mem_free(k->dev, dev_in[j]);
    axon_mem_free(k->dev, dev_out);
    return st;
}

static const char *op_name(int arity, int op) {
    return arity == 1   ? axon_unary_op_name((axon_unary_op_t)op)
           : arity == 2 ? axon_binary_op_name((axon_binary_op_t)op)
                        : axon_ternary_op_name((axon_ternary_op_t)op);
}

static int op_supports(int arity, int op, axon_dtype_t d) {
    return arity == 1   ? axon_unary_supports((axon_unary_op_t)op, d)
           : arity == 2 ? axon_binary_supports((axon_binary_op_t)op, d)
                        : axon_ternary_supports((axon_ternary_op_t)op, d);
}

static enum gen_kind operand_kind(int arity, int op, int j, axon_dtype_t d) {
    if (!axon_dtype_is_integer(d) || j != 1 || arity != 2) return GEN_ANY;
    switch (op) {
    case AXON_BINARY_DIV_FLOOR:
    case AXON_BINARY_DIV_TRUNC:
    case AXON_BINARY_REMAINDER:
    case AXON_BINARY_FMOD: return GEN_NONZERO; /* division by zero has its own test */
    case AXON_BINARY_POW: return GEN_EXPONENT;
    case AXON_BINARY_SHIFT_LEFT:
    case AXON_BINARY_SHIFT_RIGHT: return GEN_SHIFT;
    default: return GEN_ANY;
    }
}

/* Check one supported (op, dtype) on N elements; returns the number of wrong elements (prints the first few). */
static int check_pair(const kc_dev_t *k, int arity, const op_case_t *c, axon_dtype_t d, const axon_op_params_t *p) {
    axon_dtype_t in_dt[3] = {d, d, d};
    if (arity == 3 && c->op == AXON_TERNARY_WHERE) in_dt[0] = AXON_BOOL;
    axon_dtype_t out_dt = c->bool_result ? AXON_BOOL : d;
    unsigned char in_buf[3][N * 8], out_buf[N * 8];
    void *in[3] = {in_buf[0], in_buf[1], in_buf[2]};
    for (int j = 0; j < arity; j++) make_operand(in_dt[j], in[j], j, arity, operand_kind(arity, c->op, j, d));
    axon_status_t st = run_op(k, arity, c->op, out_dt, out_buf, in_dt, in, p);
    if (st != AXON_OK) {
        fprintf(stderr, "  %s %s: %s (%s)\n", op_name(arity, c->op), axon_dtype_name(d), axon_status_name(st),
                axon_last_error());
        return N;
    }
    axon_dtype_t work = ref_is_half(d) ? AXON_FLOAT32 : d;
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const void *g = out_buf + (size_t)i * axon_dtype_size(out_dt);
        const void *e[3];
        for (int j = 0; j < arity; j++) e[j] = (const char *)in[j] + (size_t)i * axon_dtype_size(in_dt[j]);
        int ok;
        char desc[160];
        if (ref_is_float(d)) {
            long double x = arity == 3 && in_dt[0] == AXON_BOOL ? (long double)ref_load_i(AXON_BOOL, e[0])
                                                                : ref_load_f(d, e[0]);
            long double y = arity > 1 ? ref_load_f(d, e[1]) : 0, z = arity > 2 ? ref_load_f(d, e[2]) : 0;
            long double scale = fabsl(x), want = arity == 1   ? unary_ref_f(c->op, x, p)
                                                : arity == 2 ? binary_ref_f(c->op, x, y, p, d, work, &scale)
                                                             : ternary_ref_f(c->op, x, y, z, p, work, &scale);
            long double got = c->bool_result ? (long double)ref_load_i(AXON_BOOL, g) : ref_load_f(d, g);
            ok = c->bool_result ? got == want : close_enough(d, c->tol, got, want, scale, x);
            snprintf(desc, sizeof desc, "x=%.9Lg y=%.9Lg z=%.9Lg: got %.9Lg, want %.9Lg", x, y, z, got,
                     c->bool_result ? want : ref_round(d, want));
        } else {
            i128 x = ref_load_i(in_dt[0], e[0]), y = arity > 1 ? ref_load_i(d, e[1]) : 0;
            i128 z = arity > 2 ? ref_load_i(d, e[2]) : 0;
            i128 want = arity == 1   ? unary_ref_i(c->op, x, d, p)
                        : arity == 2 ? binary_ref_i(c->op, x, y, d, p)
                                     : ternary_ref_i(c->op, x, y, z, p);
            int64_t w = ref_wrap(out_dt, (int64_t)(uint64_t)(u128)want), got = ref_load_i(out_dt, g);
            ok = got == w;
            snprintf(desc, sizeof desc, "x=%" PRId64 " y=%" PRId64 " z=%" PRId64 ": got %" PRId64 ", want %" PRId64,
                     (int64_t)x, (int64_t)y, (int64_t)z, got, w);
        }
        if (!ok && bad++ < 3)
            fprintf(stderr, "  %s %s element %d: %s\n", op_name(arity, c->op), axon_dtype_name(d), i, desc);
    }
    return bad;
}

/* Every pair: supported ones against the reference, the others refused at launch with a message. */
static void check_family(int arity, const op_case_t *cases, int ncases, const axon_op_params_t *p) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    rng_state = 12345;
    for (int c = 0; c < ncases; c++) {
        for (int d = 0; d < NDT; d++) {
            int want = (cases[c].dtypes >> d) & 1;
            const char *name = op_name(arity, cases[c].op);
            if (op_supports(arity, cases[c].op, (axon_dtype_t)d) != want) {
                fprintf(stderr, "  %s %s: supports() says %d, expected %d\n", name, axon_dtype_name((axon_dtype_t)d),
                        !want, want);
                check_failures_in_test++;
                continue;
            }
            if (want) {
                if (((C >> d) & 1) == 0 && cases[c].tol != ELSEWHERE &&
                    check_pair(&k, arity, &cases[c], (axon_dtype_t)d, p) != 0)
                    check_failures_in_test++;
                continue;
            }
            axon_dtype_t in_dt[3] = {(axon_dtype_t)d, (axon_dtype_t)d, (axon_dtype_t)d};
            unsigned char zeros[3][N * 16], out[N * 16];
            memset(zeros, 0, sizeof zeros);
            void *in[3] = {zeros[0], zeros[1], zeros[2]};
            axon_clear_error();
            axon_status_t st = run_op(&k, arity, cases[c].op, (axon_dtype_t)d, out, in_dt, in, p);
            if (st != AXON_ERROR_UNSUPPORTED || !strstr(axon_last_error(), name) ||
                !strstr(axon_last_error(), axon_dtype_name((axon_dtype_t)d))) {
                fprintf(stderr, "  %s %s: launch gave %s (%s), expected UNSUPPORTED naming both\n", name,
                        axon_dtype_name((axon_dtype_t)d), axon_status_name(st), axon_last_error());
                check_failures_in_test++;
            }
        }
    }
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

static void test_every_unary_op_matches_the_reference(void) {
    axon_op_params_t p = axon_op_params_default();
    check_family(1, unary_cases, AXON_UNARY_COUNT, &p);
}

static void test_unary_ops_with_non_default_params(void) {
    axon_op_params_t p = axon_op_params_default();
    p.negative_slope = 0.2, p.elu_alpha = 1.6732632423543772, p.elu_scale = 1.0507009873554805; /* SELU */
    p.elu_input_scale = 0.5, p.beta = 2.0, p.threshold = 5.0, p.min_val = -5.0, p.max_val = 7.0;
    p.lambd = 1.5, p.logit_eps = 0.125, p.value = -2.0;
    const op_case_t cases[] = {
        {AXON_UNARY_LEAKY_RELU, F, ACT, 0}, {AXON_UNARY_ELU, F, ACT, 0},
        {AXON_UNARY_SOFTPLUS, F, ACT, 0},   {AXON_UNARY_HARDTANH, F | I, EXACT, 0},
        {AXON_UNARY_LOGIT, F, ACT, 0},      {AXON_UNARY_SOFTSHRINK, F, ROUND1, 0},
        {AXON_UNARY_HARDSHRINK, F, EXACT, 0}, {AXON_UNARY_THRESHOLD, F, EXACT, 0},
    };
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int d = 0; d < NDT; d++)
            if ((cases[c].dtypes >> d) & 1 && check_pair(&k, 1, &cases[c], (axon_dtype_t)d, &p) != 0)
                check_failures_in_test++;
    axon_runtime_destroy(k.rt);
}

static void test_every_binary_op_matches_the_reference(void) {
    axon_op_params_t p = axon_op_params_default();
    check_family(2, binary_cases, AXON_BINARY_COUNT, &p);
}

static void test_add_and_sub_scale_b_by_alpha(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const op_case_t cases[] = {{AXON_BINARY_ADD, F | I | B, ARITH, 0}, {AXON_BINARY_SUB, F | I, ARITH, 0}};
    axon_op_params_t pf = axon_op_params_default(), pi = axon_op_params_default();
    pf.alpha = axon_scalar_float(-0.3);
    pi.alpha = axon_scalar_int(3);
    for (int c = 0; c < 2; c++)
        for (int d = 0; d < NDT; d++) {
            if (!((cases[c].dtypes >> d) & 1)) continue;
            const axon_op_params_t *p = ref_is_float((axon_dtype_t)d) ? &pf : &pi;
            if (check_pair(&k, 2, &cases[c], (axon_dtype_t)d, p) != 0) check_failures_in_test++;
        }
    axon_runtime_destroy(k.rt);
}

static void test_backward_ops_with_non_default_params(void) {
    axon_op_params_t p = axon_op_params_default();
    p.negative_slope = 0.2, p.elu_alpha = 1.6732632423543772, p.elu_scale = 1.0507009873554805; /* SELU */
    p.elu_input_scale = 0.5, p.beta = 2.0, p.threshold = 0.0, p.min_val = -5.0, p.max_val = 7.0;
    p.lambd = 1.5, p.logit_eps = 0.125;
    const op_case_t cases[] = {
        {AXON_BINARY_LOGIT_BACKWARD, F, GRAD, 0}, {AXON_BINARY_SHRINK_BACKWARD, F, EXACT, 0},
        {AXON_BINARY_LEAKY_RELU_BACKWARD, F, ROUND1, 0}, {AXON_BINARY_ELU_BACKWARD, F, GRAD, 0},
        {AXON_BINARY_SOFTPLUS_BACKWARD, F, GRAD, 0},     {AXON_BINARY_HARDTANH_BACKWARD, F, EXACT, 0},
        {AXON_BINARY_THRESHOLD_BACKWARD, F, EXACT, 0}, /* relu's: threshold 0 */
    };
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    for (int is_result = 0; is_result < 2; is_result++) {
        p.elu_is_result = is_result; /* ELU_BACKWARD from the output (elu_, the in-place forward) too */
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (int d = 0; d < NDT; d++)
                if ((cases[c].dtypes >> d) & 1 && check_pair(&k, 2, &cases[c], (axon_dtype_t)d, &p) != 0)
                    check_failures_in_test++;
    }
    axon_runtime_destroy(k.rt);
}

static void test_every_ternary_op_matches_the_reference(void) {
    axon_op_params_t p = axon_op_params_default();
    check_family(3, ternary_cases, AXON_TERNARY_COUNT, &p);
    p.alpha = axon_scalar_int(-2); /* addcmul / addcdiv `value`, addr's alpha; an integer works for every dtype */
    const op_case_t cases[] = {{AXON_TERNARY_ADDCMUL, F | I, ARITH, 0}, {AXON_TERNARY_ADDCDIV, F, ARITH, 0},
                               {AXON_TERNARY_ADDR, F | I, ARITH, 0}};
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    for (int c = 0; c < 3; c++)
        for (int d = 0; d < NDT; d++)
            if ((cases[c].dtypes >> d) & 1 && check_pair(&k, 3, &cases[c], (axon_dtype_t)d, &p) != 0)
                check_failures_in_test++;
    for (double beta = 0; beta <= 3; beta += 3) { /* beta 0 drops a (its NaN and inf too); 3 scales it */
        p.beta = beta;
        for (int d = 0; d < NDT; d++)
            if ((cases[2].dtypes >> d) & 1 && check_pair(&k, 3, &cases[2], (axon_dtype_t)d, &p) != 0)
                check_failures_in_test++;
    }
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_unary_op_matches_the_reference);
    RUN(test_unary_ops_with_non_default_params);
    RUN(test_every_binary_op_matches_the_reference);
    RUN(test_add_and_sub_scale_b_by_alpha);
    RUN(test_backward_ops_with_non_default_params);
    RUN(test_every_ternary_op_matches_the_reference);
    return check_report();
}
