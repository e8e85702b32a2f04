/* The AXIR module: one bump arena that owns every object of the module, plus the list of its functions.
 * Passes never free single objects, so an arena makes destroy one walk over a few chunks and keeps pointers stable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axir_impl.h"
#include "internal.h"

#define AXIR_CHUNK_BYTES (64 * 1024)

struct axir_chunk {
    struct axir_chunk *next;
    size_t size;
    _Alignas(16) char data[];
};

void *axir_alloc(axon_axir_module_t *m, size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (size == 0) size = 16;
    if (m->cur == NULL || (size_t)(m->end - m->cur) < size) {
        size_t want = size > AXIR_CHUNK_BYTES / 4 ? size : AXIR_CHUNK_BYTES;
        if (want > SIZE_MAX - sizeof(struct axir_chunk)) return NULL;
        struct axir_chunk *c = malloc(sizeof *c + want);
        if (c == NULL) return NULL;
        c->size = want;
        if (want == size && m->chunks != NULL) {
            /* A big object gets a chunk of its own behind the current one, so the current free space is kept. */
            c->next = m->chunks->next;
            m->chunks->next = c;
            memset(c->data, 0, size);
            return c->data;
        }
        c->next = m->chunks;
        m->chunks = c;
        m->cur = c->data;
        m->end = c->data + want;
    }
    void *p = m->cur;
    m->cur += size;
    memset(p, 0, size);
    return p;
}

axon_status_t axon_axir_module_create(axon_axir_module_t **out) {
    if (out == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axir_module_create: out is NULL");
    *out = NULL;
    axon_axir_module_t *m = calloc(1, sizeof *m);
    if (m == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "axir_module_create: %zu bytes", sizeof *m);
    *out = m;
    return AXON_OK;
}

void axon_axir_module_destroy(axon_axir_module_t *m) {
    if (m == NULL) return;
    struct axir_chunk *c = m->chunks;
    while (c != NULL) {
        struct axir_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(m->funcs);
    free(m->max_numeric_name);
    free(m);
}

axon_status_t axir_module_append(axon_axir_module_t *m, axon_axir_func_t *f) {
    if (m->num_funcs == m->cap_funcs) {
        int cap = m->cap_funcs ? m->cap_funcs * 2 : 8;
        axon_axir_func_t **p = realloc(m->funcs, (size_t)cap * sizeof *p);
        if (p == NULL) return AXON_ERROR_OUT_OF_MEMORY;
        m->funcs = p;
        int64_t *h = realloc(m->max_numeric_name, (size_t)cap * sizeof *h);
        if (h == NULL) return AXON_ERROR_OUT_OF_MEMORY;
        m->max_numeric_name = h;
        m->cap_funcs = cap;
    }
    m->max_numeric_name[m->num_funcs] = -2;
    m->funcs[m->num_funcs++] = f;
    return AXON_OK;
}

int axon_axir_module_num_funcs(const axon_axir_module_t *m) { return m ? m->num_funcs : 0; }

axon_axir_func_t *axon_axir_module_func(const axon_axir_module_t *m, int index) {
    if (m == NULL || index < 0 || index >= m->num_funcs) return NULL;
    return m->funcs[index];
}

axon_axir_func_t *axon_axir_module_find(const axon_axir_module_t *m, const char *name) {
    if (m == NULL || name == NULL) return NULL;
    for (int i = 0; i < m->num_funcs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
    return NULL;
}

const char *axon_axir_strdup(axon_axir_module_t *m, const char *s, size_t len) {
    if (m == NULL || (s == NULL && len > 0) || len == SIZE_MAX) return NULL;
    char *p = axir_alloc(m, len + 1);
    if (p == NULL) return NULL;
    if (len) memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

/* ---- diagnostics ---- */

char *axon_axir_diag_format(const axon_axir_diag_t *d, char *buf, size_t size) {
    if (buf == NULL || size == 0) return buf;
    if (d == NULL)
        snprintf(buf, size, "(no diagnostic)");
    else if (d->line > 0)
        snprintf(buf, size, "axir:%d:%d: %s", d->line, d->col, d->message);
    else
        snprintf(buf, size, "%s", d->message);
    return buf;
}

axon_status_t axir_vdiag(axon_axir_diag_t *d, int line, int col, const char *fmt, va_list ap) {
    axon_axir_diag_t local;
    axon_axir_diag_t *t = d ? d : &local;
    t->line = line;
    t->col = col;
    vsnprintf(t->message, sizeof t->message, fmt, ap);
    char text[600];
    axon_axir_diag_format(t, text, sizeof text);
    return axon_fail(AXON_ERROR_INVALID_ARG, "%s", text);
}

axon_status_t axir_diag(axon_axir_diag_t *d, int line, int col, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    axon_status_t s = axir_vdiag(d, line, col, fmt, ap);
    va_end(ap);
    return s;
}

/* ---- dtypes and names ---- */

static const char *const axir_dtype_names[AXON_DTYPE_COUNT] = {
    [AXON_FLOAT32] = "f32", [AXON_FLOAT64] = "f64", [AXON_FLOAT16] = "f16",   [AXON_BFLOAT16] = "bf16",
    [AXON_INT8] = "i8",     [AXON_UINT8] = "u8",    [AXON_INT16] = "i16",     [AXON_INT32] = "i32",
    [AXON_INT64] = "i64",   [AXON_BOOL] = "bool",   [AXON_COMPLEX64] = "c64", [AXON_COMPLEX128] = "c128",
    [AXON_UINT16] = "u16",  [AXON_UINT32] = "u32",  [AXON_UINT64] = "u64",   [AXON_COMPLEX32] = "c32",
};
_Static_assert(AXON_DTYPE_COUNT == 16, "name the new dtype in axir_dtype_names and docs/axir.md");

const char *axon_axir_dtype_name(axon_dtype_t d) {
    if ((int)d < 0 || d >= AXON_DTYPE_COUNT) return "invalid";
    return axir_dtype_names[d];
}

int axon_axir_dtype_lookup(const char *name, size_t len, axon_dtype_t *out) {
    if (name == NULL) return 0;
    for (int i = 0; i < AXON_DTYPE_COUNT; i++) {
        const char *n = axir_dtype_names[i];
        if (strlen(n) == len && memcmp(n, name, len) == 0) {
            if (out) *out = (axon_dtype_t)i;
            return 1;
        }
    }
    return 0;
}

static int axir_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

int axir_name_ok(const char *s) {
    if (s == NULL || *s == '\0') return 0;
    size_t n = 0;
    for (; s[n]; n++)
        if (!axir_name_char(s[n]) || n >= AXIR_MAX_NAME) return 0;
    return 1;
}

int axir_symbol_name_ok(const char *s) {
    if (!axir_name_ok(s) || (s[0] >= '0' && s[0] <= '9') || s[0] == '.') return 0;
    return !axon_axir_dtype_lookup(s, strlen(s), NULL);
}
