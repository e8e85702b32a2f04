/* Scheduling for fusion: reorders the body (a topological order, so meaning is unchanged) so that elementwise nodes
 * that can fuse are contiguous. Fusion (pass_fuse.c) takes runs that are contiguous in program order, and a front end
 * interleaves what it emits: constants for Python scalars, weight transposes, the other branch of a residual, and
 * an optimizer step traced list op by list op (every parameter's decay, then every first moment, ...).
 * Two list schedules, each O((nodes + uses) log nodes):
 * - forward: constants and views go as early as they can, and after each fusable node the earliest ready fusable
 *   consumer of its results follows (chains: x -> gelu's ops -> residual add);
 * - then backward from the end: after each fusable node, the producers of the same shape that it made ready follow,
 *   the most recently readied first (trees that converge: a parameter's update reads its decay, both moments and
 *   the bias corrections, each computed by its own chain).
 * Otherwise the earliest (forward) or latest (backward) ready node in the current order goes next, so a graph with
 * nothing to fuse keeps its order. */
#include <stdlib.h>
#include <string.h>

#include "compile_impl.h"

typedef struct sched {
    int n;
    axon_axir_node_t **nodes;    /* original order */
    int *pending;                /* per node: operands whose producer is not scheduled yet */
    int *user_start, *users;     /* CSR: users[user_start[i] .. user_start[i + 1]) consume node i */
    int *heap, heap_len;         /* ready nodes, by priority */
    long long *prio;
    char *done;
    int *pos;                    /* node id -> position in the current order (ids are below next_node_id) */
} sched_t;

/* Counts f's body and, for 3 nodes or more, allocates what both schedules use and numbers the nodes; 0 when there
 * is nothing to reorder, -1 when out of memory. */
static int sched_open(sched_t *s, const axon_axir_func_t *f) {
    memset(s, 0, sizeof *s);
    for (axon_axir_node_t *n = f->first; n; n = n->next) s->n++;
    if (s->n < 3) return 0;
    s->pos = malloc((size_t)(unsigned)f->next_node_id * sizeof *s->pos);
    s->nodes = malloc((size_t)(unsigned)s->n * sizeof *s->nodes);
    s->pending = calloc((size_t)(unsigned)s->n, sizeof *s->pending);
    s->heap = malloc((size_t)(unsigned)s->n * sizeof *s->heap);
    s->prio = malloc((size_t)(unsigned)s->n * sizeof *s->prio);
    s->done = calloc((size_t)(unsigned)s->n, 1);
    if (!s->pos || !s->nodes || !s->pending || !s->heap || !s->prio || !s->done) return -1;
    int i = 0;
    for (axon_axir_node_t *n = f->first; n; n = n->next, i++) {
        s->nodes[i] = n;
        s->pos[n->id] = i;
    }
    return 1;
}

static void sched_close(sched_t *s) {
    free(s->pos);
    free(s->nodes);
    free(s->pending);
    free(s->user_start);
    free(s->users);
    free(s->heap);
    free(s->prio);
    free(s->done);
}

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

static axon_status_t schedule_forward(axon_axir_func_t *f, axon_axir_diag_t *diag) {
    sched_t s;
    const int open = sched_open(&s, f);
    axon_status_t st = AXON_OK;
    if (open <= 0 || !(s.user_start = calloc((size_t)(unsigned)s.n + 1, sizeof *s.user_start))) {
        if (open != 0) st = compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "schedule: out of memory");
        goto out;
    }
    int *pos = s.pos, i;
    for (i = 0; i < s.n; i++) {
        /* Constants and views as soon as they are ready: they cost nothing to run, and one that a fusable chain
         * needs (a transposed weight, a scalar) would otherwise stop the chain where it is first read. */
        const axon_axir_op_class_t cls = axon_axir_op_class(s.nodes[i]->op);
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
    int *fill = calloc((size_t)(unsigned)s.n, sizeof *fill);
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
    sched_close(&s);
    return st;
}

/* The shape a fusable node's group iterates: its result's, or for a reduction that ends a group, its operand's. */
static const axon_axir_type_t *group_type(const axon_axir_node_t *n) {
    return fused_can_run(n) ? &n->results[0]->type : &n->operands[0]->type;
}

static int same_shape(axon_axir_module_t *m, const axon_axir_node_t *a, const axon_axir_node_t *b) {
    const axon_axir_type_t *x = group_type(a), *y = group_type(b);
    if (x->rank != y->rank) return 0;
    for (int d = 0; d < x->rank; d++)
        if (!axon_axir_dim_equal(m, x->dims[d], y->dims[d])) return 0;
    return 1;
}

static axon_status_t schedule_backward(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag) {
    sched_t s;
    const int open = sched_open(&s, f);
    int *stack = open > 0 ? malloc((size_t)(unsigned)s.n * sizeof *stack) : NULL, sp = 0;
    axon_axir_node_t **order = open > 0 ? malloc((size_t)(unsigned)s.n * sizeof *order) : NULL;
    axon_status_t st = AXON_OK;
    if (open <= 0 || !stack || !order) {
        if (open != 0) st = compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "schedule: out of memory");
        goto out;
    }
    int *pos = s.pos, i;
    for (i = 0; i < s.n; i++)   /* the latest first; constants last of all, so that they stay at the top */
        s.prio[i] = axon_axir_op_class(s.nodes[i]->op) == AXON_AXIR_CLASS_CONSTANT ? (long long)s.n - i
                                                                                  : -(long long)i;
    /* pending: the operand slots that read a node's results (the return's do not hold a node back) */
    for (i = 0; i < s.n; i++)
        for (int k = 0; k < s.nodes[i]->num_operands; k++)
            if (s.nodes[i]->operands[k]->def) s.pending[pos[s.nodes[i]->operands[k]->def->id]]++;
    for (i = 0; i < s.n; i++)
        if (s.pending[i] == 0) heap_push(&s, i);
    for (int placed = 0; placed < s.n; placed++) {
        int next = -1;
        while (sp > 0 && next < 0) {
            int c = stack[--sp];
            if (!s.done[c]) next = c;
        }
        if (next < 0) {
            do next = heap_pop(&s);
            while (s.done[next]);
        }
        s.done[next] = 1;
        axon_axir_node_t *n = s.nodes[next];
        order[s.n - 1 - placed] = n;
        const int fus = fusable(n);
        for (int k = 0; k < n->num_operands; k++) {
            if (!n->operands[k]->def) continue;
            int p = pos[n->operands[k]->def->id];
            if (--s.pending[p] != 0) continue;
            if (fus && fusable(s.nodes[p]) && same_shape(m, s.nodes[p], n)) stack[sp++] = p;
            else heap_push(&s, p);
        }
    }
    for (i = 0; i < s.n; i++) {
        order[i]->prev = i > 0 ? order[i - 1] : NULL;
        order[i]->next = i + 1 < s.n ? order[i + 1] : NULL;
    }
    f->first = order[0];
    f->last = order[s.n - 1];
out:
    free(stack);
    free(order);
    sched_close(&s);
    return st;
}

axon_status_t pass_schedule(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag) {
    axon_status_t st = schedule_forward(f, diag);
    return st == AXON_OK ? schedule_backward(m, f, diag) : st;
}
