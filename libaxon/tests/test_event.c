/* Events: record, query, synchronize, cross-stream waits, timing, and their misuse. */
#include <stdatomic.h>
#include <time.h>

#include "check.h"

struct sleep_args {
    int ms;
    atomic_int *flag;
    int value;
};

/* Sleeps, then stores value into flag. */
static axon_status_t sleep_then_set(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct sleep_args *a = args;
    sleep_ms(a->ms);
    if (a->flag) atomic_store(a->flag, a->value);
    return AXON_OK;
}

/* Records what the flag held when it ran. */
static axon_status_t read_flag(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct sleep_args *a = args;
    atomic_store((atomic_int *)(void *)&a->flag[1], atomic_load(&a->flag[0]));
    return AXON_OK;
}

static axon_status_t launch(axon_stream_t s, axon_kernel_fn fn, int ms, atomic_int *flag, int value) {
    struct sleep_args a = {ms, flag, value};
    axon_launch_t l = {fn, &a, sizeof a, "test_kernel", 0};
    return axon_stream_launch(s, &l);
}

static void test_never_recorded_event_is_complete(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, NULL, NULL);
    REQUIRE(rt);
    axon_event_t e;
    CHECK_OK(axon_event_create(rt, AXON_EVENT_DEFAULT, &e));
    CHECK_OK(axon_event_query(e));
    CHECK_OK(axon_event_sync(e));
    CHECK(axon_event_device(e) == NULL);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    CHECK_OK(axon_stream_wait_event(s, e));
    axon_event_destroy(e);
    axon_runtime_destroy(rt);
}

static void test_query_before_completion_is_not_ready(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    axon_event_t e;
    CHECK_OK(axon_event_create(rt, 0, &e));
    atomic_int flag = 0;
    CHECK_OK(launch(s, sleep_then_set, 80, &flag, 1));
    CHECK_OK(axon_event_record(e, s));
    CHECK_STATUS(axon_event_query(e), AXON_ERROR_NOT_READY);
    CHECK(axon_event_device(e) == check_device(rt, 0));
    CHECK_OK(axon_event_sync(e));
    CHECK(atomic_load(&flag) == 1);
    CHECK_OK(axon_event_query(e));
    axon_event_destroy(e);
    axon_runtime_destroy(rt);
}

static void test_stream_wait_event_orders_work_across_streams(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 24, 2, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t producer, consumer;
    CHECK_OK(axon_stream_create(d, 0, &producer));
    CHECK_OK(axon_stream_create(d, 0, &consumer));
    axon_event_t e;
    CHECK_OK(axon_event_create(rt, 0, &e));
    atomic_int flags[2] = {0, -1};
    CHECK_OK(launch(producer, sleep_then_set, 100, &flags[0], 42));
    CHECK_OK(axon_event_record(e, producer));
    CHECK_OK(axon_stream_wait_event(consumer, e));
    CHECK_OK(launch(consumer, read_flag, 0, flags, 0));
    CHECK_OK(axon_stream_sync(consumer));
    CHECK_EQ_I64(atomic_load(&flags[1]), 42); /* the consumer saw the producer's write */
    axon_event_destroy(e);
    axon_runtime_destroy(rt);
}

static void test_wait_event_across_devices(void) {
    axon_runtime_t rt = check_runtime(2, 1 << 24, 1, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s0, s1;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s0));
    CHECK_OK(axon_stream_default(check_device(rt, 1), &s1));
    axon_event_t e;
    CHECK_OK(axon_event_create(rt, 0, &e));
    atomic_int flags[2] = {0, -1};
    CHECK_OK(launch(s0, sleep_then_set, 60, &flags[0], 7));
    CHECK_OK(axon_event_record(e, s0));
    CHECK_OK(axon_stream_wait_event(s1, e));
    CHECK_OK(launch(s1, read_flag, 0, flags, 0));
    CHECK_OK(axon_stream_sync(s1));
    CHECK_EQ_I64(atomic_load(&flags[1]), 7);
    axon_event_destroy(e);
    axon_runtime_destroy(rt);
}

static void test_elapsed_time_measures_the_work_between_records(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    axon_event_t a, b, plain;
    CHECK_OK(axon_event_create(rt, AXON_EVENT_TIMING, &a));
    CHECK_OK(axon_event_create(rt, AXON_EVENT_TIMING | AXON_EVENT_BLOCKING_SYNC, &b));
    CHECK_OK(axon_event_create(rt, 0, &plain));
    float ms = -1;
    CHECK_STATUS(axon_event_elapsed_ms(a, b, &ms), AXON_ERROR_MISUSE); /* never recorded */
    CHECK_OK(axon_event_record(a, s));
    CHECK_OK(launch(s, sleep_then_set, 50, NULL, 0));
    CHECK_OK(axon_event_record(b, s));
    CHECK_STATUS(axon_event_elapsed_ms(a, b, &ms), AXON_ERROR_NOT_READY);
    CHECK_OK(axon_event_sync(b));
    CHECK_OK(axon_event_elapsed_ms(a, b, &ms));
    CHECK(ms >= 49.0f); /* the 50 ms kernel lies between the two records */
    CHECK_OK(axon_event_record(plain, s));
    CHECK_OK(axon_event_sync(plain));
    CHECK_STATUS(axon_event_elapsed_ms(a, plain, &ms), AXON_ERROR_MISUSE);
    CHECK_MSG("AXON_EVENT_TIMING");
    CHECK_STATUS(axon_event_elapsed_ms(a, b, NULL), AXON_ERROR_INVALID_ARG);
    axon_event_destroy(a);
    axon_event_destroy(b);
    axon_event_destroy(plain);
    axon_runtime_destroy(rt);
}

static void test_rerecord_replaces_the_captured_point(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t slow, fast;
    CHECK_OK(axon_stream_create(d, 0, &slow));
    CHECK_OK(axon_stream_create(d, 0, &fast));
    axon_event_t e;
    CHECK_OK(axon_event_create(rt, AXON_EVENT_TIMING, &e));
    CHECK_OK(launch(slow, sleep_then_set, 150, NULL, 0));
    CHECK_OK(axon_event_record(e, slow));
    CHECK_OK(axon_event_record(e, fast)); /* now captures the idle stream */
    CHECK_OK(axon_event_sync(e));
    CHECK_STATUS(axon_stream_query(slow), AXON_ERROR_NOT_READY);
    CHECK_OK(axon_device_synchronize(d));
    axon_event_destroy(e);
    axon_runtime_destroy(rt);
}

static void test_destroying_an_event_with_a_pending_record_is_safe(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    for (int i = 0; i < 100; i++) {
        axon_event_t e;
        CHECK_OK(axon_event_create(rt, AXON_EVENT_TIMING, &e));
        if (i == 0) CHECK_OK(launch(s, sleep_then_set, 30, NULL, 0));
        CHECK_OK(axon_event_record(e, s));
        axon_event_destroy(e); /* the queued marker still holds it */
    }
    CHECK_OK(axon_stream_sync(s));
    axon_runtime_destroy(rt);
}

static void test_bad_event_input_is_rejected(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, NULL, NULL);
    axon_runtime_t other = check_runtime(1, 1 << 24, 1, NULL, NULL);
    REQUIRE(rt && other);
    axon_event_t e;
    CHECK_STATUS(axon_event_create(NULL, 0, &e), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_event_create(rt, 0, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_event_create(rt, 0x100, &e), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_event_create(rt, 0, &e));
    CHECK_STATUS(axon_event_record(e, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_event_record(NULL, NULL), AXON_ERROR_INVALID_ARG);
    axon_stream_t foreign;
    CHECK_OK(axon_stream_default(check_device(other, 0), &foreign));
    CHECK_STATUS(axon_event_record(e, foreign), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("different runtimes");
    CHECK_STATUS(axon_event_query(NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_event_sync(NULL), AXON_ERROR_INVALID_ARG);
    axon_event_destroy(NULL);
    axon_event_destroy(e);
    axon_runtime_destroy(other);
    axon_runtime_destroy(rt);
}

int main(void) {
    RUN(test_never_recorded_event_is_complete);
    RUN(test_query_before_completion_is_not_ready);
    RUN(test_stream_wait_event_orders_work_across_streams);
    RUN(test_wait_event_across_devices);
    RUN(test_elapsed_time_measures_the_work_between_records);
    RUN(test_rerecord_replaces_the_captured_point);
    RUN(test_destroying_an_event_with_a_pending_record_is_safe);
    RUN(test_bad_event_input_is_rejected);
    return check_report();
}
