/* What every libaxon benchmark program shares: stop at the first failed call, naming it and libaxon's message. */
#ifndef AXON_BENCH_COMMON_H
#define AXON_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include "axon/axon.h"

#define CHECKED(call)                                                                                \
    do {                                                                                             \
        axon_status_t st_ = (call);                                                                  \
        if (st_ != AXON_OK) {                                                                        \
            fprintf(stderr, "%s failed: %s: %s\n", #call, axon_status_name(st_), axon_last_error()); \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

#endif
