/* AXIR builders: a function built through the API prints as the text form and parses back; node insertion, erase,
 * use replacement and use counts; the verifier catches what a builder does not check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/axir.h"
#include "check.h"

static axon_axir_type_t type2(axon_dtype_t dt, axon_axir_dim_t a, axon_axir_dim_t b) {
    axon_axir_type_t t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = 2;
    t.dims[0] = a;
    t.dims[1] = b;
    return t;
}

static axon_axir_dim_t S(int64_t v) {
    axon_axir_dim_t d = {v, NULL};
    return d;
}

static void test_built_function_prints_and_parses_back(void) {
    axon_axir_module_t *m = NULL;
    REQUIRE(axon_axir_module_create(&m) == AXON_OK);
    axon_axir_func_t *f = axon_axir_func_add(m, "main", 0);
    REQUIRE(f != NULL);
    CHECK(axon_axir_func_add(m, "main", 1) == NULL);   /* the name is taken */
    int32_t s0 = axon_axir_func_symbol(m, f, "s0");
    CHECK_EQ_I64(s0, 0);
    CHECK_EQ_I64(axon_axir_func_symbol(m, f, "s0"), 0);
    axon_axir_dim_t ds0 = {-1, axon_sym_var(m, s0)};
    axon_axir_type_t tx = type2(AXON_FLOAT32, ds0, S(8)), tw = type2(AXON_FLOAT32, S(8), S(8));
    axon_axir_value_t *x = axon_axir_func_add_param(m, f, "x", &tx);
    axon_axir_value_t *w = axon_axir_func_add_param(m, f, NULL, &tw);
    REQUIRE(x && w);
    CHECK(strcmp(w->name, "1") == 0);
    axon_axir_value_t *ops[2] = {x, w};
    axon_axir_node_t *mm = axon_axir_node_create(m, f, NULL, AXON_AXIR_OP_MM, NULL, 2, ops, 1, &tx, 0, NULL);
    REQUIRE(mm != NULL);
    axon_axir_attr_t attrs[2];
    memset(attrs, 0, sizeof attrs);
    attrs[0].name = "keepdim";
    attrs[0].kind = AXON_AXIR_ATTR_BOOL;
    attrs[0].i = 1;
    axon_axir_dim_t one = S(1);
    attrs[1].name = "dims";
    attrs[1].kind = AXON_AXIR_ATTR_LIST;
    attrs[1].count = 1;
    attrs[1].items = &one;
    axon_axir_type_t tr = type2(AXON_FLOAT32, ds0, S(1));
    axon_axir_node_t *sum = axon_axir_node_create(m, f, NULL, AXON_AXIR_OP_SUM, NULL, 1, &mm->results[0], 1, &tr, 2,
                                                  attrs);
    REQUIRE(sum != NULL);
    CHECK(strcmp(sum->attrs[0].name, "dims") == 0);   /* sorted on create */
    CHECK(axon_axir_node_attr(sum, "keepdim") != NULL && axon_axir_node_attr(sum, "keepdim")->i == 1);
    CHECK(axon_axir_node_attr(sum, "nope") == NULL);
    /* insert a relu before the sum, feeding it */
    axon_axir_node_t *relu = axon_axir_node_create(m, f, sum, AXON_AXIR_OP_RELU, NULL, 1, &mm->results[0], 1, &tx, 0,
                                                   NULL);
    REQUIRE(relu != NULL);
    sum->operands[0] = relu->results[0];
    CHECK_OK(axon_axir_func_set_returns(m, f, 1, &sum->results[0]));
    axon_axir_func_recompute_uses(f);
    CHECK_EQ_I64(mm->results[0]->num_uses, 1);
    CHECK_EQ_I64(x->num_uses, 1);
    axon_axir_diag_t d;
    CHECK_OK(axon_axir_verify(m, &d));
    char *text = NULL;
    CHECK_OK(axon_axir_print(m, &text, NULL));
    const char *want =
        "axir 1\n"
        "\n"
        "func @main(%x: f32[s0, 8], %1: f32[8, 8]) -> (f32[s0, 1]) {\n"
        "  %2 = mm(%x, %1) : f32[s0, 8]\n"
        "  %4 = relu(%2) : f32[s0, 8]\n"
        "  %3 = sum(%4) {dims = [1], keepdim = true} : f32[s0, 1]\n"
        "  return %3\n"
        "}\n";
    if (text && strcmp(text, want) != 0) fprintf(stderr, "got:\n%s", text);
    CHECK(text && strcmp(text, want) == 0);
    axon_axir_module_t *m2 = NULL;
    if (text) CHECK_OK(axon_axir_parse(text, strlen(text), &m2, &d));
    char *text2 = NULL;
    if (m2) CHECK_OK(axon_axir_print(m2, &text2, NULL));
    CHECK(text2 && text && strcmp(text, text2) == 0);
    free(text);
    free(text2);
    axon_axir_module_destroy(m2);
    axon_axir_module_destroy(m);
}

static void test_erase_needs_no_uses_and_replace_uses_moves_them(void) {
    axon_axir_module_t *m = NULL;
    REQUIRE(axon_axir_module_create(&m) == AXON_OK);
    axon_axir_func_t *f = axon_axir_func_add(m, "f", 0);
    axon_axir_type_t t = type2(AXON_FLOAT32, S(2), S(2));
    axon_axir_value_t *x = axon_axir_func_add_param(m, f, "x", &t);
    axon_axir_node_t *a = axon_axir_node_create(m, f, NULL, AXON_AXIR_OP_NEG, NULL, 1, &x, 1, &t, 0, NULL);
    axon_axir_node_t *b = axon_axir_node_create(m, f, NULL, AXON_AXIR_OP_EXP, NULL, 1, &a->results[0], 1, &t, 0, NULL);
    REQUIRE(a && b);
    CHECK_OK(axon_axir_func_set_returns(m, f, 1, &b->results[0]));
    CHECK_STATUS(axon_axir_node_erase(f, a), AXON_ERROR_MISUSE);
    CHECK_MSG("still has 1 use");
    axon_axir_replace_uses(f, a->results[0], x);
    CHECK(b->operands[0] == x);
    CHECK_OK(axon_axir_node_erase(f, a));
    CHECK(f->first == b && f->last == b && b->prev == NULL);
    axon_axir_func_recompute_uses(f);
    CHECK_EQ_I64(x->num_uses, 1);
    CHECK_EQ_I64(b->results[0]->num_uses, 1);
    axon_axir_diag_t d;
    CHECK_OK(axon_axir_verify(m, &d));
    axon_axir_module_destroy(m);
}

static void test_verifier_reports_builder_mistakes_without_a_location(void) {
    axon_axir_module_t *m = NULL;
    REQUIRE(axon_axir_module_create(&m) == AXON_OK);
    axon_axir_func_t *f = axon_axir_func_add(m, "f", 0);
    axon_axir_type_t t = type2(AXON_FLOAT32, S(2), S(2)), wrong = type2(AXON_FLOAT32, S(2), S(3));
    axon_axir_value_t *x = axon_axir_func_add_param(m, f, "x", &t);
    axon_axir_node_t *a = axon_axir_node_create(m, f, NULL, AXON_AXIR_OP_NEG, NULL, 1, &x, 1, &wrong, 0, NULL);
    REQUIRE(a != NULL);
    axon_axir_diag_t d;
    CHECK_STATUS(axon_axir_verify(m, &d), AXON_ERROR_INVALID_ARG);
    CHECK(d.line == 0 && d.col == 0);
    char buf[700];
    axon_axir_diag_format(&d, buf, sizeof buf);
    CHECK(strcmp(buf, "neg: result 1 is declared f32[2, 3] but the op gives f32[2, 2]") == 0);
    /* an operand from a later node: a use before its definition */
    axon_axir_module_t *m2 = NULL;
    REQUIRE(axon_axir_module_create(&m2) == AXON_OK);
    axon_axir_func_t *g = axon_axir_func_add(m2, "g", 0);
    axon_axir_value_t *y = axon_axir_func_add_param(m2, g, "y", &t);
    axon_axir_node_t *last = axon_axir_node_create(m2, g, NULL, AXON_AXIR_OP_NEG, NULL, 1, &y, 1, &t, 0, NULL);
    axon_axir_node_t *first = axon_axir_node_create(m2, g, last, AXON_AXIR_OP_EXP, NULL, 1, &y, 1, &t, 0, NULL);
    REQUIRE(last && first);
    first->operands[0] = last->results[0];
    CHECK_STATUS(axon_axir_verify(m2, &d), AXON_ERROR_INVALID_ARG);
    CHECK(strcmp(d.message, "exp: operand 1 (%1) is not defined before this node") == 0);
    axon_axir_module_destroy(m2);
    axon_axir_module_destroy(m);
}

static void test_fresh_names_skip_numbers_the_text_used(void) {
    const char *text = "axir 1\n\nfunc @f(%7: f32[2], %x: f32[2]) -> (f32[2]) {\n  %3 = neg(%7) : f32[2]\n"
                       "  return %3\n}\n";
    axon_axir_module_t *m = NULL;
    axon_axir_diag_t d;
    REQUIRE(axon_axir_parse(text, strlen(text), &m, &d) == AXON_OK);
    axon_axir_func_t *f = axon_axir_module_find(m, "f");
    REQUIRE(f != NULL);
    axon_axir_value_t *x = f->params[1];
    axon_axir_type_t t = x->type;
    axon_axir_node_t *a = axon_axir_node_create(m, f, NULL, AXON_AXIR_OP_EXP, NULL, 1, &x, 1, &t, 0, NULL);
    axon_axir_node_t *b = axon_axir_node_create(m, f, NULL, AXON_AXIR_OP_EXP, NULL, 1, &x, 1, &t, 0, NULL);
    axon_axir_value_t *p = axon_axir_func_add_param(m, f, NULL, &t);
    REQUIRE(a && b && p);
    CHECK(strcmp(a->results[0]->name, "8") == 0);
    CHECK(strcmp(b->results[0]->name, "9") == 0);
    CHECK(strcmp(p->name, "10") == 0);
    CHECK_OK(axon_axir_verify(m, &d));
    axon_axir_module_destroy(m);
}

static void test_op_table_names_round_trip(void) {
    for (int op = 1; op < AXON_AXIR_OP_COUNT; op++) {
        const char *name = axon_axir_op_name((axon_axir_op_t)op);
        CHECK(axon_axir_op_lookup(name, strlen(name)) == (axon_axir_op_t)op);
        int lo = -2, hi = -2, nr = -2;
        CHECK(axon_axir_op_arity((axon_axir_op_t)op, &lo, &hi, &nr));
        CHECK(lo >= 0 && (hi == -1 || hi >= lo) && nr >= -1);
    }
    CHECK(strcmp(axon_axir_op_name(AXON_AXIR_OP_COUNT), "invalid") == 0);
    CHECK(axon_axir_op_lookup("ad", 2) == AXON_AXIR_OP_INVALID);
    CHECK(axon_axir_op_class(AXON_AXIR_OP_RESHAPE) == AXON_AXIR_CLASS_VIEW);
    CHECK(axon_axir_op_class(AXON_AXIR_OP_SDPA) == AXON_AXIR_CLASS_LIBRARY);
    CHECK(!axon_axir_op_arity(AXON_AXIR_OP_INVALID, NULL, NULL, NULL));
    for (int d = 0; d < AXON_DTYPE_COUNT; d++) {
        const char *name = axon_axir_dtype_name((axon_dtype_t)d);
        axon_dtype_t back;
        CHECK(axon_axir_dtype_lookup(name, strlen(name), &back) && back == (axon_dtype_t)d);
    }
}

int main(void) {
    RUN(test_built_function_prints_and_parses_back);
    RUN(test_erase_needs_no_uses_and_replace_uses_moves_them);
    RUN(test_verifier_reports_builder_mistakes_without_a_location);
    RUN(test_fresh_names_skip_numbers_the_text_used);
    RUN(test_op_table_names_round_trip);
    return check_report();
}
