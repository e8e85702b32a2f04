/* Scheduling for fusion: reorders the body (a topological order, so meaning is unchanged) so that an elementwise
 * node's elementwise consumer comes right after it. Fusion (pass_fuse.c) takes runs that are contiguous in program
 * order, and a front end interleaves what it emits: constants for Python scalars, weight transposes, the other
 * branch of a residual. Here constants and views go as early as they can, and after each fusable node the earliest ready fusable consumer of
 * its results follows; otherwise the earliest ready node in the original order does, so an unfusable graph keeps its
 * order. O((nodes + uses) log nodes). */
#include <stdlib.h>
#include <string.h>

#include "compile_impl.h"

typedef struct sched {
    int n;
    axon_axir_node_t **nodes;    /* original order */
    int *pending;                /* per node: operands whose producer is not scheduled yet */
    int *user_start, *users;     /* CSR: users[user_start[i] .. user_start[i + 1]) consume node i */
    int *heap, heap_len;         /* ready nodes, by priority */
    int *prio;
    char *done;
} sched_t;

static void heap_push(sched_t *s, int i) {
    int k = s->heap_len++;
    s->heap[k] = i;
    while (k > 0) {
        int parent = (k - 1) / 2;
        if (s->prio[s->heap[parent]] <= s->prio[s->heap[k]]) break;
        int t = s->heap[parent];
        s->heap[parent] = s->heap[k];
        s->heap[k] = t;
        k = parent;
    }
}

static int heap_pop(sched_t *s) {
    int top = s->heap[0];
    s->heap[0] = s->heap[--s->heap_len];
    int k = 0;
    for (;;) {
        int l = 2 * k + 1, r = l + 1, m = k;
        if (l < s->heap_len && s->prio[s->heap[l]] < s->prio[s->heap[m]]) m = l;
        if (r < s->heap_len && s->prio[s->heap[r]] < s->prio[s->heap[m]]) m = r;
        if (m == k) break;
        int t = s->heap[m];
        s->heap[m] = s->heap[k];
        s->heap[k] = t;
        k = m;
    }
    return top;
}

static int fusable(const axon_axir_node_t *n) { return fused_can_run(n) || fused_reduce_dims(n) > 0; }

static void release_users(sched_t *s, int i) {
    for (int u = s->user_start[i]; u < s->user_start[i + 1]; u++)
        if (--s->pending[s->users[u]] == 0) heap_push(s, s->users[u]);
}

axon_status_t pass_schedule(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag) {
    (void)m;
    sched_t s;
    memset(&s, 0, sizeof s);
    for (axon_axir_node_t *n = f->first; n; n = n->next) s.n++;
    if (s.n < 3) return AXON_OK;
    /* node id -> position; ids are unique and below next_node_id */
    int *pos = malloc((size_t)f->next_node_id * sizeof *pos);
    s.nodes = malloc((size_t)s.n * sizeof *s.nodes);
    s.pending = calloc((size_t)s.n, sizeof *s.pending);
    s.user_start = calloc((size_t)s.n + 1, sizeof *s.user_start);
    s.heap = malloc((size_t)s.n * sizeof *s.heap);
    s.prio = malloc((size_t)s.n * sizeof *s.prio);
    s.done = calloc((size_t)s.n, 1);
    axon_status_t st = AXON_OK;
    if (!pos || !s.nodes || !s.pending || !s.user_start || !s.heap || !s.prio || !s.done) {
        st = compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "schedule: out of memory");
        goto out;
    }
    int i = 0;
    for (axon_axir_node_t *n = f->first; n; n = n->next, i++) {
        s.nodes[i] = n;
        pos[n->id] = i;
        /* Constants and views as soon as they are ready: they cost nothing to run, and one that a fusable chain
         * needs (a transposed weight, a scalar) would otherwise stop the chain where it is first read. */
        const axon_axir_op_class_t cls = axon_axir_op_class(n->op);
        s.prio[i] = cls == AXON_AXIR_CLASS_CONSTANT || cls == AXON_AXIR_CLASS_VIEW ? i - s.n : i;
    }
    int edges = 0;
    for (i = 0; i < s.n; i++)
        for (int k = 0; k < s.nodes[i]->num_operands; k++)
            if (s.nodes[i]->operands[k]->def) {
                s.user_start[pos[s.nodes[i]->operands[k]->def->id] + 1]++;
                s.pending[i]++;
                edges++;
            }
    for (i = 0; i < s.n; i++) s.user_start[i + 1] += s.user_start[i];
    s.users = malloc((size_t)(edges ? edges : 1) * sizeof *s.users);
    int *fill = calloc((size_t)s.n, sizeof *fill);
    if (!s.users || !fill) {
        free(fill);
        st = compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "schedule: out of memory");
        goto out;
    }
    for (i = 0; i < s.n; i++)
        for (int k = 0; k < s.nodes[i]->num_operands; k++)
            if (s.nodes[i]->operands[k]->def) {
                int p = pos[s.nodes[i]->operands[k]->def->id];
                s.users[s.user_start[p] + fill[p]++] = i;
            }
    free(fill);
    for (i = 0; i < s.n; i++)
        if (s.pending[i] == 0) heap_push(&s, i);

    axon_axir_node_t *prev = NULL;
    int last = -1;
    for (int placed = 0; placed < s.n; placed++) {
        int next = -1;
        /* the earliest ready fusable consumer of the last node, if it is fusable itself */
        if (last >= 0 && fusable(s.nodes[last]))
            for (int u = s.user_start[last]; u < s.user_start[last + 1]; u++) {
                int c = s.users[u];
                if (!s.done[c] && s.pending[c] == 0 && fusable(s.nodes[c]) && (next < 0 || c < next)) next = c;
            }
        if (next < 0) {
            do next = heap_pop(&s);
            while (s.done[next]);   /* taken earlier as a preferred consumer */
        }
        s.done[next] = 1;
        release_users(&s, next);
        axon_axir_node_t *n = s.nodes[next];
        n->prev = prev;
        if (prev) prev->next = n;
        else f->first = n;
        prev = n;
        last = next;
    }
    prev->next = NULL;
    f->last = prev;
out:
    free(pos);
    free(s.nodes);
    free(s.pending);
    free(s.user_start);
    free(s.users);
    free(s.heap);
    free(s.prio);
    free(s.done);
    return st;
}
