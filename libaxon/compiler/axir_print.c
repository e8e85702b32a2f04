/* The AXIR printer: the canonical text of docs/axir.md. parse(print(m)) prints back byte for byte, so every choice
 * here (spacing, attribute order, float digits, parentheses in dims) is the single spelling the parser's output has. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axir_impl.h"
#include "internal.h"

/* ---- buffer ---- */

static int buf_reserve(axir_buf_t *b, size_t extra) {
    if (b->oom) return 0;
    if (b->len + extra + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->oom = 1;
        return 0;
    }
    b->data = p;
    b->cap = cap;
    return 1;
}

void axir_buf_put(axir_buf_t *b, const char *s, size_t n) {
    if (!buf_reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void axir_buf_puts(axir_buf_t *b, const char *s) { axir_buf_put(b, s, strlen(s)); }

void axir_buf_printf(axir_buf_t *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        axir_buf_put(b, tmp, (size_t)n);
        return;
    }
    if (!buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- dims ---- */

static int sym_prec(const axon_sym_expr_t *e) {
    switch (e->kind) {
    case AXON_SYM_ADD: case AXON_SYM_SUB: return 1;
    case AXON_SYM_MUL: case AXON_SYM_FLOORDIV: case AXON_SYM_MOD: return 2;
    default: return 3;
    }
}

/* Parenthesizes e when its operator binds looser than the parent's, or equally on the right: the grammar is left
 * associative, so a-(b-c) and a*(b//c) need them and a-b-c does not. */
static void print_expr_in(axir_buf_t *b, const axon_axir_func_t *f, const axon_sym_expr_t *e, int parent, int right) {
    if (e == NULL) {
        axir_buf_puts(b, "?");
        return;
    }
    int prec = sym_prec(e);
    int paren = prec < parent || (right && prec == parent);
    if (paren) axir_buf_puts(b, "(");
    switch (e->kind) {
    case AXON_SYM_CONST: axir_buf_printf(b, "%lld", (long long)e->value); break;
    case AXON_SYM_VAR:
        if (f && e->var >= 0 && e->var < f->num_symbols) axir_buf_puts(b, f->symbols[e->var]);
        else axir_buf_printf(b, "?%d", (int)e->var);
        break;
    default: {
        static const char *const ops[] = {"", "", "+", "-", "*", "//", "%"};
        print_expr_in(b, f, e->lhs, prec, 0);
        axir_buf_puts(b, (int)e->kind >= 0 && (int)e->kind <= AXON_SYM_MOD ? ops[e->kind] : "?");
        print_expr_in(b, f, e->rhs, prec, 1);
        break;
    }
    }
    if (paren) axir_buf_puts(b, ")");
}

void axir_print_expr(axir_buf_t *b, const axon_axir_func_t *f, const axon_sym_expr_t *e) {
    print_expr_in(b, f, e, 0, 0);
}

void axir_print_dim(axir_buf_t *b, const axon_axir_func_t *f, axon_axir_dim_t d) {
    if (d.expr) axir_print_expr(b, f, d.expr);
    else axir_buf_printf(b, "%lld", (long long)d.size);
}

void axir_print_type(axir_buf_t *b, const axon_axir_func_t *f, const axon_axir_type_t *t) {
    axir_buf_puts(b, axon_axir_dtype_name(t->dtype));
    axir_buf_puts(b, "[");
    for (int i = 0; i < t->rank && i < AXON_MAX_DIMS; i++) {
        if (i) axir_buf_puts(b, ", ");
        axir_print_dim(b, f, t->dims[i]);
    }
    axir_buf_puts(b, "]");
}

const char *axir_type_str(const axon_axir_func_t *f, const axon_axir_type_t *t, char *out, size_t size) {
    axir_buf_t b = {0};
    axir_print_type(&b, f, t);
    snprintf(out, size, "%s", b.data ? b.data : "?");
    free(b.data);
    return out;
}

/* ---- attributes ---- */

void axir_print_float(axir_buf_t *b, double v) {
    if (isnan(v)) {
        axir_buf_puts(b, "nan");
        return;
    }
    if (isinf(v)) {
        axir_buf_puts(b, v < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    axir_buf_puts(b, tmp);
    if (strpbrk(tmp, ".e") == NULL) axir_buf_puts(b, ".0");   /* never reads back as an INT */
}

static void print_string(axir_buf_t *b, const char *s) {
    axir_buf_puts(b, "\"");
    for (const char *p = s ? s : ""; *p; p++) {
        switch (*p) {
        case '"': axir_buf_puts(b, "\\\""); break;
        case '\\': axir_buf_puts(b, "\\\\"); break;
        case '\n': axir_buf_puts(b, "\\n"); break;
        case '\t': axir_buf_puts(b, "\\t"); break;
        default: axir_buf_put(b, p, 1); break;
        }
    }
    axir_buf_puts(b, "\"");
}

static void print_attr(axir_buf_t *b, const axon_axir_func_t *f, const axon_axir_attr_t *a) {
    axir_buf_puts(b, a->name ? a->name : "?");
    axir_buf_puts(b, " = ");
    switch (a->kind) {
    case AXON_AXIR_ATTR_INT: axir_buf_printf(b, "%lld", (long long)a->i); break;
    case AXON_AXIR_ATTR_FLOAT: axir_print_float(b, a->f); break;
    case AXON_AXIR_ATTR_BOOL: axir_buf_puts(b, a->i ? "true" : "false"); break;
    case AXON_AXIR_ATTR_STRING: print_string(b, a->s); break;
    case AXON_AXIR_ATTR_DTYPE: axir_buf_puts(b, axon_axir_dtype_name(a->dtype)); break;
    case AXON_AXIR_ATTR_LIST:
        axir_buf_puts(b, "[");
        for (int i = 0; i < a->count; i++) {
            if (i) axir_buf_puts(b, ", ");
            axir_print_dim(b, f, a->items[i]);
        }
        axir_buf_puts(b, "]");
        break;
    default: axir_buf_puts(b, "?"); break;
    }
}

/* ---- graph ---- */

static void print_value(axir_buf_t *b, const axon_axir_value_t *v) {
    axir_buf_puts(b, "%");
    axir_buf_puts(b, v && v->name ? v->name : "?");
}

static void print_node(axir_buf_t *b, const axon_axir_func_t *f, const axon_axir_node_t *n) {
    axir_buf_puts(b, "  ");
    for (int i = 0; i < n->num_results; i++) {
        if (i) axir_buf_puts(b, ", ");
        print_value(b, n->results[i]);
    }
    axir_buf_puts(b, " = ");
    axir_buf_puts(b, axon_axir_op_name(n->op));
    if (n->callee) {
        axir_buf_puts(b, " @");
        axir_buf_puts(b, n->callee);
    }
    axir_buf_puts(b, "(");
    for (int i = 0; i < n->num_operands; i++) {
        if (i) axir_buf_puts(b, ", ");
        print_value(b, n->operands[i]);
    }
    axir_buf_puts(b, ")");
    if (n->num_attrs > 0) {
        axir_buf_puts(b, " {");
        for (int i = 0; i < n->num_attrs; i++) {
            if (i) axir_buf_puts(b, ", ");
            print_attr(b, f, &n->attrs[i]);
        }
        axir_buf_puts(b, "}");
    }
    axir_buf_puts(b, " : ");
    if (n->num_results != 1) axir_buf_puts(b, "(");
    for (int i = 0; i < n->num_results; i++) {
        if (i) axir_buf_puts(b, ", ");
        if (n->results[i]) axir_print_type(b, f, &n->results[i]->type);
    }
    if (n->num_results != 1) axir_buf_puts(b, ")");
    axir_buf_puts(b, "\n");
}

static void print_func(axir_buf_t *b, const axon_axir_func_t *f) {
    axir_buf_puts(b, f->is_kernel ? "kernel @" : "func @");
    axir_buf_puts(b, f->name ? f->name : "?");
    axir_buf_puts(b, "(");
    for (int i = 0; i < f->num_params; i++) {
        if (i) axir_buf_puts(b, ", ");
        print_value(b, f->params[i]);
        axir_buf_puts(b, ": ");
        if (f->params[i]) axir_print_type(b, f, &f->params[i]->type);
    }
    axir_buf_puts(b, ") -> (");
    for (int i = 0; i < f->num_results; i++) {
        if (i) axir_buf_puts(b, ", ");
        axir_print_type(b, f, &f->result_types[i]);
    }
    axir_buf_puts(b, ") {\n");
    for (const axon_axir_node_t *n = f->first; n; n = n->next) print_node(b, f, n);
    axir_buf_puts(b, "  return");
    for (int i = 0; i < f->num_results && f->returns; i++) {
        axir_buf_puts(b, i ? ", " : " ");
        print_value(b, f->returns[i]);
    }
    axir_buf_puts(b, "\n}\n");
}

static axon_status_t finish(axir_buf_t *b, const char *what, char **text, size_t *len) {
    if (b->oom || b->data == NULL) {
        free(b->data);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "%s: out of memory after %zu bytes of text", what, b->len);
    }
    *text = b->data;
    if (len) *len = b->len;
    return AXON_OK;
}

axon_status_t axon_axir_print(const axon_axir_module_t *m, char **text, size_t *len) {
    if (text == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axir_print: text is NULL");
    *text = NULL;
    if (len) *len = 0;
    if (m == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axir_print: module is NULL");
    axir_buf_t b = {0};
    axir_buf_printf(&b, "axir %d\n", AXON_AXIR_VERSION);
    for (int i = 0; i < m->num_funcs; i++) {
        axir_buf_puts(&b, "\n");
        print_func(&b, m->funcs[i]);
    }
    return finish(&b, "axir_print", text, len);
}

axon_status_t axon_axir_print_func(const axon_axir_module_t *m, const axon_axir_func_t *f, char **text,
                                   size_t *len) {
    if (text == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axir_print_func: text is NULL");
    *text = NULL;
    if (len) *len = 0;
    if (f == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axir_print_func: function is NULL");
    axir_buf_t b = {0};
    print_func(&b, f);
    return finish(&b, "axir_print_func", text, len);
}
