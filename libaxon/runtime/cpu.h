/* Host CPU detection, shared by the runtime (device properties) and, later, the kernels' dispatch. */
#ifndef AXON_CPU_H
#define AXON_CPU_H

#include <stddef.h>

#include "internal.h"

/* enum axon_cpu_feature bits this CPU supports. Cannot fail. */
unsigned axon_cpu_features(void);
/* The CPU's model name into out (n bytes), "" if unknown. */
void axon_cpu_model(char *out, size_t n);

#endif
