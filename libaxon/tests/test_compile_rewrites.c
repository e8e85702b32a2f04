/* Rewrites that make graphs fuse and vectorize: the schedule pass (chains that a front end interleaves with
 * constants, views and unrelated work still fuse; a graph with nothing to fuse keeps its order), and pow by a
 * constant exponent expanded the way PyTorch's CPU kernel computes it, `contiguous` of a value that is already
 * row-major dropped, attention written out as bmm/softmax/bmm turned into sdpa, and attention's output laid out so
 * that the head merge after it needs no copy. */
#include <math.h>
#include <string.h>

#include "axon/trace.h"
#include "compile_check.h"

/* Compiles text (no tier 1; fusion passes as fuse says) into *p and returns the module's text after the passes;
 * NULL (and *p NULL) if it does not compile. */
static char *compile_print(const char *text, int fuse, axon_program_t **p) {
    axon_axir_diag_t d;
    axon_compile_options_t o = axon_compile_options_default();
    o.tier1 = 0;
    o.fuse = fuse;
    *p = NULL;
    CHECK_OK(axon_compile_text(text, strlen(text), &o, p, &d));
    if (!*p) return NULL;
    char *out = NULL;
    CHECK_OK(axon_axir_print(axon_program_module(*p), &out, NULL));
    return out;
}

/* The entry function's text after all passes, or NULL. */
static char *compiled_text(const char *text) {
    axon_program_t *p = NULL;
    char *out = compile_print(text, 1, &p);
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
    axon_program_t *p = NULL;
    char *out = compile_print(text, 0, &p);   /* no fusion: look at the rewrite itself */
    if (!p) return;
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
    axon_program_t *p = NULL;
    char *out = compile_print(text, 1, &p);
    if (!p) return;
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

/* Compiles text with and without the fusion passes, runs both on the same inputs and compares the nout (at most 8)
 * float32 outputs; returns the fused program's text. */
static char *compare_fused_and_plain_n(const char *text, int nin, axon_tensor_t *ins, int nout, double tol) {
    axon_program_t *p[2] = {NULL, NULL};
    free(compile_print(text, 0, &p[0]));
    char *out = compile_print(text, 1, &p[1]);
    kc_dev_t k = kc_open(2);
    CHECK(k.rt != NULL);
    if (p[0] && p[1] && k.rt) {
        axon_tensor_t o0[8], o1[8];
        memset(o0, 0, sizeof o0);
        memset(o1, 0, sizeof o1);
        CHECK_OK(tc_run(&k, p[0], nin, ins, nout, o0, NULL));
        CHECK_OK(tc_run(&k, p[1], nin, ins, nout, o1, NULL));
        double worst = 0;
        for (int r = 0; r < nout; r++) {
            int64_t n = axon_tensor_numel(&o0[r]);
            for (int64_t i = 0; o0[r].data && o1[r].data && i < n; i++) {
                double a = ((const float *)o0[r].data)[i], b = ((const float *)o1[r].data)[i];
                double e = fabs(a - b) / (1.0 + fabs(a));
                worst = e > worst || e != e ? e : worst;
            }
        }
        CHECK(worst <= tol);
        if (!(worst <= tol)) fprintf(stderr, "  fused and plain differ by %g\n", worst);
        tc_free_outs(nout, o0);
        tc_free_outs(nout, o1);
    }
    if (k.rt) axon_runtime_destroy(k.rt);
    axon_program_destroy(p[0]);
    axon_program_destroy(p[1]);
    return out;
}

static char *compare_fused_and_plain(const char *text, int nin, axon_tensor_t *ins, double tol) {
    return compare_fused_and_plain_n(text, nin, ins, 1, tol);
}

static void test_written_out_attention_becomes_sdpa(void) {
    /* q @ k^T / 4 + mask, softmax, @ v on [2, 3, 5, 4] heads, as aot_autograd lowers it (contiguous copies and
     * reshapes to 3-D for the bmms) */
    static const char *const text =
        "axir 1\n"
        "func @main(%q: f32[2, 3, 5, 4], %k: f32[2, 3, 6, 4], %v: f32[2, 3, 6, 4], %mask: f32[2, 1, 5, 6]) -> (f32[2, 3, 5, 4]) {\n"
        "  %kt = permute(%k) {dims = [0, 1, 3, 2]} : f32[2, 3, 4, 6]\n"
        "  %qc = contiguous(%q) : f32[2, 3, 5, 4]\n"
        "  %q3 = reshape(%qc) {shape = [6, 5, 4]} : f32[6, 5, 4]\n"
        "  %ktc = contiguous(%kt) : f32[2, 3, 4, 6]\n"
        "  %k3 = reshape(%ktc) {shape = [6, 4, 6]} : f32[6, 4, 6]\n"
        "  %s = bmm(%q3, %k3) : f32[6, 5, 6]\n"
        "  %s4 = reshape(%s) {shape = [2, 3, 5, 6]} : f32[2, 3, 5, 6]\n"
        "  %four = const() {value = 4.0} : f32[]\n"
        "  %t = div(%s4, %four) : f32[2, 3, 5, 6]\n"
        "  %tm = add(%mask, %t) : f32[2, 3, 5, 6]\n"
        "  %p = softmax(%tm) {dim = -1} : f32[2, 3, 5, 6]\n"
        "  %pe = expand(%p) {shape = [2, 3, 5, 6]} : f32[2, 3, 5, 6]\n"
        "  %p3 = reshape(%pe) {shape = [6, 5, 6]} : f32[6, 5, 6]\n"
        "  %vc = contiguous(%v) : f32[2, 3, 6, 4]\n"
        "  %v3 = reshape(%vc) {shape = [6, 6, 4]} : f32[6, 6, 4]\n"
        "  %o = bmm(%p3, %v3) : f32[6, 5, 4]\n"
        "  %o4 = reshape(%o) {shape = [2, 3, 5, 4]} : f32[2, 3, 5, 4]\n"
        "  return %o4\n"
        "}\n";
    float q[120], k[144], v[144], mask[60];
    tc_fill(q, 120, 1), tc_fill(k, 144, 2), tc_fill(v, 144, 3), tc_fill(mask, 60, 4);
    mask[7] = -INFINITY;   /* a masked-out key */
    int64_t sq[4] = {2, 3, 5, 4}, sk[4] = {2, 3, 6, 4}, sm[4] = {2, 1, 5, 6};
    axon_tensor_t ins[4] = {kc_tensor(q, AXON_FLOAT32, 4, sq, NULL), kc_tensor(k, AXON_FLOAT32, 4, sk, NULL),
                            kc_tensor(v, AXON_FLOAT32, 4, sk, NULL), kc_tensor(mask, AXON_FLOAT32, 4, sm, NULL)};
    char *out = compare_fused_and_plain(text, 4, ins, 1e-5);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(count(out, "sdpa(%q, %k, %v, %mask)") == 1);
    CHECK(count(out, "scale = 0.25") == 1);
    CHECK(count(out, "softmax(") == 0 && count(out, "bmm(") == 0);
    if (count(out, "sdpa(") != 1) fprintf(stderr, "got:\n%s", out);
    free(out);
}

static void test_attention_without_heads_and_without_scale_becomes_sdpa(void) {
    static const char *const text =
        "axir 1\n"
        "func @main(%q: f32[3, 5, 4], %kt: f32[3, 4, 7], %v: f32[3, 7, 2]) -> (f32[3, 5, 2]) {\n"
        "  %s = bmm(%q, %kt) : f32[3, 5, 7]\n"
        "  %p = softmax(%s) {dim = 2} : f32[3, 5, 7]\n"
        "  %o = bmm(%p, %v) : f32[3, 5, 2]\n"
        "  return %o\n"
        "}\n";
    float q[60], kt[84], v[42];
    tc_fill(q, 60, 5), tc_fill(kt, 84, 6), tc_fill(v, 42, 7);
    int64_t sq[3] = {3, 5, 4}, sk[3] = {3, 4, 7}, sv[3] = {3, 7, 2};
    axon_tensor_t ins[3] = {kc_tensor(q, AXON_FLOAT32, 3, sq, NULL), kc_tensor(kt, AXON_FLOAT32, 3, sk, NULL),
                            kc_tensor(v, AXON_FLOAT32, 3, sv, NULL)};
    char *out = compare_fused_and_plain(text, 3, ins, 1e-5);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(count(out, "sdpa(") == 1 && count(out, "scale = 1.0") == 1 && count(out, "softmax(") == 0);
    free(out);
}

static void test_attention_whose_scores_are_also_returned_stays(void) {
    /* the probabilities are a result too (an attention map someone asked for): nothing to gain, no rewrite */
    static const char *const text =
        "axir 1\n"
        "func @main(%q: f32[3, 5, 4], %kt: f32[3, 4, 7], %v: f32[3, 7, 2]) -> (f32[3, 5, 2], f32[3, 5, 7]) {\n"
        "  %s = bmm(%q, %kt) : f32[3, 5, 7]\n"
        "  %p = softmax(%s) {dim = 2} : f32[3, 5, 7]\n"
        "  %o = bmm(%p, %v) : f32[3, 5, 2]\n"
        "  return %o, %p\n"
        "}\n";
    char *out = compiled_text(text);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(count(out, "sdpa(") == 0 && count(out, "softmax(") == 1);
    free(out);
}

/* Runs text on q, k, v ([2, 3, 5, 4] each) and w ([12, 3]) with tracing on; returns output 0 (30 floats) in out and
 * how many copy commands ran. */
static int run_attention_merge(const char *text, float *out) {
    float q[120], k[120], v[120], w[36];
    tc_fill(q, 120, 11), tc_fill(k, 120, 12), tc_fill(v, 120, 13), tc_fill(w, 36, 14);
    int64_t sz[4] = {2, 3, 5, 4}, sw[2] = {12, 3};
    axon_tensor_t ins[4] = {kc_tensor(q, AXON_FLOAT32, 4, sz, NULL), kc_tensor(k, AXON_FLOAT32, 4, sz, NULL),
                            kc_tensor(v, AXON_FLOAT32, 4, sz, NULL), kc_tensor(w, AXON_FLOAT32, 2, sw, NULL)};
    axon_program_t *p = NULL;
    free(compile_print(text, 1, &p));
    int copies = -1;
    kc_dev_t kd = kc_open(2);
    if (p && kd.rt) {
        const int nout = axon_axir_module_func(axon_program_module(p), 0)->num_results;
        axon_tensor_t outs[2];
        memset(outs, 0, sizeof outs);
        CHECK_OK(axon_trace_enable(kd.rt, 1));
        CHECK_OK(tc_run(&kd, p, 4, ins, nout, outs, NULL));
        axon_trace_record_t rec[64];
        size_t got = 0;
        CHECK_OK(axon_trace_read(kd.rt, 0, 64, rec, &got));
        copies = 0;
        for (size_t i = 0; i < got; i++) copies += strcmp(rec[i].name, "tensor_copy") == 0;
        if (outs[0].data) memcpy(out, outs[0].data, sizeof(float) * 30);
        tc_free_outs(nout, outs);
    }
    if (kd.rt) axon_runtime_destroy(kd.rt);
    axon_program_destroy(p);
    return copies;
}

static void test_attention_output_is_laid_out_for_the_head_merge(void) {
    /* sdpa -> transpose(1, 2) -> reshape [B*L, H*E] -> the output projection: the attention output is stored
     * [B, L, H, E], so the merge is a view and nothing is copied */
    static const char *const merged =
        "axir 1\n"
        "func @main(%q: f32[2, 3, 5, 4], %k: f32[2, 3, 5, 4], %v: f32[2, 3, 5, 4], %w: f32[12, 3]) -> (f32[10, 3]) {\n"
        "  %a = sdpa(%q, %k, %v) {dropout_p = 0.0, is_causal = true} : f32[2, 3, 5, 4]\n"
        "  %t = permute(%a) {dims = [0, 2, 1, 3]} : f32[2, 5, 3, 4]\n"
        "  %m = reshape(%t) {shape = [10, 12]} : f32[10, 12]\n"
        "  %o = mm(%m, %w) : f32[10, 3]\n"
        "  return %o\n"
        "}\n";
    /* the same with the attention output returned too: it stays row-major, and the merge copies */
    static const char *const also_returned =
        "axir 1\n"
        "func @main(%q: f32[2, 3, 5, 4], %k: f32[2, 3, 5, 4], %v: f32[2, 3, 5, 4], %w: f32[12, 3]) -> "
        "(f32[10, 3], f32[2, 3, 5, 4]) {\n"
        "  %a = sdpa(%q, %k, %v) {dropout_p = 0.0, is_causal = true} : f32[2, 3, 5, 4]\n"
        "  %t = permute(%a) {dims = [0, 2, 1, 3]} : f32[2, 5, 3, 4]\n"
        "  %m = reshape(%t) {shape = [10, 12]} : f32[10, 12]\n"
        "  %o = mm(%m, %w) : f32[10, 3]\n"
        "  return %o, %a\n"
        "}\n";
    float r1[30], r2[30];
    memset(r1, 0, sizeof r1);
    memset(r2, 0xff, sizeof r2);
    CHECK(run_attention_merge(merged, r1) == 0);
    CHECK(run_attention_merge(also_returned, r2) == 1);
    CHECK(memcmp(r1, r2, sizeof r1) == 0);
}

/* The main function's part of a module's text (kernels follow it). */
static int count_in_main(const char *out, const char *needle) {
    const char *k = strstr(out, "kernel @");
    int total = count(out, needle);
    return k ? total - count(k, needle) : total;
}

static void test_converging_updates_fuse_per_parameter(void) {
    /* an optimizer step traced list op by list op: every parameter's decay, then every momentum, ...; each
     * parameter's update reads chains that start far apart, and becomes one kernel with two results */
    static const char *const text =
        "axir 1\n"
        "func @main(%p0: f32[64], %g0: f32[64], %m0: f32[64], %p1: f32[32, 8], %g1: f32[32, 8], %m1: f32[32, 8]) -> "
        "(f32[64], f32[64], f32[32, 8], f32[32, 8]) {\n"
        "  %decay = const() {value = 0.99} : f32[]\n"
        "  %d0 = mul(%p0, %decay) : f32[64]\n"
        "  %d1 = mul(%p1, %decay) : f32[32, 8]\n"
        "  %beta = const() {value = 0.9} : f32[]\n"
        "  %a0 = mul(%m0, %beta) : f32[64]\n"
        "  %a1 = mul(%m1, %beta) : f32[32, 8]\n"
        "  %n0 = add(%a0, %g0) : f32[64]\n"
        "  %n1 = add(%a1, %g1) : f32[32, 8]\n"
        "  %lr = const() {value = 0.01} : f32[]\n"
        "  %s0 = mul(%n0, %lr) : f32[64]\n"
        "  %s1 = mul(%n1, %lr) : f32[32, 8]\n"
        "  %u0 = sub(%d0, %s0) : f32[64]\n"
        "  %u1 = sub(%d1, %s1) : f32[32, 8]\n"
        "  return %u0, %n0, %u1, %n1\n"
        "}\n";
    float p0[64], g0[64], m0[64], p1[256], g1[256], m1[256];
    tc_fill(p0, 64, 1), tc_fill(g0, 64, 2), tc_fill(m0, 64, 3), tc_fill(p1, 256, 4), tc_fill(g1, 256, 5);
    tc_fill(m1, 256, 6);
    int64_t s0[1] = {64}, s1[2] = {32, 8};
    axon_tensor_t ins[6] = {kc_tensor(p0, AXON_FLOAT32, 1, s0, NULL), kc_tensor(g0, AXON_FLOAT32, 1, s0, NULL),
                            kc_tensor(m0, AXON_FLOAT32, 1, s0, NULL), kc_tensor(p1, AXON_FLOAT32, 2, s1, NULL),
                            kc_tensor(g1, AXON_FLOAT32, 2, s1, NULL), kc_tensor(m1, AXON_FLOAT32, 2, s1, NULL)};
    char *out = compare_fused_and_plain_n(text, 6, ins, 4, 0);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(count(out, "kernel @") == 2);
    CHECK(count_in_main(out, "= fused @") == 2);
    CHECK(count_in_main(out, "mul(") == 0 && count_in_main(out, "add(") == 0 && count_in_main(out, "sub(") == 0);
    if (count(out, "kernel @") != 2) fprintf(stderr, "got:\n%s", out);
    free(out);
}

static void test_run_with_too_many_results_fuses_in_parts(void) {
    /* three chains of the same shape whose every value is returned: six results, more than one kernel returns, so
     * the run becomes a kernel of four results and one of two, not six separate launches */
    static const char *const text =
        "axir 1\n"
        "func @main(%x: f32[16], %y: f32[16], %z: f32[16]) -> (f32[16], f32[16], f32[16], f32[16], f32[16], f32[16]) {\n"
        "  %a = exp(%x) : f32[16]\n"
        "  %b = neg(%a) : f32[16]\n"
        "  %c = exp(%y) : f32[16]\n"
        "  %d = neg(%c) : f32[16]\n"
        "  %e = exp(%z) : f32[16]\n"
        "  %f = neg(%e) : f32[16]\n"
        "  return %b, %a, %d, %c, %f, %e\n"
        "}\n";
    float x[16], y[16], z[16];
    tc_fill(x, 16, 1), tc_fill(y, 16, 2), tc_fill(z, 16, 3);
    int64_t sh[1] = {16};
    axon_tensor_t ins[3] = {kc_tensor(x, AXON_FLOAT32, 1, sh, NULL), kc_tensor(y, AXON_FLOAT32, 1, sh, NULL),
                            kc_tensor(z, AXON_FLOAT32, 1, sh, NULL)};
    char *out = compare_fused_and_plain_n(text, 3, ins, 6, 0);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(count(out, "kernel @") == 2);
    CHECK(count_in_main(out, "exp(") == 0 && count_in_main(out, "neg(") == 0);
    if (count(out, "kernel @") != 2) fprintf(stderr, "got:\n%s", out);
    free(out);
}

static void test_equal_constants_become_one(void) {
    /* one const per Python scalar, as a front end emits them: equal ones (same dtype and bits) merge, so a run
     * fills each value once; 0.5 as float64 and -0.0 stay apart */
    static const char *const text =
        "axir 1\n"
        "func @main(%x: f32[4, 4], %w: f32[4, 4]) -> (f32[4, 4], f32[4, 4]) {\n"
        "  %h0 = const() {value = 0.5} : f32[]\n"
        "  %a = mm(%x, %w) : f32[4, 4]\n"
        "  %h1 = const() {value = 0.5} : f32[]\n"
        "  %z0 = const() {value = 0.0} : f32[]\n"
        "  %z1 = const() {value = -0.0} : f32[]\n"
        "  %hd = const() {value = 0.5} : f64[]\n"
        "  %b = mm(%w, %x) : f32[4, 4]\n"
        "  %hc = cast(%hd) : f32[]\n"
        "  %c = mul(%a, %h0) : f32[4, 4]\n"
        "  %d = mul(%b, %h1) : f32[4, 4]\n"
        "  %e = add(%c, %z0) : f32[4, 4]\n"
        "  %f = mul(%d, %z1) : f32[4, 4]\n"
        "  %g = softmax(%e) {dim = 1} : f32[4, 4]\n"
        "  %h = mul(%f, %hc) : f32[4, 4]\n"
        "  return %g, %h\n"
        "}\n";
    axon_program_t *p = NULL;
    char *out = compile_print(text, 0, &p);
    axon_program_destroy(p);
    CHECK(out != NULL);
    if (!out) return;
    /* 0.5 (f32; the f64 0.5 folds through its cast into it), 0.0 and -0.0 */
    CHECK(count(out, "const()") == 3);
    CHECK(count(out, "value = 0.5") == 1);
    if (count(out, "const()") != 3) fprintf(stderr, "got:\n%s", out);
    free(out);
}

static void test_repeated_key_value_heads_are_read_grouped(void) {
    /* Llama's repeat_kv: 2 key/value heads copied out to the 4 query heads; sdpa reads the 2 heads directly */
    static const char *const text =
        "axir 1\n"
        "func @main(%q: f32[2, 4, 3, 8], %k: f32[2, 2, 5, 8], %v: f32[2, 2, 5, 8]) -> (f32[2, 4, 3, 8]) {\n"
        "  %ku = unsqueeze(%k) {dim = 2} : f32[2, 2, 1, 5, 8]\n"
        "  %ke = expand(%ku) {shape = [2, 2, 2, 5, 8]} : f32[2, 2, 2, 5, 8]\n"
        "  %kc = contiguous(%ke) : f32[2, 2, 2, 5, 8]\n"
        "  %kr = reshape(%kc) {shape = [2, 4, 5, 8]} : f32[2, 4, 5, 8]\n"
        "  %vu = unsqueeze(%v) {dim = 2} : f32[2, 2, 1, 5, 8]\n"
        "  %ve = expand(%vu) {shape = [2, 2, 2, 5, 8]} : f32[2, 2, 2, 5, 8]\n"
        "  %vc = contiguous(%ve) : f32[2, 2, 2, 5, 8]\n"
        "  %vr = reshape(%vc) {shape = [2, 4, 5, 8]} : f32[2, 4, 5, 8]\n"
        "  %o = sdpa(%q, %kr, %vr) {dropout_p = 0.0, is_causal = false, scale = 0.35} : f32[2, 4, 3, 8]\n"
        "  return %o\n"
        "}\n";
    float q[192], k[160], v[160];
    tc_fill(q, 192, 1), tc_fill(k, 160, 2), tc_fill(v, 160, 3);
    int64_t sq[4] = {2, 4, 3, 8}, sk[4] = {2, 2, 5, 8};
    axon_tensor_t ins[3] = {kc_tensor(q, AXON_FLOAT32, 4, sq, NULL), kc_tensor(k, AXON_FLOAT32, 4, sk, NULL),
                            kc_tensor(v, AXON_FLOAT32, 4, sk, NULL)};
    char *out = compare_fused_and_plain(text, 3, ins, 1e-6);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(count(out, "sdpa(%q, %k, %v)") == 1);
    CHECK(count(out, "contiguous(") == 0 && count(out, "expand(") == 0);
    if (count(out, "sdpa(%q, %k, %v)") != 1) fprintf(stderr, "got:\n%s", out);
    free(out);
}

int main(void) {
    RUN(test_interleaved_chain_fuses);
    RUN(test_unfusable_graph_keeps_order);
    RUN(test_pow_by_small_constants_expands);
    RUN(test_contiguous_of_row_major_values_goes);
    RUN(test_written_out_attention_becomes_sdpa);
    RUN(test_attention_without_heads_and_without_scale_becomes_sdpa);
    RUN(test_attention_whose_scores_are_also_returned_stays);
    RUN(test_attention_output_is_laid_out_for_the_head_merge);
    RUN(test_converging_updates_fuse_per_parameter);
    RUN(test_run_with_too_many_results_fuses_in_parts);
    RUN(test_equal_constants_become_one);
    RUN(test_repeated_key_value_heads_are_read_grouped);
    return check_report();
}
