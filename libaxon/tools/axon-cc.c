/* axon-cc: compiles an AXIR file offline into the compile cache, with no Python and no PyTorch.
 *
 *   axon-cc [--print-after-all] [--emit-ir FILE] [--emit-c FILE] [--cache-dir DIR] [-o FILE] [--no-fuse] INPUT.axir
 *
 * It runs the same passes as torch.compile(backend="axon") does and compiles the program's tier 1 into the cache
 * directory, so a later process that compiles the same graph on this machine loads it instead of compiling. Exit
 * status: 0 compiled (or nothing to compile: every kernel runs on tier 0), 1 malformed input (a located error),
 * 2 usage, 3 no C compiler or a failed compile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axon/axon.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: axon-cc [options] INPUT.axir\n"
            "  --print-after-all  print the module after each pass (to stderr)\n"
            "  --emit-ir FILE     write the AXIR after all passes ('-' for stdout)\n"
            "  --emit-c FILE      write the generated tier-1 C ('-' for stdout)\n"
            "  --cache-dir DIR    the compile cache (default $AXON_CACHE_DIR, else ~/.cache/axon)\n"
            "  -o FILE            also copy the compiled shared object to FILE\n"
            "  --no-fuse          skip fusion\n");
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *grown = realloc(buf, cap *= 2);
        if (!grown) {
            free(buf);
            buf = NULL;
        }
        buf = grown;
    }
    if (f != stdin) fclose(f);
    *len = n;
    return buf;
}

static int write_text(const char *path, const char *text) {
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
    if (!f) return 0;
    int ok = fputs(text ? text : "", f) >= 0;
    if (f != stdout) ok = fclose(f) == 0 && ok;
    return ok;
}

static int copy_file(const char *from, const char *to) {
    size_t n;
    char *data = read_all(from, &n);
    if (!data) return 0;
    FILE *f = fopen(to, "wb");
    int ok = f && fwrite(data, 1, n, f) == n;
    if (f) ok = fclose(f) == 0 && ok;
    free(data);
    return ok;
}

static void print_pass(void *user, const char *pass, const char *text) {
    (void)user;
    fprintf(stderr, "// ----- after %s -----\n%s", pass, text);
}

int main(int argc, char **argv) {
    const char *input = NULL, *emit_ir = NULL, *emit_c = NULL, *out = NULL;
    axon_compile_options_t opts = axon_compile_options_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(a, "--print-after-all") == 0) {
            opts.print_after_all = 1;
            opts.print = print_pass;
        } else if (strcmp(a, "--no-fuse") == 0) {
            opts.fuse = 0;
        } else if (strcmp(a, "--emit-ir") == 0 && has_value) {
            emit_ir = argv[++i];
        } else if (strcmp(a, "--emit-c") == 0 && has_value) {
            emit_c = argv[++i];
        } else if (strcmp(a, "--cache-dir") == 0 && has_value) {
            setenv("AXON_CACHE_DIR", argv[++i], 1);
        } else if (strcmp(a, "-o") == 0 && has_value) {
            out = argv[++i];
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "axon-cc: unknown or incomplete option %s\n", a);
            usage(stderr);
            return 2;
        } else if (!input) {
            input = a;
        } else {
            fprintf(stderr, "axon-cc: more than one input (%s and %s)\n", input, a);
            return 2;
        }
    }
    if (!input) {
        usage(stderr);
        return 2;
    }
    size_t len = 0;
    char *text = read_all(input, &len);
    if (!text) {
        fprintf(stderr, "axon-cc: cannot read %s\n", input);
        return 2;
    }
    axon_offline_result_t r;
    axon_axir_diag_t diag;
    memset(&diag, 0, sizeof diag);
    axon_status_t s = axon_compile_offline(text, len, &opts, &r, &diag);
    free(text);
    if (s == AXON_ERROR_INVALID_ARG && diag.message[0]) {
        /* "INPUT:LINE:COL: message", the form editors jump to */
        if (diag.line > 0) fprintf(stderr, "%s:%d:%d: error: %s\n", input, diag.line, diag.col, diag.message);
        else fprintf(stderr, "%s: error: %s\n", input, diag.message);
        axon_offline_result_free(&r);
        return 1;
    }
    int rc = 0;
    if (emit_ir && !write_text(emit_ir, r.module_text)) {
        fprintf(stderr, "axon-cc: cannot write %s\n", emit_ir);
        rc = 2;
    }
    if (emit_c && !write_text(emit_c, r.source)) {
        fprintf(stderr, "axon-cc: cannot write %s\n", emit_c);
        rc = 2;
    }
    if (s != AXON_OK) {
        fprintf(stderr, "axon-cc: %s: %s\n", input, axon_last_error());
        axon_offline_result_free(&r);
        return s == AXON_ERROR_INVALID_ARG ? 1 : 3;
    }
    if (out && r.library && !copy_file(r.library, out)) {
        fprintf(stderr, "axon-cc: cannot write %s\n", out);
        rc = 2;
    }
    printf("%s: %d kernel function(s), %d compiled by tier 1%s%s%s%s\n", input, r.num_kernels, r.num_compiled,
           r.key[0] ? ", key " : "", r.key, r.library ? ", cache entry " : "", r.library ? r.library : "");
    axon_offline_result_free(&r);
    return rc;
}
