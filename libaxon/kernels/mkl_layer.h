/* MKL's threading layer for every libaxon kernel that calls MKL (GEMM, FFT, LAPACK). Never installed. */
#ifndef AXON_MKL_LAYER_H
#define AXON_MKL_LAYER_H

/* Select MKL's sequential layer, once per process, before the first MKL call: libaxon splits its work over the
 * device's pool, so MKL's own threads would only compete for the same cores (and mkl_rt would otherwise load Intel's
 * OpenMP runtime). Also turns off LAPACKE's NaN check of its inputs (linalg_lapack.c). Safe from any thread. */
void axon_mkl_use_sequential(void);

/* name looked up in the MKL libaxon links (mkl_rt), or NULL. A plain call from libaxon binds to the first definition
 * in the process's global scope, and libtorch_cpu exports some MKL entry points of its own statically linked MKL (an
 * older build on its OpenMP threads: the 16-bit GEMMs and DFTI), so those are called through this instead. */
void *axon_mkl_symbol(const char *name);

#endif
