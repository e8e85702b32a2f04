/* The schedule pass: chains that a front end interleaves with constants, views and unrelated work still fuse, and a
 * graph with nothing to fuse keeps its order. */
#include <string.h>

#include "check.h"

/* The entry function's text after all passes, or NULL. */
static char *compiled_text(const char *text) {
    axon_program_t *p = NULL;
    axon_axir_diag_t d;
    axon_compile_options_t o = axon_compile_options_default();
    o.tier1 = 0;
    if (axon_compile_text(text, strlen(text), &o, &p, &d) != AXON_OK) return NULL;
    char *out = NULL;
    if (axon_axir_print(axon_program_module(p), &out, NULL) != AXON_OK) out = NULL;
    axon_program_destroy(p);
    return out;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle)) n++;
    return n;
}

static void test_interleaved_chain_fuses(void) {
    /* x*0.5 -> (a transpose of w in between) -> +b -> (an unrelated exp of w) -> tanh: one group of three */
    static const char *const text =
        "axir 1\n"
        "func @main(%x: f32[8, 16], %b: f32[16], %w: f32[16, 8]) -> (f32[8, 16], f32[16, 8]) {\n"
        "  %half = const() {value = 0.5} : f32[]\n"
        "  %0 = mul(%x, %half) : f32[8, 16]\n"
        "  %wt = permute(%w) {dims = [1, 0]} : f32[8, 16]\n"
        "  %1 = add(%0, %b) : f32[8, 16]\n"
        "  %e = exp(%w) : f32[16, 8]\n"
        "  %2 = tanh(%1) : f32[8, 16]\n"
        "  %3 = add(%2, %wt) : f32[8, 16]\n"
        "  return %3, %e\n"
        "}\n";
    char *out = compiled_text(text);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(count(out, "kernel @") == 1);
    CHECK(count(out, "= fused @") == 1);
    /* the group holds all four elementwise ops on [8, 16] */
    const char *k = strstr(out, "kernel @");
    CHECK(k && strstr(k, "mul(") && strstr(k, "tanh(") && count(k, "add(") == 2);
    free(out);
}

static void test_unfusable_graph_keeps_order(void) {
    static const char *const text =
        "axir 1\n"
        "\n"
        "func @main(%a: f32[4, 4], %b: f32[4, 4]) -> (f32[4, 4], f32[4, 4]) {\n"
        "  %0 = mm(%a, %b) : f32[4, 4]\n"
        "  %1 = mm(%b, %a) : f32[4, 4]\n"
        "  %2 = softmax(%0) {dim = 1} : f32[4, 4]\n"
        "  return %2, %1\n"
        "}\n";
    char *out = compiled_text(text);
    CHECK(out != NULL);
    if (!out) return;
    CHECK(strcmp(out, text) == 0);
    if (strcmp(out, text) != 0) fprintf(stderr, "got:\n%s", out);
    free(out);
}

int main(void) {
    RUN(test_interleaved_chain_fuses);
    RUN(test_unfusable_graph_keeps_order);
    return check_report();
}
