/* The element-wise loops over a score tile (the forward's online softmax, the backward's weights and dS, a float
 * mask added row by row) in one compute type: included by attention_rows.c once with AT_T float and once with AT_T
 * double, with AT_SFX the name suffix; both are undefined at the end. They are the attention's only loops over
 * every score, so they are compiled per instruction set (AXON_CLONES); every sum keeps the same AT_LANES partial
 * sums in every version, so all versions give the same bits. With AT_VEC (float) the row reductions are written
 * with the vector helpers of attention_rows.c, which the compiler does not find by itself (it spills the partial
 * sums to the stack to add them up). Declared in attention_impl.h. */
#define AT_CAT2(a, b) a##_##b
#define AT_CAT(a, b) AT_CAT2(a, b)
#define AT_FN(name) AT_CAT(name, AT_SFX)
#define AT_LANES 16

/* Max of init and x[0..n), NaN skipped: AT_LANES independent partial maxima so the loop vectorizes (a single
 * running maximum is a serial dependency chain), folded in halves. */
V16_INLINE AT_T AT_FN(at_row_max)(const AT_T *x, int64_t n, AT_T init) {
    AT_T part[AT_LANES];
    for (int k = 0; k < AT_LANES; k++) part[k] = init;
    int64_t c = 0;
#ifdef AT_VEC
    v16f v = v16_splat(init);
    for (; c + AT_LANES <= n; c += AT_LANES) v = v16_max(v16_load(x + c), v);
    init = at_hmax(v);
    for (; c < n; c++) init = x[c] > init ? x[c] : init;
    return init;
#endif
    for (; c + AT_LANES <= n; c += AT_LANES)
        for (int k = 0; k < AT_LANES; k++) part[k] = x[c + k] > part[k] ? x[c + k] : part[k];
    for (; c < n; c++) part[0] = x[c] > part[0] ? x[c] : part[0];
    for (int w = AT_LANES / 2; w > 0; w /= 2)
        for (int k = 0; k < w; k++) part[k] = part[k + w] > part[k] ? part[k + w] : part[k];
    return part[0];
}

/* x[c] = exp(x[c] - shift) for c in [0, n); returns their sum (AT_LANES partial sums, folded in halves: a fixed
 * order, and a short dependency chain where rows are short). */
V16_INLINE AT_T AT_FN(at_exp_sum)(AT_T *x, int64_t n, AT_T shift) {
    AT_T part[AT_LANES] = {0};
    int64_t c = 0;
#ifdef AT_VEC
    v16f v = v16_splat(0);
    for (; c + AT_LANES <= n; c += AT_LANES) {
        const v16f e = at_vexp(v16_sub_scalar(v16_load(x + c), shift));
        v16_store(x + c, e);
        v = v16_add(v, e);
    }
    AT_T tail = 0;
    for (; c < n; c++) tail += x[c] = PW_EXP(x[c] - shift);
    return at_hsum(v) + tail;
#endif
    for (; c + AT_LANES <= n; c += AT_LANES)
        for (int k = 0; k < AT_LANES; k++) part[k] += x[c + k] = PW_EXP(x[c + k] - shift);
    for (; c < n; c++) part[0] += x[c] = PW_EXP(x[c] - shift);
    for (int w = AT_LANES / 2; w > 0; w /= 2)
        for (int k = 0; k < w; k++) part[k] += part[k + w];
    return part[0];
}

/* In passes over all rows (maxima, then the rescale factors, then the exponentials) so that the rows' short
 * reductions and scalar steps overlap instead of forming one chain per row. */
AXON_CLONES void AT_FN(at_softmax_update)(AT_T *s, int64_t m, int64_t n, AT_T *mx, AT_T *l, AT_T *acc, int64_t ev) {
    for (int64_t r0 = 0; r0 < m; r0 += AT_BLOCK) {
        const int64_t rows = m - r0 < AT_BLOCK ? m - r0 : AT_BLOCK;
        AT_T top[AT_BLOCK], alpha[AT_BLOCK];
        for (int64_t r = 0; r < rows; r++) top[r] = AT_FN(at_row_max)(s + (r0 + r) * n, n, mx[r0 + r]);
        for (int64_t r = 0; r < rows; r++) /* rescales what earlier blocks summed (0 for the first) */
            alpha[r] = top[r] == (AT_T)-INFINITY ? (AT_T)1 : PW_EXP(mx[r0 + r] - top[r]);
        for (int64_t r = 0; r < rows; r++) {
            AT_T *row = s + (r0 + r) * n;
            if (top[r] == (AT_T)-INFINITY) { /* every key so far masked: nothing to add */
                memset(row, 0, (size_t)n * sizeof(AT_T));
                continue;
            }
            l[r0 + r] = l[r0 + r] * alpha[r] + AT_FN(at_exp_sum)(row, n, top[r]); /* NaN in the row reaches l */
            mx[r0 + r] = top[r];
        }
        for (int64_t r = 0; r < rows; r++)
            if (alpha[r] != (AT_T)1)
                for (int64_t c = 0; c < ev; c++) acc[(r0 + r) * ev + c] *= alpha[r];
    }
}

AXON_CLONES void AT_FN(at_grad_rows)(AT_T *p, AT_T *dp, int64_t m, int64_t n, const AT_T *lse, const AT_T *dd) {
    for (int64_t r = 0; r < m; r++) {
        AT_T *pr = p + r * n, *dr = dp + r * n;
        const AT_T shift = lse[r], di = dd[r];
        int64_t c = 0;
#ifdef AT_VEC
        for (; c + AT_LANES <= n; c += AT_LANES) {
            const v16f w = at_vexp(v16_sub_scalar(v16_load(pr + c), shift));
            v16_store(pr + c, w);
            v16_store(dr + c, v16_mul(w, v16_sub_scalar(v16_load(dr + c), di)));
        }
#endif
        for (; c < n; c++) {
            const AT_T w = PW_EXP(pr[c] - shift); /* lse = +inf (masked row) gives 0 */
            pr[c] = w;
            dr[c] = w * (dr[c] - di);
        }
    }
}

/* exp in a clone, not in its caller (attention_tile.h's baseline code), where pw_expf's fmaf steps are libm calls. */
AXON_CLONES void AT_FN(at_exp_rows)(AT_T *p, int64_t m, int64_t n, const AT_T *lse) {
    for (int64_t r = 0; r < m; r++) {
        AT_T *pr = p + r * n;
        const AT_T shift = lse[r];
        for (int64_t c = 0; c < n; c++) pr[c] = PW_EXP(pr[c] - shift); /* lse = +inf (masked row) gives 0 */
    }
}

AXON_CLONES void AT_FN(at_add_rows)(AT_T *s, int64_t lds, int64_t m, int64_t n, const AT_T *x, int64_t ldx) {
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c++) s[r * lds + c] += x[r * ldx + c];
}

AXON_CLONES void AT_FN(at_transpose)(const AT_T *x, int64_t ldx, int64_t m, int64_t d, AT_T *y) {
    int64_t r0 = 0, c0 = 0;
#ifdef AT_VEC
    for (; r0 + AT_LANES <= m; r0 += AT_LANES)
        for (c0 = 0; c0 + AT_LANES <= d; c0 += AT_LANES) at_transpose16(x + r0 * ldx + c0, ldx, y + c0 * m + r0, m);
#endif
    /* what the vector blocks left: the last columns of their rows, then the last rows */
    for (int64_t r = 0; r < r0; r++)
        for (int64_t c = c0; c < d; c++) y[c * m + r] = x[r * ldx + c];
    for (int64_t r = r0; r < m; r++)
        for (int64_t c = 0; c < d; c++) y[c * m + r] = x[r * ldx + c];
}

#undef AT_FN
#undef AT_LANES
#undef AT_CAT
#undef AT_CAT2
#undef AT_T
#undef AT_SFX
#undef AT_VEC
