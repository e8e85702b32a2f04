/* Per-command trace records, kept in one growable array per runtime under a mutex. A command appends at most one
 * record, so the lock is held for a copy of 48 bytes; contention only matters when tracing is on. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct axon_trace {
    atomic_int on;
    pthread_mutex_t lock;
    axon_trace_record_t *records;
    size_t count, cap;
    size_t dropped;
};

uint64_t axon_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

axon_status_t axon_trace_create(int on, struct axon_trace **out) {
    *out = NULL;
    struct axon_trace *t = calloc(1, sizeof *t);
    if (t == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "trace: no host memory");
    pthread_mutex_init(&t->lock, NULL);
    atomic_init(&t->on, on != 0);
    *out = t;
    return AXON_OK;
}

void axon_trace_destroy(struct axon_trace *t) {
    if (t == NULL) return;
    pthread_mutex_destroy(&t->lock);
    free(t->records);
    free(t);
}

int axon_trace_is_on(const struct axon_trace *t) {
    return atomic_load_explicit(&((struct axon_trace *)t)->on, memory_order_relaxed);
}

void axon_trace_add(struct axon_trace *t, const axon_trace_record_t *r) {
    pthread_mutex_lock(&t->lock);
    if (t->count == t->cap && t->cap < AXON_TRACE_CAPACITY) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        if (cap > AXON_TRACE_CAPACITY) cap = AXON_TRACE_CAPACITY;
        axon_trace_record_t *grown = realloc(t->records, cap * sizeof *grown);
        if (grown) {
            t->records = grown;
            t->cap = cap;
        }
    }
    if (t->count < t->cap)
        t->records[t->count++] = *r;
    else
        t->dropped++;
    pthread_mutex_unlock(&t->lock);
}

static axon_status_t check_rt(axon_runtime_t rt, const char *fn) {
    if (rt == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: runtime is NULL", fn);
    return AXON_OK;
}

axon_status_t axon_trace_enable(axon_runtime_t rt, int on) {
    axon_status_t st = check_rt(rt, "axon_trace_enable");
    if (st != AXON_OK) return st;
    atomic_store(&rt->trace->on, on != 0);
    return AXON_OK;
}

int axon_trace_enabled(axon_runtime_t rt) { return rt ? axon_trace_is_on(rt->trace) : 0; }

axon_status_t axon_trace_clear(axon_runtime_t rt) {
    axon_status_t st = check_rt(rt, "axon_trace_clear");
    if (st != AXON_OK) return st;
    pthread_mutex_lock(&rt->trace->lock);
    rt->trace->count = 0;
    rt->trace->dropped = 0;
    pthread_mutex_unlock(&rt->trace->lock);
    return AXON_OK;
}

size_t axon_trace_count(axon_runtime_t rt) {
    if (rt == NULL) return 0;
    pthread_mutex_lock(&rt->trace->lock);
    size_t n = rt->trace->count;
    pthread_mutex_unlock(&rt->trace->lock);
    return n;
}

size_t axon_trace_dropped(axon_runtime_t rt) {
    if (rt == NULL) return 0;
    pthread_mutex_lock(&rt->trace->lock);
    size_t n = rt->trace->dropped;
    pthread_mutex_unlock(&rt->trace->lock);
    return n;
}

axon_status_t axon_trace_read(axon_runtime_t rt, size_t first, size_t n, axon_trace_record_t *out, size_t *got) {
    axon_status_t st = check_rt(rt, "axon_trace_read");
    if (st != AXON_OK) return st;
    if (got == NULL || (out == NULL && n > 0))
        return axon_fail(AXON_ERROR_INVALID_ARG, "axon_trace_read: %s is NULL", got ? "out" : "got");
    pthread_mutex_lock(&rt->trace->lock);
    size_t have = rt->trace->count > first ? rt->trace->count - first : 0;
    if (n > have) n = have;
    if (n > 0) memcpy(out, rt->trace->records + first, n * sizeof *out);
    pthread_mutex_unlock(&rt->trace->lock);
    *got = n;
    return AXON_OK;
}

/* Write s as a JSON string body; kernel names are identifiers, but be safe with quotes and control bytes. */
static void write_json_string(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
}

axon_status_t axon_trace_export_chrome(axon_runtime_t rt, const char *path) {
    axon_status_t st = check_rt(rt, "axon_trace_export_chrome");
    if (st != AXON_OK) return st;
    if (path == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "axon_trace_export_chrome: path is NULL");
    FILE *f = fopen(path, "w");
    if (f == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "cannot write trace to '%s': %s", path, strerror(errno));
    pthread_mutex_lock(&rt->trace->lock);
    fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [", f);
    const char *sep = "\n";
    for (int d = 0; d < rt->ndev; d++, sep = ",\n")
        fprintf(f, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"axon:%d\"}}",
                sep, d, d);
    for (size_t i = 0; i < rt->trace->count; i++, sep = ",\n") {
        const axon_trace_record_t *r = &rt->trace->records[i];
        fprintf(f, "%s{\"name\": \"", sep);
        write_json_string(f, r->name ? r->name : "?");
        /* Chrome trace times are microseconds; keep the nanoseconds as fractions. */
        fprintf(f,
                "\", \"cat\": \"kernel\", \"ph\": \"X\", \"pid\": %d, \"tid\": %llu, \"ts\": %.3f, \"dur\": %.3f, "
                "\"args\": {\"bytes\": %llu}}",
                r->device, (unsigned long long)r->stream, (double)r->start_ns / 1e3,
                (double)(r->end_ns - r->start_ns) / 1e3, (unsigned long long)r->bytes);
    }
    fputs("\n]}\n", f);
    pthread_mutex_unlock(&rt->trace->lock);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return axon_fail(AXON_ERROR_INVALID_ARG, "writing trace to '%s' failed", path);
    return AXON_OK;
}
