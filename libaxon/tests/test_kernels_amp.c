/* axon/amp.h: unscale-and-check over lists of every float dtype (found_inf raised by inf, -inf and NaN, left alone by
 * finite values, never cleared), lists longer than one command, an inv_scale of 1 leaving bits unchanged; the scale
 * update's backoff, growth at the interval, growth refused when it overflows, NaN found_inf; bad input refused with
 * a message naming the op and the argument. Expected values are PyTorch's formulas evaluated here in the same
 * precision, so comparisons are exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/amp.h"
#include "kernels_check.h"

#define NT 300 /* tensors: more than one command holds (~250) */

static kc_dev_t am_dev;

static int64_t am_size(int i) { return i == 5 ? 0 : (i * 53) % 700 + 1; }

static axon_tensor_t am_number(void *p, axon_dtype_t dt) {
    int64_t one[1] = {1};
    return kc_tensor(p, dt, 0, one, NULL);
}

static void test_float32_list_spanning_commands_is_unscaled_without_found_inf(void) {
    axon_tensor_t t[NT];
    float *d[NT];
    for (int i = 0; i < NT; i++) {
        int64_t n = am_size(i), sizes[1] = {n};
        d[i] = malloc(sizeof(float) * (size_t)(n ? n : 1));
        for (int64_t k = 0; k < n; k++) d[i][k] = (float)(i - 150) * 0.37f + (float)k * 1e-3f;
        t[i] = kc_tensor(d[i], AXON_FLOAT32, 1, sizes, NULL);
    }
    float found = 0.0f, inv = 1.0f / 1024.0f;
    axon_tensor_t f = am_number(&found, AXON_FLOAT32), s = am_number(&inv, AXON_FLOAT32);
    CHECK_OK(axon_amp_non_finite_check_and_unscale(am_dev.s, NT, t, &f, &s));
    CHECK_OK(axon_stream_sync(am_dev.s));
    int bad = 0;
    for (int i = 0; i < NT; i++)
        for (int64_t k = 0; k < am_size(i); k++) bad += d[i][k] != ((float)(i - 150) * 0.37f + (float)k * 1e-3f) * inv;
    CHECK_EQ_I64(bad, 0);
    CHECK(found == 0.0f);
    for (int i = 0; i < NT; i++) free(d[i]);
}

static void test_inf_minus_inf_and_nan_each_raise_found_inf_in_the_last_tensor(void) {
    const float specials[3] = {INFINITY, -INFINITY, NAN};
    for (int c = 0; c < 3; c++) {
        float a[1000], b[3];
        for (int k = 0; k < 1000; k++) a[k] = (float)k;
        for (int k = 0; k < 3; k++) b[k] = 2.0f;
        b[2] = specials[c];
        int64_t sa[1] = {1000}, sb[1] = {3};
        axon_tensor_t t[2] = {kc_tensor(a, AXON_FLOAT32, 1, sa, NULL), kc_tensor(b, AXON_FLOAT32, 1, sb, NULL)};
        float found = 0.0f, inv = 0.5f;
        axon_tensor_t f = am_number(&found, AXON_FLOAT32), s = am_number(&inv, AXON_FLOAT32);
        CHECK_OK(axon_amp_non_finite_check_and_unscale(am_dev.s, 2, t, &f, &s));
        CHECK_OK(axon_stream_sync(am_dev.s));
        CHECK(found == 1.0f);
        CHECK(a[999] == 499.5f && b[0] == 1.0f); /* grads are unscaled all the same */
    }
}

static void test_found_inf_is_never_cleared_by_a_finite_list(void) {
    double a[4] = {1, 2, 3, 4};
    int64_t sa[1] = {4};
    axon_tensor_t t = kc_tensor(a, AXON_FLOAT64, 1, sa, NULL);
    float found = 1.0f, inv = 0.25f;
    axon_tensor_t f = am_number(&found, AXON_FLOAT32), s = am_number(&inv, AXON_FLOAT32);
    CHECK_OK(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, &t, &f, &s));
    CHECK_OK(axon_stream_sync(am_dev.s));
    CHECK(found == 1.0f);
    CHECK(a[3] == 1.0);
}

static void test_half_grads_round_once_and_inv_scale_one_keeps_bits(void) {
    /* float16 bits: 1.0 = 0x3c00, 3.0 = 0x4200, inf = 0x7c00; a NaN payload must survive inv_scale == 1. */
    uint16_t h[4] = {0x3c00, 0x4200, 0x7e01, 0x3c00};
    int64_t sz[1] = {4};
    axon_tensor_t t = kc_tensor(h, AXON_FLOAT16, 1, sz, NULL);
    float found = 0.0f, inv = 1.0f;
    axon_tensor_t f = am_number(&found, AXON_FLOAT32), s = am_number(&inv, AXON_FLOAT32);
    CHECK_OK(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, &t, &f, &s));
    CHECK_OK(axon_stream_sync(am_dev.s));
    CHECK(found == 1.0f);
    CHECK(h[2] == 0x7e01 && h[1] == 0x4200);
    h[2] = 0x3c00;
    found = 0.0f, inv = 0.5f;
    CHECK_OK(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, &t, &f, &s));
    CHECK_OK(axon_stream_sync(am_dev.s));
    CHECK(found == 0.0f);
    CHECK(h[0] == 0x3800 && h[1] == 0x3e00); /* 0.5 and 1.5 */
    uint16_t bf[2] = {0x3f80, 0x7f80};       /* bfloat16 1.0 and inf */
    int64_t s2[1] = {2};
    axon_tensor_t tb = kc_tensor(bf, AXON_BFLOAT16, 1, s2, NULL);
    CHECK_OK(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, &tb, &f, &s));
    CHECK_OK(axon_stream_sync(am_dev.s));
    CHECK(found == 1.0f && bf[0] == 0x3f00);
}

/* PyTorch's update, evaluated here. */
static void am_ref_update(float *scale, int32_t *tracker, float found, double g, double b, int64_t interval) {
    if (found != 0.0f) {
        *scale = (float)(*scale * b);
        *tracker = 0;
    } else if ((int64_t)*tracker + 1 == interval) {
        float n = (float)(*scale * g);
        if (isfinite(n)) *scale = n;
        *tracker = 0;
    } else {
        *tracker += 1;
    }
}

static void test_update_scale_follows_backoff_growth_and_interval(void) {
    const float founds[12] = {0, 0, 0, 1, 0, 0, 0, NAN, 0, 0, 0, 0};
    float scale = 65536.0f, ref_scale = scale, found;
    int32_t tracker = 0, ref_tracker = 0;
    axon_tensor_t sc = am_number(&scale, AXON_FLOAT32), tr = am_number(&tracker, AXON_INT32);
    axon_tensor_t f = am_number(&found, AXON_FLOAT32);
    for (int step = 0; step < 12; step++) {
        found = founds[step];
        CHECK_OK(axon_amp_update_scale(am_dev.s, &sc, &tr, &f, 2.0, 0.5, 3));
        CHECK_OK(axon_stream_sync(am_dev.s));
        am_ref_update(&ref_scale, &ref_tracker, founds[step], 2.0, 0.5, 3);
        CHECK(scale == ref_scale);
        CHECK_EQ_I64(tracker, ref_tracker);
    }
    CHECK(scale == 65536.0f * 2 * 0.5f * 2 * 0.5f * 2); /* grew at steps 2, 6, 10; backed off at 3 and 7 */
    CHECK_EQ_I64(tracker, 1);
    scale = 3e38f, tracker = 0, found = 0.0f; /* growth would overflow: the scale stays, the tracker resets */
    CHECK_OK(axon_amp_update_scale(am_dev.s, &sc, &tr, &f, 2.0, 0.5, 1));
    CHECK_OK(axon_stream_sync(am_dev.s));
    CHECK(scale == 3e38f);
    CHECK_EQ_I64(tracker, 0);
}

static void test_bad_arguments_are_refused_naming_op_and_argument(void) {
    float g[2] = {1, 2}, found = 0.0f, inv = 1.0f, two[2] = {0, 0};
    int32_t tracker = 0;
    int64_t s2[1] = {2};
    axon_tensor_t t = kc_tensor(g, AXON_FLOAT32, 1, s2, NULL), f = am_number(&found, AXON_FLOAT32);
    axon_tensor_t s = am_number(&inv, AXON_FLOAT32), wide = kc_tensor(two, AXON_FLOAT32, 1, s2, NULL);
    axon_tensor_t tr = am_number(&tracker, AXON_INT32);
    CHECK_STATUS(axon_amp_non_finite_check_and_unscale(am_dev.s, -1, &t, &f, &s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("amp_non_finite_check_and_unscale: list length -1");
    CHECK_STATUS(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, NULL, &f, &s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("grads list is NULL");
    CHECK_STATUS(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, &t, &wide, &s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("found_inf must hold one element");
    CHECK_STATUS(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, &t, &f, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("inv_scale is NULL");
    CHECK_STATUS(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, &t, &tr, &s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("found_inf must be float32, it is int32");
    int32_t ig[2] = {1, 2};
    axon_tensor_t it = kc_tensor(ig, AXON_INT32, 1, s2, NULL);
    CHECK_STATUS(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, &it, &f, &s), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("grads[0] dtype int32");
    int64_t st2[1] = {2};
    int64_t sz1[1] = {1};
    axon_tensor_t strided = kc_tensor(g, AXON_FLOAT32, 1, sz1, st2);
    strided.sizes[0] = 1;
    CHECK_OK(axon_amp_non_finite_check_and_unscale(am_dev.s, 1, &strided, &f, &s)); /* one element: contiguous */
    CHECK_STATUS(axon_amp_update_scale(am_dev.s, &s, &f, &f, 2.0, 0.5, 10), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("amp_update_scale: growth_tracker must be int32, it is float32");
    CHECK_STATUS(axon_amp_update_scale(am_dev.s, &tr, &tr, &f, 2.0, 0.5, 10), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("scale must be float32");
    CHECK_STATUS(axon_amp_update_scale(am_dev.s, &s, &tr, &wide, 2.0, 0.5, 10), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("found_inf must hold one element");
    CHECK_OK(axon_amp_non_finite_check_and_unscale(am_dev.s, 0, NULL, &f, &s)); /* empty list: nothing to do */
    CHECK_OK(axon_stream_sync(am_dev.s));
    CHECK(found == 0.0f);
}

int main(void) {
    am_dev = kc_open(4);
    if (!am_dev.rt) return 1;
    RUN(test_float32_list_spanning_commands_is_unscaled_without_found_inf);
    RUN(test_inf_minus_inf_and_nan_each_raise_found_inf_in_the_last_tensor);
    RUN(test_found_inf_is_never_cleared_by_a_finite_list);
    RUN(test_half_grads_round_once_and_inv_scale_one_keeps_bits);
    RUN(test_update_scale_follows_backoff_growth_and_interval);
    RUN(test_bad_arguments_are_refused_naming_op_and_argument);
    axon_runtime_destroy(am_dev.rt);
    return check_report();
}
