/* Builders: the only way passes and front ends that skip the text form change a module. Everything is allocated in
 * the module's arena; nothing is ever freed on its own (an erased node stays there, unlinked). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axir_impl.h"
#include "internal.h"

axon_axir_func_t *axon_axir_func_add(axon_axir_module_t *m, const char *name, int is_kernel) {
    if (m == NULL || name == NULL || axon_axir_module_find(m, name) != NULL) return NULL;
    axon_axir_func_t *f = axir_alloc(m, sizeof *f);
    if (f == NULL) return NULL;
    f->name = axon_axir_strdup(m, name, strlen(name));
    f->is_kernel = is_kernel ? 1 : 0;
    if (f->name == NULL || axir_module_append(m, f) != AXON_OK) return NULL;
    return f;
}

int32_t axon_axir_func_symbol(axon_axir_module_t *m, axon_axir_func_t *f, const char *name) {
    if (m == NULL || f == NULL || name == NULL) return -1;
    for (int i = 0; i < f->num_symbols; i++)
        if (strcmp(f->symbols[i], name) == 0) return i;
    const char **syms = axir_alloc(m, (size_t)(f->num_symbols + 1) * sizeof *syms);
    const char *copy = axon_axir_strdup(m, name, strlen(name));
    if (syms == NULL || copy == NULL) return -1;
    if (f->num_symbols) memcpy(syms, f->symbols, (size_t)f->num_symbols * sizeof *syms);
    syms[f->num_symbols] = copy;
    f->symbols = syms;
    return f->num_symbols++;
}

/* The number an all-digit name spells (at most 18 digits), else -1. */
static int64_t numeric_name(const char *s) {
    int64_t v = 0;
    int n = 0;
    for (; s[n]; n++) {
        if (s[n] < '0' || s[n] > '9' || n >= 18) return -1;
        v = v * 10 + (s[n] - '0');
    }
    return n ? v : -1;
}

/* f's slot in m's table of largest numeric names, filled by one scan of f the first time. */
static int64_t *max_numeric_slot(axon_axir_module_t *m, const axon_axir_func_t *f) {
    int i = 0;
    while (i < m->num_funcs && m->funcs[i] != f) i++;
    if (i == m->num_funcs) return NULL;
    int64_t *slot = &m->max_numeric_name[i];
    if (*slot == -2) {
        int64_t best = -1, v;
        for (int k = 0; k < f->num_params; k++)
            if ((v = numeric_name(f->params[k]->name)) > best) best = v;
        for (const axon_axir_node_t *n = f->first; n; n = n->next)
            for (int k = 0; k < n->num_results; k++)
                if ((v = numeric_name(n->results[k]->name)) > best) best = v;
        *slot = best;
    }
    return slot;
}

axon_axir_value_t *axir_value_new(axon_axir_module_t *m, axon_axir_func_t *f, const char *name,
                                  const axon_axir_type_t *type, axon_axir_node_t *def, int index) {
    axon_axir_value_t *v = axir_alloc(m, sizeof *v);
    if (v == NULL) return NULL;
    if (name == NULL) {
        /* a fresh "%<n>": the value's id, or the next number above every all-digit name of f */
        int64_t *max_numeric = max_numeric_slot(m, f);
        int64_t k = f->next_value_id;
        if (max_numeric && *max_numeric >= k) k = *max_numeric + 1;
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)k);
        name = axon_axir_strdup(m, buf, strlen(buf));
        if (name == NULL) return NULL;
    }
    /* keep the table current once it exists (the parser names every value before anyone asks for a fresh one) */
    int64_t num = numeric_name(name);
    if (num >= 0) {
        for (int i = 0; i < m->num_funcs; i++)
            if (m->funcs[i] == f && m->max_numeric_name[i] != -2 && num > m->max_numeric_name[i])
                m->max_numeric_name[i] = num;
    }
    v->name = name;
    if (type) v->type = *type;
    v->def = def;
    v->index = index;
    v->id = f->next_value_id++;
    return v;
}

axon_axir_value_t *axon_axir_func_add_param(axon_axir_module_t *m, axon_axir_func_t *f, const char *name,
                                            const axon_axir_type_t *type) {
    if (m == NULL || f == NULL || type == NULL) return NULL;
    const char *copy = NULL;
    if (name) {
        copy = axon_axir_strdup(m, name, strlen(name));
        if (copy == NULL) return NULL;
    }
    axon_axir_value_t **params = axir_alloc(m, (size_t)(f->num_params + 1) * sizeof *params);
    if (params == NULL) return NULL;
    axon_axir_value_t *v = axir_value_new(m, f, copy, type, NULL, f->num_params);
    if (v == NULL) return NULL;
    if (f->num_params) memcpy(params, f->params, (size_t)f->num_params * sizeof *params);
    params[f->num_params] = v;
    f->params = params;
    f->num_params++;
    return v;
}

axon_status_t axon_axir_func_set_returns(axon_axir_module_t *m, axon_axir_func_t *f, int n,
                                         axon_axir_value_t *const *values) {
    if (m == NULL || f == NULL || n < 0 || (n > 0 && values == NULL))
        return axon_fail(AXON_ERROR_INVALID_ARG, "axir_func_set_returns: bad arguments (n %d)", n);
    for (int i = 0; i < n; i++)
        if (values[i] == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axir_func_set_returns: value %d is NULL", i);
    axon_axir_value_t **rets = axir_alloc(m, (size_t)n * sizeof *rets);
    axon_axir_type_t *types = axir_alloc(m, (size_t)n * sizeof *types);
    if (rets == NULL || types == NULL)
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axir_func_set_returns: %d returns", n);
    for (int i = 0; i < n; i++) {
        rets[i] = values[i];
        types[i] = values[i]->type;
    }
    f->returns = rets;
    f->result_types = types;
    f->num_results = n;
    axon_axir_func_recompute_uses(f);
    return AXON_OK;
}

void axir_node_link(axon_axir_func_t *f, axon_axir_node_t *n, axon_axir_node_t *before) {
    if (before == NULL) {
        n->prev = f->last;
        n->next = NULL;
        if (f->last) f->last->next = n;
        else f->first = n;
        f->last = n;
    } else {
        n->next = before;
        n->prev = before->prev;
        if (before->prev) before->prev->next = n;
        else f->first = n;
        before->prev = n;
    }
}

static int attr_cmp(const void *a, const void *b) {
    const axon_axir_attr_t *x = a, *y = b;
    return strcmp(x->name, y->name);
}

axon_axir_attr_t *axir_attrs_copy(axon_axir_module_t *m, int num_attrs, const axon_axir_attr_t *attrs) {
    if (num_attrs <= 0) return NULL;
    axon_axir_attr_t *out = axir_alloc(m, (size_t)num_attrs * sizeof *out);
    if (out == NULL) return NULL;
    for (int i = 0; i < num_attrs; i++) {
        out[i] = attrs[i];
        out[i].name = axon_axir_strdup(m, attrs[i].name ? attrs[i].name : "", attrs[i].name ? strlen(attrs[i].name) : 0);
        if (out[i].name == NULL) return NULL;
        if (attrs[i].kind == AXON_AXIR_ATTR_STRING) {
            out[i].s = axon_axir_strdup(m, attrs[i].s ? attrs[i].s : "", attrs[i].s ? strlen(attrs[i].s) : 0);
            if (out[i].s == NULL) return NULL;
        }
        if (attrs[i].kind == AXON_AXIR_ATTR_LIST && attrs[i].count > 0) {
            axon_axir_dim_t *items = axir_alloc(m, (size_t)attrs[i].count * sizeof *items);
            if (items == NULL || attrs[i].items == NULL) return NULL;
            memcpy(items, attrs[i].items, (size_t)attrs[i].count * sizeof *items);
            out[i].items = items;
        }
    }
    qsort(out, (size_t)num_attrs, sizeof *out, attr_cmp);
    return out;
}

axon_axir_node_t *axon_axir_node_create(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_node_t *before,
                                        axon_axir_op_t op, const char *callee, int num_operands,
                                        axon_axir_value_t *const *operands, int num_results,
                                        const axon_axir_type_t *result_types, int num_attrs,
                                        const axon_axir_attr_t *attrs) {
    if (m == NULL || f == NULL || num_operands < 0 || num_results < 0 || num_attrs < 0 ||
        (num_operands > 0 && operands == NULL) || (num_results > 0 && result_types == NULL) ||
        (num_attrs > 0 && attrs == NULL))
        return NULL;
    axon_axir_node_t *n = axir_alloc(m, sizeof *n);
    if (n == NULL) return NULL;
    n->op = op;
    if (callee) {
        n->callee = axon_axir_strdup(m, callee, strlen(callee));
        if (n->callee == NULL) return NULL;
    }
    n->num_operands = num_operands;
    if (num_operands > 0) {
        n->operands = axir_alloc(m, (size_t)num_operands * sizeof *n->operands);
        if (n->operands == NULL) return NULL;
        memcpy(n->operands, operands, (size_t)num_operands * sizeof *n->operands);
    }
    if (num_attrs > 0) {
        n->attrs = axir_attrs_copy(m, num_attrs, attrs);
        if (n->attrs == NULL) return NULL;
        n->num_attrs = num_attrs;
    }
    n->results = axir_alloc(m, (size_t)(num_results ? num_results : 1) * sizeof *n->results);
    if (n->results == NULL) return NULL;
    for (int i = 0; i < num_results; i++) {
        n->results[i] = axir_value_new(m, f, NULL, &result_types[i], n, i);
        if (n->results[i] == NULL) return NULL;
        n->num_results = i + 1;   /* so that the next fresh name sees this one */
        if (i == 0) axir_node_link(f, n, before);
    }
    if (num_results == 0) axir_node_link(f, n, before);
    n->id = f->next_node_id++;
    for (int i = 0; i < num_operands; i++)
        if (operands[i]) operands[i]->num_uses++;
    return n;
}

static int count_uses(const axon_axir_func_t *f, const axon_axir_value_t *v) {
    int uses = 0;
    for (const axon_axir_node_t *n = f->first; n; n = n->next)
        for (int i = 0; i < n->num_operands; i++) uses += n->operands[i] == v;
    for (int i = 0; i < f->num_results && f->returns; i++) uses += f->returns[i] == v;
    return uses;
}

axon_status_t axon_axir_node_erase(axon_axir_func_t *f, axon_axir_node_t *n) {
    if (f == NULL || n == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axir_node_erase: NULL argument");
    for (int i = 0; i < n->num_results; i++) {
        /* num_uses of 0 is trusted, so that dead-code elimination stays linear; a count above 0 may be stale (a pass
         * rewired operands by hand), so it is confirmed by a scan before the erase is refused */
        int uses = n->results[i]->num_uses ? count_uses(f, n->results[i]) : 0;
        if (uses)
            return axon_fail(AXON_ERROR_MISUSE, "axir_node_erase: %s result %%%s still has %d use(s)",
                             axon_axir_op_name(n->op), n->results[i]->name, uses);
    }
    if (n->prev) n->prev->next = n->next;
    else if (f->first == n) f->first = n->next;
    else return axon_fail(AXON_ERROR_MISUSE, "axir_node_erase: node is not in function @%s", f->name);
    if (n->next) n->next->prev = n->prev;
    else f->last = n->prev;
    for (int i = 0; i < n->num_operands; i++)
        if (n->operands[i] && n->operands[i]->num_uses > 0) n->operands[i]->num_uses--;
    n->prev = n->next = NULL;
    return AXON_OK;
}

void axon_axir_replace_uses(axon_axir_func_t *f, axon_axir_value_t *from, axon_axir_value_t *to) {
    if (f == NULL || from == NULL || to == NULL || from == to) return;
    for (axon_axir_node_t *n = f->first; n; n = n->next)
        for (int i = 0; i < n->num_operands; i++)
            if (n->operands[i] == from) n->operands[i] = to;
    for (int i = 0; i < f->num_results && f->returns; i++)
        if (f->returns[i] == from) f->returns[i] = to;
    to->num_uses += from->num_uses;
    from->num_uses = 0;
}

void axon_axir_func_recompute_uses(axon_axir_func_t *f) {
    if (f == NULL) return;
    for (int i = 0; i < f->num_params; i++) f->params[i]->num_uses = 0;
    for (axon_axir_node_t *n = f->first; n; n = n->next)
        for (int i = 0; i < n->num_results; i++) n->results[i]->num_uses = 0;
    for (axon_axir_node_t *n = f->first; n; n = n->next)
        for (int i = 0; i < n->num_operands; i++)
            if (n->operands[i]) n->operands[i]->num_uses++;
    for (int i = 0; i < f->num_results && f->returns; i++)
        if (f->returns[i]) f->returns[i]->num_uses++;
}

const axon_axir_attr_t *axon_axir_node_attr(const axon_axir_node_t *n, const char *name) {
    if (n == NULL || name == NULL) return NULL;
    for (int i = 0; i < n->num_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

static int dropout_above_zero(const axon_axir_node_t *n) {
    const axon_axir_attr_t *p = axon_axir_node_attr(n, "dropout_p");
    return p && (p->kind == AXON_AXIR_ATTR_FLOAT ? p->f > 0.0 : p->kind == AXON_AXIR_ATTR_INT && p->i > 0);
}

int axon_axir_node_draws(const axon_axir_node_t *n) {
    if (n == NULL) return 0;
    if (n->op == AXON_AXIR_OP_DROPOUT) return 1;
    return (n->op == AXON_AXIR_OP_SDPA || n->op == AXON_AXIR_OP_SDPA_LSE) && dropout_above_zero(n);
}

int axon_axir_sdpa_backward_mask(const axon_axir_node_t *n) {
    if (n == NULL || n->op != AXON_AXIR_OP_SDPA_BACKWARD) return -1;
    return n->num_operands - (dropout_above_zero(n) ? 2 : 0) == 7 ? 6 : -1;
}
