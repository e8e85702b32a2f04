/* Errors of float results in units in the last place, for the tests of libaxon's float math functions. */
#ifndef AXON_TESTS_ULPS_H
#define AXON_TESTS_ULPS_H

#include <math.h>

/* |got - want| in units of the float spacing at want (the subnormal spacing below 2^-126). */
static inline double ulps_f32(float got, double want) {
    const double a = fabs(want);
    const double spacing = a < 0x1p-126 ? 0x1p-149 : ldexp(1.0, ilogb(a) - 23);
    return fabs((double)got - want) / spacing;
}

#endif
