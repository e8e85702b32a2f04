/* axon_compile: the pass pipeline over the entry function, then lowering to a tier-0 program.
 *
 *   verify -> canonicalize -> (attention) -> dce -> fold -> (schedule -> fuse -> verify) -> plan
 *
 * Each pass is one function over (module, function); opts->print sees the module's text after each when
 * print_after_all is set. "plan" is program_build: steps, buffers and their lifetimes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile_impl.h"
#include "tier1.h"

static axon_status_t pass_verify(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag) {
    (void)f;
    axon_status_t st = axon_axir_verify(m, diag);
    if (st != AXON_OK && diag) {
        char buf[600];
        axon_fail(st, "%s", axon_axir_diag_format(diag, buf, sizeof buf));
    }
    return st;
}

typedef struct compile_pass {
    const char *name;
    compile_pass_fn fn;
    int fusion;                  /* runs only with opts->fuse */
} compile_pass_t;

static const compile_pass_t compile_passes[] = {
    {"verify", pass_verify, 0},
    {"canonicalize", pass_canonicalize, 0},
    {"attention", pass_attention, 1},
    {"dce", pass_dce, 0},
    {"fold", pass_fold, 0},
    {"schedule", pass_schedule, 1},
    {"fuse", pass_fuse, 1},
    {"verify", pass_verify, 1},
};

static void print_module(const axon_compile_options_t *o, const char *pass, const axon_axir_module_t *m) {
    if (!o->print_after_all || !o->print) return;
    char *text = NULL;
    if (axon_axir_print(m, &text, NULL) != AXON_OK) return;
    o->print(o->print_user, pass, text);
    free(text);
}

AXON_API axon_status_t axon_compile(axon_axir_module_t *m, const axon_compile_options_t *opts, axon_program_t **out,
                                    axon_axir_diag_t *diag) {
    if (diag) memset(diag, 0, sizeof *diag);
    if (!out) {
        axon_axir_module_destroy(m);
        return compile_diag(diag, NULL, AXON_ERROR_INVALID_ARG, "axon_compile: out is NULL");
    }
    *out = NULL;
    if (!m) return compile_diag(diag, NULL, AXON_ERROR_INVALID_ARG, "axon_compile: module is NULL");
    axon_compile_options_t o = opts ? *opts : axon_compile_options_default();
    const char *entry = o.entry ? o.entry : "main";
    axon_program_t *p = calloc(1, sizeof *p);
    if (!p) {
        axon_axir_module_destroy(m);
        return compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "axon_compile: out of memory");
    }
    atomic_init(&p->refs, 1);
    p->module = m;
    p->func = axon_axir_module_find(m, entry);
    axon_status_t st = AXON_OK;
    if (!p->func || p->func->is_kernel)
        st = compile_diag(diag, NULL, AXON_ERROR_INVALID_ARG, "axon_compile: the module has no function @%s", entry);
    for (size_t i = 0; st == AXON_OK && i < sizeof compile_passes / sizeof compile_passes[0]; i++) {
        const compile_pass_t *cp = &compile_passes[i];
        if (cp->fusion && !o.fuse) continue;
        st = cp->fn(m, p->func, diag);
        if (st == AXON_OK) print_module(&o, cp->name, m);
    }
    if (st == AXON_OK) {
        st = program_build(p, diag);
        if (st == AXON_OK) print_module(&o, "plan", m);
    }
    /* Tier 1 compiles the fused groups to C in the background; until a group's function is loaded (or forever, without
     * a C compiler) tier 0 runs it. Only running out of memory fails the compile. */
    if (st == AXON_OK && o.tier1 && p->num_fused > 0) {
        axon_status_t ts = axon_tier1_start(m, 0, &p->tier1);
        if (ts == AXON_ERROR_OUT_OF_MEMORY) st = compile_diag(diag, NULL, ts, "axon_compile: tier 1: out of memory");
    }
    if (st != AXON_OK) {
        axon_program_destroy(p);
        return st;
    }
    *out = p;
    return AXON_OK;
}

AXON_API axon_status_t axon_compile_text(const char *text, size_t len, const axon_compile_options_t *opts,
                                         axon_program_t **out, axon_axir_diag_t *diag) {
    if (out) *out = NULL;
    if (!text) return compile_diag(diag, NULL, AXON_ERROR_INVALID_ARG, "axon_compile_text: text is NULL");
    axon_axir_module_t *m = NULL;
    axon_status_t st = axon_axir_parse(text, len, &m, diag);
    if (st != AXON_OK) {
        char buf[600];
        return axon_fail(st, "%s", diag ? axon_axir_diag_format(diag, buf, sizeof buf) : "axon_compile_text: parse error");
    }
    return axon_compile(m, opts, out, diag);
}
