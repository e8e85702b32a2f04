/* Symbolic dimensions: simplification to a canonical form (equal polynomials print and compare equal), Python's
 * floor division and modulo in evaluation, and errors for division by zero and overflow. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/axir.h"
#include "check.h"

typedef struct symfix {
    axon_axir_module_t *m;
    axon_axir_func_t *f;
    const axon_sym_expr_t *s0, *s1;
} symfix_t;

static int fix_open(symfix_t *x) {
    memset(x, 0, sizeof *x);
    if (axon_axir_module_create(&x->m) != AXON_OK) return 0;
    x->f = axon_axir_func_add(x->m, "f", 0);
    if (x->f == NULL) return 0;
    x->s0 = axon_sym_var(x->m, axon_axir_func_symbol(x->m, x->f, "s0"));
    x->s1 = axon_sym_var(x->m, axon_axir_func_symbol(x->m, x->f, "s1"));
    return x->s0 && x->s1;
}

static const axon_sym_expr_t *C(symfix_t *x, int64_t v) { return axon_sym_const(x->m, v); }
static const axon_sym_expr_t *B(symfix_t *x, axon_sym_kind_t k, const axon_sym_expr_t *a, const axon_sym_expr_t *b) {
    return axon_sym_binary(x->m, k, a, b);
}

/* The printed form of e after simplification, as the dim of a parameter (into buf). */
static const char *simplified_text(symfix_t *x, const axon_sym_expr_t *e, char *buf, size_t size) {
    const axon_sym_expr_t *s = axon_sym_simplify(x->m, e);
    axon_axir_type_t t;
    memset(&t, 0, sizeof t);
    t.dtype = AXON_INT64;
    t.rank = 1;
    if (s && s->kind == AXON_SYM_CONST) {
        t.dims[0].size = s->value;
    } else {
        t.dims[0].size = -1;
        t.dims[0].expr = s;
    }
    axon_axir_func_t *g = axon_axir_func_add(x->m, "tmp", 0);
    if (g == NULL) g = axon_axir_module_find(x->m, "tmp");
    g->symbols = x->f->symbols;
    g->num_symbols = x->f->num_symbols;
    g->num_params = 0;
    axon_axir_func_add_param(x->m, g, "x", &t);
    char *text = NULL;
    snprintf(buf, size, "?");
    if (axon_axir_print_func(x->m, g, &text, NULL) == AXON_OK) {
        const char *a = strchr(text, '['), *b = strstr(text, "]) ->");
        if (a && b) snprintf(buf, size, "%.*s", (int)(b - a - 1), a + 1);
    }
    free(text);
    return buf;
}

#define CHECK_SIMPLIFIES_TO(x, e, want)                                                            \
    do {                                                                                           \
        char got_[128];                                                                            \
        simplified_text((x), (e), got_, sizeof got_);                                              \
        if (strcmp(got_, (want)) != 0) {                                                           \
            fprintf(stderr, "%s:%d: simplified to %s, want %s\n", __FILE__, __LINE__, got_, (want)); \
            check_failures_in_test++;                                                              \
        }                                                                                          \
    } while (0)

static axon_axir_dim_t D(const axon_sym_expr_t *e) {
    axon_axir_dim_t d = {-1, e};
    return d;
}

static void test_commuted_and_distributed_forms_are_equal(void) {
    symfix_t x;
    REQUIRE(fix_open(&x));
    const axon_sym_expr_t *a = B(&x, AXON_SYM_MUL, x.s0, C(&x, 12)), *b = B(&x, AXON_SYM_MUL, C(&x, 12), x.s0);
    CHECK(axon_axir_dim_equal(x.m, D(a), D(b)));
    CHECK_SIMPLIFIES_TO(&x, b, "s0*12");
    const axon_sym_expr_t *p = B(&x, AXON_SYM_MUL, B(&x, AXON_SYM_ADD, x.s0, C(&x, 1)), C(&x, 2));
    const axon_sym_expr_t *q = B(&x, AXON_SYM_ADD, B(&x, AXON_SYM_MUL, C(&x, 2), x.s0), C(&x, 2));
    CHECK(axon_axir_dim_equal(x.m, D(p), D(q)));
    CHECK_SIMPLIFIES_TO(&x, p, "s0*2+2");
    CHECK(axon_axir_dim_equal(x.m, D(B(&x, AXON_SYM_MUL, x.s0, x.s1)), D(B(&x, AXON_SYM_MUL, x.s1, x.s0))));
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_MUL, x.s1, x.s0), "s0*s1");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_ADD, x.s0, C(&x, 0)), "s0");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_MUL, x.s0, C(&x, 1)), "s0");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_SUB, x.s0, x.s0), "0");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_SUB, B(&x, AXON_SYM_ADD, x.s1, C(&x, 3)), B(&x, AXON_SYM_MUL, x.s1, x.s1)),
                        "s1*s1*-1+s1+3");
    /* (s0+s1)*(s0-s1) == s0*s0 - s1*s1 */
    CHECK(axon_axir_dim_equal(
        x.m, D(B(&x, AXON_SYM_MUL, B(&x, AXON_SYM_ADD, x.s0, x.s1), B(&x, AXON_SYM_SUB, x.s0, x.s1))),
        D(B(&x, AXON_SYM_SUB, B(&x, AXON_SYM_MUL, x.s0, x.s0), B(&x, AXON_SYM_MUL, x.s1, x.s1)))));
    CHECK(!axon_axir_dim_equal(x.m, D(x.s0), D(x.s1)));
    CHECK(!axon_axir_dim_equal(x.m, D(a), D(B(&x, AXON_SYM_MUL, x.s0, C(&x, 11)))));
    axon_axir_module_destroy(x.m);
}

static void test_static_and_symbolic_dims_compare_after_folding(void) {
    symfix_t x;
    REQUIRE(fix_open(&x));
    axon_axir_dim_t five = {5, NULL}, six = {6, NULL};
    CHECK(axon_axir_dim_equal(x.m, five, five));
    CHECK(!axon_axir_dim_equal(x.m, five, six));
    CHECK(axon_axir_dim_equal(x.m, five, D(B(&x, AXON_SYM_ADD, B(&x, AXON_SYM_SUB, x.s0, x.s0), C(&x, 5)))));
    CHECK(!axon_axir_dim_equal(x.m, five, D(x.s0)));
    axon_axir_module_destroy(x.m);
}

static void test_floor_division_and_modulo_stay_atoms_unless_exact(void) {
    symfix_t x;
    REQUIRE(fix_open(&x));
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_FLOORDIV, B(&x, AXON_SYM_MUL, C(&x, 12), x.s0), C(&x, 12)), "s0");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_FLOORDIV, B(&x, AXON_SYM_ADD, B(&x, AXON_SYM_MUL, x.s0, C(&x, 4)), C(&x, 2)),
                              C(&x, 2)),
                        "s0*2+1");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_FLOORDIV, B(&x, AXON_SYM_ADD, C(&x, 1), x.s0), C(&x, 2)), "(s0+1)//2");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_MUL, C(&x, 3), B(&x, AXON_SYM_MOD, x.s1, C(&x, 4))), "s1%4*3");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_MOD, B(&x, AXON_SYM_MUL, x.s0, C(&x, 6)), C(&x, 3)), "0");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_MOD, x.s0, C(&x, 1)), "0");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_FLOORDIV, C(&x, -7), C(&x, 2)), "-4");
    CHECK_SIMPLIFIES_TO(&x, B(&x, AXON_SYM_MOD, C(&x, -7), C(&x, 2)), "1");
    /* operands of an atom are simplified, so commuted atoms are equal */
    CHECK(axon_axir_dim_equal(x.m, D(B(&x, AXON_SYM_FLOORDIV, B(&x, AXON_SYM_ADD, x.s0, x.s1), C(&x, 2))),
                              D(B(&x, AXON_SYM_FLOORDIV, B(&x, AXON_SYM_ADD, x.s1, x.s0), C(&x, 2)))));
    CHECK(!axon_axir_dim_equal(x.m, D(B(&x, AXON_SYM_FLOORDIV, x.s0, C(&x, 2))),
                               D(B(&x, AXON_SYM_FLOORDIV, x.s0, C(&x, 3)))));
    /* a division by a zero constant is left alone for eval to report */
    const axon_sym_expr_t *z = axon_sym_simplify(x.m, B(&x, AXON_SYM_FLOORDIV, x.s0, C(&x, 0)));
    CHECK(z != NULL && z->kind == AXON_SYM_FLOORDIV);
    axon_axir_module_destroy(x.m);
}

static void test_simplify_gives_up_cleanly_on_overflow(void) {
    symfix_t x;
    REQUIRE(fix_open(&x));
    const axon_sym_expr_t *e = B(&x, AXON_SYM_MUL, B(&x, AXON_SYM_MUL, x.s0, C(&x, INT64_MAX)), C(&x, 2));
    const axon_sym_expr_t *s = axon_sym_simplify(x.m, e);
    CHECK(s != NULL);
    CHECK(axon_axir_dim_equal(x.m, D(e), D(e)));
    /* a product that would exceed the term limit: (s0+s1+1)^6 */
    const axon_sym_expr_t *t = B(&x, AXON_SYM_ADD, B(&x, AXON_SYM_ADD, x.s0, x.s1), C(&x, 1)), *p = t;
    for (int i = 0; i < 5; i++) p = B(&x, AXON_SYM_MUL, p, t);
    CHECK(axon_sym_simplify(x.m, p) != NULL);
    axon_axir_module_destroy(x.m);
}

static int64_t eval2(symfix_t *x, axon_sym_kind_t k, int64_t a, int64_t b, axon_status_t *st) {
    int64_t out = 0;
    *st = axon_sym_eval(B(x, k, C(x, a), C(x, b)), NULL, 0, &out);
    return out;
}

static void test_eval_uses_python_floor_division_and_modulo(void) {
    symfix_t x;
    REQUIRE(fix_open(&x));
    axon_status_t st;
    CHECK_EQ_I64(eval2(&x, AXON_SYM_FLOORDIV, -7, 2, &st), -4);
    CHECK_EQ_I64(eval2(&x, AXON_SYM_FLOORDIV, 7, -2, &st), -4);
    CHECK_EQ_I64(eval2(&x, AXON_SYM_FLOORDIV, -7, -2, &st), 3);
    CHECK_EQ_I64(eval2(&x, AXON_SYM_FLOORDIV, 6, -2, &st), -3);
    CHECK_EQ_I64(eval2(&x, AXON_SYM_MOD, -7, 2, &st), 1);
    CHECK_EQ_I64(eval2(&x, AXON_SYM_MOD, 7, -2, &st), -1);
    CHECK_EQ_I64(eval2(&x, AXON_SYM_MOD, -7, -2, &st), -1);
    CHECK_EQ_I64(eval2(&x, AXON_SYM_MOD, INT64_MIN, -1, &st), 0);
    CHECK(st == AXON_OK);
    int64_t vals[2] = {10, 3}, out = 0;
    const axon_sym_expr_t *e = B(&x, AXON_SYM_ADD, B(&x, AXON_SYM_MUL, x.s0, x.s1),
                                 B(&x, AXON_SYM_FLOORDIV, B(&x, AXON_SYM_SUB, C(&x, 0), x.s0), x.s1));
    CHECK_OK(axon_sym_eval(e, vals, 2, &out));
    CHECK_EQ_I64(out, 30 + (-4));
    axon_axir_module_destroy(x.m);
}

static void test_eval_reports_division_by_zero_overflow_and_unbound_symbols(void) {
    symfix_t x;
    REQUIRE(fix_open(&x));
    axon_status_t st;
    eval2(&x, AXON_SYM_FLOORDIV, 5, 0, &st);
    CHECK(st == AXON_ERROR_INVALID_ARG);
    CHECK_MSG("division by zero");
    eval2(&x, AXON_SYM_MOD, 5, 0, &st);
    CHECK(st == AXON_ERROR_INVALID_ARG);
    CHECK_MSG("modulo by zero");
    eval2(&x, AXON_SYM_MUL, INT64_MAX, 2, &st);
    CHECK(st == AXON_ERROR_INVALID_ARG);
    CHECK_MSG("overflow");
    eval2(&x, AXON_SYM_FLOORDIV, INT64_MIN, -1, &st);
    CHECK(st == AXON_ERROR_INVALID_ARG);
    int64_t one = 1, out;
    CHECK_STATUS(axon_sym_eval(x.s1, &one, 1, &out), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("symbol 1 outside the 1 values given");
    CHECK_STATUS(axon_sym_eval(NULL, NULL, 0, &out), AXON_ERROR_INVALID_ARG);
    axon_axir_module_destroy(x.m);
}

/* ---- random expressions: simplify keeps the value, and print/parse keeps the structure ---- */

static uint64_t rnd(uint64_t *st) {
    *st ^= *st << 13;
    *st ^= *st >> 7;
    *st ^= *st << 17;
    return *st;
}

static const axon_sym_expr_t *random_expr(symfix_t *x, uint64_t *st, int depth) {
    if (depth == 0 || rnd(st) % 10 < 3) {
        if (rnd(st) % 2) return rnd(st) % 2 ? x->s0 : x->s1;
        return C(x, (int64_t)(rnd(st) % 26) - 5);
    }
    axon_sym_kind_t k = (axon_sym_kind_t)(AXON_SYM_ADD + (int)(rnd(st) % 5));
    const axon_sym_expr_t *l = random_expr(x, st, depth - 1);
    return B(x, k, l, random_expr(x, st, depth - 1));
}

static void test_simplify_keeps_the_value_of_random_expressions(void) {
    symfix_t x;
    REQUIRE(fix_open(&x));
    uint64_t st = 0x9e3779b97f4a7c15ull;
    int checked = 0;
    for (int it = 0; it < 3000; it++) {
        const axon_sym_expr_t *e = random_expr(&x, &st, 5), *s = axon_sym_simplify(x.m, e);
        REQUIRE(s != NULL);
        for (int b = 0; b < 6; b++) {
            int64_t vals[2] = {(int64_t)(rnd(&st) % 41) - 20, (int64_t)(rnd(&st) % 41) - 20}, want, got;
            if (axon_sym_eval(e, vals, 2, &want) != AXON_OK) continue;   /* simplify may drop a 0 * (x // 0) */
            checked++;
            CHECK_OK(axon_sym_eval(s, vals, 2, &got));
            if (got != want) {
                fprintf(stderr, "iteration %d, s0=%lld s1=%lld: %lld before simplify, %lld after\n", it,
                        (long long)vals[0], (long long)vals[1], (long long)want, (long long)got);
                CHECK(0);
                axon_axir_module_destroy(x.m);
                return;
            }
        }
    }
    CHECK(checked > 5000);
    axon_axir_module_destroy(x.m);
}

static void test_random_expressions_print_and_parse_back(void) {
    uint64_t st = 12345;
    int parsed = 0;
    for (int it = 0; it < 1500; it++) {
        symfix_t x;
        REQUIRE(fix_open(&x));
        axon_axir_type_t t;
        memset(&t, 0, sizeof t);
        t.dtype = AXON_INT64;
        t.rank = 1;
        t.dims[0].size = -1;
        t.dims[0].expr = x.s0;
        axon_axir_func_add_param(x.m, x.f, "a", &t);
        t.dims[0].expr = x.s1;
        axon_axir_func_add_param(x.m, x.f, "b", &t);
        const axon_sym_expr_t *e = random_expr(&x, &st, 5);
        t.dims[0].expr = e;
        axon_axir_func_add_param(x.m, x.f, "c", &t);
        char *text = NULL;
        CHECK_OK(axon_axir_print(x.m, &text, NULL));
        axon_axir_module_t *m2 = NULL;
        axon_axir_diag_t d;
        if (text && axon_axir_parse(text, strlen(text), &m2, &d) == AXON_OK) {
            parsed++;
            const axon_axir_func_t *f2 = axon_axir_module_find(m2, "f");
            axon_axir_dim_t d2 = f2->params[2]->type.dims[0];
            for (int b = 0; b < 4; b++) {
                int64_t vals[2] = {(int64_t)(rnd(&st) % 41) - 20, (int64_t)(rnd(&st) % 41) - 20}, want, got = 0;
                axon_status_t s1 = axon_sym_eval(e, vals, 2, &want);
                axon_status_t s2 = d2.expr ? axon_sym_eval(d2.expr, vals, 2, &got) : AXON_OK;
                if (!d2.expr) got = d2.size;
                CHECK(s1 == s2);
                if (s1 == AXON_OK && s2 == AXON_OK && got != want) {
                    fprintf(stderr, "%s: s0=%lld s1=%lld gives %lld, built %lld\n", text, (long long)vals[0],
                            (long long)vals[1], (long long)got, (long long)want);
                    CHECK(0);
                }
            }
            char *text2 = NULL;
            CHECK_OK(axon_axir_print(m2, &text2, NULL));
            /* the parser folds a dim without symbols, so only a symbolic one must print back unchanged */
            if (d2.expr && text2 && strcmp(text, text2) != 0) {
                fprintf(stderr, "printed:\n%sreprinted:\n%s", text, text2);
                CHECK(0);
            }
            free(text2);
        } else {
            /* only a dim without symbols that is negative or divides by zero may fail */
            CHECK(strstr(d.message, "dimension") != NULL);
        }
        free(text);
        axon_axir_module_destroy(m2);
        axon_axir_module_destroy(x.m);
        if (check_failures_in_test) return;
    }
    CHECK(parsed > 1000);
}

int main(void) {
    RUN(test_commuted_and_distributed_forms_are_equal);
    RUN(test_static_and_symbolic_dims_compare_after_folding);
    RUN(test_floor_division_and_modulo_stay_atoms_unless_exact);
    RUN(test_simplify_gives_up_cleanly_on_overflow);
    RUN(test_eval_uses_python_floor_division_and_modulo);
    RUN(test_eval_reports_division_by_zero_overflow_and_unbound_symbols);
    RUN(test_simplify_keeps_the_value_of_random_expressions);
    RUN(test_random_expressions_print_and_parse_back);
    return check_report();
}
