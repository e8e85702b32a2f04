/* axon_kernel_arg_reduce, axon_kernel_cumulative and axon_kernel_cumulative_extreme against references (inner and
 * outer dims, views, ties, NaN, in-place scans, complex scans, logcumsumexp, cummax and cummin's latest-index rule);
 * every reduction bitwise identical with 1 and 2 threads on more than 1M elements; bad input refused at launch with
 * messages. */
#include <complex.h>

#include "reduce_ref.h"

static const axon_dtype_t dim_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16,
                                          AXON_INT32,   AXON_INT64,   AXON_INT8,     AXON_UINT8, AXON_BOOL};

/* A [R, C] view (strides st) of host buffer h: arg reduce along dim; compare indices and values. */
static int check_arg(const kc_dev_t *k, axon_arg_reduce_op_t op, axon_dtype_t d, const void *h, int64_t hn,
                     const int64_t *sz, const int64_t *st, int dim) {
    char *dev = rr_upload(k, d, h, hn);
    axon_tensor_t in = kc_tensor(dev, d, 2, sz, st);
    int64_t osz[2] = {sz[0], sz[1]};
    osz[dim] = 1;
    int64_t nout = osz[0] * osz[1];
    int64_t *di = rr_upload(k, AXON_INT64, NULL, nout);
    void *dv = rr_upload(k, d, NULL, nout);
    axon_tensor_t ti = kc_tensor(di, AXON_INT64, 2, osz, NULL), tv = kc_tensor(dv, d, 2, osz, NULL);
    int with_values = op < AXON_ARG_REDUCE_ARGMAX;
    int bad = 0;
    if (axon_kernel_arg_reduce(k->s, op, with_values ? &tv : NULL, &ti, &in, dim) != AXON_OK) {
        fprintf(stderr, "  %s: %s\n", axon_arg_reduce_op_name(op), axon_last_error());
        bad = 1;
    }
    int64_t *gi = malloc(sizeof(int64_t) * (size_t)nout);
    void *gv = malloc((size_t)nout * axon_dtype_size(d));
    if (!bad && !(kc_download(k, gi, di, sizeof(int64_t) * (size_t)nout) &&
                  kc_download(k, gv, dv, (size_t)nout * axon_dtype_size(d))))
        bad = 1;
    int mx = op == AXON_ARG_REDUCE_MAX || op == AXON_ARG_REDUCE_ARGMAX;
    for (int64_t o = 0; o < nout && !bad; o++) {
        int64_t i0 = dim == 0 ? 0 : o, j0 = dim == 0 ? o : 0, best = 0;
        long double bv = 0;
        for (int64_t t = 0; t < sz[dim]; t++) {
            int64_t i = dim == 0 ? t : i0, j = dim == 0 ? j0 : t;
            long double v = rr_get(d, h, i * st[0] + j * st[1]);
            if (t == 0 || (!isnan(bv) && (isnan(v) || (mx ? v > bv : v < bv)))) bv = v, best = t;
        }
        long double gvv = rr_get(d, gv, o);
        if (gi[o] != best || (with_values && !(isnan(bv) ? isnan(gvv) : gvv == bv))) {
            fprintf(stderr, "  %s %s dim %d: out %lld index %lld value %Lg, want %lld %Lg\n", axon_arg_reduce_op_name(op),
                    axon_dtype_name(d), dim, (long long)o, (long long)gi[o], gvv, (long long)best, bv);
            bad = 1;
        }
    }
    free(gi);
    free(gv);
    axon_mem_free(k->dev, dev);
    axon_mem_free(k->dev, di);
    axon_mem_free(k->dev, dv);
    return bad;
}

static void test_arg_reduce_matches_reference_with_first_ties_and_nan(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t sz[2] = {37, 300}, rowmajor[2] = {300, 1}, tsz[2] = {300, 37}, colmajor[2] = {1, 300};
    const int64_t short_rows[2] = {37, 1};   /* [300, 37] row-major: float32 lines shorter than the lanes */
    for (size_t di = 0; di < sizeof dim_dtypes / sizeof dim_dtypes[0]; di++) {
        axon_dtype_t d = dim_dtypes[di];
        void *h = rr_fill(d, 37 * 300, 0); /* few distinct values: many ties */
        for (int op = 0; op < AXON_ARG_REDUCE_OP_COUNT; op++)
            for (int dim = 0; dim < 2; dim++) {
                if (check_arg(&k, (axon_arg_reduce_op_t)op, d, h, 37 * 300, sz, rowmajor, dim))
                    check_failures_in_test++;
                if (check_arg(&k, (axon_arg_reduce_op_t)op, d, h, 37 * 300, tsz, colmajor, dim))
                    check_failures_in_test++;
                if (check_arg(&k, (axon_arg_reduce_op_t)op, d, h, 37 * 300, tsz, short_rows, dim))
                    check_failures_in_test++;
            }
        if (rr_is_float(d)) { /* two NaNs in a row and a column: the first one wins */
            rr_set(d, h, 5 * 300 + 7, NAN);
            rr_set(d, h, 5 * 300 + 100, NAN);
            rr_set(d, h, 20 * 300 + 7, NAN);
            for (int op = 0; op < AXON_ARG_REDUCE_OP_COUNT; op++)
                for (int dim = 0; dim < 2; dim++)
                    if (check_arg(&k, (axon_arg_reduce_op_t)op, d, h, 37 * 300, sz, rowmajor, dim))
                        check_failures_in_test++;
        }
        free(h);
    }
    axon_runtime_destroy(k.rt);
}

/* cumsum / cumprod along each dim of row-major and transposed views, out of the PyTorch dtype; and in place. */
static void test_cumulative_matches_reference_and_runs_in_place(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    const int64_t sz[2] = {23, 301}, rowmajor[2] = {301, 1}, tsz[2] = {301, 23}, colmajor[2] = {1, 301};
    for (size_t di = 0; di < sizeof dim_dtypes / sizeof dim_dtypes[0]; di++) {
        axon_dtype_t d = dim_dtypes[di], od = rr_is_float(d) ? d : AXON_INT64;
        for (int op = 0; op <= AXON_CUMULATIVE_PROD; op++) { /* logcumsumexp: its own test below */
            void *h = rr_fill(d, 23 * 301, op == AXON_CUMULATIVE_PROD);
            char *dev = rr_upload(&k, d, h, 23 * 301);
            void *dout = rr_upload(&k, od, NULL, 23 * 301);
            void *got = malloc(23 * 301 * axon_dtype_size(od));
            for (int v = 0; v < 2; v++)
                for (int dim = 0; dim < 2; dim++) {
                    const int64_t *s = v ? tsz : sz, *st = v ? colmajor : rowmajor;
                    axon_tensor_t in = kc_tensor(dev, d, 2, s, st), out = kc_tensor(dout, od, 2, s, NULL);
                    CHECK_OK(axon_kernel_cumulative(k.s, (axon_cumulative_op_t)op, &out, &in, dim - 2));
                    CHECK(kc_download(&k, got, dout, 23 * 301 * axon_dtype_size(od)));
                    int bad = 0;
                    for (int64_t i = 0; i < s[0] && !bad; i++)
                        for (int64_t j = 0; j < s[1] && !bad; j++) {
                            long double acc = op == AXON_CUMULATIVE_PROD, scale = 0;
                            uint64_t iacc = op == AXON_CUMULATIVE_PROD;
                            for (int64_t t = 0; t <= (dim ? j : i); t++) {
                                long double x = rr_get(d, h, (dim ? i : t) * st[0] + (dim ? t : j) * st[1]);
                                if (op == AXON_CUMULATIVE_PROD) acc *= x, iacc *= (uint64_t)(int64_t)x;
                                else acc += x, iacc += (uint64_t)(int64_t)x, scale += fabsl(x);
                            }
                            if (!rr_is_float(od)) acc = (long double)(int64_t)iacc;
                            long double g = rr_get(od, got, i * s[1] + j);
                            if (!rr_close(od, g, acc, op == AXON_CUMULATIVE_PROD ? fabsl(acc) : scale)) {
                                fprintf(stderr, "  %s %s view %d dim %d (%lld, %lld): %Lg want %Lg\n",
                                        axon_cumulative_op_name(op), axon_dtype_name(d), v, dim, (long long)i,
                                        (long long)j, g, acc);
                                bad = 1;
                            }
                        }
                    if (bad) check_failures_in_test++;
                }
            /* in place: out is the very same view as in */
            if (d == od) {
                const int64_t n1[1] = {23 * 301};
                axon_tensor_t io = kc_tensor(dev, d, 1, n1, NULL), ref = kc_tensor(dout, od, 1, n1, NULL);
                void *want = malloc(23 * 301 * axon_dtype_size(d));
                CHECK_OK(axon_kernel_cumulative(k.s, (axon_cumulative_op_t)op, &ref, &io, 0));
                CHECK_OK(axon_kernel_cumulative(k.s, (axon_cumulative_op_t)op, &io, &io, 0));
                CHECK(kc_download(&k, want, dout, 23 * 301 * axon_dtype_size(d)));
                CHECK(kc_download(&k, got, dev, 23 * 301 * axon_dtype_size(d)));
                CHECK(memcmp(want, got, 23 * 301 * axon_dtype_size(d)) == 0);
                free(want);
            }
            free(got);
            free(h);
            axon_mem_free(k.dev, dev);
            axon_mem_free(k.dev, dout);
        }
    }
    axon_runtime_destroy(k.rt);
}

/* Sum scans along rows take several rows at once (reduce_dim.c, rdim_lines_sum): each row must come out with the
 * bits it has when scanned alone (a one-row view takes the row-by-row path), for 19 rows (two groups and a rest) of
 * 301 elements (more than one block), for float and integer work types and a converted dtype, out of place and in
 * a row-major view whose rows are padded (row stride 310). */
static void test_sum_scans_of_several_rows_at_once_match_row_by_row(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    static const axon_dtype_t dts[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_INT64, AXON_INT32};
    const int64_t R = 19, C = 301, LD = 310;
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
        const axon_dtype_t d = dts[di], od = rr_is_float(d) ? d : AXON_INT64;
        const size_t oes = axon_dtype_size(od);
        void *h = rr_fill(d, R * LD, 0);
        char *dev = rr_upload(&k, d, h, R * LD);
        char *all = rr_upload(&k, od, NULL, R * C), *one = rr_upload(&k, od, NULL, C);
        const int64_t sz[2] = {R, C}, st[2] = {LD, 1}, rsz[2] = {1, C};
        axon_tensor_t in = kc_tensor(dev, d, 2, sz, st), out = kc_tensor(all, od, 2, sz, NULL);
        CHECK_OK(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_SUM, &out, &in, 1));
        unsigned char *got = malloc((size_t)(R * C) * oes), *want = malloc((size_t)C * oes);
        CHECK(kc_download(&k, got, all, (size_t)(R * C) * oes));
        for (int64_t i = 0; i < R; i++) {
            axon_tensor_t row = kc_tensor(dev + i * LD * (int64_t)axon_dtype_size(d), d, 2, rsz, st);
            axon_tensor_t rout = kc_tensor(one, od, 2, rsz, NULL);
            CHECK_OK(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_SUM, &rout, &row, 1));
            CHECK(kc_download(&k, want, one, (size_t)C * oes));
            if (memcmp(got + i * C * (int64_t)oes, want, (size_t)C * oes) != 0) {
                fprintf(stderr, "  cumsum %s row %lld: differs from the row scanned alone\n", axon_dtype_name(d),
                        (long long)i);
                check_failures_in_test++;
                break;
            }
        }
        free(got);
        free(want);
        free(h);
        axon_mem_free(k.dev, dev);
        axon_mem_free(k.dev, all);
        axon_mem_free(k.dev, one);
    }
    axon_runtime_destroy(k.rt);
}

/* Run every kind of kernel on a 1025 x 1031 float32 matrix (> 1M elements) with 1 and with 2 threads: full,
 * row-wise and column-wise reductions, var, logsumexp, norm, argmax, cumsum along both dims give the same bits. */
static void run_all(int threads, const float *h, int64_t R, int64_t C, unsigned char *res, size_t *used) {
    kc_dev_t k = kc_open(threads);
    if (!k.rt) return;
    float *dev = rr_upload(&k, AXON_FLOAT32, h, R * C);
    float *dout = rr_upload(&k, AXON_FLOAT32, NULL, R * C);
    const int64_t sz[2] = {R, C}, full[2] = {1, 1}, rows[2] = {R, 1}, cols[2] = {1, C};
    const int64_t *outs[3] = {full, rows, cols};
    axon_tensor_t in = kc_tensor(dev, AXON_FLOAT32, 2, sz, NULL);
    static const axon_reduce_op_t ops[] = {AXON_REDUCE_SUM, AXON_REDUCE_VAR, AXON_REDUCE_LOGSUMEXP, AXON_REDUCE_NORM,
                                           AXON_REDUCE_MEAN};
    *used = 0;
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
        for (int s = 0; s < 3; s++) {
            axon_tensor_t out = kc_tensor(dout, AXON_FLOAT32, 2, outs[s], NULL);
            int64_t n = outs[s][0] * outs[s][1];
            axon_kernel_reduce(k.s, ops[oi], &out, &in, NULL);
            kc_download(&k, res + *used, dout, sizeof(float) * (size_t)n);
            *used += sizeof(float) * (size_t)n;
        }
    axon_tensor_t out = kc_tensor(dout, AXON_FLOAT32, 2, sz, NULL);
    for (int dim = 0; dim < 2; dim++) {
        axon_kernel_cumulative(k.s, AXON_CUMULATIVE_SUM, &out, &in, dim);
        kc_download(&k, res + *used, dout, sizeof(float) * (size_t)(R * C));
        *used += sizeof(float) * (size_t)(R * C);
    }
    axon_mem_free(k.dev, dev);
    axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

/* Complex cumsum and cumprod (complex64 and complex128 out; a float32 in converted to complex128) along both dims of
 * row-major and transposed views, against long double complex arithmetic; complex products stay near the unit
 * circle so that the error bound is relative to |result|. */
/* logcumsumexp's step as PyTorch computes it (complex_c128.h), in long double: x or acc holding a NaN gives NaN, the
 * operand with the smaller real part is the min, equal infinite real parts keep the min (-inf), else
 * log1p(exp(min - max)) + max (its imaginary part is max's plus an angle: no wrapping into (-pi, pi]). */
static void lcse_ref(long double xre, long double xim, long double *are, long double *aim) {
    long double lre, lim, hre, him;
    if (isnan(*are) || isnan(*aim)) return;
    if (isnan(xre) || isnan(xim)) {
        *are = *aim = NAN;
        return;
    }
    if (xre < *are) lre = xre, lim = xim, hre = *are, him = *aim;
    else lre = *are, lim = *aim, hre = xre, him = xim;
    if (!isfinite(lre) && lre == hre) {
        if (lre < 0) *are = lre, *aim = lim;
        return;   /* +inf: not reached by the reference's inputs */
    }
    long double complex e = cexpl(CMPLXL(lre - hre, lim - him));
    long double complex r = clogl(1 + e);
    *are = creall(r) + hre, *aim = cimagl(r) + him;
}

static void test_complex_scans_match_a_long_double_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 13, C = 97, N = R * C };
    const int64_t sz[2] = {R, C}, rowmajor[2] = {C, 1}, tsz[2] = {C, R}, colmajor[2] = {1, C};
    const axon_dtype_t ins[] = {AXON_COMPLEX64, AXON_COMPLEX128, AXON_FLOAT32},
                       outs[] = {AXON_COMPLEX64, AXON_COMPLEX128, AXON_COMPLEX128};
    long double hre[N], him[N];
    for (int64_t e = 0; e < N; e++) {
        long double theta = (long double)((int)(rr_rand() % 1000) - 500) / 150;
        long double r = 1 + (long double)((int)(rr_rand() % 21) - 10) / 1000;
        hre[e] = r * cosl(theta), him[e] = r * sinl(theta);
    }
    for (int c = 0; c < 3; c++) {
        axon_dtype_t d = ins[c], od = outs[c];
        size_t es = axon_dtype_size(d), oes = axon_dtype_size(od);
        unsigned char *h = malloc(N * es), *got = malloc(N * oes);
        for (int64_t e = 0; e < N; e++) {
            if (d == AXON_COMPLEX64) ((float *)h)[2 * e] = (float)hre[e], ((float *)h)[2 * e + 1] = (float)him[e];
            else if (d == AXON_COMPLEX128)
                ((double *)h)[2 * e] = (double)hre[e], ((double *)h)[2 * e + 1] = (double)him[e];
            else ((float *)h)[e] = (float)hre[e];
        }
        void *dev = kc_upload(&k, h, N * es), *dout = kc_upload(&k, NULL, N * oes);
        for (int op = 0; op <= AXON_CUMULATIVE_LOGSUMEXP; op++)
            for (int v = 0; v < 2; v++)
                for (int dim = 0; dim < 2; dim++) {
                    const int64_t *s = v ? tsz : sz, *st = v ? colmajor : rowmajor;
                    axon_tensor_t in = kc_tensor(dev, d, 2, s, st), out = kc_tensor(dout, od, 2, s, NULL);
                    CHECK_OK(axon_kernel_cumulative(k.s, (axon_cumulative_op_t)op, &out, &in, dim));
                    CHECK(kc_download(&k, got, dout, N * oes));
                    int bad = 0;
                    for (int64_t i = 0; i < s[0] && !bad; i++)
                        for (int64_t j = 0; j < s[1] && !bad; j++) {
                            long double are = op == AXON_CUMULATIVE_PROD, aim = 0, scale = 0;
                            if (op == AXON_CUMULATIVE_LOGSUMEXP) are = -INFINITY;
                            for (int64_t t = 0; t <= (dim ? j : i); t++) {
                                int64_t e = (dim ? i : t) * st[0] + (dim ? t : j) * st[1];
                                long double xre = d == AXON_COMPLEX64 ? (long double)((float *)h)[2 * e]
                                                  : d == AXON_COMPLEX128 ? (long double)((double *)h)[2 * e]
                                                                         : (long double)((float *)h)[e];
                                long double xim = d == AXON_COMPLEX64 ? (long double)((float *)h)[2 * e + 1]
                                                  : d == AXON_COMPLEX128 ? (long double)((double *)h)[2 * e + 1] : 0;
                                if (op == AXON_CUMULATIVE_PROD) {
                                    long double re = are * xre - aim * xim;
                                    aim = are * xim + aim * xre, are = re;
                                } else if (op == AXON_CUMULATIVE_LOGSUMEXP) {
                                    lcse_ref(xre, xim, &are, &aim);
                                } else {
                                    are += xre, aim += xim, scale += fabsl(xre) + fabsl(xim);
                                }
                            }
                            if (op != AXON_CUMULATIVE_SUM) scale = 1 + sqrtl(are * are + aim * aim);
                            int64_t o = i * s[1] + j;
                            long double gre = od == AXON_COMPLEX64 ? ((float *)got)[2 * o] : ((double *)got)[2 * o];
                            long double gim =
                                od == AXON_COMPLEX64 ? ((float *)got)[2 * o + 1] : ((double *)got)[2 * o + 1];
                            long double tol = (od == AXON_COMPLEX64 ? 2e-6L : 1e-13L) * scale;
                            if (!(fabsl(gre - are) <= tol && fabsl(gim - aim) <= tol)) {
                                fprintf(stderr,
                                        "  %s %s -> %s view %d dim %d (%lld, %lld): (%Lg, %Lg) want (%Lg, %Lg)\n",
                                        axon_cumulative_op_name(op), axon_dtype_name(d), axon_dtype_name(od), v, dim,
                                        (long long)i, (long long)j, gre, gim, are, aim);
                                bad = 1;
                            }
                        }
                    if (bad) check_failures_in_test++;
                }
        axon_mem_free(k.dev, dev);
        axon_mem_free(k.dev, dout);
        free(h);
        free(got);
    }
    /* A complex in needs a complex out; an integer out has no logcumsumexp. */
    void *buf = kc_upload(&k, NULL, 64 * 16);
    const int64_t n8[1] = {8};
    axon_tensor_t cin = kc_tensor(buf, AXON_COMPLEX64, 1, n8, NULL);
    axon_tensor_t rout = kc_tensor((char *)buf + 512, AXON_FLOAT32, 1, n8, NULL);
    CHECK_STATUS(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_SUM, &rout, &cin, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("needs a complex out");
    axon_tensor_t iout = kc_tensor((char *)buf + 512, AXON_INT32, 1, n8, NULL);
    CHECK_STATUS(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_LOGSUMEXP, &iout, &iout, 0), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("not floating");
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, buf);
    axon_runtime_destroy(k.rt);
}

/* Complex logcumsumexp over lines whose imaginary parts leave (-pi, pi] (PyTorch's step adds an angle to the max's
 * imaginary part; a principal-branch log(exp(a) + exp(b)) would wrap them) and whose real parts hold NaN, -inf and
 * +inf: complex64 and complex128 against the long double step, along both dims. */
static void test_complex_logcumsumexp_keeps_pytorchs_branch_and_special_values(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 7, C = 41, N = R * C };
    const int64_t sz[2] = {R, C};
    long double hre[N], him[N];
    for (int64_t e = 0; e < N; e++) {
        hre[e] = (long double)((int)(rr_rand() % 601) - 300) / 100;   /* [-3, 3] */
        him[e] = (long double)((int)(rr_rand() % 1001) - 500) / 100;  /* [-5, 5] */
    }
    hre[2 * C + 5] = NAN;                  /* row 2 NaN from column 5 on; column 5 NaN from row 2 on */
    him[3 * C + 9] = NAN;                  /* a NaN imaginary part */
    hre[4 * C + 0] = -INFINITY;            /* row 4 starts at -inf (its first value, then finite ones) */
    hre[5 * C + 0] = hre[5 * C + 1] = -INFINITY;   /* two -inf in a row: the min is kept */
    hre[6 * C + 3] = INFINITY;             /* +inf: log(exp(min) + exp(max)) once both are +inf */
    hre[6 * C + 4] = INFINITY;
    for (int c = 0; c < 2; c++) {
        const axon_dtype_t d = c ? AXON_COMPLEX128 : AXON_COMPLEX64;
        const size_t es = axon_dtype_size(d);
        unsigned char *h = malloc(N * es), *got = malloc(N * es);
        for (int64_t e = 0; e < N; e++) {
            if (c) ((double *)h)[2 * e] = (double)hre[e], ((double *)h)[2 * e + 1] = (double)him[e];
            else ((float *)h)[2 * e] = (float)hre[e], ((float *)h)[2 * e + 1] = (float)him[e];
        }
        void *dev = kc_upload(&k, h, N * es), *dout = kc_upload(&k, NULL, N * es);
        for (int dim = 0; dim < 2; dim++) {
            axon_tensor_t in = kc_tensor(dev, d, 2, sz, NULL), out = kc_tensor(dout, d, 2, sz, NULL);
            CHECK_OK(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_LOGSUMEXP, &out, &in, dim));
            CHECK(kc_download(&k, got, dout, N * es));
            int bad = 0;
            for (int64_t line = 0; line < (dim ? R : C) && !bad; line++) {
                long double are = -INFINITY, aim = 0;
                for (int64_t t = 0; t < (dim ? C : R) && !bad; t++) {
                    const int64_t e = dim ? line * C + t : t * C + line;
                    const long double xre = c ? ((double *)h)[2 * e] : ((float *)h)[2 * e];
                    const long double xim = c ? ((double *)h)[2 * e + 1] : ((float *)h)[2 * e + 1];
                    if (!isfinite(are) && are == xre && are > 0) {   /* +inf and +inf: log(exp(min) + exp(max)) */
                        long double complex r = clogl(cexpl(CMPLXL(are, aim)) + cexpl(CMPLXL(xre, xim)));
                        are = creall(r), aim = cimagl(r);
                    } else {
                        lcse_ref(xre, xim, &are, &aim);
                    }
                    const long double gre = c ? ((double *)got)[2 * e] : ((float *)got)[2 * e];
                    const long double gim = c ? ((double *)got)[2 * e + 1] : ((float *)got)[2 * e + 1];
                    const long double tol = (c ? 1e-13L : 4e-6L) * (1 + fabsl(are) + fabsl(aim));
                    const int same_re = isnan(are) ? isnan(gre) : isinf(are) ? gre == are : fabsl(gre - are) <= tol;
                    const int same_im = isnan(aim) ? isnan(gim) : fabsl(gim - aim) <= tol;
                    if (!same_re || !same_im) {
                        fprintf(stderr, "  %s dim %d at %lld: (%Lg, %Lg) want (%Lg, %Lg)\n", axon_dtype_name(d), dim,
                                (long long)e, gre, gim, are, aim);
                        bad = 1;
                    }
                }
            }
            if (bad) check_failures_in_test++;
        }
        axon_mem_free(k.dev, dev);
        axon_mem_free(k.dev, dout);
        free(h);
        free(got);
    }
    axon_runtime_destroy(k.rt);
}

static void test_results_are_identical_with_1_and_2_threads(void) {
    const int64_t R = 1025, C = 1031;
    float *h = malloc(sizeof(float) * (size_t)(R * C));
    for (int64_t i = 0; i < R * C; i++) h[i] = (float)(rr_rand() % 100003) / 1000.0f - 50.0f;
    size_t cap = sizeof(float) * (size_t)(16 * (R + C + 1) + 2 * R * C), n1 = 0, n2 = 0;
    unsigned char *r1 = calloc(cap, 1), *r2 = calloc(cap, 1);
    run_all(1, h, R, C, r1, &n1);
    run_all(2, h, R, C, r2, &n2);
    CHECK(n1 > 0 && n1 == n2);
    CHECK_EQ_I64(kc_first_diff(r1, r2, n1), -1);
    free(r1);
    free(r2);
    free(h);
}

static void test_bad_input_is_refused_at_launch_with_messages(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.rt);
    float *dev = rr_upload(&k, AXON_FLOAT32, NULL, 64);
    const int64_t sz[2] = {4, 8}, o1[2] = {4, 1}, bad[2] = {3, 1}, o3[3] = {4, 1, 1};
    axon_tensor_t in = kc_tensor(dev, AXON_FLOAT32, 2, sz, NULL), out = kc_tensor(dev + 32, AXON_FLOAT32, 2, o1, NULL);
    axon_tensor_t wrong = kc_tensor(dev + 32, AXON_FLOAT32, 2, bad, NULL);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_OP_COUNT, &out, &in, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out of range");
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &wrong, &in, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("[3, 1]");
    CHECK_MSG("[4, 8]");
    axon_tensor_t nd3 = kc_tensor(dev + 32, AXON_FLOAT32, 3, o3, NULL);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &nd3, &in, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &out, NULL, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("sum: in");
    axon_tensor_t iout = kc_tensor(dev + 32, AXON_INT32, 2, o1, NULL);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_MEAN, &iout, &in, NULL), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("mean");
    axon_tensor_t cin = kc_tensor(dev, AXON_COMPLEX64, 2, sz, NULL);
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_SUM, &out, &cin, NULL), AXON_ERROR_UNSUPPORTED);
    axon_reduce_params_t p = axon_reduce_params_default();
    p.p = NAN;
    CHECK_STATUS(axon_kernel_reduce(k.s, AXON_REDUCE_NORM, &out, &in, &p), AXON_ERROR_INVALID_ARG);
    /* arg reductions */
    axon_tensor_t idx = kc_tensor(dev + 32, AXON_INT64, 2, o1, NULL), fidx = kc_tensor(dev + 32, AXON_FLOAT32, 2, o1, NULL);
    CHECK_STATUS(axon_kernel_arg_reduce(k.s, AXON_ARG_REDUCE_ARGMAX, NULL, &idx, &in, 2), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dim 2");
    CHECK_STATUS(axon_kernel_arg_reduce(k.s, AXON_ARG_REDUCE_ARGMAX, NULL, &fidx, &in, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("int64");
    CHECK_STATUS(axon_kernel_arg_reduce(k.s, AXON_ARG_REDUCE_ARGMAX, &out, &idx, &in, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out_values");
    CHECK_STATUS(axon_kernel_arg_reduce(k.s, AXON_ARG_REDUCE_MAX, &out, &idx, &in, 0), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("shape");
    const int64_t e[2] = {4, 0};
    axon_tensor_t ein = kc_tensor(dev, AXON_FLOAT32, 2, e, NULL);
    CHECK_STATUS(axon_kernel_arg_reduce(k.s, AXON_ARG_REDUCE_ARGMIN, NULL, &idx, &ein, -1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("argmin");
    CHECK_STATUS(axon_kernel_arg_reduce(k.s, AXON_ARG_REDUCE_OP_COUNT, NULL, &idx, &in, 1), AXON_ERROR_INVALID_ARG);
    /* scans */
    CHECK_STATUS(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_SUM, &out, &in, 1), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("cumsum");
    CHECK_STATUS(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_PROD, &in, &in, -3), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dim -3");
    CHECK_STATUS(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_OP_COUNT, &in, &in, 0), AXON_ERROR_INVALID_ARG);
    CHECK(strcmp(axon_reduce_op_name(AXON_REDUCE_LOGSUMEXP), "logsumexp") == 0);
    CHECK(strcmp(axon_reduce_op_name(AXON_REDUCE_OP_COUNT), "invalid") == 0);
    CHECK(strcmp(axon_arg_reduce_op_name(AXON_ARG_REDUCE_ARGMIN), "argmin") == 0);
    CHECK(strcmp(axon_cumulative_op_name(AXON_CUMULATIVE_PROD), "cumprod") == 0);
    CHECK_OK(axon_stream_sync(k.s));
    axon_mem_free(k.dev, dev);
    axon_runtime_destroy(k.rt);
}

/* logcumsumexp (floats) against a long double log-add-exp, and cummax / cummin against the running rule (ties and
 * NaNs take the latest index), along both dims of row-major and transposed views. */
static void test_logcumsumexp_and_running_extremes_match_references(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.rt);
    enum { R = 19, C = 157, N = R * C };
    const int64_t sz[2] = {R, C}, rowmajor[2] = {C, 1}, tsz[2] = {C, R}, colmajor[2] = {1, C};
    for (size_t di = 0; di < sizeof dim_dtypes / sizeof dim_dtypes[0]; di++) {
        const axon_dtype_t d = dim_dtypes[di];
        void *h = rr_fill(d, N, 0);
        if (rr_is_float(d)) {
            rr_set(d, h, 3 * C + 10, NAN);
            rr_set(d, h, 3 * C + 40, NAN);
            rr_set(d, h, 7 * C + 10, -INFINITY);
        }
        char *dev = rr_upload(&k, d, h, N);
        void *dv = rr_upload(&k, d, NULL, N), *gv = malloc(N * axon_dtype_size(d));
        int64_t *di64 = rr_upload(&k, AXON_INT64, NULL, N), *gi = malloc(N * sizeof *gi);
        for (int v = 0; v < 2; v++)
            for (int dim = 0; dim < 2; dim++) {
                const int64_t *s = v ? tsz : sz, *st = v ? colmajor : rowmajor;
                axon_tensor_t in = kc_tensor(dev, d, 2, s, st), out = kc_tensor(dv, d, 2, s, NULL);
                axon_tensor_t idx = kc_tensor(di64, AXON_INT64, 2, s, NULL);
                for (int op = -1; op < 2; op++) { /* -1: logcumsumexp; 0 cummax; 1 cummin */
                    if (op < 0 && !rr_is_float(d)) {
                        CHECK_STATUS(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_LOGSUMEXP, &out, &in, dim),
                                     AXON_ERROR_UNSUPPORTED);
                        continue;
                    }
                    if (op < 0) CHECK_OK(axon_kernel_cumulative(k.s, AXON_CUMULATIVE_LOGSUMEXP, &out, &in, dim));
                    else CHECK_OK(axon_kernel_cumulative_extreme(k.s, op ? AXON_ARG_REDUCE_MIN : AXON_ARG_REDUCE_MAX,
                                                                 &out, &idx, &in, dim));
                    CHECK(kc_download(&k, gv, dv, N * axon_dtype_size(d)));
                    CHECK(op < 0 || kc_download(&k, gi, di64, N * sizeof *gi));
                    int bad = 0;
                    const int64_t lines = dim ? s[0] : s[1], len = dim ? s[1] : s[0];
                    for (int64_t i = 0; i < lines && !bad; i++) {
                        long double acc = -INFINITY, best = 0;
                        int64_t bi = 0;
                        for (int64_t j = 0; j < len && !bad; j++) { /* position j of line i, which runs along dim */
                            const int64_t r = dim ? i : j, c = dim ? j : i;
                            const long double x = rr_get(d, h, r * st[0] + c * st[1]);
                            const int64_t t = j, o = r * s[1] + c;
                            long double want;
                            if (op < 0) {
                                const long double lo = isnan(acc) ? acc : acc < x ? acc : x;
                                const long double hi = isnan(acc) ? acc : x < acc ? acc : x;
                                acc = (lo != hi || isfinite(lo)) ? hi + log1pl(expl(lo - hi)) : x;
                                want = acc;
                            } else {
                                if (t == 0 || isnan(x) || (!isnan(best) && (op ? x <= best : x >= best))) best = x, bi = t;
                                want = best;
                            }
                            const long double g = rr_get(d, gv, o);
                            const int ok = op < 0 ? rr_close(d, g, want, fabsl(want) + 1)
                                                  : (isnan(want) ? isnan(g) : g == want) && gi[o] == bi;
                            if (!ok) {
                                fprintf(stderr, "  %s %s view %d dim %d (%lld, %lld): %Lg [%lld], want %Lg [%lld]\n",
                                        op < 0 ? "logcumsumexp" : op ? "cummin" : "cummax", axon_dtype_name(d), v, dim,
                                        (long long)r, (long long)c, g, op < 0 ? 0LL : (long long)gi[o], want,
                                        (long long)bi);
                                bad = 1;
                            }
                        }
                    }
                    if (bad) check_failures_in_test++;
                }
            }
        free(h);
        free(gv);
        free(gi);
        axon_mem_free(k.dev, dev);
        axon_mem_free(k.dev, dv);
        axon_mem_free(k.dev, di64);
    }
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_arg_reduce_matches_reference_with_first_ties_and_nan);
    RUN(test_cumulative_matches_reference_and_runs_in_place);
    RUN(test_complex_scans_match_a_long_double_reference);
    RUN(test_complex_logcumsumexp_keeps_pytorchs_branch_and_special_values);
    RUN(test_logcumsumexp_and_running_extremes_match_references);
    RUN(test_sum_scans_of_several_rows_at_once_match_row_by_row);
    RUN(test_results_are_identical_with_1_and_2_threads);
    RUN(test_bad_input_is_refused_at_launch_with_messages);
    return check_report();
}
