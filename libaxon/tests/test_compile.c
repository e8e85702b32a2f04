/* The graph compiler (axon/compiler.h): passes checked on their printed IR (canonicalize, dce, fold, fuse), tier-0
 * execution of small graphs against plain C references computed here (an MLP, softmax and layer norm, reductions,
 * views, a fused chain, a dynamic dimension under three bindings, workspace reuse), and bad input: prepare with a
 * wrong dtype, rank, size or inconsistent symbols names the input; an op tier 0 cannot run is UNSUPPORTED.
 *
 * Tolerances (float32): library kernels and the fused interpreter compute in float32 or float64 from the same float32
 * inputs as the double reference, so results agree to a few float32 ulps: relative 1e-5 plus absolute 1e-5. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "axon/attention.h"
#include "axon/compiler.h"
#include "axon/dropout.h"
#include "axon/index.h"
#include "axon/loss.h"
#include "axon/norm.h"
#include "compile_check.h"
#include "kernels_check.h"

/* ---- helpers ---- */

typedef struct tc_log {
    char text[65536];
    size_t len;
} tc_log_t;

static void tc_print(void *user, const char *pass, const char *text) {
    tc_log_t *l = user;
    int n = snprintf(l->text + l->len, sizeof l->text - l->len, "== %s ==\n%s", pass, text);
    if (n > 0) l->len += (size_t)n < sizeof l->text - l->len ? (size_t)n : sizeof l->text - l->len - 1;
}

/* The text printed after `pass` (the first time), into buf. */
static const char *tc_after(const tc_log_t *l, const char *pass, char *buf, size_t n) {
    char key[64];
    snprintf(key, sizeof key, "== %s ==\n", pass);
    const char *p = strstr(l->text, key);
    buf[0] = 0;
    if (!p) return buf;
    p += strlen(key);
    const char *e = strstr(p, "== ");
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len >= n) len = n - 1;
    memcpy(buf, p, len);
    buf[len] = 0;
    return buf;
}

static axon_program_t *tc_compile(const char *text, int fuse, tc_log_t *log) {
    axon_compile_options_t o = axon_compile_options_default();
    o.fuse = fuse;
    o.tier1 = 0;   /* these tests are about tier 0: the interpreter runs every fused group */
    if (log) {
        log->len = 0;
        log->text[0] = 0;
        o.print_after_all = 1;
        o.print = tc_print;
        o.print_user = log;
    }
    axon_program_t *p = NULL;
    axon_axir_diag_t d;
    axon_status_t st = axon_compile_text(text, strlen(text), &o, &p, &d);
    if (st != AXON_OK) {
        char buf[600];
        fprintf(stderr, "compile failed: %s\n", axon_axir_diag_format(&d, buf, sizeof buf));
    }
    return p;
}

static axon_tensor_t tc_f32(float *data, int ndim, const int64_t *sizes) {
    return kc_tensor(data, AXON_FLOAT32, ndim, sizes, NULL);
}

static int tc_close(const float *got, const double *want, int64_t n, const char *what) {
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (isnan(w) ? !isnan(g) : fabs(g - w) > 1e-5 + 1e-5 * fabs(w)) {
            fprintf(stderr, "%s: element %lld is %.9g, expected %.9g\n", what, (long long)i, g, w);
            return 0;
        }
    }
    return 1;
}

static double tc_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double tc_gelu_tanh(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* ---- execution ---- */

static const char *mlp_text =
    "axir 1\n"
    "func @main(%x: f32[s0, 8], %w1: f32[16, 8], %b1: f32[16], %w2: f32[4, 16], %b2: f32[4]) -> (f32[s0, 4]) {\n"
    "  %w1t = permute(%w1) {dims = [1, 0]} : f32[8, 16]\n"
    "  %h = addmm(%b1, %x, %w1t) : f32[s0, 16]\n"
    "  %g = gelu(%h) {approximate = \"none\"} : f32[s0, 16]\n"
    "  %w2t = permute(%w2) {dims = [1, 0]} : f32[16, 4]\n"
    "  %y = addmm(%b2, %g, %w2t) : f32[s0, 4]\n"
    "  return %y\n"
    "}\n";

/* MLP (addmm + gelu + addmm) with a dynamic batch: one program, three bindings of s0. */
static void test_mlp_dynamic(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    for (int fuse = 0; fuse < 2; fuse++) {
        axon_program_t *p = tc_compile(mlp_text, fuse, NULL);
        CHECK(p != NULL);
        if (!p) continue;
        CHECK_EQ_I64(axon_program_num_inputs(p), 5);
        CHECK_EQ_I64(axon_program_num_outputs(p), 1);
        float w1[16 * 8], b1[16], w2[4 * 16], b2[4];
        tc_fill(w1, 128, 1), tc_fill(b1, 16, 2), tc_fill(w2, 64, 3), tc_fill(b2, 4, 4);
        const int64_t batches[3] = {1, 3, 7};
        for (int bi = 0; bi < 3; bi++) {
            int64_t s0 = batches[bi];
            float x[7 * 8];
            tc_fill(x, s0 * 8, 10 + (unsigned)bi);
            int64_t xs[2] = {s0, 8}, w1s[2] = {16, 8}, b1s[1] = {16}, w2s[2] = {4, 16}, b2s[1] = {4};
            axon_tensor_t in[5] = {tc_f32(x, 2, xs), tc_f32(w1, 2, w1s), tc_f32(b1, 1, b1s), tc_f32(w2, 2, w2s),
                                   tc_f32(b2, 1, b2s)};
            axon_tensor_t out[1];
            CHECK_OK(tc_run(&k, p, 5, in, 1, out, NULL));
            CHECK_EQ_I64(out[0].ndim, 2);
            CHECK_EQ_I64(out[0].sizes[0], s0);
            double want[7 * 4];
            for (int64_t r = 0; r < s0; r++) {
                double g[16];
                for (int j = 0; j < 16; j++) {
                    double acc = b1[j];
                    for (int i = 0; i < 8; i++) acc += (double)x[r * 8 + i] * w1[j * 8 + i];
                    g[j] = tc_gelu(acc);
                }
                for (int j = 0; j < 4; j++) {
                    double acc = b2[j];
                    for (int i = 0; i < 16; i++) acc += g[i] * w2[j * 16 + i];
                    want[r * 4 + j] = acc;
                }
            }
            if (out[0].data) CHECK(tc_close(out[0].data, want, s0 * 4, "mlp"));
            tc_free_outs(1, out);
        }
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

/* softmax and layer_norm (with the mean and rstd results) on a strided (transposed) input. */
static void test_softmax_layer_norm(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[10, 4], %w: f32[10], %b: f32[10]) -> (f32[4, 10], f32[4, 10], f32[4, 1]) {\n"
        "  %t = permute(%x) {dims = [1, 0]} : f32[4, 10]\n"
        "  %s = softmax(%t) {dim = 1} : f32[4, 10]\n"
        "  %y, %mean, %rstd = layer_norm(%t, %w, %b) {eps = 1.0e-05, normalized_ndim = 1} : (f32[4, 10], f32[4, 1], "
        "f32[4, 1])\n"
        "  return %s, %y, %rstd\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        float x[40], w[10], b[10];
        tc_fill(x, 40, 5), tc_fill(w, 10, 6), tc_fill(b, 10, 7);
        int64_t xs[2] = {10, 4}, ws[1] = {10};
        axon_tensor_t in[3] = {tc_f32(x, 2, xs), tc_f32(w, 1, ws), tc_f32(b, 1, ws)};
        axon_tensor_t out[3];
        CHECK_OK(tc_run(&k, p, 3, in, 3, out, NULL));
        double sm[40], ln[40], rs[4];
        for (int r = 0; r < 4; r++) {
            double mx = -INFINITY, sum = 0, mean = 0, var = 0;
            for (int j = 0; j < 10; j++) mx = fmax(mx, x[j * 4 + r]);
            for (int j = 0; j < 10; j++) sum += exp(x[j * 4 + r] - mx);
            for (int j = 0; j < 10; j++) sm[r * 10 + j] = exp(x[j * 4 + r] - mx) / sum;
            for (int j = 0; j < 10; j++) mean += x[j * 4 + r] / 10.0;
            for (int j = 0; j < 10; j++) var += (x[j * 4 + r] - mean) * (x[j * 4 + r] - mean) / 10.0;
            rs[r] = 1.0 / sqrt(var + 1e-5);
            for (int j = 0; j < 10; j++) ln[r * 10 + j] = (x[j * 4 + r] - mean) * rs[r] * w[j] + b[j];
        }
        if (out[0].data) {
            CHECK(tc_close(out[0].data, sm, 40, "softmax"));
            CHECK(tc_close(out[1].data, ln, 40, "layer_norm"));
            CHECK(tc_close(out[2].data, rs, 4, "layer_norm rstd"));
        }
        tc_free_outs(3, out);
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

/* sum over a dim, mean over all, amax with keepdim, argmax. */
static void test_reductions(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[3, 5]) -> (f32[3], f32[], f32[1, 5], i64[3]) {\n"
        "  %s = sum(%x) {dims = [1], keepdim = false} : f32[3]\n"
        "  %m = mean(%x) {dims = [0, 1], keepdim = false} : f32[]\n"
        "  %a = amax(%x) {dims = [0], keepdim = true} : f32[1, 5]\n"
        "  %i = argmax(%x) {dim = 1, keepdim = false} : i64[3]\n"
        "  return %s, %m, %a, %i\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        float x[15];
        tc_fill(x, 15, 9);
        int64_t xs[2] = {3, 5};
        axon_tensor_t in[1] = {tc_f32(x, 2, xs)};
        axon_tensor_t out[4];
        CHECK_OK(tc_run(&k, p, 1, in, 4, out, NULL));
        double s[3] = {0, 0, 0}, m = 0, a[5];
        int64_t am[3];
        for (int j = 0; j < 5; j++) a[j] = -INFINITY;
        for (int r = 0; r < 3; r++) {
            am[r] = 0;
            for (int j = 0; j < 5; j++) {
                s[r] += x[r * 5 + j];
                m += x[r * 5 + j] / 15.0;
                a[j] = fmax(a[j], x[r * 5 + j]);
                if (x[r * 5 + j] > x[r * 5 + am[r]]) am[r] = j;
            }
        }
        if (out[0].data) {
            CHECK(tc_close(out[0].data, s, 3, "sum"));
            CHECK(tc_close(out[1].data, &m, 1, "mean"));
            CHECK(tc_close(out[2].data, a, 5, "amax"));
            for (int r = 0; r < 3; r++) CHECK_EQ_I64(((int64_t *)out[3].data)[r], am[r]);
        }
        tc_free_outs(4, out);
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

/* Views: permute then reshape (a copy: no strides express it), slice, select, unsqueeze + expand, and an input
 * returned as it is. */
static void test_views(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[2, 3, 4]) -> (f32[4, 6], f32[2, 3, 2], f32[3, 4], f32[2, 2, 3, 4], f32[2, 3, 4]) {\n"
        "  %p = permute(%x) {dims = [2, 0, 1]} : f32[4, 2, 3]\n"
        "  %r = reshape(%p) {shape = [4, 6]} : f32[4, 6]\n"
        "  %sl = slice(%x) {dim = 2, end = 4, start = 1, step = 2} : f32[2, 3, 2]\n"
        "  %se = select(%x) {dim = 0, index = -1} : f32[3, 4]\n"
        "  %u = unsqueeze(%x) {dim = 0} : f32[1, 2, 3, 4]\n"
        "  %e = expand(%u) {shape = [2, 2, 3, 4]} : f32[2, 2, 3, 4]\n"
        "  return %r, %sl, %se, %e, %x\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        float x[24];
        for (int i = 0; i < 24; i++) x[i] = (float)i;
        int64_t xs[3] = {2, 3, 4};
        axon_tensor_t in[1] = {tc_f32(x, 3, xs)};
        axon_tensor_t out[5];
        CHECK_OK(tc_run(&k, p, 1, in, 5, out, NULL));
        double r[24], sl[12], se[12], e[48], id[24];
        for (int c = 0; c < 4; c++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 3; b++) r[c * 6 + a * 3 + b] = x[a * 12 + b * 4 + c];
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 2; c++) sl[a * 6 + b * 2 + c] = x[a * 12 + b * 4 + 1 + 2 * c];
        for (int i = 0; i < 12; i++) se[i] = x[12 + i];
        for (int i = 0; i < 48; i++) e[i] = x[i % 24];
        for (int i = 0; i < 24; i++) id[i] = x[i];
        if (out[0].data) {
            CHECK(tc_close(out[0].data, r, 24, "permute+reshape"));
            CHECK(tc_close(out[1].data, sl, 12, "slice"));
            CHECK(tc_close(out[2].data, se, 12, "select"));
            CHECK(tc_close(out[3].data, e, 48, "unsqueeze+expand"));
            CHECK(tc_close(out[4].data, id, 24, "identity"));
        }
        tc_free_outs(5, out);
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

static const char *chain_text =
    "axir 1\n"
    "func @main(%x: f32[s0, 300], %y: f32[s0, 300], %b: f32[300]) -> (f32[s0, 300], f32[s0, 300]) {\n"
    "  %0 = mul(%x, %y) : f32[s0, 300]\n"
    "  %1 = add(%0, %b) : f32[s0, 300]\n"
    "  %2 = gelu(%1) {approximate = \"tanh\"} : f32[s0, 300]\n"
    "  %3 = softmax(%2) {dim = 1} : f32[s0, 300]\n"
    "  return %3, %1\n"
    "}\n";

/* mul -> add -> gelu fused into one kernel (with %1 also a result), then a library op; against the unfused program
 * and a C reference, for three batch sizes (a tile boundary falls inside rows). */
static void test_fused_chain(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.rt);
    tc_log_t *log = calloc(1, sizeof *log);
    axon_program_t *p = tc_compile(chain_text, 1, log);
    CHECK(p != NULL);
    char buf[8192];
    tc_after(log, "fuse", buf, sizeof buf);
    CHECK(strstr(buf, "kernel @fused_0(") != NULL);
    CHECK(strstr(buf, "= fused @fused_0(%x, %y, %b)") != NULL);
    CHECK(strstr(buf, "kernel @fused_0(%0: f32[s0, 300], %1: f32[s0, 300], %2: f32[300])") != NULL);
    char *kernel = strstr(buf, "kernel @fused_0");
    if (kernel) *kernel = 0;   /* main alone: the chain is gone from it */
    CHECK(strstr(buf, "= mul(") == NULL && strstr(buf, "gelu") == NULL && strstr(buf, "softmax(") != NULL);
    if (p) {
        const int64_t batches[3] = {1, 2, 9};
        for (int bi = 0; bi < 3; bi++) {
            int64_t s0 = batches[bi], n = s0 * 300;
            float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), *y2 = malloc((size_t)n * 8), b[300];
            tc_fill(x, n, 20 + (unsigned)bi), tc_fill(y, n, 30 + (unsigned)bi), tc_fill(b, 300, 40);
            for (int64_t i = 0; i < n; i++) y2[2 * i] = y[i], y2[2 * i + 1] = NAN;
            int64_t xs[2] = {s0, 300}, bs[1] = {300}, ystr[2] = {600, 2};
            /* y is read through a stride of 2 (every other element) from the second batch size on: the copying path */
            axon_tensor_t in[3] = {tc_f32(x, 2, xs), bi ? kc_tensor(y2, AXON_FLOAT32, 2, xs, ystr) : tc_f32(y, 2, xs),
                                   tc_f32(b, 1, bs)};
            axon_tensor_t out[2];
            CHECK_OK(tc_run(&k, p, 3, in, 2, out, NULL));
            double *sm = malloc((size_t)n * 8), *h = malloc((size_t)n * 8);
            for (int64_t r = 0; r < s0; r++) {
                double g[300], mx = -INFINITY, sum = 0;
                for (int j = 0; j < 300; j++) {
                    float prod = x[r * 300 + j] * y[r * 300 + j];
                    float hv = prod + b[j];
                    h[r * 300 + j] = hv;
                    g[j] = (float)tc_gelu_tanh(hv);
                    mx = fmax(mx, g[j]);
                }
                for (int j = 0; j < 300; j++) sum += exp(g[j] - mx);
                for (int j = 0; j < 300; j++) sm[r * 300 + j] = exp(g[j] - mx) / sum;
            }
            if (out[0].data) {
                CHECK(tc_close(out[0].data, sm, n, "fused chain softmax"));
                CHECK(tc_close(out[1].data, h, n, "fused chain add"));
            }
            tc_free_outs(2, out);
            free(x), free(y), free(y2), free(sm), free(h);
        }
        axon_program_destroy(p);
    }
    free(log);
    axon_runtime_destroy(k.rt);
}

static const char *sliced_text =
    "axir 1\n"
    "func @main(%x: f32[s0, s1]) -> (f32[s0, s1-2], f32[s0, s1-2]) {\n"
    "  %a = slice(%x) {dim = 1, start = 1, end = -1, step = 1} : f32[s0, s1-2]\n"
    "  %b = slice(%x) {dim = 1, start = 0, end = -2, step = 1} : f32[s0, s1-2]\n"
    "  %c = mul(%a, %b) : f32[s0, s1-2]\n"
    "  %d = add(%c, %a) : f32[s0, s1-2]\n"
    "  %e = tanh(%d) : f32[s0, s1-2]\n"
    "  return %d, %e\n"
    "}\n";

/* Slices of a symbolic dim (x[:, 1:-1] and x[:, :-2]) feeding one elementwise run: the kernel's inputs are
 * [s0, s1-2], whose s1 no input has whole, so the kernel binds a symbol of its own for s1-2 (it was left unbound,
 * and the verifier refused the program); run for two widths against a C reference. */
static void test_fused_slices_of_a_symbolic_dim(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    tc_log_t *log = calloc(1, sizeof *log);
    axon_program_t *p = tc_compile(sliced_text, 1, log);
    CHECK(p != NULL);
    char buf[8192];
    tc_after(log, "fuse", buf, sizeof buf);
    CHECK(strstr(buf, "kernel @fused_0(%0: f32[s0, fused_0_d0], %1: f32[s0, fused_0_d0])") != NULL);
    if (p) {
        const int64_t widths[2] = {5, 70};
        for (int wi = 0; wi < 2; wi++) {
            const int64_t w = widths[wi], n = 3 * w, m = 3 * (w - 2);
            float *x = malloc((size_t)n * 4);
            double *d = malloc((size_t)m * 8), *e = malloc((size_t)m * 8);
            tc_fill(x, n, 50 + (unsigned)wi);
            for (int64_t r = 0; r < 3; r++)
                for (int64_t j = 0; j < w - 2; j++) {
                    const float a = x[r * w + j + 1], b = x[r * w + j], dv = a * b + a;
                    d[r * (w - 2) + j] = dv;
                    e[r * (w - 2) + j] = tanhf(dv);
                }
            int64_t xs[2] = {3, w};
            axon_tensor_t in[1] = {tc_f32(x, 2, xs)}, out[2];
            CHECK_OK(tc_run(&k, p, 1, in, 2, out, NULL));
            if (out[0].data && out[1].data) {
                CHECK_EQ_I64(out[0].sizes[1], w - 2);
                CHECK(tc_close(out[0].data, d, m, "sliced add"));
                CHECK(tc_close(out[1].data, e, m, "sliced tanh"));
            }
            tc_free_outs(2, out);
            free(x), free(d), free(e);
        }
        axon_program_destroy(p);
    }
    free(log);
    axon_runtime_destroy(k.rt);
}

/* A broadcast input of another dtype: bf16 x times an f32 row, through a cast, fused. */
static void test_fused_cast_broadcast(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: bf16[3, 70], %w: f32[70]) -> (bf16[3, 70]) {\n"
        "  %0 = cast(%x) : f32[3, 70]\n"
        "  %1 = mul(%0, %w) : f32[3, 70]\n"
        "  %2 = sigmoid(%1) : f32[3, 70]\n"
        "  %3 = cast(%2) : bf16[3, 70]\n"
        "  return %3\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        const axon_axir_module_t *m = axon_program_module(p);
        CHECK_EQ_I64(axon_axir_module_num_funcs(m), 2);
        uint16_t x[210];
        float w[70];
        for (int i = 0; i < 210; i++) x[i] = (uint16_t)(0x3f80 + (i % 64) - 32);   /* bf16 near 1 */
        tc_fill(w, 70, 50);
        int64_t xs[2] = {3, 70}, ws[1] = {70};
        axon_tensor_t in[2] = {kc_tensor(x, AXON_BFLOAT16, 2, xs, NULL), tc_f32(w, 1, ws)};
        axon_tensor_t out[1];
        CHECK_OK(tc_run(&k, p, 2, in, 1, out, NULL));
        int bad = 0;
        for (int i = 0; i < 210 && out[0].data; i++) {
            uint32_t xb = (uint32_t)x[i] << 16;
            float xf;
            memcpy(&xf, &xb, 4);
            double want = 1.0 / (1.0 + exp(-(double)(xf * w[i % 70])));
            uint32_t gb = (uint32_t)((uint16_t *)out[0].data)[i] << 16;
            float got;
            memcpy(&got, &gb, 4);
            bad += fabs(got - want) > 4e-3;
        }
        CHECK_EQ_I64(bad, 0);
        tc_free_outs(1, out);
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

/* Intermediates share workspace: four unary ops in a row need one buffer, not three (each of the middle ones writes
 * over its operand, which it reads for the last time, and the last writes the output directly). Unfused, so the
 * buffers are the program's own; then a diamond, where an operand still read later must not be overwritten. */
static void test_workspace_reuse(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[1024]) -> (f32[1024]) {\n"
        "  %0 = neg(%x) : f32[1024]\n"
        "  %1 = exp(%0) : f32[1024]\n"
        "  %2 = neg(%1) : f32[1024]\n"
        "  %3 = exp(%2) : f32[1024]\n"
        "  return %3\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 0, NULL);
    CHECK(p != NULL);
    if (p) {
        float x[1024];
        tc_fill(x, 1024, 60);
        int64_t xs[1] = {1024};
        axon_tensor_t in[1] = {tc_f32(x, 1, xs)};
        axon_tensor_t out[1];
        size_t ws = 0;
        CHECK_OK(tc_run(&k, p, 1, in, 1, out, &ws));
        CHECK_EQ_I64(ws, 4096);
        double want[1024];
        for (int i = 0; i < 1024; i++) want[i] = exp(-exp(-(double)x[i]));
        if (out[0].data) CHECK(tc_close(out[0].data, want, 1024, "neg/exp chain"));
        tc_free_outs(1, out);
        axon_program_destroy(p);
    }
    /* a keepdim reduction viewed without its 1 and returned: the sum writes straight into the output */
    const char *sumview =
        "axir 1\n"
        "func @main(%x: f32[4, 1024]) -> (f32[1024]) {\n"
        "  %s = sum(%x) {dims = [0], keepdim = true} : f32[1, 1024]\n"
        "  %v = reshape(%s) {shape = [1024]} : f32[1024]\n"
        "  return %v\n"
        "}\n";
    p = tc_compile(sumview, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        float x[4096];
        tc_fill(x, 4096, 62);
        int64_t xs[2] = {4, 1024};
        axon_tensor_t in[1] = {tc_f32(x, 2, xs)};
        axon_tensor_t out[1];
        size_t ws = 1;
        CHECK_OK(tc_run(&k, p, 1, in, 1, out, &ws));
        CHECK_EQ_I64(ws, 0);
        double want[1024];
        for (int j = 0; j < 1024; j++) want[j] = (double)x[j] + x[1024 + j] + x[2048 + j] + x[3072 + j];
        if (out[0].data) CHECK(tc_close(out[0].data, want, 1024, "sum viewed"));
        tc_free_outs(1, out);
        axon_program_destroy(p);
    }
    const char *diamond =
        "axir 1\n"
        "func @main(%x: f32[1024]) -> (f32[1024]) {\n"
        "  %0 = exp(%x) : f32[1024]\n"
        "  %1 = neg(%0) : f32[1024]\n"
        "  %2 = mul(%1, %0) : f32[1024]\n"
        "  %3 = sin(%2) : f32[1024]\n"
        "  %4 = add(%3, %2) : f32[1024]\n"
        "  return %4\n"
        "}\n";
    p = tc_compile(diamond, 0, NULL);
    CHECK(p != NULL);
    if (p) {
        float x[1024];
        tc_fill(x, 1024, 61);
        int64_t xs[1] = {1024};
        axon_tensor_t in[1] = {tc_f32(x, 1, xs)};
        axon_tensor_t out[1];
        size_t ws = 0;
        CHECK_OK(tc_run(&k, p, 1, in, 1, out, &ws));
        CHECK_EQ_I64(ws, 2 * 4096);   /* %0 and %1 live together; %2 overwrites %1, %3 reuses the space of %0 */
        double want[1024];
        for (int i = 0; i < 1024; i++) {
            float e = expf(x[i]), m = -e * e;
            want[i] = (float)sin(m) + m;
        }
        if (out[0].data) CHECK(tc_close(out[0].data, want, 1024, "diamond"));
        tc_free_outs(1, out);
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

/* ---- passes ---- */

/* dce drops nodes nothing reads; canonicalize drops a cast to the same dtype and a multiply by 1; fold turns const
 * arithmetic into one const. */
static void test_passes(void) {
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[4]) -> (f32[4]) {\n"
        "  %one = const() {value = 1.0} : f32[]\n"
        "  %a = const() {value = 2.0} : f32[]\n"
        "  %b = const() {value = 3.0} : f32[]\n"
        "  %c = add(%a, %b) : f32[]\n"
        "  %dead = exp(%x) : f32[4]\n"
        "  %0 = cast(%x) : f32[4]\n"
        "  %1 = mul(%0, %one) : f32[4]\n"
        "  %2 = mul(%1, %c) : f32[4]\n"
        "  %r = reshape(%2) {shape = [2, 2]} : f32[2, 2]\n"
        "  %t = permute(%r) {dims = [1, 0]} : f32[2, 2]\n"
        "  %tt = permute(%t) {dims = [1, 0]} : f32[2, 2]\n"
        "  %u = reshape(%tt) {shape = [4]} : f32[4]\n"
        "  return %u\n"
        "}\n";
    tc_log_t *log = calloc(1, sizeof *log);
    axon_program_t *p = tc_compile(text, 1, log);
    CHECK(p != NULL);
    char buf[8192];
    tc_after(log, "canonicalize", buf, sizeof buf);
    CHECK(strstr(buf, "cast") == NULL);
    CHECK(strstr(buf, "%1 = mul") == NULL);
    CHECK(strstr(buf, "%2 = mul(%x, %c)") != NULL);
    CHECK(strstr(buf, "%dead") != NULL);
    CHECK(strstr(buf, "permute") == NULL);   /* the transpose and its inverse cancel */
    CHECK(strstr(buf, "reshape") == NULL);   /* then the reshapes meet and end where they started */
    tc_after(log, "dce", buf, sizeof buf);
    CHECK(strstr(buf, "%dead") == NULL);
    CHECK(strstr(buf, "%one") == NULL);
    tc_after(log, "fold", buf, sizeof buf);
    CHECK(strstr(buf, "add") == NULL);
    CHECK(strstr(buf, "{value = 5.0} : f32[]") != NULL);
    CHECK(strstr(buf, "%a =") == NULL);
    if (p) {
        kc_dev_t k = kc_open(1);
        REQUIRE(k.rt);
        float x[4] = {1, -2, 3.5f, 0};
        int64_t xs[1] = {4};
        axon_tensor_t in[1] = {tc_f32(x, 1, xs)};
        axon_tensor_t out[1];
        CHECK_OK(tc_run(&k, p, 1, in, 1, out, NULL));
        double want[4] = {5, -10, 17.5, 0};
        if (out[0].data) CHECK(tc_close(out[0].data, want, 4, "folded"));
        tc_free_outs(1, out);
        axon_program_destroy(p);
        axon_runtime_destroy(k.rt);
    }
    free(log);
}

/* ---- bad input ---- */

static void test_bad_inputs(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[s0, 4], %y: f32[s0, 4]) -> (f32[s0, 4]) {\n"
        "  %0 = add(%x, %y) : f32[s0, 4]\n"
        "  return %0\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        float a[12], b[12];
        int64_t s34[2] = {3, 4}, s24[2] = {2, 4}, s35[2] = {3, 5}, s12[1] = {12};
        axon_tensor_t out[1];
        size_t ws;
        axon_tensor_t in[2] = {tc_f32(a, 2, s34), kc_tensor(b, AXON_FLOAT64, 2, s34, NULL)};
        CHECK_STATUS(axon_program_prepare(p, 2, in, 1, out, &ws), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("input 1 (%y) has dtype float64");
        in[1] = tc_f32(b, 1, s12);
        CHECK_STATUS(axon_program_prepare(p, 2, in, 1, out, &ws), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("input 1 (%y) has 1 dimensions, expected 2");
        in[1] = tc_f32(b, 2, s24);
        CHECK_STATUS(axon_program_prepare(p, 2, in, 1, out, &ws), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("input 1 (%y) dim 0 has size 2, but symbol s0 is 3 from input 0 dim 0");
        in[1] = tc_f32(b, 2, s35);
        CHECK_STATUS(axon_program_prepare(p, 2, in, 1, out, &ws), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("input 1 (%y) dim 1 has size 5, expected 4");
        CHECK_STATUS(axon_program_prepare(p, 1, in, 1, out, &ws), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("1 inputs given, the program takes 2");
        /* run checks the same, and the outputs and workspace against the binding */
        in[1] = tc_f32(b, 2, s34);
        CHECK_OK(axon_program_prepare(p, 2, in, 1, out, &ws));
        float o[12];
        out[0] = tc_f32(o, 2, s24);
        CHECK_STATUS(axon_program_run(p, k.s, 2, in, 1, out, NULL, 0), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("output 0");
        out[0] = tc_f32(o, 2, s34);
        in[1].data = NULL;
        CHECK_STATUS(axon_program_run(p, k.s, 2, in, 1, out, NULL, 0), AXON_ERROR_INVALID_ARG);
        CHECK_MSG("input 1 (%y)");
        axon_program_destroy(p);
    }
    /* sdpa with dropout but no draw cannot be placed in the call's Philox stream: a located error */
    const char *sdpa =
        "axir 1\n"
        "func @main(%q: f32[1, 2, 4, 8], %k: f32[1, 2, 4, 8], %v: f32[1, 2, 4, 8]) -> (f32[1, 2, 4, 8]) {\n"
        "  %0 = sdpa(%q, %k, %v) {dropout_p = 0.1, is_causal = false, scale = 0.25} : f32[1, 2, 4, 8]\n"
        "  return %0\n"
        "}\n";
    axon_program_t *q = NULL;
    axon_axir_diag_t d;
    CHECK_STATUS(axon_compile_text(sdpa, strlen(sdpa), NULL, &q, &d), AXON_ERROR_INVALID_ARG);
    CHECK(q == NULL);
    CHECK(strstr(d.message, "needs a draw") != NULL);
    CHECK_EQ_I64(d.line, 3);
    /* a malformed module is INVALID_ARG with a location */
    const char *bad = "axir 1\nfunc @main(%x: f32[4]) -> (f32[4]) {\n  %0 = exp(%nope) : f32[4]\n  return %0\n}\n";
    CHECK_STATUS(axon_compile_text(bad, strlen(bad), NULL, &q, &d), AXON_ERROR_INVALID_ARG);
    CHECK(q == NULL && d.line == 3);
    /* what the front end may ask */
    CHECK(axon_compile_supports(AXON_AXIR_OP_ADD, AXON_FLOAT32));
    CHECK(axon_compile_supports(AXON_AXIR_OP_LAYER_NORM, AXON_BFLOAT16));
    CHECK(!axon_compile_supports(AXON_AXIR_OP_LAYER_NORM, AXON_INT32));
    CHECK(!axon_compile_supports(AXON_AXIR_OP_SIN, AXON_COMPLEX64));
    CHECK(!axon_compile_supports(AXON_AXIR_OP_COUNT, AXON_FLOAT32));
    axon_runtime_destroy(k.rt);
}

/* sdpa, embedding and a bf16 rms_norm run through their kernels (compared with the unfused eager kernels'
 * semantics in a plain C reference for embedding; sdpa against a direct softmax(q k^T) v). */
static void test_library_ops(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%q: f32[1, 1, 3, 4], %k: f32[1, 1, 5, 4], %v: f32[1, 1, 5, 2], %w: f32[6, 3], %i: i64[2, 2]) -> "
        "(f32[1, 1, 3, 2], f32[2, 2, 3]) {\n"
        "  %a = sdpa(%q, %k, %v) {dropout_p = 0.0, is_causal = false, scale = 0.5} : f32[1, 1, 3, 2]\n"
        "  %e = embedding(%w, %i) : f32[2, 2, 3]\n"
        "  return %a, %e\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        float q[12], kk[20], v[10], w[18];
        int64_t idx[4] = {5, 0, 2, 5};
        tc_fill(q, 12, 70), tc_fill(kk, 20, 71), tc_fill(v, 10, 72), tc_fill(w, 18, 73);
        int64_t qs[4] = {1, 1, 3, 4}, ks[4] = {1, 1, 5, 4}, vs[4] = {1, 1, 5, 2}, wsz[2] = {6, 3}, is[2] = {2, 2};
        axon_tensor_t in[5] = {tc_f32(q, 4, qs), tc_f32(kk, 4, ks), tc_f32(v, 4, vs), tc_f32(w, 2, wsz),
                               kc_tensor(idx, AXON_INT64, 2, is, NULL)};
        axon_tensor_t out[2];
        CHECK_OK(tc_run(&k, p, 5, in, 2, out, NULL));
        double att[6], emb[12];
        for (int i = 0; i < 3; i++) {
            double sc[5], mx = -INFINITY, sum = 0;
            for (int j = 0; j < 5; j++) {
                sc[j] = 0;
                for (int e = 0; e < 4; e++) sc[j] += 0.5 * q[i * 4 + e] * kk[j * 4 + e];
                mx = fmax(mx, sc[j]);
            }
            for (int j = 0; j < 5; j++) sum += exp(sc[j] - mx);
            for (int c = 0; c < 2; c++) {
                att[i * 2 + c] = 0;
                for (int j = 0; j < 5; j++) att[i * 2 + c] += exp(sc[j] - mx) / sum * v[j * 2 + c];
            }
        }
        for (int t = 0; t < 4; t++)
            for (int c = 0; c < 3; c++) emb[t * 3 + c] = w[idx[t] * 3 + c];
        if (out[0].data) {
            CHECK(tc_close(out[0].data, att, 6, "sdpa"));
            CHECK(tc_close(out[1].data, emb, 12, "embedding"));
        }
        tc_free_outs(2, out);
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

/* index_copy_into writes a static KV cache's new positions into the caller's tensor and hands on the cache itself:
 * the node after it reads the new contents, the parameter changes in place, nothing else of it is touched, and a
 * negative index counts from the end (as in index_put_, which it comes from). Without a reader it still runs. */
static void test_index_copy_into_writes_the_parameter(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%cache: f32[2, 3, 4], %pos: i64[1], %new: f32[2, 3, 1], %c2: f32[2, 4], %p2: i64[], %n2: f32[2, 1])"
        " -> (f32[2, 3]) {\n"
        "  %u = index_copy_into(%cache, %pos, %new) {dim = -1} : f32[2, 3, 4]\n"
        "  %s = sum(%u) {dims = [2], keepdim = false} : f32[2, 3]\n"
        "  %u2 = index_copy_into(%c2, %p2, %n2) {dim = 1} : f32[2, 4]\n"
        "  return %s\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        float cache[24], before[24], nw[6], c2[8], c2_before[8], n2[2] = {7.0f, 8.0f};
        tc_fill(cache, 24, 90), tc_fill(nw, 6, 91), tc_fill(c2, 8, 92);
        memcpy(before, cache, sizeof cache);
        memcpy(c2_before, c2, sizeof c2);
        int64_t pos[1] = {-2}, p2 = 1;   /* -2: position 2 of 4 */
        int64_t cs[3] = {2, 3, 4}, ps[1] = {1}, ns[3] = {2, 3, 1}, c2s[2] = {2, 4}, n2s[2] = {2, 1};
        axon_tensor_t in[6] = {tc_f32(cache, 3, cs), kc_tensor(pos, AXON_INT64, 1, ps, NULL), tc_f32(nw, 3, ns),
                               tc_f32(c2, 2, c2s), kc_tensor(&p2, AXON_INT64, 0, NULL, NULL), tc_f32(n2, 2, n2s)};
        axon_tensor_t out[1];
        CHECK_OK(tc_run(&k, p, 6, in, 1, out, NULL));
        double want_cache[24], want_sum[6], want_c2[8];
        for (int r = 0; r < 6; r++) {
            want_sum[r] = 0;
            for (int j = 0; j < 4; j++) {
                want_cache[r * 4 + j] = j == 2 ? nw[r] : before[r * 4 + j];
                want_sum[r] += want_cache[r * 4 + j];
            }
        }
        for (int r = 0; r < 2; r++)
            for (int j = 0; j < 4; j++) want_c2[r * 4 + j] = j == 1 ? n2[r] : c2_before[r * 4 + j];
        CHECK(tc_close(cache, want_cache, 24, "cache written in place"));
        CHECK(tc_close(c2, want_c2, 8, "unread cache written in place"));
        if (out[0].data) CHECK(tc_close(out[0].data, want_sum, 6, "sum of the written cache"));
        tc_free_outs(1, out);
        /* an index past the end is an error naming the op, and nothing is written out of bounds */
        pos[0] = 4;
        axon_tensor_t out2[1];
        axon_status_t st = tc_run(&k, p, 6, in, 1, out2, NULL);
        CHECK(st != AXON_OK);
        CHECK(strstr(axon_last_error(), "index") != NULL);
        tc_free_outs(1, out2);
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

/* sdpa_lse and sdpa_backward in one program (a training step's attention) give what the attention kernels give when
 * called directly: the program passes dout, q, k, v, out, lse and the mask in the kernels' order. */
static void test_attention_training_ops_match_the_kernels(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%q: f32[2, 2, 3, 4], %k: f32[2, 2, 5, 4], %v: f32[2, 2, 5, 3], %m: f32[2, 1, 3, 5], "
        "%g: f32[2, 2, 3, 3]) -> (f32[2, 2, 3, 3], f32[2, 2, 3], f32[2, 2, 3, 4], f32[2, 2, 5, 4], f32[2, 2, 5, 3]) {\n"
        "  %o, %l = sdpa_lse(%q, %k, %v, %m) {dropout_p = 0.0, is_causal = false, scale = 0.5} : "
        "(f32[2, 2, 3, 3], f32[2, 2, 3])\n"
        "  %dq, %dk, %dv = sdpa_backward(%g, %q, %k, %v, %o, %l, %m) {is_causal = false, scale = 0.5} : "
        "(f32[2, 2, 3, 4], f32[2, 2, 5, 4], f32[2, 2, 5, 3])\n"
        "  return %o, %l, %dq, %dk, %dv\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        float q[48], kk[80], v[60], m[30], g[36];
        tc_fill(q, 48, 80), tc_fill(kk, 80, 81), tc_fill(v, 60, 82), tc_fill(m, 30, 83), tc_fill(g, 36, 84);
        m[4] = -INFINITY;
        int64_t qs[4] = {2, 2, 3, 4}, ks[4] = {2, 2, 5, 4}, vs[4] = {2, 2, 5, 3}, ms[4] = {2, 1, 3, 5},
                gs[4] = {2, 2, 3, 3}, ls[3] = {2, 2, 3};
        axon_tensor_t in[5] = {tc_f32(q, 4, qs), tc_f32(kk, 4, ks), tc_f32(v, 4, vs), tc_f32(m, 4, ms),
                               tc_f32(g, 4, gs)};
        axon_tensor_t out[5];
        CHECK_OK(tc_run(&k, p, 5, in, 5, out, NULL));
        /* the same through the kernels */
        float ro[36], rl[12], rdq[48], rdk[80], rdv[60];
        axon_tensor_t to = tc_f32(ro, 4, gs), tl = tc_f32(rl, 3, ls), tdq = tc_f32(rdq, 4, qs), tdk = tc_f32(rdk, 4, ks),
                      tdv = tc_f32(rdv, 4, vs);
        axon_attention_params_t ap;
        memset(&ap, 0, sizeof ap);
        ap.scale = 0.5;
        CHECK_OK(axon_kernel_attention(k.s, &to, &tl, &in[0], &in[1], &in[2], &in[3], &ap));
        CHECK_OK(axon_kernel_attention_backward(k.s, &tdq, &tdk, &tdv, &in[4], &in[0], &in[1], &in[2], &in[3], &to, &tl,
                                                &ap));
        CHECK_OK(axon_stream_sync(k.s));
        const float *want[5] = {ro, rl, rdq, rdk, rdv};
        const int count[5] = {36, 12, 48, 80, 60};
        for (int r = 0; r < 5 && out[r].data; r++)
            CHECK(memcmp(out[r].data, want[r], sizeof(float) * (size_t)count[r]) == 0);
        tc_free_outs(5, out);
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

/* The training library ops (norm and loss backwards, embedding backward) against their kernels called directly, and
 * dropout's draws: draw 0 starts at the caller's offset, draw 1 after draw 0's blocks, whatever their order in the
 * text; axon_program_run refuses a program that draws; draws must be 0..k-1 once each. */
static void test_training_ops_and_draws_match_the_kernels(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[4, 8], %g: f32[4, 8], %w: f32[8], %t: i64[4], %ix: i64[3], %ge: f32[3, 8]) -> "
        "(f32[4, 8], f32[8], f32[8], f32[], f32[4, 8], f32[5, 8], f32[4, 8], bool[4, 8], f32[4, 8], bool[4, 8]) {\n"
        "  %y, %mu, %rs = layer_norm(%x, %w) {eps = 1e-05, normalized_ndim = 1} : (f32[4, 8], f32[4, 1], f32[4, 1])\n"
        "  %gx, %gw, %gb = layer_norm_backward(%g, %x, %mu, %rs, %w) {normalized_ndim = 1} : "
        "(f32[4, 8], f32[8], f32[8])\n"
        "  %lp = log_softmax(%x) {dim = 1} : f32[4, 8]\n"
        "  %l, %tw = nll_loss(%lp, %t, %w) {ignore_index = 2, reduction = \"mean\"} : (f32[], f32[])\n"
        "  %gl = nll_loss_log_softmax_backward(%l, %lp, %t, %tw, %w) {ignore_index = 2, reduction = \"mean\"} : "
        "f32[4, 8]\n"
        "  %eb = embedding_backward(%ge, %ix) {num_weights = 5, padding_idx = 1} : f32[5, 8]\n"
        "  %d1, %m1 = dropout(%x) {draw = 1, p = 0.5} : (f32[4, 8], bool[4, 8])\n"
        "  %d0, %m0 = dropout(%g) {draw = 0, p = 0.25} : (f32[4, 8], bool[4, 8])\n"
        "  return %gx, %gw, %gb, %l, %gl, %eb, %d1, %m1, %d0, %m0\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        float x[32], g[32], w[8], ge[24];
        int64_t t[4] = {3, 2, 7, 0}, ix[3] = {4, 1, 4};
        tc_fill(x, 32, 90), tc_fill(g, 32, 91), tc_fill(w, 8, 92), tc_fill(ge, 24, 93);
        int64_t xs[2] = {4, 8}, ws[1] = {8}, ts[1] = {4}, is[1] = {3}, es[2] = {3, 8}, ebs[2] = {5, 8};
        axon_tensor_t in[6] = {tc_f32(x, 2, xs), tc_f32(g, 2, xs), tc_f32(w, 1, ws),
                               kc_tensor(t, AXON_INT64, 1, ts, NULL), kc_tensor(ix, AXON_INT64, 1, is, NULL),
                               tc_f32(ge, 2, es)};
        axon_tensor_t out[10];
        uint64_t blocks = 0;
        CHECK_OK(axon_program_philox_blocks(p, 6, in, &blocks));
        CHECK(blocks == 16 && axon_program_num_draws(p) == 2);   /* 32 elements, 4 per block, twice */
        CHECK_STATUS(tc_run(&k, p, 6, in, 10, out, NULL), AXON_ERROR_INVALID_ARG);
        tc_free_outs(10, out);
        CHECK_OK(tc_run_with(&k, p, 6, in, 10, out, NULL, 1, 1234, 40));
        /* the same through the kernels */
        float y[32], mu[4], rs[4], gx[32], gw[8], gb[8], lp[32], l, tw, gl[32], eb[40], d1[32], d0[32];
        uint8_t m1[32], m0[32];
        int64_t ms[2] = {4, 1}, x3[3] = {4, 8, 1}, t2[2] = {4, 1};
        axon_tensor_t ty = tc_f32(y, 2, xs), tmu = tc_f32(mu, 2, ms), trs = tc_f32(rs, 2, ms), tgx = tc_f32(gx, 2, xs),
                      tgw = tc_f32(gw, 1, ws), tgb = tc_f32(gb, 1, ws), tlp = tc_f32(lp, 2, xs), tl = tc_f32(&l, 0, NULL),
                      ttw = tc_f32(&tw, 0, NULL), tgl3 = tc_f32(gl, 3, x3), tlp3 = tc_f32(lp, 3, x3),
                      tt2 = kc_tensor(t, AXON_INT64, 2, t2, NULL), teb = tc_f32(eb, 2, ebs), td1 = tc_f32(d1, 2, xs),
                      td0 = tc_f32(d0, 2, xs), tm1 = kc_tensor(m1, AXON_BOOL, 2, xs, NULL),
                      tm0 = kc_tensor(m0, AXON_BOOL, 2, xs, NULL);
        CHECK_OK(axon_kernel_layer_norm(k.s, &ty, &tmu, &trs, &in[0], &in[2], NULL, 8, 1e-5));
        CHECK_OK(axon_kernel_layer_norm_backward(k.s, &tgx, &tgw, &tgb, &in[1], &in[0], &tmu, &trs, &in[2], 8));
        CHECK_OK(axon_kernel_softmax(k.s, &tlp, &in[0], 1, 1));
        CHECK_OK(axon_kernel_nll_loss(k.s, &tl, &ttw, &tlp3, &tt2, &in[2], AXON_LOSS_MEAN, 2));
        CHECK_OK(axon_kernel_nll_loss_log_softmax_backward(k.s, &tgl3, &tl, &tlp3, &tt2, &in[2], &ttw, AXON_LOSS_MEAN, 2));
        CHECK_OK(axon_kernel_embedding_backward(k.s, &teb, &in[5], &in[4], 1));
        CHECK_OK(axon_kernel_dropout(k.s, &td0, &tm0, &in[1], 0.25, 1234, 40));
        CHECK_OK(axon_kernel_dropout(k.s, &td1, &tm1, &in[0], 0.5, 1234, 48));
        CHECK_OK(axon_stream_sync(k.s));
        const void *want[10] = {gx, gw, gb, &l, gl, eb, d1, m1, d0, m0};
        const size_t bytes[10] = {128, 32, 32, 4, 128, 160, 128, 32, 128, 32};
        for (int r = 0; r < 10; r++) {
            if (!out[r].data || memcmp(out[r].data, want[r], bytes[r]) != 0) fprintf(stderr, "output %d differs\n", r);
            CHECK(out[r].data && memcmp(out[r].data, want[r], bytes[r]) == 0);
        }
        int kept = 0;
        for (int i = 0; i < 32; i++) kept += m0[i] + m1[i];
        CHECK(kept > 16 && kept < 64);   /* masks really drawn (expected 40 of 64) */
        tc_free_outs(10, out);
        axon_program_destroy(p);
    }
    /* draws must number the dropouts 0..k-1 once each */
    const char *twice =
        "axir 1\n"
        "func @main(%x: f32[4]) -> (f32[4], f32[4]) {\n"
        "  %a, %am = dropout(%x) {draw = 0, p = 0.5} : (f32[4], bool[4])\n"
        "  %b, %bm = dropout(%x) {draw = 0, p = 0.5} : (f32[4], bool[4])\n"
        "  return %a, %b\n"
        "}\n";
    axon_compile_options_t o = axon_compile_options_default();
    axon_program_t *bad = NULL;
    axon_axir_diag_t d;
    CHECK_STATUS(axon_compile_text(twice, strlen(twice), &o, &bad, &d), AXON_ERROR_INVALID_ARG);
    CHECK(bad == NULL && strstr(d.message, "draw 0 is taken twice") != NULL);
    axon_runtime_destroy(k.rt);
}

/* Attention with dropout in a training step: the forward program's sdpa_lse takes its draw's Philox blocks after the
 * dropout's (draw 0: 32 elements, 8 blocks; draw 1: 2 heads x 3 x 5 scores, 8 blocks), philox_state gives that draw's
 * seed and first block, and a backward program that takes them as i64[] inputs gives what the attention kernels give
 * with the same decisions. Seeds use all 64 bits. */
static void test_attention_dropout_draws_and_its_backward_match_the_kernels(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *fwd_text =
        "axir 1\n"
        "func @main(%x: f32[4, 8], %q: f32[1, 2, 3, 4], %k: f32[1, 2, 5, 4], %v: f32[1, 2, 5, 4]) -> "
        "(f32[4, 8], f32[1, 2, 3, 4], f32[1, 2, 3], i64[], i64[]) {\n"
        "  %d, %dm = dropout(%x) {draw = 0, p = 0.5} : (f32[4, 8], bool[4, 8])\n"
        "  %o, %l = sdpa_lse(%q, %k, %v) {draw = 1, dropout_p = 0.3, is_causal = true, scale = 0.5} : "
        "(f32[1, 2, 3, 4], f32[1, 2, 3])\n"
        "  %s, %off = philox_state() {draw = 1} : (i64[], i64[])\n"
        "  return %d, %o, %l, %s, %off\n"
        "}\n";
    const char *bwd_text =
        "axir 1\n"
        "func @main(%g: f32[1, 2, 3, 4], %q: f32[1, 2, 3, 4], %k: f32[1, 2, 5, 4], %v: f32[1, 2, 5, 4], "
        "%o: f32[1, 2, 3, 4], %l: f32[1, 2, 3], %s: i64[], %off: i64[]) -> "
        "(f32[1, 2, 3, 4], f32[1, 2, 5, 4], f32[1, 2, 5, 4]) {\n"
        "  %dq, %dk, %dv = sdpa_backward(%g, %q, %k, %v, %o, %l, %s, %off) {dropout_p = 0.3, is_causal = true, "
        "scale = 0.5} : (f32[1, 2, 3, 4], f32[1, 2, 5, 4], f32[1, 2, 5, 4])\n"
        "  return %dq, %dk, %dv\n"
        "}\n";
    axon_program_t *fp = tc_compile(fwd_text, 1, NULL), *bp = tc_compile(bwd_text, 1, NULL);
    CHECK(fp != NULL && bp != NULL);
    if (fp && bp) {
        const uint64_t seed = 0xfedcba9876543210ULL, offset = 40;
        float x[32], q[24], kk[40], v[40], g[24];
        tc_fill(x, 32, 60), tc_fill(q, 24, 61), tc_fill(kk, 40, 62), tc_fill(v, 40, 63), tc_fill(g, 24, 64);
        int64_t xs[2] = {4, 8}, qs[4] = {1, 2, 3, 4}, ks[4] = {1, 2, 5, 4}, ls[3] = {1, 2, 3};
        axon_tensor_t in[4] = {tc_f32(x, 2, xs), tc_f32(q, 4, qs), tc_f32(kk, 4, ks), tc_f32(v, 4, ks)};
        uint64_t blocks = 0;
        CHECK_OK(axon_program_philox_blocks(fp, 4, in, &blocks));
        CHECK(blocks == 16 && axon_program_num_draws(fp) == 2);
        axon_tensor_t out[5];
        CHECK_OK(tc_run_with(&k, fp, 4, in, 5, out, NULL, 1, seed, offset));
        CHECK(out[3].data && *(int64_t *)out[3].data == (int64_t)seed);
        CHECK(out[4].data && *(int64_t *)out[4].data == (int64_t)(offset + 8));
        axon_tensor_t bin[8] = {tc_f32(g, 4, qs), in[1], in[2], in[3], out[1], out[2], out[3], out[4]};
        axon_tensor_t grads[3];
        CHECK_OK(tc_run(&k, bp, 8, bin, 3, grads, NULL));   /* the backward draws nothing of its own */
        /* the same through the kernels, with the decisions of draw 1 */
        float ro[24], rl[6], rdq[24], rdk[40], rdv[40];
        axon_tensor_t to = tc_f32(ro, 4, qs), tl = tc_f32(rl, 3, ls), tdq = tc_f32(rdq, 4, qs), tdk = tc_f32(rdk, 4, ks),
                      tdv = tc_f32(rdv, 4, ks);
        axon_attention_params_t ap;
        memset(&ap, 0, sizeof ap);
        ap.scale = 0.5, ap.is_causal = 1, ap.dropout_p = 0.3, ap.seed = seed, ap.offset = offset + 8;
        CHECK_OK(axon_kernel_attention(k.s, &to, &tl, &in[1], &in[2], &in[3], NULL, &ap));
        CHECK_OK(axon_kernel_attention_backward(k.s, &tdq, &tdk, &tdv, &bin[0], &in[1], &in[2], &in[3], NULL, &to, &tl,
                                                &ap));
        CHECK_OK(axon_stream_sync(k.s));
        CHECK(out[1].data && memcmp(out[1].data, ro, sizeof ro) == 0);
        CHECK(out[2].data && memcmp(out[2].data, rl, sizeof rl) == 0);
        const float *want[3] = {rdq, rdk, rdv};
        const size_t bytes[3] = {sizeof rdq, sizeof rdk, sizeof rdv};
        for (int r = 0; r < 3; r++) CHECK(grads[r].data && memcmp(grads[r].data, want[r], bytes[r]) == 0);
        /* dropout really dropped: the weights no longer sum to 1, so the output differs from no dropout's */
        axon_attention_params_t plain = ap;
        plain.dropout_p = 0;
        CHECK_OK(axon_kernel_attention(k.s, &to, &tl, &in[1], &in[2], &in[3], NULL, &plain));
        CHECK_OK(axon_stream_sync(k.s));
        CHECK(out[1].data && memcmp(out[1].data, ro, sizeof ro) != 0);
        tc_free_outs(3, grads);
        tc_free_outs(5, out);
    }
    axon_program_destroy(fp);
    axon_program_destroy(bp);
    /* a philox_state naming no draw of the function */
    const char *stray =
        "axir 1\n"
        "func @main() -> (i64[], i64[]) {\n"
        "  %s, %off = philox_state() {draw = 0} : (i64[], i64[])\n"
        "  return %s, %off\n"
        "}\n";
    axon_compile_options_t o = axon_compile_options_default();
    axon_program_t *bad = NULL;
    axon_axir_diag_t d;
    CHECK_STATUS(axon_compile_text(stray, strlen(stray), &o, &bad, &d), AXON_ERROR_INVALID_ARG);
    CHECK(bad == NULL && strstr(d.message, "philox_state: draw 0 is not in [0, 0)") != NULL);
    axon_runtime_destroy(k.rt);
}

/* The rest of the op table on small tensors: comparisons and where, cat, gather, index_select, iota, a shaped const,
 * bmm, addmm with a full bias, rms_norm, var, log_softmax along dim 0, contiguous of a transpose, squeeze, integer
 * arithmetic with floor division. */
static void test_more_ops(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[2, 3], %y: f32[2, 3], %i: i64[2, 2], %j: i64[3], %a: i32[4], %b: i32[4]) -> "
        "(f32[2, 3], f32[2, 6], f32[2, 2], f32[3, 3], i64[5], f32[2, 3], f32[2, 3, 2], f32[2, 2], f32[2, 3], f32[2],"
        " f32[2, 3], f32[3, 2], f32[3], i32[4], f32[2, 3]) {\n"
        "  %z = const() {value = 0.0} : f32[]\n"
        "  %pos = gt(%x, %z) : bool[2, 3]\n"
        "  %ny = neg(%y) : f32[2, 3]\n"
        "  %w = where(%pos, %x, %ny) : f32[2, 3]\n"
        "  %c = cat(%x, %y) {dim = 1} : f32[2, 6]\n"
        "  %g = gather(%x, %i) {dim = 1} : f32[2, 2]\n"
        "  %t = permute(%x) {dims = [1, 0]} : f32[3, 2]\n"
        "  %is = index_select(%t, %j) {dim = 0} : f32[3, 2]\n"
        "  %ist = permute(%is) {dims = [1, 0]} : f32[2, 3]\n"
        "  %sq = mm(%t, %x) : f32[3, 3]\n"
        "  %io = iota() {start = 2, step = 3} : i64[5]\n"
        "  %k = const() {value = 1.5} : f32[2, 3]\n"
        "  %x3 = reshape(%x) {shape = [2, 1, 3]} : f32[2, 1, 3]\n"
        "  %t3 = reshape(%t) {shape = [1, 3, 2]} : f32[1, 3, 2]\n"
        "  %t3e = expand(%t3) {shape = [2, 3, 2]} : f32[2, 3, 2]\n"
        "  %bm = bmm(%x3, %t3e) : f32[2, 1, 2]\n"
        "  %bms = squeeze(%bm) {dims = [1]} : f32[2, 2]\n"
        "  %am = addmm(%sq, %t, %x) {alpha = 2.0, beta = 0.5} : f32[3, 3]\n"
        "  %rn, %rr = rms_norm(%x) {eps = 1.0e-06, normalized_ndim = 1} : (f32[2, 3], f32[2, 1])\n"
        "  %v = var(%x) {correction = 1, dims = [1], keepdim = false} : f32[2]\n"
        "  %ls = log_softmax(%x) {dim = 0} : f32[2, 3]\n"
        "  %ct = contiguous(%t) : f32[3, 2]\n"
        "  %s1 = sum(%am) {dims = [1], keepdim = false} : f32[3]\n"
        "  %q = div(%a, %b) {rounding_mode = \"floor\"} : i32[4]\n"
        "  %q2 = add(%q, %a) : i32[4]\n"
        "  return %w, %c, %g, %sq, %io, %k, %t3e, %bms, %ist, %v, %ls, %ct, %s1, %q2, %rn\n"
        "}\n";
    axon_program_t *p = tc_compile(text, 1, NULL);
    CHECK(p != NULL);
    if (!p) {
        axon_runtime_destroy(k.rt);
        return;
    }
    float x[6] = {1, -2, 3, -4, 5, -6}, y[6] = {0.5f, 1, -1.5f, 2, -2.5f, 3};
    int64_t idx[4] = {2, 0, 1, 1}, jdx[3] = {1, 1, 0};
    int32_t a[4] = {7, -7, 9, -1}, b[4] = {2, 2, -4, 3};
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2}, s3[1] = {3}, s4[1] = {4};
    axon_tensor_t in[6] = {tc_f32(x, 2, s23), tc_f32(y, 2, s23), kc_tensor(idx, AXON_INT64, 2, s22, NULL),
                           kc_tensor(jdx, AXON_INT64, 1, s3, NULL), kc_tensor(a, AXON_INT32, 1, s4, NULL),
                           kc_tensor(b, AXON_INT32, 1, s4, NULL)};
    axon_tensor_t out[15];
    CHECK_OK(tc_run(&k, p, 6, in, 15, out, NULL));
    if (out[0].data) {
        double w[6], c[12], g[4], sq[9], kk[6], t3e[12], bms[4], ist[6], v[2], ls[6], ct[6], s1[3];
        for (int i = 0; i < 6; i++) w[i] = x[i] > 0 ? x[i] : -y[i], kk[i] = 1.5;
        for (int r = 0; r < 2; r++)
            for (int q = 0; q < 6; q++) c[r * 6 + q] = q < 3 ? x[r * 3 + q] : y[r * 3 + q - 3];
        for (int r = 0; r < 2; r++)
            for (int q = 0; q < 2; q++) g[r * 2 + q] = x[r * 3 + idx[r * 2 + q]];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++) {
                sq[r * 3 + q] = x[r] * x[q] + x[3 + r] * x[3 + q];
            }
        for (int bb = 0; bb < 2; bb++)
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 2; q++) t3e[bb * 6 + r * 2 + q] = x[q * 3 + r];
        for (int bb = 0; bb < 2; bb++)
            for (int q = 0; q < 2; q++) {
                double acc = 0;
                for (int r = 0; r < 3; r++) acc += x[bb * 3 + r] * x[q * 3 + r];
                bms[bb * 2 + q] = acc;
            }
        for (int r = 0; r < 2; r++)
            for (int q = 0; q < 3; q++) ist[r * 3 + q] = x[r * 3 + jdx[q]];
        for (int r = 0; r < 2; r++) {
            double m = (x[r * 3] + x[r * 3 + 1] + x[r * 3 + 2]) / 3, acc = 0;
            for (int q = 0; q < 3; q++) acc += (x[r * 3 + q] - m) * (x[r * 3 + q] - m);
            v[r] = acc / 2;
        }
        for (int q = 0; q < 3; q++) {
            double mx = fmax(x[q], x[3 + q]), lse = mx + log(exp(x[q] - mx) + exp(x[3 + q] - mx));
            ls[q] = x[q] - lse, ls[3 + q] = x[3 + q] - lse;
        }
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 2; q++) ct[r * 2 + q] = x[q * 3 + r];
        for (int r = 0; r < 3; r++) {
            s1[r] = 0;
            for (int q = 0; q < 3; q++) s1[r] += 2.5 * sq[r * 3 + q];
        }
        CHECK(tc_close(out[0].data, w, 6, "where"));
        CHECK(tc_close(out[1].data, c, 12, "cat"));
        CHECK(tc_close(out[2].data, g, 4, "gather"));
        CHECK(tc_close(out[3].data, sq, 9, "mm"));
        for (int i = 0; i < 5; i++) CHECK_EQ_I64(((int64_t *)out[4].data)[i], 2 + 3 * i);
        CHECK(tc_close(out[5].data, kk, 6, "shaped const"));
        CHECK(tc_close(out[6].data, t3e, 12, "reshape+expand"));
        CHECK(tc_close(out[7].data, bms, 4, "bmm+squeeze"));
        CHECK(tc_close(out[8].data, ist, 6, "index_select"));
        CHECK(tc_close(out[9].data, v, 2, "var"));
        CHECK(tc_close(out[10].data, ls, 6, "log_softmax dim 0"));
        CHECK(tc_close(out[11].data, ct, 6, "contiguous"));
        CHECK(tc_close(out[12].data, s1, 3, "addmm full bias + sum"));
        double rn[6];
        for (int r = 0; r < 2; r++) {
            double ms = (x[r * 3] * x[r * 3] + x[r * 3 + 1] * x[r * 3 + 1] + x[r * 3 + 2] * x[r * 3 + 2]) / 3;
            for (int q = 0; q < 3; q++) rn[r * 3 + q] = x[r * 3 + q] / sqrt(ms + 1e-6);
        }
        CHECK(tc_close(out[14].data, rn, 6, "rms_norm"));
        const int32_t q2[4] = {3 + 7, -4 - 7, -3 + 9, -1 - 1};
        for (int i = 0; i < 4; i++) CHECK_EQ_I64(((int32_t *)out[13].data)[i], q2[i]);
    }
    tc_free_outs(15, out);
    axon_program_destroy(p);
    axon_runtime_destroy(k.rt);
}

/* One program, prepared and run from two threads at once with different batch sizes, each on its own stream. */
typedef struct tc_thread {
    const axon_program_t *p;
    kc_dev_t k;
    int64_t s0;
    int failures;
} tc_thread_t;

static void *tc_thread_main(void *arg) {
    tc_thread_t *t = arg;
    const int64_t n = t->s0 * 300;
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4), b[300];
    tc_fill(x, n, 80), tc_fill(y, n, 81), tc_fill(b, 300, 82);
    int64_t xs[2] = {t->s0, 300}, bs[1] = {300};
    axon_tensor_t in[3] = {tc_f32(x, 2, xs), tc_f32(y, 2, xs), tc_f32(b, 1, bs)};
    for (int it = 0; it < 20; it++) {
        axon_tensor_t out[2];
        if (tc_run(&t->k, t->p, 3, in, 2, out, NULL) != AXON_OK) t->failures++;
        for (int64_t i = 0; i < n && out[1].data; i++)
            if (((float *)out[1].data)[i] != x[i] * y[i] + b[i % 300]) {
                t->failures++;
                break;
            }
        tc_free_outs(2, out);
    }
    free(x), free(y);
    return NULL;
}

static void test_threads(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    axon_program_t *p = tc_compile(chain_text, 1, NULL);
    CHECK(p != NULL);
    if (p) {
        tc_thread_t t[2] = {{p, k, 5, 0}, {p, k, 11, 0}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
            CHECK_OK(axon_stream_create(k.dev, 0, &t[i].k.s));
            pthread_create(&th[i], NULL, tc_thread_main, &t[i]);
        }
        for (int i = 0; i < 2; i++) {
            pthread_join(th[i], NULL);
            CHECK_EQ_I64(t[i].failures, 0);
            axon_stream_destroy(t[i].k.s);
        }
        axon_program_destroy(p);
    }
    axon_runtime_destroy(k.rt);
}

/* A group ended by a reduction over its trailing dimensions: x*x + x summed per row (the sum inside the kernel, with
 * the elementwise result also returned), a mean with keepdim over the last dim, and a full amax. */
static void test_fused_reduction(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[s0, 700]) -> (f32[s0], f32[s0, 700], f32[s0, 1], f32[]) {\n"
        "  %0 = mul(%x, %x) : f32[s0, 700]\n"
        "  %1 = add(%0, %x) : f32[s0, 700]\n"
        "  %2 = sum(%1) {dims = [1], keepdim = false} : f32[s0]\n"
        "  %3 = exp(%x) : f32[s0, 700]\n"
        "  %4 = mean(%3) {dims = [-1], keepdim = true} : f32[s0, 1]\n"
        "  %5 = neg(%x) : f32[s0, 700]\n"
        "  %6 = amax(%5) {dims = [], keepdim = false} : f32[]\n"
        "  return %2, %1, %4, %6\n"
        "}\n";
    tc_log_t *log = calloc(1, sizeof *log);
    axon_program_t *p = tc_compile(text, 1, log);
    CHECK(p != NULL);
    char buf[8192];
    tc_after(log, "fuse", buf, sizeof buf);
    CHECK(strstr(buf, "= fused @fused_0(%x)") != NULL);
    CHECK(strstr(buf, "= fused @fused_1(%x)") != NULL);
    CHECK(strstr(buf, "= fused @fused_2(%x)") != NULL);
    char *kernel = strstr(buf, "kernel @");
    if (kernel) *kernel = 0;
    CHECK(strstr(buf, "sum(") == NULL && strstr(buf, "mean(") == NULL && strstr(buf, "amax(") == NULL);
    for (int64_t s0 = 1; p && s0 <= 5; s0 += 4) {
        float x[5 * 700];
        tc_fill(x, s0 * 700, 90 + (unsigned)s0);
        int64_t xs[2] = {s0, 700};
        axon_tensor_t in[1] = {tc_f32(x, 2, xs)};
        axon_tensor_t out[4];
        CHECK_OK(tc_run(&k, p, 1, in, 4, out, NULL));
        double sum[5], h[5 * 700], mean[5], mx = -INFINITY;
        for (int64_t r = 0; r < s0; r++) {
            sum[r] = 0, mean[r] = 0;
            for (int j = 0; j < 700; j++) {
                float v = x[r * 700 + j] * x[r * 700 + j] + x[r * 700 + j];
                h[r * 700 + j] = v;
                sum[r] += v;
                mean[r] += (float)exp(x[r * 700 + j]) / 700.0;
                mx = fmax(mx, -x[r * 700 + j]);
            }
        }
        if (out[0].data) {
            CHECK(tc_close(out[0].data, sum, s0, "fused sum"));
            CHECK(tc_close(out[1].data, h, s0 * 700, "fused sum's operand"));
            CHECK(tc_close(out[2].data, mean, s0, "fused mean"));
            CHECK(tc_close(out[3].data, &mx, 1, "fused amax"));
        }
        tc_free_outs(4, out);
    }
    axon_program_destroy(p);
    free(log);
    axon_runtime_destroy(k.rt);
}

/* Short rows share a tile (fused_exec.c): relu then mean over the trailing 6 x 7 of [s0, 6, 7] (rows of 42, the two
 * reduced dimensions merged into one run), and x * x summed over rows of 7; s0 = 13 and 40 end on a partial tile. */
static void test_fused_reduction_short_rows(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[s0, 6, 7]) -> (f32[s0], f32[s0, 6]) {\n"
        "  %0 = relu(%x) : f32[s0, 6, 7]\n"
        "  %1 = mean(%0) {dims = [1, 2], keepdim = false} : f32[s0]\n"
        "  %2 = mul(%x, %x) : f32[s0, 6, 7]\n"
        "  %3 = sum(%2) {dims = [2], keepdim = false} : f32[s0, 6]\n"
        "  return %1, %3\n"
        "}\n";
    tc_log_t *log = calloc(1, sizeof *log);
    axon_program_t *p = tc_compile(text, 1, log);
    CHECK(p != NULL);
    char buf[8192];
    tc_after(log, "fuse", buf, sizeof buf);
    CHECK(strstr(buf, "= fused @fused_0(%x)") != NULL);
    CHECK(strstr(buf, "= fused @fused_1(%x)") != NULL);
    for (int64_t s0 = 1; p && s0 <= 40; s0 += s0 == 1 ? 12 : 27) {
        float x[40 * 42];
        tc_fill(x, s0 * 42, 7 + (unsigned)s0);
        int64_t xs[3] = {s0, 6, 7};
        axon_tensor_t in[1] = {tc_f32(x, 3, xs)};
        axon_tensor_t out[2];
        CHECK_OK(tc_run(&k, p, 1, in, 2, out, NULL));
        double mean[40], sq[40 * 6];
        for (int64_t r = 0; r < s0; r++) {
            mean[r] = 0;
            for (int j = 0; j < 42; j++) mean[r] += (x[r * 42 + j] > 0 ? x[r * 42 + j] : 0) / 42.0;
            for (int c = 0; c < 6; c++) {
                sq[r * 6 + c] = 0;
                for (int j = 0; j < 7; j++) sq[r * 6 + c] += (double)(x[r * 42 + c * 7 + j] * x[r * 42 + c * 7 + j]);
            }
        }
        if (out[0].data) {
            CHECK(tc_close(out[0].data, mean, s0, "short rows' mean"));
            CHECK(tc_close(out[1].data, sq, s0 * 6, "short rows' sum"));
        }
        tc_free_outs(2, out);
    }
    axon_program_destroy(p);
    free(log);
    axon_runtime_destroy(k.rt);
}

/* Random graphs of elementwise ops (some on a broadcast row, some values returned, some read long after they were
 * made) against a plain C evaluation, unfused and fused: the memory plan (reuse, in place) and fusion must never
 * change a result. */
enum { RG_VALUES = 24, RG_COLS = 37 };

static unsigned rg_next(unsigned *seed) {
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 8;
}

static void test_random_graphs(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const char *const unary[] = {"neg", "abs", "sigmoid", "tanh"};
    static const char *const binary[] = {"add", "sub", "mul", "maximum"};
    unsigned seed = 12345;
    for (int g = 0; g < 40; g++) {
        char text[8192];
        int len = snprintf(text, sizeof text,
                           "axir 1\nfunc @main(%%x: f32[s0, %d], %%y: f32[s0, %d], %%r: f32[%d]) -> (f32[s0, %d], "
                           "f32[s0, %d]) {\n",
                           RG_COLS, RG_COLS, RG_COLS, RG_COLS, RG_COLS);
        /* value v: kind (0 unary, 1 binary), op, operands; values 0, 1 are x, y; the row r is operand -1 */
        int kind[RG_VALUES], op[RG_VALUES], a[RG_VALUES], b[RG_VALUES];
        int nv = 6 + (int)(rg_next(&seed) % (RG_VALUES - 6));
        for (int v = 2; v < nv; v++) {
            kind[v] = (int)(rg_next(&seed) % 2);
            op[v] = (int)(rg_next(&seed) % 4);
            a[v] = (int)(rg_next(&seed) % (unsigned)v);
            b[v] = rg_next(&seed) % 5 == 0 ? -1 : (int)(rg_next(&seed) % (unsigned)v);
            char an[16], bn[16];
            if (a[v] < 2) snprintf(an, sizeof an, "%%%c", "xy"[a[v]]);
            else snprintf(an, sizeof an, "%%v%d", a[v]);
            if (b[v] < 0) snprintf(bn, sizeof bn, "%%r");
            else if (b[v] < 2) snprintf(bn, sizeof bn, "%%%c", "xy"[b[v]]);
            else snprintf(bn, sizeof bn, "%%v%d", b[v]);
            if (kind[v] == 0)
                len += snprintf(text + len, sizeof text - (size_t)len, "  %%v%d = %s(%s) : f32[s0, %d]\n", v,
                                unary[op[v]], an, RG_COLS);
            else
                len += snprintf(text + len, sizeof text - (size_t)len, "  %%v%d = %s(%s, %s) : f32[s0, %d]\n", v,
                                binary[op[v]], an, bn, RG_COLS);
        }
        int r0 = nv - 1, r1 = 2 + (int)(rg_next(&seed) % (unsigned)(nv - 2));
        snprintf(text + len, sizeof text - (size_t)len, "  return %%v%d, %%v%d\n}\n", r0, r1);
        const int64_t s0 = 1 + (int64_t)(rg_next(&seed) % 9), n = s0 * RG_COLS;
        float *val[RG_VALUES], row[RG_COLS];
        for (int v = 0; v < nv; v++) val[v] = malloc((size_t)n * sizeof(float));
        tc_fill(val[0], n, seed), tc_fill(val[1], n, seed + 1), tc_fill(row, RG_COLS, seed + 2);
        for (int v = 2; v < nv; v++)
            for (int64_t i = 0; i < n; i++) {
                float x = val[a[v]][i], y = b[v] < 0 ? row[i % RG_COLS] : val[b[v]][i], z;
                if (kind[v] == 0) z = op[v] == 0 ? -x : op[v] == 1 ? fabsf(x) : op[v] == 2 ? 1.0f / (1.0f + expf(-x))
                                                                                           : tanhf(x);
                else z = op[v] == 0 ? x + y : op[v] == 1 ? x - y : op[v] == 2 ? x * y : (x > y || isnan(x) ? x : y);
                val[v][i] = z;
            }
        for (int fuse = 0; fuse < 2; fuse++) {
            axon_program_t *p = tc_compile(text, fuse, NULL);
            CHECK(p != NULL);
            if (!p) {
                fprintf(stderr, "%s", text);
                continue;
            }
            int64_t xs[2] = {s0, RG_COLS}, rs[1] = {RG_COLS};
            axon_tensor_t in[3] = {tc_f32(val[0], 2, xs), tc_f32(val[1], 2, xs), tc_f32(row, 1, rs)};
            axon_tensor_t out[2];
            CHECK_OK(tc_run(&k, p, 3, in, 2, out, NULL));
            /* sigmoid and tanh may differ from libm's by an ulp or two, and that can grow through a chain */
            int bad = 0;
            for (int o = 0; o < 2 && out[0].data; o++) {
                const float *got = out[o].data, *want = val[o ? r1 : r0];
                for (int64_t i = 0; i < n; i++) bad += fabsf(got[i] - want[i]) > 1e-4f + 1e-4f * fabsf(want[i]);
            }
            CHECK_EQ_I64(bad, 0);
            if (bad) fprintf(stderr, "graph %d (fuse %d, s0 %lld):\n%s", g, fuse, (long long)s0, text);
            tc_free_outs(2, out);
            axon_program_destroy(p);
        }
        for (int v = 0; v < nv; v++) free(val[v]);
    }
    axon_runtime_destroy(k.rt);
}

/* Masks inside a fused group: comparisons and isnan make bools, logical ops combine them, where picks floats, casts
 * turn bools into floats and back, and a bool result is returned as well (relu's backward and attention masks look
 * like this). */
static void test_fused_masks(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const char *text =
        "axir 1\n"
        "func @main(%x: f32[s0, 300], %y: f32[s0, 300], %m: bool[300]) -> (f32[s0, 300], bool[s0, 300], "
        "bool[s0, 300]) {\n"
        "  %z = const() {value = 0.0} : f32[]\n"
        "  %0 = gt(%x, %z) : bool[s0, 300]\n"
        "  %1 = isnan(%y) : bool[s0, 300]\n"
        "  %2 = logical_not(%1) : bool[s0, 300]\n"
        "  %3 = logical_and(%0, %2) : bool[s0, 300]\n"
        "  %4 = logical_or(%3, %m) : bool[s0, 300]\n"
        "  %5 = mul(%x, %y) : f32[s0, 300]\n"
        "  %6 = neg(%x) : f32[s0, 300]\n"
        "  %7 = where(%4, %5, %6) : f32[s0, 300]\n"
        "  %8 = cast(%4) : f32[s0, 300]\n"
        "  %9 = add(%7, %8) : f32[s0, 300]\n"
        "  %10 = cast(%9) : bool[s0, 300]\n"
        "  return %9, %4, %10\n"
        "}\n";
    tc_log_t *log = calloc(1, sizeof *log);
    axon_program_t *p = tc_compile(text, 1, log);
    CHECK(p != NULL);
    char buf[8192];
    tc_after(log, "fuse", buf, sizeof buf);
    char *kernel = strstr(buf, "kernel @");
    CHECK(kernel != NULL);
    if (kernel) *kernel = 0;
    CHECK(strstr(buf, "where(") == NULL && strstr(buf, "gt(") == NULL && strstr(buf, "logical_or(") == NULL &&
          strstr(buf, "cast(") == NULL);
    CHECK(strstr(buf, "fused @fused_1") == NULL);   /* one group */
    for (int64_t s0 = 1; p && s0 <= 4; s0 += 3) {
        const int64_t n = s0 * 300;
        float x[4 * 300], y[4 * 300];
        uint8_t mask[300];
        tc_fill(x, n, 100 + (unsigned)s0), tc_fill(y, n, 110 + (unsigned)s0);
        for (int64_t i = 0; i < n; i += 7) y[i] = NAN;
        for (int j = 0; j < 300; j++) mask[j] = (uint8_t)(j % 5 == 0);
        int64_t xs[2] = {s0, 300}, ms[1] = {300};
        axon_tensor_t in[3] = {tc_f32(x, 2, xs), tc_f32(y, 2, xs), kc_tensor(mask, AXON_BOOL, 1, ms, NULL)};
        axon_tensor_t out[3];
        CHECK_OK(tc_run(&k, p, 3, in, 3, out, NULL));
        int bad = 0;
        for (int64_t i = 0; i < n && out[0].data; i++) {
            int keep = (x[i] > 0 && !isnan(y[i])) || mask[i % 300];
            float want = (keep ? x[i] * y[i] : -x[i]) + (float)keep;
            float got = ((float *)out[0].data)[i];
            bad += ((uint8_t *)out[1].data)[i] != keep;
            bad += isnan(want) ? !isnan(got) : got != want;
            bad += ((uint8_t *)out[2].data)[i] != (want != 0.0f);   /* NaN is true, as in the copy rules */
        }
        CHECK_EQ_I64(bad, 0);
        tc_free_outs(3, out);
    }
    axon_program_destroy(p);
    free(log);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_mlp_dynamic);
    RUN(test_softmax_layer_norm);
    RUN(test_reductions);
    RUN(test_views);
    RUN(test_fused_chain);
    RUN(test_fused_cast_broadcast);
    RUN(test_fused_slices_of_a_symbolic_dim);
    RUN(test_fused_reduction);
    RUN(test_fused_reduction_short_rows);
    RUN(test_fused_masks);
    RUN(test_workspace_reuse);
    RUN(test_passes);
    RUN(test_bad_inputs);
    RUN(test_library_ops);
    RUN(test_index_copy_into_writes_the_parameter);
    RUN(test_attention_training_ops_match_the_kernels);
    RUN(test_training_ops_and_draws_match_the_kernels);
    RUN(test_attention_dropout_draws_and_its_backward_match_the_kernels);
    RUN(test_more_ops);
    RUN(test_threads);
    RUN(test_random_graphs);
    return check_report();
}
