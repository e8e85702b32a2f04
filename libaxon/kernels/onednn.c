/* The oneDNN layer shared by gemm_onednn.c and conv_onednn.c (onednn_impl.h): engine, per-thread stream and scratch,
 * and the cache of built primitives.
 *
 * Cache: creating a primitive costs tens of microseconds (a convolution's, with its reorders, milliseconds), so
 * built objects are kept, keyed by everything that shapes them, in one small LRU list guarded by one mutex. An entry
 * in use is pinned by a count and never freed under its user. A key oneDNN refuses, or serves only with a slow
 * implementation, is cached too (object NULL), so it is asked only once; an object whose run fails is marked broken
 * and offered no more.
 *
 * Scratch: user-managed (oneDNN's library-managed scratchpad is tied to the creating thread), one buffer per calling
 * thread that grows as needed and is freed when the thread exits. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_impl.h"

#ifdef AXON_HAVE_ONEDNN

#define ONEDNN_CACHE_CAPACITY 96
#define ONEDNN_SCRATCH_KEEP ((size_t)64 << 20)

struct axon_onednn_entry {
    void *key;                   /* key_size bytes, owned */
    size_t key_size;
    void *obj;                   /* NULL: nothing offered for this key */
    void (*destroy)(void *obj);
    int refs;                    /* users holding it now; the entry is freed only at 0 */
    int evicted;                 /* off the list; the last user frees it */
    int broken;                  /* a run failed: offered no more */
    struct axon_onednn_entry *prev, *next;
};

/* The one lock: guards the LRU list below (most recent first) and its entries' refs, evicted and broken. */
static pthread_mutex_t onednn_mu = PTHREAD_MUTEX_INITIALIZER;
static axon_onednn_entry_t *onednn_head, *onednn_tail;
static int onednn_count;

/* Set once by onednn_init, read-only after. */
static pthread_once_t onednn_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t onednn_engine;
static pthread_key_t onednn_tls;
static int onednn_ok;

typedef struct onednn_thread {
    dnnl_stream_t stream;
    char *scratch;
    size_t scratch_cap;
} onednn_thread_t;

static void onednn_thread_free(void *p) {
    onednn_thread_t *t = p;
    if (!t) return;
    if (t->stream) dnnl_stream_destroy(t->stream);
    free(t->scratch);
    free(t);
}

static void onednn_init(void) {
    if (pthread_key_create(&onednn_tls, onednn_thread_free) != 0) return;
    onednn_ok = dnnl_engine_create(&onednn_engine, dnnl_cpu, 0) == dnnl_success;
}

int axon_onednn_available(void) {
    pthread_once(&onednn_once, onednn_init);
    return onednn_ok;
}

dnnl_engine_t axon_onednn_engine(void) { return axon_onednn_available() ? onednn_engine : NULL; }

int axon_onednn_thread(size_t bytes, dnnl_stream_t *stream, char **scratch) {
    if (!axon_onednn_available()) return -1;
    onednn_thread_t *t = pthread_getspecific(onednn_tls);
    if (!t) {
        if ((t = calloc(1, sizeof *t)) == NULL) return -1;
        if (pthread_setspecific(onednn_tls, t) != 0) {
            free(t);
            return -1;
        }
    }
    if (!t->stream && dnnl_stream_create(&t->stream, onednn_engine, dnnl_stream_default_flags) != dnnl_success) {
        t->stream = NULL;
        return -1;
    }
    if (bytes > t->scratch_cap) {
        free(t->scratch);
        t->scratch_cap = 0;
        if ((t->scratch = aligned_alloc(64, (bytes + 63) / 64 * 64)) == NULL) return -1;
        t->scratch_cap = bytes;
    }
    *stream = t->stream;
    *scratch = t->scratch;
    return 0;
}

void axon_onednn_thread_trim(void) {
    onednn_thread_t *t = axon_onednn_available() ? pthread_getspecific(onednn_tls) : NULL;
    if (t && t->scratch_cap > ONEDNN_SCRATCH_KEEP) {
        free(t->scratch);
        t->scratch = NULL;
        t->scratch_cap = 0;
    }
}

/* Sets this thread's OpenMP thread count for oneDNN and returns the one to restore: a small kernel runs inline on the
 * caller's thread, where PyTorch's own CPU ops read the same setting (torch.get_num_threads()). */
static int onednn_threads_enter(int nthreads) {
    const int prev = omp_get_max_threads();
    if (prev != nthreads) omp_set_num_threads(nthreads);
    return prev;
}

static void onednn_threads_leave(int nthreads, int prev) {
    if (prev != nthreads) omp_set_num_threads(prev);
}

int axon_onednn_run(dnnl_primitive_t prim, dnnl_stream_t stream, int nthreads, int nargs, const dnnl_exec_arg_t *args) {
    const int prev = onednn_threads_enter(nthreads);
    int rc = dnnl_primitive_execute(prim, stream, nargs, args) == dnnl_success ? 0 : -1;
    if (rc == 0 && dnnl_stream_wait(stream) != dnnl_success) rc = -1;
    onednn_threads_leave(nthreads, prev);
    return rc;
}

dnnl_primitive_desc_t axon_onednn_pick(const_dnnl_op_desc_t op_desc, const_dnnl_primitive_attr_t attr,
                                       const_dnnl_primitive_desc_t hint, int nthreads,
                                       int (*accept)(const char *impl)) {
    dnnl_primitive_desc_iterator_t it = NULL;
    dnnl_primitive_desc_t found = NULL;
    if (!axon_onednn_available()) return NULL;
    const int prev = onednn_threads_enter(nthreads);
    if (dnnl_primitive_desc_iterator_create(&it, op_desc, attr, onednn_engine, hint) != dnnl_success) {
        onednn_threads_leave(nthreads, prev);
        return NULL;
    }
    do {
        dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
        const char *impl = NULL;
        if (pd && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
            accept(impl))
            found = pd;
        else if (pd)
            dnnl_primitive_desc_destroy(pd);
    } while (!found && dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
    onednn_threads_leave(nthreads, prev);
    return found;
}

size_t axon_onednn_scratchpad_bytes(const_dnnl_primitive_desc_t pd) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

static void onednn_entry_free(axon_onednn_entry_t *e) {
    if (!e) return;
    if (e->obj) e->destroy(e->obj);
    free(e->key);
    free(e);
}

static void onednn_unlink(axon_onednn_entry_t *e) {
    if (e->prev) e->prev->next = e->next;
    else onednn_head = e->next;
    if (e->next) e->next->prev = e->prev;
    else onednn_tail = e->prev;
    e->prev = e->next = NULL;
    onednn_count--;
}

static void onednn_push_front(axon_onednn_entry_t *e) {
    e->prev = NULL;
    e->next = onednn_head;
    if (onednn_head) onednn_head->prev = e;
    else onednn_tail = e;
    onednn_head = e;
    onednn_count++;
}

void axon_onednn_release(axon_onednn_entry_t *e) {
    pthread_mutex_lock(&onednn_mu);
    int last = --e->refs == 0 && e->evicted;
    pthread_mutex_unlock(&onednn_mu);
    if (last) onednn_entry_free(e);
}

void *axon_onednn_object(axon_onednn_entry_t *e) {
    pthread_mutex_lock(&onednn_mu);
    void *obj = e->broken ? NULL : e->obj;
    pthread_mutex_unlock(&onednn_mu);
    return obj;
}

void axon_onednn_mark_broken(axon_onednn_entry_t *e) {
    pthread_mutex_lock(&onednn_mu);
    e->broken = 1;
    pthread_mutex_unlock(&onednn_mu);
}

/* Creation runs outside the lock; if two threads race to create one key, both entries go on the list and the older
 * one ages out. */
axon_onednn_entry_t *axon_onednn_acquire(const void *key, size_t key_size, int (*create)(const void *key, void **obj),
                                         void (*destroy)(void *obj)) {
    axon_onednn_entry_t *e, *victim = NULL;
    pthread_mutex_lock(&onednn_mu);
    for (e = onednn_head; e; e = e->next)
        if (e->destroy == destroy && e->key_size == key_size && memcmp(e->key, key, key_size) == 0) break;
    if (e) {
        onednn_unlink(e);
        onednn_push_front(e);
        e->refs++;
    }
    pthread_mutex_unlock(&onednn_mu);
    if (e) return e;
    if ((e = calloc(1, sizeof *e)) == NULL || (e->key = malloc(key_size)) == NULL) {
        free(e);
        return NULL;
    }
    memcpy(e->key, key, key_size);
    e->key_size = key_size;
    e->destroy = destroy;
    if (create(key, &e->obj) != 0) {
        onednn_entry_free(e);
        return NULL;
    }
    pthread_mutex_lock(&onednn_mu);
    e->refs = 1;
    onednn_push_front(e);
    if (onednn_count > ONEDNN_CACHE_CAPACITY) {
        victim = onednn_tail;
        onednn_unlink(victim);
        victim->evicted = 1;
        if (victim->refs > 0) victim = NULL; /* its last user frees it */
    }
    pthread_mutex_unlock(&onednn_mu);
    onednn_entry_free(victim);
    return e;
}

#endif
