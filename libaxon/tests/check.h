/* A minimal test harness for libaxon's C tests: each test is a function, RUN() calls it and counts failed checks,
 * check_report() prints the closing "N passed, N failed" line and gives main's exit status. */
#ifndef AXON_CHECK_H
#define AXON_CHECK_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "axon/axon.h"

/* Sleeps ms milliseconds (tests that need work to still be queued, or a timeout to pass). */
static inline void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Holds its stream until the host stores 1 in *gate: work queued behind it cannot have run while the gate is shut. */
static inline axon_status_t check_gate_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    atomic_int *gate = *(atomic_int *const *)args;
    while (!atomic_load(gate)) sleep_ms(1);
    return AXON_OK;
}

/* Queues check_gate_kernel on s (the launch copies the pointer, so gate must outlive the wait). */
static inline axon_status_t check_hold_stream(axon_stream_t s, atomic_int *gate) {
    axon_launch_t l = {check_gate_kernel, &gate, sizeof gate, "gate", 0};
    return axon_stream_launch(s, &l);
}

static int check_failures_in_test;
static int check_tests_passed;
static int check_tests_failed;

#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (last axon error: %s)\n", __FILE__, __LINE__,   \
                    #cond, axon_last_error());                                                       \
            check_failures_in_test++;                                                                \
        }                                                                                            \
    } while (0)

/* Check that a call returns the expected status. */
#define CHECK_STATUS(call, expected)                                                                 \
    do {                                                                                             \
        axon_status_t check_s_ = (call);                                                             \
        if (check_s_ != (expected)) {                                                                \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #call,  \
                    axon_status_name(check_s_), axon_status_name(expected), axon_last_error());       \
            check_failures_in_test++;                                                                \
        }                                                                                            \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, AXON_OK)

/* Check that the last error message contains a fragment. */
#define CHECK_MSG(fragment)                                                                          \
    do {                                                                                             \
        if (strstr(axon_last_error(), (fragment)) == NULL) {                                         \
            fprintf(stderr, "%s:%d: last error \"%s\" does not mention \"%s\"\n", __FILE__, __LINE__, \
                    axon_last_error(), (fragment));                                                  \
            check_failures_in_test++;                                                                \
        }                                                                                            \
    } while (0)

#define CHECK_EQ_I64(a, b)                                                                           \
    do {                                                                                             \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                             \
        if (check_a_ != check_b_) {                                                                  \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b,    \
                    check_a_, check_b_);                                                             \
            check_failures_in_test++;                                                                \
        }                                                                                            \
    } while (0)

/* Abort the current test when a precondition fails (e.g. creating the runtime it needs). */
#define REQUIRE(cond)                                                                                \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            fprintf(stderr, "%s:%d: REQUIRE(%s) failed (last axon error: %s)\n", __FILE__, __LINE__, \
                    #cond, axon_last_error());                                                       \
            check_failures_in_test++;                                                                \
            return;                                                                                  \
        }                                                                                            \
    } while (0)

#define RUN(test)                                                                                    \
    do {                                                                                             \
        check_failures_in_test = 0;                                                                  \
        axon_clear_error();                                                                          \
        test();                                                                                      \
        if (check_failures_in_test == 0) {                                                           \
            check_tests_passed++;                                                                    \
            fprintf(stderr, "PASS %s\n", #test);                                                     \
        } else {                                                                                     \
            check_tests_failed++;                                                                    \
            fprintf(stderr, "FAIL %s\n", #test);                                                     \
        }                                                                                            \
    } while (0)

static inline int check_report(void) {
    printf("%d passed, %d failed\n", check_tests_passed, check_tests_failed);
    return check_tests_failed == 0 ? 0 : 1;
}

/* A runtime with explicit settings, independent of the environment. hw NULL = the CPU port. */
static inline axon_runtime_t check_runtime(int ndev, size_t capacity, int threads, const axon_hw_ops_t *hw,
                                           void *hw_ctx) {
    axon_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.device_count = ndev;
    cfg.memory_capacity = capacity;
    cfg.threads_per_device = threads;
    cfg.hw = hw;
    cfg.hw_ctx = hw_ctx;
    axon_runtime_t rt = NULL;
    if (axon_runtime_create(&cfg, &rt) != AXON_OK) {
        fprintf(stderr, "check_runtime: %s\n", axon_last_error());
        return NULL;
    }
    return rt;
}

static inline axon_device_t check_device(axon_runtime_t rt, int index) {
    axon_device_t d = NULL;
    if (axon_device_get(rt, index, &d) != AXON_OK) return NULL;
    return d;
}

#endif
