/* What the host CPU offers the kernels: feature bits detected at run time (the library must run on CPUs without
 * AVX-512 too) and the model name for reports. */
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "cpu.h"

unsigned axon_cpu_features(void) {
    unsigned f = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) f |= AXON_CPU_AVX2;
    if (__builtin_cpu_supports("fma")) f |= AXON_CPU_FMA;
    if (__builtin_cpu_supports("avx512f")) f |= AXON_CPU_AVX512F;
    if (__builtin_cpu_supports("avx512bw")) f |= AXON_CPU_AVX512BW;
    if (__builtin_cpu_supports("avx512vnni")) f |= AXON_CPU_AVX512VNNI;
    if (__builtin_cpu_supports("avx512bf16")) f |= AXON_CPU_AVX512BF16;
    if (__builtin_cpu_supports("avx512fp16")) f |= AXON_CPU_AVX512FP16;
    if (__builtin_cpu_supports("amx-tile")) f |= AXON_CPU_AMX;
    if (__builtin_cpu_supports("f16c")) f |= AXON_CPU_F16C;
    /* CPUID leaf 7: AMX-INT8 is EDX bit 25 of subleaf 0, AMX-FP16 EAX bit 21 of subleaf 1 (GCC 12's builtin knows
     * neither); both need the tiles */
    unsigned a = 0, b = 0, c = 0, d = 0;
    if ((f & AXON_CPU_AMX) && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        if (d & (1u << 25)) f |= AXON_CPU_AMX_INT8;
        if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 21))) f |= AXON_CPU_AMX_FP16;
    }
#endif
    return f;
}

void axon_cpu_model(char *out, size_t n) {
    if (n == 0) return;
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *colon = strchr(line, ':');
        if (!colon) break;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        snprintf(out, n, "%s", colon);
        size_t len = strlen(out);
        while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' ')) out[--len] = '\0';
        break;
    }
    fclose(f);
}

static const char *const feature_names[] = {"avx2",        "fma",         "avx512f", "avx512bw", "avx512vnni",
                                            "avx512_bf16", "avx512_fp16", "amx",     "f16c",     "amx_int8",
                                            "amx_fp16"};

const char *axon_cpu_feature_name(unsigned bit) {
    for (unsigned i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++)
        if (bit == (1u << i)) return feature_names[i];
    return NULL;
}
