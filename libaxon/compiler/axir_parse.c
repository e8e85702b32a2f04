/* The AXIR parser: recursive descent over the grammar of docs/axir.md, building the module in its arena. It stops
 * at the first error and reports it at the offending token; value names are resolved as they are read (so a use
 * before the definition is an error here), fused callees after the whole module is read (so a kernel may come after
 * its callers). The verifier then checks everything else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axir_impl.h"
#include "axir_lex.h"
#include "internal.h"

/* ---- a growable array of fixed-size elements, for what a statement collects before it knows its size ---- */

typedef struct vec {
    char *data;
    int n, cap;
    size_t elem;
} vec_t;

static void *vec_push(vec_t *v) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        char *p = realloc(v->data, (size_t)cap * v->elem);
        if (p == NULL) return NULL;
        v->data = p;
        v->cap = cap;
    }
    void *e = v->data + (size_t)v->n++ * v->elem;
    memset(e, 0, v->elem);
    return e;
}

static void *vec_to_arena(axon_axir_module_t *m, const vec_t *v) {
    if (v->n == 0) return NULL;
    void *p = axir_alloc(m, (size_t)v->n * v->elem);
    if (p) memcpy(p, v->data, (size_t)v->n * v->elem);
    return p;
}

/* ---- parser state ---- */

typedef struct parser {
    axir_lexer_t lx;
    axir_token_t tok;
    axon_axir_module_t *m;
    axon_axir_func_t *f;
    axon_axir_diag_t *diag;
    axon_status_t status;        /* AXON_OK until the first error */
    /* the current function's values by name: open addressing, power-of-two capacity */
    axon_axir_value_t **slots;
    size_t nslots, nvalues;
} parser_t;

static int fail_at(parser_t *p, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_at(parser_t *p, int line, int col, const char *fmt, ...) {
    if (p->status == AXON_OK) {
        va_list ap;
        va_start(ap, fmt);
        p->status = axir_vdiag(p->diag, line, col, fmt, ap);
        va_end(ap);
    }
    return 0;
}

static int oom(parser_t *p) {
    if (p->status == AXON_OK) {
        axir_diag(p->diag, p->tok.line, p->tok.col, "out of memory while parsing");
        p->status = AXON_ERROR_OUT_OF_MEMORY;
        axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axir_parse: out of memory at line %d", p->tok.line);
    }
    return 0;
}

static void next(parser_t *p) {
    p->tok = axir_lex_next(&p->lx);
    if (p->tok.kind == AXIR_T_ERROR) fail_at(p, p->tok.line, p->tok.col, "%s", p->lx.err);
}

static int expected(parser_t *p, const char *what) {
    char got[64];
    return fail_at(p, p->tok.line, p->tok.col, "expected %s, got %s", what,
                   axir_tok_describe(&p->tok, got, sizeof got));
}

static int accept(parser_t *p, axir_tok_kind_t kind) {
    if (p->tok.kind != kind) return 0;
    next(p);
    return p->status == AXON_OK;
}

static int expect(parser_t *p, axir_tok_kind_t kind, const char *what) {
    if (p->status != AXON_OK) return 0;
    if (p->tok.kind != kind) return expected(p, what);
    next(p);
    return p->status == AXON_OK;
}

static int tok_is(const axir_token_t *t, const char *word) {
    return t->kind == AXIR_T_NAME && strlen(word) == t->len && memcmp(t->text, word, t->len) == 0;
}

/* ---- value names ---- */

static uint64_t hash_name(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static axon_axir_value_t **value_slot(parser_t *p, const char *name, size_t len) {
    size_t mask = p->nslots - 1;
    for (size_t i = hash_name(name, len) & mask;; i = (i + 1) & mask) {
        axon_axir_value_t *v = p->slots[i];
        if (v == NULL || (strlen(v->name) == len && memcmp(v->name, name, len) == 0)) return &p->slots[i];
    }
}

static axon_axir_value_t *value_find(parser_t *p, const char *name, size_t len) {
    if (p->nslots == 0) return NULL;
    return *value_slot(p, name, len);
}

static int value_insert(parser_t *p, axon_axir_value_t *v) {
    if ((p->nvalues + 1) * 2 > p->nslots) {
        size_t n = p->nslots ? p->nslots * 2 : 64;
        axon_axir_value_t **old = p->slots;
        size_t old_n = p->nslots;
        p->slots = calloc(n, sizeof *p->slots);
        if (p->slots == NULL) {
            p->slots = old;
            return oom(p);
        }
        p->nslots = n;
        for (size_t i = 0; i < old_n; i++)
            if (old[i]) *value_slot(p, old[i]->name, strlen(old[i]->name)) = old[i];
        free(old);
    }
    *value_slot(p, v->name, strlen(v->name)) = v;
    p->nvalues++;
    return 1;
}

/* A new value named by token t (a VALUE token), unless the name is taken. */
static axon_axir_value_t *define_value(parser_t *p, const axir_token_t *t, const axon_axir_type_t *type,
                                       axon_axir_node_t *def, int index) {
    if (value_find(p, t->text, t->len)) {
        fail_at(p, t->line, t->col, "%%%.*s is defined twice", (int)t->len, t->text);
        return NULL;
    }
    const char *name = axon_axir_strdup(p->m, t->text, t->len);
    axon_axir_value_t *v = name ? axir_value_new(p->m, p->f, name, type, def, index) : NULL;
    if (v == NULL || !value_insert(p, v)) {
        oom(p);
        return NULL;
    }
    return v;
}

/* The value the current VALUE token names; advances. */
static axon_axir_value_t *use_value(parser_t *p) {
    if (p->tok.kind != AXIR_T_VALUE) {
        expected(p, "a value (%name)");
        return NULL;
    }
    axon_axir_value_t *v = value_find(p, p->tok.text, p->tok.len);
    if (v == NULL) {
        fail_at(p, p->tok.line, p->tok.col, "%%%.*s is not defined before this use", (int)p->tok.len, p->tok.text);
        return NULL;
    }
    next(p);
    return p->status == AXON_OK ? v : NULL;
}

/* A comma-separated list of value uses (at least one) into out: operands, return values. 0 on error. */
static int parse_values(parser_t *p, vec_t *out) {
    for (;;) {
        axon_axir_value_t *v = use_value(p);
        axon_axir_value_t **slot = v ? vec_push(out) : NULL;
        if (v == NULL || slot == NULL) {
            if (v) oom(p);
            return 0;
        }
        *slot = v;
        if (p->tok.kind != AXIR_T_COMMA) return 1;
        next(p);
        if (p->status != AXON_OK) return 0;
    }
}

/* ---- dimensions ---- */

typedef struct dim_ctx {
    int ops;
} dim_ctx_t;

static const axon_sym_expr_t *parse_sum(parser_t *p, dim_ctx_t *c, int depth);

static const axon_sym_expr_t *int_const(parser_t *p, int negate) {
    const axir_token_t t = p->tok;
    if (t.u > (uint64_t)INT64_MAX + (negate ? 1u : 0u)) {
        fail_at(p, t.line, t.col, "integer does not fit in int64");
        return NULL;
    }
    int64_t v = negate ? (t.u == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)t.u) : (int64_t)t.u;
    const axon_sym_expr_t *e = axon_sym_const(p->m, v);
    if (e == NULL) oom(p);
    next(p);
    return p->status == AXON_OK ? e : NULL;
}

static const axon_sym_expr_t *parse_atom(parser_t *p, dim_ctx_t *c, int depth) {
    axir_token_t t = p->tok;
    if (t.kind == AXIR_T_INT) return int_const(p, 0);
    if (t.kind == AXIR_T_MINUS) {
        next(p);
        if (p->tok.kind != AXIR_T_INT) {
            expected(p, "an integer after '-'");
            return NULL;
        }
        return int_const(p, 1);
    }
    if (t.kind == AXIR_T_LPAREN) {
        if (depth >= AXIR_MAX_DIM_DEPTH) {
            fail_at(p, t.line, t.col, "dimension nests parentheses deeper than %d", AXIR_MAX_DIM_DEPTH);
            return NULL;
        }
        next(p);
        const axon_sym_expr_t *e = parse_sum(p, c, depth + 1);
        if (e == NULL || !expect(p, AXIR_T_RPAREN, "')'")) return NULL;
        return e;
    }
    if (t.kind == AXIR_T_NAME) {
        if (axon_axir_dtype_lookup(t.text, t.len, NULL)) {
            fail_at(p, t.line, t.col, "dtype '%.*s' cannot name a symbolic dimension", (int)t.len, t.text);
            return NULL;
        }
        int32_t var = -1;
        for (int i = 0; i < p->f->num_symbols; i++)
            if (strlen(p->f->symbols[i]) == t.len && memcmp(p->f->symbols[i], t.text, t.len) == 0) var = i;
        if (var < 0) {
            const char *name = axon_axir_strdup(p->m, t.text, t.len);
            var = name ? axon_axir_func_symbol(p->m, p->f, name) : -1;
        }
        const axon_sym_expr_t *e = var >= 0 ? axon_sym_var(p->m, var) : NULL;
        if (e == NULL) {
            oom(p);
            return NULL;
        }
        next(p);
        return p->status == AXON_OK ? e : NULL;
    }
    expected(p, "a dimension (an integer, a symbol or '(')");
    return NULL;
}

static int count_op(parser_t *p, dim_ctx_t *c) {
    if (++c->ops > AXIR_MAX_DIM_OPS)
        return fail_at(p, p->tok.line, p->tok.col, "dimension has more than %d operators", AXIR_MAX_DIM_OPS);
    return 1;
}

static const axon_sym_expr_t *parse_product(parser_t *p, dim_ctx_t *c, int depth) {
    const axon_sym_expr_t *e = parse_atom(p, c, depth);
    while (e && (p->tok.kind == AXIR_T_STAR || p->tok.kind == AXIR_T_SLASH2 || p->tok.kind == AXIR_T_PERCENT)) {
        axon_sym_kind_t k = p->tok.kind == AXIR_T_STAR     ? AXON_SYM_MUL
                            : p->tok.kind == AXIR_T_SLASH2 ? AXON_SYM_FLOORDIV
                                                           : AXON_SYM_MOD;
        if (!count_op(p, c)) return NULL;
        next(p);
        const axon_sym_expr_t *r = parse_atom(p, c, depth);
        if (r == NULL) return NULL;
        e = axon_sym_binary(p->m, k, e, r);
        if (e == NULL) oom(p);
    }
    return e;
}

static const axon_sym_expr_t *parse_sum(parser_t *p, dim_ctx_t *c, int depth) {
    const axon_sym_expr_t *e = parse_product(p, c, depth);
    while (e && (p->tok.kind == AXIR_T_PLUS || p->tok.kind == AXIR_T_MINUS)) {
        axon_sym_kind_t k = p->tok.kind == AXIR_T_PLUS ? AXON_SYM_ADD : AXON_SYM_SUB;
        if (!count_op(p, c)) return NULL;
        next(p);
        const axon_sym_expr_t *r = parse_product(p, c, depth);
        if (r == NULL) return NULL;
        e = axon_sym_binary(p->m, k, e, r);
        if (e == NULL) oom(p);
    }
    return e;
}

/* One dimension; an expression without symbols becomes a static size. allow_negative for attribute lists. */
static int parse_dim(parser_t *p, axon_axir_dim_t *out, int allow_negative) {
    axir_token_t start = p->tok;
    dim_ctx_t c = {0};
    const axon_sym_expr_t *e = parse_sum(p, &c, 0);
    if (e == NULL) return 0;
    if (axir_sym_is_const(e)) {
        int64_t v;
        if (axon_sym_eval(e, NULL, 0, &v) != AXON_OK)
            return fail_at(p, start.line, start.col, "dimension cannot be evaluated: %s", axon_last_error());
        if (v < 0 && !allow_negative)
            return fail_at(p, start.line, start.col, "dimension %lld is negative", (long long)v);
        *out = axir_dim_static(v);
    } else {
        out->size = -1;
        out->expr = e;
    }
    return 1;
}

/* '[' dim (',' dim)* ']' into items (at most max), lexing in dimension mode in between. */
static int parse_dim_list(parser_t *p, axon_axir_dim_t *items, int max, int *count, int allow_negative,
                          const char *what) {
    *count = 0;
    if (p->tok.kind != AXIR_T_LBRACK) return expected(p, "'['");
    p->lx.dim_mode = 1;
    next(p);
    if (p->status != AXON_OK) return 0;
    if (p->tok.kind != AXIR_T_RBRACK) {
        for (;;) {
            if (*count == max)
                return fail_at(p, p->tok.line, p->tok.col, "%s has more than %d entries", what, max);
            if (!parse_dim(p, &items[*count], allow_negative)) return 0;
            (*count)++;
            if (p->tok.kind != AXIR_T_COMMA) break;
            next(p);
            if (p->status != AXON_OK) return 0;
        }
    }
    if (p->tok.kind != AXIR_T_RBRACK) return expected(p, "',' or ']'");
    p->lx.dim_mode = 0;
    next(p);
    return p->status == AXON_OK;
}

static int parse_type(parser_t *p, axon_axir_type_t *t) {
    if (p->status != AXON_OK) return 0;
    memset(t, 0, sizeof *t);
    if (p->tok.kind != AXIR_T_NAME || !axon_axir_dtype_lookup(p->tok.text, p->tok.len, &t->dtype))
        return expected(p, "a dtype (f32, bf16, i64, bool, ...)");
    next(p);
    if (p->status != AXON_OK) return 0;
    return parse_dim_list(p, t->dims, AXON_MAX_DIMS, &t->rank, 0, "a type");
}

/* ---- attributes ---- */

static const char *decode_string(parser_t *p, const axir_token_t *t) {
    char *s = axir_alloc(p->m, t->len + 1);
    if (s == NULL) {
        oom(p);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < t->len; i++) {
        char c = t->text[i];
        if (c == '\\' && i + 1 < t->len) {
            char e = t->text[++i];
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        }
        s[k++] = c;
    }
    s[k] = '\0';
    return s;
}

static int parse_attr_value(parser_t *p, axon_axir_attr_t *a) {
    axir_token_t t = p->tok;
    switch (t.kind) {
    case AXIR_T_INT:
    case AXIR_T_MINUS: {
        int neg = t.kind == AXIR_T_MINUS;
        if (neg) {
            next(p);
            if (p->status != AXON_OK) return 0;
            if (tok_is(&p->tok, "inf")) {
                a->kind = AXON_AXIR_ATTR_FLOAT;
                a->f = -__builtin_inf();
                next(p);
                return p->status == AXON_OK;
            }
            if (p->tok.kind == AXIR_T_FLOAT) {
                a->kind = AXON_AXIR_ATTR_FLOAT;
                a->f = -p->tok.f;
                next(p);
                return p->status == AXON_OK;
            }
            if (p->tok.kind != AXIR_T_INT) return expected(p, "a number after '-'");
        }
        const axon_sym_expr_t *e = int_const(p, neg);
        if (e == NULL) return 0;
        a->kind = AXON_AXIR_ATTR_INT;
        a->i = e->value;
        return 1;
    }
    case AXIR_T_FLOAT:
        a->kind = AXON_AXIR_ATTR_FLOAT;
        a->f = t.f;
        next(p);
        return p->status == AXON_OK;
    case AXIR_T_STRING:
        a->kind = AXON_AXIR_ATTR_STRING;
        a->s = decode_string(p, &t);
        if (a->s == NULL) return 0;
        next(p);
        return p->status == AXON_OK;
    case AXIR_T_LBRACK: {
        axon_axir_dim_t items[AXIR_MAX_LIST];
        if (!parse_dim_list(p, items, AXIR_MAX_LIST, &a->count, 1, "a list")) return 0;
        a->kind = AXON_AXIR_ATTR_LIST;
        if (a->count > 0) {
            axon_axir_dim_t *copy = axir_alloc(p->m, (size_t)a->count * sizeof *copy);
            if (copy == NULL) return oom(p);
            memcpy(copy, items, (size_t)a->count * sizeof *copy);
            a->items = copy;
        }
        return 1;
    }
    case AXIR_T_NAME:
        if (tok_is(&t, "true") || tok_is(&t, "false")) {
            a->kind = AXON_AXIR_ATTR_BOOL;
            a->i = tok_is(&t, "true");
        } else if (tok_is(&t, "inf") || tok_is(&t, "nan")) {
            a->kind = AXON_AXIR_ATTR_FLOAT;
            a->f = tok_is(&t, "inf") ? __builtin_inf() : __builtin_nan("");
        } else if (axon_axir_dtype_lookup(t.text, t.len, &a->dtype)) {
            a->kind = AXON_AXIR_ATTR_DTYPE;
        } else {
            return expected(p, "an attribute value (integer, float, true, false, string, dtype or list)");
        }
        next(p);
        return p->status == AXON_OK;
    default: return expected(p, "an attribute value (integer, float, true, false, string, dtype or list)");
    }
}

static int attr_name_cmp(const void *a, const void *b) {
    return strcmp(((const axon_axir_attr_t *)a)->name, ((const axon_axir_attr_t *)b)->name);
}

/* '{' attr (',' attr)* '}'. An INT given where the op's schema wants a FLOAT is read as that float. */
static int parse_attrs(parser_t *p, axon_axir_op_t op, vec_t *attrs) {
    const axir_op_info_t *info = axir_op_info(op);
    if (!expect(p, AXIR_T_LBRACE, "'{'")) return 0;
    if (p->tok.kind == AXIR_T_RBRACE) return expect(p, AXIR_T_RBRACE, "'}'");   /* `{}`: no attributes */
    for (;;) {
        axir_token_t name = p->tok;
        if (name.kind != AXIR_T_NAME) return expected(p, "an attribute name");
        for (int i = 0; i < attrs->n; i++) {
            const axon_axir_attr_t *prev = (const axon_axir_attr_t *)attrs->data + i;
            if (strlen(prev->name) == name.len && memcmp(prev->name, name.text, name.len) == 0)
                return fail_at(p, name.line, name.col, "%s: attribute %.*s is given twice", info->name,
                               (int)name.len, name.text);
        }
        axon_axir_attr_t *a = vec_push(attrs);
        if (a == NULL) return oom(p);
        a->name = axon_axir_strdup(p->m, name.text, name.len);
        if (a->name == NULL) return oom(p);
        next(p);
        if (!expect(p, AXIR_T_EQ, "'='") || !parse_attr_value(p, a)) return 0;
        for (int k = 0; k < AXIR_MAX_ATTR_SPECS && info->attrs[k].name; k++)
            if (strcmp(info->attrs[k].name, a->name) == 0 && a->kind == AXON_AXIR_ATTR_INT &&
                (info->attrs[k].kinds & (1u << AXON_AXIR_ATTR_FLOAT)) &&
                !(info->attrs[k].kinds & (1u << AXON_AXIR_ATTR_INT))) {
                a->kind = AXON_AXIR_ATTR_FLOAT;
                a->f = (double)a->i;
                a->i = 0;
            }
        if (p->tok.kind == AXIR_T_COMMA) {
            next(p);
            continue;
        }
        return expect(p, AXIR_T_RBRACE, "',' or '}'");
    }
}

/* ---- statements and functions ---- */

static int parse_statement(parser_t *p) {
    vec_t names = {.elem = sizeof(axir_token_t)}, operands = {.elem = sizeof(axon_axir_value_t *)};
    vec_t attrs = {.elem = sizeof(axon_axir_attr_t)}, types = {.elem = sizeof(axon_axir_type_t)};
    int ok = 0;
    for (;;) {
        axir_token_t *t = vec_push(&names);
        if (t == NULL) {
            oom(p);
            goto done;
        }
        *t = p->tok;
        next(p);
        if (p->status != AXON_OK) goto done;
        if (p->tok.kind != AXIR_T_COMMA) break;
        next(p);
        if (p->status != AXON_OK) goto done;
        if (p->tok.kind != AXIR_T_VALUE) {
            expected(p, "a value (%name)");
            goto done;
        }
    }
    if (!expect(p, AXIR_T_EQ, "'=' or ','")) goto done;
    axir_token_t op_tok = p->tok;
    if (op_tok.kind != AXIR_T_NAME) {
        expected(p, "an op name");
        goto done;
    }
    axon_axir_op_t op = axon_axir_op_lookup(op_tok.text, op_tok.len);
    if (op == AXON_AXIR_OP_INVALID) {
        fail_at(p, op_tok.line, op_tok.col, "unknown op '%.*s'", (int)op_tok.len, op_tok.text);
        goto done;
    }
    next(p);
    if (p->status != AXON_OK) goto done;
    const char *callee = NULL;
    if (p->tok.kind == AXIR_T_GLOBAL) {
        if (op != AXON_AXIR_OP_FUSED) {
            fail_at(p, p->tok.line, p->tok.col, "%s: only fused names a callee", axon_axir_op_name(op));
            goto done;
        }
        callee = axon_axir_strdup(p->m, p->tok.text, p->tok.len);
        if (callee == NULL) {
            oom(p);
            goto done;
        }
        next(p);
        if (p->status != AXON_OK) goto done;
    } else if (op == AXON_AXIR_OP_FUSED) {
        expected(p, "the callee of fused (@kernel)");
        goto done;
    }
    if (!expect(p, AXIR_T_LPAREN, "'('")) goto done;
    if (p->tok.kind != AXIR_T_RPAREN) {
        if (!parse_values(p, &operands)) goto done;
    }
    if (!expect(p, AXIR_T_RPAREN, "',' or ')'")) goto done;
    if (p->tok.kind == AXIR_T_LBRACE && !parse_attrs(p, op, &attrs)) goto done;
    if (!expect(p, AXIR_T_COLON, "':' and the result type")) goto done;
    axir_token_t types_tok = p->tok;
    if (accept(p, AXIR_T_LPAREN)) {
        for (;;) {
            axon_axir_type_t *t = vec_push(&types);
            if (t == NULL) {
                oom(p);
                goto done;
            }
            if (!parse_type(p, t)) goto done;
            if (p->tok.kind != AXIR_T_COMMA) break;
            next(p);
            if (p->status != AXON_OK) goto done;
        }
        if (!expect(p, AXIR_T_RPAREN, "',' or ')'")) goto done;
    } else {
        axon_axir_type_t *t = vec_push(&types);
        if (t == NULL) {
            oom(p);
            goto done;
        }
        if (!parse_type(p, t)) goto done;
    }
    if (types.n != names.n) {
        fail_at(p, types_tok.line, types_tok.col, "%s: %d value(s) defined but %d result type(s) given",
                axon_axir_op_name(op), names.n, types.n);
        goto done;
    }

    axon_axir_node_t *n = axir_alloc(p->m, sizeof *n);
    if (n == NULL) {
        oom(p);
        goto done;
    }
    n->op = op;
    n->callee = callee;
    n->line = op_tok.line;
    n->col = op_tok.col;
    n->num_operands = operands.n;
    n->operands = vec_to_arena(p->m, &operands);
    n->num_attrs = attrs.n;
    n->attrs = vec_to_arena(p->m, &attrs);
    n->results = axir_alloc(p->m, (size_t)names.n * sizeof *n->results);
    if ((operands.n && n->operands == NULL) || (attrs.n && n->attrs == NULL) || n->results == NULL) {
        oom(p);
        goto done;
    }
    if (n->num_attrs > 1) qsort(n->attrs, (size_t)n->num_attrs, sizeof *n->attrs, attr_name_cmp);
    for (int i = 0; i < names.n; i++) {
        const axir_token_t *t = (const axir_token_t *)names.data + i;
        n->results[i] = define_value(p, t, (const axon_axir_type_t *)types.data + i, n, i);
        if (n->results[i] == NULL) goto done;
        n->num_results = i + 1;
    }
    n->id = p->f->next_node_id++;
    axir_node_link(p->f, n, NULL);
    ok = 1;
done:
    free(names.data);
    free(operands.data);
    free(attrs.data);
    free(types.data);
    return ok;
}

static int parse_function(parser_t *p) {
    axir_token_t kw = p->tok;
    int is_kernel = tok_is(&kw, "kernel");
    if (!is_kernel && !tok_is(&kw, "func")) return expected(p, "'func' or 'kernel'");
    next(p);
    if (p->status != AXON_OK) return 0;
    if (p->tok.kind != AXIR_T_GLOBAL) return expected(p, "a function name (@name)");
    axir_token_t name = p->tok;
    for (int i = 0; i < p->m->num_funcs; i++) {
        const char *other = p->m->funcs[i]->name;
        if (strlen(other) == name.len && memcmp(other, name.text, name.len) == 0)
            return fail_at(p, name.line, name.col, "function @%.*s is defined twice", (int)name.len, name.text);
    }
    axon_axir_func_t *f = axir_alloc(p->m, sizeof *f);
    if (f == NULL || (f->name = axon_axir_strdup(p->m, name.text, name.len)) == NULL ||
        axir_module_append(p->m, f) != AXON_OK)
        return oom(p);
    f->is_kernel = is_kernel;
    f->line = kw.line;
    f->col = kw.col;
    p->f = f;
    if (p->nslots) memset(p->slots, 0, p->nslots * sizeof *p->slots);
    p->nvalues = 0;
    next(p);

    vec_t params = {.elem = sizeof(axon_axir_value_t *)}, types = {.elem = sizeof(axon_axir_type_t)};
    vec_t rets = {.elem = sizeof(axon_axir_value_t *)};
    int ok = 0;
    if (!expect(p, AXIR_T_LPAREN, "'('")) goto done;
    if (p->tok.kind != AXIR_T_RPAREN) {
        for (;;) {
            if (p->tok.kind != AXIR_T_VALUE) {
                expected(p, "a parameter (%name: type)");
                goto done;
            }
            axir_token_t pname = p->tok;
            next(p);
            axon_axir_type_t t;
            if (!expect(p, AXIR_T_COLON, "':' and the parameter's type") || !parse_type(p, &t)) goto done;
            axon_axir_value_t **slot = vec_push(&params);
            if (slot == NULL) {
                oom(p);
                goto done;
            }
            if ((*slot = define_value(p, &pname, &t, NULL, params.n - 1)) == NULL) goto done;
            if (p->tok.kind != AXIR_T_COMMA) break;
            next(p);
            if (p->status != AXON_OK) goto done;
        }
    }
    if (!expect(p, AXIR_T_RPAREN, "',' or ')'") || !expect(p, AXIR_T_ARROW, "'->'") ||
        !expect(p, AXIR_T_LPAREN, "'(' and the result types"))
        goto done;
    if (p->tok.kind != AXIR_T_RPAREN) {
        for (;;) {
            axon_axir_type_t *t = vec_push(&types);
            if (t == NULL) {
                oom(p);
                goto done;
            }
            if (!parse_type(p, t)) goto done;
            if (p->tok.kind != AXIR_T_COMMA) break;
            next(p);
            if (p->status != AXON_OK) goto done;
        }
    }
    if (!expect(p, AXIR_T_RPAREN, "',' or ')'") || !expect(p, AXIR_T_LBRACE, "'{'")) goto done;
    f->num_params = params.n;
    f->params = vec_to_arena(p->m, &params);
    if (params.n && f->params == NULL) {
        oom(p);
        goto done;
    }
    while (p->tok.kind == AXIR_T_VALUE)
        if (!parse_statement(p)) goto done;
    if (p->status != AXON_OK) goto done;
    axir_token_t ret = p->tok;
    if (!tok_is(&ret, "return")) {
        expected(p, "a statement (%name = op(...) : type) or 'return'");
        goto done;
    }
    next(p);
    if (p->tok.kind == AXIR_T_VALUE) {
        if (!parse_values(p, &rets)) goto done;
    }
    if (!expect(p, AXIR_T_RBRACE, "',' or '}'")) goto done;
    if (rets.n != types.n) {
        fail_at(p, ret.line, ret.col, "@%s: return gives %d value(s), the signature declares %d", f->name, rets.n,
                types.n);
        goto done;
    }
    f->num_results = types.n;
    f->result_types = vec_to_arena(p->m, &types);
    f->returns = vec_to_arena(p->m, &rets);
    if (types.n && (f->result_types == NULL || f->returns == NULL)) {
        oom(p);
        goto done;
    }
    axon_axir_func_recompute_uses(f);
    ok = 1;
done:
    free(params.data);
    free(types.data);
    free(rets.data);
    return ok;
}

axon_status_t axon_axir_parse(const char *text, size_t len, axon_axir_module_t **out, axon_axir_diag_t *diag) {
    if (diag) memset(diag, 0, sizeof *diag);
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axir_parse: out is NULL");
    *out = NULL;
    if (text == NULL && len > 0) return axon_fail(AXON_ERROR_INVALID_ARG, "axir_parse: text is NULL");
    parser_t p;
    memset(&p, 0, sizeof p);
    p.diag = diag;
    axon_status_t s = axon_axir_module_create(&p.m);
    if (s != AXON_OK) return s;
    axir_lex_init(&p.lx, text, len);
    next(&p);
    if (p.status == AXON_OK) {
        if (!tok_is(&p.tok, "axir")) {
            expected(&p, "'axir 1' (the version line)");
        } else {
            next(&p);
            if (p.status == AXON_OK && p.tok.kind != AXIR_T_INT) {
                expected(&p, "the AXIR version number");
            } else if (p.status == AXON_OK && p.tok.u != AXON_AXIR_VERSION) {
                fail_at(&p, p.tok.line, p.tok.col, "AXIR version %.*s is not supported: this build reads version %d",
                        (int)(p.tok.len > 20 ? 20 : p.tok.len), p.tok.text, AXON_AXIR_VERSION);
            } else if (p.status == AXON_OK) {
                next(&p);
                while (p.status == AXON_OK && p.tok.kind != AXIR_T_EOF) parse_function(&p);
            }
        }
    }
    free(p.slots);
    if (p.status == AXON_OK) p.status = axon_axir_verify(p.m, diag);
    if (p.status != AXON_OK) {
        axon_axir_module_destroy(p.m);
        return p.status;
    }
    *out = p.m;
    return AXON_OK;
}
