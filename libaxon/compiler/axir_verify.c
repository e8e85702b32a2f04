/* The AXIR verifier: the rules of docs/axir.md that the grammar alone does not enforce. It walks each function in
 * program order (so a use before its definition is caught for modules that passes built, not only for text), checks
 * names, types, attributes against the op table's schema, and compares every declared result type with the one the
 * op computes (axir_infer.c). The first problem is reported, located at the node (or the function) it concerns. */
#include <stdlib.h>
#include <string.h>

#include "axir_impl.h"
#include "internal.h"

typedef struct vctx {
    const axon_axir_module_t *m;
    axon_axir_module_t *scratch;
    axon_axir_diag_t *diag;
    axon_status_t status;
    const axon_axir_func_t *f;
    const axon_axir_value_t **by_id;     /* the value defined with each id so far */
    int32_t nids;
    const char **names;                  /* open-addressing set of the function's value names */
    size_t nnames;
} vctx_t;

static int vfail(vctx_t *v, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int vfail(vctx_t *v, int line, int col, const char *fmt, ...) {
    if (v->status == AXON_OK) {
        va_list ap;
        va_start(ap, fmt);
        v->status = axir_vdiag(v->diag, line, col, fmt, ap);
        va_end(ap);
    }
    return 0;
}

/* ---- names ---- */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* 1 if name was new (and is now in the set). The set is sized for every value of the function up front. */
static int name_add(vctx_t *v, const char *name) {
    size_t mask = v->nnames - 1;
    for (size_t i = hash_str(name) & mask;; i = (i + 1) & mask) {
        if (v->names[i] == NULL) {
            v->names[i] = name;
            return 1;
        }
        if (strcmp(v->names[i], name) == 0) return 0;
    }
}

/* ---- types ---- */

static int expr_ok(const axon_sym_expr_t *e, int num_symbols, int depth) {
    if (e == NULL || depth > 4 * AXIR_MAX_DIM_OPS) return 0;
    switch (e->kind) {
    case AXON_SYM_CONST: return 1;
    case AXON_SYM_VAR: return e->var >= 0 && e->var < num_symbols;
    case AXON_SYM_ADD: case AXON_SYM_SUB: case AXON_SYM_MUL: case AXON_SYM_FLOORDIV: case AXON_SYM_MOD:
        return expr_ok(e->lhs, num_symbols, depth + 1) && expr_ok(e->rhs, num_symbols, depth + 1);
    }
    return 0;
}

static int dim_ok(const axon_axir_func_t *f, axon_axir_dim_t d, int allow_negative) {
    if (d.expr) return expr_ok(d.expr, f->num_symbols, 0);
    return allow_negative || d.size >= 0;
}

static int type_ok(vctx_t *v, const axon_axir_type_t *t, int line, int col, const char *what, const char *name) {
    if ((int)t->dtype < 0 || t->dtype >= AXON_DTYPE_COUNT)
        return vfail(v, line, col, "%s%s has an unknown dtype %d", what, name, (int)t->dtype);
    if (t->dtype == AXON_UINT16 || t->dtype == AXON_UINT32 || t->dtype == AXON_UINT64 || t->dtype == AXON_COMPLEX32)
        return vfail(v, line, col, "%s%s has dtype %s, a storage dtype that AXIR programs do not take", what, name,
                     axon_axir_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > AXON_MAX_DIMS)
        return vfail(v, line, col, "%s%s has rank %d, outside [0, %d]", what, name, t->rank, AXON_MAX_DIMS);
    for (int i = 0; i < t->rank; i++)
        if (!dim_ok(v->f, t->dims[i], 0))
            return vfail(v, line, col, "%s%s: dimension %d is negative or names an unknown symbol", what, name, i);
    return 1;
}

/* 1 if the declared dims agree with the inferred ones. Forms with // or % cannot be compared reliably, so a
 * difference there is let through (the header's contract: report only what is provably different). */
static int types_agree(vctx_t *v, const axon_axir_type_t *declared, const axon_axir_type_t *inferred) {
    if (declared->dtype != inferred->dtype || declared->rank != inferred->rank) return 0;
    for (int i = 0; i < declared->rank; i++) {
        axon_axir_dim_t a = declared->dims[i], b = inferred->dims[i];
        if (axon_axir_dim_equal(v->scratch, a, b)) continue;
        if ((a.expr && axir_sym_has_div(a.expr)) || (b.expr && axir_sym_has_div(b.expr))) continue;
        return 0;
    }
    return 1;
}

/* ---- values ---- */

static int define(vctx_t *v, const axon_axir_value_t *val, int line, int col) {
    if (!axir_name_ok(val->name))
        return vfail(v, line, col, "@%s: value name '%s' is not [A-Za-z0-9_.]+ of at most %d bytes", v->f->name,
                     val->name ? val->name : "(null)", AXIR_MAX_NAME);
    if (!name_add(v, val->name)) return vfail(v, line, col, "@%s: %%%s is defined twice", v->f->name, val->name);
    if (val->id < 0 || val->id >= v->nids || v->by_id[val->id])
        return vfail(v, line, col, "@%s: %%%s has id %d, which is outside [0, next_value_id) or taken", v->f->name,
                     val->name, (int)val->id);
    v->by_id[val->id] = val;
    return type_ok(v, &val->type, line, col, "%", val->name);
}

static int is_defined(const vctx_t *v, const axon_axir_value_t *val) {
    return val && val->id >= 0 && val->id < v->nids && v->by_id[val->id] == val;
}

/* ---- attributes ---- */

static const char *kind_text(axon_axir_attr_kind_t k) {
    static const char *const names[] = {"an integer", "a float", "a bool", "a string", "a dtype", "a list"};
    return (int)k >= 0 && k <= AXON_AXIR_ATTR_LIST ? names[k] : "an unknown kind";
}

/* The values a string attribute may take, '|'-separated, or NULL when any string goes. */
static const char *string_choices(axon_axir_op_t op, const char *attr) {
    if (op == AXON_AXIR_OP_GELU && strcmp(attr, "approximate") == 0) return "none|tanh";
    if (op == AXON_AXIR_OP_DIV && strcmp(attr, "rounding_mode") == 0) return "trunc|floor";
    if (strcmp(attr, "reduction") == 0) return "none|mean|sum";   /* the losses */
    return NULL;
}

static int is_choice(const char *s, const char *choices) {
    const size_t len = strlen(s);
    for (const char *c = choices; c;) {
        const char *bar = strchr(c, '|');
        const size_t l = bar ? (size_t)(bar - c) : strlen(c);
        if (l == len && strncmp(s, c, l) == 0) return 1;
        c = bar ? bar + 1 : NULL;
    }
    return 0;
}

static int check_attrs(vctx_t *v, const axon_axir_node_t *n, const axir_op_info_t *info) {
    for (int i = 0; i < n->num_attrs; i++) {
        const axon_axir_attr_t *a = &n->attrs[i];
        if (a->name == NULL) return vfail(v, n->line, n->col, "%s: attribute %d has no name", info->name, i);
        if (i > 0 && strcmp(n->attrs[i - 1].name, a->name) >= 0)
            return vfail(v, n->line, n->col,
                         strcmp(n->attrs[i - 1].name, a->name) == 0 ? "%s: attribute %s is given twice"
                                                                    : "%s: attributes are not sorted by name at %s",
                         info->name, a->name);
        const axir_attr_spec_t *spec = NULL;
        for (int k = 0; k < AXIR_MAX_ATTR_SPECS && info->attrs[k].name; k++)
            if (strcmp(info->attrs[k].name, a->name) == 0) spec = &info->attrs[k];
        if (spec == NULL) return vfail(v, n->line, n->col, "%s: unknown attribute %s", info->name, a->name);
        if ((int)a->kind < 0 || a->kind > AXON_AXIR_ATTR_LIST || !(spec->kinds & (1u << a->kind))) {
            char want[80] = "";
            int first = 1;
            for (int k = 0; k <= AXON_AXIR_ATTR_LIST; k++)
                if (spec->kinds & (1u << k)) {
                    strcat(want, first ? "" : " or ");
                    strcat(want, kind_text((axon_axir_attr_kind_t)k));
                    first = 0;
                }
            return vfail(v, n->line, n->col, "%s: attribute %s must be %s, got %s", info->name, a->name, want,
                         kind_text(a->kind));
        }
        if (a->kind == AXON_AXIR_ATTR_STRING && a->s == NULL)
            return vfail(v, n->line, n->col, "%s: attribute %s has a NULL string", info->name, a->name);
        if (a->kind == AXON_AXIR_ATTR_BOOL && a->i != 0 && a->i != 1)
            return vfail(v, n->line, n->col, "%s: attribute %s is a bool holding %lld", info->name, a->name,
                         (long long)a->i);
        if (a->kind == AXON_AXIR_ATTR_LIST) {
            if (a->count < 0 || a->count > AXIR_MAX_LIST || (a->count > 0 && a->items == NULL))
                return vfail(v, n->line, n->col, "%s: attribute %s has %d items (at most %d)", info->name, a->name,
                             a->count, AXIR_MAX_LIST);
            for (int k = 0; k < a->count; k++)
                if (!dim_ok(v->f, a->items[k], 1))
                    return vfail(v, n->line, n->col, "%s: attribute %s, item %d names an unknown symbol", info->name,
                                 a->name, k);
        }
        const char *choices = string_choices(n->op, a->name);
        if (choices && !is_choice(a->s, choices))
            return vfail(v, n->line, n->col, "%s: attribute %s is \"%s\", expected one of %s", info->name, a->name,
                         a->s, choices);
    }
    for (int k = 0; k < AXIR_MAX_ATTR_SPECS && info->attrs[k].name; k++)
        if (info->attrs[k].required && axon_axir_node_attr(n, info->attrs[k].name) == NULL)
            return vfail(v, n->line, n->col, "%s: missing attribute %s", info->name, info->attrs[k].name);
    return 1;
}

/* ---- calls ---- */

/* The callee's types in the caller's terms: each kernel symbol maps to the caller's dim at the position where a
 * kernel parameter has that symbol alone. */
static int check_call(vctx_t *v, const axon_axir_node_t *n, axon_axir_type_t *out) {
    const axon_axir_func_t *k = axon_axir_module_find(v->m, n->callee);
    if (k == NULL) return vfail(v, n->line, n->col, "fused: no function @%s in the module", n->callee);
    if (!k->is_kernel) return vfail(v, n->line, n->col, "fused: @%s is a func, not a kernel", n->callee);
    if (v->f->is_kernel) return vfail(v, n->line, n->col, "fused: kernel @%s may not call kernels", v->f->name);
    if (n->num_operands != k->num_params)
        return vfail(v, n->line, n->col, "fused @%s: takes %d operand(s) (the kernel's parameters), got %d",
                     n->callee, k->num_params, n->num_operands);
    if (n->num_results != k->num_results)
        return vfail(v, n->line, n->col, "fused @%s: defines %d result(s), the kernel returns %d", n->callee,
                     n->num_results, k->num_results);
    axon_axir_dim_t *map = k->num_symbols ? malloc((size_t)k->num_symbols * sizeof *map) : NULL;
    if (k->num_symbols && map == NULL) return vfail(v, n->line, n->col, "fused: out of memory");
    for (int i = 0; i < k->num_symbols; i++) map[i] = axir_dim_static(-1);
    int ok = 1;
    for (int i = 0; i < k->num_params && ok; i++) {
        const axon_axir_type_t *pt = &k->params[i]->type, *ot = &n->operands[i]->type;
        for (int j = 0; j < pt->rank && j < ot->rank; j++) {
            const axon_sym_expr_t *e = pt->dims[j].expr;
            if (e && e->kind == AXON_SYM_VAR && e->var >= 0 && e->var < k->num_symbols && map[e->var].expr == NULL &&
                map[e->var].size < 0)
                map[e->var] = ot->dims[j];
        }
    }
    for (int i = 0; i < k->num_params + k->num_results && ok; i++) {
        int is_param = i < k->num_params;
        const axon_axir_type_t *kt = is_param ? &k->params[i]->type : &k->result_types[i - k->num_params];
        axon_axir_type_t t = *kt;
        for (int j = 0; j < t.rank && ok; j++) {
            if (kt->dims[j].expr == NULL) continue;
            const axon_sym_expr_t *e = axir_sym_subst(v->scratch, kt->dims[j].expr, map, k->num_symbols);
            if (e == NULL) ok = vfail(v, n->line, n->col, "fused @%s: the kernel's symbols are not all bound by its "
                                      "parameters", n->callee);
            else t.dims[j] = axir_dim_from_expr(v->scratch, e);
        }
        if (!ok) break;
        if (!is_param) {
            out[i - k->num_params] = t;
            continue;
        }
        if (!types_agree(v, &t, &n->operands[i]->type)) {
            char sa[160], sb[160];
            ok = vfail(v, n->line, n->col, "fused @%s: operand %d is %s, the kernel's parameter %%%s is %s",
                       n->callee, i + 1, axir_type_str(v->f, &n->operands[i]->type, sa, sizeof sa),
                       k->params[i]->name, axir_type_str(v->f, &t, sb, sizeof sb));
        }
    }
    free(map);
    return ok;
}

/* ---- nodes and functions ---- */

/* An op that writes into operand 0's storage: it must be a parameter (caller memory, not a value another node
 * computed) that nothing else reads or returns, so no read of the old contents can be ordered after the write. */
static int check_in_place(vctx_t *v, const axon_axir_node_t *n, const char *name) {
    const axon_axir_value_t *x = n->operands[0];
    if (x->def != NULL)
        return vfail(v, n->line, n->col, "%s: operand 1 (%%%s) must be a parameter of @%s: the op writes into it", name,
                     x->name, v->f->name);
    int uses = 0;
    for (const axon_axir_node_t *o = v->f->first; o; o = o->next)
        for (int k = 0; k < o->num_operands; k++) uses += o->operands[k] == x;
    for (int k = 0; k < v->f->num_results; k++) uses += v->f->returns[k] == x;
    if (uses != 1)
        return vfail(v, n->line, n->col,
                     "%s: parameter %%%s is written in place, so this must be its only use (it has %d); read the "
                     "result instead", name, x->name, uses);
    return 1;
}

static int check_node(vctx_t *v, const axon_axir_node_t *n) {
    const axir_op_info_t *info = axir_op_info(n->op);
    if (info == NULL) return vfail(v, n->line, n->col, "@%s: node %d has unknown op %d", v->f->name, (int)n->id,
                                   (int)n->op);
    const char *name = info->name;
    if ((n->callee != NULL) != (n->op == AXON_AXIR_OP_FUSED))
        return vfail(v, n->line, n->col, n->callee ? "%s: only fused names a callee" : "%s: needs a callee (@kernel)",
                     name);
    if (n->num_operands < info->min_operands || (info->max_operands >= 0 && n->num_operands > info->max_operands)) {
        if (info->max_operands < 0)
            return vfail(v, n->line, n->col, "%s: takes at least %d operand(s), got %d", name, info->min_operands,
                         n->num_operands);
        if (info->min_operands == info->max_operands)
            return vfail(v, n->line, n->col, "%s: takes %d operand(s), got %d", name, info->min_operands,
                         n->num_operands);
        return vfail(v, n->line, n->col, "%s: takes %d to %d operands, got %d", name, info->min_operands,
                     info->max_operands, n->num_operands);
    }
    if (info->num_results >= 0 && n->num_results != info->num_results)
        return vfail(v, n->line, n->col, "%s: defines %d result(s), expected %d", name, n->num_results,
                     info->num_results);
    if (n->num_results < 1 || n->results == NULL)
        return vfail(v, n->line, n->col, "%s: defines no result", name);
    if (n->num_operands > 0 && n->operands == NULL)
        return vfail(v, n->line, n->col, "%s: operands array is NULL", name);
    for (int i = 0; i < n->num_operands; i++)
        if (!is_defined(v, n->operands[i]))
            return vfail(v, n->line, n->col, "%s: operand %d (%%%s) is not defined before this node", name, i + 1,
                         n->operands[i] && n->operands[i]->name ? n->operands[i]->name : "?");
    if (n->num_attrs < 0 || (n->num_attrs > 0 && n->attrs == NULL))
        return vfail(v, n->line, n->col, "%s: attrs array is NULL", name);
    if (!check_attrs(v, n, info)) return 0;
    if (n->op == AXON_AXIR_OP_INDEX_COPY_INTO && !check_in_place(v, n, name)) return 0;

    axon_axir_type_t inferred[8];
    if (n->num_results > (int)(sizeof inferred / sizeof inferred[0]))
        return vfail(v, n->line, n->col, "%s: defines %d results, more than 8", name, n->num_results);
    for (int i = 0; i < n->num_results; i++) {
        if (n->results[i] == NULL) return vfail(v, n->line, n->col, "%s: result %d is NULL", name, i + 1);
        inferred[i] = n->results[i]->type;
    }
    for (int i = 0; i < n->num_results; i++)
        if (!type_ok(v, &n->results[i]->type, n->line, n->col, "%", n->results[i]->name)) return 0;
    if (n->op == AXON_AXIR_OP_FUSED) {
        if (!check_call(v, n, inferred)) return 0;
    } else {
        axir_infer_ctx_t c;
        c.scratch = v->scratch;
        c.m = v->m;
        c.f = v->f;
        c.op = name;
        c.msg[0] = '\0';
        if (!axir_infer(&c, n, inferred)) return vfail(v, n->line, n->col, "%s", c.msg);
    }
    for (int i = 0; i < n->num_results; i++) {
        const axon_axir_value_t *r = n->results[i];
        if (r->def != n || r->index != i)
            return vfail(v, n->line, n->col, "%s: result %d (%%%s) does not point back at its node", name, i + 1,
                         r->name);
        if (!types_agree(v, &r->type, &inferred[i])) {
            char sa[160], sb[160];
            return vfail(v, n->line, n->col, "%s: result %d is declared %s but the op gives %s", name, i + 1,
                         axir_type_str(v->f, &r->type, sa, sizeof sa), axir_type_str(v->f, &inferred[i], sb, sizeof sb));
        }
    }
    for (int i = 0; i < n->num_results; i++)
        if (!define(v, n->results[i], n->line, n->col)) return 0;
    return 1;
}

static int check_symbols(vctx_t *v, const axon_axir_func_t *f) {
    for (int s = 0; s < f->num_symbols; s++) {
        if (!axir_symbol_name_ok(f->symbols[s]))
            return vfail(v, f->line, f->col, "@%s: symbol '%s' is not a valid name", f->name,
                         f->symbols[s] ? f->symbols[s] : "(null)");
        for (int t = 0; t < s; t++)
            if (strcmp(f->symbols[s], f->symbols[t]) == 0)
                return vfail(v, f->line, f->col, "@%s: symbol %s appears twice in the symbol table", f->name,
                             f->symbols[s]);
        int bound = 0;
        for (int i = 0; i < f->num_params && !bound; i++)
            for (int j = 0; j < f->params[i]->type.rank && !bound; j++) {
                const axon_sym_expr_t *e = f->params[i]->type.dims[j].expr;
                bound = e && e->kind == AXON_SYM_VAR && e->var == s;
            }
        if (!bound)
            return vfail(v, f->line, f->col,
                         "@%s: symbol %s is not bound: no parameter has a dimension that is %s alone", f->name,
                         f->symbols[s], f->symbols[s]);
    }
    return 1;
}

static int check_func(vctx_t *v, const axon_axir_func_t *f) {
    v->f = f;
    if (!axir_name_ok(f->name))
        return vfail(v, f->line, f->col, "function name '%s' is not [A-Za-z0-9_.]+ of at most %d bytes",
                     f->name ? f->name : "(null)", AXIR_MAX_NAME);
    if (f->num_params < 0 || (f->num_params > 0 && f->params == NULL) || f->num_results < 0 ||
        (f->num_results > 0 && (f->result_types == NULL || f->returns == NULL)) || f->num_symbols < 0 ||
        (f->num_symbols > 0 && f->symbols == NULL) || f->next_value_id < 0)
        return vfail(v, f->line, f->col, "@%s: inconsistent counts and arrays (a builder was bypassed)", f->name);
    /* sizes: every value's id is below next_value_id, and names fit a set twice the value count */
    size_t nvalues = (size_t)f->num_params;
    for (const axon_axir_node_t *n = f->first; n; n = n->next) nvalues += n->num_results > 0 ? (size_t)n->num_results : 0;
    v->nids = f->next_value_id;
    v->by_id = calloc((size_t)v->nids + 1, sizeof *v->by_id);
    for (v->nnames = 16; v->nnames < 2 * nvalues + 2; v->nnames *= 2) {}
    v->names = calloc(v->nnames, sizeof *v->names);
    if (v->by_id == NULL || v->names == NULL) {
        v->status = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axir_verify: @%s with %zu values", f->name, nvalues);
        return 0;
    }
    for (int i = 0; i < f->num_params; i++) {
        const axon_axir_value_t *p = f->params[i];
        if (p == NULL) return vfail(v, f->line, f->col, "@%s: parameter %d is NULL", f->name, i + 1);
        if (p->def != NULL || p->index != i)
            return vfail(v, f->line, f->col, "@%s: parameter %%%s is not marked as parameter %d", f->name, p->name, i);
        if (!define(v, p, f->line, f->col)) return 0;
    }
    if (!check_symbols(v, f)) return 0;
    for (int i = 0; i < f->num_results; i++)
        if (!type_ok(v, &f->result_types[i], f->line, f->col, "result type ", "")) return 0;
    const axon_axir_node_t *prev = NULL;
    for (const axon_axir_node_t *n = f->first; n; prev = n, n = n->next) {
        if (n->prev != prev) return vfail(v, n->line, n->col, "@%s: broken node list", f->name);
        if (!check_node(v, n)) return 0;
    }
    if (f->last != prev) return vfail(v, f->line, f->col, "@%s: last does not end the node list", f->name);
    for (int i = 0; i < f->num_results; i++) {
        const axon_axir_value_t *r = f->returns[i];
        if (!is_defined(v, r))
            return vfail(v, f->line, f->col, "@%s: returned value %d (%%%s) is not defined in the function", f->name,
                         i + 1, r && r->name ? r->name : "?");
        if (!types_agree(v, &f->result_types[i], &r->type)) {
            char sa[160], sb[160];
            return vfail(v, f->line, f->col, "@%s: returns %%%s of type %s where the signature declares %s", f->name,
                         r->name, axir_type_str(f, &r->type, sa, sizeof sa),
                         axir_type_str(f, &f->result_types[i], sb, sizeof sb));
        }
    }
    return 1;
}

axon_status_t axon_axir_verify(const axon_axir_module_t *m, axon_axir_diag_t *diag) {
    if (diag) memset(diag, 0, sizeof *diag);
    if (m == NULL) return axir_diag(diag, 0, 0, "axir_verify: module is NULL");
    vctx_t v;
    memset(&v, 0, sizeof v);
    v.m = m;
    v.diag = diag;
    if (axon_axir_module_create(&v.scratch) != AXON_OK) return AXON_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < m->num_funcs && v.status == AXON_OK; i++) {
        const axon_axir_func_t *f = m->funcs[i];
        for (int j = 0; j < i; j++)
            if (f->name && m->funcs[j]->name && strcmp(f->name, m->funcs[j]->name) == 0) {
                vfail(&v, f->line, f->col, "function @%s is defined twice", f->name);
                break;
            }
        if (v.status == AXON_OK) check_func(&v, f);
        free(v.by_id);
        free(v.names);
        v.by_id = NULL;
        v.names = NULL;
    }
    axon_axir_module_destroy(v.scratch);
    return v.status;
}
