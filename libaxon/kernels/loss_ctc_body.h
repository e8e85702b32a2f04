/* loss_ctc.c's recursions in one arithmetic type, instantiated for float (float32 tensors, as PyTorch's CPU kernel
 * computes them) and double: include with CTC_T the type, CTC_NAME(x) its suffixed names and CTC_M(f) its libm
 * function (expf or exp). */

/* log(exp(x) + exp(y) + exp(z)), shifted by the largest (0 if all are -inf). */
static inline CTC_T CTC_NAME(ctc_lse3_)(CTC_T x, CTC_T y, CTC_T z) {
    CTC_T m = x > y ? x : y;
    m = m > z ? m : z;
    if (m == -INFINITY) m = 0;
    return CTC_M(log)(CTC_M(exp)(x - m) + CTC_M(exp)(y - m) + CTC_M(exp)(z - m)) + m;
}

static void CTC_NAME(ctc_forward_one_)(const ctc_args_t *a, int64_t b, int64_t off) {
    const int64_t il = ctc_i64(&a->il, b), tl = ctc_i64(&a->tl, b), L = a->L, S = 2 * tl + 1;
    CTC_T *al = (CTC_T *)a->alpha.data + b * a->T * L;
    const CTC_T *lp = a->lp.data;
    for (int64_t i = 0; i < a->T * L; i++) al[i] = -INFINITY;
#define LP(t, c) lp[((t) * a->N + b) * a->C + (c)]
#define AL(t, s) al[(t) * L + (s)]
    if (il == 0) { /* nothing to align: likelihood 1 for an empty target, else 0 */
        ((CTC_T *)a->nll.data)[b] = tl == 0 ? (CTC_T)-0.0 : (CTC_T)INFINITY;
        return;
    }
    AL(0, 0) = LP(0, a->blank);
    if (tl > 0) AL(0, 1) = LP(0, ctc_label(a, b, off, 0));
    for (int64_t t = 1; t < il; t++)
        for (int64_t s = 0; s < S; s++) {
            const int64_t cur = ctc_prime(a, b, off, s);
            const CTC_T l1 = AL(t - 1, s), l2 = s > 0 ? AL(t - 1, s - 1) : (CTC_T)-INFINITY;
            const CTC_T l3 = s > 1 && ctc_prime(a, b, off, s - 2) != cur ? AL(t - 1, s - 2) : (CTC_T)-INFINITY;
            AL(t, s) = CTC_NAME(ctc_lse3_)(l1, l2, l3) + LP(t, cur);
        }
    const CTC_T ll = tl == 0 ? AL(il - 1, 0)
                             : CTC_NAME(ctc_lse3_)(AL(il - 1, 2 * tl), AL(il - 1, 2 * tl - 1), (CTC_T)-INFINITY);
    ((CTC_T *)a->nll.data)[b] = -ll;
#undef AL
#undef LP
}

static void CTC_NAME(ctc_backward_one_)(const ctc_args_t *a, int64_t b, int64_t off) {
    const int64_t il = ctc_i64(&a->il, b), tl = ctc_i64(&a->tl, b), L = a->L, S = 2 * tl + 1, C = a->C;
    const CTC_T *al = (const CTC_T *)a->alpha.data + b * a->T * L, *lp = a->lp.data;
    CTC_T *be = (CTC_T *)a->beta.data + b * a->T * L, *gr = a->grad.data;
    const CTC_T nll = ((const CTC_T *)a->nll.data)[b], g = ((const CTC_T *)a->gout.data)[b];
#define LP(t, c) lp[((t) * a->N + b) * C + (c)]
#define AL(t, s) al[(t) * L + (s)]
#define BE(t, s) be[(t) * L + (s)]
#define GI(t, c) gr[((t) * a->N + b) * C + (c)]
    const int zero = a->zero_infinity && nll == INFINITY;
    /* grad[t, b, :] first holds log(sum over s labelled c of alpha beta): -inf, and 0 past the input */
    for (int64_t t = 0; t < a->T; t++)
        for (int64_t c = 0; c < C; c++) GI(t, c) = t < il && !zero ? (CTC_T)-INFINITY : (CTC_T)0;
    if (zero || il == 0) return;
    for (int64_t i = 0; i < a->T * L; i++) be[i] = -INFINITY;
    BE(il - 1, 2 * tl) = LP(il - 1, a->blank);
    GI(il - 1, a->blank) = AL(il - 1, 2 * tl) + BE(il - 1, 2 * tl);
    if (tl > 0) {
        const int64_t last = ctc_label(a, b, off, tl - 1);
        BE(il - 1, 2 * tl - 1) = LP(il - 1, last);
        GI(il - 1, last) = AL(il - 1, 2 * tl - 1) + BE(il - 1, 2 * tl - 1);
    }
    for (int64_t t = il - 2; t >= 0; t--)
        for (int64_t s = S - 1; s >= 0; s--) {
            const int64_t cur = ctc_prime(a, b, off, s);
            const CTC_T l1 = BE(t + 1, s), l2 = s < S - 1 ? BE(t + 1, s + 1) : (CTC_T)-INFINITY;
            const CTC_T l3 = s < S - 2 && ctc_prime(a, b, off, s + 2) != cur ? BE(t + 1, s + 2) : (CTC_T)-INFINITY;
            BE(t, s) = CTC_NAME(ctc_lse3_)(l1, l2, l3) + LP(t, cur);
            const CTC_T lab = AL(t, s) + BE(t, s), acc = GI(t, cur);
            GI(t, cur) = acc == -INFINITY ? lab : CTC_NAME(ctc_lse3_)(acc, lab, (CTC_T)-INFINITY);
        }
    for (int64_t t = 0; t < il; t++)
        for (int64_t c = 0; c < C; c++) {
            const CTC_T l = LP(t, c);
            GI(t, c) = (CTC_M(exp)(l) - CTC_M(exp)(GI(t, c) + nll - l)) * g;
        }
#undef GI
#undef BE
#undef AL
#undef LP
}
