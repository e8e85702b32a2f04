/* What the bfloat16 attention on AMX tiles shares between its forward (attention_amx.c) and backward
 * (attention_amx_bwd.c). Never installed. */
#ifndef AXON_ATTENTION_AMX_H
#define AXON_ATTENTION_AMX_H

#include <stddef.h>
#include <stdint.h>

#include "attention_impl.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) /* as gemm_amx.c */
#define AT_AMX_X86 1
#include <immintrin.h>
#else
#define AT_AMX_X86 0
#endif

static inline int64_t at_round32(int64_t x) { return (x + 31) / 32 * 32; }

/* The next piece of a unit's scratch: count elements of es bytes at *off (64-byte aligned), which it advances; NULL
 * when base is (the layout only measured). */
static inline void *at_piece(char *base, size_t *off, size_t count, size_t es) {
    void *p = base ? base + *off : NULL;
    *off += (count * es + 63) / 64 * 64;
    return p;
}

/* Whether operand t is bfloat16 with unit stride along the head dim: rows the tile code reads as they are. */
static inline int at_bf16_unit_rows(const at_operand_t *t) { return t->dtype == AXON_BFLOAT16 && t->st[3] == 1; }

/* Row r0 of head h of batch b of a float32 operand (attention_f32_avx512.c). */
static inline const float *at_f32_rows(const at_operand_t *t, int64_t b, int64_t h, int64_t r0) {
    return (const float *)(const void *)(t->data + (b * t->st[0] + h * t->st[1] + r0 * t->st[2]) * 4);
}

/* Row r0 of head h of batch b of a bfloat16 operand. */
static inline const uint16_t *at_bf16_rows(const at_operand_t *t, int64_t b, int64_t h, int64_t r0) {
    return (const uint16_t *)(const void *)(t->data + (b * t->st[0] + h * t->st[1] + r0 * t->st[2]) * 2);
}

/* The end of a forward unit (attention_amx.c): rows [0, m) of acc (row stride ld) divided by their sums l, their
 * log-sum-exp mx + log l (+inf where every key was masked) into lse, and both stored for query rows i0.. of (b, h). */
void at_amx_finish_rows(const at_args_t *a, int64_t b, int64_t h, int64_t i0, int64_t m, float *acc, int64_t ld,
                        const float *mx, const float *l, float *lse);

#if AT_AMX_X86
#define AT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

/* 2^t for t <= 0 (a score minus its row's maximum, in units of ln 2), 0 below -126 (as at_vexp: a weight under
 * 2^-125 of the row's largest never matters), NaN kept: 2^f for f = t - round(t) in [-1/2, 1/2] by its Taylor
 * polynomial of degree 6 (relative error under 2e-7), scaled by 2^round(t) with vscalefps. */
__attribute__((target("avx512f"))) static inline __m512 at_exp2_512(__m512 t) { /* inlined by any AVX-512 target */
    const __mmask16 live = _mm512_cmp_ps_mask(t, _mm512_set1_ps(-126.0f), _CMP_NLT_UQ); /* t >= -126 or NaN */
    const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(t, n);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.5403530393381609e-4f), f, _mm512_set1_ps(1.3333558146428443e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(live, p, n);
}
#endif

#endif
