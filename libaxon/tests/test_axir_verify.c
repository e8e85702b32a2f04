/* The AXIR verifier: one test per class of error, each checking the exact line:col (the node's op name, or the
 * function keyword for function-level problems) and message text; plus modules that must pass. */
#include <stdio.h>
#include <string.h>

#include "axon/axir.h"
#include "check.h"

static void check_error(const char *text, int line, int col, const char *message) {
    axon_axir_module_t *m = NULL;
    axon_axir_diag_t d;
    CHECK_STATUS(axon_axir_parse(text, strlen(text), &m, &d), AXON_ERROR_INVALID_ARG);
    CHECK(m == NULL);
    if (d.line != line || d.col != col || strcmp(d.message, message) != 0) {
        fprintf(stderr, "got  %d:%d: %s\nwant %d:%d: %s\n", d.line, d.col, d.message, line, col, message);
        CHECK(0);
    }
    axon_axir_module_destroy(m);
}

static void check_valid(const char *text) {
    axon_axir_module_t *m = NULL;
    axon_axir_diag_t d;
    axon_status_t s = axon_axir_parse(text, strlen(text), &m, &d);
    if (s != AXON_OK) {
        char buf[700];
        fprintf(stderr, "unexpected error: %s\n", axon_axir_diag_format(&d, buf, sizeof buf));
    }
    CHECK(s == AXON_OK);
    axon_axir_module_destroy(m);
}

/* A function of one statement over parameters %a: f32[4, 8], %b: f32[8], %i: i64[4, 8], %c: bool[4, 8] that
 * returns nothing: the statement is line 4 and its op starts at column 8 when its result is %r. */
#define FN(stmt)                                                                                  \
    "axir 1\n\nfunc @f(%a: f32[4, 8], %b: f32[8], %i: i64[4, 8], %c: bool[4, 8]) -> () {\n" stmt \
    "\n  return\n}\n"

static void test_operand_dtype_mismatch_names_operand_and_dtypes(void) {
    check_error(FN("  %r = add(%a, %i) : f32[4, 8]"), 4, 8, "add: operand 2 has dtype i64, expected f32");
    check_error(FN("  %r = where(%c, %a, %i) : f32[4, 8]"), 4, 8, "where: operand 3 has dtype i64, expected f32");
    check_error(FN("  %r = cat(%a, %i) {dim = 0} : f32[8, 8]"), 4, 8, "cat: operand 2 has dtype i64, expected f32");
}

static void test_floating_only_ops_reject_integers(void) {
    check_error(FN("  %r = exp(%i) : i64[4, 8]"), 4, 8,
                "exp: operand 1 has dtype i64, expected a floating dtype (f16, bf16, f32, f64)");
    check_error(FN("  %r = softmax(%i) {dim = 1} : i64[4, 8]"), 4, 8,
                "softmax: operand 1 has dtype i64, expected a floating dtype (f16, bf16, f32, f64)");
    check_error(FN("  %r = div(%i, %i) : i64[4, 8]"), 4, 8,
                "div: true division of i64 needs a floating dtype (cast first, or give rounding_mode)");
}

static void test_storage_dtypes_are_refused(void) {
    check_error("axir 1\n\nfunc @f(%a: u32[4]) -> () {\n  return\n}\n", 3, 1,
                "%a has dtype u32, a storage dtype that AXIR programs do not take");
    check_error(FN("  %r = cast(%a) : u64[4, 8]"), 4, 8,
                "%r has dtype u64, a storage dtype that AXIR programs do not take");
}

static void test_bitwise_ops_reject_floats(void) {
    check_error(FN("  %r = bitwise_and(%a, %a) : f32[4, 8]"), 4, 8,
                "bitwise_and: operand 1 has dtype f32, expected an integer or bool dtype");
}

static void test_where_condition_must_be_bool(void) {
    check_error(FN("  %r = where(%a, %a, %a) : f32[4, 8]"), 4, 8,
                "where: operand 1 (the condition) has dtype f32, expected bool");
}

static void test_shapes_that_do_not_broadcast(void) {
    check_error(FN("  %t = permute(%a) {dims = [1, 0]} : f32[8, 4]\n  %r = add(%a, %t) : f32[4, 8]"), 5, 8,
                "add: shapes f32[4, 8] and f32[8, 4] do not broadcast (dimension 2 from the right)");
    check_error("axir 1\nfunc @f(%x: f32[s0], %y: f32[s1]) -> () {\n  %r = mul(%x, %y) : f32[s0]\n  return\n}\n", 3,
                8, "mul: shapes f32[s0] and f32[s1] do not broadcast (dimension 1 from the right)");
}

static void test_declared_result_type_must_match(void) {
    check_error(FN("  %r = add(%a, %b) : f32[4, 4]"), 4, 8, "add: result 1 is declared f32[4, 4] but the op gives f32[4, 8]");
    check_error(FN("  %r = eq(%a, %b) : f32[4, 8]"), 4, 8, "eq: result 1 is declared f32[4, 8] but the op gives bool[4, 8]");
    check_error(FN("  %r = sum(%a) {dims = [1], keepdim = true} : f32[4]"), 4, 8,
                "sum: result 1 is declared f32[4] but the op gives f32[4, 1]");
    check_error("axir 1\nfunc @f(%x: f32[s0, 4]) -> () {\n  %r = reshape(%x) {shape = [s0*4]} : f32[s0*3]\n"
                "  return\n}\n",
                3, 8, "reshape: result 1 is declared f32[s0*3] but the op gives f32[s0*4]");
}

static void test_unknown_missing_and_mistyped_attributes(void) {
    check_error(FN("  %r = neg(%a) {alpha = 1.0} : f32[4, 8]"), 4, 8, "neg: unknown attribute alpha");
    check_error(FN("  %r = gelu(%a) : f32[4, 8]"), 4, 8, "gelu: missing attribute approximate");
    check_error(FN("  %r = softmax(%a) {dim = 1.5} : f32[4, 8]"), 4, 8,
                "softmax: attribute dim must be an integer, got a float");
    check_error(FN("  %r = const() {value = \"x\"} : f32[]"), 4, 8,
                "const: attribute value must be an integer or a float or a bool, got a string");
    check_error(FN("  %r = gelu(%a) {approximate = \"a\\\"b\"} : f32[4, 8]"), 4, 8,
                "gelu: attribute approximate is \"a\"b\", expected one of none|tanh");
    check_error(FN("  %r = sum(%a) {dims = [1], dims = [0], keepdim = true} : f32[4, 1]"), 4, 29,
                "sum: attribute dims is given twice");
}

static void test_operand_and_result_counts(void) {
    check_error(FN("  %r = add(%a) : f32[4, 8]"), 4, 8, "add: takes 2 operand(s), got 1");
    check_error(FN("  %r = layer_norm(%a, %b, %b, %b) {eps = 1e-05, normalized_ndim = 1} : f32[4, 8]"), 4, 8,
                "layer_norm: takes 1 to 3 operands, got 4");
    check_error(FN("  %r = layer_norm(%a) {eps = 1e-05, normalized_ndim = 1} : f32[4, 8]"), 4, 8,
                "layer_norm: defines 1 result(s), expected 3");
    check_error(FN("  %r = cat() {dim = 0} : f32[4, 8]"), 4, 8, "cat: takes at least 1 operand(s), got 0");
}

static void test_symbols_must_be_bound_by_a_parameter(void) {
    check_error("axir 1\n\nfunc @f(%x: f32[s0*2]) -> () {\n  return\n}\n", 3, 1,
                "@f: symbol s0 is not bound: no parameter has a dimension that is s0 alone");
    check_error("axir 1\n\nfunc @f(%x: f32[s0]) -> () {\n  %r = reshape(%x) {shape = [s1]} : f32[s1]\n  return\n}\n", 3, 1,
                "@f: symbol s1 is not bound: no parameter has a dimension that is s1 alone");
}

static void test_return_must_match_the_signature(void) {
    check_error("axir 1\n\nkernel @f(%x: f32[4]) -> (f32[5]) {\n  return %x\n}\n", 3, 1,
                "@f: returns %x of type f32[4] where the signature declares f32[5]");
}

static void test_fused_calls_are_checked_against_the_kernel(void) {
    const char *kernel = "\nkernel @k(%p: f32[n, 8], %q: f32[8]) -> (f32[n, 8]) {\n  %0 = add(%p, %q) : f32[n, 8]\n"
                         "  return %0\n}\n";
    char text[1024];
    snprintf(text, sizeof text, "%s%s", FN("  %r = fused @nope(%a, %b) : f32[4, 8]"), kernel);
    check_error(text, 4, 8, "fused: no function @nope in the module");
    snprintf(text, sizeof text, "%s%s", FN("  %r = fused @f(%a, %b) : f32[4, 8]"), kernel);
    check_error(text, 4, 8, "fused: @f is a func, not a kernel");
    snprintf(text, sizeof text, "%s%s", FN("  %r = fused @k(%a, %a) : f32[4, 8]"), kernel);
    check_error(text, 4, 8, "fused @k: operand 2 is f32[4, 8], the kernel's parameter %q is f32[8]");
    snprintf(text, sizeof text, "%s%s", FN("  %r = fused @k(%a) : f32[4, 8]"), kernel);
    check_error(text, 4, 8, "fused @k: takes 2 operand(s) (the kernel's parameters), got 1");
    snprintf(text, sizeof text, "%s%s", FN("  %r = fused @k(%a, %b) : f32[5, 8]"), kernel);
    check_error(text, 4, 8, "fused: result 1 is declared f32[5, 8] but the op gives f32[4, 8]");
    check_error("axir 1\nkernel @k(%x: f32[]) -> () {\n  %r = fused @k(%x) : f32[]\n  return\n}\n", 3, 8,
                "fused: kernel @k may not call kernels");
    check_error(FN("  %r = neg @k(%a) : f32[4, 8]"), 4, 12, "neg: only fused names a callee");
}

static void test_dims_out_of_range_and_bad_view_arguments(void) {
    check_error(FN("  %r = sum(%a) {dims = [2], keepdim = false} : f32[4]"), 4, 8,
                "sum: dims entry 2 is out of range for rank 2");
    check_error(FN("  %r = amax(%a) {dims = [1, -1], keepdim = false} : f32[4]"), 4, 8,
                "amax: dims lists dimension 1 twice");
    check_error(FN("  %r = permute(%a) {dims = [0, 0]} : f32[4, 4]"), 4, 8,
                "permute: dims is not a permutation: 0 appears twice");
    check_error(FN("  %r = reshape(%a) {shape = [5, 5]} : f32[5, 5]"), 4, 8,
                "reshape: cannot reshape f32[4, 8] into f32[5, 5]: the element counts differ");
    check_error(FN("  %r = expand(%a) {shape = [4, 9]} : f32[4, 9]"), 4, 8,
                "expand: cannot expand f32[4, 8]: dimension 1 is not 1 and differs from shape entry 1");
    check_error(FN("  %r = select(%a) {dim = 1, index = 8} : f32[4]"), 4, 8,
                "select: index 8 is out of range for dimension 1 of size 8");
    check_error(FN("  %r = slice(%a) {dim = 0, end = 4, start = 0, step = 0} : f32[4, 8]"), 4, 8,
                "slice: step 0 must be positive");
    check_error(FN("  %r = unsqueeze(%a) {dim = 3} : f32[4, 8, 1]"), 4, 8, "unsqueeze: dim 3 is out of range for rank 2");
}

static void test_library_op_shapes(void) {
    check_error(FN("  %r = mm(%a, %a) : f32[4, 8]"), 4, 8,
                "mm: inner dimensions differ: operand 1 is f32[4, 8], operand 2 is f32[4, 8]");
    check_error(FN("  %r = cat(%a, %b) {dim = 0} : f32[8, 8]"), 4, 8, "cat: operand 2 has rank 1, expected 2");
    check_error(FN("  %r, %m, %s = layer_norm(%a, %a) {eps = 1e-05, normalized_ndim = 1} : (f32[4, 8], f32[4, 1], f32[4, 1])"),
                4, 16, "layer_norm: operand 2 is f32[4, 8]; it must be the last 1 dims of f32[4, 8]");
    check_error(FN("  %r = embedding(%a, %a) : f32[4, 8, 8]"), 4, 8,
                "embedding: operand 2 has dtype f32, expected an integer dtype");
    check_error("axir 1\nfunc @f(%q: f32[2, 4, 8], %m: bool[3, 4]) -> () {\n"
                "  %r = sdpa(%q, %q, %q, %m) {dropout_p = 0.0, is_causal = false} : f32[2, 4, 8]\n  return\n}\n",
                3, 8, "sdpa: operand 4 (mask) bool[3, 4] does not broadcast to the scores f32[2, 4, 4]");
    check_error(FN("  %r = const() {value = 1.5} : i64[4]"), 4, 8,
                "const: a float value needs a floating result dtype, got i64");
}

static void test_training_library_ops(void) {
    check_error(FN("  %r, %m = dropout(%a) {draw = 0, p = 1.5} : (f32[4, 8], bool[4, 8])"), 4, 12,
                "dropout: p 1.5 is not in [0, 1]");
    check_error(FN("  %r, %m = dropout(%a) {draw = 0, p = 0.5} : (f32[4, 8], f32[4, 8])"), 4, 12,
                "dropout: result 2 is declared f32[4, 8] but the op gives bool[4, 8]");
    check_error(FN("  %r, %w = nll_loss(%a, %i) {ignore_index = -100, reduction = \"avg\"} : (f32[], f32[])"), 4, 12,
                "nll_loss: attribute reduction is \"avg\", expected one of none|mean|sum");
    check_error(FN("  %r, %w = nll_loss(%a, %i) {ignore_index = -100, reduction = \"sum\"} : (f32[], f32[])"), 4, 12,
                "nll_loss: operand 2 has rank 2, expected 1");
    check_error(FN("  %r, %w = nll_loss(%a, %b) {ignore_index = -100, reduction = \"sum\"} : (f32[], f32[])"), 4, 12,
                "nll_loss: operand 2 has dtype f32, expected i64");
    /* static batch sizes must agree; symbolic ones are the kernel's to check (often spelled differently) */
    check_error("axir 1\n\nfunc @f(%a: f32[4, 8], %t: i64[3]) -> () {\n"
                "  %r, %w = nll_loss(%a, %t) {ignore_index = -100, reduction = \"sum\"} : (f32[], f32[])\n  return\n}\n",
                4, 12,
                "nll_loss: log-probabilities and target have different batch sizes: operand 1 is f32[4, 8], operand 2 "
                "is i64[3]");
    check_valid("axir 1\n\nfunc @f(%a: f32[s0*s1, 8], %t: i64[s2], %u: f32[s0, s1]) -> () {\n"
                "  %r, %w = nll_loss(%a, %t) {ignore_index = -100, reduction = \"none\"} : (f32[s2], f32[])\n"
                "  return\n}\n");
    check_error(FN("  %x, %w, %v = layer_norm_backward(%a, %a, %b, %b) {normalized_ndim = 1} : (f32[4, 8], f32[8], "
                   "f32[8])"),
                4, 16, "layer_norm_backward: operand 3 is f32[8], expected f32[4, 1]");
    check_error(FN("  %r = embedding_backward(%a, %c) {num_weights = 3, padding_idx = -1} : f32[3, 8]"), 4, 8,
                "embedding_backward: operand 2 has dtype bool, expected an integer dtype");
    check_error(FN("  %r = softmax_backward(%b, %a) {dim = 1} : f32[4, 8]"), 4, 8,
                "softmax_backward: operand 1 is f32[8], expected f32[4, 8]");
}

/* index_copy_into writes into operand 1: only a parameter that nothing else reads may be written. */
static void test_in_place_ops_take_a_parameter_read_once(void) {
    const char *head = "axir 1\n\nfunc @f(%c: f32[2, 4], %i: i64[1], %v: f32[2, 1], %w: f32[2, 3]) -> (f32[2, 4]) {\n";
    char text[1024];
    snprintf(text, sizeof text, "%s  %%u = index_copy_into(%%c, %%i, %%v) {dim = 1} : f32[2, 4]\n  return %%u\n}\n", head);
    check_valid(text);
    snprintf(text, sizeof text, "%s  %%n = neg(%%c) : f32[2, 4]\n"
             "  %%u = index_copy_into(%%n, %%i, %%v) {dim = 1} : f32[2, 4]\n  return %%u\n}\n", head);
    check_error(text, 5, 8, "index_copy_into: operand 1 (%n) must be a parameter of @f: the op writes into it");
    snprintf(text, sizeof text, "%s  %%u = index_copy_into(%%c, %%i, %%v) {dim = 1} : f32[2, 4]\n"
             "  %%n = neg(%%c) : f32[2, 4]\n  return %%n\n}\n", head);
    check_error(text, 4, 8, "index_copy_into: parameter %c is written in place, so this must be its only use (it has "
                "2); read the result instead");
    snprintf(text, sizeof text, "%s  %%u = index_copy_into(%%c, %%i, %%v) {dim = 1} : f32[2, 4]\n  return %%c\n}\n", head);
    check_error(text, 4, 8, "index_copy_into: parameter %c is written in place, so this must be its only use (it has "
                "2); read the result instead");
    snprintf(text, sizeof text, "%s  %%u = index_copy_into(%%c, %%i, %%w) {dim = 1} : f32[2, 4]\n  return %%u\n}\n", head);
    check_error(text, 4, 8, "index_copy_into: operand 3 (source) is f32[2, 3]; it must be f32[2, 4] with the index "
                "entries at dim 1");
    snprintf(text, sizeof text, "%s  %%u = index_copy_into(%%c, %%v, %%v) {dim = 1} : f32[2, 4]\n  return %%u\n}\n", head);
    check_error(text, 4, 8, "index_copy_into: operand 2 has dtype f32, expected an integer dtype");
}

/* Attention with dropout: the forward names its draw, the backward takes the forward's seed and offset (i64[]) after
 * its other operands, the mask still at operand 7 when there is one. */
static void test_attention_dropout_operands(void) {
    const char *head = "axir 1\n\nfunc @f(%q: f32[1, 2, 3, 4], %o: f32[1, 2, 3, 4], %l: f32[1, 2, 3], %m: bool[3, 3], "
                       "%s: i64[], %t: i64[], %u: i32[]) -> (f32[1, 2, 3, 4]) {\n";
    const char *grads = "(f32[1, 2, 3, 4], f32[1, 2, 3, 4], f32[1, 2, 3, 4])";
    char text[1024];
    snprintf(text, sizeof text, "%s  %%a, %%b, %%c = sdpa_backward(%%q, %%q, %%q, %%q, %%o, %%l, %%m, %%s, %%t) "
             "{dropout_p = 0.1, is_causal = false} : %s\n  return %%a\n}\n", head, grads);
    check_valid(text);
    snprintf(text, sizeof text, "%s  %%a, %%b, %%c = sdpa_backward(%%q, %%q, %%q, %%q, %%o, %%l, %%s, %%t) "
             "{dropout_p = 0.1, is_causal = false} : %s\n  return %%a\n}\n", head, grads);
    check_valid(text);
    snprintf(text, sizeof text, "%s  %%a, %%b, %%c = sdpa_backward(%%q, %%q, %%q, %%q, %%o, %%l, %%m) "
             "{dropout_p = 0.1, is_causal = false} : %s\n  return %%a\n}\n", head, grads);
    check_error(text, 4, 16, "sdpa_backward: dropout_p 0.1: expected the forward's Philox seed and offset as the last "
                "two operands (dout, q, k, v, out, lse[, mask], seed, offset)");
    snprintf(text, sizeof text, "%s  %%a, %%b, %%c = sdpa_backward(%%q, %%q, %%q, %%q, %%o, %%l, %%s, %%u) "
             "{dropout_p = 0.1, is_causal = false} : %s\n  return %%a\n}\n", head, grads);
    check_error(text, 4, 16, "sdpa_backward: operand 8 (the Philox offset) must be i64[]");
    snprintf(text, sizeof text, "%s  %%a, %%b, %%c = sdpa_backward(%%q, %%q, %%q, %%q, %%o, %%l, %%s, %%t) "
             "{is_causal = false} : %s\n  return %%a\n}\n", head, grads);
    check_error(text, 4, 16, "sdpa_backward: 8 operands without dropout, expected 6 or 7 (dout, q, k, v, out, lse[, "
                "mask])");
    snprintf(text, sizeof text, "%s  %%a = sdpa(%%q, %%q, %%q) {dropout_p = 0.1, is_causal = true} : f32[1, 2, 3, 4]\n"
             "  return %%a\n}\n", head);
    check_error(text, 4, 8, "sdpa: dropout_p 0.1 needs a draw (INT >= 0): its place in the call's Philox stream");
    snprintf(text, sizeof text, "%s  %%s2, %%t2 = philox_state() {draw = 0} : (i64[], i32[])\n"
             "  return %%q\n}\n", head);
    check_error(text, 4, 14, "philox_state: result 2 is declared i32[] but the op gives i64[]");
}

static void test_valid_symbolic_forms_pass(void) {
    /* equal after simplification: s0+s0 vs s0*2, and 2*s0 from cat */
    check_valid("axir 1\nfunc @f(%x: f32[s0, 4]) -> (f32[s0*2, 4]) {\n"
                "  %r = cat(%x, %x) {dim = 0} : f32[s0+s0, 4]\n  return %r\n}\n");
    /* broadcasting a static 1 against a symbol, and a symbolic reshape through -1 */
    check_valid("axir 1\nfunc @f(%x: f32[s0, 1], %y: f32[1, s1]) -> (f32[s0, s1]) {\n"
                "  %r = add(%x, %y) : f32[s0, s1]\n  %q = reshape(%r) {shape = [-1]} : f32[s1*s0]\n"
                "  %z = reshape(%q) {shape = [s0, s1]} : f32[s0, s1]\n  return %z\n}\n");
    /* forms with // or % are not canonical: s0//2*2 and s0-s0%2 are equal but differ in form, so they pass */
    check_valid("axir 1\nfunc @f(%x: f32[s0//2*2], %y: f32[s0-s0%2], %s: f32[s0]) -> (f32[s0//2*2]) {\n"
                "  %r = add(%x, %y) : f32[s0-s0%2]\n  return %r\n}\n");
    /* bools order and compare */
    check_valid("axir 1\nfunc @f(%x: bool[3]) -> (bool[3]) {\n  %r = lt(%x, %x) : bool[3]\n"
                "  %m = maximum(%x, %r) : bool[3]\n  return %m\n}\n");
}

int main(void) {
    RUN(test_operand_dtype_mismatch_names_operand_and_dtypes);
    RUN(test_floating_only_ops_reject_integers);
    RUN(test_storage_dtypes_are_refused);
    RUN(test_bitwise_ops_reject_floats);
    RUN(test_where_condition_must_be_bool);
    RUN(test_shapes_that_do_not_broadcast);
    RUN(test_declared_result_type_must_match);
    RUN(test_unknown_missing_and_mistyped_attributes);
    RUN(test_operand_and_result_counts);
    RUN(test_symbols_must_be_bound_by_a_parameter);
    RUN(test_return_must_match_the_signature);
    RUN(test_fused_calls_are_checked_against_the_kernel);
    RUN(test_dims_out_of_range_and_bad_view_arguments);
    RUN(test_library_op_shapes);
    RUN(test_training_library_ops);
    RUN(test_in_place_ops_take_a_parameter_read_once);
    RUN(test_attention_dropout_operands);
    RUN(test_valid_symbolic_forms_pass);
    return check_report();
}
