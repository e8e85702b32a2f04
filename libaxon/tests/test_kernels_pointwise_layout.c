/* Pointwise kernels beyond per-element semantics (test_kernels_pointwise.c has those): layouts (broadcast, transposed,
 * reversed, strided out), number operands, inputs converted on load, NaN rules of maximum/minimum/clamp, rounding
 * and signed zeros, integer division by zero, empty tensors, results independent of the thread count, and bad
 * input refused at launch with messages that name the op, the dtypes and the shapes. */
#include <inttypes.h>

#include "kernels_check.h"
#include "pointwise_ref.h"

/* ---- small helpers ---- */

static uint16_t bf16_of(float f) { return ref_half_encode(f, 7, 127); }
static float bf16_val(uint16_t h) { return (float)ref_half_decode(h, 7, 127); }

/* A 1-d tensor of dtype d on the device holding n host values (zeros if host is NULL). */
static axon_tensor_t dev_vec(const kc_dev_t *k, axon_dtype_t d, const void *host, int64_t n) {
    void *p = kc_upload(k, host, (size_t)n * axon_dtype_size(d));
    return kc_tensor(p, d, 1, &n, NULL);
}

static void vec_free(const kc_dev_t *k, axon_tensor_t *t) { axon_mem_free(k->dev, t->data); }

/* Sync, then copy t's bytes (t contiguous) to host. */
static int fetch(const kc_dev_t *k, const axon_tensor_t *t, void *host) {
    return kc_download(k, host, t->data, (size_t)axon_tensor_numel(t) * axon_dtype_size(t->dtype));
}

/* ---- layouts ---- */

/* out[i][j] = a[i][j] + b[i][j] * 2 with a transposed (column-major), b broadcast along rows, then along columns,
 * then reversed; out both contiguous and transposed; float32 and bfloat16 (the buffered store path). */
static void test_broadcast_transposed_and_reversed_operands(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 67, C = 129 };
    float *ha = malloc(sizeof(float) * R * C), *hb = malloc(sizeof(float) * R * C);
    for (int i = 0; i < R * C; i++) ha[i] = (float)(i % 1000) * 0.25f - 100.0f, hb[i] = (float)(i % 77) - 30.0f;
    float *da = kc_upload(&k, ha, sizeof(float) * R * C), *db = kc_upload(&k, hb, sizeof(float) * R * C);
    const int64_t sizes[2] = {R, C};
    struct {
        const char *label;
        int64_t b_off, b_strides[2];
    } bcases[] = {
        {"b row-broadcast", 0, {0, 1}},
        {"b column-broadcast", 0, {1, 0}},
        {"b reversed", R * C - 1, {-C, -1}},
        {"b one element", 5, {0, 0}},
    };
    axon_op_params_t p = axon_op_params_default();
    p.alpha = axon_scalar_float(2.0);
    const int64_t a_tr[2] = {1, R}; /* a stored column-major: element (i, j) at j * R + i */
    axon_tensor_t ta = kc_tensor(da, AXON_FLOAT32, 2, sizes, a_tr);
    const axon_dtype_t out_dts[2] = {AXON_FLOAT32, AXON_BFLOAT16};
    for (size_t bc = 0; bc < sizeof bcases / sizeof bcases[0]; bc++)
        for (int od = 0; od < 2; od++)
            for (int out_tr = 0; out_tr < 2; out_tr++) {
                axon_dtype_t d = out_dts[od];
                void *dout = kc_upload(&k, NULL, axon_dtype_size(d) * R * C);
                const int64_t o_tr[2] = {1, R};
                axon_tensor_t to = kc_tensor(dout, d, 2, sizes, out_tr ? o_tr : NULL);
                axon_tensor_t tb = kc_tensor(db + bcases[bc].b_off, AXON_FLOAT32, 2, sizes, bcases[bc].b_strides);
                CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_ADD, &to, &ta, &tb, &p));
                unsigned char *got = malloc(axon_dtype_size(d) * R * C);
                CHECK(kc_download(&k, got, dout, axon_dtype_size(d) * R * C));
                int bad = 0;
                for (int i = 0; i < R && !bad; i++)
                    for (int j = 0; j < C && !bad; j++) {
                        const int64_t *bs = bcases[bc].b_strides;
                        float x = ha[j * R + i], y = hb[bcases[bc].b_off + i * bs[0] + j * bs[1]];
                        /* compute dtype = out's: a bfloat16 out rounds both inputs to bfloat16 on load */
                        long double xb = bf16_val(bf16_of(x)), yb = bf16_val(bf16_of(y));
                        long double want = d == AXON_FLOAT32 ? (long double)x + 2.0L * y : xb + 2.0L * yb;
                        size_t e = (size_t)(out_tr ? j * R + i : i * C + j);
                        long double g = ref_load_f(d, got + e * axon_dtype_size(d));
                        if (g != ref_round(d, want)) {
                            fprintf(stderr, "  %s, out %s%s: (%d, %d) got %Lg want %Lg\n", bcases[bc].label,
                                    axon_dtype_name(d), out_tr ? " transposed" : "", i, j, g, ref_round(d, want));
                            bad = 1;
                        }
                    }
                if (bad) check_failures_in_test++;
                free(got);
                axon_mem_free(k.dev, dout);
            }
    axon_mem_free(k.dev, da);
    axon_mem_free(k.dev, db);
    free(ha);
    free(hb);
    axon_runtime_destroy(k.rt);
}

/* Unary and ternary ops on strided views give the same bits as on contiguous copies of the same values. */
static void test_strided_views_equal_contiguous_copies(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 40, C = 50 };
    float host[3 * R * C];
    for (int i = 0; i < 3 * R * C; i++) host[i] = (float)((i * 37) % 211) * 0.05f - 5.0f;
    float *dev = kc_upload(&k, host, sizeof host);
    const int64_t sizes[2] = {R, C}, tr[2] = {1, R}, step[2] = {3 * C, 3}, bcol[2] = {1, 0};
    /* Contiguous copies of the views, made with the copy kernel. */
    float *cont = kc_upload(&k, NULL, sizeof(float) * 3 * R * C);
    axon_tensor_t views[3] = {kc_tensor(dev, AXON_FLOAT32, 2, sizes, tr),
                              kc_tensor(dev + 1, AXON_FLOAT32, 2, sizes, step),
                              kc_tensor(dev + 2, AXON_FLOAT32, 2, sizes, bcol)};
    axon_tensor_t copies[3];
    for (int v = 0; v < 3; v++) {
        copies[v] = kc_tensor(cont + v * R * C, AXON_FLOAT32, 2, sizes, NULL);
        CHECK_OK(axon_kernel_copy(k.s, &copies[v], &views[v]));
    }
    float *o1 = kc_upload(&k, NULL, sizeof(float) * R * C), *o2 = kc_upload(&k, NULL, sizeof(float) * R * C);
    axon_tensor_t t1 = kc_tensor(o1, AXON_FLOAT32, 2, sizes, NULL), t2 = kc_tensor(o2, AXON_FLOAT32, 2, sizes, NULL);
    float g1[R * C], g2[R * C];
    /* unary on a transposed view */
    CHECK_OK(axon_kernel_unary(k.s, AXON_UNARY_GELU, &t1, &views[0], NULL));
    CHECK_OK(axon_kernel_unary(k.s, AXON_UNARY_GELU, &t2, &copies[0], NULL));
    CHECK(kc_download(&k, g1, o1, sizeof g1) && kc_download(&k, g2, o2, sizeof g2));
    CHECK(memcmp(g1, g2, sizeof g1) == 0);
    /* ternary with a strided, a transposed and a column-broadcast operand */
    CHECK_OK(axon_kernel_ternary(k.s, AXON_TERNARY_LERP, &t1, &views[1], &views[0], &views[2], NULL));
    CHECK_OK(axon_kernel_ternary(k.s, AXON_TERNARY_LERP, &t2, &copies[1], &copies[0], &copies[2], NULL));
    CHECK(kc_download(&k, g1, o1, sizeof g1) && kc_download(&k, g2, o2, sizeof g2));
    CHECK(memcmp(g1, g2, sizeof g1) == 0);
    /* where with the condition a float32 column broadcast (nonzero is true) */
    CHECK_OK(axon_kernel_ternary(k.s, AXON_TERNARY_WHERE, &t1, &views[2], &views[0], &views[1], NULL));
    CHECK_OK(axon_kernel_ternary(k.s, AXON_TERNARY_WHERE, &t2, &copies[2], &copies[0], &copies[1], NULL));
    CHECK(kc_download(&k, g1, o1, sizeof g1) && kc_download(&k, g2, o2, sizeof g2));
    CHECK(memcmp(g1, g2, sizeof g1) == 0);
    int ok = 1;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            float c = host[2 + i], x = host[j * R + i], y = host[1 + i * 3 * C + j * 3];
            ok &= g1[i * C + j] == (c != 0 ? x : y);
        }
    CHECK(ok);
    axon_mem_free(k.dev, dev);
    axon_mem_free(k.dev, cont);
    axon_mem_free(k.dev, o1);
    axon_mem_free(k.dev, o2);
    axon_runtime_destroy(k.rt);
}

/* Launches whose tensors are all contiguous in the loop's dtypes run on flat ranges without the iterator: sizes from
 * one element to several parallel chunks, size-1 dimensions with odd strides (still contiguous), a number operand,
 * and in place. Float sums of small integers are exact, so the results must equal the host's bit for bit. */
static void test_contiguous_operands_run_flat(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { M = 70001 }; /* past two chunks of AXON_KERNEL_GRAIN */
    float *ha = malloc(sizeof(float) * M), *hb = malloc(sizeof(float) * M), *got = malloc(sizeof(float) * M);
    REQUIRE(ha && hb && got);
    for (int i = 0; i < M; i++) ha[i] = (float)(i % 97 - 48), hb[i] = (float)(i % 13);
    axon_op_params_t p = axon_op_params_default();
    p.alpha = axon_scalar_int(2);
    const int64_t ns[5] = {1, 7, 64, 1000, M};
    for (int t = 0; t < 5; t++) {
        int64_t n = ns[t];
        axon_tensor_t a = dev_vec(&k, AXON_FLOAT32, ha, n), b = dev_vec(&k, AXON_FLOAT32, hb, n);
        axon_tensor_t out = dev_vec(&k, AXON_FLOAT32, NULL, n);
        CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, &a, &b, &p));
        CHECK(fetch(&k, &out, got));
        int ok = 1;
        for (int64_t i = 0; i < n; i++) ok &= got[i] == ha[i] + 2.0f * hb[i];
        CHECK(ok);
        /* a * 3 (a number operand), then in place: a = a * b */
        axon_op_params_t q = axon_op_params_default();
        q.operand[1] = axon_scalar_int(3);
        CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_MUL, &out, &a, NULL, &q));
        CHECK(fetch(&k, &out, got));
        ok = 1;
        for (int64_t i = 0; i < n; i++) ok &= got[i] == ha[i] * 3.0f;
        CHECK(ok);
        CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_MUL, &a, &a, &b, NULL));
        CHECK(fetch(&k, &a, got));
        ok = 1;
        for (int64_t i = 0; i < n; i++) ok &= got[i] == ha[i] * hb[i];
        CHECK(ok);
        vec_free(&k, &a), vec_free(&k, &b), vec_free(&k, &out);
    }
    /* [3, 1, 4] with a stride of 999 on the size-1 dimension: contiguous all the same. */
    const int64_t sizes[3] = {3, 1, 4}, odd[3] = {4, 999, 1};
    float *d = kc_upload(&k, ha, sizeof(float) * 12), *e = kc_upload(&k, hb, sizeof(float) * 12);
    float *o = kc_upload(&k, NULL, sizeof(float) * 12);
    axon_tensor_t x = kc_tensor(d, AXON_FLOAT32, 3, sizes, odd), y = kc_tensor(e, AXON_FLOAT32, 3, sizes, NULL);
    axon_tensor_t z = kc_tensor(o, AXON_FLOAT32, 3, sizes, odd);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_SUB, &z, &x, &y, NULL));
    CHECK(kc_download(&k, got, o, sizeof(float) * 12));
    int ok = 1;
    for (int i = 0; i < 12; i++) ok &= got[i] == ha[i] - hb[i];
    CHECK(ok);
    axon_mem_free(k.dev, d), axon_mem_free(k.dev, e), axon_mem_free(k.dev, o);
    free(ha), free(hb), free(got);
    axon_runtime_destroy(k.rt);
}

static void test_in_place_ops_write_their_input(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 300, C = 301 };
    uint16_t *h = malloc(sizeof(uint16_t) * R * C), *got = malloc(sizeof(uint16_t) * R * C);
    for (int i = 0; i < R * C; i++) h[i] = bf16_of((float)(i % 50) - 25.0f);
    uint16_t *d = kc_upload(&k, h, sizeof(uint16_t) * R * C);
    const int64_t sizes[2] = {C, R}, tr[2] = {1, C};
    axon_tensor_t x = kc_tensor(d, AXON_BFLOAT16, 2, sizes, tr); /* a transposed view, used as in and out */
    axon_op_params_t p = axon_op_params_default();
    p.operand[1] = axon_scalar_float(0.5);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_MUL, &x, &x, NULL, &p));
    CHECK_OK(axon_kernel_unary(k.s, AXON_UNARY_NEG, &x, &x, NULL));
    CHECK(kc_download(&k, got, d, sizeof(uint16_t) * R * C));
    int ok = 1;
    for (int i = 0; i < R * C; i++) ok &= bf16_val(got[i]) == -0.5f * bf16_val(h[i]);
    CHECK(ok);
    axon_mem_free(k.dev, d);
    free(h);
    free(got);
    axon_runtime_destroy(k.rt);
}

/* An element's value depends on its input only, not on where it falls in a run: vectorized loops may call vector
 * versions of libm functions (libmvec) that differ from the scalar ones in the last bit, so every position must take
 * the same path. Checked on windows starting at offsets 0..16 and on single elements. */
static void test_values_do_not_depend_on_the_position(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    enum { M = 203 };
    const axon_unary_op_t ops[] = {AXON_UNARY_ERF, AXON_UNARY_TANH, AXON_UNARY_SIN, AXON_UNARY_COS,
                                   AXON_UNARY_TAN, AXON_UNARY_ATAN, AXON_UNARY_ASINH, AXON_UNARY_GELU,
                                   AXON_UNARY_GELU_TANH, AXON_UNARY_EXP, AXON_UNARY_SIGMOID};
    const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_BFLOAT16, AXON_FLOAT16};
    float xs[M];
    for (int i = 0; i < M; i++) xs[i] = (float)(i * 37 % M) * 0.05f - 5.0f;
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        axon_dtype_t d = dts[t];
        size_t es = axon_dtype_size(d);
        unsigned char host[M * 4], ref[M * 4], got[M * 4];
        for (int i = 0; i < M; i++) ref_store_f(d, host + i * es, xs[i]);
        axon_tensor_t x = dev_vec(&k, d, host, M), out = dev_vec(&k, d, NULL, M);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            CHECK_OK(axon_kernel_unary(k.s, ops[o], &out, &x, NULL));
            CHECK(fetch(&k, &out, ref));
            int bad = 0;
            for (int64_t off = 1; off <= 16; off++) { /* the window [off, M) */
                axon_tensor_t xv = x, ov = out;
                xv.data = (char *)x.data + off * (int64_t)es, ov.data = (char *)out.data + off * (int64_t)es;
                xv.sizes[0] = ov.sizes[0] = M - off;
                CHECK_OK(axon_kernel_unary(k.s, ops[o], &ov, &xv, NULL));
                CHECK(fetch(&k, &out, got));
                bad |= memcmp(got + off * es, ref + off * es, (M - off) * es) != 0;
            }
            for (int64_t i = 0; i < M; i += 7) { /* one element at a time */
                axon_tensor_t xv = x, ov = out;
                xv.data = (char *)x.data + i * (int64_t)es, ov.data = (char *)out.data + i * (int64_t)es;
                xv.sizes[0] = ov.sizes[0] = 1;
                CHECK_OK(axon_kernel_unary(k.s, ops[o], &ov, &xv, NULL));
            }
            CHECK(fetch(&k, &out, got));
            bad |= memcmp(got, ref, M * es) != 0;
            if (bad) {
                fprintf(stderr, "  %s %s: value depends on the position\n", axon_unary_op_name(ops[o]),
                        axon_dtype_name(d));
                check_failures_in_test++;
            }
        }
        vec_free(&k, &x), vec_free(&k, &out);
    }
    axon_runtime_destroy(k.rt);
}

/* ---- number operands ---- */

static void test_number_operands(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float xs[4] = {1.0f, -2.0f, 0.5f, NAN}, got[4];
    axon_tensor_t x = dev_vec(&k, AXON_FLOAT32, xs, 4), out = dev_vec(&k, AXON_FLOAT32, NULL, 4);
    axon_op_params_t p = axon_op_params_default();
    p.operand[0] = axon_scalar_float(10.0);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_SUB, &out, NULL, &x, &p)); /* 10 - x */
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 9.0f && got[1] == 12.0f && got[2] == 9.5f && isnan(got[3]));
    p.operand[1] = axon_scalar_int(3);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_POW, &out, &x, NULL, &p)); /* x ** 3 */
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 1.0f && got[1] == -8.0f && got[2] == 0.125f && isnan(got[3]));
    /* clamp(x, 0, 0.75) and where(x > 0, x, -1) with the bounds and the fallback as numbers */
    p.operand[1] = axon_scalar_int(0), p.operand[2] = axon_scalar_float(0.75);
    CHECK_OK(axon_kernel_ternary(k.s, AXON_TERNARY_CLAMP, &out, &x, NULL, NULL, &p));
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 0.75f && got[1] == 0.0f && got[2] == 0.5f && isnan(got[3]));
    uint8_t pos[4];
    axon_tensor_t mask = dev_vec(&k, AXON_BOOL, NULL, 4);
    p.operand[1] = axon_scalar_float(0.0);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_GT, &mask, &x, NULL, &p));
    CHECK(fetch(&k, &mask, pos));
    CHECK(pos[0] == 1 && pos[1] == 0 && pos[2] == 1 && pos[3] == 0);
    p.operand[2] = axon_scalar_int(-1);
    CHECK_OK(axon_kernel_ternary(k.s, AXON_TERNARY_WHERE, &out, &mask, &x, NULL, &p));
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 1.0f && got[1] == -1.0f && got[2] == 0.5f && got[3] == -1.0f);
    /* an int32 tensor plus 2.5 into a float32 out: the tensor converts on load, the number stays 2.5 */
    int32_t is[4] = {1, -3, 7, 0};
    axon_tensor_t xi = dev_vec(&k, AXON_INT32, is, 4);
    p.operand[1] = axon_scalar_float(2.5);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, &xi, NULL, &p));
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 3.5f && got[1] == -0.5f && got[2] == 9.5f && got[3] == 2.5f);
    vec_free(&k, &x), vec_free(&k, &out), vec_free(&k, &mask), vec_free(&k, &xi);
    axon_runtime_destroy(k.rt);
}

/* bfloat16 keeps a number in float32 to multiply (PyTorch's original_scalar_value), but rounds it to bfloat16 to add
 * and to compare (TensorIterator's common dtype). */
static void test_bfloat16_numbers_follow_pytorch(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    uint16_t three = bf16_of(3.0f), one = bf16_of(1.0f), got;
    axon_tensor_t x = dev_vec(&k, AXON_BFLOAT16, &three, 1), out = dev_vec(&k, AXON_BFLOAT16, NULL, 1);
    axon_op_params_t p = axon_op_params_default();
    p.operand[1] = axon_scalar_float(1.00390625); /* 1 + 2^-8: not a bfloat16 (rounds to 1.0) */
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_MUL, &out, &x, NULL, &p));
    CHECK(fetch(&k, &out, &got));
    CHECK_EQ_I64(got, bf16_of(3.01171875f)); /* 3.015625, as torch gives; 3.0 if the number were rounded first */
    /* The same value as a 0-stride bfloat16 tensor is already rounded to 1.0. */
    uint16_t num = bf16_of(1.00390625f);
    axon_tensor_t b0 = dev_vec(&k, AXON_BFLOAT16, &num, 1);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_MUL, &out, &x, &b0, NULL));
    CHECK(fetch(&k, &out, &got));
    CHECK_EQ_I64(got, three);
    /* alpha and an added number are taken in bfloat16, as torch 2.13 takes them: 2^-7 + 2^-16 rounds to 2^-7, and
     * 3 + 2^-7 is a tie, rounded to even 3.0 (3.015625 if they were kept in float) */
    p.alpha = axon_scalar_float(0x1p-7 + 0x1p-16);
    axon_tensor_t o1 = dev_vec(&k, AXON_BFLOAT16, &one, 1);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, &x, &o1, &p));
    CHECK(fetch(&k, &out, &got));
    CHECK_EQ_I64(got, three);
    axon_op_params_t pn = axon_op_params_default();
    pn.operand[1] = axon_scalar_float(0x1p-7 + 0x1p-16);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, &x, NULL, &pn));
    CHECK(fetch(&k, &out, &got));
    CHECK_EQ_I64(got, three);
    uint8_t eq;
    axon_tensor_t mask = dev_vec(&k, AXON_BOOL, NULL, 1);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_EQ, &mask, &o1, NULL, &p));
    CHECK(fetch(&k, &mask, &eq));
    CHECK_EQ_I64(eq, 1); /* bf16 1.0 == 1.00390625 is True in torch */
    vec_free(&k, &x), vec_free(&k, &out), vec_free(&k, &b0), vec_free(&k, &o1), vec_free(&k, &mask);
    axon_runtime_destroy(k.rt);
}

/* ---- dtypes ---- */

static void test_inputs_convert_to_the_compute_dtype_on_load(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    int32_t ia[4] = {7, -7, 100, 3};
    uint16_t hb[4] = {bf16_of(0.5f), bf16_of(-0.25f), bf16_of(3.0f), bf16_of(-8.0f)};
    float got[4];
    axon_tensor_t a = dev_vec(&k, AXON_INT32, ia, 4), b = dev_vec(&k, AXON_BFLOAT16, hb, 4);
    axon_tensor_t out = dev_vec(&k, AXON_FLOAT32, NULL, 4);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, &a, &b, NULL)); /* float32 = int32 + bfloat16 */
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 7.5f && got[1] == -7.25f && got[2] == 103.0f && got[3] == -5.0f);
    /* compute int32, out float32: integer floor division, then a cast (PyTorch's out= of another dtype) */
    int32_t ib[4] = {2, 2, -3, 2};
    axon_tensor_t b2 = dev_vec(&k, AXON_INT32, ib, 4);
    axon_op_params_t p = axon_op_params_default();
    p.compute = AXON_INT32;
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_DIV_FLOOR, &out, &a, &b2, &p));
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 3.0f && got[1] == -4.0f && got[2] == -34.0f && got[3] == 1.0f);
    /* Comparing int32 with bfloat16 needs their common dtype; with it, the store goes to a float32 out as 0/1. */
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_LT, &out, &a, &b, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("int32 and bfloat16");
    p.compute = AXON_FLOAT32;
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_LT, &out, &b, &a, &p));
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 1.0f && got[1] == 0.0f && got[2] == 1.0f && got[3] == 1.0f);
    /* float32 inputs into a bfloat16 out: computed in float32 when asked, so rounded once */
    float fa[4] = {1.0f, 1.0f, 256.0f, 0.0f}, fb[4] = {0x1p-8f, 0x1p-8f + 0x1p-20f, 1.0f, 0x1p-130f};
    axon_tensor_t ta = dev_vec(&k, AXON_FLOAT32, fa, 4), tb = dev_vec(&k, AXON_FLOAT32, fb, 4);
    axon_tensor_t ob = dev_vec(&k, AXON_BFLOAT16, NULL, 4);
    uint16_t gb[4];
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_ADD, &ob, &ta, &tb, &p));
    CHECK(fetch(&k, &ob, gb));
    CHECK_EQ_I64(gb[0], 0x3F80); /* 1 + 2^-8 is a tie: to even 1.0 */
    CHECK_EQ_I64(gb[1], 0x3F81); /* just above the tie: up */
    CHECK_EQ_I64(gb[2], 0x4380); /* 257 -> 256 (tie to even) */
    CHECK_EQ_I64(gb[3], bf16_of(0x1p-130f));
    vec_free(&k, &a), vec_free(&k, &b), vec_free(&k, &out), vec_free(&k, &b2);
    vec_free(&k, &ta), vec_free(&k, &tb), vec_free(&k, &ob);
    axon_runtime_destroy(k.rt);
}

/* ---- NaN, infinities, signed zeros, rounding ---- */

static void test_nan_rules_of_maximum_minimum_and_clamp(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    const float inf = INFINITY;
    float a[6] = {NAN, 1.0f, NAN, -inf, inf, 2.0f}, b[6] = {1.0f, NAN, NAN, 3.0f, -inf, -0.0f}, got[6];
    axon_tensor_t ta = dev_vec(&k, AXON_FLOAT32, a, 6), tb = dev_vec(&k, AXON_FLOAT32, b, 6);
    axon_tensor_t out = dev_vec(&k, AXON_FLOAT32, NULL, 6);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_MAXIMUM, &out, &ta, &tb, NULL));
    CHECK(fetch(&k, &out, got));
    CHECK(isnan(got[0]) && isnan(got[1]) && isnan(got[2]) && got[3] == 3.0f && got[4] == inf && got[5] == 2.0f);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_MINIMUM, &out, &ta, &tb, NULL));
    CHECK(fetch(&k, &out, got));
    CHECK(isnan(got[0]) && isnan(got[1]) && isnan(got[2]) && got[3] == -inf && got[4] == -inf && got[5] == 0.0f);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_FMAX, &out, &ta, &tb, NULL));
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 1.0f && got[1] == 1.0f && isnan(got[2]) && got[3] == 3.0f && got[4] == inf);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_FMIN, &out, &ta, &tb, NULL));
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 1.0f && got[1] == 1.0f && isnan(got[2]) && got[3] == -inf && got[4] == -inf);
    /* clamp(x, lo, hi): NaN anywhere gives NaN; lo > hi gives hi; infinities clamp */
    float x[6] = {NAN, 1.0f, 1.0f, 5.0f, -inf, inf}, lo[6] = {0.0f, NAN, 2.0f, 3.0f, -1.0f, -1.0f},
          hi[6] = {1.0f, 2.0f, NAN, 2.0f, 1.0f, 1.0f};
    axon_tensor_t tx = dev_vec(&k, AXON_FLOAT32, x, 6), tl = dev_vec(&k, AXON_FLOAT32, lo, 6),
                  th = dev_vec(&k, AXON_FLOAT32, hi, 6);
    CHECK_OK(axon_kernel_ternary(k.s, AXON_TERNARY_CLAMP, &out, &tx, &tl, &th, NULL));
    CHECK(fetch(&k, &out, got));
    CHECK(isnan(got[0]) && isnan(got[1]) && isnan(got[2]) && got[3] == 2.0f && got[4] == -1.0f && got[5] == 1.0f);
    /* relu and hardtanh keep NaN; sign(NaN) is 0 */
    CHECK_OK(axon_kernel_unary(k.s, AXON_UNARY_RELU, &out, &tx, NULL));
    CHECK(fetch(&k, &out, got));
    CHECK(isnan(got[0]) && got[4] == 0.0f && got[5] == inf);
    CHECK_OK(axon_kernel_unary(k.s, AXON_UNARY_SIGN, &out, &tx, NULL));
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == 0.0f && !signbit(got[0]) && got[4] == -1.0f);
    vec_free(&k, &ta), vec_free(&k, &tb), vec_free(&k, &out), vec_free(&k, &tx), vec_free(&k, &tl), vec_free(&k, &th);
    axon_runtime_destroy(k.rt);
}

static void test_rounding_is_half_even_and_keeps_signed_zeros(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    enum { M = 10 };
    const float x[M] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 0.49999997f, 8388609.0f, -0.0f, -0.7f, 1e30f};
    const struct {
        axon_unary_op_t op;
        float want[M];
    } cases[] = {
        {AXON_UNARY_ROUND, {0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 0.0f, 8388609.0f, -0.0f, -1.0f, 1e30f}},
        {AXON_UNARY_FLOOR, {0.0f, 1.0f, 2.0f, -1.0f, -3.0f, 0.0f, 8388609.0f, -0.0f, -1.0f, 1e30f}},
        {AXON_UNARY_CEIL, {1.0f, 2.0f, 3.0f, -0.0f, -2.0f, 1.0f, 8388609.0f, -0.0f, -0.0f, 1e30f}},
        {AXON_UNARY_TRUNC, {0.0f, 1.0f, 2.0f, -0.0f, -2.0f, 0.0f, 8388609.0f, -0.0f, -0.0f, 1e30f}},
        {AXON_UNARY_FRAC, {0.5f, 0.5f, 0.5f, -0.5f, -0.5f, 0.49999997f, 0.0f, 0.0f, -0.7f, 0.0f}}, /* -0 - -0 = +0 */
    };
    const axon_dtype_t dts[2] = {AXON_FLOAT32, AXON_FLOAT64};
    for (int t = 0; t < 2; t++) {
        double xd[M];
        for (int i = 0; i < M; i++) xd[i] = x[i];
        axon_tensor_t tx = t == 0 ? dev_vec(&k, AXON_FLOAT32, x, M) : dev_vec(&k, AXON_FLOAT64, xd, M);
        axon_tensor_t out = dev_vec(&k, dts[t], NULL, M);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            CHECK_OK(axon_kernel_unary(k.s, cases[c].op, &out, &tx, NULL));
            double got[M];
            float gf[M];
            CHECK(fetch(&k, &out, t == 0 ? (void *)gf : (void *)got));
            for (int i = 0; i < M; i++) {
                double g = t == 0 ? gf[i] : got[i];
                /* frac in float64 of the float32 value -0.7 is exact too, just a different number */
                double w = cases[c].op == AXON_UNARY_FRAC && t == 1 ? xd[i] - trunc(xd[i]) : cases[c].want[i];
                if (g != w || signbit(g) != signbit(w)) {
                    fprintf(stderr, "  %s %s(%.9g) = %.9g, want %.9g\n", axon_dtype_name(dts[t]),
                            axon_unary_op_name(cases[c].op), x[i], g, w);
                    check_failures_in_test++;
                }
            }
        }
        vec_free(&k, &tx), vec_free(&k, &out);
    }
    axon_runtime_destroy(k.rt);
}

/* ---- integer division ---- */

static void test_integer_division_by_zero_fails_at_sync(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const axon_binary_op_t ops[4] = {AXON_BINARY_DIV_FLOOR, AXON_BINARY_DIV_TRUNC, AXON_BINARY_REMAINDER,
                                     AXON_BINARY_FMOD};
    const axon_dtype_t dts[2] = {AXON_INT32, AXON_INT8};
    enum { M = 100000 }; /* several chunks: the zero is in the last one */
    for (int t = 0; t < 2; t++) {
        int64_t n = M;
        size_t es = axon_dtype_size(dts[t]);
        unsigned char *ha = malloc(M * es), *hb = malloc(M * es);
        for (int i = 0; i < M; i++) ref_store_i(dts[t], ha + i * es, i % 100 - 50), ref_store_i(dts[t], hb + i * es, 3);
        ref_store_i(dts[t], hb + (M - 7) * es, 0);
        axon_tensor_t a = dev_vec(&k, dts[t], ha, n), b = dev_vec(&k, dts[t], hb, n);
        axon_tensor_t out = dev_vec(&k, dts[t], NULL, n);
        for (int o = 0; o < 4; o++) {
            CHECK_OK(axon_kernel_binary(k.s, ops[o], &out, &a, &b, NULL)); /* launch is fine: data is not read */
            CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
            CHECK_MSG("ZeroDivisionError");
            CHECK_MSG(axon_binary_op_name(ops[o]));
            CHECK_OK(axon_stream_sync(k.s)); /* reported once */
        }
        free(ha), free(hb);
        vec_free(&k, &a), vec_free(&k, &b), vec_free(&k, &out);
    }
    /* Floats divide by zero the IEEE way, no error. */
    float fa[3] = {1.0f, -1.0f, 0.0f}, fz[3] = {0.0f, 0.0f, 0.0f}, got[3];
    axon_tensor_t a = dev_vec(&k, AXON_FLOAT32, fa, 3), z = dev_vec(&k, AXON_FLOAT32, fz, 3);
    axon_tensor_t out = dev_vec(&k, AXON_FLOAT32, NULL, 3);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_DIV_FLOOR, &out, &a, &z, NULL));
    CHECK(fetch(&k, &out, got));
    CHECK(got[0] == INFINITY && got[1] == -INFINITY && isnan(got[2]));
    vec_free(&k, &a), vec_free(&k, &z), vec_free(&k, &out);
    axon_runtime_destroy(k.rt);
}

static void test_int_min_divided_by_minus_one_wraps(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    int32_t a32[2] = {INT32_MIN, INT32_MIN}, m32[2] = {-1, -1}, g32[2];
    int64_t a64[2] = {INT64_MIN, 7}, m64[2] = {-1, -1}, g64[2];
    axon_tensor_t ta = dev_vec(&k, AXON_INT32, a32, 2), tm = dev_vec(&k, AXON_INT32, m32, 2);
    axon_tensor_t to = dev_vec(&k, AXON_INT32, NULL, 2);
    axon_tensor_t ta64 = dev_vec(&k, AXON_INT64, a64, 2), tm64 = dev_vec(&k, AXON_INT64, m64, 2);
    axon_tensor_t to64 = dev_vec(&k, AXON_INT64, NULL, 2);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_DIV_TRUNC, &to, &ta, &tm, NULL));
    CHECK(fetch(&k, &to, g32));
    CHECK(g32[0] == INT32_MIN && g32[1] == INT32_MIN); /* PyTorch's CPU kernel dies of SIGFPE here */
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_DIV_FLOOR, &to64, &ta64, &tm64, NULL));
    CHECK(fetch(&k, &to64, g64));
    CHECK(g64[0] == INT64_MIN && g64[1] == -7);
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_REMAINDER, &to64, &ta64, &tm64, NULL));
    CHECK(fetch(&k, &to64, g64));
    CHECK(g64[0] == 0 && g64[1] == 0);
    CHECK_OK(axon_kernel_unary(k.s, AXON_UNARY_ABS, &to, &ta, NULL));
    CHECK(fetch(&k, &to, g32));
    CHECK(g32[0] == INT32_MIN);
    vec_free(&k, &ta), vec_free(&k, &tm), vec_free(&k, &to), vec_free(&k, &ta64), vec_free(&k, &tm64);
    vec_free(&k, &to64);
    axon_runtime_destroy(k.rt);
}

/* ---- sizes ---- */

static void test_empty_tensors_enqueue_nothing(void) {
    axon_hw_null_t rec;
    CHECK_OK(axon_hw_null_create(&rec));
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, axon_hw_null(), rec);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    int64_t sizes[2] = {0, 3};
    axon_tensor_t t = kc_tensor(NULL, AXON_FLOAT32, 2, sizes, NULL), u = kc_tensor(NULL, AXON_INT32, 2, sizes, NULL);
    CHECK_OK(axon_kernel_unary(s, AXON_UNARY_EXP, &t, &t, NULL));
    CHECK_OK(axon_kernel_binary(s, AXON_BINARY_ADD, &t, &t, &u, NULL));
    CHECK_OK(axon_kernel_ternary(s, AXON_TERNARY_WHERE, &t, &u, &t, &t, NULL));
    /* checks still apply to empty tensors */
    CHECK_STATUS(axon_kernel_unary(s, AXON_UNARY_EXP, &u, &u, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(axon_hw_null_count(rec), 0);
    /* a real launch is recorded under the op's name */
    float x = 1.0f, y = 0.0f;
    t = kc_tensor(&y, AXON_FLOAT32, 0, NULL, NULL), u = kc_tensor(&x, AXON_FLOAT32, 0, NULL, NULL);
    CHECK_OK(axon_kernel_binary(s, AXON_BINARY_ADD, &t, &u, &u, NULL));
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(axon_hw_null_count(rec), 1);
    CHECK(axon_hw_null_name(rec, 0) && strcmp(axon_hw_null_name(rec, 0), "add") == 0);
    axon_runtime_destroy(rt);
    axon_hw_null_destroy(rec);
}

static void test_scalar_tensors(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    double v = 2.0, got = 0;
    axon_tensor_t a = dev_vec(&k, AXON_FLOAT64, &v, 1), out = dev_vec(&k, AXON_FLOAT64, NULL, 1);
    a.ndim = 0, out.ndim = 0;
    CHECK_OK(axon_kernel_unary(k.s, AXON_UNARY_SQRT, &out, &a, NULL));
    CHECK(fetch(&k, &out, &got));
    CHECK(got == sqrt(2.0));
    vec_free(&k, &a), vec_free(&k, &out);
    axon_runtime_destroy(k.rt);
}

/* Run three ops on ~1.3M elements with `threads` workers; returns the three outputs concatenated (malloc'd). */
static unsigned char *large_ops(int threads, const float *hx, const int32_t *hi, int64_t rows, int64_t cols) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return NULL;
    int64_t n = rows * cols, sizes[2] = {rows, cols}, tr[2] = {1, rows}, row[2] = {0, 1};
    float *x = kc_upload(&k, hx, (size_t)n * 4);
    int32_t *iv = kc_upload(&k, hi, (size_t)n * 4);
    size_t bytes = (size_t)n * (4 + 2 + 4);
    unsigned char *out = malloc(bytes), *dev = kc_upload(&k, NULL, bytes);
    axon_tensor_t tx = kc_tensor(x, AXON_FLOAT32, 2, sizes, NULL), txr = kc_tensor(x, AXON_FLOAT32, 2, sizes, row);
    axon_tensor_t o1 = kc_tensor(dev, AXON_FLOAT32, 2, sizes, NULL);
    axon_tensor_t o2 = kc_tensor(dev + n * 8, AXON_BFLOAT16, 2, sizes, NULL); /* after the int32 out: aligned */
    axon_tensor_t o3 = kc_tensor(dev + n * 4, AXON_INT32, 2, sizes, NULL);
    axon_tensor_t ti = kc_tensor(iv, AXON_INT32, 2, sizes, NULL);
    axon_tensor_t tit = kc_tensor(iv, AXON_INT32, 2, sizes, tr); /* (r, c) reads iv[c * rows + r] */
    axon_op_params_t p = axon_op_params_default();
    p.alpha = axon_scalar_float(0.5);
    int ok = axon_kernel_binary(k.s, AXON_BINARY_ADD, &o1, &tx, &txr, &p) == AXON_OK &&
             axon_kernel_unary(k.s, AXON_UNARY_GELU, &o2, &tx, NULL) == AXON_OK &&
             axon_kernel_binary(k.s, AXON_BINARY_DIV_FLOOR, &o3, &ti, &tit, NULL) == AXON_OK &&
             kc_download(&k, out, dev, bytes);
    axon_runtime_destroy(k.rt);
    if (!ok) free(out);
    return ok ? out : NULL;
}

static void test_results_do_not_depend_on_the_thread_count(void) {
    const int64_t rows = 1031, cols = 1237, n = rows * cols; /* 1.27M elements, odd sizes */
    float *hx = malloc((size_t)n * 4);
    int32_t *hi = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) {
        hx[i] = (float)((double)i * 1.0001 - 600000.0) * 1e-5f;
        hi[i] = (int32_t)(i * 7919 % 20011) - 10005;
        if (hi[i] == 0) hi[i] = 1;
    }
    unsigned char *one = large_ops(1, hx, hi, rows, cols), *two = large_ops(2, hx, hi, rows, cols);
    REQUIRE(one && two);
    CHECK(memcmp(one, two, (size_t)n * 10) == 0);
    /* and both are right, spot-checked */
    int ok = 1;
    for (int64_t e = 0; e < n; e += 997) {
        int64_t r = e / cols, c = e % cols;
        float add;
        int32_t q;
        memcpy(&add, one + e * 4, 4);
        memcpy(&q, one + n * 4 + e * 4, 4);
        ok &= add == hx[e] + 0.5f * hx[c];
        int64_t a = hi[e], b = hi[c * rows + r];
        ok &= q == (int32_t)(a / b - (a % b != 0 && (a < 0) != (b < 0)));
    }
    CHECK(ok);
    free(one), free(two), free(hx), free(hi);
}

/* ---- bad input ---- */

static void test_bad_input_is_refused_at_launch_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float *buf = kc_upload(&k, NULL, 256 * sizeof(float));
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s3[1] = {3}, st0[2] = {0, 1};
    axon_tensor_t out = kc_tensor(buf, AXON_FLOAT32, 2, s23, NULL), a = kc_tensor(buf + 32, AXON_FLOAT32, 2, s23, NULL);
    axon_tensor_t bad = kc_tensor(buf + 64, AXON_INT32, 2, s32, NULL);
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, &a, &bad, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("add: b shape [3, 2] (int32) does not match out shape [2, 3] (float32)");
    bad = kc_tensor(buf + 64, AXON_FLOAT32, 1, s3, NULL);
    CHECK_STATUS(axon_kernel_ternary(k.s, AXON_TERNARY_LERP, &out, &a, &a, &bad, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("lerp: c shape [3]");
    CHECK_STATUS(axon_kernel_unary(k.s, AXON_UNARY_EXP, NULL, &a, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("exp: out is NULL");
    CHECK_STATUS(axon_kernel_unary(k.s, AXON_UNARY_EXP, &out, NULL, NULL), AXON_ERROR_INVALID_ARG);
    bad = kc_tensor(buf, AXON_FLOAT32, 2, s23, st0);
    CHECK_STATUS(axon_kernel_unary(k.s, AXON_UNARY_EXP, &bad, &a, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("overlapping elements");
    bad = kc_tensor(buf + 33, AXON_FLOAT32, 2, s23, NULL); /* a shifted by one element */
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_MUL, &bad, &a, &a, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("partially overlaps input a");
    CHECK_STATUS(axon_kernel_unary(k.s, AXON_UNARY_COUNT, &out, &a, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_binary(k.s, (axon_binary_op_t)-1, &out, &a, &a, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_ternary(k.s, AXON_TERNARY_COUNT, &out, &a, &a, &a, NULL), AXON_ERROR_INVALID_ARG);
    /* numbers */
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, &a, NULL, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("operand b is NULL and params is NULL");
    axon_op_params_t p = axon_op_params_default();
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, NULL, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("at least one must be a tensor");
    p.operand[1] = axon_scalar_complex(1, 1);
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, &a, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("number operand b has dtype complex128");
    /* alpha: a float alpha with an integer compute dtype, as PyTorch refuses */
    axon_tensor_t oi = kc_tensor(buf + 128, AXON_INT32, 2, s23, NULL);
    p = axon_op_params_default();
    p.alpha = axon_scalar_float(0.5);
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_SUB, &oi, &oi, &oi, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("alpha 0.5 is a float");
    p = axon_op_params_default();
    p.compute = (axon_dtype_t)99;
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_ADD, &out, &a, &a, &p), AXON_ERROR_INVALID_ARG);
    /* unsupported: the message names op, dtypes and shapes */
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_BITWISE_AND, &out, &a, &a, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("bitwise_and is not defined for compute dtype float32 (out float32 [2, 3], a float32 [2, 3]");
    CHECK_STATUS(axon_kernel_unary(k.s, AXON_UNARY_SIN, &oi, &a, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("sin is not defined for compute dtype int32");
    axon_tensor_t oc = kc_tensor(buf + 128, AXON_COMPLEX64, 2, s23, NULL);
    CHECK_STATUS(axon_kernel_binary(k.s, AXON_BINARY_ATAN2, &oc, &a, &a, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("atan2 is not defined for compute dtype complex64");
    CHECK_OK(axon_stream_sync(k.s)); /* nothing bad was enqueued */
    /* the very same view as out is fine (in place) */
    CHECK_OK(axon_kernel_binary(k.s, AXON_BINARY_ADD, &a, &a, &a, NULL));
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

static void test_names_and_support_queries(void) {
    CHECK(strcmp(axon_unary_op_name(AXON_UNARY_GELU_TANH), "gelu_tanh") == 0);
    CHECK(strcmp(axon_unary_op_name(AXON_UNARY_SQUARE), "square") == 0);
    CHECK(strcmp(axon_binary_op_name(AXON_BINARY_DIV_FLOOR), "div_floor") == 0);
    CHECK(strcmp(axon_binary_op_name(AXON_BINARY_XLOGY), "xlogy") == 0);
    CHECK(strcmp(axon_ternary_op_name(AXON_TERNARY_CLAMP), "clamp") == 0);
    CHECK(strcmp(axon_unary_op_name(AXON_UNARY_COUNT), "invalid") == 0);
    CHECK(strcmp(axon_binary_op_name((axon_binary_op_t)-3), "invalid") == 0);
    CHECK(strcmp(axon_ternary_op_name(AXON_TERNARY_COUNT), "invalid") == 0);
    CHECK(axon_binary_supports(AXON_BINARY_ADD, AXON_BFLOAT16));
    CHECK(axon_binary_supports(AXON_BINARY_ADD, AXON_COMPLEX64));
    CHECK(!axon_binary_supports(AXON_BINARY_LT, AXON_COMPLEX128));
    CHECK(!axon_unary_supports(AXON_UNARY_COUNT, AXON_FLOAT32));
    CHECK(!axon_ternary_supports(AXON_TERNARY_LERP, AXON_DTYPE_COUNT));
    axon_op_params_t p = axon_op_params_default();
    CHECK(p.compute == AXON_DTYPE_COUNT && p.alpha.dtype == AXON_INT64 && p.alpha.i == 1);
    CHECK(p.negative_slope == 0.01 && p.threshold == 20.0 && p.min_val == -1.0 && p.max_val == 1.0);
}

int main(void) {
    RUN(test_broadcast_transposed_and_reversed_operands);
    RUN(test_strided_views_equal_contiguous_copies);
    RUN(test_contiguous_operands_run_flat);
    RUN(test_in_place_ops_write_their_input);
    RUN(test_values_do_not_depend_on_the_position);
    RUN(test_number_operands);
    RUN(test_bfloat16_numbers_follow_pytorch);
    RUN(test_inputs_convert_to_the_compute_dtype_on_load);
    RUN(test_nan_rules_of_maximum_minimum_and_clamp);
    RUN(test_rounding_is_half_even_and_keeps_signed_zeros);
    RUN(test_integer_division_by_zero_fails_at_sync);
    RUN(test_int_min_divided_by_minus_one_wraps);
    RUN(test_empty_tensors_enqueue_nothing);
    RUN(test_scalar_tensors);
    RUN(test_results_do_not_depend_on_the_thread_count);
    RUN(test_bad_input_is_refused_at_launch_with_a_message);
    RUN(test_names_and_support_queries);
    return check_report();
}
