/* Tier 1 as a program sees it (compiler.h): how many of its fused groups run as generated C, and
 * axon_compile_offline (the passes, then tier 1 compiled now into the disk cache, for axon-cc). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/compiler.h"
#include "compile_impl.h"
#include "tier1.h"

static char *dup_or_null(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

AXON_API axon_status_t axon_compile_offline(const char *text, size_t len, const axon_compile_options_t *opts,
                                   axon_offline_result_t *r, axon_axir_diag_t *diag) {
    if (!r) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_compile_offline: result is NULL");
    memset(r, 0, sizeof *r);
    axon_program_t *p = NULL;
    axon_compile_options_t o = opts ? *opts : axon_compile_options_default();
    o.tier1 = 1;
    axon_status_t s = axon_compile_text(text, len, &o, &p, diag);
    if (s != AXON_OK) return s;
    const axon_axir_module_t *m = axon_program_module(p);
    size_t text_len = 0;
    s = axon_axir_print(m, &r->module_text, &text_len);
    for (int i = 0; s == AXON_OK && i < axon_axir_module_num_funcs(m); i++)
        r->num_kernels += axon_axir_module_func(m, i)->is_kernel;
    axon_tier1_t *t = p->tier1;   /* started by axon_compile when there is a fused group */
    if (s == AXON_OK && t) {
        axon_status_t ts = axon_tier1_wait(t);
        snprintf(r->key, sizeof r->key, "%s", axon_tier1_key(t));
        r->source = dup_or_null(axon_tier1_source(t));
        r->library = dup_or_null(axon_tier1_library(t));
        for (int i = 0; i < axon_axir_module_num_funcs(m); i++) {
            const axon_axir_func_t *f = axon_axir_module_func(m, i);
            r->num_compiled += f->is_kernel && axon_tier1_lookup(t, f->name) != NULL;
        }
        /* "nothing to compile" is success: every kernel simply runs on tier 0 */
        s = ts == AXON_ERROR_UNSUPPORTED && r->source == NULL ? AXON_OK : ts;
        if (s != AXON_OK) s = axon_fail(s, "%s", axon_last_error());
    }
    axon_program_destroy(p);
    return s;
}

AXON_API void axon_offline_result_free(axon_offline_result_t *r) {
    if (!r) return;
    free(r->library);
    free(r->source);
    free(r->module_text);
    memset(r, 0, sizeof *r);
}

AXON_API int axon_program_tier1_ready(const axon_program_t *p) {
    int ready = 0;
    for (int i = 0; p && p->tier1 && i < axon_axir_module_num_funcs(p->module); i++) {
        const axon_axir_func_t *f = axon_axir_module_func(p->module, i);
        ready += f->is_kernel && axon_tier1_lookup(p->tier1, f->name) != NULL;
    }
    return ready;
}

AXON_API axon_status_t axon_program_wait_tier1(const axon_program_t *p) {
    if (!p) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_program_wait_tier1: program is NULL");
    if (!p->tier1) return axon_fail(AXON_ERROR_UNSUPPORTED, "tier 1: the program has no fused group (or tier1 off)");
    return axon_tier1_wait(p->tier1);
}
