/* GEMM epilogues (program_epilogue.c): an elementwise group that reads a matrix product runs inside the product's
 * command. Each program is compiled twice, with epilogues and with AXON_GEMM_EPILOGUE=0, and run on the same inputs:
 * the results must be the same bits (the same product, the same group code), match a double-precision reference, and
 * the trace must show the group's own command only where no epilogue was planned or the layout refused one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/compiler.h"
#include "axon/trace.h"
#include "compile_check.h"

static axon_program_t *compile_text(const char *text, int epilogues) {
    if (epilogues) unsetenv("AXON_GEMM_EPILOGUE");
    else setenv("AXON_GEMM_EPILOGUE", "0", 1);
    axon_compile_options_t o = axon_compile_options_default();
    o.tier1 = 0;   /* tier 0's interpreter; tier 1's functions as epilogues are covered by tests/test_compile_*.py */
    axon_program_t *p = NULL;
    axon_axir_diag_t d;
    if (axon_compile_text(text, strlen(text), &o, &p, &d) != AXON_OK) {
        char buf[600];
        fprintf(stderr, "compile failed: %s\n", axon_axir_diag_format(&d, buf, sizeof buf));
    }
    unsetenv("AXON_GEMM_EPILOGUE");
    return p;
}

/* Runs p and counts the commands named "fused" that the run enqueued. */
static int run_counting(const kc_dev_t *k, const axon_program_t *p, int nin, const axon_tensor_t *ins, int nout,
                        axon_tensor_t *outs, int *fused) {
    CHECK_OK(axon_trace_clear(k->rt));
    CHECK_OK(axon_trace_enable(k->rt, 1));
    axon_status_t st = tc_run(k, p, nin, ins, nout, outs, NULL);
    CHECK_OK(axon_trace_enable(k->rt, 0));
    size_t n = axon_trace_count(k->rt), got = 0;
    axon_trace_record_t *r = calloc(n ? n : 1, sizeof *r);
    CHECK_OK(axon_trace_read(k->rt, 0, n, r, &got));
    *fused = 0;
    for (size_t i = 0; i < got; i++) *fused += strcmp(r[i].name, "fused") == 0;
    free(r);
    return st == AXON_OK;
}

static int close_to(const float *got, const double *want, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-4 * (1.0 + fabs(want[i])))) {
            fprintf(stderr, "%s: element %lld is %.9g, expected %.9g\n", what, (long long)i, got[i], want[i]);
            return 0;
        }
    return 1;
}

/* Compiles text both ways, runs both on ins and checks them against want (output 0, n elements); *fused_with and
 * *fused_without get the number of group commands each run launched. */
static void compare(const char *text, int nin, const axon_tensor_t *ins, const double *want, int64_t n,
                    const char *what, int *fused_with, int *fused_without) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.rt);
    axon_program_t *with = compile_text(text, 1), *without = compile_text(text, 0);
    CHECK(with != NULL && without != NULL);
    if (with && without) {
        axon_tensor_t a[1], b[1];
        CHECK(run_counting(&k, with, nin, ins, 1, a, fused_with));
        CHECK(run_counting(&k, without, nin, ins, 1, b, fused_without));
        if (a[0].data && b[0].data) {
            CHECK(memcmp(a[0].data, b[0].data, (size_t)n * sizeof(float)) == 0);
            CHECK(close_to(a[0].data, want, n, what));
        }
        tc_free_outs(1, a);
        tc_free_outs(1, b);
    }
    axon_program_destroy(with);
    axon_program_destroy(without);
    axon_runtime_destroy(k.rt);
}

static double gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

/* y = gelu(x @ w^T + b) + r, through a reshape of the product: rows of x (m) of 5 (one thread, the library), 64
 * (columns split) and 512 (rows split, the epilogue on each block of rows as it is finished). */
static void test_linear_gelu_residual(void) {
    static const int64_t rows[3] = {5, 64, 512};
    for (int ri = 0; ri < 3; ri++) {
        const int64_t m = rows[ri], kd = 256, n = 256;
        char text[1024];
        snprintf(text, sizeof text,
                 "axir 1\n"
                 "func @main(%%x: f32[%lld, 256], %%w: f32[256, 256], %%b: f32[256], %%r: f32[%lld, 16, 16]) -> "
                 "(f32[%lld, 16, 16]) {\n"
                 "  %%wt = permute(%%w) {dims = [1, 0]} : f32[256, 256]\n"
                 "  %%h = addmm(%%b, %%x, %%wt) : f32[%lld, 256]\n"
                 "  %%h3 = reshape(%%h) {shape = [%lld, 16, 16]} : f32[%lld, 16, 16]\n"
                 "  %%g = gelu(%%h3) {approximate = \"none\"} : f32[%lld, 16, 16]\n"
                 "  %%y = add(%%g, %%r) : f32[%lld, 16, 16]\n"
                 "  return %%y\n"
                 "}\n",
                 (long long)m, (long long)m, (long long)m, (long long)m, (long long)m, (long long)m, (long long)m,
                 (long long)m);
        float *x = malloc((size_t)(m * kd) * 4), *w = malloc((size_t)(n * kd) * 4), *b = malloc((size_t)n * 4);
        float *r = malloc((size_t)(m * n) * 4);
        double *want = malloc((size_t)(m * n) * 8);
        tc_fill(x, m * kd, 1 + (unsigned)ri), tc_fill(w, n * kd, 2), tc_fill(b, n, 3), tc_fill(r, m * n, 4);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = b[j];
                for (int64_t q = 0; q < kd; q++) acc += (double)x[i * kd + q] * w[j * kd + q];
                want[i * n + j] = gelu(acc) + r[i * n + j];
            }
        const int64_t xs[2] = {m, kd}, ws[2] = {n, kd}, bs[1] = {n}, rs[3] = {m, 16, 16};
        axon_tensor_t in[4] = {kc_tensor(x, AXON_FLOAT32, 2, xs, NULL), kc_tensor(w, AXON_FLOAT32, 2, ws, NULL),
                               kc_tensor(b, AXON_FLOAT32, 1, bs, NULL), kc_tensor(r, AXON_FLOAT32, 3, rs, NULL)};
        int with = -1, without = -1;
        compare(text, 4, in, want, m * n, "linear gelu residual", &with, &without);
        CHECK(with == 0 && without == 1);
        free(x), free(w), free(b), free(r), free(want);
    }
}

/* A batch of products (bmm) then relu and a doubling: one group per batch element's rows. */
static void test_bmm_relu(void) {
    static const char *text =
        "axir 1\n"
        "func @main(%z: f32[3, 40, 48], %v: f32[3, 48, 24]) -> (f32[3, 40, 24]) {\n"
        "  %p = bmm(%z, %v) : f32[3, 40, 24]\n"
        "  %q = relu(%p) : f32[3, 40, 24]\n"
        "  %y = add(%q, %q) : f32[3, 40, 24]\n"
        "  return %y\n"
        "}\n";
    float z[3 * 40 * 48], v[3 * 48 * 24];
    double want[3 * 40 * 24];
    tc_fill(z, 3 * 40 * 48, 5), tc_fill(v, 3 * 48 * 24, 6);
    for (int bi = 0; bi < 3; bi++)
        for (int i = 0; i < 40; i++)
            for (int j = 0; j < 24; j++) {
                double acc = 0;
                for (int q = 0; q < 48; q++) acc += (double)z[(bi * 40 + i) * 48 + q] * v[(bi * 48 + q) * 24 + j];
                want[(bi * 40 + i) * 24 + j] = 2 * fmax(acc, 0.0);
            }
    const int64_t zs[3] = {3, 40, 48}, vs[3] = {3, 48, 24};
    axon_tensor_t in[2] = {kc_tensor(z, AXON_FLOAT32, 3, zs, NULL), kc_tensor(v, AXON_FLOAT32, 3, vs, NULL)};
    int with = -1, without = -1;
    compare(text, 2, in, want, 3 * 40 * 24, "bmm relu", &with, &without);
    CHECK(with == 0 && without == 1);
}

/* The group reads the product transposed: not in the product's row order, so no epilogue is planned (the permute
 * between them is not a reshape) and the group runs as its own command. */
static void test_transposed_read_stays_a_command(void) {
    static const char *text =
        "axir 1\n"
        "func @main(%x: f32[32, 20], %w: f32[20, 32], %c: f32[32, 32]) -> (f32[32, 32]) {\n"
        "  %p = mm(%x, %w) : f32[32, 32]\n"
        "  %t = permute(%p) {dims = [1, 0]} : f32[32, 32]\n"
        "  %s = mul(%t, %c) : f32[32, 32]\n"
        "  %y = tanh(%s) : f32[32, 32]\n"
        "  return %y\n"
        "}\n";
    float x[32 * 20], w[20 * 32], c[32 * 32];
    double want[32 * 32];
    tc_fill(x, 32 * 20, 7), tc_fill(w, 20 * 32, 8), tc_fill(c, 32 * 32, 9);
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 32; j++) {
            double acc = 0;   /* y[i][j] = tanh(p[j][i] * c[i][j]) */
            for (int q = 0; q < 20; q++) acc += (double)x[j * 20 + q] * w[q * 32 + i];
            want[i * 32 + j] = tanh(acc * c[i * 32 + j]);
        }
    const int64_t xs[2] = {32, 20}, wsz[2] = {20, 32}, cs[2] = {32, 32};
    axon_tensor_t in[3] = {kc_tensor(x, AXON_FLOAT32, 2, xs, NULL), kc_tensor(w, AXON_FLOAT32, 2, wsz, NULL),
                           kc_tensor(c, AXON_FLOAT32, 2, cs, NULL)};
    int with = -1, without = -1;
    compare(text, 3, in, want, 32 * 32, "transposed read", &with, &without);
    CHECK(with == 1 && without == 1);
}

int main(void) {
    RUN(test_linear_gelu_residual);
    RUN(test_bmm_relu);
    RUN(test_transposed_read_stays_a_command);
    return check_report();
}
