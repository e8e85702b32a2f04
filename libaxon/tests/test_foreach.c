/* axon/foreach.h against double references: list, scalar-list, number and device-number operands of binary ops,
 * ternary ops (addcmul, addcdiv, lerp on both sides of 0.5), unary ops in place, fill, norms (1, 2, inf, NaN, empty
 * tensors); lists long enough to span several commands; float16/bfloat16 lists converted on load and store;
 * results identical for 1 and 4 threads; bad input refused with a message naming the op, list and index.
 *
 * Tolerances: float32 math rounds each step, so results are within a few float32 ulps of the double reference
 * (relative 1e-6 with an absolute 1e-6 floor); half types within one rounding of their own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/foreach.h"
#include "kernels_check.h"

#define NT 150 /* tensors per list: more than one command holds */

static uint32_t ft_seed = 12345u;
static double ft_rand(void) { /* uniform in [-1, 1) */
    ft_seed = ft_seed * 1664525u + 1013904223u;
    return (ft_seed >> 8) / 8388608.0 - 1.0;
}

/* A host list of NT float32 tensors of varied sizes (tensor 7 is empty), values in [lo, lo + 2). */
typedef struct ft_list {
    axon_tensor_t t[NT];
    float *data[NT];
} ft_list_t;

static int64_t ft_size(int i) { return i == 7 ? 0 : (i * 37) % 300 + 1; }

static void ft_make(ft_list_t *l, double lo) {
    for (int i = 0; i < NT; i++) {
        int64_t n = ft_size(i), sizes[1] = {n};
        l->data[i] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        for (int64_t k = 0; k < n; k++) l->data[i][k] = (float)(lo + 1.0 + ft_rand());
        l->t[i] = kc_tensor(l->data[i], AXON_FLOAT32, 1, sizes, NULL);
    }
}

static void ft_free(ft_list_t *l) {
    for (int i = 0; i < NT; i++) free(l->data[i]);
}

static int ft_close(double got, double want, double rtol) {
    if (isnan(want)) return isnan(got);
    return fabs(got - want) <= rtol * fabs(want) + 1e-6;
}

static kc_dev_t ft_dev;

static void test_add_list_with_alpha_spans_commands(void) {
    ft_list_t a, b, out;
    ft_make(&a, 0), ft_make(&b, 0), ft_make(&out, 0);
    axon_foreach_arg_t arg = {b.t, NULL, NULL, 0.0};
    CHECK_OK(axon_foreach_binary(ft_dev.s, AXON_FOREACH_ADD, NT, out.t, a.t, &arg, -0.5));
    CHECK_OK(axon_stream_sync(ft_dev.s));
    int bad = 0;
    for (int i = 0; i < NT; i++)
        for (int64_t k = 0; k < ft_size(i); k++)
            bad += !ft_close(out.data[i][k], (double)a.data[i][k] + (double)(-0.5f * b.data[i][k]), 1e-6);
    CHECK_EQ_I64(bad, 0);
    ft_free(&a), ft_free(&b), ft_free(&out);
}

static void test_scalar_forms_mul_div_maximum_in_place(void) {
    ft_list_t a, ref;
    ft_make(&a, 0), ft_make(&ref, 0);
    for (int i = 0; i < NT; i++)
        for (int64_t k = 0; k < ft_size(i); k++) ref.data[i][k] = a.data[i][k];
    double vals[NT];
    for (int i = 0; i < NT; i++) vals[i] = 1.0 + i / 100.0;
    float dev_number = 4.0f;
    int64_t one[1] = {1};
    axon_tensor_t num = kc_tensor(&dev_number, AXON_FLOAT32, 0, one, NULL);
    axon_foreach_arg_t by_list = {NULL, vals, NULL, 0.0}, by_number = {NULL, NULL, &num, 0.0};
    axon_foreach_arg_t by_value = {NULL, NULL, NULL, 0.25};
    CHECK_OK(axon_foreach_binary(ft_dev.s, AXON_FOREACH_MUL, NT, a.t, a.t, &by_list, 1.0));
    CHECK_OK(axon_foreach_binary(ft_dev.s, AXON_FOREACH_DIV, NT, a.t, a.t, &by_number, 1.0));
    CHECK_OK(axon_foreach_binary(ft_dev.s, AXON_FOREACH_MAXIMUM, NT, a.t, a.t, &by_value, 1.0));
    CHECK_OK(axon_stream_sync(ft_dev.s));
    int bad = 0;
    for (int i = 0; i < NT; i++)
        for (int64_t k = 0; k < ft_size(i); k++) {
            float want = ref.data[i][k] * (float)vals[i] / 4.0f;
            want = want > 0.25f ? want : 0.25f;
            bad += a.data[i][k] != want;
        }
    CHECK_EQ_I64(bad, 0);
    ft_free(&a), ft_free(&ref);
}

static void test_ternary_addcdiv_and_lerp_both_sides(void) {
    ft_list_t a, b, c, w, out;
    ft_make(&a, 0), ft_make(&b, 0), ft_make(&c, 2), ft_make(&w, -0.5), ft_make(&out, 0);
    axon_foreach_arg_t value = {NULL, NULL, NULL, -0.3}, weights = {w.t, NULL, NULL, 0.0};
    CHECK_OK(axon_foreach_ternary(ft_dev.s, AXON_FOREACH_ADDCDIV, NT, out.t, a.t, b.t, c.t, &value));
    CHECK_OK(axon_stream_sync(ft_dev.s));
    int bad = 0;
    for (int i = 0; i < NT; i++)
        for (int64_t k = 0; k < ft_size(i); k++)
            bad += !ft_close(out.data[i][k], a.data[i][k] + -0.3 * b.data[i][k] / c.data[i][k], 1e-6);
    CHECK_EQ_I64(bad, 0);
    CHECK_OK(axon_foreach_ternary(ft_dev.s, AXON_FOREACH_LERP, NT, out.t, a.t, b.t, NULL, &weights));
    CHECK_OK(axon_stream_sync(ft_dev.s));
    bad = 0;
    for (int i = 0; i < NT; i++)
        for (int64_t k = 0; k < ft_size(i); k++)
            bad += !ft_close(out.data[i][k], a.data[i][k] + w.data[i][k] * ((double)b.data[i][k] - a.data[i][k]),
                             1e-6);
    CHECK_EQ_I64(bad, 0);
    ft_free(&a), ft_free(&b), ft_free(&c), ft_free(&w), ft_free(&out);
}

static void test_unary_in_place_and_fill(void) {
    ft_list_t a;
    ft_make(&a, 1);
    float first = a.data[0][0];
    CHECK_OK(axon_foreach_unary(ft_dev.s, AXON_FOREACH_SQRT, NT, a.t, a.t));
    CHECK_OK(axon_foreach_unary(ft_dev.s, AXON_FOREACH_NEG, NT, a.t, a.t));
    CHECK_OK(axon_stream_sync(ft_dev.s));
    CHECK(a.data[0][0] == -sqrtf(first));
    CHECK_OK(axon_foreach_fill(ft_dev.s, NT, a.t, 0.0));
    CHECK_OK(axon_stream_sync(ft_dev.s));
    int bad = 0;
    for (int i = 0; i < NT; i++)
        for (int64_t k = 0; k < ft_size(i); k++) bad += a.data[i][k] != 0.0f;
    CHECK_EQ_I64(bad, 0);
    ft_free(&a);
}

static void test_half_lists_convert_on_load_and_store(void) {
    /* bfloat16 a + float16 b -> float32 out: computed in float from the exact widened values. */
    uint16_t ha[64], hb[64];
    float out[64];
    for (int k = 0; k < 64; k++) {
        ha[k] = (uint16_t)(0x3F80 + k);     /* bfloat16 1.0, 1.0078125, ... */
        hb[k] = (uint16_t)(0x3C00 + 8 * k); /* float16 1.0, 1.0078125, ... */
    }
    int64_t sizes[1] = {64};
    axon_tensor_t ta = kc_tensor(ha, AXON_BFLOAT16, 1, sizes, NULL), tb = kc_tensor(hb, AXON_FLOAT16, 1, sizes, NULL);
    axon_tensor_t to = kc_tensor(out, AXON_FLOAT32, 1, sizes, NULL);
    axon_foreach_arg_t arg = {&tb, NULL, NULL, 0.0};
    CHECK_OK(axon_foreach_binary(ft_dev.s, AXON_FOREACH_MUL, 1, &to, &ta, &arg, 1.0));
    CHECK_OK(axon_stream_sync(ft_dev.s));
    int bad = 0;
    for (int k = 0; k < 64; k++) bad += out[k] != (1.0f + k / 128.0f) * (1.0f + k / 128.0f);
    CHECK_EQ_I64(bad, 0);
}

static void test_norms_one_two_inf_nan_and_empty(void) {
    ft_list_t a;
    ft_make(&a, -1);
    a.data[3][0] = NAN;
    double out[NT];
    axon_tensor_t o[NT];
    for (int i = 0; i < NT; i++) o[i] = kc_tensor(&out[i], AXON_FLOAT64, 0, NULL, NULL);
    static const double ords[3] = {1.0, 2.0, INFINITY};
    for (int r = 0; r < 3; r++) {
        CHECK_OK(axon_foreach_norm(ft_dev.s, NT, o, a.t, ords[r]));
        CHECK_OK(axon_stream_sync(ft_dev.s));
        int bad = 0;
        for (int i = 0; i < NT; i++) {
            double want = 0.0;
            for (int64_t k = 0; k < ft_size(i); k++) {
                double v = fabs((double)a.data[i][k]);
                if (ords[r] == INFINITY) want = (isnan(v) || isnan(want)) ? NAN : (v > want ? v : want);
                else want += ords[r] == 2.0 ? v * v : v;
            }
            if (ords[r] == 2.0) want = sqrt(want);
            bad += !ft_close(out[i], want, 1e-12);
        }
        CHECK_EQ_I64(bad, 0);
        CHECK(isnan(out[3]) && out[7] == 0.0);
    }
    ft_free(&a);
}

static void test_results_do_not_depend_on_thread_count(void) {
    /* One big tensor split over the pool: bitwise equal for 1 and 4 threads. */
    const int64_t n = 300000;
    float *a = malloc(sizeof(float) * (size_t)n), *o1 = malloc(sizeof(float) * (size_t)n);
    float *o4 = malloc(sizeof(float) * (size_t)n);
    for (int64_t k = 0; k < n; k++) a[k] = (float)ft_rand();
    int64_t sizes[1] = {n};
    float r1 = 0, r4 = 0;
    for (int threads = 1; threads <= 4; threads += 3) {
        kc_dev_t k = kc_open(threads);
        REQUIRE(k.rt);
        axon_tensor_t ta = kc_tensor(a, AXON_FLOAT32, 1, sizes, NULL);
        axon_tensor_t to = kc_tensor(threads == 1 ? o1 : o4, AXON_FLOAT32, 1, sizes, NULL);
        axon_tensor_t tr = kc_tensor(threads == 1 ? &r1 : &r4, AXON_FLOAT32, 0, NULL, NULL);
        axon_foreach_arg_t w = {NULL, NULL, NULL, 0.7};
        CHECK_OK(axon_foreach_ternary(k.s, AXON_FOREACH_LERP, 1, &to, &ta, &ta, NULL, &w));
        CHECK_OK(axon_foreach_norm(k.s, 1, &tr, &to, 2.0));
        CHECK_OK(axon_stream_sync(k.s));
        axon_runtime_destroy(k.rt);
    }
    CHECK(memcmp(o1, o4, sizeof(float) * (size_t)n) == 0);
    CHECK(r1 == r4);
    free(a), free(o1), free(o4);
}

static void test_bad_lists_are_refused_naming_op_list_and_index(void) {
    float x[12] = {0}, y[12] = {0};
    int32_t ints[4] = {0};
    int64_t s4[1] = {4}, s3[1] = {3}, s22[2] = {2, 2}, st2[2] = {1, 2};
    axon_tensor_t a[2] = {kc_tensor(x, AXON_FLOAT32, 1, s4, NULL), kc_tensor(x + 4, AXON_FLOAT32, 1, s4, NULL)};
    axon_tensor_t b[2] = {kc_tensor(y, AXON_FLOAT32, 1, s4, NULL), kc_tensor(y + 4, AXON_FLOAT32, 1, s3, NULL)};
    axon_foreach_arg_t arg = {b, NULL, NULL, 0.0};
    CHECK_STATUS(axon_foreach_binary(ft_dev.s, AXON_FOREACH_ADD, 2, a, a, &arg, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("foreach_add: other[1] shape [3] does not match out[1] shape [4]");
    b[1] = kc_tensor(ints, AXON_INT32, 1, s4, NULL);
    CHECK_STATUS(axon_foreach_binary(ft_dev.s, AXON_FOREACH_MUL, 2, a, a, &arg, 1.0), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("other[1] dtype int32");
    b[1] = kc_tensor(y, AXON_FLOAT64, 1, s4, NULL);
    CHECK_STATUS(axon_foreach_binary(ft_dev.s, AXON_FOREACH_MUL, 2, a, a, &arg, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("one dtype per list");
    a[1] = kc_tensor(x, AXON_FLOAT32, 2, s22, st2);
    CHECK_STATUS(axon_foreach_unary(ft_dev.s, AXON_FOREACH_NEG, 2, a, a), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("foreach_neg: out[1]");
    CHECK_STATUS(axon_foreach_unary(ft_dev.s, AXON_FOREACH_NEG, -1, a, a), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_foreach_unary(ft_dev.s, AXON_FOREACH_ADD, 1, a, a), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_foreach_binary(ft_dev.s, AXON_FOREACH_MUL, 1, a, a, &arg, 2.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("alpha must be 1");
    CHECK_STATUS(axon_foreach_norm(ft_dev.s, 1, a, a, 3.0), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_foreach_norm(ft_dev.s, 1, a, a, 2.0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out[0] must hold one element");
    axon_foreach_arg_t two = {b, NULL, NULL, 0.0};
    double v = 1.0;
    two.values = &v;
    CHECK_STATUS(axon_foreach_binary(ft_dev.s, AXON_FOREACH_MUL, 1, a, a, &two, 1.0), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_foreach_unary(ft_dev.s, AXON_FOREACH_NEG, 0, NULL, NULL)); /* empty lists: nothing to do */
    CHECK_OK(axon_stream_sync(ft_dev.s));
}

int main(void) {
    ft_dev = kc_open(4);
    if (!ft_dev.rt) return 1;
    RUN(test_add_list_with_alpha_spans_commands);
    RUN(test_scalar_forms_mul_div_maximum_in_place);
    RUN(test_ternary_addcdiv_and_lerp_both_sides);
    RUN(test_unary_in_place_and_fill);
    RUN(test_half_lists_convert_on_load_and_store);
    RUN(test_norms_one_two_inf_nan_and_empty);
    RUN(test_results_do_not_depend_on_thread_count);
    RUN(test_bad_lists_are_refused_naming_op_list_and_index);
    axon_runtime_destroy(ft_dev.rt);
    return check_report();
}
