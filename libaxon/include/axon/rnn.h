/* Fused recurrent cells: the element-wise part of one LSTM or GRU step, after the two gate GEMMs (PyTorch's
 * _thnn_fused_lstm_cell and _thnn_fused_gru_cell, which nn.LSTM and nn.GRU call on accelerators).
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch. Every tensor is contiguous; B rows, hidden size H.
 * Dtypes: float32, float64, float16, bfloat16 (tensors of one call may mix them); values are converted to double on
 * load and rounded once on store. Rows run in parallel; each element is computed independently, so results do not
 * depend on the thread count. Biases are optional (NULL) and 1-D; any other tensor may not be NULL unless noted.
 *
 * LSTM: gates = input_gates + hidden_gates (+ input_bias + hidden_bias), [B, 4H] in the order i, f, g, o;
 *   i, f, o = sigmoid, g = tanh; cy = f * cx + i * g; hy = o * tanh(cy); workspace [B, 4H] = (i, f, g, o).
 * LSTM backward, from the workspace: with t = tanh(cy) and gc = grad_cy + grad_hy * o * (1 - t^2):
 *   grad_gates = (gc g i (1-i), gc cx f (1-f), gc i (1-g^2), grad_hy t o (1-o)), grad_cx = gc f.
 *   grad_hy and grad_cy may each be NULL (zero).
 * GRU: input_gates and hidden_gates [B, 3H] in the order r, z, n (biases added to each side separately):
 *   r = sigmoid(ir + hr), z = sigmoid(iz + hz), n = tanh(in + r * hn), hy = n + z * (hx - n);
 *   workspace [B, 5H] = (r, z, n, hx, hn).
 * GRU backward: with g = grad_hy: grad_hx = g z; gz = g (hx - n) z (1 - z); gn = g (1 - z) (1 - n^2);
 *   gr = gn hn r (1 - r); grad_input_gates = (gr, gz, gn); grad_hidden_gates = (gr, gz, gn r).
 *
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors or shapes that do not match (the
 * message names the tensor and both shapes); UNSUPPORTED for non-float dtypes. */
#ifndef AXON_RNN_H
#define AXON_RNN_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

AXON_API axon_status_t axon_kernel_lstm_cell(axon_stream_t s, const axon_tensor_t *hy, const axon_tensor_t *cy,
                                             const axon_tensor_t *workspace, const axon_tensor_t *input_gates,
                                             const axon_tensor_t *hidden_gates, const axon_tensor_t *cx,
                                             const axon_tensor_t *input_bias, const axon_tensor_t *hidden_bias);

AXON_API axon_status_t axon_kernel_lstm_cell_backward(axon_stream_t s, const axon_tensor_t *grad_gates,
                                                      const axon_tensor_t *grad_cx, const axon_tensor_t *grad_hy,
                                                      const axon_tensor_t *grad_cy, const axon_tensor_t *cx,
                                                      const axon_tensor_t *cy, const axon_tensor_t *workspace);

AXON_API axon_status_t axon_kernel_gru_cell(axon_stream_t s, const axon_tensor_t *hy, const axon_tensor_t *workspace,
                                            const axon_tensor_t *input_gates, const axon_tensor_t *hidden_gates,
                                            const axon_tensor_t *hx, const axon_tensor_t *input_bias,
                                            const axon_tensor_t *hidden_bias);

AXON_API axon_status_t axon_kernel_gru_cell_backward(axon_stream_t s, const axon_tensor_t *grad_input_gates,
                                                     const axon_tensor_t *grad_hidden_gates,
                                                     const axon_tensor_t *grad_hx, const axon_tensor_t *grad_hy,
                                                     const axon_tensor_t *workspace);

AXON_EXTERN_C_END

#endif
