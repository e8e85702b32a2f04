/* The tile interpreter's program (fused_build.c builds it, fused_exec.c runs it). Never installed. */
#ifndef AXON_FUSED_IMPL_H
#define AXON_FUSED_IMPL_H

#include "../kernels/pointwise_impl.h"
#include "compile_impl.h"

/* Elements per tile: FUSED_MAX_REGS tiles of doubles are 128 KiB of a worker's stack. */
#define FUSED_TILE 512

typedef struct fused_insn {
    pw_loop_fn loop;             /* NULL: a cast (copy or convert the register, then round it if round_to is set) */
    int arity;
    int in[3], out;              /* registers */
    pw_ctx_t ctx;
    axon_dtype_t round_to;       /* AXON_DTYPE_COUNT: no rounding */
    axon_convert_fn convert;     /* a cast between a bool and a float register; NULL: a copy */
    axon_convert_fn round_down, round_up;
} fused_insn_t;

typedef struct fused_prog {
    axon_dtype_t work;           /* AXON_FLOAT32 or AXON_FLOAT64 */
    int num_inputs, num_outputs, num_regs, num_insns;
    axon_convert_fn load[FUSED_MAX_INPUTS];    /* input dtype -> work */
    int direct[FUSED_MAX_INPUTS];              /* input k is of the work dtype: read in place when contiguous */
    axon_convert_fn store[FUSED_MAX_OUTPUTS];  /* work -> output dtype */
    int store_direct[FUSED_MAX_OUTPUTS];       /* output r is of the work dtype: computed in place when contiguous */
    int out_reg[FUSED_MAX_OUTPUTS];            /* -1 for the reduction's output */
    axon_dtype_t reg_dtype[FUSED_MAX_REGS];    /* work, or AXON_BOOL */
    fused_insn_t *insns;
    /* A group may end in a reduction over its trailing dimensions: register reduce_in folded into output
     * reduce_out, one value per row of the other dimensions. */
    axon_axir_op_t reduce_op;                  /* AXON_AXIR_OP_INVALID: none */
    int reduce_in, reduce_out, reduce_dims;    /* reduce_dims: how many trailing dimensions */
} fused_prog_t;

#endif
