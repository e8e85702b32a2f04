/* Small kernels on an idle stream run inline on the launching thread (stream.c). What must not change: stream order
 * behind queued work, errors reported at the next synchronization point, events and queries, one command at a time
 * when several host threads launch on one stream, and kernels of unknown size (bytes 0) always queued. Small
 * device-to-device copies and fills follow the same rules. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define SMALL 256 /* bytes a small kernel says it moves: well below the inline limit */

struct append_args {
    int *log;
    atomic_int *len;
    int value;
    pthread_t *ran_on; /* where the kernel ran, if not NULL */
};

static axon_status_t append_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct append_args *a = args;
    int i = atomic_fetch_add(a->len, 1);
    a->log[i] = a->value;
    if (a->ran_on) *a->ran_on = pthread_self();
    return AXON_OK;
}

static axon_status_t launch_append(axon_stream_t s, struct append_args a, uint64_t bytes) {
    axon_launch_t l = {append_kernel, &a, sizeof a, "append", bytes};
    return axon_stream_launch(s, &l);
}

/* Holds its stream until the host opens the gate. */
static axon_status_t gate_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    atomic_int *gate = *(atomic_int *const *)args;
    while (!atomic_load(gate)) sleep_ms(1);
    return AXON_OK;
}

static axon_status_t failing_kernel(const void *args, const axon_exec_t *ex) {
    (void)args;
    (void)ex;
    return axon_set_error(AXON_ERROR_INVALID_ARG, "element 9 is out of range");
}

static void test_small_kernel_on_an_idle_stream_has_run_when_launch_returns(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    int log[4];
    atomic_int len = 0;
    pthread_t ran_on;
    CHECK_OK(launch_append(s, (struct append_args){log, &len, 1, &ran_on}, SMALL));
    CHECK_EQ_I64(atomic_load(&len), 1);
    CHECK(pthread_equal(ran_on, pthread_self()));
    CHECK_OK(axon_stream_query(s)); /* nothing pending */
    CHECK_OK(axon_stream_sync(s));
    axon_runtime_destroy(rt);
}

static void test_kernels_of_unknown_or_large_size_are_queued(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    int log[4];
    atomic_int len = 0;
    pthread_t ran_on = pthread_self();
    CHECK_OK(launch_append(s, (struct append_args){log, &len, 1, &ran_on}, 0));
    CHECK_OK(axon_stream_sync(s));
    CHECK(!pthread_equal(ran_on, pthread_self()));
    ran_on = pthread_self();
    CHECK_OK(launch_append(s, (struct append_args){log, &len, 2, &ran_on}, (uint64_t)1 << 30));
    CHECK_OK(axon_stream_sync(s));
    CHECK(!pthread_equal(ran_on, pthread_self()));
    CHECK_EQ_I64(atomic_load(&len), 2);
    axon_runtime_destroy(rt);
}

static void test_small_kernel_behind_queued_work_waits_its_turn(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_create(check_device(rt, 0), 0, &s));
    atomic_int gate = 0, len = 0;
    int log[8];
    atomic_int *gp = &gate;
    axon_launch_t g = {gate_kernel, &gp, sizeof gp, "gate", 0};
    CHECK_OK(launch_append(s, (struct append_args){log, &len, 1, NULL}, 0));
    CHECK_OK(axon_stream_launch(s, &g));
    CHECK_OK(launch_append(s, (struct append_args){log, &len, 2, NULL}, SMALL));
    CHECK_OK(launch_append(s, (struct append_args){log, &len, 3, NULL}, SMALL));
    sleep_ms(20);
    CHECK(atomic_load(&len) == 1); /* the small ones wait behind the gate */
    CHECK_STATUS(axon_stream_query(s), AXON_ERROR_NOT_READY);
    atomic_store(&gate, 1);
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(atomic_load(&len), 3);
    CHECK(log[0] == 1 && log[1] == 2 && log[2] == 3);
    /* Idle again: the next small one runs inline, after all of the above. */
    CHECK_OK(launch_append(s, (struct append_args){log, &len, 4, NULL}, SMALL));
    CHECK_EQ_I64(atomic_load(&len), 4);
    CHECK(log[3] == 4);
    CHECK_OK(axon_stream_destroy(s));
    axon_runtime_destroy(rt);
}

static void test_failed_inline_kernel_is_reported_once_at_the_next_sync(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s, other;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    CHECK_OK(axon_stream_create(check_device(rt, 0), 0, &other));
    axon_launch_t l = {failing_kernel, NULL, 0, "gather", SMALL};
    CHECK_OK(axon_stream_launch(s, &l)); /* the launch itself succeeded */
    CHECK(axon_last_status() == AXON_OK);
    CHECK_OK(axon_stream_sync(other)); /* other streams are not affected */
    CHECK_STATUS(axon_stream_sync(s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("gather failed: element 9 is out of range");
    CHECK_OK(axon_stream_sync(s)); /* reported once */
    CHECK_OK(axon_stream_launch(s, &l));
    CHECK_STATUS(axon_device_synchronize(check_device(rt, 0)), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("element 9 is out of range");
    CHECK_OK(axon_stream_destroy(other));
    axon_runtime_destroy(rt);
}

static void test_events_around_inline_kernels_complete_and_time_them(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    axon_event_t start, end;
    CHECK_OK(axon_event_create(rt, AXON_EVENT_TIMING, &start));
    CHECK_OK(axon_event_create(rt, AXON_EVENT_TIMING, &end));
    int log[64];
    atomic_int len = 0;
    CHECK_OK(axon_event_record(start, s));
    for (int i = 0; i < 32; i++) CHECK_OK(launch_append(s, (struct append_args){log, &len, i, NULL}, SMALL));
    CHECK_OK(axon_event_record(end, s));
    CHECK_OK(axon_event_sync(end));
    CHECK_OK(axon_event_query(start));
    CHECK_EQ_I64(atomic_load(&len), 32);
    int in_order = 1;
    for (int i = 0; i < 32; i++) in_order &= log[i] == i;
    CHECK(in_order);
    float ms = -1.0f;
    CHECK_OK(axon_event_elapsed_ms(start, end, &ms));
    CHECK(ms >= 0.0f);
    axon_event_destroy(start);
    axon_event_destroy(end);
    axon_runtime_destroy(rt);
}

/* Flags a second kernel of the same stream running at the same time. */
struct exclusive_args {
    atomic_int *running;
    atomic_int *overlaps;
    atomic_int *count;
};

static axon_status_t exclusive_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct exclusive_args *a = args;
    if (atomic_fetch_add(a->running, 1) != 0) atomic_fetch_add(a->overlaps, 1);
    for (volatile int spin = 0; spin < 200; spin++) {
    }
    atomic_fetch_add(a->count, 1);
    atomic_fetch_sub(a->running, 1);
    return AXON_OK;
}

struct producer {
    axon_stream_t s;
    struct exclusive_args a;
    int n;
};

static void *produce(void *arg) {
    struct producer *p = arg;
    for (int i = 0; i < p->n; i++) {
        /* Every 16th command is of unknown size and queued, so inline and queued commands interleave. */
        axon_launch_t l = {exclusive_kernel, &p->a, sizeof p->a, "exclusive", i % 16 == 0 ? 0 : SMALL};
        if (axon_stream_launch(p->s, &l) != AXON_OK) break;
    }
    return NULL;
}

static void test_host_threads_sharing_a_stream_never_overlap_its_commands(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_create(check_device(rt, 0), 0, &s));
    atomic_int running = 0, overlaps = 0, count = 0;
    enum { THREADS = 4, PER_THREAD = 2000 };
    struct producer p = {s, {&running, &overlaps, &count}, PER_THREAD};
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) REQUIRE(pthread_create(&t[i], NULL, produce, &p) == 0);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(atomic_load(&count), THREADS * PER_THREAD);
    CHECK_EQ_I64(atomic_load(&overlaps), 0);
    CHECK_OK(axon_stream_destroy(s));
    axon_runtime_destroy(rt);
}

/* A tiny clone or fill on an idle stream is done when the call returns (no wake of the executor); behind queued work
 * it waits its turn and sees what that work wrote. */
static void test_small_copies_and_fills_run_inline_in_stream_order(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s;
    CHECK_OK(axon_stream_create(d, 0, &s));
    unsigned char *a, *b;
    CHECK_OK(axon_mem_alloc(d, 64, s, (void **)&a));
    CHECK_OK(axon_mem_alloc(d, 64, s, (void **)&b));
    CHECK_OK(axon_memset_async(a, 7, 64, s));
    CHECK_OK(axon_stream_query(s)); /* nothing pending: it ran inline */
    CHECK(a[0] == 7 && a[63] == 7);
    CHECK_OK(axon_memcpy_async(b, a, 64, AXON_COPY_DEVICE_TO_DEVICE, s));
    CHECK_OK(axon_stream_query(s));
    CHECK(b[0] == 7 && b[63] == 7);

    atomic_int gate = 0;
    atomic_int *gp = &gate;
    axon_launch_t g = {gate_kernel, &gp, sizeof gp, "gate", 0};
    CHECK_OK(axon_stream_launch(s, &g));
    CHECK_OK(axon_memset_async(a, 9, 64, s));
    CHECK_OK(axon_memcpy_async(b, a, 64, AXON_COPY_DEVICE_TO_DEVICE, s));
    sleep_ms(20);
    CHECK(a[0] == 7 && b[0] == 7); /* both wait behind the gate */
    CHECK_STATUS(axon_stream_query(s), AXON_ERROR_NOT_READY);
    atomic_store(&gate, 1);
    CHECK_OK(axon_stream_sync(s));
    CHECK(a[0] == 9 && b[0] == 9 && b[63] == 9);
    CHECK_OK(axon_mem_free(d, a));
    CHECK_OK(axon_mem_free(d, b));
    CHECK_OK(axon_stream_destroy(s));
    axon_runtime_destroy(rt);
}

int main(void) {
    RUN(test_small_kernel_on_an_idle_stream_has_run_when_launch_returns);
    RUN(test_kernels_of_unknown_or_large_size_are_queued);
    RUN(test_small_kernel_behind_queued_work_waits_its_turn);
    RUN(test_failed_inline_kernel_is_reported_once_at_the_next_sync);
    RUN(test_events_around_inline_kernels_complete_and_time_them);
    RUN(test_host_threads_sharing_a_stream_never_overlap_its_commands);
    RUN(test_small_copies_and_fills_run_inline_in_stream_order);
    return check_report();
}
