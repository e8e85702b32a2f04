/* What the GEMM files share inside libaxon (gemm.c plans and launches; gemm_backend.c and gemm_portable.c multiply
 * one block on one thread). Never installed. */
#ifndef AXON_GEMM_IMPL_H
#define AXON_GEMM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "axon/tensor.h"

/* Every backend function computes, on the calling thread and without threads of its own,
 *     C = alpha * op(A) @ op(B) + beta * C
 * with C m x n row-major (row stride ldc), op(A) m x k and op(B) k x n. A is stored row-major with row stride lda:
 * as m x k when ta == 0, as k x m (op = transpose) when ta == 1; likewise B with tb. beta == 0 never reads C (NaN in C
 * is overwritten). m, n >= 1, k >= 0; leading dimensions >= 1 and at most INT32_MAX (BLAS takes int). */

/* The build's library (OpenBLAS) or the portable code. 0 on success, -1 if the portable code could not allocate its
 * packing buffers (C unchanged). */
int axon_gemm_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
int axon_gemm_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
                   const double *b, int64_t ldb, double beta, double *c, int64_t ldc);
/* bytes of 64-byte aligned memory for one role (slot) in a product, kept by the calling thread for its next product
 * (gemm_scratch.c; NULL when out of memory); give it back with axon_gemm_scratch_done(slot, p) on the same thread
 * before asking for that slot again. */
enum { AXON_GEMM_SCRATCH_PACK, AXON_GEMM_SCRATCH_A, AXON_GEMM_SCRATCH_B, AXON_GEMM_SCRATCH_C, AXON_GEMM_SCRATCH_SLOTS };
void *axon_gemm_scratch(int slot, size_t bytes);
void axon_gemm_scratch_done(int slot, void *p);

/* bfloat16 A and B, float32 C, through MKL's cblas_gemm_bf16bf16f32, which widens as it packs: same contract as
 * axon_gemm_f32 otherwise. axon_gemm_bf16_available: whether the build has it (MKL); without, axon_gemm_bf16 returns
 * -1 and touches nothing. */
int axon_gemm_bf16_available(void);
int axon_gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t *a, int64_t lda,
                   const uint16_t *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* "mkl", "openblas" or "portable", for benchmarks and tests. */
const char *axon_gemm_backend_name(void);

/* Portable blocked versions (gemm_portable.c), always built: the fallback where no library was found. They malloc
 * their packing buffers; 0 on success, -1 if that fails (C unchanged). */
int axon_gemm_portable_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
int axon_gemm_portable_f64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                           int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc);

/* Few-row float32 GEMM (gemm_skinny.c): B streamed once as it is stored, AVX-512 when the CPU has it, else
 * portable C. Same contract as axon_gemm_f32 for m <= AXON_GEMM_SKINNY, or n <= AXON_GEMM_SKINNY (computed
 * transposed); returns 1, C untouched, for any other shape, 0 when done. Never allocates. axon_gemm_f32 calls it
 * for the shapes where it measured faster than the library (axon_gemm_skinny_wanted). */
#define AXON_GEMM_SKINNY 16
int axon_gemm_skinny_f32(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* The same with B bfloat16 or float16 (bdt) stored (n, k), a Linear's weight (op(B) = B^T, row stride ldb), widened
 * as it streams by: m <= AXON_GEMM_SKINNY and k >= 1 on a CPU with AVX-512F/BW/VL, else 1 (C untouched). */
int axon_gemm_skinny_16(axon_dtype_t bdt, int ta, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                        int64_t lda, const void *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* Complex GEMM (complex64: axon_c64_t elements, complex128: axon_c128_t), real alpha and beta: the library's cgemm and
 * zgemm (gemm_backend.c), else the plain loops of gemm_portable.c. Same contract as axon_gemm_f32; never fails. */
int axon_gemm_c64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                  const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
int axon_gemm_c128(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                   const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
int axon_gemm_portable_c64(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                           const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
int axon_gemm_portable_c128(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const void *a,
                            int64_t lda, const void *b, int64_t ldb, double beta, void *c, int64_t ldc);

/* Integer GEMM in int64 with two's complement wrap-around (no overflow UB): same contract, no library. */
void axon_gemm_i64(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t alpha, const int64_t *a, int64_t lda,
                   const int64_t *b, int64_t ldb, int64_t beta, int64_t *c, int64_t ldc);

/* One bfloat16, float16 or float32 product for oneDNN (gemm_onednn.c), on the calling thread with nthreads OpenMP threads:
 *     C = alpha * A @ B + beta * C + bias      (float32 accumulation, one rounding to dtype on store)
 * A is bsz x m x k and B bsz x k x n, any element strides (a batch stride of 0 broadcasts one matrix); C is bsz x m x n
 * with column stride 1. bias is NULL or n contiguous floats (already scaled). beta == 0 never reads C. */
typedef struct axon_gemm_lowp {
    axon_dtype_t dtype;          /* BFLOAT16, FLOAT16 or FLOAT32, shared by a, b and c */
    int nthreads;                /* OpenMP threads oneDNN may use; gemm.c passes 1 from each pool participant */
    int64_t bsz, m, n, k;        /* all >= 1 */
    const void *a;
    int64_t a_bs, a_rs, a_cs;    /* batch, row and column strides of a, in elements */
    const void *b;
    int64_t b_bs, b_rs, b_cs;
    void *c;
    int64_t c_bs, ldc;
    float alpha, beta;
    const float *bias;
} axon_gemm_lowp_t;

/* bfloat16 GEMM on AMX tiles (gemm_amx.c): C = alpha * A @ B + beta * C + bias (float32 accumulation, alpha, beta and
 * bias in float32, one rounding to nearest even on store). B is first packed (axon_gemm_amx_pack_b, any strides, by
 * panels of 32 columns, so the pool can share the work); then axon_gemm_amx_block computes rows [r0, r1) and panels
 * [p0, p1) of C on the calling thread: mc rows of A at a time are packed (their whole depth) into work, and each
 * group of nb panels is multiplied by depth slices of kc, the partial sums of the mc x nb * 32 block kept in float32
 * in work between slices (axon_gemm_amx_work_bytes(mc, k, kc, nb) bytes, 64-byte aligned). Every element is summed in
 * one fixed order, whatever block a call gets and whatever kc and nb are. Never allocates. */
typedef struct axon_gemm_amx {
    int64_t m, n, k;             /* all >= 1 */
    const uint16_t *a;           /* element (i, d) at a[i * a_rs + d * a_cs] */
    int64_t a_rs, a_cs;
    const uint16_t *bp;          /* B packed by axon_gemm_amx_pack_b */
    uint16_t *c;                 /* row-major, column stride 1 */
    int64_t ldc;
    float alpha, beta;           /* beta == 0 never reads C */
    const float *bias;           /* NULL or n floats, already scaled */
    int64_t mc;                  /* rows of A packed at a time, a multiple of 32 */
    int64_t kc;                  /* depth of a slice, a multiple of 32 (k or more: one slice, no partial sums) */
    int64_t nb;                  /* panels multiplied slice by slice together, >= 1 */
} axon_gemm_amx_t;

/* 1 when the CPU has AMX-BF16 and the kernel lets this process use the tile state (asked once). */
int axon_gemm_amx_available(void);
int64_t axon_gemm_amx_chunks(int64_t k);
size_t axon_gemm_amx_b_bytes(int64_t k, int64_t n);
size_t axon_gemm_amx_a_bytes(int64_t mc, int64_t k);
size_t axon_gemm_amx_work_bytes(int64_t mc, int64_t k, int64_t kc, int64_t nb);
/* Panels [p0, p1) (of (n + 31) / 32) of B, k x n with element (i, j) at b[i * rs + j * cs], into bp. */
void axon_gemm_amx_pack_b(uint16_t *bp, const uint16_t *b, int64_t rs, int64_t cs, int64_t k, int64_t n, int64_t p0,
                          int64_t p1);
void axon_gemm_amx_block(const axon_gemm_amx_t *op, int64_t r0, int64_t r1, int64_t p0, int64_t p1, void *work);

/* Tiles for kernels that build their own products (attention_amx.c), on a CPU where axon_gemm_amx_available() says 1.
 * axon_gemm_amx_begin configures the calling thread's tiles, axon_gemm_amx_end releases them; between the two,
 * axon_gemm_amx_tile32 computes out (32 x 32 float32, row stride ldo) = in (NULL: zeros; row stride ldi) + A times
 * one packed panel of B (bp: nch consecutive chunks, as axon_gemm_amx_pack_b lays out a panel), A 32 rows of bfloat16
 * read as they are (row stride lda, nch * 32 deep, every element finite). in may be out. */
void axon_gemm_amx_begin(void);
void axon_gemm_amx_end(void);
void axon_gemm_amx_tile32(const uint16_t *a, int64_t lda, const uint16_t *bp, int64_t nch, const float *in,
                          int64_t ldi, float *out, int64_t ldo);

/* Few rows of bfloat16 out (gemm_amx.c), X (m x k, 1 <= m <= 32) times a Linear's weight W (n x k, rows along the
 * depth, row stride ldw), k a multiple of 32 and n of 16: out^T = W X^T on tiles, W's tiles loaded as it is stored
 * (no packing, so W streams once) and X packed once (axon_gemm_amx_few_pack_x into axon_gemm_amx_few_x_bytes(m, k)
 * bytes, 64-byte aligned). axon_gemm_amx_few computes columns [j0, j1) (multiples of 16) of out on the calling
 * thread, finishing as axon_gemm_amx_block does; each element one sum in a fixed order. Never allocates. */
typedef struct axon_gemm_amx_few {
    int64_t m, n, k;
    const uint16_t *w;
    int64_t ldw;
    const uint16_t *xp;          /* X packed by axon_gemm_amx_few_pack_x */
    uint16_t *c;                 /* row-major, column stride 1 */
    int64_t ldc;
    float alpha, beta;           /* beta == 0 never reads C */
    const float *bias;           /* NULL or n floats, already scaled */
} axon_gemm_amx_few_t;

size_t axon_gemm_amx_few_x_bytes(int64_t m, int64_t k);
/* X (element (i, d) at x[i * rs + d * cs]) into xp. */
void axon_gemm_amx_few_pack_x(uint16_t *xp, const uint16_t *x, int64_t rs, int64_t cs, int64_t m, int64_t k);
void axon_gemm_amx_few(const axon_gemm_amx_few_t *op, int64_t j0, int64_t j1);

/* 1 when libaxon was built with oneDNN and its CPU engine could be created. */
int axon_gemm_lowp_available(void);
/* Create (or find in the cache) the primitive for op's shape, dtype and strides; its pointers are not read.
 * 0: axon_gemm_lowp will run op; 1: not offered (no oneDNN, or only a slow reference kernel): use the float32 path;
 * -1: out of memory. */
int axon_gemm_lowp_prepare(const axon_gemm_lowp_t *op);
/* Run op. 0 on success; 1 not offered (C unchanged); -1 out of memory or a oneDNN failure (C unspecified; the
 * primitive is then offered no more). */
int axon_gemm_lowp(const axon_gemm_lowp_t *op);
/* "onednn" or "none", for benchmarks and tests. */
const char *axon_gemm_lowp_backend_name(void);

/* float32 GEMM for AVX-512F (gemm_avx512.c): C = alpha * op(A) @ op(B) + beta * C + bias, the contract of
 * axon_gemm_f32 plus an optional bias per column (bias) or per row (bias_rows), already scaled, added after beta * C.
 * A and B may be bfloat16 or float16 (src): packing widens them to float32, which is exact, so a 16-bit product costs
 * what a float32 one does, with no conversion pass over the operands; C stays float32.
 * B is packed by chunks of axon_gemm_avx512_chunk(k, n) panels of AXON_GEMM_AVX_NR columns (at most
 * AXON_GEMM_AVX_CHUNK_BYTES, axon_gemm_avx512_b_bytes(k, panels)): axon_gemm_avx512_pack_b packs panels [p0, p1) of
 * chunk [c0, c1) into bp, so the pool can share the work; then axon_gemm_avx512_rows computes rows [r0, r1) of the
 * chunk's columns of C on the calling thread, packing blocks of A into ap (axon_gemm_avx512_block_bytes(k)). For few
 * rows A is packed whole instead (axon_gemm_avx512_pack_a, micro-panels [u0, u1) of AXON_GEMM_AVX_MR rows;
 * axon_gemm_avx512_a_bytes(m, k)) and axon_gemm_avx512_cols computes panels [p0, p1) of C, packing each into bp (k x
 * AXON_GEMM_AVX_NR floats). Buffers 64-byte aligned. Every element is one sum in a fixed order, whatever block a call
 * gets. Never allocates. */
#define AXON_GEMM_AVX_MR 14
#define AXON_GEMM_AVX_NR 32
#define AXON_GEMM_AVX_KC 256
#define AXON_GEMM_AVX_MC 84
#define AXON_GEMM_AVX_CHUNK_BYTES ((size_t)16 << 20)
#define AXON_GEMM_AVX_SLICE_PANELS 32
typedef struct axon_gemm_avx512 {
    int64_t m, n, k;             /* all >= 1 */
    int ta, tb;
    axon_dtype_t src;            /* of A and B: FLOAT32, or BFLOAT16 / FLOAT16 widened exactly while packing */
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    float *c;
    int64_t ldc;
    float alpha, beta;           /* beta == 0 never reads C */
    const float *bias;           /* NULL or n floats */
    const float *bias_rows;      /* NULL or m floats */
} axon_gemm_avx512_t;

/* 1 when the CPU (and the OS) support AVX-512F, BW and VL (asked once). */
int axon_gemm_avx512_available(void);
int64_t axon_gemm_avx512_panels(int64_t n);
int64_t axon_gemm_avx512_chunk(int64_t k, int64_t n);
size_t axon_gemm_avx512_b_bytes(int64_t k, int64_t panels);
size_t axon_gemm_avx512_a_bytes(int64_t m, int64_t k);
size_t axon_gemm_avx512_block_bytes(int64_t k);
void axon_gemm_avx512_pack_b(const axon_gemm_avx512_t *op, float *bp, int64_t c0, int64_t c1, int64_t p0,
                             int64_t p1);
void axon_gemm_avx512_pack_a(const axon_gemm_avx512_t *op, float *ap, int64_t u0, int64_t u1);
void axon_gemm_avx512_rows(const axon_gemm_avx512_t *op, const float *bp, int64_t c0, int64_t c1, int64_t r0,
                           int64_t r1, float *ap);
void axon_gemm_avx512_cols(const axon_gemm_avx512_t *op, const float *ap, int64_t p0, int64_t p1, float *bp);
/* float32 products with few rows and B stored (n, k), unit stride along k (gemm_avx512_bt.c): op as above with src
 * FLOAT32 and tb set. A is packed into panels of AXON_GEMM_BT_MR rows (axon_gemm_avx512_bt_a_bytes(m, k)) by groups
 * of 16 rows, [g0, g1) of axon_gemm_avx512_bt_groups(m); then axon_gemm_avx512_bt_cols computes C's blocks of
 * AXON_GEMM_BT_NR columns [b0, b1) of axon_gemm_avx512_bt_blocks(n), reading B in place. Buffers 64-byte aligned.
 * Every element is one sum in depth order, whatever block a call gets. Never allocates. */
#define AXON_GEMM_BT_MR 32
#define AXON_GEMM_BT_NR 14
int64_t axon_gemm_avx512_bt_groups(int64_t m);
int64_t axon_gemm_avx512_bt_blocks(int64_t n);
size_t axon_gemm_avx512_bt_a_bytes(int64_t m, int64_t k);
void axon_gemm_avx512_bt_pack_a(const axon_gemm_avx512_t *op, float *ap, int64_t g0, int64_t g1);
void axon_gemm_avx512_bt_cols(const axon_gemm_avx512_t *op, const float *ap, int64_t b0, int64_t b1);
/* The same for AVX2 and FMA (gemm_avx2_bt.c), for CPUs without AVX-512: panels of AXON_GEMM_BT2_MR rows packed by
 * groups of 8 rows, blocks of AXON_GEMM_BT2_NR columns. axon_gemm_avx2_bt_available: 1 when the CPU runs AVX2 and
 * FMA. */
#define AXON_GEMM_BT2_MR 16
#define AXON_GEMM_BT2_NR 6
int axon_gemm_avx2_bt_available(void);
int64_t axon_gemm_avx2_bt_groups(int64_t m);
int64_t axon_gemm_avx2_bt_blocks(int64_t n);
size_t axon_gemm_avx2_bt_a_bytes(int64_t m, int64_t k);
void axon_gemm_avx2_bt_pack_a(const axon_gemm_avx512_t *op, float *ap, int64_t g0, int64_t g1);
void axon_gemm_avx2_bt_cols(const axon_gemm_avx512_t *op, const float *ap, int64_t b0, int64_t b1);
/* The whole of op on the calling thread (rows mode; B packed by chunks into the thread's kept scratch): 0, or -1
 * when that memory cannot be had (C unchanged). */
int axon_gemm_avx512_run(const axon_gemm_avx512_t *op);

#endif
