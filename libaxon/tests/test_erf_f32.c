/* pw_erf_f32 (kernels/pointwise_math.h), gelu's float erf in eager kernels and tier-1 code: its error against
 * double erf over a sweep of floats, oddness, and the special values. */
#include <math.h>
#include <stdint.h>

#include "../kernels/pointwise_math.h"
#include "check.h"
#include "ulps.h"

/* Every 61st float from 2^-126 to 8: at most 6.5 ulp (6.0 measured over every float). */
static void test_error_over_a_sweep(void) {
    double worst = 0;
    float worst_x = 0;
    for (uint32_t u = 0x00800000u; u <= 0x41000000u; u += 61) {
        const float x = axon_f32_from_bits(u);
        const double e = ulps_f32(pw_erf_f32(x), erf((double)x));
        if (e > worst) worst = e, worst_x = x;
    }
    if (worst > 6.5) fprintf(stderr, "  pw_erf_f32: %.2f ulp at %.9g\n", worst, (double)worst_x);
    CHECK(worst <= 6.5);
}

static void test_odd(void) {
    for (uint32_t u = 0x00800000u; u <= 0x41000000u; u += 7919) {
        const float x = axon_f32_from_bits(u);
        CHECK(pw_erf_f32(-x) == -pw_erf_f32(x));
    }
}

static void test_special_values(void) {
    CHECK(pw_erf_f32(0.0f) == 0.0f && !signbit(pw_erf_f32(0.0f)));
    CHECK(pw_erf_f32(-0.0f) == 0.0f && signbit(pw_erf_f32(-0.0f)));
    CHECK(pw_erf_f32(INFINITY) == 1.0f && pw_erf_f32(-INFINITY) == -1.0f);
    CHECK(pw_erf_f32(3.86f) == 1.0f && pw_erf_f32(1e30f) == 1.0f && pw_erf_f32(-50.0f) == -1.0f);
    CHECK(isnan(pw_erf_f32(NAN)) && isnan(pw_erf_f32(-NAN)));
    /* subnormal arguments: erf(x) = 2x / sqrt(pi) to float precision */
    const float tiny = 0x1p-140f;
    CHECK(ulps_f32(pw_erf_f32(tiny), 1.1283791670955126 * (double)tiny) <= 1);
}

int main(void) {
    RUN(test_error_over_a_sweep);
    RUN(test_odd);
    RUN(test_special_values);
    return check_report();
}
