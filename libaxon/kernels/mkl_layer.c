/* axon_mkl_use_sequential and axon_mkl_symbol (mkl_layer.h). */
#ifdef AXON_HAVE_MKL
#include <dlfcn.h>
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

static pthread_once_t mkl_lib_once = PTHREAD_ONCE_INIT;
static void *mkl_lib;

/* The library that serves MKL_Set_Threading_Layer, which torch does not export: the mkl_rt libaxon links. */
static void mkl_find_lib(void) {
    Dl_info info;
    if (dladdr((void *)MKL_Set_Threading_Layer, &info) && info.dli_fname)
        mkl_lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
}

void *axon_mkl_symbol(const char *name) {
    pthread_once(&mkl_lib_once, mkl_find_lib);
    return mkl_lib ? dlsym(mkl_lib, name) : NULL;
}
#else
typedef int axon_mkl_layer_unused; /* ISO C: a translation unit is not empty */
#endif
