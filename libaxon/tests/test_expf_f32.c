/* pw_expf and pw_gauss_f32 (kernels/pointwise_math.h), the float exp of eager kernels, attention and tier-1 code:
 * the error against double exp over sweeps of floats, the special values, and gelu_backward's Gaussian giving
 * pw_expf's bits. */
#include <math.h>
#include <stdint.h>

#include "../kernels/pointwise_math.h"
#include "check.h"
#include "ulps.h"

/* Every 61st float of either sign up to 104 in magnitude (results from subnormal to overflow): at most 0.9 ulp
 * (0.89 measured over every float); finite where exp is below FLT_MAX. */
static void test_expf_error_over_a_sweep(void) {
    double worst = 0;
    float worst_x = 0;
    for (int sign = 0; sign < 2; sign++)
        for (uint32_t u = 0; u <= 0x42d00000u; u += 61) { /* 0x42d00000 = 104 */
            const float x = sign ? -axon_f32_from_bits(u) : axon_f32_from_bits(u);
            const double want = exp((double)x);
            if (want > 0x1.fffffep127) {
                CHECK(isinf(pw_expf(x)));
                continue;
            }
            const double e = ulps_f32(pw_expf(x), want);
            if (e > worst) worst = e, worst_x = x;
        }
    if (worst > 0.9) fprintf(stderr, "  pw_expf: %.3f ulp at %.9g\n", worst, (double)worst_x);
    CHECK(worst <= 0.9);
}

static void test_expf_special_values(void) {
    CHECK(pw_expf(0.0f) == 1.0f && pw_expf(-0.0f) == 1.0f);
    CHECK(pw_expf(1.0f) == (float)exp(1.0)); /* correctly rounded at one */
    CHECK(pw_expf(INFINITY) == INFINITY && pw_expf(89.0f) == INFINITY && pw_expf(1e30f) == INFINITY);
    CHECK(pw_expf(-INFINITY) == 0.0f && pw_expf(-104.0f) == 0.0f && pw_expf(-1e30f) == 0.0f);
    CHECK(pw_expf(-100.0f) > 0.0f && pw_expf(-100.0f) < 0x1p-126f); /* subnormal, not flushed */
    CHECK(isnan(pw_expf(NAN)) && isnan(pw_expf(-NAN)));
}

/* pw_gauss_f32(y) is pw_expf(-y^2 / 2) bit for bit (every 61st float to 15, past which both are 0), so it is as
 * accurate; it is even. */
static void test_gauss_is_expf_of_minus_half_square(void) {
    int differ = 0;
    for (uint32_t u = 0; u <= 0x41700000u; u += 61) {
        const float y = axon_f32_from_bits(u);
        differ += pw_gauss_f32(y) != pw_expf(y * y * -0.5f);
        differ += pw_gauss_f32(-y) != pw_gauss_f32(y);
    }
    CHECK(differ == 0);
}

static void test_gauss_special_values(void) {
    CHECK(pw_gauss_f32(0.0f) == 1.0f && pw_gauss_f32(-0.0f) == 1.0f && pw_gauss_f32(0x1p-140f) == 1.0f);
    CHECK(pw_gauss_f32(INFINITY) == 0.0f && pw_gauss_f32(-INFINITY) == 0.0f);
    CHECK(pw_gauss_f32(15.0f) == 0.0f && pw_gauss_f32(1e30f) == 0.0f);
    CHECK(isnan(pw_gauss_f32(NAN)) && isnan(pw_gauss_f32(-NAN)));
}

int main(void) {
    RUN(test_expf_error_over_a_sweep);
    RUN(test_expf_special_values);
    RUN(test_gauss_is_expf_of_minus_half_square);
    RUN(test_gauss_special_values);
    return check_report();
}
