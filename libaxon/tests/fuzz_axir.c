/* A standalone fuzzer for the AXIR parser (gcc has no libFuzzer): it mutates a corpus of valid modules with byte
 * flips, inserts of bytes and grammar tokens, deletes, splices between modules, duplications and swaps of
 * whitespace-separated tokens, and parses each mutant from an exactly-sized heap copy, so that AddressSanitizer sees
 * any read past the length. Mutants that parse are printed, parsed and printed again: the two prints must be
 * identical, and they join the corpus so later mutations reach deeper. Any crash, sanitizer report or unstable print
 * is a failure.
 *
 *   fuzz_axir [seconds] [max_iterations] [seed]      defaults: 5 seconds, no iteration bound, seed 1 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axon/axir.h"
#include "test_axir_corpus.h"

#define MAX_CORPUS 512
#define MAX_TEXT (64 * 1024)

static uint64_t rng_state;

static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t below(size_t n) { return n ? (size_t)(rng() % n) : 0; }

typedef struct text {
    char *p;
    size_t len;
} text_t;

static text_t corpus[MAX_CORPUS];
static int corpus_n;

static const char *const tokens[] = {
    "%", "%x", "%0", "@", "@k", "[", "]", "(", ")", "{", "}", ",", ":", "=", "->", "+", "-", "*", "//", "#", "\n",
    "\"", "\\", "s0", "s1", "f32", "i64", "bool", "bf16", "0", "1", "-1", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "1e308", "1e-400", "0.5", "inf", "-inf", "nan", "true", "false",
    "fused @fused_0", "kernel", "func", "return", "axir 1", "dims = [0]", "keepdim = true", "s0*12", "(s0+1)//2",
    "s0%0", "1//0", "f32[]", "f32[1, 1, 1, 1, 1, 1, 1, 1, 1]", "((((((((((", "))))", "{approximate = \"tanh\"}",
    "reshape", "sdpa", "cat", "layer_norm", "select", "slice", "expand", "const", "iota", "\t", "\r", " ", "\x00",
    "\xff",
};

static void insert(char *buf, size_t *len, size_t at, const char *s, size_t n) {
    if (*len + n > MAX_TEXT) return;
    memmove(buf + at + n, buf + at, *len - at);
    memcpy(buf + at, s, n);
    *len += n;
}

/* [start, end) of a random whitespace-separated token of buf, or 0 if none. */
static int random_token(const char *buf, size_t len, size_t *start, size_t *end) {
    if (len == 0) return 0;
    size_t i = below(len);
    while (i > 0 && buf[i - 1] != ' ' && buf[i - 1] != '\n') i--;
    size_t j = i;
    while (j < len && buf[j] != ' ' && buf[j] != '\n') j++;
    if (j == i) return 0;
    *start = i;
    *end = j;
    return 1;
}

static void mutate(char *buf, size_t *len) {
    int rounds = 1 + (int)below(4);
    for (int r = 0; r < rounds; r++) {
        switch (below(7)) {
        case 0:   /* flip or set a byte */
            if (*len) {
                size_t i = below(*len);
                buf[i] = below(2) ? (char)(buf[i] ^ (1 << below(8))) : (char)below(256);
            }
            break;
        case 1: {   /* insert a grammar token */
            const char *t = tokens[below(sizeof tokens / sizeof tokens[0])];
            size_t n = strlen(t);
            if (n == 0) n = 1;   /* the NUL byte token */
            insert(buf, len, below(*len + 1), t, n);
            break;
        }
        case 2: {   /* delete a range */
            if (*len == 0) break;
            size_t i = below(*len), n = 1 + below(below(2) ? 4 : 64);
            if (i + n > *len) n = *len - i;
            memmove(buf + i, buf + i + n, *len - i - n);
            *len -= n;
            break;
        }
        case 3: {   /* splice in a range of another corpus entry */
            const text_t *o = &corpus[below((size_t)corpus_n)];
            if (o->len == 0) break;
            size_t i = below(o->len), n = 1 + below(128);
            if (i + n > o->len) n = o->len - i;
            insert(buf, len, below(*len + 1), o->p + i, n);
            break;
        }
        case 4: {   /* duplicate a token */
            size_t s, e;
            if (random_token(buf, *len, &s, &e)) {
                char tmp[256];
                size_t n = e - s < sizeof tmp ? e - s : sizeof tmp;
                memcpy(tmp, buf + s, n);
                insert(buf, len, below(*len + 1), tmp, n);
            }
            break;
        }
        case 5: {   /* replace a token with another token of the text */
            size_t s1, e1, s2, e2;
            if (random_token(buf, *len, &s1, &e1) && random_token(buf, *len, &s2, &e2)) {
                char tmp[256];
                size_t n = e2 - s2 < sizeof tmp ? e2 - s2 : sizeof tmp;
                memcpy(tmp, buf + s2, n);
                memmove(buf + s1, buf + e1, *len - e1);
                *len -= e1 - s1;
                insert(buf, len, s1 <= *len ? s1 : *len, tmp, n);
            }
            break;
        }
        default:   /* truncate */
            if (*len) *len = below(*len + 1);
            break;
        }
    }
}

static int check_stable(const char *src, size_t len) {
    axon_axir_module_t *m = NULL, *m2 = NULL;
    axon_axir_diag_t d;
    if (axon_axir_parse(src, len, &m, &d) != AXON_OK) {
        /* a diagnostic must be located inside the text (or at its end) */
        if (d.line < 0 || d.col < 0 || strlen(d.message) == 0) {
            fprintf(stderr, "fuzz_axir: malformed diagnostic %d:%d '%s'\n", d.line, d.col, d.message);
            return -1;
        }
        return 0;
    }
    char *a = NULL, *b = NULL;
    size_t alen = 0;
    int rc = 1;
    if (axon_axir_print(m, &a, &alen) != AXON_OK) rc = -1;
    else if (axon_axir_parse(a, alen, &m2, &d) != AXON_OK) {
        char buf[700];
        fprintf(stderr, "fuzz_axir: printed text does not parse: %s\n--- text:\n%s\n",
                axon_axir_diag_format(&d, buf, sizeof buf), a);
        rc = -1;
    } else if (axon_axir_print(m2, &b, NULL) != AXON_OK || strcmp(a, b) != 0) {
        fprintf(stderr, "fuzz_axir: print is not stable\n--- first:\n%s\n--- second:\n%s\n", a, b ? b : "(null)");
        rc = -1;
    }
    if (rc == 1 && len >= 64) {
        /* keep the mutant; once the corpus is full it replaces a random earlier mutant (the seeds stay) */
        int slot = corpus_n < MAX_CORPUS ? corpus_n : K_AXIR_CORPUS_SIZE + (int)below(MAX_CORPUS - K_AXIR_CORPUS_SIZE);
        char *copy = malloc(len ? len : 1);
        if (copy) {
            memcpy(copy, src, len);
            if (slot < corpus_n) free(corpus[slot].p);
            else corpus_n++;
            corpus[slot].p = copy;
            corpus[slot].len = len;
        }
    }
    free(a);
    free(b);
    axon_axir_module_destroy(m);
    axon_axir_module_destroy(m2);
    return rc;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    long long max_iter = argc > 2 ? atoll(argv[2]) : 0;
    rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    if (rng_state == 0) rng_state = 1;
    /* the seeds must themselves round-trip; check_stable adds each to the corpus */
    for (int i = 0; i < K_AXIR_CORPUS_SIZE; i++) {
        size_t len = strlen(k_axir_corpus[i]);
        char *exact = malloc(len);   /* exactly sized here too, without the string's NUL behind it */
        if (exact == NULL) return 2;
        memcpy(exact, k_axir_corpus[i], len);
        int rc = check_stable(exact, len);
        free(exact);
        if (rc != 1) {
            fprintf(stderr, "fuzz_axir: corpus entry %d does not round-trip\n", i);
            return 1;
        }
    }
    static char buf[MAX_TEXT];
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long iter = 0, valid = 0;
    for (;; iter++) {
        if (max_iter > 0 && iter >= max_iter) break;
        if ((iter & 63) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) >= seconds) break;
        }
        /* half the time a seed module, so the corpus cannot drift to tiny texts that trivially parse */
        const text_t *seed = &corpus[below(2) ? below(K_AXIR_CORPUS_SIZE) : below((size_t)corpus_n)];
        size_t len = seed->len;
        memcpy(buf, seed->p, len);
        mutate(buf, &len);
        /* an exactly-sized copy: reading past len is a heap overflow ASan reports */
        char *exact = malloc(len ? len : 1);
        if (exact == NULL) return 2;
        memcpy(exact, buf, len);
        int rc = check_stable(exact, len);
        if (rc < 0) {
            fprintf(stderr, "fuzz_axir: failure at iteration %lld (seed %s); input (%zu bytes):\n%.*s\n", iter,
                    argc > 3 ? argv[3] : "1", len, (int)len, exact);
            free(exact);
            return 1;
        }
        valid += rc;
        free(exact);
    }
    printf("fuzz_axir: %lld inputs, %lld parsed and printed stably, corpus %d\n", iter, valid, corpus_n);
    for (int i = 0; i < corpus_n; i++) free(corpus[i].p);
    return 0;
}
