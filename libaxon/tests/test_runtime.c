/* The runtime: configuration from the environment, device properties, the default runtime, statuses and tracing. */
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"

static void test_every_status_has_a_name(void) {
    for (int s = 0; s < AXON_STATUS_COUNT; s++) CHECK(strncmp(axon_status_name((axon_status_t)s), "AXON_", 5) == 0);
    CHECK(strcmp(axon_status_name(AXON_ERROR_OUT_OF_MEMORY), "AXON_ERROR_OUT_OF_MEMORY") == 0);
    CHECK(strcmp(axon_status_name((axon_status_t)999), "AXON_STATUS_UNKNOWN") == 0);
    CHECK(strcmp(axon_version(), "0.1.0") == 0);
}

static void test_error_message_is_per_thread_and_clearable(void) {
    CHECK_STATUS(axon_device_get(NULL, 0, &(axon_device_t){0}), AXON_ERROR_INVALID_ARG);
    CHECK(axon_last_status() == AXON_ERROR_INVALID_ARG);
    CHECK_MSG("runtime is NULL");
    axon_clear_error();
    CHECK(axon_last_status() == AXON_OK && axon_last_error()[0] == '\0');
}

static void clear_env(void) {
    const char *vars[] = {"AXON_DEVICE_COUNT", "AXON_DEVICE_MEMORY", "AXON_THREADS", "AXON_STRICT",
                          "AXON_TRACE",        "AXON_HUGEPAGES",     "AXON_ALLOC_GUARD", "LOCAL_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

static void test_config_reads_the_environment(void) {
    clear_env();
    axon_config_t cfg;
    CHECK_OK(axon_config_from_env(&cfg));
    CHECK(cfg.device_count == 1 && cfg.threads_per_device >= 1 && cfg.memory_capacity > 0 && !cfg.strict);
    setenv("AXON_DEVICE_COUNT", "3", 1);
    setenv("AXON_DEVICE_MEMORY", "512M", 1);
    setenv("AXON_THREADS", "2", 1);
    CHECK_EQ_I64(cfg.hugepages, 0);
    CHECK_EQ_I64(cfg.alloc_guard, 0);
    setenv("AXON_TRACE", "1", 1);
    setenv("AXON_HUGEPAGES", "1", 1);
    setenv("AXON_ALLOC_GUARD", "1", 1);
    CHECK_OK(axon_config_from_env(&cfg));
    CHECK_EQ_I64(cfg.hugepages, 1);
    CHECK_EQ_I64(cfg.alloc_guard, 1);
    CHECK_EQ_I64(cfg.device_count, 3);
    CHECK_EQ_I64(cfg.memory_capacity, 512ll << 20);
    CHECK_EQ_I64(cfg.threads_per_device, 2);
    CHECK_EQ_I64(cfg.trace, 1);
    setenv("AXON_DEVICE_MEMORY", "2GiB", 1);
    CHECK_OK(axon_config_from_env(&cfg));
    CHECK_EQ_I64(cfg.memory_capacity, 2ll << 30);
    clear_env();
}

static void test_torchrun_local_world_sets_devices_and_splits_cores(void) {
    clear_env();
    axon_config_t one, two;
    CHECK_OK(axon_config_from_env(&one));
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    CHECK_OK(axon_config_from_env(&two));
    CHECK_EQ_I64(two.device_count, 2);
    CHECK(two.threads_per_device == (one.threads_per_device / 2 > 0 ? one.threads_per_device / 2 : 1));
    CHECK(two.memory_capacity <= one.memory_capacity / 2 + 1);
    clear_env();
}

static void test_malformed_environment_names_the_variable(void) {
    struct {
        const char *var, *value;
    } bad[] = {{"AXON_DEVICE_COUNT", "abc"}, {"AXON_DEVICE_COUNT", "0"},  {"AXON_DEVICE_COUNT", "65"},
               {"AXON_DEVICE_MEMORY", "lots"}, {"AXON_DEVICE_MEMORY", "0"}, {"AXON_DEVICE_MEMORY", "12X"},
               {"AXON_THREADS", "-1"},        {"AXON_STRICT", "yes"},
               {"AXON_HUGEPAGES", "2"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear_env();
        setenv(bad[i].var, bad[i].value, 1);
        axon_config_t cfg;
        CHECK_STATUS(axon_config_from_env(&cfg), AXON_ERROR_CONFIG);
        CHECK_MSG(bad[i].var);
        CHECK_MSG(bad[i].value);
        CHECK(cfg.device_count >= 1 && cfg.memory_capacity > 0); /* defaults left behind */
    }
    clear_env();
    setenv("LOCAL_WORLD_SIZE", "garbage", 1); /* torchrun's variable: ignored, not fatal */
    axon_config_t cfg;
    CHECK_OK(axon_config_from_env(&cfg));
    CHECK_EQ_I64(cfg.device_count, 1);
    clear_env();
    CHECK_STATUS(axon_config_from_env(NULL), AXON_ERROR_INVALID_ARG);
}

static void test_bad_configs_are_rejected_by_create(void) {
    axon_config_t cfg = {1, 1 << 20, 1, 0, 0, NULL, NULL, 0, 0};
    axon_runtime_t rt = (axon_runtime_t)&cfg;
    cfg.device_count = 0;
    CHECK_STATUS(axon_runtime_create(&cfg, &rt), AXON_ERROR_INVALID_ARG);
    CHECK(rt == NULL);
    cfg.device_count = 1;
    cfg.memory_capacity = 0;
    CHECK_STATUS(axon_runtime_create(&cfg, &rt), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("memory_capacity");
    cfg.memory_capacity = 1 << 20;
    cfg.threads_per_device = 0;
    CHECK_STATUS(axon_runtime_create(&cfg, &rt), AXON_ERROR_INVALID_ARG);
    cfg.threads_per_device = 1;
    axon_hw_ops_t wrong = *axon_hw_cpu();
    wrong.abi_version = 99;
    cfg.hw = &wrong;
    CHECK_STATUS(axon_runtime_create(&cfg, &rt), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("ABI");
    wrong.abi_version = AXON_HW_ABI_VERSION;
    wrong.execute = NULL;
    CHECK_STATUS(axon_runtime_create(&cfg, &rt), AXON_ERROR_INVALID_ARG);
    cfg.hw = axon_hw_null();
    cfg.strict = 1;
    CHECK_STATUS(axon_runtime_create(&cfg, &rt), AXON_ERROR_UNSUPPORTED); /* the null port cannot protect memory */
    CHECK(rt == NULL);
    CHECK_STATUS(axon_runtime_create(NULL, &rt), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_runtime_create(&cfg, NULL), AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(NULL);
}

static void test_devices_report_their_properties(void) {
    axon_runtime_t rt = check_runtime(2, 256 << 20, 2, NULL, NULL);
    REQUIRE(rt);
    CHECK_EQ_I64(axon_device_count(rt), 2);
    CHECK_EQ_I64(axon_device_count(NULL), 0);
    axon_device_t d;
    CHECK_OK(axon_device_get(rt, 1, &d));
    CHECK_EQ_I64(axon_device_index(d), 1);
    CHECK(axon_device_runtime(d) == rt);
    axon_device_props_t p;
    CHECK_OK(axon_device_properties(d, &p));
    CHECK(strcmp(p.name, "axon:1 (cpu)") == 0);
    CHECK(strcmp(p.port, "cpu") == 0);
    CHECK_EQ_I64(p.index, 1);
    CHECK_EQ_I64(p.threads, 2);
    CHECK_EQ_I64(p.total_memory, 256ll << 20);
    CHECK(p.page_size >= 4096);
#if defined(__x86_64__)
    CHECK((p.cpu_features & AXON_CPU_AVX2) != 0 || p.cpu_features == 0);
#endif
    CHECK(axon_cpu_feature_name(AXON_CPU_AVX512BF16) && strcmp(axon_cpu_feature_name(AXON_CPU_AVX512BF16), "avx512_bf16") == 0);
    CHECK(axon_cpu_feature_name(3) == NULL);
    const char *fp16 = axon_cpu_feature_name(AXON_CPU_AMX_FP16);
    CHECK(fp16 && strcmp(fp16, "amx_fp16") == 0);
    CHECK(axon_cpu_feature_name(AXON_CPU_AMX_FP16 << 1) == NULL);
    /* the AMX product kinds come with the tiles */
    CHECK(!(p.cpu_features & (AXON_CPU_AMX_INT8 | AXON_CPU_AMX_FP16)) || (p.cpu_features & AXON_CPU_AMX));
    CHECK_STATUS(axon_device_get(rt, 2, &d), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("invalid device index 2");
    CHECK(d == NULL);
    CHECK_STATUS(axon_device_get(rt, -1, &d), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_device_properties(NULL, &p), AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(rt);
}

static void test_default_runtime_is_created_once_from_the_environment(void) {
    clear_env();
    setenv("AXON_DEVICE_COUNT", "2", 1);
    setenv("AXON_DEVICE_MEMORY", "64M", 1);
    axon_runtime_t a = NULL, b = NULL;
    CHECK_OK(axon_runtime_default(&a));
    setenv("AXON_DEVICE_COUNT", "5", 1); /* read once: later changes do not matter */
    CHECK_OK(axon_runtime_default(&b));
    CHECK(a == b && a != NULL);
    CHECK_EQ_I64(axon_device_count(a), 2);
    clear_env();
}

static axon_status_t noop(const void *args, const axon_exec_t *ex) {
    (void)args;
    (void)ex;
    return AXON_OK;
}

static void test_trace_records_commands_and_exports_chrome_json(void) {
    axon_runtime_t rt = check_runtime(1, 16 << 20, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s;
    CHECK_OK(axon_stream_create(d, 0, &s));
    axon_launch_t l = {noop, NULL, 0, "my_\"kernel\"", 1234};
    CHECK_OK(axon_stream_launch(s, &l)); /* before enabling: not recorded */
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(axon_trace_count(rt), 0);
    CHECK_OK(axon_trace_enable(rt, 1));
    CHECK(axon_trace_enabled(rt));
    void *p;
    CHECK_OK(axon_mem_alloc(d, 4096, s, &p));
    CHECK_OK(axon_stream_launch(s, &l));
    CHECK_OK(axon_memset_async(p, 0, 4096, s));
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(axon_trace_count(rt), 2);
    axon_trace_record_t r[4];
    size_t got = 0;
    CHECK_OK(axon_trace_read(rt, 0, 4, r, &got));
    CHECK_EQ_I64(got, 2);
    CHECK(strcmp(r[0].name, "my_\"kernel\"") == 0 && r[0].bytes == 1234 && r[0].device == 0);
    CHECK(r[0].stream == axon_stream_id(s) && r[0].end_ns >= r[0].start_ns);
    CHECK(strcmp(r[1].name, "memset") == 0 && r[1].bytes == 4096 && r[1].start_ns >= r[0].end_ns);
    const char *path = "/tmp/axon_test_trace.json";
    CHECK_OK(axon_trace_export_chrome(rt, path));
    FILE *f = fopen(path, "r");
    REQUIRE(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    remove(path);
    CHECK(strstr(buf, "\"traceEvents\"") != NULL);
    CHECK(strstr(buf, "my_\\\"kernel\\\"") != NULL); /* escaped */
    CHECK(strstr(buf, "\"ph\": \"X\"") != NULL);
    CHECK(strstr(buf, "\"bytes\": 4096") != NULL);
    CHECK_STATUS(axon_trace_export_chrome(rt, "/nonexistent-dir/x.json"), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("/nonexistent-dir/x.json");
    CHECK_OK(axon_trace_clear(rt));
    CHECK_EQ_I64(axon_trace_count(rt), 0);
    CHECK_OK(axon_trace_enable(rt, 0));
    CHECK_OK(axon_mem_free(d, p));
    axon_runtime_destroy(rt);
}

/* Capacity after parsing `text` as AXON_DEVICE_MEMORY, or 0 if it was rejected with AXON_ERROR_CONFIG. */
static size_t capacity_from(const char *text) {
    setenv("AXON_DEVICE_MEMORY", text, 1);
    axon_config_t cfg;
    axon_status_t st = axon_config_from_env(&cfg);
    unsetenv("AXON_DEVICE_MEMORY");
    return st == AXON_OK ? cfg.memory_capacity : 0;
}

static void test_memory_sizes_accept_units_and_reject_garbage(void) {
    clear_env();
    CHECK_EQ_I64(capacity_from("1024"), 1024);
    CHECK_EQ_I64(capacity_from("3k"), 3072);
    CHECK_EQ_I64(capacity_from(" 1T "), 1ll << 40);
    CHECK_EQ_I64(capacity_from("5MB"), 5ll << 20);
    CHECK_EQ_I64(capacity_from("-5"), 0);
    CHECK_EQ_I64(capacity_from("1.5G"), 0);
    CHECK_EQ_I64(capacity_from("99999999999999999999999"), 0);
    CHECK_EQ_I64(capacity_from("17179869184T"), 0); /* overflows */
}

/* The VmFlags line of the mapping that holds p in /proc/self/smaps, or "" when not found. */
static void vm_flags_of(const void *p, char *out, size_t cap) {
    out[0] = '\0';
    FILE *f = fopen("/proc/self/smaps", "r");
    if (f == NULL) return;
    char line[512];
    int inside = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            snprintf(out, cap, "%.200s", line + 8);
            break;
        }
    }
    fclose(f);
}

/* Huge-page advice is opt-in: with it the kernel may compact memory inside a first touch (seconds on a VM). */
static void test_huge_page_advice_follows_the_config(void) {
    for (int on = 0; on <= 1; on++) {
        axon_config_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.device_count = 1;
        cfg.memory_capacity = 64 << 20;
        cfg.threads_per_device = 1;
        cfg.hugepages = on;
        axon_runtime_t rt = NULL;
        CHECK_OK(axon_runtime_create(&cfg, &rt));
        REQUIRE(rt);
        void *p = NULL;
        CHECK_OK(axon_mem_alloc(check_device(rt, 0), 8 << 20, NULL, &p));
        char flags[256];
        vm_flags_of(p, flags, sizeof flags);
        if (flags[0] == '\0') {
            fprintf(stderr, "  (no VmFlags in /proc/self/smaps: advice not checked)\n");
        } else {
            CHECK((strstr(flags, " hg") != NULL) == on);
        }
        CHECK_OK(axon_mem_free(check_device(rt, 0), p));
        axon_runtime_destroy(rt);
    }
}

int main(void) {
    RUN(test_every_status_has_a_name);
    RUN(test_error_message_is_per_thread_and_clearable);
    RUN(test_config_reads_the_environment);
    RUN(test_huge_page_advice_follows_the_config);
    RUN(test_torchrun_local_world_sets_devices_and_splits_cores);
    RUN(test_malformed_environment_names_the_variable);
    RUN(test_bad_configs_are_rejected_by_create);
    RUN(test_devices_report_their_properties);
    RUN(test_default_runtime_is_created_once_from_the_environment);
    RUN(test_trace_records_commands_and_exports_chrome_json);
    RUN(test_memory_sizes_accept_units_and_reject_garbage);
    return check_report();
}
