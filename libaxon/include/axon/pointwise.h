/* Pointwise kernels: unary, binary and ternary element-wise ops on tensors of one shape.
 *
 * Life cycle: fill an axon_op_params_t from axon_op_params_default() when the op takes parameters or a number
 * operand (NULL params means the defaults), then launch. Like every kernel (kernels.h), a launch checks its
 * descriptors on the calling thread, enqueues one command on stream s and returns at once; a tensor with no
 * elements enqueues nothing. Descriptors and params are copied at launch.
 *
 * Shapes: the caller broadcasts. Every tensor operand has out's ndim and sizes; its strides may be anything,
 * 0 included (a broadcast dimension). out must not have a stride of 0 on a dimension of size > 1. An input may be the
 * very same view as out (in-place); a contiguous input that partially overlaps a contiguous out is INVALID_ARG, other
 * partial overlaps give an unspecified result (as in PyTorch, which checks only dense tensors).
 *
 * Number operands: an operand passed as a NULL tensor pointer takes params->operand[k] (k = 0, 1, 2 for a, b, c)
 * instead, so `x + 2` needs no device memory. At least one input must be a tensor. A 0-stride tensor is the other way
 * to broadcast one element; the two differ only for float16/bfloat16 compute (below).
 *
 * Compute dtype: inputs are converted to the compute dtype when loaded (kernels.h's copy rules), the op runs in it,
 * and the result is converted to out's dtype when stored.
 *   - Arithmetic ops (every op not listed next): out's dtype, so the caller passes out in the promoted dtype
 *     (torch.result_type) and inputs of any dtype. params->compute overrides it, for PyTorch's `out=` of another
 *     dtype (e.g. compute int32, out float32: integer arithmetic, then a cast).
 *   - Ops with a bool result (comparisons, logical ops, ISNAN, ISINF, ISFINITE, LOGICAL_NOT): the inputs' dtype;
 *     tensor inputs of different dtypes need params->compute (their common dtype). out is normally bool, but any
 *     dtype is accepted (0 or 1 stored with the copy rules).
 *   - WHERE: out's dtype for a and b; the condition is read as bool (nonzero is true) whatever its dtype.
 * float16 and bfloat16 compute in float32 and round to nearest even once, on store. Their number operands and
 * params stay float32 (PyTorch's "opmath" scalars: bf16 x * 1.00390625 is not x * bf16(1.00390625)), except for the
 * bool-result ops, which compare against the number rounded to the compute dtype, as PyTorch does.
 * Complex compute (complex64, complex128) is defined for NEG, CONJ, ABS, ANGLE, SIGN (PyTorch's sgn: z / |z|),
 * RECIPROCAL, SQUARE, CUBE, RSQUARE, SQRT, RSQRT, EXP, EXP2, EXPM1, LOG, LOG1P, LOG2, LOG10, SINC, the trigonometric
 * and hyperbolic functions and their inverses, SIGMOID, SILU, ISNAN, LOGICAL_NOT; ADD, SUB (alpha may be complex),
 * MUL, DIV, POW, EQ, NE, the logical ops, SIGMOID_BACKWARD and TANH_BACKWARD; WHERE, ADDCMUL, ADDCDIV, LERP. ABS and
 * ANGLE of a complex input compute in its dtype (unless params->compute says otherwise) and store the real dtype
 * (float32 for complex64). Number operands and alpha may be AXON_COMPLEX128 scalars where the compute dtype is
 * complex. Integer arithmetic wraps (two's complement, no undefined behaviour): INT_MIN / -1 is INT_MIN, where
 * PyTorch's CPU kernel dies of SIGFPE.
 *
 * Errors at launch: INVALID_ARG for bad descriptors, mismatched shapes (the message names the op, the dtypes and
 * both shapes), an out-of-range op, a missing number operand; UNSUPPORTED for an (op, compute dtype) pair the op
 * does not define, e.g. BITWISE_AND on float or SIN on an integer compute dtype (the message names both).
 * Errors while running: integer DIV_FLOOR, DIV_TRUNC, REMAINDER and FMOD by zero make the command fail with
 * INVALID_ARG and "ZeroDivisionError" in its message, reported at the stream's next synchronization (PyTorch raises
 * ZeroDivisionError there); out's contents are then unspecified. */
#ifndef AXON_POINTWISE_H
#define AXON_POINTWISE_H

#include <math.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Unary ops: out = f(a). Append only; the name table is checked against the count. Floating-only ops are
 * UNSUPPORTED for integer and bool compute dtypes: pass a floating out (the integer input converts on load). */
typedef enum axon_unary_op {
    AXON_UNARY_NEG = 0,          /* ints and floats */
    AXON_UNARY_ABS,              /* ints and floats; abs(INT_MIN) wraps to INT_MIN */
    AXON_UNARY_SIGN,             /* all real dtypes; sign(NaN) = 0, as in PyTorch */
    AXON_UNARY_RECIPROCAL,       /* floats */
    AXON_UNARY_SQRT,
    AXON_UNARY_RSQRT,
    AXON_UNARY_EXP,
    AXON_UNARY_EXP2,
    AXON_UNARY_EXPM1,
    AXON_UNARY_LOG,
    AXON_UNARY_LOG2,
    AXON_UNARY_LOG10,
    AXON_UNARY_LOG1P,
    AXON_UNARY_SIN,
    AXON_UNARY_COS,
    AXON_UNARY_TAN,
    AXON_UNARY_ASIN,
    AXON_UNARY_ACOS,
    AXON_UNARY_ATAN,
    AXON_UNARY_SINH,
    AXON_UNARY_COSH,
    AXON_UNARY_TANH,
    AXON_UNARY_ASINH,
    AXON_UNARY_ACOSH,
    AXON_UNARY_ATANH,
    AXON_UNARY_ERF,
    AXON_UNARY_ERFC,
    AXON_UNARY_SIGMOID,          /* 1 / (1 + exp(-x)) */
    AXON_UNARY_RELU,             /* ints and floats; NaN stays NaN */
    AXON_UNARY_GELU,             /* x/2 (1 + erf(x / sqrt 2)) */
    AXON_UNARY_GELU_TANH,        /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    AXON_UNARY_SILU,             /* x / (1 + exp(-x)) */
    AXON_UNARY_MISH,             /* x tanh(log1p(exp(x))) */
    AXON_UNARY_SOFTPLUS,         /* x beta > threshold ? x : log1p(exp(x beta)) / beta */
    AXON_UNARY_HARDSIGMOID,      /* min(max(x + 3, 0), 6) / 6 */
    AXON_UNARY_HARDSWISH,        /* x min(max(x + 3, 0), 6) / 6 */
    AXON_UNARY_HARDTANH,         /* min(max(x, min_val), max_val); ints and floats, NaN stays NaN */
    AXON_UNARY_LEAKY_RELU,       /* x > 0 ? x : x negative_slope */
    AXON_UNARY_ELU,              /* x > 0 ? x scale : expm1(x input_scale) alpha scale (SELU, CELU: other params) */
    AXON_UNARY_FLOOR,            /* floats; identity on ints */
    AXON_UNARY_CEIL,
    AXON_UNARY_ROUND,            /* half to even */
    AXON_UNARY_TRUNC,
    AXON_UNARY_FRAC,             /* x - trunc(x); floats */
    AXON_UNARY_LOGICAL_NOT,      /* bool result */
    AXON_UNARY_BITWISE_NOT,      /* ints and bool */
    AXON_UNARY_ISNAN,            /* bool result; false for ints and bool */
    AXON_UNARY_ISINF,
    AXON_UNARY_ISFINITE,
    AXON_UNARY_SQUARE,           /* ints and floats */
    /* Appended with batch norm's activation set; floats only, PyTorch's CPU formulas term by term. */
    AXON_UNARY_LOG_SIGMOID,      /* min(x, 0) - log1p(exp(-|x|)): no overflow for large |x| */
    AXON_UNARY_LOGIT,            /* log(z / (1 - z)), z = x clamped to [logit_eps, 1 - logit_eps] when eps >= 0 */
    AXON_UNARY_SOFTSHRINK,       /* x > lambd ? x - lambd : x < -lambd ? x + lambd : x * 0 (NaN stays NaN) */
    AXON_UNARY_HARDSHRINK,       /* -lambd <= x <= lambd ? 0 : x */
    AXON_UNARY_THRESHOLD,        /* x <= threshold ? value : x */
    AXON_UNARY_ISPOSINF,         /* bool result; x == +inf (false for ints and bool) */
    AXON_UNARY_ISNEGINF,         /* bool result; x == -inf */
    AXON_UNARY_SIGNBIT,          /* bool result; the sign bit (true for -0.0 and negative NaN), x < 0 for ints */
    /* Appended for pow by a constant: PyTorch's CPU kernel computes these exponents without pow. Floats only. */
    AXON_UNARY_CUBE,             /* x * x * x */
    AXON_UNARY_RSQUARE,          /* 1 / (x * x) */
    AXON_UNARY_CONJ,             /* conj_physical: (re, -im) for complex; x itself for the real dtypes */
    /* Special functions, floats only (computed in float64 and rounded once). */
    AXON_UNARY_LGAMMA,           /* log |gamma(x)| */
    AXON_UNARY_DIGAMMA,          /* psi(x) = d/dx lgamma(x); -+inf at +-0, NaN at negative integers */
    AXON_UNARY_POLYGAMMA,        /* the polygamma_n-th derivative of digamma (polygamma_n >= 0) */
    /* torch.special's Bessel and normal-distribution functions (kernels/special_bessel*, special_erf.h), computed
     * in float64 and rounded once. Those PyTorch CPU defines for float32 and float64 only are only those here; the
     * ones it also defines for the half types (I0, I0E, I1, I1E, ENTR, SINC) take every float dtype. */
    AXON_UNARY_BESSEL_J0,
    AXON_UNARY_BESSEL_J1,
    AXON_UNARY_BESSEL_Y0,        /* -inf at 0, NaN below */
    AXON_UNARY_BESSEL_Y1,
    AXON_UNARY_MODIFIED_BESSEL_I0,
    AXON_UNARY_MODIFIED_BESSEL_I1,
    AXON_UNARY_MODIFIED_BESSEL_K0, /* inf at 0, NaN below */
    AXON_UNARY_MODIFIED_BESSEL_K1,
    AXON_UNARY_SCALED_MODIFIED_BESSEL_K0, /* e^x K0(x) */
    AXON_UNARY_SCALED_MODIFIED_BESSEL_K1,
    AXON_UNARY_I0,               /* I0 for every float dtype (torch.i0) */
    AXON_UNARY_I0E,              /* e^-|x| I0(x) */
    AXON_UNARY_I1,
    AXON_UNARY_I1E,
    AXON_UNARY_SPHERICAL_BESSEL_J0, /* sin(x) / x */
    AXON_UNARY_ERFCX,            /* e^(x^2) erfc(x) */
    AXON_UNARY_LOG_NDTR,         /* log of the standard normal CDF */
    AXON_UNARY_NDTRI,            /* its inverse: -inf at 0, inf at 1, NaN outside [0, 1] */
    AXON_UNARY_ENTR,             /* -x log x; 0 at 0, -inf below */
    AXON_UNARY_SINC,             /* sin(pi x) / (pi x); 1 at 0 */
    /* Appended with op_db's remaining pointwise ops. */
    AXON_UNARY_ERFINV,           /* the inverse of erf: +-inf at +-1, NaN outside [-1, 1]; floats, in float64 */
    AXON_UNARY_NAN_TO_NUM,       /* NaN, +inf and -inf replaced by nan_value, posinf_value and neginf_value (in the
                                    compute dtype); floats, and the identity for ints and bool */
    AXON_UNARY_ROUND_DECIMALS,   /* x rounded half to even at `decimals` places, PyTorch's formula: rint(x t) / t
                                    for decimals >= 0, rint(x / t) t below, t = 10^|decimals| in the work type */
    AXON_UNARY_ANGLE,            /* the argument of a real x: pi for x < 0, else 0; NaN stays NaN. Floats */
    AXON_UNARY_FREXP_MANTISSA,   /* m of x = m 2^e with 0.5 <= |m| < 1 (C's frexp); 0, inf and NaN stay. Floats */
    AXON_UNARY_FREXP_EXPONENT,   /* e of that, as a number of the compute dtype (0 for 0, inf and NaN): pass a
                                    floating params->compute and an int32 out for torch.frexp. Floats */
    AXON_UNARY_RENORM_FACTOR,    /* x > maxnorm ? maxnorm / (x + 1e-7) : 1 in the work type: torch.renorm's scale of
                                    a sub-tensor of norm x. Floats */
    AXON_UNARY_AIRY_AI,          /* the Airy function Ai; NaN at +-inf, as PyTorch CPU. Floats, in float64 */
    AXON_UNARY_COUNT
} axon_unary_op_t;

/* Binary ops: out = f(a, b). Append only. */
typedef enum axon_binary_op {
    AXON_BINARY_ADD = 0,         /* a + alpha b; bool: a | (alpha & b) */
    AXON_BINARY_SUB,             /* a - alpha b; ints and floats */
    AXON_BINARY_MUL,             /* bool: a & b */
    AXON_BINARY_DIV,             /* true division; floats (pass a floating out for integer inputs) */
    AXON_BINARY_DIV_FLOOR,       /* ints and floats; floats follow PyTorch's div_floor (x/0 = +-inf or NaN) */
    AXON_BINARY_DIV_TRUNC,
    AXON_BINARY_REMAINDER,       /* Python's %: the sign of the divisor */
    AXON_BINARY_FMOD,            /* C's fmod: the sign of the dividend */
    AXON_BINARY_POW,             /* ints: negative exponents give 0 except for bases 1 and -1, as in PyTorch */
    AXON_BINARY_ATAN2,           /* floats */
    AXON_BINARY_MAXIMUM,         /* all real dtypes; a NaN in either input gives NaN */
    AXON_BINARY_MINIMUM,
    AXON_BINARY_FMAX,            /* a NaN is ignored unless both are NaN */
    AXON_BINARY_FMIN,
    AXON_BINARY_EQ,              /* bool result; all real dtypes */
    AXON_BINARY_NE,
    AXON_BINARY_LT,
    AXON_BINARY_LE,
    AXON_BINARY_GT,
    AXON_BINARY_GE,
    AXON_BINARY_LOGICAL_AND,     /* bool result; nonzero (NaN included) is true */
    AXON_BINARY_LOGICAL_OR,
    AXON_BINARY_LOGICAL_XOR,
    AXON_BINARY_BITWISE_AND,     /* ints and bool */
    AXON_BINARY_BITWISE_OR,
    AXON_BINARY_BITWISE_XOR,
    AXON_BINARY_SHIFT_LEFT,      /* ints; a shift < 0 or >= the bit width gives 0 (PyTorch's rule) */
    AXON_BINARY_SHIFT_RIGHT,     /* ints; arithmetic for signed; out-of-range shifts fill with the sign bit */
    AXON_BINARY_HYPOT,           /* floats */
    AXON_BINARY_COPYSIGN,        /* floats */
    AXON_BINARY_XLOGY,           /* floats: NaN if b is NaN, else 0 if a == 0, else a log(b) */
    /* Activation backward ops: a is the incoming gradient g, b the forward's input x (or its output y where
     * noted); the result is the gradient with respect to the input. Floats only. Each follows PyTorch's CPU
     * formula term by term, so NaN, infinities and cancellation come out as they do there. */
    AXON_BINARY_GELU_BACKWARD,        /* g (cdf + x pdf), cdf = (1 + erf(x/sqrt 2))/2, pdf = exp(-x^2/2)/sqrt(2pi) */
    AXON_BINARY_GELU_TANH_BACKWARD,   /* g (d/dx of GELU_TANH), as left' + left tanh' inner' with left = x/2 */
    AXON_BINARY_SILU_BACKWARD,        /* g s (1 + x (1 - s)), s = sigmoid(x) */
    AXON_BINARY_MISH_BACKWARD,        /* g (t + x s (1 - t^2)), t = tanh(softplus(x)), s = sigmoid(x) */
    AXON_BINARY_SIGMOID_BACKWARD,     /* b is the output y: g (1 - y) y */
    AXON_BINARY_TANH_BACKWARD,        /* b is the output y: g (1 - y^2) */
    AXON_BINARY_THRESHOLD_BACKWARD,   /* x <= threshold ? 0 : g (relu's backward with threshold 0); NaN x passes g */
    AXON_BINARY_HARDTANH_BACKWARD,    /* min_val < x < max_val ? g : 0 (NaN x gives 0) */
    AXON_BINARY_LEAKY_RELU_BACKWARD,  /* x > 0 ? g : g negative_slope (x may be the output: same sign) */
    AXON_BINARY_ELU_BACKWARD,         /* elu_is_result == 0: x > 0 ? g scale
                                         : g input_scale alpha scale exp(x input_scale); elu_is_result != 0, b is
                                         the output y: y > 0 ? g scale : g input_scale (y + alpha scale) */
    AXON_BINARY_SOFTPLUS_BACKWARD,    /* x beta > threshold ? g : g z / (z + 1), z = exp(x beta) */
    AXON_BINARY_HARDSWISH_BACKWARD,   /* x <= -3 ? 0 : x >= 3 ? g : g (x / 3 + 1/2) (NaN x gives NaN) */
    AXON_BINARY_HARDSIGMOID_BACKWARD, /* -3 < x < 3 ? g (1/6 rounded to float) : 0 */
    /* Appended with batch norm's activation set; floats only. */
    AXON_BINARY_LOG_SIGMOID_BACKWARD, /* g (m - s z / (1 + z)), z = exp(-|x|), m, s = 1, 1 for x < 0 else 0, -1 */
    AXON_BINARY_LOGIT_BACKWARD,       /* eps < 0: x outside [0, 1] ? NaN : g / (x (1 - x)); eps >= 0: 0 outside
                                         [logit_eps, 1 - logit_eps] */
    AXON_BINARY_SHRINK_BACKWARD,      /* -lambd <= x <= lambd ? 0 : g (softshrink and hardshrink) */
    AXON_BINARY_GLU,                  /* a sigmoid(b): glu of the two halves, and the first half of its backward */
    AXON_BINARY_PRELU,                /* a > 0 ? a : b a, b the (broadcast) weight */
    AXON_BINARY_PRELU_BACKWARD_WEIGHT, /* b > 0 ? 0 : b g, b the input: per-element weight gradient */
    AXON_BINARY_ZETA,                 /* Hurwitz zeta(a, b) = sum_k (b + k)^-a; floats only */
    /* The orthogonal polynomials of torch.special (kernels/special_poly.h): P_n(a) of degree n = b truncated to an
     * integer, 0 for n < 0. float32 and float64 only, computed in float64 and rounded once. */
    AXON_BINARY_CHEBYSHEV_T,
    AXON_BINARY_CHEBYSHEV_U,
    AXON_BINARY_CHEBYSHEV_V,
    AXON_BINARY_CHEBYSHEV_W,
    AXON_BINARY_SHIFTED_CHEBYSHEV_T,  /* P_n(2a - 1) */
    AXON_BINARY_SHIFTED_CHEBYSHEV_U,
    AXON_BINARY_SHIFTED_CHEBYSHEV_V,
    AXON_BINARY_SHIFTED_CHEBYSHEV_W,
    AXON_BINARY_HERMITE_H,            /* physicists' */
    AXON_BINARY_HERMITE_HE,           /* probabilists' */
    AXON_BINARY_LAGUERRE_L,
    AXON_BINARY_LEGENDRE_P,
    AXON_BINARY_XLOG1PY,              /* a log1p(b); 0 where a == 0 unless b is NaN. Floats */
    AXON_BINARY_LOGADDEXP,            /* log(e^a + e^b) as max + log1p(e^-|a - b|); a where a == b is infinite */
    AXON_BINARY_LOGADDEXP2,           /* log2(2^a + 2^b), the same way */
    AXON_BINARY_HEAVISIDE,            /* a == 0 ? b : a > 0; every real dtype (NaN a gives 0) */
    /* Appended with op_db's remaining pointwise ops. */
    AXON_BINARY_NEXTAFTER,            /* the next value after a towards b; float32 and float64 */
    AXON_BINARY_GCD,                  /* ints: the greatest common divisor of |a| and |b| (Euclid; 0 for 0 and 0) */
    AXON_BINARY_LCM,                  /* ints: |a / gcd(a, b) * b|, 0 when the gcd is 0 */
    AXON_BINARY_IGAMMA,               /* the regularized lower incomplete gamma function P(a, b); floats, in float64 */
    AXON_BINARY_IGAMMAC,              /* the upper one, Q(a, b) = 1 - P(a, b) */
    AXON_BINARY_COUNT
} axon_binary_op_t;

/* Ternary ops: out = f(a, b, c). Append only. */
typedef enum axon_ternary_op {
    AXON_TERNARY_WHERE = 0,      /* a ? b : c; a is read as bool; all real dtypes */
    AXON_TERNARY_LERP,           /* a + c (b - a), c the weight; floats; PyTorch's two-sided formula for |c| >= 0.5 */
    AXON_TERNARY_ADDCMUL,        /* a + alpha b c; ints and floats */
    AXON_TERNARY_ADDCDIV,        /* a + alpha b / c; floats */
    AXON_TERNARY_CLAMP,          /* min(max(a, b), c); ints and floats; NaN in any input gives NaN. One-sided clamps
                                    are MAXIMUM (clamp_min) and MINIMUM (clamp_max). */
    /* Appended with batch norm's activation set; floats only. */
    AXON_TERNARY_GLU_BACKWARD,   /* a the gradient, b the first half, c the second: a b s (1 - s), s = sigmoid(c) */
    AXON_TERNARY_PRELU_BACKWARD, /* a the gradient, b the input, c the weight: b > 0 ? a : c a */
    AXON_TERNARY_ADDR,           /* beta a + alpha b c (torch.addr over broadcast operands); beta 0 ignores a, NaN
                                    included. Floats and ints (integer compute: an integer alpha and beta) */
    AXON_TERNARY_COUNT
} axon_ternary_op_t;

/* Parameters and number operands. Start from axon_op_params_default(): zero is not a valid value for every field. */
typedef struct axon_op_params {
    axon_dtype_t compute;        /* AXON_DTYPE_COUNT: the rule above; else the compute dtype to use */
    axon_scalar_t alpha;         /* ADD, SUB: b's multiplier; ADDCMUL, ADDCDIV: `value`. Default 1. Integer and
                                    bool compute dtypes need an INT64 or BOOL alpha (PyTorch refuses a float one) */
    double negative_slope;       /* LEAKY_RELU: 0.01 */
    double elu_alpha, elu_scale, elu_input_scale;  /* ELU: 1, 1, 1 */
    double beta, threshold;      /* SOFTPLUS: 1, 20; ADDR reads beta too */
    double min_val, max_val;     /* HARDTANH: -1, 1 (converted to integer compute dtypes with the copy rules) */
    axon_scalar_t operand[3];    /* values of operands passed as NULL tensors; FLOAT64, INT64 or BOOL */
    /* Appended with the backward ops. negative_slope, elu_*, beta, threshold and min_val/max_val above serve the
     * backward ops of the same activations too. THRESHOLD_BACKWARD reads `threshold` as well, so set it: its
     * default 20 is softplus's, relu's is 0. */
    int elu_is_result;           /* ELU_BACKWARD: 0 (b is the forward's input); nonzero: b is its output */
    /* Appended with batch norm's activation set. THRESHOLD reads `threshold` above too: set it (default 20). */
    double lambd;                /* SOFTSHRINK, HARDSHRINK, SHRINK_BACKWARD: 0.5 */
    double logit_eps;            /* LOGIT, LOGIT_BACKWARD: -1 (negative: no clamping) */
    double value;                /* THRESHOLD: 0 */
    int64_t polygamma_n;         /* POLYGAMMA: the order, >= 0 (INVALID_ARG otherwise). Default 0 */
    /* Appended with op_db's remaining pointwise ops. */
    double nan_value, posinf_value, neginf_value; /* NAN_TO_NUM: 0, +inf, -inf (so infinities stay; PyTorch's
                                    defaults are the compute dtype's largest finite values, which the caller sets) */
    int64_t decimals;            /* ROUND_DECIMALS: 0 */
    double maxnorm;              /* RENORM_FACTOR: 1 */
} axon_op_params_t;

static inline axon_op_params_t axon_op_params_default(void) {
    axon_op_params_t p;
    p.compute = AXON_DTYPE_COUNT;
    p.alpha = axon_scalar_int(1);
    p.negative_slope = 0.01;
    p.elu_alpha = 1.0, p.elu_scale = 1.0, p.elu_input_scale = 1.0;
    p.beta = 1.0, p.threshold = 20.0;
    p.min_val = -1.0, p.max_val = 1.0;
    for (int k = 0; k < 3; k++) p.operand[k] = axon_scalar_int(0);
    p.elu_is_result = 0;
    p.lambd = 0.5, p.logit_eps = -1.0, p.value = 0.0;
    p.polygamma_n = 0;
    p.nan_value = 0.0, p.posinf_value = HUGE_VAL, p.neginf_value = -HUGE_VAL;
    p.decimals = 0;
    p.maxnorm = 1.0;
    return p;
}

/* The unary op that computes pow(x, exponent) for a floating x the way PyTorch's CPU kernel does, for the exponents
 * it special-cases (2, 3, 0.5, -0.5, -1, -2); 0 for any other exponent (use AXON_BINARY_POW). Cannot fail. */
AXON_API int axon_pow_scalar_unary(double exponent, axon_unary_op_t *op);

/* Static lower-case names ("gelu_tanh", "div_floor"); "invalid" for values outside the enums. Never NULL. */
AXON_API const char *axon_unary_op_name(axon_unary_op_t op);
AXON_API const char *axon_binary_op_name(axon_binary_op_t op);
AXON_API const char *axon_ternary_op_name(axon_ternary_op_t op);

/* 1 if the op is defined for compute dtype d (the dtype the launch would pick or params->compute), else 0.
 * Lets the glue choose a fallback without formatting an error. Cannot fail. */
AXON_API int axon_unary_supports(axon_unary_op_t op, axon_dtype_t d);
AXON_API int axon_binary_supports(axon_binary_op_t op, axon_dtype_t d);
AXON_API int axon_ternary_supports(axon_ternary_op_t op, axon_dtype_t d);

/* Enqueue out = op(a) on s. params may be NULL (defaults). Errors are listed above; nothing is enqueued on error. */
AXON_API axon_status_t axon_kernel_unary(axon_stream_t s, axon_unary_op_t op, const axon_tensor_t *out,
                                         const axon_tensor_t *a, const axon_op_params_t *params);

/* Enqueue out = op(a, b) on s. a or b may be NULL to take params->operand[0] or [1]. */
AXON_API axon_status_t axon_kernel_binary(axon_stream_t s, axon_binary_op_t op, const axon_tensor_t *out,
                                          const axon_tensor_t *a, const axon_tensor_t *b,
                                          const axon_op_params_t *params);

/* Enqueue out = op(a, b, c) on s. Any one or two of a, b, c may be NULL to take params->operand[k]. */
AXON_API axon_status_t axon_kernel_ternary(axon_stream_t s, axon_ternary_op_t op, const axon_tensor_t *out,
                                           const axon_tensor_t *a, const axon_tensor_t *b, const axon_tensor_t *c,
                                           const axon_op_params_t *params);

AXON_EXTERN_C_END

#endif
