/* AXIR text: parse -> print is byte-identical on canonical modules, parse errors are located at the offending token,
 * builders make modules that print and parse back, and the op table is consistent. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "axon/axir.h"
#include "check.h"

#include "test_axir_corpus.h"

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
        "  %z=add( %x,%y ) { } :f32[ s0 , 2*2 ]\n"
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
