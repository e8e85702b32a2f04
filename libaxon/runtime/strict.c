/* Strict mode: device memory is closed to the host except while the runtime itself touches it.
 *
 * Every mapped device segment is registered here. The runtime brackets its own commands and copies with
 * axon_strict_enter/leave; a process-wide count of such sections decides the protection: on 0 -> 1 every segment is
 * opened, on 1 -> 0 every segment is closed again. A host access to device memory from user code then faults with
 * SIGSEGV at the faulting instruction, which a debugger or the crash trace points at directly.
 *
 * Limit: protection is per process, not per thread (this CPU has no protection keys, so mprotect is the mechanism).
 * While any runtime command runs on any stream, every segment is open to every thread, so a stray host access is only
 * caught while no runtime command is running. It catches the common mistake (touching device memory between
 * launches), not every one.
 *
 * Cost: a transition is one mprotect per segment; the nested case (count stays above 0) is one atomic CAS. When strict
 * mode is off each call is one pointer test. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct axon_strict_segment {
    void *p;
    size_t n;
};

struct axon_strict {
    const axon_hw_ops_t *hw;
    void *hw_ctx;
    atomic_int inside;           /* runtime sections running now; 0 -> 1 and 1 -> 0 happen only under mu */
    pthread_mutex_t mu;          /* serializes transitions and guards the segment list */
    struct axon_strict_segment *segs;
    size_t nsegs, cap_segs;
};

axon_status_t axon_strict_create(axon_runtime_t rt, struct axon_strict **out) {
    *out = NULL;
    const axon_hw_ops_t *hw = rt->cfg.hw ? rt->cfg.hw : axon_hw_cpu();
    if (hw->mem_protect == NULL)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "strict mode needs a port with mem_protect; port '%s' has none",
                         hw->name ? hw->name : "?");
    struct axon_strict *s = calloc(1, sizeof *s);
    if (s == NULL) return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "strict mode: no host memory");
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return axon_fail(AXON_ERROR_INTERNAL, "strict mode: cannot create its mutex");
    }
    s->hw = hw;
    s->hw_ctx = rt->cfg.hw_ctx;
    atomic_init(&s->inside, 0);
    *out = s;
    return AXON_OK;
}

void axon_strict_destroy(struct axon_strict *s) {
    if (s == NULL) return;
    /* Segments still registered belong to a mempool that is gone or going: their mappings are its to remove. */
    free(s->segs);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Set host access of every registered segment. Caller holds mu. A failure here means the system refused to change a
 * protection it accepted before; carrying on would turn runtime commands into crashes, so it is fatal. */
static void axon_strict_set_all(struct axon_strict *s, int host_access) {
    for (size_t i = 0; i < s->nsegs; i++) {
        axon_status_t st = s->hw->mem_protect(s->hw_ctx, s->segs[i].p, s->segs[i].n, host_access);
        AXON_ASSERT(st == AXON_OK);
    }
}

axon_status_t axon_strict_add(axon_runtime_t rt, void *p, size_t n) {
    struct axon_strict *s = rt->strict;
    if (s == NULL) return AXON_OK;
    axon_status_t st = AXON_OK;
    pthread_mutex_lock(&s->mu);
    if (s->nsegs == s->cap_segs) {
        size_t cap = s->cap_segs ? s->cap_segs * 2 : 16;
        struct axon_strict_segment *ns = realloc(s->segs, cap * sizeof *ns);
        if (ns == NULL) {
            st = axon_fail(AXON_ERROR_OUT_OF_MEMORY, "strict mode: no host memory to register %zu segments", cap);
            goto out;
        }
        s->segs = ns;
        s->cap_segs = cap;
    }
    /* Under mu the count cannot cross zero. Inside a runtime section the new segment stays open (as mapped) and is
     * closed with the others when the count drops; outside, close it now. */
    if (atomic_load(&s->inside) == 0 && (st = s->hw->mem_protect(s->hw_ctx, p, n, 0)) != AXON_OK) goto out;
    s->segs[s->nsegs].p = p;
    s->segs[s->nsegs].n = n;
    s->nsegs++;
out:
    pthread_mutex_unlock(&s->mu);
    return st;
}

void axon_strict_remove(axon_runtime_t rt, void *p, size_t n) {
    struct axon_strict *s = rt->strict;
    if (s == NULL) return;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nsegs; i++) {
        if (s->segs[i].p != p) continue;
        AXON_ASSERT(s->segs[i].n == n);
        s->segs[i] = s->segs[--s->nsegs];
        break;
    }
    pthread_mutex_unlock(&s->mu);
}

void axon_strict_enter(axon_runtime_t rt) {
    struct axon_strict *s = rt->strict;
    if (s == NULL) return;
    /* Fast path: already inside elsewhere, so the segments are open (the 0 -> 1 holder stores 1 only after opening
     * them, and a 1 -> 0 closer works under mu with the count at 0, which this CAS never takes from). */
    int c = atomic_load(&s->inside);
    while (c > 0)
        if (atomic_compare_exchange_weak(&s->inside, &c, c + 1)) return;
    pthread_mutex_lock(&s->mu);
    if (atomic_load(&s->inside) == 0) axon_strict_set_all(s, 1);
    atomic_fetch_add(&s->inside, 1);
    pthread_mutex_unlock(&s->mu);
}

void axon_strict_leave(axon_runtime_t rt) {
    struct axon_strict *s = rt->strict;
    if (s == NULL) return;
    /* Fast path: others remain inside, nothing to close. */
    int c = atomic_load(&s->inside);
    while (c > 1)
        if (atomic_compare_exchange_weak(&s->inside, &c, c - 1)) return;
    pthread_mutex_lock(&s->mu);
    /* Once the count is 0 an enter must take mu to raise it, so nobody can use the segments while we close them. */
    int before = atomic_fetch_sub(&s->inside, 1);
    AXON_ASSERT(before > 0);
    if (before == 1) axon_strict_set_all(s, 0);
    pthread_mutex_unlock(&s->mu);
}
