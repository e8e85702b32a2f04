/* fmod, remainder and div_floor (kernels/pointwise_fmod.c: the exact remainder in vector arithmetic, glibc's fmod for
 * the elements it cannot do): float32 bit for bit against fmodf and PyTorch's formulas over pairs that cross every
 * path (quotients on both sides of 2^29, subnormals, signed zeros, infinities, NaN, b = 0), in blocks where the fast
 * and slow elements mix, and with a broadcast divisor (the kernels' number operand); bfloat16, whose operands load as
 * float; float64 against fmod, with quotients just below and above integers (its one correction) and near 2^52. */
#include <math.h>
#include <string.h>

#include "../kernels/dtype.h"
#include "kernels_check.h"

#define N 6000

static float remainder_ref(float a, float b) {
    const float mod = fmodf(a, b);
    return mod != 0 && (b < 0) != (mod < 0) ? mod + b : mod;
}

static float div_floor_ref(float a, float b) {
    if (b == 0) return a / b;
    const float mod = fmodf(a, b);
    float div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return copysignf(0.0f, a / b);
    const float fl = floorf(div);
    return div - fl > 0.5f ? fl + 1 : fl;
}

static float reference(axon_binary_op_t op, float a, float b) {
    return op == AXON_BINARY_FMOD ? fmodf(a, b) : op == AXON_BINARY_REMAINDER ? remainder_ref(a, b)
                                                                              : div_floor_ref(a, b);
}

static int same_bits(float x, float y) { return (isnan(x) && isnan(y)) || memcmp(&x, &y, 4) == 0; }

static uint32_t rng = 12345;
static uint32_t next(void) { return rng = rng * 1664525u + 1013904223u; }

/* Pairs: random magnitudes over the whole float range and quotients near 2^29, plus a grid of special values. */
static void pairs(float *a, float *b) {
    static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f, 3e38f, -3e38f,
                                     INFINITY, -INFINITY, NAN, 7.5f, 0.1f, 16777217.0f, 0x1p29f, 0x1p30f};
    const int ns = (int)(sizeof specials / sizeof specials[0]);
    int i = 0;
    for (int p = 0; p < ns; p++)
        for (int q = 0; q < ns; q++, i++) a[i] = specials[p], b[i] = specials[q];
    for (; i < N / 2; i++) {
        const uint32_t ua = next(), ub = next();
        float fa, fb;
        memcpy(&fa, &ua, 4), memcpy(&fb, &ub, 4);
        a[i] = fa, b[i] = fb;
    }
    for (; i < N; i++) { /* quotients just below and above 2^29: the two paths' border */
        const float bb = (float)(next() % 1000 + 1) * 0.37f;
        const float q = 0x1p29f * (0.99f + (float)(next() % 2000) * 1e-5f);
        a[i] = (next() & 1 ? -1 : 1) * q * bb + (float)(next() % 7), b[i] = next() & 1 ? bb : -bb;
    }
}

static void test_float32_matches_fmodf_and_pytorchs_formulas(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static float a[N], b[N], got[N];
    pairs(a, b);
    CHECK(b[12] == 7.5f); /* the broadcast divisor below */
    const int64_t n = N;
    float *da = kc_upload(&k, a, sizeof a), *db = kc_upload(&k, b, sizeof b), *dout = kc_upload(&k, NULL, sizeof a);
    REQUIRE(da && db && dout);
    axon_tensor_t ta = kc_tensor(da, AXON_FLOAT32, 1, &n, NULL), tb = kc_tensor(db, AXON_FLOAT32, 1, &n, NULL);
    axon_tensor_t to = kc_tensor(dout, AXON_FLOAT32, 1, &n, NULL);
    const axon_binary_op_t ops[3] = {AXON_BINARY_FMOD, AXON_BINARY_REMAINDER, AXON_BINARY_DIV_FLOOR};
    for (int o = 0; o < 3; o++) {
        REQUIRE(axon_kernel_binary(k.s, ops[o], &to, &ta, &tb, NULL) == AXON_OK &&
                kc_download(&k, got, dout, sizeof got));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            const float want = reference(ops[o], a[i], b[i]);
            if (!same_bits(got[i], want) && bad++ < 3)
                fprintf(stderr, "  %s(%a, %a) = %a, want %a\n", axon_binary_op_name(ops[o]), (double)a[i], (double)b[i],
                        (double)got[i], (double)want);
        }
        CHECK(bad == 0);
        /* a divisor broadcast from one element */
        const int64_t zero = 0;
        axon_tensor_t tb0 = kc_tensor(db + 12, AXON_FLOAT32, 1, &n, &zero); /* b[12] = specials[12] = 7.5 */
        REQUIRE(axon_kernel_binary(k.s, ops[o], &to, &ta, &tb0, NULL) == AXON_OK &&
                kc_download(&k, got, dout, sizeof got));
        bad = 0;
        for (int i = 0; i < N; i++) bad += !same_bits(got[i], reference(ops[o], a[i], 7.5f));
        CHECK(bad == 0);
    }
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, db), axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

/* bfloat16: the float result of the bfloat16 operands, rounded to bfloat16. */
static void test_bfloat16_rounds_the_float_result(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static float a[N], b[N];
    static uint16_t ha[N], hb[N], got[N];
    pairs(a, b);
    for (int i = 0; i < N; i++) ha[i] = axon_f32_to_bf16(a[i]), hb[i] = axon_f32_to_bf16(b[i]);
    const int64_t n = N;
    void *da = kc_upload(&k, ha, sizeof ha), *db = kc_upload(&k, hb, sizeof hb);
    void *dout = kc_upload(&k, NULL, sizeof ha);
    REQUIRE(da && db && dout);
    axon_tensor_t ta = kc_tensor(da, AXON_BFLOAT16, 1, &n, NULL), tb = kc_tensor(db, AXON_BFLOAT16, 1, &n, NULL);
    axon_tensor_t to = kc_tensor(dout, AXON_BFLOAT16, 1, &n, NULL);
    const axon_binary_op_t ops[3] = {AXON_BINARY_FMOD, AXON_BINARY_REMAINDER, AXON_BINARY_DIV_FLOOR};
    for (int o = 0; o < 3; o++) {
        REQUIRE(axon_kernel_binary(k.s, ops[o], &to, &ta, &tb, NULL) == AXON_OK &&
                kc_download(&k, got, dout, sizeof got));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            const float want = reference(ops[o], axon_bf16_to_f32(ha[i]), axon_bf16_to_f32(hb[i]));
            const uint16_t w = axon_f32_to_bf16(want);
            bad += got[i] != w && !(isnan(want) && isnan(axon_bf16_to_f32(got[i])));
        }
        CHECK(bad == 0);
    }
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, db), axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

static double remainder_ref64(double a, double b) {
    const double mod = fmod(a, b);
    return mod != 0 && (b < 0) != (mod < 0) ? mod + b : mod;
}

static void test_float64_matches_fmod(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static double a[N], b[N], got[N];
    static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0x1p-1074, 0x1p-1022, 1e308, -1e308, INFINITY, -INFINITY,
                                      NAN, 7.5, 0.1, 0x1p52, 0x1p53 + 2};
    const int ns = (int)(sizeof specials / sizeof specials[0]);
    int n = 0;
    for (int p = 0; p < ns; p++)
        for (int q = 0; q < ns; q++, n++) a[n] = specials[p], b[n] = specials[q];
    for (; n < N / 3; n++) { /* any bit patterns */
        const uint64_t ua = (uint64_t)next() << 32 | next(), ub = (uint64_t)next() << 32 | next();
        memcpy(&a[n], &ua, 8), memcpy(&b[n], &ub, 8);
    }
    for (; n < N; n++) { /* a = n b rounded, n up to 2^51: quotients a hair below or above an integer */
        const double bb = ((double)(next() % 100000) + 1) * 0.0137 * (next() & 1 ? 1 : -1);
        const double q = ldexp((double)(next() % 1000000 + 1), (int)(next() % 32));
        a[n] = q * bb * (next() & 1 ? 1 : -1), b[n] = bb;
    }
    const int64_t len = N;
    double *da = kc_upload(&k, a, sizeof a), *db = kc_upload(&k, b, sizeof b), *dout = kc_upload(&k, NULL, sizeof a);
    REQUIRE(da && db && dout);
    axon_tensor_t ta = kc_tensor(da, AXON_FLOAT64, 1, &len, NULL), tb = kc_tensor(db, AXON_FLOAT64, 1, &len, NULL);
    axon_tensor_t to = kc_tensor(dout, AXON_FLOAT64, 1, &len, NULL);
    const axon_binary_op_t ops[2] = {AXON_BINARY_FMOD, AXON_BINARY_REMAINDER};
    for (int o = 0; o < 2; o++) {
        REQUIRE(axon_kernel_binary(k.s, ops[o], &to, &ta, &tb, NULL) == AXON_OK &&
                kc_download(&k, got, dout, sizeof got));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            const double want = o ? remainder_ref64(a[i], b[i]) : fmod(a[i], b[i]);
            if (!((isnan(want) && isnan(got[i])) || memcmp(&want, &got[i], 8) == 0) && bad++ < 3)
                fprintf(stderr, "  %s(%a, %a) = %a, want %a\n", axon_binary_op_name(ops[o]), a[i], b[i], got[i], want);
        }
        CHECK(bad == 0);
    }
    axon_mem_free(k.dev, da), axon_mem_free(k.dev, db), axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_float32_matches_fmodf_and_pytorchs_formulas);
    RUN(test_bfloat16_rounds_the_float_result);
    RUN(test_float64_matches_fmod);
    return check_report();
}
