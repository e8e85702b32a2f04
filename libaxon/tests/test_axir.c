/* AXIR text: parse -> print is byte-identical on canonical modules, parse errors are located at the offending token,
 * builders make modules that print and parse back, and the op table is consistent. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "axon/axir.h"
#include "check.h"

/* A two-layer MLP with a dynamic batch. */
static const char k_mlp[] =
    "axir 1\n"
    "\n"
    "func @main(%x: f32[s0, 768], %w1: f32[3072, 768], %b1: f32[3072], %w2: f32[768, 3072], %b2: f32[768]) -> (f32[s0, 768]) {\n"
    "  %w1t = permute(%w1) {dims = [1, 0]} : f32[768, 3072]\n"
    "  %0 = addmm(%b1, %x, %w1t) : f32[s0, 3072]\n"
    "  %1 = gelu(%0) {approximate = \"tanh\"} : f32[s0, 3072]\n"
    "  %w2t = permute(%w2) {dims = [1, 0]} : f32[3072, 768]\n"
    "  %2 = addmm(%b2, %1, %w2t) {alpha = 1.0, beta = 0.5} : f32[s0, 768]\n"
    "  %3 = relu(%2) : f32[s0, 768]\n"
    "  return %3\n"
    "}\n";

/* A transformer block: layer_norm, reshape/permute/select into heads, sdpa, residual, rms_norm. */
static const char k_block[] =
    "axir 1\n"
    "\n"
    "func @block(%x: f32[2, s0, 64], %ln_w: f32[64], %ln_b: f32[64], %wqkv: f32[64, 192], %wo: f32[64, 64]) -> (f32[2, s0, 64]) {\n"
    "  %h, %mean, %rstd = layer_norm(%x, %ln_w, %ln_b) {eps = 1e-05, normalized_ndim = 1} : (f32[2, s0, 64], f32[2, s0, 1], f32[2, s0, 1])\n"
    "  %h2 = reshape(%h) {shape = [s0*2, 64]} : f32[s0*2, 64]\n"
    "  %qkv = mm(%h2, %wqkv) : f32[s0*2, 192]\n"
    "  %qkv3 = reshape(%qkv) {shape = [2, s0, 3, 4, 16]} : f32[2, s0, 3, 4, 16]\n"
    "  %qkvp = permute(%qkv3) {dims = [2, 0, 3, 1, 4]} : f32[3, 2, 4, s0, 16]\n"
    "  %q = select(%qkvp) {dim = 0, index = 0} : f32[2, 4, s0, 16]\n"
    "  %k = select(%qkvp) {dim = 0, index = 1} : f32[2, 4, s0, 16]\n"
    "  %v = select(%qkvp) {dim = 0, index = 2} : f32[2, 4, s0, 16]\n"
    "  %att = sdpa(%q, %k, %v) {dropout_p = 0.0, is_causal = true, scale = 0.25} : f32[2, 4, s0, 16]\n"
    "  %attp = permute(%att) {dims = [0, 2, 1, 3]} : f32[2, s0, 4, 16]\n"
    "  %attc = contiguous(%attp) : f32[2, s0, 4, 16]\n"
    "  %att2 = reshape(%attc) {shape = [2*s0, 64]} : f32[2*s0, 64]\n"
    "  %o = mm(%att2, %wo) : f32[2*s0, 64]\n"
    "  %o3 = reshape(%o) {shape = [2, s0, 64]} : f32[2, s0, 64]\n"
    "  %y = add(%x, %o3) : f32[2, s0, 64]\n"
    "  %yn, %yr = rms_norm(%y, %ln_w) {eps = 1e-06, normalized_ndim = 1} : (f32[2, s0, 64], f32[2, s0, 1])\n"
    "  return %yn\n"
    "}\n";

/* Dynamic shapes: products, floor division and modulo of symbols, reshape with -1, slices to the end. */
static const char k_dyn[] =
    "axir 1\n"
    "\n"
    "func @dyn(%x: i64[s0, s1], %emb: f32[1000, 12], %t: f32[s0, 12, 4]) -> (f32[s0*s1, 12], f32[s0, (s1+1)//2], f32[s0*12, 4], f32[s0, s1-1]) {\n"
    "  %e = embedding(%emb, %x) : f32[s0, s1, 12]\n"
    "  %f = reshape(%e) {shape = [-1, 12]} : f32[s0*s1, 12]\n"
    "  %x2 = cast(%x) : f32[s0, s1]\n"
    "  %s = slice(%x2) {dim = 1, end = 9223372036854775807, start = 0, step = 2} : f32[s0, (s1+1)//2]\n"
    "  %r = reshape(%t) {shape = [s0*12, 4]} : f32[s0*12, 4]\n"
    "  %r2 = reshape(%r) {shape = [12*s0, 4]} : f32[12*s0, 4]\n"
    "  %s2 = slice(%x2) {dim = 1, end = -1, start = 0, step = 1} : f32[s0, s1-1]\n"
    "  %s3 = slice(%x2) {dim = 1, end = 9223372036854775807, start = 1, step = 1} : f32[s0, s1-1]\n"
    "  %z = add(%s2, %s3) : f32[s0, s1-1]\n"
    "  %w = expand(%z) {shape = [s0, s1-1]} : f32[s0, s1-1]\n"
    "  %q = reshape(%w) {shape = [(s0+1)*(s1-1)-(s1-1)]} : f32[s0*s1-s0]\n"
    "  %back = reshape(%q) {shape = [s0, -1]} : f32[s0, s1-1]\n"
    "  %m = const() {value = 0} : i64[s0, s1%4+(s1-s1%4)]\n"
    "  return %f, %s, %r2, %back\n"
    "}\n";

/* Kernel functions called with fused before they are defined, with their own symbol names. */
static const char k_fused[] =
    "axir 1\n"
    "\n"
    "func @main(%x: f32[s0, 64], %b: f32[64]) -> (f32[s0, 64], f32[s0]) {\n"
    "  %0 = fused @fused_0(%x, %b) : f32[s0, 64]\n"
    "  %1, %2 = fused @fused_1(%0) : (f32[s0, 64], f32[s0])\n"
    "  return %1, %2\n"
    "}\n"
    "\n"
    "kernel @fused_0(%a: f32[n, 64], %b: f32[64]) -> (f32[n, 64]) {\n"
    "  %0 = add(%a, %b) : f32[n, 64]\n"
    "  %1 = gelu(%0) {approximate = \"none\"} : f32[n, 64]\n"
    "  return %1\n"
    "}\n"
    "\n"
    "kernel @fused_1(%a: f32[rows, 64]) -> (f32[rows, 64], f32[rows]) {\n"
    "  %0 = exp(%a) : f32[rows, 64]\n"
    "  %1 = sum(%0) {dims = [1], keepdim = false} : f32[rows]\n"
    "  return %0, %1\n"
    "}\n";

/* Every op at least once, and floats that need care: nan, -inf, 1e+300, the shortest round trip of 0.1+0.2, the smallest denormal. */
static const char k_all[] =
    "axir 1\n"
    "\n"
    "func @all(%a: f32[4, 8], %b: f32[4, 8], %i: i64[4, 8], %c: bool[4, 8], %m: f32[8, 16], %bt: f32[2, 4, 8], %bt2: f32[2, 8, 3], %idx: i64[3], %w: f32[8], %x3: f32[2, 4, 8], %mk: bool[4, 4]) -> (f32[4, 8], f32[4, 16]) {\n"
    "  %k0 = const() {value = 1.5} : f32[]\n"
    "  %k1 = const() {value = 3} : i64[4, 8]\n"
    "  %k2 = const() {value = true} : bool[]\n"
    "  %k3 = const() {value = nan} : f64[]\n"
    "  %k4 = const() {value = -inf} : f32[2]\n"
    "  %k5 = const() {value = 1e+300} : f64[]\n"
    "  %k6 = const() {value = 0.30000000000000004} : f64[]\n"
    "  %k7 = const() {value = 5e-324} : f64[]\n"
    "  %k8 = const() {value = -2.5e-07} : f32[]\n"
    "  %io = iota() {start = -4, step = 2} : i64[5]\n"
    "  %u0 = neg(%a) : f32[4, 8]\n"
    "  %u1 = abs(%a) : f32[4, 8]\n"
    "  %u2 = exp(%a) : f32[4, 8]\n"
    "  %u3 = exp2(%a) : f32[4, 8]\n"
    "  %u4 = expm1(%a) : f32[4, 8]\n"
    "  %u5 = log(%a) : f32[4, 8]\n"
    "  %u6 = log2(%a) : f32[4, 8]\n"
    "  %u7 = log1p(%a) : f32[4, 8]\n"
    "  %u8 = sqrt(%a) : f32[4, 8]\n"
    "  %u9 = rsqrt(%a) : f32[4, 8]\n"
    "  %u10 = sin(%a) : f32[4, 8]\n"
    "  %u11 = cos(%a) : f32[4, 8]\n"
    "  %u12 = tan(%a) : f32[4, 8]\n"
    "  %u13 = tanh(%a) : f32[4, 8]\n"
    "  %u14 = sigmoid(%a) : f32[4, 8]\n"
    "  %u15 = relu(%a) : f32[4, 8]\n"
    "  %u16 = silu(%a) : f32[4, 8]\n"
    "  %u17 = erf(%a) : f32[4, 8]\n"
    "  %u18 = reciprocal(%a) : f32[4, 8]\n"
    "  %u19 = floor(%a) : f32[4, 8]\n"
    "  %u20 = ceil(%a) : f32[4, 8]\n"
    "  %u21 = round(%a) : f32[4, 8]\n"
    "  %u22 = trunc(%a) : f32[4, 8]\n"
    "  %u23 = sign(%a) : f32[4, 8]\n"
    "  %u24 = logical_not(%c) : bool[4, 8]\n"
    "  %u25 = bitwise_not(%i) : i64[4, 8]\n"
    "  %u26 = isnan(%a) : bool[4, 8]\n"
    "  %u27 = gelu(%a) {approximate = \"none\"} : f32[4, 8]\n"
    "  %u28 = cast(%i) : f32[4, 8]\n"
    "  %b0 = add(%a, %b) : f32[4, 8]\n"
    "  %b1 = sub(%a, %k0) : f32[4, 8]\n"
    "  %b2 = mul(%k0, %b) : f32[4, 8]\n"
    "  %b3 = div(%a, %b) : f32[4, 8]\n"
    "  %b4 = pow(%a, %b) : f32[4, 8]\n"
    "  %b5 = maximum(%a, %b) : f32[4, 8]\n"
    "  %b6 = minimum(%a, %b) : f32[4, 8]\n"
    "  %b7 = remainder(%a, %b) : f32[4, 8]\n"
    "  %b8 = fmod(%a, %b) : f32[4, 8]\n"
    "  %b9 = atan2(%a, %b) : f32[4, 8]\n"
    "  %b10 = div(%i, %k1) {rounding_mode = \"floor\"} : i64[4, 8]\n"
    "  %b11 = bitwise_and(%i, %k1) : i64[4, 8]\n"
    "  %b12 = bitwise_or(%i, %k1) : i64[4, 8]\n"
    "  %b13 = bitwise_xor(%i, %k1) : i64[4, 8]\n"
    "  %b14 = logical_and(%c, %k2) : bool[4, 8]\n"
    "  %b15 = logical_or(%c, %c) : bool[4, 8]\n"
    "  %c0 = eq(%a, %b) : bool[4, 8]\n"
    "  %c1 = ne(%a, %b) : bool[4, 8]\n"
    "  %c2 = lt(%a, %b) : bool[4, 8]\n"
    "  %c3 = le(%a, %b) : bool[4, 8]\n"
    "  %c4 = gt(%a, %b) : bool[4, 8]\n"
    "  %c5 = ge(%i, %k1) : bool[4, 8]\n"
    "  %wh = where(%c, %a, %k0) : f32[4, 8]\n"
    "  %r0 = sum(%a) {dims = [1], keepdim = false} : f32[4]\n"
    "  %r1 = prod(%a) {dims = [], keepdim = false} : f32[]\n"
    "  %r2 = mean(%a) {dims = [-1], keepdim = true} : f32[4, 1]\n"
    "  %r3 = amax(%a) {dims = [0], keepdim = false} : f32[8]\n"
    "  %r4 = amin(%a) {dims = [0, 1], keepdim = true} : f32[1, 1]\n"
    "  %r5 = var(%a) {correction = 1, dims = [1], keepdim = false} : f32[4]\n"
    "  %r6 = argmax(%a) {dim = 1, keepdim = false} : i64[4]\n"
    "  %r7 = argmin(%a) {dim = -1, keepdim = true} : i64[4, 1]\n"
    "  %v0 = reshape(%a) {shape = [2, -1]} : f32[2, 16]\n"
    "  %v1 = permute(%a) {dims = [1, 0]} : f32[8, 4]\n"
    "  %v2 = expand(%r2) {shape = [3, -1, 8]} : f32[3, 4, 8]\n"
    "  %v3 = slice(%a) {dim = 1, end = -1, start = 2, step = 2} : f32[4, 3]\n"
    "  %v4 = select(%a) {dim = 0, index = -1} : f32[8]\n"
    "  %v5 = squeeze(%r2) {dims = [1]} : f32[4]\n"
    "  %v6 = unsqueeze(%a) {dim = 0} : f32[1, 4, 8]\n"
    "  %cp = contiguous(%v1) : f32[8, 4]\n"
    "  %ct = cat(%a, %b, %u0) {dim = 0} : f32[12, 8]\n"
    "  %mm = mm(%a, %m) : f32[4, 16]\n"
    "  %bm = bmm(%bt, %bt2) : f32[2, 4, 3]\n"
    "  %am = addmm(%mm, %a, %m) {alpha = 2.0, beta = 0.1} : f32[4, 16]\n"
    "  %sm = softmax(%a) {dim = 1} : f32[4, 8]\n"
    "  %lsm = log_softmax(%a) {dim = -1} : f32[4, 8]\n"
    "  %ln, %lnm, %lnr = layer_norm(%a, %w, %w) {eps = 1e-05, normalized_ndim = 1} : (f32[4, 8], f32[4, 1], f32[4, 1])\n"
    "  %rn, %rnr = rms_norm(%a) {eps = 1e-06, normalized_ndim = 2} : (f32[4, 8], f32[1, 1])\n"
    "  %em = embedding(%m, %idx) : f32[3, 16]\n"
    "  %ga = gather(%a, %i) {dim = 1} : f32[4, 8]\n"
    "  %is = index_select(%a, %idx) {dim = 1} : f32[4, 3]\n"
    "  %sd = sdpa(%x3, %x3, %x3, %mk) {dropout_p = 0.0, is_causal = false} : f32[2, 4, 8]\n"
    "  %sd2 = sdpa(%x3, %x3, %x3) {dropout_p = 0.125, is_causal = true, scale = 0.35355339059327373} : f32[2, 4, 8]\n"
    "  %fu = fused @k(%a, %b) : f32[4, 8]\n"
    "  return %fu, %am\n"
    "}\n"
    "\n"
    "kernel @k(%p: f32[4, 8], %q: f32[4, 8]) -> (f32[4, 8]) {\n"
    "  %0 = mul(%p, %q) : f32[4, 8]\n"
    "  return %0\n"
    "}\n";

/* Parses text, prints it, and checks the print equals the text and that a second parse/print is stable. */
static void check_round_trip(const char *text) {
    axon_axir_module_t *m = NULL;
    axon_axir_diag_t d;
    axon_status_t s = axon_axir_parse(text, strlen(text), &m, &d);
    if (s != AXON_OK) {
        char buf[700];
        fprintf(stderr, "parse failed: %s\n", axon_axir_diag_format(&d, buf, sizeof buf));
    }
    REQUIRE(s == AXON_OK && m != NULL);
    char *out = NULL;
    size_t len = 0;
    CHECK_OK(axon_axir_print(m, &out, &len));
    REQUIRE(out != NULL);
    CHECK_EQ_I64(len, strlen(out));
    if (strcmp(out, text) != 0) {
        size_t i = 0;
        while (out[i] && out[i] == text[i]) i++;
        fprintf(stderr, "print differs from the input at byte %zu:\n--- printed from there:\n%.200s\n--- input:\n%.200s\n",
                i, out + i, text + i);
        CHECK(0);
    }
    axon_axir_module_t *m2 = NULL;
    CHECK_OK(axon_axir_parse(out, len, &m2, &d));
    char *out2 = NULL;
    if (m2) CHECK_OK(axon_axir_print(m2, &out2, NULL));
    CHECK(out2 != NULL && strcmp(out, out2) == 0);
    free(out);
    free(out2);
    axon_axir_module_destroy(m);
    axon_axir_module_destroy(m2);
}

static void test_mlp_prints_back_byte_for_byte(void) { check_round_trip(k_mlp); }
static void test_transformer_block_prints_back_byte_for_byte(void) { check_round_trip(k_block); }
static void test_dynamic_shapes_print_back_byte_for_byte(void) { check_round_trip(k_dyn); }
static void test_kernels_and_fused_calls_print_back_byte_for_byte(void) { check_round_trip(k_fused); }
static void test_every_op_prints_back_byte_for_byte(void) { check_round_trip(k_all); }

static void test_every_op_appears_in_the_every_op_module(void) {
    for (int op = 1; op < AXON_AXIR_OP_COUNT; op++) {
        char pat[64];
        snprintf(pat, sizeof pat, " = %s", axon_axir_op_name((axon_axir_op_t)op));
        const char *p = k_all;
        int found = 0;
        while ((p = strstr(p, pat)) != NULL) {
            char c = p[strlen(pat)];
            if (c == '(' || c == ' ') found = 1;
            p++;
        }
        if (!found) fprintf(stderr, "op %s is missing from k_all\n", axon_axir_op_name((axon_axir_op_t)op));
        CHECK(found);
    }
}

static void test_free_form_text_prints_canonically(void) {
    const char *in =
        "axir 1 func @f( %x : f32[ s0 ,(4) ] ,%y:f32[4]) -> ( f32[s0,4] ) {   # trailing comment\n"
        "  %z=add( %x,%y ):f32[ s0 , 2*2 ]\n"
        "  %w = softmax(%z) {dim=-1}:f32[s0,4]\n"
        "  %e = reshape(%w) {shape=[ s0 , 4 ]} : f32[s0,4]\n"
        "return %e}\n";
    const char *want =
        "axir 1\n"
        "\n"
        "func @f(%x: f32[s0, 4], %y: f32[4]) -> (f32[s0, 4]) {\n"
        "  %z = add(%x, %y) : f32[s0, 4]\n"
        "  %w = softmax(%z) {dim = -1} : f32[s0, 4]\n"
        "  %e = reshape(%w) {shape = [s0, 4]} : f32[s0, 4]\n"
        "  return %e\n"
        "}\n";
    axon_axir_module_t *m = NULL;
    axon_axir_diag_t d;
    CHECK_OK(axon_axir_parse(in, strlen(in), &m, &d));
    REQUIRE(m != NULL);
    char *out = NULL;
    CHECK_OK(axon_axir_print(m, &out, NULL));
    if (out && strcmp(out, want) != 0) fprintf(stderr, "got:\n%s\nwant:\n%s\n", out, want);
    CHECK(out && strcmp(out, want) == 0);
    free(out);
    axon_axir_module_destroy(m);
}

static void test_integer_given_for_a_float_attribute_reads_as_float(void) {
    const char *in =
        "axir 1\n\nfunc @f(%x: f32[4, 4]) -> (f32[4, 4]) {\n"
        "  %0 = addmm(%x, %x, %x) {alpha = 2, beta = -1} : f32[4, 4]\n  return %0\n}\n";
    axon_axir_module_t *m = NULL;
    axon_axir_diag_t d;
    CHECK_OK(axon_axir_parse(in, strlen(in), &m, &d));
    REQUIRE(m != NULL);
    char *out = NULL;
    CHECK_OK(axon_axir_print(m, &out, NULL));
    CHECK(out && strstr(out, "{alpha = 2.0, beta = -1.0}") != NULL);
    free(out);
    axon_axir_module_destroy(m);
}

/* ---- parse errors: line, column and message ---- */

static void check_parse_error(const char *text, int line, int col, const char *message) {
    axon_axir_module_t *m = (axon_axir_module_t *)&m;   /* must come back NULL */
    axon_axir_diag_t d;
    CHECK_STATUS(axon_axir_parse(text, strlen(text), &m, &d), AXON_ERROR_INVALID_ARG);
    CHECK(m == NULL);
    if (d.line != line || d.col != col || strcmp(d.message, message) != 0) {
        fprintf(stderr, "got  %d:%d: %s\nwant %d:%d: %s\n", d.line, d.col, d.message, line, col, message);
        CHECK(0);
    }
    char buf[700], want[700];
    snprintf(want, sizeof want, "axir:%d:%d: %s", line, col, message);
    CHECK(strcmp(axon_axir_diag_format(&d, buf, sizeof buf), want) == 0);
    CHECK_MSG(message);
}

#define HDR "axir 1\n\nfunc @f(%x: f32[4]) -> (f32[4]) {\n"

static void test_wrong_version_names_the_supported_one(void) {
    check_parse_error("axir 2\n", 1, 6, "AXIR version 2 is not supported: this build reads version 1");
    check_parse_error("func @f() -> () {\n  return\n}\n", 1, 1, "expected 'axir 1' (the version line), got 'func'");
    check_parse_error("", 1, 1, "expected 'axir 1' (the version line), got end of input");
}

static void test_unknown_op_is_located_at_the_op(void) {
    check_parse_error(HDR "  %0 = frobnicate(%x) : f32[4]\n  return %0\n}\n", 4, 8, "unknown op 'frobnicate'");
}

static void test_use_before_definition_is_located_at_the_use(void) {
    check_parse_error(HDR "  %0 = add(%x, %1) : f32[4]\n  %1 = neg(%x) : f32[4]\n  return %0\n}\n", 4, 16,
                      "%1 is not defined before this use");
    check_parse_error(HDR "  %0 = neg(%x) : f32[4]\n  return %9\n}\n", 5, 10, "%9 is not defined before this use");
}

static void test_redefinition_is_located_at_the_second_definition(void) {
    check_parse_error(HDR "  %x = neg(%x) : f32[4]\n  return %x\n}\n", 4, 3, "%x is defined twice");
    check_parse_error("axir 1\nfunc @f(%a: f32[], %a: f32[]) -> () {\n  return\n}\n", 2, 20, "%a is defined twice");
    check_parse_error("axir 1\nfunc @f() -> () {\n  return\n}\nfunc @f() -> () {\n  return\n}\n", 5, 6,
                      "function @f is defined twice");
}

static void test_syntax_errors_name_what_was_expected(void) {
    check_parse_error(HDR "  %0 = neg(%x) f32[4]\n  return %0\n}\n", 4, 16, "expected ':' and the result type, got 'f32'");
    check_parse_error(HDR "  %0 = neg(%x) : f33[4]\n  return %0\n}\n", 4, 18,
                      "expected a dtype (f32, bf16, i64, bool, ...), got 'f33'");
    check_parse_error(HDR "  %0 = neg(%x) : f32[4\n  return %0\n}\n", 5, 3, "expected ',' or ']', got 'return'");
    check_parse_error(HDR "  return %x\n", 5, 1, "expected ',' or '}', got end of input");
    check_parse_error(HDR "  %0 = neg(%x) : f32[4]\n", 5, 1,
                      "expected a statement (%name = op(...) : type) or 'return', got end of input");
    check_parse_error(HDR "  %0 = neg(%x) : f32[4] $\n", 4, 25, "unexpected character '$'");
    check_parse_error(HDR "  %0 = neg(%x) : f32[4/2]\n", 4, 23, "'/' must be '//' (floor division)");
}

static void test_result_count_must_match_types(void) {
    check_parse_error(HDR "  %0, %1 = neg(%x) : f32[4]\n  return %0\n}\n", 4, 22,
                      "neg: 2 value(s) defined but 1 result type(s) given");
    check_parse_error(HDR "  return %x, %x\n}\n", 4, 3, "@f: return gives 2 value(s), the signature declares 1");
}

static void test_limits_are_errors_not_crashes(void) {
    check_parse_error("axir 1\nfunc @f(%x: f32[1, 1, 1, 1, 1, 1, 1, 1, 1]) -> () {\n  return\n}\n", 2, 41,
                      "a type has more than 8 entries");
    check_parse_error("axir 1\nfunc @f(%x: f32[99999999999999999999]) -> () {\n  return\n}\n", 2, 17,
                      "integer does not fit in int64");
    check_parse_error("axir 1\nfunc @f(%x: f32[-3]) -> () {\n  return\n}\n", 2, 17, "dimension -3 is negative");
    check_parse_error("axir 1\nfunc @f(%x: f32[1//0]) -> () {\n  return\n}\n", 2, 17,
                      "dimension cannot be evaluated: sym_eval: division by zero (1 // 0)");
    /* deeply nested parentheses stop at the limit */
    char deep[400];
    int k = snprintf(deep, sizeof deep, "axir 1\nfunc @f(%%x: f32[");
    for (int i = 0; i < 40; i++) deep[k++] = '(';
    deep[k] = '\0';
    check_parse_error(deep, 2, 17 + 32, "dimension nests parentheses deeper than 32");
    check_parse_error("axir 1\nfunc @f(%x: f32[\"abc]) -> () {\n", 2, 17, "unterminated string");
}

static void test_text_need_not_end_in_nul(void) {
    /* the parser must stop at len: the bytes after it would make the text invalid */
    const char *text = "axir 1\n\nfunc @f(%x: f32[4]) -> (f32[4]) {\n  return %x\n}\nGARBAGE";
    axon_axir_module_t *m = NULL;
    axon_axir_diag_t d;
    CHECK_OK(axon_axir_parse(text, strlen(text) - 7, &m, &d));
    axon_axir_module_destroy(m);
    CHECK_STATUS(axon_axir_parse(text, 10, &m, &d), AXON_ERROR_INVALID_ARG);
    CHECK(m == NULL);
    CHECK_OK(axon_axir_parse("axir 1", 6, &m, &d));
    CHECK(m != NULL && axon_axir_module_num_funcs(m) == 0);
    axon_axir_module_destroy(m);
}

int main(void) {
    RUN(test_mlp_prints_back_byte_for_byte);
    RUN(test_transformer_block_prints_back_byte_for_byte);
    RUN(test_dynamic_shapes_print_back_byte_for_byte);
    RUN(test_kernels_and_fused_calls_print_back_byte_for_byte);
    RUN(test_every_op_prints_back_byte_for_byte);
    RUN(test_every_op_appears_in_the_every_op_module);
    RUN(test_free_form_text_prints_canonically);
    RUN(test_integer_given_for_a_float_attribute_reads_as_float);
    RUN(test_wrong_version_names_the_supported_one);
    RUN(test_unknown_op_is_located_at_the_op);
    RUN(test_use_before_definition_is_located_at_the_use);
    RUN(test_redefinition_is_located_at_the_second_definition);
    RUN(test_syntax_errors_name_what_was_expected);
    RUN(test_result_count_must_match_types);
    RUN(test_limits_are_errors_not_crashes);
    RUN(test_text_need_not_end_in_nul);
    return check_report();
}
