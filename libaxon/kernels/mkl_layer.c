/* axon_mkl_use_sequential (mkl_layer.h). */
#ifdef AXON_HAVE_MKL
#include <mkl_lapacke.h>
#include <mkl_service.h>
#include <pthread.h>

#include "mkl_layer.h"

static pthread_once_t mkl_once = PTHREAD_ONCE_INIT;

static void mkl_set_layer(void) {
    MKL_Set_Threading_Layer(MKL_THREADING_SEQUENTIAL);
    LAPACKE_set_nancheck(0); /* NaN inputs give NaN results, as in PyTorch, not an argument error */
}

void axon_mkl_use_sequential(void) { pthread_once(&mkl_once, mkl_set_layer); }
#else
typedef int axon_mkl_layer_unused; /* ISO C: a translation unit is not empty */
#endif
