/* Dead-code elimination: erase nodes none of whose results is read by a node or returned. One walk from the end
 * with our own use counts, so a chain of dead nodes goes in one pass. Two kinds stay even unread: a node that draws
 * (dropout, attention with dropout) holds its place in the Philox stream (axon_program_run_philox), as in eager mode,
 * and an index_copy_into writes into the caller's tensor. */
#include <stdlib.h>

#include "compile_impl.h"

axon_status_t pass_dce(axon_axir_module_t *m, axon_axir_func_t *f, axon_axir_diag_t *diag) {
    (void)m;
    axon_axir_func_recompute_uses(f);
    int *uses = calloc((size_t)(f->next_value_id > 0 ? f->next_value_id : 1), sizeof *uses);
    if (!uses) return compile_diag(diag, NULL, AXON_ERROR_OUT_OF_MEMORY, "dce: out of memory");
    for (axon_axir_node_t *n = f->first; n; n = n->next)
        for (int r = 0; r < n->num_results; r++) uses[n->results[r]->id] = n->results[r]->num_uses;
    for (axon_axir_node_t *n = f->last, *prev; n; n = prev) {
        prev = n->prev;
        int live = axon_axir_node_draws(n) || n->op == AXON_AXIR_OP_INDEX_COPY_INTO;
        for (int r = 0; r < n->num_results; r++) live |= uses[n->results[r]->id] > 0;
        if (live) continue;
        for (int k = 0; k < n->num_operands; k++) uses[n->operands[k]->id]--;
        if (axon_axir_node_erase(f, n) != AXON_OK) {
            free(uses);
            return compile_diag(diag, n, AXON_ERROR_INTERNAL, "dce: cannot erase %s", axon_axir_op_name(n->op));
        }
    }
    free(uses);
    axon_axir_func_recompute_uses(f);
    return AXON_OK;
}
