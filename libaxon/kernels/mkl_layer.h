/* MKL's threading layer for every libaxon kernel that calls MKL (GEMM, FFT, LAPACK). Never installed. */
#ifndef AXON_MKL_LAYER_H
#define AXON_MKL_LAYER_H

/* Select MKL's sequential layer, once per process, before the first MKL call: libaxon splits its work over the
 * device's pool, so MKL's own threads would only compete for the same cores (and mkl_rt would otherwise load Intel's
 * OpenMP runtime). Also turns off LAPACKE's NaN check of its inputs (linalg_lapack.c). Safe from any thread. */
void axon_mkl_use_sequential(void);

#endif
