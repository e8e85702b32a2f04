/* Rewrites that make graphs fuse and vectorize: the schedule pass (chains that a front end interleaves with
 * constants, views and unrelated work still fuse; a graph with nothing to fuse keeps its order), and pow by a
 * constant exponent expanded the way PyTorch's CPU kernel computes it, and `contiguous` of a value that is already
 * row-major dropped. */
#include <math.h>
#include <string.h>

#include "compile_check.h"

/* The entry function's text after all passes, or NULL. */
static char *compiled_text(const char *text) {
    axon_program_t *p = NULL;
    axon_axir_diag_t d;
    axon_compile_options_t o = axon_compile_options_default();
    o.tier1 = 0;
    if (axon_compile_text(text, strlen(text), &o, &p, &d) != AXON_OK) return NULL;
    char *out = NULL;
    if (axon_axir_print(axon_program_module(p), &out, NULL) != AXON_OK) out = NULL;
    axon_program_destroy(p);
    return out;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle)) n++;
    return n;
}

static void test_interleaved_chain_fuses(void) {
    /* x*0.5 -> (a transpose of w in between) -> +b -> (an unrelated exp of w) -> tanh: one group of three */
    static const char *const text =
        "axir 1\n"
        "func @main(%x: f32[8, 16], %b: f32[16], %w: f32[16, 8]) -> (f32[8, 16], f32[16, 8]) {\n"
        "  %half = const() {value = 0.5} : f32[]\n"
        "  %0 = mul(%x, %half) : f32[8, 16]\n"
        "  %wt = permute(%w) {dims = [1, 0]} : f32[8, 16]\n"
        "  %1 = add(%0, %b) : f32[8, 16]\n"
        "  %e = exp(%w) : f32[16, 8]\n"
        "  %2 = tanh(%1) : f32[8, 16]\n"
        "  %3 = add(%2, %wt) : f32[8, 16]\n"
        "  return %3, %e\n"
        "}\n";
    char *out = compiled_text(text);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(count(out, "kernel @") == 1);
    CHECK(count(out, "= fused @") == 1);
    /* the group holds all four elementwise ops on [8, 16] */
    const char *k = strstr(out, "kernel @");
    CHECK(k && strstr(k, "mul(") && strstr(k, "tanh(") && count(k, "add(") == 2);
    free(out);
}

static void test_unfusable_graph_keeps_order(void) {
    static const char *const text =
        "axir 1\n"
        "\n"
        "func @main(%a: f32[4, 4], %b: f32[4, 4]) -> (f32[4, 4], f32[4, 4]) {\n"
        "  %0 = mm(%a, %b) : f32[4, 4]\n"
        "  %1 = mm(%b, %a) : f32[4, 4]\n"
        "  %2 = softmax(%0) {dim = 1} : f32[4, 4]\n"
        "  return %2, %1\n"
        "}\n";
    char *out = compiled_text(text);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(strcmp(out, text) == 0);
    if (strcmp(out, text) != 0) fprintf(stderr, "got:\n%s", out);
    free(out);
}

static void test_pow_by_small_constants_expands(void) {
    static const char *const text =
        "axir 1\n"
        "func @main(%x: f32[8]) -> (f32[8], f32[8], f32[8], f32[8]) {\n"
        "  %three = const() {value = 3.0} : f32[]\n"
        "  %two = const() {value = 2} : f32[]\n"
        "  %half = const() {value = 0.5} : f32[]\n"
        "  %e = const() {value = 2.5} : f32[]\n"
        "  %0 = pow(%x, %three) : f32[8]\n"
        "  %1 = pow(%x, %two) : f32[8]\n"
        "  %2 = pow(%x, %half) : f32[8]\n"
        "  %3 = pow(%x, %e) : f32[8]\n"
        "  return %0, %1, %2, %3\n"
        "}\n";
    axon_compile_options_t o = axon_compile_options_default();
    o.tier1 = 0;
    o.fuse = 0;   /* look at the rewrite itself */
    axon_program_t *p = NULL;
    axon_axir_diag_t d;
    CHECK_OK(axon_compile_text(text, strlen(text), &o, &p, &d));
    if (!p) return;
    char *out = NULL;
    CHECK_OK(axon_axir_print(axon_program_module(p), &out, NULL));
    if (out) {
        CHECK(count(out, "pow(") == 1);              /* only x^2.5 keeps pow */
        CHECK(count(out, "mul(") == 3);              /* x*x*x (two) and x*x (one) */
        CHECK(count(out, "sqrt(") == 1);
        CHECK(count(out, "value = 3.0") == 0 && count(out, "value = 2.5") == 1);   /* dead exponents go */
        free(out);
    }
    /* and the values are PyTorch's: x*x*x is (x*x)*x */
    kc_dev_t k = kc_open(1);
    CHECK(k.rt != NULL);
    if (k.rt) {
        float h[8] = {-2.5f, -1.0f, 0.0f, 0.3f, 1.7f, 3.1f, 10.0f, 1e-3f}, r[4][8];
        int64_t n = 8;
        axon_tensor_t in = kc_tensor(h, AXON_FLOAT32, 1, &n, NULL), outs[4];
        memset(outs, 0, sizeof outs);
        memset(r, 0, sizeof r);
        CHECK_OK(tc_run(&k, p, 1, &in, 4, outs, NULL));
        for (int i = 0; i < 4; i++)
            if (outs[i].data) memcpy(r[i], outs[i].data, sizeof r[i]);
        tc_free_outs(4, outs);
        int bad = 0;
        for (int j = 0; j < 8; j++) {
            float x = h[j];
            bad += r[0][j] != (x * x) * x || r[1][j] != x * x;
            bad += !(r[2][j] == sqrtf(x) || (x < 0 && r[2][j] != r[2][j]));
            bad += !(r[3][j] == powf(x, 2.5f) || (x < 0 && r[3][j] != r[3][j]));
        }
        CHECK(bad == 0);
        axon_runtime_destroy(k.rt);
    }
    axon_program_destroy(p);
}

static void test_contiguous_of_row_major_values_goes(void) {
    /* contiguous of an mm result through a reshape goes; contiguous of a transpose, and of a parameter (whose strides
     * the caller chooses), stay; the values are the same either way */
    static const char *const text =
        "axir 1\n"
        "func @main(%a: f32[4, 6], %b: f32[6, 8]) -> (f32[2, 2, 8], f32[8, 4], f32[4, 6]) {\n"
        "  %0 = mm(%a, %b) : f32[4, 8]\n"
        "  %1 = reshape(%0) {shape = [2, 2, 8]} : f32[2, 2, 8]\n"
        "  %2 = contiguous(%1) : f32[2, 2, 8]\n"
        "  %3 = permute(%0) {dims = [1, 0]} : f32[8, 4]\n"
        "  %4 = contiguous(%3) : f32[8, 4]\n"
        "  %5 = contiguous(%a) : f32[4, 6]\n"
        "  return %2, %4, %5\n"
        "}\n";
    axon_compile_options_t o = axon_compile_options_default();
    o.tier1 = 0;
    axon_program_t *p = NULL;
    axon_axir_diag_t d;
    CHECK_OK(axon_compile_text(text, strlen(text), &o, &p, &d));
    if (!p) return;
    char *out = NULL;
    CHECK_OK(axon_axir_print(axon_program_module(p), &out, NULL));
    if (out) {
        CHECK(count(out, "contiguous(") == 2);
        CHECK(strstr(out, "contiguous(%1)") == NULL);
        free(out);
    }
    kc_dev_t k = kc_open(1);
    CHECK(k.rt != NULL);
    if (k.rt) {
        float ha[24], hb[48], r0[32], r1[32], r2[24];
        for (int i = 0; i < 24; i++) ha[i] = (float)(i % 7) - 3.0f;
        for (int i = 0; i < 48; i++) hb[i] = (float)(i % 5) * 0.5f;
        int64_t sa[2] = {4, 6}, sb[2] = {6, 8};
        axon_tensor_t in[2] = {kc_tensor(ha, AXON_FLOAT32, 2, sa, NULL), kc_tensor(hb, AXON_FLOAT32, 2, sb, NULL)};
        axon_tensor_t outs[3];
        memset(outs, 0, sizeof outs);
        CHECK_OK(tc_run(&k, p, 2, in, 3, outs, NULL));
        if (outs[0].data && outs[1].data && outs[2].data) {
            memcpy(r0, outs[0].data, sizeof r0);
            memcpy(r1, outs[1].data, sizeof r1);
            memcpy(r2, outs[2].data, sizeof r2);
            int bad = 0;
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 8; j++) {
                    float acc = 0;
                    for (int q = 0; q < 6; q++) acc += ha[i * 6 + q] * hb[q * 8 + j];
                    bad += fabsf(r0[i * 8 + j] - acc) > 1e-4f || fabsf(r1[j * 4 + i] - acc) > 1e-4f;
                }
            bad += memcmp(r2, ha, sizeof r2) != 0;
            CHECK(bad == 0);
        }
        tc_free_outs(3, outs);
        axon_runtime_destroy(k.rt);
    }
    axon_program_destroy(p);
}

int main(void) {
    RUN(test_interleaved_chain_fuses);
    RUN(test_unfusable_graph_keeps_order);
    RUN(test_pow_by_small_constants_expands);
    RUN(test_contiguous_of_row_major_values_goes);
    return check_report();
}
