/* Streams: FIFO order, asynchrony, callbacks, several host threads on several streams, error reporting at the next
 * synchronization point without poisoning other streams, backpressure, recycling, and bad input. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>

#include "check.h"

struct append_args {
    int *log;
    atomic_int *len;
    int value;
};

/* Appends its value to a shared log: the log's order is the execution order. */
static axon_status_t append_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct append_args *a = args;
    int i = atomic_fetch_add(a->len, 1);
    a->log[i] = a->value;
    return AXON_OK;
}

struct sleep_args {
    int ms;
    atomic_int *done;
};

static axon_status_t sleep_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct sleep_args *a = args;
    sleep_ms(a->ms);
    if (a->done) atomic_store(a->done, 1);
    return AXON_OK;
}

static axon_status_t failing_kernel(const void *args, const axon_exec_t *ex) {
    (void)args;
    (void)ex;
    return axon_set_error(AXON_ERROR_INVALID_ARG, "index 7 is out of range for size 3");
}

static axon_status_t launch_sleep(axon_stream_t s, int ms, atomic_int *done) {
    struct sleep_args a = {ms, done};
    axon_launch_t l = {sleep_kernel, &a, sizeof a, "sleep", 0};
    return axon_stream_launch(s, &l);
}

static void test_commands_run_in_fifo_order(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_create(check_device(rt, 0), 0, &s));
    enum { N = 10000 };
    static int log[N];
    atomic_int len = 0;
    for (int i = 0; i < N; i++) {
        struct append_args a = {log, &len, i};
        axon_launch_t l = {append_kernel, &a, sizeof a, "append", 0};
        CHECK_OK(axon_stream_launch(s, &l));
    }
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(atomic_load(&len), N);
    int in_order = 1;
    for (int i = 0; i < N; i++) in_order &= log[i] == i;
    CHECK(in_order);
    CHECK_OK(axon_stream_destroy(s));
    axon_runtime_destroy(rt);
}

/* Holds its stream until the host opens the gate, then sets *done. */
struct gate_args {
    atomic_int *gate;
    atomic_int *done;
};

static axon_status_t gate_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct gate_args *a = args;
    while (!atomic_load(a->gate)) sleep_ms(1);
    atomic_store(a->done, 1);
    return AXON_OK;
}

static void test_launch_returns_before_the_kernel_runs(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 1, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    atomic_int done = 0, gate = 0;
    struct gate_args ga = {&gate, &done};
    axon_launch_t l = {gate_kernel, &ga, sizeof ga, "gate", 0};
    CHECK_OK(axon_stream_launch(s, &l)); /* returns although the kernel cannot finish yet */
    CHECK(atomic_load(&done) == 0);
    CHECK_STATUS(axon_stream_query(s), AXON_ERROR_NOT_READY);
    atomic_store(&gate, 1);
    CHECK_OK(axon_stream_sync(s));
    CHECK(atomic_load(&done) == 1);
    CHECK_OK(axon_stream_query(s));
    axon_runtime_destroy(rt);
}

static void set_flag(void *user) { atomic_store((atomic_int *)user, 1); }

static void test_callback_runs_after_earlier_work(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 1, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    atomic_int kernel_done = 0, callback_done = 0;
    CHECK_OK(launch_sleep(s, 30, &kernel_done));
    CHECK_OK(axon_stream_add_callback(s, set_flag, &callback_done));
    CHECK_OK(axon_stream_sync(s));
    CHECK(atomic_load(&kernel_done) == 1 && atomic_load(&callback_done) == 1);
    CHECK_STATUS(axon_stream_add_callback(s, NULL, NULL), AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(rt);
}

struct rendezvous_args {
    atomic_int *mine;     /* set when this kernel starts */
    atomic_int *other;    /* the other stream's kernel's flag */
    atomic_int *met;      /* set to 1 if this kernel saw the other one running */
};

/* Announce itself, then wait (up to 10 s) for the kernel on the other stream: it can only be seen if both run at
 * the same time, so the result proves concurrency without measuring time. */
static axon_status_t rendezvous_kernel(const void *args, const axon_exec_t *ex) {
    (void)ex;
    const struct rendezvous_args *a = args;
    atomic_store(a->mine, 1);
    for (int i = 0; i < 10000 && !atomic_load(a->other); i++) sleep_ms(1);
    atomic_store(a->met, atomic_load(a->other));
    return AXON_OK;
}

static void test_streams_run_concurrently(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t a, b;
    CHECK_OK(axon_stream_create(d, 0, &a));
    CHECK_OK(axon_stream_create(d, 0, &b));
    atomic_int flag_a = 0, flag_b = 0, met_a = 0, met_b = 0;
    struct rendezvous_args ra = {&flag_a, &flag_b, &met_a}, rb = {&flag_b, &flag_a, &met_b};
    axon_launch_t la = {rendezvous_kernel, &ra, sizeof ra, "rendezvous", 0};
    axon_launch_t lb = {rendezvous_kernel, &rb, sizeof rb, "rendezvous", 0};
    CHECK_OK(axon_stream_launch(a, &la));
    CHECK_OK(axon_stream_launch(b, &lb));
    CHECK_OK(axon_device_synchronize(d));
    CHECK(atomic_load(&met_a) == 1 && atomic_load(&met_b) == 1);
    axon_runtime_destroy(rt);
}

struct producer {
    axon_stream_t stream;
    int *log;
    atomic_int *len;
    int base;
};

static void *produce(void *arg) {
    struct producer *p = arg;
    for (int i = 0; i < 2000; i++) {
        struct append_args a = {p->log, p->len, p->base + i};
        axon_launch_t l = {append_kernel, &a, sizeof a, "append", 0};
        if (axon_stream_launch(p->stream, &l) != AXON_OK) return (void *)1;
    }
    return NULL;
}

static void test_many_host_threads_on_many_streams(void) {
    axon_runtime_t rt = check_runtime(2, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    enum { STREAMS = 4, THREADS_PER_STREAM = 2 };
    axon_stream_t streams[STREAMS];
    static int logs[STREAMS][2000 * THREADS_PER_STREAM];
    atomic_int lens[STREAMS];
    for (int i = 0; i < STREAMS; i++) {
        CHECK_OK(axon_stream_create(check_device(rt, i % 2), -(i % 3), &streams[i]));
        atomic_init(&lens[i], 0);
    }
    pthread_t threads[STREAMS * THREADS_PER_STREAM];
    struct producer ps[STREAMS * THREADS_PER_STREAM];
    for (int t = 0; t < STREAMS * THREADS_PER_STREAM; t++) {
        int si = t % STREAMS;
        ps[t] = (struct producer){streams[si], logs[si], &lens[si], (t / STREAMS) * 100000};
        pthread_create(&threads[t], NULL, produce, &ps[t]);
    }
    for (int t = 0; t < STREAMS * THREADS_PER_STREAM; t++) {
        void *r;
        pthread_join(threads[t], &r);
        CHECK(r == NULL);
    }
    for (int i = 0; i < STREAMS; i++) {
        CHECK_OK(axon_stream_sync(streams[i]));
        CHECK_EQ_I64(atomic_load(&lens[i]), 2000 * THREADS_PER_STREAM);
        /* Each producer's commands keep their relative order within the stream. */
        int last[THREADS_PER_STREAM] = {-1, -1}, ordered = 1;
        for (int k = 0; k < 2000 * THREADS_PER_STREAM; k++) {
            int v = logs[i][k], who = v / 100000, idx = v % 100000;
            ordered &= idx == last[who] + 1;
            last[who] = idx;
        }
        CHECK(ordered);
    }
    axon_runtime_destroy(rt);
}

static void test_failed_command_is_reported_once_at_sync_and_spares_other_streams(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t bad, good;
    CHECK_OK(axon_stream_create(d, 0, &bad));
    CHECK_OK(axon_stream_create(d, 0, &good));
    axon_launch_t l = {failing_kernel, NULL, 0, "index_select", 0};
    CHECK_OK(axon_stream_launch(bad, &l)); /* launching succeeds: the failure is asynchronous */
    atomic_int later_ran = 0;
    CHECK_OK(launch_sleep(bad, 1, &later_ran));
    CHECK_OK(launch_sleep(good, 1, NULL));
    CHECK_OK(axon_stream_sync(good));
    CHECK_STATUS(axon_stream_sync(bad), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index_select failed");
    CHECK_MSG("index 7 is out of range");
    CHECK(atomic_load(&later_ran) == 1);
    CHECK_OK(axon_stream_sync(bad)); /* reported once */
    CHECK_OK(axon_stream_launch(bad, &l));
    CHECK_STATUS(axon_device_synchronize(d), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_device_synchronize(d));
    axon_runtime_destroy(rt);
}

static void test_full_queue_applies_backpressure_without_losing_commands(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 1, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    CHECK_OK(launch_sleep(s, 50, NULL));
    /* Large argument blocks fill the ring many times over while the first kernel sleeps. */
    static unsigned char big[AXON_LAUNCH_MAX_ARGS];
    enum { N = 1000 };
    static int log[N];
    atomic_int len = 0;
    for (int i = 0; i < N; i++) {
        struct append_args a = {log, &len, i};
        memcpy(big, &a, sizeof a);
        axon_launch_t l = {append_kernel, big, sizeof big, "append_big", 0};
        CHECK_OK(axon_stream_launch(s, &l));
    }
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(atomic_load(&len), N);
    int ordered = 1;
    for (int i = 0; i < N; i++) ordered &= log[i] == i;
    CHECK(ordered);
    axon_runtime_destroy(rt);
}

static void test_destroyed_stream_is_recycled_and_its_handle_rejected(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 1, NULL, NULL);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s, t, def;
    CHECK_OK(axon_stream_create(d, -1, &s));
    CHECK_EQ_I64(axon_stream_priority(s), -1);
    uint64_t id = axon_stream_id(s);
    CHECK(id != 0);
    axon_stream_t found;
    CHECK_OK(axon_stream_from_id(d, id, &found));
    CHECK(found == s);
    CHECK_OK(axon_stream_destroy(s));
    CHECK_STATUS(axon_stream_launch(s, &(axon_launch_t){failing_kernel, NULL, 0, "x", 0}), AXON_ERROR_MISUSE);
    CHECK_STATUS(axon_stream_from_id(d, id, &found), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_create(d, -7, &t)); /* priority clamped */
    CHECK_EQ_I64(axon_stream_priority(t), AXON_STREAM_PRIORITY_HIGHEST);
    CHECK(axon_stream_id(t) != id);
    CHECK_OK(axon_stream_default(d, &def));
    CHECK_EQ_I64(axon_stream_id(def), 0);
    CHECK_STATUS(axon_stream_destroy(def), AXON_ERROR_MISUSE);
    CHECK_OK(axon_stream_destroy(NULL));
    axon_runtime_destroy(rt);
}

static void test_bad_launches_are_rejected(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 1, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    axon_launch_t l = {NULL, NULL, 0, "k", 0};
    CHECK_STATUS(axon_stream_launch(s, &l), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_stream_launch(s, NULL), AXON_ERROR_INVALID_ARG);
    l.fn = failing_kernel;
    l.args_size = AXON_LAUNCH_MAX_ARGS + 1;
    l.args = &l;
    CHECK_STATUS(axon_stream_launch(s, &l), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("exceeds");
    CHECK_STATUS(axon_stream_launch(NULL, &l), AXON_ERROR_INVALID_ARG);
    int not_a_stream[64] = {0};
    CHECK_STATUS(axon_stream_sync((axon_stream_t)(void *)not_a_stream), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_stream_create(NULL, 0, &s), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_stream_create(check_device(rt, 0), 0, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_device_synchronize(NULL), AXON_ERROR_INVALID_ARG);
    axon_runtime_destroy(rt);
}

static void test_null_port_records_submissions_in_stream_order(void) {
    axon_hw_null_t rec;
    CHECK_OK(axon_hw_null_create(&rec));
    axon_runtime_t rt = check_runtime(1, 1 << 24, 1, axon_hw_null(), rec);
    REQUIRE(rt);
    axon_device_t d = check_device(rt, 0);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(d, &s));
    void *p;
    CHECK_OK(axon_mem_alloc(d, 4096, s, &p));
    axon_launch_t l1 = {failing_kernel, NULL, 0, "first", 0}, l2 = {failing_kernel, NULL, 0, "second", 0};
    CHECK_OK(axon_stream_launch(s, &l1));
    CHECK_OK(axon_memset_async(p, 0, 4096, s));
    CHECK_OK(axon_stream_launch(s, &l2));
    CHECK_OK(axon_stream_sync(s)); /* the null port never runs the failing kernels */
    CHECK_EQ_I64(axon_hw_null_count(rec), 3);
    CHECK(strcmp(axon_hw_null_name(rec, 0), "first") == 0);
    CHECK(strcmp(axon_hw_null_name(rec, 1), "fill") == 0);
    CHECK(strcmp(axon_hw_null_name(rec, 2), "second") == 0);
    CHECK(axon_hw_null_name(rec, 3) == NULL);
    axon_device_props_t props;
    CHECK_OK(axon_device_properties(d, &props));
    CHECK(strcmp(props.port, "null") == 0);
    CHECK_OK(axon_mem_free(d, p));
    axon_runtime_destroy(rt);
    axon_hw_null_destroy(rec);
}

struct sum_args {
    const int *data;
    int64_t n;
    atomic_llong *sum;
};

static void sum_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const struct sum_args *a = ctx;
    long long s = 0;
    for (int64_t i = begin; i < end; i++) s += a->data[i];
    atomic_fetch_add(a->sum, s);
}

static axon_status_t parallel_sum_kernel(const void *args, const axon_exec_t *ex) {
    const struct sum_args *a = args;
    axon_parallel_for(ex->pool, 0, a->n, 1024, sum_range, (void *)a);
    return AXON_OK;
}

static void test_kernels_use_the_device_pool(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 2, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    enum { N = 1 << 20 };
    static int data[N];
    for (int i = 0; i < N; i++) data[i] = i % 7;
    long long expect = 0;
    for (int i = 0; i < N; i++) expect += data[i];
    atomic_llong sum = 0;
    struct sum_args a = {data, N, &sum};
    axon_launch_t l = {parallel_sum_kernel, &a, sizeof a, "sum", N * sizeof(int)};
    CHECK_OK(axon_stream_launch(s, &l));
    CHECK_OK(axon_stream_sync(s));
    CHECK_EQ_I64(atomic_load(&sum), expect);
    axon_runtime_destroy(rt);
}


struct point_waiter {
    axon_event_t ev;
    atomic_int *done;
    axon_status_t status;
    int saw_done;
};

static void *wait_for_point(void *arg) {
    struct point_waiter *w = arg;
    w->status = axon_event_sync(w->ev);
    w->saw_done = atomic_load(w->done);
    return NULL;
}

/* A host waiting for the last of many commands sleeps until that one is done; it is not woken after each command
 * (on a machine whose cores all run the device's pool, those wake-ups took a core from the kernels between every
 * two commands). Counted as the waiting thread's voluntary context switches: one per sleep. */
static void test_waiting_host_is_woken_once_not_per_command(void) {
    axon_runtime_t rt = check_runtime(1, 1 << 26, 1, NULL, NULL);
    REQUIRE(rt);
    axon_stream_t s;
    CHECK_OK(axon_stream_default(check_device(rt, 0), &s));
    enum { N = 40 };
    for (int i = 0; i < N; i++) CHECK_OK(launch_sleep(s, 1, NULL)); /* each outlasts the host's spin */
    struct rusage before, after;
    getrusage(RUSAGE_THREAD, &before);
    CHECK_OK(axon_stream_sync(s));
    getrusage(RUSAGE_THREAD, &after);
    const long sleeps = after.ru_nvcsw - before.ru_nvcsw;
    if (sleeps > 5) fprintf(stderr, "the waiting host slept %ld times over %d commands\n", sleeps, N);
    CHECK(sleeps <= 5);
    /* Hosts waiting for different points of the queue at once: each returns once its point is reached. */
    struct point_waiter w[3];
    atomic_int done[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 10; i++) CHECK_OK(launch_sleep(s, 1, NULL));
        CHECK_OK(launch_sleep(s, 1, &done[k]));
        CHECK_OK(axon_event_create(rt, AXON_EVENT_BLOCKING_SYNC, &w[k].ev));
        CHECK_OK(axon_event_record(w[k].ev, s));
        w[k].done = &done[k];
        w[k].saw_done = -1;
    }
    pthread_t t[3];
    for (int k = 2; k >= 0; k--) REQUIRE(pthread_create(&t[k], NULL, wait_for_point, &w[k]) == 0);
    for (int k = 0; k < 3; k++) {
        pthread_join(t[k], NULL);
        CHECK_EQ_I64(w[k].status, AXON_OK);
        CHECK_EQ_I64(w[k].saw_done, 1);
        axon_event_destroy(w[k].ev);
    }
    axon_runtime_destroy(rt);
}

int main(void) {
    RUN(test_commands_run_in_fifo_order);
    RUN(test_launch_returns_before_the_kernel_runs);
    RUN(test_callback_runs_after_earlier_work);
    RUN(test_streams_run_concurrently);
    RUN(test_many_host_threads_on_many_streams);
    RUN(test_failed_command_is_reported_once_at_sync_and_spares_other_streams);
    RUN(test_full_queue_applies_backpressure_without_losing_commands);
    RUN(test_destroyed_stream_is_recycled_and_its_handle_rejected);
    RUN(test_bad_launches_are_rejected);
    RUN(test_null_port_records_submissions_in_stream_order);
    RUN(test_kernels_use_the_device_pool);
    RUN(test_waiting_host_is_woken_once_not_per_command);
    return check_report();
}
