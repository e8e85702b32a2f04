/* pw_gauss_f32 (kernels/pointwise_math.h), gelu_backward's exp(-y^2 / 2) in float: its error against double exp of
 * the same rounded argument over a sweep of floats, evenness, and the special values. */
#include <math.h>
#include <stdint.h>

#include "../kernels/pointwise_math.h"
#include "check.h"

/* |got - want| in units of the float spacing at want (subnormal spacing below 2^-126). */
static double ulps(float got, double want) {
    const double a = fabs(want);
    const double spacing = a < 0x1p-126 ? 0x1p-149 : ldexp(1.0, ilogb(a) - 23);
    return fabs((double)got - want) / spacing;
}

/* The argument as the kernel rounds it, so that only the exp's error is measured. */
static double want_gauss(float y) { return exp((double)(y * y * -0.5f)); }

/* Every 61st float from 2^-126 to 15 (past it the result is 0): at most 0.9 ulp, subnormal results included
 * (0.89 measured over every float). */
static void test_error_over_a_sweep(void) {
    double worst = 0;
    float worst_y = 0;
    for (uint32_t u = 0x00800000u; u <= 0x41700000u; u += 61) {
        const float y = axon_f32_from_bits(u);
        const double e = ulps(pw_gauss_f32(y), want_gauss(y));
        if (e > worst) worst = e, worst_y = y;
    }
    if (worst > 0.9) fprintf(stderr, "  pw_gauss_f32: %.3f ulp at %.9g\n", worst, (double)worst_y);
    CHECK(worst <= 0.9);
}

static void test_even(void) {
    for (uint32_t u = 0x00800000u; u <= 0x41700000u; u += 7919) {
        const float y = axon_f32_from_bits(u);
        CHECK(pw_gauss_f32(-y) == pw_gauss_f32(y));
    }
}

static void test_special_values(void) {
    CHECK(pw_gauss_f32(0.0f) == 1.0f && pw_gauss_f32(-0.0f) == 1.0f);
    CHECK(pw_gauss_f32(0x1p-140f) == 1.0f);
    CHECK(pw_gauss_f32(INFINITY) == 0.0f && pw_gauss_f32(-INFINITY) == 0.0f);
    CHECK(pw_gauss_f32(15.0f) == 0.0f && pw_gauss_f32(1e30f) == 0.0f);
    CHECK(isnan(pw_gauss_f32(NAN)) && isnan(pw_gauss_f32(-NAN)));
    CHECK(pw_gauss_f32(1.0f) == (float)exp(-0.5)); /* correctly rounded at one */
}

int main(void) {
    RUN(test_error_over_a_sweep);
    RUN(test_even);
    RUN(test_special_values);
    return check_report();
}
