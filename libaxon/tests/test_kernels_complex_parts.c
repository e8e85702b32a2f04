/* axon/complex_parts.h against direct references: complex() copies its parts exactly, with broadcasting and strided
 * operands; polar is within a few ulps of libm's abs * cos(angle), abs * sin(angle) (the unary loops' cos and sin
 * are libmvec's vector functions); the same bits for 1 and 4 threads; bad input refused with a message. */
#include <math.h>
#include <stdio.h>

#include "axon/complex_parts.h"
#include "kernels_check.h"

/* out [R, C] complex from a [R, 1] (broadcast along columns) and b [C, R] transposed (b's stride 1 along R). */
static void cp_check(kc_dev_t *k, int f64, axon_complex_parts_t parts, int64_t R, int64_t C) {
    const size_t es = f64 ? 8 : 4;
    const axon_dtype_t real = f64 ? AXON_FLOAT64 : AXON_FLOAT32, cplx = f64 ? AXON_COMPLEX128 : AXON_COMPLEX64;
    char *ha = malloc((size_t)R * es), *hb = malloc((size_t)(R * C) * es), *ho = malloc((size_t)(R * C) * 2 * es);
    uint32_t st = 11;
    for (int64_t i = 0; i < R; i++) {
        const double v = ((double)(kc_next_u24(&st) % 2001) - 1000.0) / 64.0;
        if (f64) ((double *)ha)[i] = v;
        else ((float *)ha)[i] = (float)v;
    }
    for (int64_t i = 0; i < R * C; i++) {
        const double v = ((double)(kc_next_u24(&st) % 200001) - 100000.0) / 1024.0; /* angles up to ~100 */
        if (f64) ((double *)hb)[i] = v;
        else ((float *)hb)[i] = (float)v;
    }
    void *da = kc_upload(k, ha, (size_t)R * es), *db = kc_upload(k, hb, (size_t)(R * C) * es);
    void *dout = kc_upload(k, NULL, (size_t)(R * C) * 2 * es);
    const int64_t shape[2] = {R, C}, sa[2] = {1, 0}, sb[2] = {1, R};
    axon_tensor_t to = kc_tensor(dout, cplx, 2, shape, NULL), ta = kc_tensor(da, real, 2, shape, sa),
                  tb = kc_tensor(db, real, 2, shape, sb);
    CHECK_OK(axon_kernel_complex_parts(k->s, parts, &to, &ta, &tb));
    CHECK(kc_download(k, ho, dout, (size_t)(R * C) * 2 * es));
    double worst = 0;
    int64_t bad = -1;
    for (int64_t r = 0; r < R && bad < 0; r++)
        for (int64_t c = 0; c < C && bad < 0; c++) {
            const double a = f64 ? ((double *)ha)[r] : ((float *)ha)[r];
            const double b = f64 ? ((double *)hb)[c * R + r] : ((float *)hb)[c * R + r];
            const double re = f64 ? ((double *)ho)[2 * (r * C + c)] : ((float *)ho)[2 * (r * C + c)];
            const double im = f64 ? ((double *)ho)[2 * (r * C + c) + 1] : ((float *)ho)[2 * (r * C + c) + 1];
            if (parts == AXON_PARTS_CARTESIAN) {
                if (re != a || im != b) bad = r * C + c;
                continue;
            }
            /* within 4 ulps of the part's magnitude |a| (cos and sin within a few ulps of 1) */
            const double ulp = f64 ? ldexp(1.0, -52) : ldexp(1.0, -23);
            const double er = fabs(re - a * cos(b)), ei = fabs(im - a * sin(b));
            const double e = (er > ei ? er : ei) / (fabs(a) * ulp + 1e-300);
            if (e > worst) worst = e;
            if (e > 4) bad = r * C + c;
        }
    if (bad >= 0) {
        fprintf(stderr, "  %s parts=%d [%lld, %lld]: element %lld wrong (worst %.2f ulps)\n", axon_dtype_name(cplx),
                (int)parts, (long long)R, (long long)C, (long long)bad, worst);
        check_failures_in_test++;
    }
    axon_mem_free(k->dev, da), axon_mem_free(k->dev, db), axon_mem_free(k->dev, dout);
    free(ha), free(hb), free(ho);
}

static void test_parts_match_the_reference_with_broadcast_and_strided_operands(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    for (int f64 = 0; f64 < 2; f64++)
        for (int p = 0; p < 2; p++) {
            const axon_complex_parts_t parts = p ? AXON_PARTS_POLAR : AXON_PARTS_CARTESIAN;
            cp_check(&k, f64, parts, 5, 3);
            cp_check(&k, f64, parts, 300, 257);   /* several blocks of angles, a partial one last */
            cp_check(&k, f64, parts, 1, 1);
        }
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

/* Polar's cos and sin loops are padded, so a value does not depend on the chunk it falls in. */
static void test_polar_is_bitwise_the_same_for_any_thread_count(void) {
    const int64_t n = 300001;
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
    float *res[2] = {malloc(sizeof(float) * 2 * (size_t)n), malloc(sizeof(float) * 2 * (size_t)n)};
    for (int64_t i = 0; i < n; i++) a[i] = (float)(1.0 + 0.001 * (double)(i % 977)), b[i] = (float)sin((double)i) * 50;
    for (int t = 0; t < 2; t++) {
        kc_dev_t k = kc_open(t ? 4 : 1);
        REQUIRE(k.s);
        void *da = kc_upload(&k, a, sizeof(float) * (size_t)n), *db = kc_upload(&k, b, sizeof(float) * (size_t)n);
        void *dout = kc_upload(&k, NULL, sizeof(float) * 2 * (size_t)n);
        axon_tensor_t to = kc_vector(dout, AXON_COMPLEX64, n), ta = kc_vector(da, AXON_FLOAT32, n),
                      tb = kc_vector(db, AXON_FLOAT32, n);
        CHECK_OK(axon_kernel_complex_parts(k.s, AXON_PARTS_POLAR, &to, &ta, &tb));
        CHECK(kc_download(&k, res[t], dout, sizeof(float) * 2 * (size_t)n));
        axon_mem_free(k.dev, da), axon_mem_free(k.dev, db), axon_mem_free(k.dev, dout);
        axon_runtime_destroy(k.rt);
    }
    CHECK(kc_first_diff(res[0], res[1], sizeof(float) * 2 * (size_t)n) < 0);
    free(a), free(b), free(res[0]), free(res[1]);
}

static void test_bad_arguments_are_refused_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    double buf[64];
    const int64_t s4[1] = {4}, s5[1] = {5};
    axon_tensor_t o = kc_tensor(buf, AXON_COMPLEX64, 1, s4, NULL), a = kc_tensor(buf, AXON_FLOAT32, 1, s4, NULL);
    axon_tensor_t a5 = kc_tensor(buf, AXON_FLOAT32, 1, s5, NULL), a64 = kc_tensor(buf, AXON_FLOAT64, 1, s4, NULL);
    axon_tensor_t o32 = kc_tensor(buf, AXON_FLOAT32, 1, s4, NULL);
    CHECK_STATUS(axon_kernel_complex_parts(k.s, AXON_PARTS_POLAR, &o, &a, &a5), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("polar: shapes [4], [4] and [5] differ");
    CHECK_STATUS(axon_kernel_complex_parts(k.s, AXON_PARTS_CARTESIAN, &o, &a, &a64), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("complex: out, a and b must be complex64 and float32");
    CHECK_STATUS(axon_kernel_complex_parts(k.s, AXON_PARTS_CARTESIAN, &o32, &a, &a), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_complex_parts(k.s, (axon_complex_parts_t)7, &o, &a, &a), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("unknown parts 7");
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_parts_match_the_reference_with_broadcast_and_strided_operands);
    RUN(test_polar_is_bitwise_the_same_for_any_thread_count);
    RUN(test_bad_arguments_are_refused_with_a_message);
    return check_report();
}
