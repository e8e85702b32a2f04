/* The pointwise launches (axon/pointwise.h): op names, argument checks, and the host-side decisions (compute dtype,
 * loop, parameters and numbers converted to the work type) that go into the argument block, so the executor
 * (pointwise_exec.c) only runs what was decided here. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "kernels_impl.h"
#include "pointwise_impl.h"

static const char *const unary_names[] = {
    "neg",   "abs",   "sign",  "reciprocal", "sqrt",      "rsqrt",       "exp",         "exp2",       "expm1",
    "log",   "log2",  "log10", "log1p",      "sin",       "cos",         "tan",         "asin",       "acos",
    "atan",  "sinh",  "cosh",  "tanh",       "asinh",     "acosh",       "atanh",       "erf",        "erfc",
    "sigmoid", "relu", "gelu", "gelu_tanh",  "silu",      "mish",        "softplus",    "hardsigmoid", "hardswish",
    "hardtanh", "leaky_relu", "elu", "floor", "ceil",     "round",       "trunc",       "frac",       "logical_not",
    "bitwise_not", "isnan", "isinf", "isfinite", "square", "log_sigmoid", "logit", "softshrink", "hardshrink",
    "threshold", "isposinf", "isneginf", "signbit", "cube", "rsquare", "conj", "lgamma", "digamma", "polygamma",
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "i0", "i0e",
    "i1", "i1e", "spherical_bessel_j0", "erfcx", "log_ndtr", "ndtri", "entr", "sinc", "erfinv", "nan_to_num",
    "round_decimals", "angle", "frexp_mantissa", "frexp_exponent", "renorm_factor", "airy_ai",
};
_Static_assert(sizeof unary_names / sizeof unary_names[0] == AXON_UNARY_COUNT, "every axon_unary_op_t needs a name");

static const char *const binary_names[] = {
    "add",         "sub",        "mul",         "div",         "div_floor",   "div_trunc",  "remainder", "fmod",
    "pow",         "atan2",      "maximum",     "minimum",     "fmax",        "fmin",       "eq",        "ne",
    "lt",          "le",         "gt",          "ge",          "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",  "shift_right", "hypot",      "copysign",  "xlogy",
    "gelu_backward", "gelu_tanh_backward", "silu_backward", "mish_backward", "sigmoid_backward", "tanh_backward",
    "threshold_backward", "hardtanh_backward", "leaky_relu_backward", "elu_backward", "softplus_backward",
    "hardswish_backward", "hardsigmoid_backward", "log_sigmoid_backward", "logit_backward", "shrink_backward", "glu",
    "prelu", "prelu_backward_weight", "zeta", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p", "xlog1py",
    "logaddexp", "logaddexp2", "heaviside", "nextafter", "gcd", "lcm", "igamma", "igammac",
};
_Static_assert(sizeof binary_names / sizeof binary_names[0] == AXON_BINARY_COUNT,
               "every axon_binary_op_t needs a name");

static const char *const ternary_names[] = {"where", "lerp", "addcmul", "addcdiv", "clamp", "glu_backward",
                                            "prelu_backward", "addr"};
_Static_assert(sizeof ternary_names / sizeof ternary_names[0] == AXON_TERNARY_COUNT,
               "every axon_ternary_op_t needs a name");

int axon_pow_scalar_unary(double exponent, axon_unary_op_t *op) {
    if (exponent == 2.0) *op = AXON_UNARY_SQUARE;
    else if (exponent == 3.0) *op = AXON_UNARY_CUBE;
    else if (exponent == 0.5) *op = AXON_UNARY_SQRT;
    else if (exponent == -0.5) *op = AXON_UNARY_RSQRT;
    else if (exponent == -1.0) *op = AXON_UNARY_RECIPROCAL;
    else if (exponent == -2.0) *op = AXON_UNARY_RSQUARE;
    else return 0;
    return 1;
}

const char *axon_unary_op_name(axon_unary_op_t op) {
    return (unsigned)op < AXON_UNARY_COUNT ? unary_names[op] : "invalid";
}

const char *axon_binary_op_name(axon_binary_op_t op) {
    return (unsigned)op < AXON_BINARY_COUNT ? binary_names[op] : "invalid";
}

const char *axon_ternary_op_name(axon_ternary_op_t op) {
    return (unsigned)op < AXON_TERNARY_COUNT ? ternary_names[op] : "invalid";
}

/* The loop of an op's table rows (real, complex) for compute dtype d; NULL where the op is not defined for d. */
static pw_loop_fn pw_loop_of(const pw_loop_fn *real, const pw_loop_fn *complex, axon_dtype_t d) {
    if ((unsigned)d >= AXON_DTYPE_COUNT) return NULL;
    int column = PW_COMPLEX_COLUMN(d);
    return column >= 0 ? complex[column] : real[d];
}

int axon_unary_supports(axon_unary_op_t op, axon_dtype_t d) {
    return (unsigned)op < AXON_UNARY_COUNT &&
           pw_loop_of(axon_pw_unary_loops[op], axon_pw_unary_complex_loops[op], d) != NULL;
}

int axon_binary_supports(axon_binary_op_t op, axon_dtype_t d) {
    return (unsigned)op < AXON_BINARY_COUNT &&
           pw_loop_of(axon_pw_binary_loops[op], axon_pw_binary_complex_loops[op], d) != NULL;
}

int axon_ternary_supports(axon_ternary_op_t op, axon_dtype_t d) {
    return (unsigned)op < AXON_TERNARY_COUNT &&
           pw_loop_of(axon_pw_ternary_loops[op], axon_pw_ternary_complex_loops[op], d) != NULL;
}

/* ---- what a launch is ---- */

enum pw_flags {
    PW_BOOL_RESULT = 1u << 0,    /* compute dtype from the inputs; the loop stores bool */
    PW_COND_FIRST = 1u << 1,     /* operand a is a condition, loaded as bool (WHERE) */
    PW_ALPHA = 1u << 2,          /* params->alpha goes to slot 0 */
    PW_REAL_OF_COMPLEX = 1u << 3, /* a complex compute dtype stores its real dtype (ABS, ANGLE) */
};

typedef struct pw_op {
    int arity;
    int op;
    const char *name;
    const pw_loop_fn *loops;     /* the op's row of its table */
    const pw_loop_fn *complex_loops; /* and of its complex table */
    unsigned flags;
} pw_op_t;

static const char *const operand_names[3] = {"a", "b", "c"};

/* "out float32 [2, 3], a int32 [2, 3], b 2.5" into buf, for messages. */
static const char *pw_describe(char *buf, size_t n, const axon_tensor_t *out, const axon_tensor_t *const *ins,
                               int arity, const axon_op_params_t *p) {
    char shape[160];
    size_t used = (size_t)snprintf(buf, n, "out %s %s", axon_dtype_name(out->dtype),
                                   axon_shape_format(out, shape, sizeof shape));
    for (int k = 0; k < arity && used < n; k++) {
        if (ins[k]) {
            used += (size_t)snprintf(buf + used, n - used, ", %s %s %s", operand_names[k],
                                     axon_dtype_name(ins[k]->dtype), axon_shape_format(ins[k], shape, sizeof shape));
        } else if (p->operand[k].dtype == AXON_FLOAT64) {
            used += (size_t)snprintf(buf + used, n - used, ", %s %g", operand_names[k], p->operand[k].f);
        } else if (p->operand[k].dtype == AXON_COMPLEX128) {
            used += (size_t)snprintf(buf + used, n - used, ", %s %g%+gj", operand_names[k], p->operand[k].f,
                                     p->operand[k].imag);
        } else {
            used += (size_t)snprintf(buf + used, n - used, ", %s %" PRId64, operand_names[k], p->operand[k].i);
        }
    }
    return buf;
}

/* 1 if two contiguous tensors (the caller knows they are) of n elements each share memory without being the same
 * elements. Like PyTorch, only dense layouts are checked; in-place (same start, same element size) is allowed. */
static int pw_partial_overlap(const axon_tensor_t *out, const axon_tensor_t *in, int64_t n) {
    size_t os = axon_dtype_size(out->dtype), is = axon_dtype_size(in->dtype);
    uintptr_t o0 = (uintptr_t)out->data, o1 = o0 + (uintptr_t)n * os;
    uintptr_t i0 = (uintptr_t)in->data, i1 = i0 + (uintptr_t)n * is;
    if (o0 >= i1 || i0 >= o1) return 0;
    return !(o0 == i0 && os == is);
}

static void pw_slot(pw_ctx_t *c, int k, double f, int64_t i) {
    c->pf[k] = (float)f;
    c->pd[k] = f;
    c->pi[k] = i;
}

/* A number as a complex pair (an imaginary part only for a complex scalar). */
static axon_c128_t pw_complex_of(axon_scalar_t v) {
    axon_c128_t z = {v.dtype == AXON_FLOAT64 || v.dtype == AXON_COMPLEX128 ? v.f
                     : v.dtype == AXON_BOOL                               ? (double)(v.i != 0)
                                                                          : (double)v.i,
                     v.dtype == AXON_COMPLEX128 ? v.imag : 0.0};
    return z;
}

/* alpha in slot 0: a float for floating compute, a pair for complex; integer and bool compute need an integer
 * (PyTorch refuses a float alpha there), and bool keeps only alpha != 0. */
static axon_status_t pw_alpha(const pw_op_t *op, axon_scalar_t v, axon_dtype_t compute, pw_ctx_t *c) {
    if (PW_COMPLEX_COLUMN(compute) >= 0 && (v.dtype == AXON_FLOAT64 || v.dtype == AXON_INT64 ||
                                            v.dtype == AXON_BOOL || v.dtype == AXON_COMPLEX128)) {
        c->pc128 = pw_complex_of(v);
        c->pc64.re = (float)c->pc128.re, c->pc64.im = (float)c->pc128.im;
        return AXON_OK;
    }
    if (v.dtype == AXON_COMPLEX128)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: alpha is complex, but the compute dtype %s is not", op->name,
                         axon_dtype_name(compute));
    if (v.dtype != AXON_FLOAT64 && v.dtype != AXON_INT64 && v.dtype != AXON_BOOL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: alpha has dtype %s; expected float64, int64, bool or complex128",
                         op->name, axon_dtype_name(v.dtype));
    if (axon_dtype_is_floating(compute)) {
        double alpha = v.dtype == AXON_FLOAT64 ? v.f : (double)(v.dtype == AXON_BOOL ? v.i != 0 : v.i);
        /* PyTorch's CPU loops take alpha in the tensors' dtype (then compute in float): 0.7 is 0.7001953125 in
         * float16 */
        if (compute == AXON_FLOAT16 || compute == AXON_BFLOAT16) alpha = axon_round_to(compute, alpha);
        pw_slot(c, 0, alpha, 0);
        return AXON_OK;
    }
    if (v.dtype == AXON_FLOAT64)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: alpha %g is a float, but the compute dtype %s is not floating",
                         op->name, v.f, axon_dtype_name(compute));
    int64_t i = compute == AXON_BOOL || v.dtype == AXON_BOOL ? v.i != 0 : v.i;
    pw_slot(c, 0, (double)i, i);
    return AXON_OK;
}

/* The unary ops' parameters into their slots (see the expressions in pointwise_unary.c). */
static void pw_unary_params(axon_unary_op_t op, const axon_op_params_t *p, pw_ctx_t *c) {
    switch (op) {
    case AXON_UNARY_SOFTPLUS:
        pw_slot(c, 0, p->beta, 0);
        pw_slot(c, 1, p->threshold, 0);
        break;
    case AXON_UNARY_HARDTANH:
        pw_slot(c, 0, p->min_val, axon_f64_to_i64(p->min_val));
        pw_slot(c, 1, p->max_val, axon_f64_to_i64(p->max_val));
        break;
    case AXON_UNARY_LEAKY_RELU: pw_slot(c, 0, p->negative_slope, 0); break;
    case AXON_UNARY_LOGIT: pw_slot(c, 0, p->logit_eps, 0); break;
    case AXON_UNARY_SOFTSHRINK:
    case AXON_UNARY_HARDSHRINK: pw_slot(c, 0, p->lambd, 0); break;
    case AXON_UNARY_THRESHOLD: /* integer compute: both converted with the copy rules, as Scalar::to does */
        pw_slot(c, 0, p->threshold, axon_f64_to_i64(p->threshold));
        pw_slot(c, 1, p->value, axon_f64_to_i64(p->value));
        break;
    case AXON_UNARY_POLYGAMMA: pw_slot(c, 0, (double)p->polygamma_n, p->polygamma_n); break;
    case AXON_UNARY_RENORM_FACTOR: pw_slot(c, 0, p->maxnorm, 0); break;
    case AXON_UNARY_NAN_TO_NUM:
        pw_slot(c, 0, p->nan_value, 0);
        pw_slot(c, 1, p->posinf_value, 0);
        pw_slot(c, 2, p->neginf_value, 0);
        break;
    case AXON_UNARY_ROUND_DECIMALS: /* 10^|decimals| as PyTorch has it: pow in double, then the work type */
        pw_slot(c, 0, pow(10.0, (double)(p->decimals < 0 ? -p->decimals : p->decimals)), 0);
        pw_slot(c, 1, p->decimals < 0, 0);
        break;
    case AXON_UNARY_ELU:
        pw_slot(c, 0, p->elu_alpha * p->elu_scale, 0);
        c->pf[0] = (float)p->elu_alpha * (float)p->elu_scale; /* PyTorch multiplies them in the op's float type */
        pw_slot(c, 1, p->elu_scale, 0);
        pw_slot(c, 2, p->elu_input_scale, 0);
        break;
    default: break;
    }
}

/* The binary backward ops' parameters into their slots (see the expressions in pointwise_binary.c). */
static void pw_binary_params(axon_binary_op_t op, const axon_op_params_t *p, pw_ctx_t *c) {
    switch (op) {
    case AXON_BINARY_THRESHOLD_BACKWARD: pw_slot(c, 0, p->threshold, 0); break;
    case AXON_BINARY_SOFTPLUS_BACKWARD:
        pw_slot(c, 0, p->beta, 0);
        pw_slot(c, 1, p->threshold, 0);
        break;
    case AXON_BINARY_HARDTANH_BACKWARD:
        pw_slot(c, 0, p->min_val, 0);
        pw_slot(c, 1, p->max_val, 0);
        break;
    case AXON_BINARY_LEAKY_RELU_BACKWARD: pw_slot(c, 0, p->negative_slope, 0); break;
    case AXON_BINARY_LOGIT_BACKWARD: pw_slot(c, 0, p->logit_eps, 0); break;
    case AXON_BINARY_SHRINK_BACKWARD: pw_slot(c, 0, p->lambd, 0); break;
    case AXON_BINARY_ELU_BACKWARD:
        pw_slot(c, 0, p->elu_alpha * p->elu_scale, 0);
        c->pf[0] = (float)p->elu_alpha * (float)p->elu_scale; /* as for ELU: the product in the op's float type */
        pw_slot(c, 1, p->elu_scale, 0);
        pw_slot(c, 2, p->elu_input_scale, 0);
        c->pi[0] = p->elu_is_result != 0; /* floats read pf/pd only, so the integer slot is free for the flag */
        break;
    default: break;
    }
}

/* Whether a number operand is first rounded to a float16 or bfloat16 compute dtype, as PyTorch's CPU kernels take
 * it: in the tensors' dtype through TensorIterator's common dtype (x + 0.3 adds 0.30029296875 in float16; x < 0.3,
 * x % 0.3, x ** 1.3 likewise), except mul and the divisions, which read the original number in float
 * (original_scalar_value), and the ternary ops (lerp's weight). */
static int pw_number_rounds(const pw_op_t *op) {
    if (op->flags & PW_BOOL_RESULT) return 1;
    return op->arity == 2 && op->op != AXON_BINARY_MUL && op->op != AXON_BINARY_DIV &&
           op->op != AXON_BINARY_DIV_FLOOR && op->op != AXON_BINARY_DIV_TRUNC;
}

/* A number operand as the work value of its load dtype. Floating compute keeps the number in float32 (float64 for
 * float64), PyTorch's opmath scalar, rounded first to a half compute dtype where pw_number_rounds says so. Integer
 * and bool compute take it with the copy rules. */
static axon_status_t pw_number(const pw_op_t *op, int k, axon_scalar_t v, axon_dtype_t load, axon_dtype_t compute,
                               pw_value_t *out) {
    memset(out, 0, sizeof *out);
    union {
        double f;
        int64_t i;
        uint8_t b;
    } src;
    if (PW_COMPLEX_COLUMN(load) >= 0 && (v.dtype == AXON_FLOAT64 || v.dtype == AXON_INT64 ||
                                         v.dtype == AXON_BOOL || v.dtype == AXON_COMPLEX128)) {
        axon_c128_t z = pw_complex_of(v);
        if (load == AXON_COMPLEX64) out->c64.re = (float)z.re, out->c64.im = (float)z.im;
        else out->c128 = z;
        return AXON_OK;
    }
    switch (v.dtype) {
    case AXON_FLOAT64: src.f = v.f; break;
    case AXON_INT64: src.i = v.i; break;
    case AXON_BOOL: src.b = v.i != 0; break;
    default:
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: number operand %s has dtype %s; expected float64, int64, bool or (for complex compute) "
                         "complex128", op->name, operand_names[k], axon_dtype_name(v.dtype));
    }
    double f = v.dtype == AXON_FLOAT64 ? v.f : (double)(v.dtype == AXON_BOOL ? v.i != 0 : v.i);
    if ((compute == AXON_FLOAT16 || compute == AXON_BFLOAT16) && pw_number_rounds(op)) {
        const float r = v.dtype == AXON_INT64 ? (float)v.i : (float)f; /* c10's Half and BFloat16 convert from float */
        out->f = (float)axon_round_to(compute, r);
        if (load == AXON_FLOAT64) out->d = out->f;
    } else if (load == AXON_FLOAT64) {
        out->d = f;
    } else if (axon_dtype_is_floating(load)) {
        out->f = v.dtype == AXON_INT64 ? (float)v.i : (float)f;
    } else {
        union {
            unsigned char bytes[16];
            double align;
        } tmp;
        axon_convert_get(v.dtype, load)((char *)tmp.bytes, 1, (const char *)&src, 1, 1);
        axon_pw_widen(load, tmp.bytes, out);
    }
    return AXON_OK;
}

/* float16 ops from this many elements run the float32 loop between conversions by the CPU's own instructions (F16C,
 * convert.c) instead of the float16 loop's bit arithmetic, which took 6x torch CPU's time for x * 2.0 on a million
 * halves on a Zen 3. The bits are the same: both compute in float and round once to float16, to nearest even. Small
 * ops keep the float16 loop and the executor's flat path. */
#define PW_F16_AS_F32_MIN 1024

/* The float32 loop a float16 op may take instead of its own (PW_F16_AS_F32_MIN), or NULL: every tensor operand and
 * out are float16 (a bool out for the comparisons), so each conversion is exact or the loop's own final rounding.
 * nextafter steps in float16's own units, neg and abs work on the sign bit: they keep their float16 loops. */
static pw_loop_fn pw_f16_as_f32(const pw_op_t *op, axon_dtype_t compute, const axon_tensor_t *out,
                                const axon_tensor_t *const *ins, int64_t n) {
    if (compute != AXON_FLOAT16 || n < PW_F16_AS_F32_MIN || axon_convert_f16_level() == 0) return NULL;
    if (op->arity == 2 && op->op == AXON_BINARY_NEXTAFTER) return NULL;
    if (op->arity == 1 && (op->op == AXON_UNARY_NEG || op->op == AXON_UNARY_ABS)) return NULL; /* sign-bit loops */
    if (out->dtype != ((op->flags & PW_BOOL_RESULT) ? AXON_BOOL : AXON_FLOAT16)) return NULL;
    for (int k = 0; k < op->arity; k++)
        if (ins[k] && !(k == 0 && (op->flags & PW_COND_FIRST)) && ins[k]->dtype != AXON_FLOAT16) return NULL;
    return pw_loop_of(op->loops, op->complex_loops, AXON_FLOAT32);
}

/* Check a descriptor, its message prefixed "add: b" (formatted only on a failure). */
static axon_status_t pw_check(const axon_tensor_t *t, int is_out, const pw_op_t *op, const char *role) {
    return axon_kernel_check_operand(t, op->name, role, is_out);
}

static axon_status_t pw_launch(axon_stream_t s, const pw_op_t *op, const axon_tensor_t *out,
                               const axon_tensor_t *const *ins, const axon_op_params_t *params) {
    axon_op_params_t defaults;
    const axon_op_params_t *p = params;
    if (p == NULL) defaults = axon_op_params_default(), p = &defaults;
    char shape[160], shape2[160], desc[640];
    axon_status_t st = pw_check(out, 1, op, "out");
    if (st != AXON_OK) return st;

    int tensors = 0;
    axon_dtype_t common = AXON_DTYPE_COUNT;
    for (int k = 0; k < op->arity; k++) {
        const axon_tensor_t *t = ins[k];
        if (t == NULL) {
            if (params == NULL)
                return axon_fail(AXON_ERROR_INVALID_ARG, "%s: operand %s is NULL and params is NULL (no number to use)",
                                 op->name, operand_names[k]);
            continue;
        }
        if ((st = pw_check(t, 0, op, operand_names[k])) != AXON_OK) return st;
        int same = t->ndim == out->ndim;
        for (int d = 0; same && d < out->ndim; d++) same = t->sizes[d] == out->sizes[d];
        if (!same)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s shape %s (%s) does not match out shape %s (%s)", op->name,
                             operand_names[k], axon_shape_format(t, shape, sizeof shape), axon_dtype_name(t->dtype),
                             axon_shape_format(out, shape2, sizeof shape2), axon_dtype_name(out->dtype));
        tensors++;
        if (k == 0 && (op->flags & PW_COND_FIRST)) continue;
        if (common == AXON_DTYPE_COUNT) common = t->dtype;
        else if (common != t->dtype && (op->flags & PW_BOOL_RESULT) && p->compute == AXON_DTYPE_COUNT)
            return axon_fail(AXON_ERROR_INVALID_ARG,
                             "%s: inputs have dtypes %s and %s; set params->compute to their common dtype", op->name,
                             axon_dtype_name(common), axon_dtype_name(t->dtype));
    }
    if (tensors == 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: every operand is a number; at least one must be a tensor",
                         op->name);
    if (p->compute != AXON_DTYPE_COUNT && (unsigned)p->compute >= AXON_DTYPE_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: params->compute is %d, not a dtype", op->name, (int)p->compute);

    /* ABS of a complex input stores a real out, but computes in the input's complex dtype */
    const int from_inputs = (op->flags & PW_BOOL_RESULT) ||
                            ((op->flags & PW_REAL_OF_COMPLEX) && PW_COMPLEX_COLUMN(common) >= 0);
    axon_dtype_t compute = p->compute != AXON_DTYPE_COUNT               ? p->compute
                           : from_inputs && common != AXON_DTYPE_COUNT ? common
                                                                       : out->dtype;
    const pw_loop_fn loop = pw_loop_of(op->loops, op->complex_loops, compute);
    if (loop == NULL)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s is not defined for compute dtype %s (%s)", op->name,
                         axon_dtype_name(compute), pw_describe(desc, sizeof desc, out, ins, op->arity, p));
    int64_t n = axon_tensor_numel(out);
    int contiguous[3] = {0, 0, 0};
    int out_contiguous = axon_tensor_is_contiguous(out);
    for (int k = 0; k < op->arity; k++) {
        if (ins[k] == NULL || !out_contiguous || !(contiguous[k] = axon_tensor_is_contiguous(ins[k]))) continue;
        if (pw_partial_overlap(out, ins[k], n))
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: out partially overlaps input %s (%s)", op->name,
                             operand_names[k], pw_describe(desc, sizeof desc, out, ins, op->arity, p));
    }

    /* float16 and bfloat16 arithmetic and the common activations in one AVX2 pass; other float16 ops from
     * PW_F16_AS_F32_MIN elements as float32 between two conversion passes */
    const pw_loop_fn half_loop = op->arity == 2   ? axon_pw_half_binary(op->op, compute)
                                 : op->arity == 1 ? axon_pw_half_unary(op->op, compute)
                                                  : NULL;
    const pw_loop_fn f32_loop = half_loop ? NULL : pw_f16_as_f32(op, compute, out, ins, n);
    const int as_f32 = f32_loop != NULL;
    pw_args_t a;
    memset(&a, 0, sizeof a);
    a.loop = half_loop ? half_loop : as_f32 ? f32_loop : loop;
    a.name = op->name;
    a.arity = op->arity;
    a.compute = as_f32 ? AXON_FLOAT32 : compute;
    if (op->arity == 2 && PW_COMPLEX_COLUMN(compute) < 0)
        a.row_loop = half_loop ? axon_pw_half_binary_rows(op->op, compute)
                               : axon_pw_binary_row_loops[op->op][a.compute];
    a.result = op->flags & PW_BOOL_RESULT                                        ? AXON_BOOL
               : (op->flags & PW_REAL_OF_COMPLEX) && compute == AXON_COMPLEX64  ? AXON_FLOAT32
               : (op->flags & PW_REAL_OF_COMPLEX) && compute == AXON_COMPLEX128 ? AXON_FLOAT64
                                                                                : a.compute;
    a.out = *out;
    if ((op->flags & PW_ALPHA) && (st = pw_alpha(op, p->alpha, compute, &a.ctx)) != AXON_OK) return st;
    /* float add and sub with alpha other than 1: one rounding, as PyTorch's CPU loops (the 16-bit one-pass loops do
     * it for any alpha) */
    const int sub = op->arity == 2 && op->op == AXON_BINARY_SUB;
    if (op->arity == 2 && (op->op == AXON_BINARY_ADD || sub) && !half_loop &&
        axon_pw_binary_alpha_loops[sub][a.compute] != NULL && a.ctx.pd[0] != 1.0) {
        a.loop = axon_pw_binary_alpha_loops[sub][a.compute];
        a.row_loop = NULL;
    }
    if (op->arity == 1) pw_unary_params((axon_unary_op_t)op->op, p, &a.ctx);
    if (op->arity == 2) pw_binary_params((axon_binary_op_t)op->op, p, &a.ctx);
    if (op->arity == 3 && op->op == AXON_TERNARY_ADDR) pw_slot(&a.ctx, 1, p->beta, axon_f64_to_i64(p->beta));
    uint64_t bytes = axon_dtype_size(out->dtype);
    a.flat = out_contiguous && out->dtype == a.result;
    a.flat_size[0] = bytes;
    for (int k = 0; k < op->arity; k++) {
        a.load[k] = k == 0 && (op->flags & PW_COND_FIRST) ? AXON_BOOL : compute;
        if (ins[k]) {
            if (as_f32 && a.load[k] == AXON_FLOAT16) a.load[k] = AXON_FLOAT32;
            a.in[k] = *ins[k];
            a.flat_size[k + 1] = axon_dtype_size(ins[k]->dtype);
            a.flat &= contiguous[k] && ins[k]->dtype == a.load[k];
            bytes += a.flat_size[k + 1];
            continue;
        }
        a.scalar |= 1u << k;
        st = pw_number(op, k, p->operand[k], a.load[k], compute, &a.value[k]);
        if (st != AXON_OK) return st;
    }
    if (n == 0) return AXON_OK;
    axon_launch_t l = {axon_pw_kernel, &a, sizeof a, op->name, (uint64_t)n * bytes};
    return axon_stream_launch(s, &l);
}

/* ---- the public entry points ---- */

axon_status_t axon_kernel_unary(axon_stream_t s, axon_unary_op_t op, const axon_tensor_t *out,
                                const axon_tensor_t *a, const axon_op_params_t *params) {
    if ((unsigned)op >= AXON_UNARY_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "unary: op %d is not an axon_unary_op_t", (int)op);
    int bool_result = op == AXON_UNARY_LOGICAL_NOT || op == AXON_UNARY_ISNAN || op == AXON_UNARY_ISINF ||
                      op == AXON_UNARY_ISFINITE || op == AXON_UNARY_ISPOSINF || op == AXON_UNARY_ISNEGINF ||
                      op == AXON_UNARY_SIGNBIT;
    const int real_of_complex = op == AXON_UNARY_ABS || op == AXON_UNARY_ANGLE;
    const unsigned flags = bool_result ? PW_BOOL_RESULT : real_of_complex ? PW_REAL_OF_COMPLEX : 0u;
    const pw_op_t d = {1, (int)op, unary_names[op], axon_pw_unary_loops[op], axon_pw_unary_complex_loops[op], flags};
    const axon_tensor_t *ins[3] = {a, NULL, NULL};
    if (a == NULL)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: a is NULL (a unary op needs a tensor input)", d.name);
    if (op == AXON_UNARY_POLYGAMMA && params && params->polygamma_n < 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "polygamma: polygamma_n is %" PRId64 "; it must be >= 0",
                         params->polygamma_n);
    return pw_launch(s, &d, out, ins, params);
}

axon_status_t axon_kernel_binary(axon_stream_t s, axon_binary_op_t op, const axon_tensor_t *out,
                                 const axon_tensor_t *a, const axon_tensor_t *b, const axon_op_params_t *params) {
    if ((unsigned)op >= AXON_BINARY_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "binary: op %d is not an axon_binary_op_t", (int)op);
    unsigned flags = 0;
    if (op == AXON_BINARY_ADD || op == AXON_BINARY_SUB) flags |= PW_ALPHA;
    if ((op >= AXON_BINARY_EQ && op <= AXON_BINARY_GE) ||
        (op >= AXON_BINARY_LOGICAL_AND && op <= AXON_BINARY_LOGICAL_XOR))
        flags |= PW_BOOL_RESULT;
    const pw_op_t d = {2, (int)op, binary_names[op], axon_pw_binary_loops[op], axon_pw_binary_complex_loops[op], flags};
    const axon_tensor_t *ins[3] = {a, b, NULL};
    return pw_launch(s, &d, out, ins, params);
}

axon_status_t axon_kernel_ternary(axon_stream_t s, axon_ternary_op_t op, const axon_tensor_t *out,
                                  const axon_tensor_t *a, const axon_tensor_t *b, const axon_tensor_t *c,
                                  const axon_op_params_t *params) {
    if ((unsigned)op >= AXON_TERNARY_COUNT)
        return axon_fail(AXON_ERROR_INVALID_ARG, "ternary: op %d is not an axon_ternary_op_t", (int)op);
    unsigned flags = op == AXON_TERNARY_WHERE ? PW_COND_FIRST
                     : op == AXON_TERNARY_ADDCMUL || op == AXON_TERNARY_ADDCDIV || op == AXON_TERNARY_ADDR ? PW_ALPHA
                                                                                 : 0u;
    const pw_op_t d = {3, (int)op, ternary_names[op], axon_pw_ternary_loops[op], axon_pw_ternary_complex_loops[op],
                       flags};
    const axon_tensor_t *ins[3] = {a, b, c};
    return pw_launch(s, &d, out, ins, params);
}
