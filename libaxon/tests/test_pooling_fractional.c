/* axon_kernel_fractional_max_pool (axon/pooling.h): window starts from the samples where the arithmetic is exact
 * (alpha = 7 / 4, samples 0.25 and 0.5, whose starts differ: [0, 2, 3, 5, 7] and [0, 2, 4, 6, 7]), maxima and
 * indices against a direct scan, a NaN winning its window, float32, float64, float16 and bfloat16 (where those
 * starts are exact too), 2d and 3d; bad input refused with a message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../kernels/dtype.h"
#include "axon/pooling.h"
#include "kernels_check.h"

/* v in dtype d at p[i], and back as a double. */
static void fp_put(axon_dtype_t d, void *p, int64_t i, double v) {
    switch (d) {
    case AXON_FLOAT64: ((double *)p)[i] = v; break;
    case AXON_FLOAT16: ((uint16_t *)p)[i] = axon_f64_to_f16(v); break;
    case AXON_BFLOAT16: ((uint16_t *)p)[i] = axon_f64_to_bf16(v); break;
    default: ((float *)p)[i] = (float)v; break;
    }
}

static double fp_get(axon_dtype_t d, const void *p, int64_t i) {
    switch (d) {
    case AXON_FLOAT64: return ((const double *)p)[i];
    case AXON_FLOAT16: return axon_f16_to_f32(((const uint16_t *)p)[i]);
    case AXON_BFLOAT16: return axon_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* Starts along a dim of 10 inputs, kernel 3, 5 outputs (alpha = 7 / 4): trunc((i + u) * a) - trunc(u * a), last 7. */
static int64_t fp_start(double u, int64_t i) {
    return i == 4 ? 7 : (int64_t)((i + u) * 1.75) - (int64_t)(u * 1.75);
}

static void fp_check(kc_dev_t *k, axon_dtype_t d, int nsp) {
    const int64_t P = 3, I = 10, O = 5, K = 3;
    const int64_t in_n = P * (nsp == 3 ? I * I * I : I * I), out_n = P * (nsp == 3 ? O * O * O : O * O);
    const size_t es = axon_dtype_size(d);
    double *x = malloc(sizeof(double) * (size_t)in_n), u[3 * 3];
    char *hx = malloc((size_t)in_n * es), *hu = malloc(9 * es), *hy = malloc((size_t)out_n * es);
    int64_t *hi = malloc(sizeof(int64_t) * (size_t)out_n);
    uint32_t st = 11;
    for (int64_t i = 0; i < in_n; i++) x[i] = (double)(kc_next_u24(&st) % 1000) / 8;
    x[5] = NAN;   /* plane 0: the windows over element 5 take it */
    for (int i = 0; i < 9; i++) u[i] = i % 3 == 0 ? 0.25 : 0.5;   /* the dims of planes 0 and 1 differ */
    for (int64_t i = 0; i < in_n; i++) {   /* the reference takes the values as rounded to d */
        fp_put(d, hx, i, x[i]);
        x[i] = fp_get(d, hx, i);
    }
    for (int i = 0; i < 9; i++) fp_put(d, hu, i, u[i]);
    void *dx = kc_upload(k, hx, (size_t)in_n * es), *du = kc_upload(k, hu, (size_t)(P * nsp) * es);
    void *dy = kc_upload(k, NULL, (size_t)out_n * es), *di = kc_upload(k, NULL, sizeof(int64_t) * (size_t)out_n);
    int64_t si[4] = {P, I, I, I}, so[4] = {P, O, O, O}, ks[3] = {K, K, K}, su = P * nsp;
    axon_tensor_t tx = kc_tensor(dx, d, nsp + 1, si, NULL), ty = kc_tensor(dy, d, nsp + 1, so, NULL);
    axon_tensor_t ti = kc_tensor(di, AXON_INT64, nsp + 1, so, NULL), tu = kc_vector(du, d, su);
    CHECK_OK(axon_kernel_fractional_max_pool(k->s, &ty, &ti, &tx, &tu, ks, nsp));
    CHECK(kc_download(k, hy, dy, (size_t)out_n * es));
    CHECK(kc_download(k, hi, di, sizeof(int64_t) * (size_t)out_n));
    int bad = 0;
    const int64_t ip = nsp == 3 ? I * I * I : I * I, op = nsp == 3 ? O * O * O : O * O;
    for (int64_t p = 0; p < P; p++)
        for (int64_t o = 0; o < op; o++) {
            /* 2d samples are (W, H), 3d (D, H, W) */
            const double *up = u + p * nsp;
            const int64_t ow = o % O, oh = o / O % O, od = nsp == 3 ? o / (O * O) : 0;
            const int64_t w0 = fp_start(nsp == 2 ? up[0] : up[2], ow), h0 = fp_start(up[1], oh);
            const int64_t d0 = nsp == 3 ? fp_start(up[0], od) : 0, kd = nsp == 3 ? K : 1;
            double best = -INFINITY;
            int64_t at = (d0 * I + h0) * I + w0;
            for (int64_t a = d0; a < d0 + kd; a++)
                for (int64_t b = h0; b < h0 + K; b++)
                    for (int64_t c = w0; c < w0 + K; c++) {
                        const int64_t i = (a * I + b) * I + c;
                        const double v = x[p * ip + i];
                        if (v > best || isnan(v)) best = v, at = i;
                    }
            const double got = fp_get(d, hy, p * op + o);
            if (hi[p * op + o] != at || !(got == best || (isnan(got) && isnan(best)))) bad++;
        }
    if (bad) {
        fprintf(stderr, "  %s %dd: %d outputs differ\n", axon_dtype_name(d), nsp, bad);
        check_failures_in_test++;
    }
    axon_mem_free(k->dev, dx), axon_mem_free(k->dev, du), axon_mem_free(k->dev, dy), axon_mem_free(k->dev, di);
    free(x), free(hx), free(hu), free(hy), free(hi);
}

static void test_windows_maxima_and_indices_match_the_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    fp_check(&k, AXON_FLOAT32, 2);
    fp_check(&k, AXON_FLOAT64, 2);
    fp_check(&k, AXON_FLOAT32, 3);
    fp_check(&k, AXON_FLOAT64, 3);
    fp_check(&k, AXON_FLOAT16, 2);
    fp_check(&k, AXON_BFLOAT16, 3);
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

static void test_bad_arguments_are_refused_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float buf[2 * 8 * 8], u[4];
    int64_t ix[2 * 3 * 3];
    int64_t si[3] = {2, 8, 8}, so[3] = {2, 3, 3}, ks[2] = {7, 2}, ok[2] = {2, 2};
    axon_tensor_t in = kc_tensor(buf, AXON_FLOAT32, 3, si, NULL), out = kc_tensor(buf, AXON_FLOAT32, 3, so, NULL);
    axon_tensor_t idx = kc_tensor(ix, AXON_INT64, 3, so, NULL), tu = kc_vector(u, AXON_FLOAT32, 4);
    CHECK_STATUS(axon_kernel_fractional_max_pool(k.s, &out, &idx, &in, &tu, ks, 2), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("kernel 7 and output size 3 do not fit input size 8");
    axon_tensor_t short_u = kc_vector(u, AXON_FLOAT32, 3);
    CHECK_STATUS(axon_kernel_fractional_max_pool(k.s, &out, &idx, &in, &short_u, ok, 2), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("2 values per plane");
    axon_tensor_t half = kc_tensor(buf, AXON_FLOAT16, 3, si, NULL), half_out = kc_tensor(buf, AXON_FLOAT16, 3, so, NULL);
    CHECK_STATUS(axon_kernel_fractional_max_pool(k.s, &half_out, &idx, &half, &tu, ok, 2), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("samples float32 (one floating dtype)");
    axon_tensor_t ints = kc_tensor(buf, AXON_INT32, 3, si, NULL), ints_out = kc_tensor(buf, AXON_INT32, 3, so, NULL);
    axon_tensor_t ints_u = kc_vector(u, AXON_INT32, 4);
    CHECK_STATUS(axon_kernel_fractional_max_pool(k.s, &ints_out, &idx, &ints, &ints_u, ok, 2), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_fractional_max_pool(k.s, &out, &idx, &in, &tu, ok, 1), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_windows_maxima_and_indices_match_the_reference);
    RUN(test_bad_arguments_are_refused_with_a_message);
    return check_report();
}
