/* Tier 1 and the compile cache: SHA-256 against FIPS 180-4's vectors, the disk cache's atomic entries and corruption
 * handling, generated C against a plain C reference (contiguous, broadcast and strided operands, float32 and
 * bfloat16), cache hits, and what happens without a working C compiler. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile_check.h"
#include "disk_cache.h"
#include "sha256.h"
#include "tier1.h"

static char cache_dir[256];

static void usleep_20ms(void *unused) {
    (void)unused;
    sleep_ms(20);
}

static void hex_of(const char *s, size_t n, char hex[65]) {
    axon_sha256_t h;
    uint8_t d[32];
    axon_sha256_init(&h);
    /* fed in two pieces, to cover the incremental path */
    axon_sha256_update(&h, s, n / 2);
    axon_sha256_update(&h, s + n / 2, n - n / 2);
    axon_sha256_final(&h, d);
    axon_sha256_hex(d, hex);
}

static void test_sha256_vectors(void) {
    char hex[65];
    hex_of("", 0, hex);
    CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
    hex_of("abc", 3, hex);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(two, strlen(two), hex);
    CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0);
    char *million = malloc(1000000);
    CHECK(million != NULL);
    if (!million) return;
    memset(million, 'a', 1000000);
    hex_of(million, 1000000, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0);
    free(million);
}

static void test_disk_cache(void) {
    axon_disk_cache_t c;
    CHECK_OK(axon_disk_cache_open(&c));
    CHECK(strcmp(c.dir, cache_dir) == 0);
    char path[AXON_CACHE_PATH_MAX + 160];
    CHECK(!axon_disk_cache_lookup(&c, "k1", "bin", path, sizeof path));
    CHECK_OK(axon_disk_cache_store(&c, "k1", "bin", "payload", 7));
    CHECK(axon_disk_cache_lookup(&c, "k1", "bin", path, sizeof path));
    /* A corrupted payload no longer matches its hash: a miss, and storing again repairs it. */
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fputc('X', f);
        fclose(f);
    }
    CHECK(!axon_disk_cache_lookup(&c, "k1", "bin", path, sizeof path));
    CHECK_OK(axon_disk_cache_store(&c, "k1", "bin", "payload", 7));
    CHECK(axon_disk_cache_lookup(&c, "k1", "bin", path, sizeof path));
    /* A truncated hash file is a miss too. */
    char sum[AXON_CACHE_PATH_MAX + 200];
    snprintf(sum, sizeof sum, "%s.sha256", path);
    CHECK(truncate(sum, 10) == 0);
    CHECK(!axon_disk_cache_lookup(&c, "k1", "bin", path, sizeof path));
}

static axon_axir_module_t *parse(const char *text) {
    axon_axir_module_t *m = NULL;
    axon_axir_diag_t d;
    if (axon_axir_parse(text, strlen(text), &m, &d) != AXON_OK) {
        char buf[700];
        fprintf(stderr, "parse failed: %s\n", axon_axir_diag_format(&d, buf, sizeof buf));
    }
    return m;
}

/* x + bias, then tanh-gelu, and the sum also as a second result. */
static const char *const BIAS_GELU =
    "axir 1\n"
    "\n"
    "kernel @bias_gelu(%x: f32[s0, 8], %b: f32[8]) -> (f32[s0, 8], f32[s0, 8]) {\n"
    "  %0 = add(%x, %b) : f32[s0, 8]\n"
    "  %1 = gelu(%0) {approximate = \"tanh\"} : f32[s0, 8]\n"
    "  %2 = const() {value = 2.0} : f32[]\n"
    "  %3 = mul(%1, %2) : f32[s0, 8]\n"
    "  return %3, %0\n"
    "}\n";

static float gelu_tanh_ref(float x) {
    return 0.5f * x * (1.0f + tanhf(0.79788456080286535588f * (x + 0.044715f * (x * x * x))));
}

static void test_generated_bias_gelu(void) {
    axon_axir_module_t *m = parse(BIAS_GELU);
    CHECK(m != NULL);
    if (!m) return;
    axon_tier1_t *t = NULL;
    CHECK_OK(axon_tier1_start(m, 1, &t));
    CHECK_OK(axon_tier1_wait(t));
    axon_tier1_fn fn = axon_tier1_lookup(t, "bias_gelu");
    CHECK(fn != NULL);
    CHECK(axon_tier1_library(t) != NULL);
    CHECK(strlen(axon_tier1_key(t)) == 64);
    if (fn) {
        enum { R = 5, C = 8 };
        float x[R * 2 * C], b[C], out[R * C], sum[R * C];
        for (int i = 0; i < R * 2 * C; i++) x[i] = (float)(i % 13) * 0.37f - 2.0f;
        for (int i = 0; i < C; i++) b[i] = 0.25f * (float)i - 1.0f;
        /* x is read through a row stride of 2C (a strided view) in one call, contiguous in the other. */
        for (int strided = 0; strided < 2; strided++) {
            char *ptrs[4] = {(char *)x, (char *)b, (char *)out, (char *)sum};
            int64_t strides[4 * 8] = {0};
            strides[0 * 8 + 0] = strided ? 2 * C : C;
            strides[0 * 8 + 1] = 1;
            strides[1 * 8 + 1] = 1;   /* b: broadcast over rows */
            strides[2 * 8 + 0] = C;
            strides[2 * 8 + 1] = 1;
            strides[3 * 8 + 0] = C;
            strides[3 * 8 + 1] = 1;
            int64_t sizes[2] = {R, C};
            memset(out, 0, sizeof out);
            /* two ranges that split a row, to cover the row carry */
            fn(ptrs, strides, sizes, 2, 0, 11);
            fn(ptrs, strides, sizes, 2, 11, R * C);
            int bad = 0;
            for (int r = 0; r < R; r++)
                for (int c = 0; c < C; c++) {
                    float s = x[r * (strided ? 2 * C : C) + c] + b[c];
                    float want = gelu_tanh_ref(s) * 2.0f;
                    bad += fabsf(out[r * C + c] - want) > 1e-6f * (1 + fabsf(want)) || sum[r * C + c] != s;
                }
            CHECK(bad == 0);
        }
    }
    /* The same module again: a cache hit, the same library file. */
    axon_tier1_t *t2 = NULL;
    CHECK_OK(axon_tier1_start(m, 0, &t2));
    CHECK(axon_tier1_library(t2) != NULL);
    if (axon_tier1_library(t) && axon_tier1_library(t2))
        CHECK(strcmp(axon_tier1_library(t), axon_tier1_library(t2)) == 0);
    axon_tier1_destroy(t2);
    axon_tier1_destroy(t);
    axon_axir_module_destroy(m);
}

/* bfloat16 in and out, a cast to float32 and a comparison: rounding as eager mode does it. */
static void test_generated_bf16_launch(void) {
    static const char *const text =
        "axir 1\n"
        "\n"
        "kernel @k(%a: bf16[64], %b: bf16[64]) -> (bf16[64], bool[64]) {\n"
        "  %0 = mul(%a, %b) : bf16[64]\n"
        "  %1 = sigmoid(%0) : bf16[64]\n"
        "  %2 = gt(%a, %b) : bool[64]\n"
        "  return %1, %2\n"
        "}\n";
    axon_axir_module_t *m = parse(text);
    CHECK(m != NULL);
    if (!m) return;
    axon_tier1_t *t = NULL;
    CHECK_OK(axon_tier1_start(m, 1, &t));
    axon_tier1_fn fn = axon_tier1_lookup(t, "k");
    CHECK(fn != NULL);
    kc_dev_t k = kc_open(2);
    CHECK(k.rt != NULL);
    if (fn && k.rt) {
        uint16_t a[64], b[64], out[64];
        uint8_t gt[64];
        for (int i = 0; i < 64; i++) {
            float fa = (float)(i - 32) * 0.125f, fb = (float)((i * 7) % 64 - 32) * 0.0625f;
            uint32_t ua, ub;
            memcpy(&ua, &fa, 4);
            memcpy(&ub, &fb, 4);
            a[i] = (uint16_t)(ua >> 16);   /* exact: these values have short mantissas */
            b[i] = (uint16_t)(ub >> 16);
        }
        void *da = kc_upload(&k, a, sizeof a), *db = kc_upload(&k, b, sizeof b);
        void *dout = kc_upload(&k, NULL, sizeof out), *dgt = kc_upload(&k, NULL, sizeof gt);
        int64_t n = 64;
        axon_tensor_t ops[4] = {kc_tensor(da, AXON_BFLOAT16, 1, &n, NULL), kc_tensor(db, AXON_BFLOAT16, 1, &n, NULL),
                                kc_tensor(dout, AXON_BFLOAT16, 1, &n, NULL), kc_tensor(dgt, AXON_BOOL, 1, &n, NULL)};
        CHECK_OK(axon_tier1_launch(k.s, fn, 4, ops, &ops[2]));
        CHECK(kc_download(&k, out, dout, sizeof out) && kc_download(&k, gt, dgt, sizeof gt));
        int bad = 0;
        for (int i = 0; i < 64; i++) {
            uint32_t ua = (uint32_t)a[i] << 16, ub = (uint32_t)b[i] << 16;
            float fa, fb;
            memcpy(&fa, &ua, 4);
            memcpy(&fb, &ub, 4);
            /* eager: the product is rounded to bf16 before the sigmoid */
            float prod = fa * fb;
            uint32_t up;
            memcpy(&up, &prod, 4);
            up = (up + 0x7fffu + ((up >> 16) & 1u)) & 0xffff0000u;
            memcpy(&prod, &up, 4);
            float want = 1.0f / (1.0f + expf(-prod));
            uint32_t uo = (uint32_t)out[i] << 16;
            float got;
            memcpy(&got, &uo, 4);
            bad += fabsf(got - want) > 0.008f || gt[i] != (fa > fb);
        }
        CHECK(bad == 0);
        axon_mem_free(k.dev, da);
        axon_mem_free(k.dev, db);
        axon_mem_free(k.dev, dout);
        axon_mem_free(k.dev, dgt);
    }
    if (k.rt) axon_runtime_destroy(k.rt);
    axon_tier1_destroy(t);
    axon_axir_module_destroy(m);
}

/* Kernels codegen does not take stay on tier 0, named with a reason. */
static void test_unsupported_kernel(void) {
    static const char *const text =
        "axir 1\n"
        "\n"
        "kernel @red(%a: f32[4, 8]) -> (f32[4]) {\n"
        "  %0 = sum(%a) {dims = [1], keepdim = false} : f32[4]\n"
        "  return %0\n"
        "}\n";
    axon_axir_module_t *m = parse(text);
    CHECK(m != NULL);
    if (!m) return;
    char why[256] = "";
    CHECK(!axon_tier1_can_generate(axon_axir_module_find(m, "red"), why, sizeof why));
    CHECK(strstr(why, "sum") != NULL);
    axon_tier1_t *t = NULL;
    CHECK_OK(axon_tier1_start(m, 1, &t));
    CHECK(axon_tier1_lookup(t, "red") == NULL);
    CHECK_STATUS(axon_tier1_wait(t), AXON_ERROR_UNSUPPORTED);
    axon_tier1_destroy(t);
    axon_axir_module_destroy(m);
}

/* No compiler, or one that fails: tier 1 never becomes ready, with a reason; nothing crashes. */
static void test_without_compiler(void) {
    axon_axir_module_t *m = parse(BIAS_GELU);
    CHECK(m != NULL);
    if (!m) return;
    /* a different cache directory, so the entry built above is not simply found */
    char dir[300];
    snprintf(dir, sizeof dir, "%s/nocc", cache_dir);
    setenv("AXON_CACHE_DIR", dir, 1);
    setenv("AXON_CC", "", 1);
    axon_tier1_t *t = NULL;
    CHECK_OK(axon_tier1_start(m, 1, &t));
    CHECK(axon_tier1_lookup(t, "bias_gelu") == NULL);
    CHECK_STATUS(axon_tier1_wait(t), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("no C compiler");
    axon_tier1_destroy(t);
    setenv("AXON_CC", "/bin/false", 1);
    CHECK_OK(axon_tier1_start(m, 0, &t));   /* in the background this time */
    CHECK_STATUS(axon_tier1_wait(t), AXON_ERROR_CONFIG);
    CHECK_MSG("failed");
    CHECK(axon_tier1_lookup(t, "bias_gelu") == NULL);
    axon_tier1_destroy(t);
    unsetenv("AXON_CC");
    setenv("AXON_CACHE_DIR", cache_dir, 1);
    axon_axir_module_destroy(m);
}

/* A whole program: tier 0 (the tile interpreter) and tier 1 (generated C) give the same outputs, for several batch
 * sizes of one compile. */
static void test_program_tier0_matches_tier1(void) {
    static const char *const text =
        "axir 1\n"
        "\n"
        "func @main(%x: f32[s0, 48], %b: f32[48], %y: f32[s0, 48]) -> (f32[s0, 48]) {\n"
        "  %0 = add(%x, %b) : f32[s0, 48]\n"
        "  %1 = gelu(%0) {approximate = \"none\"} : f32[s0, 48]\n"
        "  %2 = mul(%1, %y) : f32[s0, 48]\n"
        "  %3 = sigmoid(%2) : f32[s0, 48]\n"
        "  %4 = log1p(%3) : f32[s0, 48]\n"
        "  %5 = sub(%4, %x) : f32[s0, 48]\n"
        "  return %5\n"
        "}\n";
    axon_compile_options_t o0 = axon_compile_options_default(), o1 = axon_compile_options_default();
    o0.tier1 = 0;
    axon_program_t *p0 = NULL, *p1 = NULL;
    axon_axir_diag_t d;
    CHECK_OK(axon_compile_text(text, strlen(text), &o0, &p0, &d));
    CHECK_OK(axon_compile_text(text, strlen(text), &o1, &p1, &d));
    if (!p0 || !p1) return;
    CHECK_STATUS(axon_program_wait_tier1(p0), AXON_ERROR_UNSUPPORTED);
    CHECK_OK(axon_program_wait_tier1(p1));
    CHECK(axon_program_tier1_ready(p0) == 0);
    CHECK(axon_program_tier1_ready(p1) >= 1);
    kc_dev_t k = kc_open(2);
    CHECK(k.rt != NULL);
    static const int64_t batches[] = {1, 7, 300};
    for (size_t bi = 0; k.rt && bi < sizeof batches / sizeof batches[0]; bi++) {
        int64_t rows = batches[bi], n = rows * 48, c = 48;
        float *hx = malloc((size_t)n * 4), *hy = malloc((size_t)n * 4), hb[48];
        float *r0 = malloc((size_t)n * 4), *r1 = malloc((size_t)n * 4);
        CHECK(hx && hy && r0 && r1);
        if (!hx || !hy || !r0 || !r1) break;
        for (int64_t i = 0; i < n; i++) {
            hx[i] = (float)((i * 37) % 101) * 0.05f - 2.5f;
            hy[i] = (float)((i * 11) % 17) * 0.2f - 1.6f;
        }
        for (int i = 0; i < 48; i++) hb[i] = (float)i * 0.01f;
        int64_t xs[2] = {rows, 48};
        axon_tensor_t in[3] = {kc_tensor(hx, AXON_FLOAT32, 2, xs, NULL), kc_tensor(hb, AXON_FLOAT32, 1, &c, NULL),
                               kc_tensor(hy, AXON_FLOAT32, 2, xs, NULL)};
        float *results[2] = {r0, r1};
        axon_program_t *progs[2] = {p0, p1};
        for (int t = 0; t < 2; t++) {
            axon_tensor_t out;
            memset(&out, 0, sizeof out);
            CHECK_OK(tc_run(&k, progs[t], 3, in, 1, &out, NULL));
            if (out.data) memcpy(results[t], out.data, (size_t)n * 4);
            tc_free_outs(1, &out);
        }
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += fabsf(r0[i] - r1[i]) > 1e-6f * (1.0f + fabsf(r0[i]));
        CHECK(bad == 0);
        free(hx);
        free(hy);
        free(r0);
        free(r1);
    }
    if (k.rt) axon_runtime_destroy(k.rt);
    axon_program_destroy(p0);
    axon_program_destroy(p1);
}

/* A program destroyed while its run is still queued stays alive until the run has executed (ASan would report the
 * fused step reading a freed program or calling into an unloaded library). */
static void test_destroy_while_queued(void) {
    static const char *const text =
        "axir 1\n"
        "\n"
        "func @main(%x: f32[4096]) -> (f32[4096]) {\n"
        "  %0 = mul(%x, %x) : f32[4096]\n"
        "  %1 = tanh(%0) : f32[4096]\n"
        "  return %1\n"
        "}\n";
    kc_dev_t k = kc_open(2);
    CHECK(k.rt != NULL);
    if (!k.rt) return;
    for (int tier1 = 0; tier1 < 2; tier1++) {
        axon_compile_options_t o = axon_compile_options_default();
        o.tier1 = tier1;
        axon_program_t *p = NULL;
        axon_axir_diag_t d;
        CHECK_OK(axon_compile_text(text, strlen(text), &o, &p, &d));
        if (!p) continue;
        if (tier1) CHECK_OK(axon_program_wait_tier1(p));
        float h[4096], r[4096];
        for (int i = 0; i < 4096; i++) h[i] = (float)(i % 64) / 32.0f - 1.0f;
        int64_t n = 4096;
        void *dx = kc_upload(&k, h, sizeof h), *dout = kc_upload(&k, NULL, sizeof r);
        axon_tensor_t in = kc_tensor(dx, AXON_FLOAT32, 1, &n, NULL), out;
        size_t ws = 0;
        CHECK_OK(axon_program_prepare(p, 1, &in, 1, &out, &ws));
        out.data = dout;
        void *dws = ws ? kc_upload(&k, NULL, ws) : NULL;
        /* a host callback that sleeps keeps the stream busy, so the run is still queued at destroy */
        CHECK_OK(axon_stream_add_callback(k.s, usleep_20ms, NULL));
        CHECK_OK(axon_program_run(p, k.s, 1, &in, 1, &out, dws, ws));
        axon_program_destroy(p);
        CHECK(kc_download(&k, r, dout, sizeof r));
        int bad = 0;
        for (int i = 0; i < 4096; i++) bad += fabsf(r[i] - tanhf(h[i] * h[i])) > 1e-6f;
        CHECK(bad == 0);
        axon_mem_free(k.dev, dx);
        axon_mem_free(k.dev, dout);
        if (dws) axon_mem_free(k.dev, dws);
    }
    axon_runtime_destroy(k.rt);
}

int main(void) {
    snprintf(cache_dir, sizeof cache_dir, "/tmp/axon-test-tier1-XXXXXX");
    if (!mkdtemp(cache_dir)) return 1;
    setenv("AXON_CACHE_DIR", cache_dir, 1);
    unsetenv("AXON_COMPILE_SYNC");
    RUN(test_sha256_vectors);
    RUN(test_disk_cache);
    RUN(test_generated_bias_gelu);
    RUN(test_generated_bf16_launch);
    RUN(test_unsupported_kernel);
    RUN(test_program_tier0_matches_tier1);
    RUN(test_destroy_while_queued);
    RUN(test_without_compiler);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cache_dir);
    return check_report();
}
