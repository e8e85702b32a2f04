/* Symbolic dimensions: builders, evaluation with Python's // and % semantics, and simplification to a canonical
 * form. The canonical form is a sum of terms, each an integer coefficient times a sorted product of atoms (symbols,
 * and floor divisions or modulos whose operands are themselves canonical). Terms are sorted (higher degree first,
 * then by atoms; the constant last) and like terms combined, so expressions equal as polynomials get structurally
 * equal forms: s0*12 and 12*s0, (s0+1)*2 and s0*2+2, s0*s1 and s1*s0, s0+0 and s0. */
#include <stdlib.h>
#include <string.h>

#include "axir_impl.h"
#include "internal.h"

/* ---- builders ---- */

static axon_sym_expr_t *sym_new(axon_axir_module_t *m, axon_sym_kind_t kind) {
    axon_sym_expr_t *e = axir_alloc(m, sizeof *e);
    if (e) e->kind = kind;
    return e;
}

const axon_sym_expr_t *axon_sym_const(axon_axir_module_t *m, int64_t value) {
    if (m == NULL) return NULL;
    axon_sym_expr_t *e = sym_new(m, AXON_SYM_CONST);
    if (e) e->value = value;
    return e;
}

const axon_sym_expr_t *axon_sym_var(axon_axir_module_t *m, int32_t var) {
    if (m == NULL || var < 0) return NULL;
    axon_sym_expr_t *e = sym_new(m, AXON_SYM_VAR);
    if (e) e->var = var;
    return e;
}

const axon_sym_expr_t *axon_sym_binary(axon_axir_module_t *m, axon_sym_kind_t kind, const axon_sym_expr_t *lhs,
                                       const axon_sym_expr_t *rhs) {
    if (m == NULL || lhs == NULL || rhs == NULL || kind < AXON_SYM_ADD || kind > AXON_SYM_MOD) return NULL;
    axon_sym_expr_t *e = sym_new(m, kind);
    if (e) {
        e->lhs = lhs;
        e->rhs = rhs;
    }
    return e;
}

/* ---- evaluation ---- */

static int floordiv_i64(int64_t a, int64_t b, int64_t *out) {
    if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    *out = q;
    return 1;
}

static int mod_i64(int64_t a, int64_t b, int64_t *out) {
    if (b == 0) return 0;
    if (b == -1) {
        *out = 0;
        return 1;
    }
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    *out = r;
    return 1;
}

static axon_status_t sym_eval(const axon_sym_expr_t *e, const int64_t *values, int nvalues, int64_t *out) {
    if (e == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "sym_eval: NULL expression");
    switch (e->kind) {
    case AXON_SYM_CONST: *out = e->value; return AXON_OK;
    case AXON_SYM_VAR:
        if (e->var < 0 || e->var >= nvalues)
            return axon_fail(AXON_ERROR_INVALID_ARG, "sym_eval: symbol %d outside the %d values given", (int)e->var,
                             nvalues);
        *out = values[e->var];
        return AXON_OK;
    case AXON_SYM_ADD: case AXON_SYM_SUB: case AXON_SYM_MUL: case AXON_SYM_FLOORDIV: case AXON_SYM_MOD: break;
    default: return axon_fail(AXON_ERROR_INVALID_ARG, "sym_eval: unknown expression kind %d", (int)e->kind);
    }
    int64_t a, b;
    axon_status_t s = sym_eval(e->lhs, values, nvalues, &a);
    if (s == AXON_OK) s = sym_eval(e->rhs, values, nvalues, &b);
    if (s != AXON_OK) return s;
    int ok = 1;
    switch (e->kind) {
    case AXON_SYM_ADD: ok = !__builtin_add_overflow(a, b, out); break;
    case AXON_SYM_SUB: ok = !__builtin_sub_overflow(a, b, out); break;
    case AXON_SYM_MUL: ok = !__builtin_mul_overflow(a, b, out); break;
    case AXON_SYM_FLOORDIV:
        if (b == 0) return axon_fail(AXON_ERROR_INVALID_ARG, "sym_eval: division by zero (%lld // 0)", (long long)a);
        ok = floordiv_i64(a, b, out);
        break;
    default:
        if (b == 0) return axon_fail(AXON_ERROR_INVALID_ARG, "sym_eval: modulo by zero (%lld %% 0)", (long long)a);
        ok = mod_i64(a, b, out);
        break;
    }
    if (!ok) return axon_fail(AXON_ERROR_INVALID_ARG, "sym_eval: int64 overflow");
    return AXON_OK;
}

axon_status_t axon_sym_eval(const axon_sym_expr_t *e, const int64_t *values, int nvalues, int64_t *out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "sym_eval: out is NULL");
    if (values == NULL && nvalues > 0) return axon_fail(AXON_ERROR_INVALID_ARG, "sym_eval: values is NULL");
    return sym_eval(e, values, nvalues, out);
}

/* ---- structure ---- */

int axir_sym_compare(const axon_sym_expr_t *a, const axon_sym_expr_t *b) {
    while (a != b) {
        if (a == NULL || b == NULL) return a == NULL ? -1 : 1;
        if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
        if (a->kind == AXON_SYM_CONST) return a->value == b->value ? 0 : (a->value < b->value ? -1 : 1);
        if (a->kind == AXON_SYM_VAR) return a->var == b->var ? 0 : (a->var < b->var ? -1 : 1);
        int c = axir_sym_compare(a->lhs, b->lhs);
        if (c) return c;
        a = a->rhs;
        b = b->rhs;
    }
    return 0;
}

int axir_sym_is_const(const axon_sym_expr_t *e) {
    if (e == NULL) return 1;
    if (e->kind == AXON_SYM_CONST) return 1;
    if (e->kind == AXON_SYM_VAR) return 0;
    return axir_sym_is_const(e->lhs) && axir_sym_is_const(e->rhs);
}

int axir_sym_has_div(const axon_sym_expr_t *e) {
    if (e == NULL || e->kind == AXON_SYM_CONST || e->kind == AXON_SYM_VAR) return 0;
    if (e->kind == AXON_SYM_FLOORDIV || e->kind == AXON_SYM_MOD) return 1;
    return axir_sym_has_div(e->lhs) || axir_sym_has_div(e->rhs);
}

/* ---- canonical polynomials ---- */

#define POLY_MAX_TERMS 32
#define POLY_MAX_ATOMS 8
#define POLY_MAX_DEPTH 64

typedef struct term {
    int64_t coeff;
    int natoms;
    const axon_sym_expr_t *atoms[POLY_MAX_ATOMS];   /* sorted by axir_sym_compare */
} term_t;

typedef struct poly {
    int n;
    term_t t[POLY_MAX_TERMS];
} poly_t;

static int term_cmp_monomial(const term_t *a, const term_t *b) {
    if (a->natoms != b->natoms) return a->natoms > b->natoms ? -1 : 1;
    for (int i = 0; i < a->natoms; i++) {
        int c = axir_sym_compare(a->atoms[i], b->atoms[i]);
        if (c) return c;
    }
    return 0;
}

static int term_qsort_cmp(const void *a, const void *b) { return term_cmp_monomial(a, b); }

/* Sorts terms, combines like ones, drops zeros. 0 on coefficient overflow. */
static int poly_normalize(poly_t *p) {
    qsort(p->t, (size_t)p->n, sizeof p->t[0], term_qsort_cmp);
    int out = 0;
    for (int i = 0; i < p->n; i++) {
        if (out > 0 && term_cmp_monomial(&p->t[out - 1], &p->t[i]) == 0) {
            if (__builtin_add_overflow(p->t[out - 1].coeff, p->t[i].coeff, &p->t[out - 1].coeff)) return 0;
        } else {
            p->t[out++] = p->t[i];
        }
    }
    int k = 0;
    for (int i = 0; i < out; i++)
        if (p->t[i].coeff != 0) p->t[k++] = p->t[i];
    p->n = k;
    return 1;
}

static void poly_const(poly_t *p, int64_t c) {
    p->n = 0;
    if (c != 0) {
        p->t[0].coeff = c;
        p->t[0].natoms = 0;
        p->n = 1;
    }
}

static void poly_atom(poly_t *p, const axon_sym_expr_t *atom) {
    p->n = 1;
    p->t[0].coeff = 1;
    p->t[0].natoms = 1;
    p->t[0].atoms[0] = atom;
}

static int poly_get_const(const poly_t *p, int64_t *c) {
    if (p->n == 0) {
        *c = 0;
        return 1;
    }
    if (p->n == 1 && p->t[0].natoms == 0) {
        *c = p->t[0].coeff;
        return 1;
    }
    return 0;
}

/* a += sign * b. */
static int poly_add(poly_t *a, const poly_t *b, int negate) {
    if (a->n + b->n > POLY_MAX_TERMS) return 0;
    for (int i = 0; i < b->n; i++) {
        term_t t = b->t[i];
        if (negate && __builtin_sub_overflow((int64_t)0, t.coeff, &t.coeff)) return 0;
        a->t[a->n++] = t;
    }
    return poly_normalize(a);
}

static int poly_mul(poly_t *out, const poly_t *a, const poly_t *b) {
    if (a->n * b->n > POLY_MAX_TERMS) return 0;
    out->n = 0;
    for (int i = 0; i < a->n; i++) {
        for (int j = 0; j < b->n; j++) {
            const term_t *x = &a->t[i], *y = &b->t[j];
            if (x->natoms + y->natoms > POLY_MAX_ATOMS) return 0;
            term_t t;
            if (__builtin_mul_overflow(x->coeff, y->coeff, &t.coeff)) return 0;
            /* merge the sorted atom lists */
            int p = 0, q = 0;
            t.natoms = 0;
            while (p < x->natoms || q < y->natoms) {
                if (q >= y->natoms || (p < x->natoms && axir_sym_compare(x->atoms[p], y->atoms[q]) <= 0))
                    t.atoms[t.natoms++] = x->atoms[p++];
                else
                    t.atoms[t.natoms++] = y->atoms[q++];
            }
            out->t[out->n++] = t;
        }
    }
    return poly_normalize(out);
}

static const axon_sym_expr_t *term_expr(axon_axir_module_t *m, const term_t *t, int64_t coeff) {
    const axon_sym_expr_t *e = NULL;
    for (int i = 0; i < t->natoms; i++) e = e ? axon_sym_binary(m, AXON_SYM_MUL, e, t->atoms[i]) : t->atoms[i];
    if (e == NULL) return axon_sym_const(m, coeff);
    if (coeff != 1) e = axon_sym_binary(m, AXON_SYM_MUL, e, axon_sym_const(m, coeff));
    return e;
}

static const axon_sym_expr_t *poly_expr(axon_axir_module_t *m, const poly_t *p) {
    if (p->n == 0) return axon_sym_const(m, 0);
    const axon_sym_expr_t *e = term_expr(m, &p->t[0], p->t[0].coeff);
    for (int i = 1; i < p->n && e; i++) {
        int64_t c = p->t[i].coeff;
        if (c < 0 && c != INT64_MIN)
            e = axon_sym_binary(m, AXON_SYM_SUB, e, term_expr(m, &p->t[i], -c));
        else
            e = axon_sym_binary(m, AXON_SYM_ADD, e, term_expr(m, &p->t[i], c));
    }
    return e;
}

/* 1 if every coefficient of p is divisible by c (c != 0). */
static int poly_divisible(const poly_t *p, int64_t c) {
    for (int i = 0; i < p->n; i++) {
        if (c == -1) {
            if (p->t[i].coeff == INT64_MIN) return 0;   /* its quotient overflows */
        } else if (p->t[i].coeff % c != 0) {
            return 0;
        }
    }
    return 1;
}

/* e as a canonical polynomial in p; 0 when it does not fit the limits (the caller keeps e as it is). */
static int to_poly(axon_axir_module_t *m, const axon_sym_expr_t *e, poly_t *p, int depth) {
    if (e == NULL || depth > POLY_MAX_DEPTH) return 0;
    switch (e->kind) {
    case AXON_SYM_CONST: poly_const(p, e->value); return 1;
    case AXON_SYM_VAR: poly_atom(p, e); return 1;
    case AXON_SYM_ADD:
    case AXON_SYM_SUB: {
        poly_t *b = malloc(sizeof *b);
        if (b == NULL) return 0;
        int ok = to_poly(m, e->lhs, p, depth + 1) && to_poly(m, e->rhs, b, depth + 1) &&
                 poly_add(p, b, e->kind == AXON_SYM_SUB);
        free(b);
        return ok;
    }
    case AXON_SYM_MUL: {
        poly_t *ab = malloc(2 * sizeof *ab);
        if (ab == NULL) return 0;
        int ok = to_poly(m, e->lhs, &ab[0], depth + 1) && to_poly(m, e->rhs, &ab[1], depth + 1) &&
                 poly_mul(p, &ab[0], &ab[1]);
        free(ab);
        return ok;
    }
    case AXON_SYM_FLOORDIV:
    case AXON_SYM_MOD: {
        poly_t *ab = malloc(2 * sizeof *ab);
        if (ab == NULL) return 0;
        int ok = to_poly(m, e->lhs, &ab[0], depth + 1) && to_poly(m, e->rhs, &ab[1], depth + 1);
        int64_t a, b, r;
        int done = 0;
        if (ok && poly_get_const(&ab[1], &b) && b != 0) {
            if (poly_get_const(&ab[0], &a) &&
                (e->kind == AXON_SYM_FLOORDIV ? floordiv_i64(a, b, &r) : mod_i64(a, b, &r))) {
                poly_const(p, r);
                done = 1;
            } else if (poly_divisible(&ab[0], b)) {
                /* exact division: floor is exact and the remainder is 0 */
                if (e->kind == AXON_SYM_MOD) {
                    poly_const(p, 0);
                } else {
                    *p = ab[0];
                    for (int i = 0; i < p->n; i++) p->t[i].coeff /= b;
                    ok = poly_normalize(p);
                }
                done = 1;
            }
        }
        if (ok && !done) {
            const axon_sym_expr_t *atom =
                axon_sym_binary(m, e->kind, poly_expr(m, &ab[0]), poly_expr(m, &ab[1]));
            if (atom == NULL) ok = 0;
            else poly_atom(p, atom);
        }
        free(ab);
        return ok;
    }
    }
    return 0;
}

const axon_sym_expr_t *axon_sym_simplify(axon_axir_module_t *m, const axon_sym_expr_t *e) {
    if (m == NULL || e == NULL) return NULL;
    poly_t *p = malloc(sizeof *p);
    if (p == NULL) return e;
    const axon_sym_expr_t *r = e;
    if (to_poly(m, e, p, 0)) {
        const axon_sym_expr_t *s = poly_expr(m, p);
        if (s) r = s;
    }
    free(p);
    return r;
}

/* ---- dims ---- */

axon_axir_dim_t axir_dim_static(int64_t size) {
    axon_axir_dim_t d = {size, NULL};
    return d;
}

const axon_sym_expr_t *axir_dim_expr(axon_axir_module_t *m, axon_axir_dim_t d) {
    return d.expr ? d.expr : axon_sym_const(m, d.size);
}

axon_axir_dim_t axir_dim_from_expr(axon_axir_module_t *m, const axon_sym_expr_t *e) {
    const axon_sym_expr_t *s = e ? axon_sym_simplify(m, e) : NULL;
    if (s && s->kind == AXON_SYM_CONST) return axir_dim_static(s->value);
    axon_axir_dim_t d = {-1, s ? s : e};
    return d;
}

int axon_axir_dim_equal(axon_axir_module_t *m, axon_axir_dim_t a, axon_axir_dim_t b) {
    if (a.expr == NULL && b.expr == NULL) return a.size == b.size;
    if (m == NULL) return 0;
    const axon_sym_expr_t *x = a.expr ? axon_sym_simplify(m, a.expr) : NULL;
    const axon_sym_expr_t *y = b.expr ? axon_sym_simplify(m, b.expr) : NULL;
    if ((a.expr && x == NULL) || (b.expr && y == NULL)) return 0;
    int64_t xs = a.size, ys = b.size;
    if (x && x->kind == AXON_SYM_CONST) {
        xs = x->value;
        x = NULL;
    }
    if (y && y->kind == AXON_SYM_CONST) {
        ys = y->value;
        y = NULL;
    }
    if (x == NULL && y == NULL) return xs == ys;
    if (x == NULL || y == NULL) return 0;
    return axir_sym_compare(x, y) == 0;
}

const axon_sym_expr_t *axir_sym_subst(axon_axir_module_t *m, const axon_sym_expr_t *e, const axon_axir_dim_t *map,
                                      int n) {
    if (e == NULL) return NULL;
    switch (e->kind) {
    case AXON_SYM_CONST: return e;
    case AXON_SYM_VAR:
        if (e->var < 0 || e->var >= n) return NULL;
        if (map[e->var].expr == NULL && map[e->var].size < 0) return NULL;   /* unbound */
        return axir_dim_expr(m, map[e->var]);
    default: {
        const axon_sym_expr_t *l = axir_sym_subst(m, e->lhs, map, n);
        const axon_sym_expr_t *r = axir_sym_subst(m, e->rhs, map, n);
        if (l == NULL || r == NULL) return NULL;
        return axon_sym_binary(m, e->kind, l, r);
    }
    }
}
