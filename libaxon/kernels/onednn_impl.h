/* What libaxon's oneDNN users (gemm_onednn.c, conv_onednn.c) share: the CPU engine, each thread's stream and scratch,
 * and one cache of built primitives. Never installed; only compiled with AXON_HAVE_ONEDNN.
 *
 * Threads: Debian's oneDNN uses OpenMP (libgomp). libaxon runs every primitive on the calling pool participant alone,
 * with its OpenMP thread count (a per-thread setting) set to 1 before creating or running one, so oneDNN never starts
 * a team of its own that would compete with the pool for the same cores, and set back after: the calling thread may be
 * the user's, whose count PyTorch's CPU ops use. */
#ifndef AXON_ONEDNN_IMPL_H
#define AXON_ONEDNN_IMPL_H

#ifdef AXON_HAVE_ONEDNN
#include <stddef.h>

#include <oneapi/dnnl/dnnl.h>

/* libgomp's, which oneDNN links; declared here so no -fopenmp is needed */
void omp_set_num_threads(int n);
int omp_get_max_threads(void);

/* 1 when the CPU engine could be created (once, on first use). */
int axon_onednn_available(void);
dnnl_engine_t axon_onednn_engine(void);

/* This thread's stream, and a scratch buffer of at least `bytes` (64-byte aligned) that it keeps until it exits.
 * 0 on success, -1 when either cannot be had. The scratch is the thread's own until its next call. */
int axon_onednn_thread(size_t bytes, dnnl_stream_t *stream, char **scratch);

/* Free this thread's scratch if it has grown past what a thread keeps between calls (64 MiB: a large convolution's
 * reordered images would otherwise stay with every pool thread for good). */
void axon_onednn_thread_trim(void);

/* Run prim on this thread's stream with nthreads OpenMP threads (callers pass 1, see above) and wait for it: 0 on
 * success. */
int axon_onednn_run(dnnl_primitive_t prim, dnnl_stream_t stream, int nthreads, int nargs, const dnnl_exec_arg_t *args);

/* A pinned cache entry: obj is what create built (NULL when oneDNN offers nothing worth running for the key). */
typedef struct axon_onednn_entry axon_onednn_entry_t;

/* The object cached for key (key_size bytes, compared with memcmp, so callers zero a key's padding), pinned until
 * axon_onednn_release. Keys of different kinds are told apart by their destroy function. On a miss, create(key, &obj)
 * builds the object outside the lock (0, or -1 when out of memory); a least-recently-used entry is dropped beyond the
 * cache's capacity, freed by its last user. NULL when out of memory. */
axon_onednn_entry_t *axon_onednn_acquire(const void *key, size_t key_size, int (*create)(const void *key, void **obj),
                                         void (*destroy)(void *obj));
/* The entry's object, or NULL when there is none or a run of it failed (axon_onednn_mark_broken). */
void *axon_onednn_object(axon_onednn_entry_t *e);
void axon_onednn_mark_broken(axon_onednn_entry_t *e);
void axon_onednn_release(axon_onednn_entry_t *e);

/* The first implementation oneDNN ranks for op_desc (with attr and, for a backward primitive, the forward's hint)
 * whose name passes accept(name), as a primitive descriptor the caller destroys; NULL when none does. oneDNN sizes
 * its blocking for the OpenMP thread count current at creation, which this sets to nthreads first. */
dnnl_primitive_desc_t axon_onednn_pick(const_dnnl_op_desc_t op_desc, const_dnnl_primitive_attr_t attr,
                                       const_dnnl_primitive_desc_t hint, int nthreads, int (*accept)(const char *impl));

/* Bytes of the scratchpad pd asks for. */
size_t axon_onednn_scratchpad_bytes(const_dnnl_primitive_desc_t pd);
#endif

#endif
