// _fused_adam_, _fused_adamw_ and _fused_sgd_ (float and tensor lr) on libaxon's fused optimizer steps
// (libaxon/include/axon/optim.h): one command per list chunk updates params and state in place.
//
// The fast route: every list tensor on one axon device, a float dtype per list, tensor i of each list with
// params[i]'s sizes and strides, non-overlapping and dense (described as flat memory); state_steps, a tensor lr,
// grad_scale and found_inf one-element float tensors on that device, read by the kernel when it runs (no host
// synchronization; a CPU tensor lr is read here, as the CPU kernel does). Anything else runs PyTorch's CPU kernel
// through the host fallback. The step counts are incremented by the optimizer before the call, as PyTorch expects.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <axon/optim.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <initializer_list>
#include <optional>
#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool is_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// Whether `t` is on dev with a float dtype (one element if `number`).
bool on(const at::Tensor& t, const at::Device& dev, bool number) {
  return t.defined() && t.device() == dev && is_float(t.scalar_type()) && !t.is_conj() && !t.is_neg() &&
         (!number || t.numel() == 1);
}

bool fast_lists(std::initializer_list<at::TensorList> lists, at::TensorList steps,
                std::initializer_list<const at::Tensor*> numbers) {
  const at::TensorList params = *lists.begin();
  if (params.empty() || !params[0].defined() || params[0].device().type() != kAxon) return false;
  const at::Device dev = params[0].device();
  for (const at::TensorList l : lists)
    for (size_t i = 0; i < l.size(); ++i) {
      const at::Tensor& t = l[i];
      if (!on(t, dev, false) || t.scalar_type() != l[0].scalar_type() || t.layout() != at::kStrided ||
          !t.sizes().equals(params[i].sizes()) || !t.strides().equals(params[i].strides()) ||
          !t.is_non_overlapping_and_dense())
        return false;
    }
  for (const at::Tensor& t : steps)
    if (!on(t, dev, true) || t.scalar_type() != steps[0].scalar_type()) return false;
  for (const at::Tensor* t : numbers)
    if (t && t->defined() && !on(*t, dev, true)) return false;
  return true;
}

void check_lengths(const char* op, at::TensorList params, std::initializer_list<std::pair<const char*, at::TensorList>> ls) {
  for (const auto& [name, l] : ls)
    TORCH_CHECK(l.size() == params.size(), op, ": ", name, " has ", l.size(), " tensors but params has ",
                params.size());
}

// Every tensor of each list shaped like params[i]: a mismatch is the caller's error, never a fallback that could write
// past a tensor's end.
void check_shapes(const char* op, at::TensorList params,
                  std::initializer_list<std::pair<const char*, at::TensorList>> ls) {
  for (const auto& [name, l] : ls)
    for (size_t i = 0; i < l.size(); ++i)
      TORCH_CHECK(l[i].sizes().equals(params[i].sizes()), op, ": ", name, "[", i, "] has shape ", l[i].sizes(),
                  " but params[", i, "] has ", params[i].sizes());
}

// One-element descriptor of an optional number tensor, or nullptr.
const axon_tensor_t* number(const std::optional<at::Tensor>& t, axon_tensor_t* storage, const char* op) {
  if (!t.has_value() || !t->defined()) return nullptr;
  *storage = describe_flat(*t, op);
  return storage;
}

// ---- Adam / AdamW ----

template <bool ADAMW>
bool adam_native(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                 at::TensorList max_exp_avg_sqs, at::TensorList steps, double lr, const at::Tensor* lr_t,
                 double beta1, double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                 const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  const char* op = ADAMW ? "_fused_adamw_" : "_fused_adam_";
  check_lengths(op, params, {{"grads", grads}, {"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs},
                             {"state_steps", steps}});
  if (amsgrad) check_lengths(op, params, {{"max_exp_avg_sqs", max_exp_avg_sqs}});
  check_shapes(op, params, {{"grads", grads}, {"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs}});
  if (amsgrad) check_shapes(op, params, {{"max_exp_avg_sqs", max_exp_avg_sqs}});
  if (params.empty()) return true;
  at::Tensor lr_dev;
  if (lr_t && lr_t->is_cpu()) lr = lr_t->item<double>();  // as the CPU kernel: the value now
  else if (lr_t) lr_dev = *lr_t;
  const at::Tensor* gs = grad_scale ? &*grad_scale : nullptr;
  const at::Tensor* fi = found_inf ? &*found_inf : nullptr;
  const bool ok = amsgrad ? fast_lists({params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs}, steps, {gs, fi, &lr_dev})
                          : fast_lists({params, grads, exp_avgs, exp_avg_sqs}, steps, {gs, fi, &lr_dev});
  if (!ok) return false;
  auto p = describe_flat_list(params, op), g = describe_flat_list(grads, op), m = describe_flat_list(exp_avgs, op);
  auto v = describe_flat_list(exp_avg_sqs, op), s = describe_flat_list(steps, op);
  std::vector<axon_tensor_t> mx = amsgrad ? describe_flat_list(max_exp_avg_sqs, op) : std::vector<axon_tensor_t>{};
  axon_tensor_t lr_d, gs_d, fi_d;
  axon_adam_options_t o{};
  o.lr = lr;
  o.lr_tensor = lr_dev.defined() ? number(lr_dev, &lr_d, op) : nullptr;
  o.beta1 = beta1, o.beta2 = beta2, o.weight_decay = weight_decay, o.eps = eps;
  o.amsgrad = amsgrad, o.maximize = maximize, o.decoupled = ADAMW;
  o.grad_scale = number(grad_scale, &gs_d, op);
  o.found_inf = number(found_inf, &fi_d, op);
  AXON_CHECK(axon_optim_adam(current_stream(params[0].device().index()), &o, static_cast<int64_t>(params.size()),
                             p.data(), g.data(), m.data(), v.data(), amsgrad ? mx.data() : nullptr, s.data()));
  return true;
}

template <bool ADAMW, class Op>
void fused_adam(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                at::TensorList max_exp_avg_sqs, at::TensorList steps, double lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize,
                const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  if (adam_native<ADAMW>(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, nullptr, beta1, beta2,
                         weight_decay, eps, amsgrad, maximize, grad_scale, found_inf))
    return;
  fall_back<Op>(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay, eps,
                amsgrad, maximize, grad_scale, found_inf);
}

template <bool ADAMW, class Op>
void fused_adam_tensor_lr(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                          at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs, at::TensorList steps,
                          const at::Tensor& lr, double beta1, double beta2, double weight_decay, double eps,
                          bool amsgrad, bool maximize, const std::optional<at::Tensor>& grad_scale,
                          const std::optional<at::Tensor>& found_inf) {
  if (adam_native<ADAMW>(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, 0.0, &lr, beta1, beta2,
                         weight_decay, eps, amsgrad, maximize, grad_scale, found_inf))
    return;
  fall_back<Op>(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay, eps,
                amsgrad, maximize, grad_scale, found_inf);
}

// ---- SGD ----

bool sgd_native(at::TensorList params, at::TensorList grads, at::TensorList bufs, double weight_decay,
                double momentum, double lr, const at::Tensor* lr_t, double dampening, bool nesterov, bool maximize,
                bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                const std::optional<at::Tensor>& found_inf) {
  const char* op = "_fused_sgd_";
  check_lengths(op, params, {{"grads", grads}});
  const bool has_momentum = momentum != 0.0;
  if (has_momentum) check_lengths(op, params, {{"momentum_buffer_list", bufs}});
  check_shapes(op, params, {{"grads", grads}});
  if (has_momentum) check_shapes(op, params, {{"momentum_buffer_list", bufs}});
  if (params.empty()) return true;
  at::Tensor lr_dev;
  if (lr_t && lr_t->is_cpu()) lr = lr_t->item<double>();
  else if (lr_t) lr_dev = *lr_t;
  const at::Tensor* gs = grad_scale ? &*grad_scale : nullptr;
  const at::Tensor* fi = found_inf ? &*found_inf : nullptr;
  const bool ok = has_momentum ? fast_lists({params, grads, bufs}, {}, {gs, fi, &lr_dev})
                               : fast_lists({params, grads}, {}, {gs, fi, &lr_dev});
  if (!ok) return false;
  auto p = describe_flat_list(params, op), g = describe_flat_list(grads, op);
  std::vector<axon_tensor_t> b = has_momentum ? describe_flat_list(bufs, op) : std::vector<axon_tensor_t>{};
  axon_tensor_t lr_d, gs_d, fi_d;
  axon_sgd_options_t o{};
  o.lr = lr;
  o.lr_tensor = lr_dev.defined() ? number(lr_dev, &lr_d, op) : nullptr;
  o.weight_decay = weight_decay, o.momentum = momentum, o.dampening = dampening;
  o.nesterov = nesterov, o.maximize = maximize, o.first_step = is_first_step;
  o.grad_scale = number(grad_scale, &gs_d, op);
  o.found_inf = number(found_inf, &fi_d, op);
  AXON_CHECK(axon_optim_sgd(current_stream(params[0].device().index()), &o, static_cast<int64_t>(params.size()),
                            p.data(), g.data(), has_momentum ? b.data() : nullptr));
  return true;
}

void fused_sgd(at::TensorList params, at::TensorList grads, at::TensorList bufs, double weight_decay, double momentum,
               double lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
               const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  if (sgd_native(params, grads, bufs, weight_decay, momentum, lr, nullptr, dampening, nesterov, maximize,
                 is_first_step, grad_scale, found_inf))
    return;
  fall_back<ATEN_OP(_fused_sgd_)>(params, grads, bufs, weight_decay, momentum, lr, dampening, nesterov, maximize,
                                  is_first_step, grad_scale, found_inf);
}

void fused_sgd_tensor_lr(at::TensorList params, at::TensorList grads, at::TensorList bufs, double weight_decay,
                         double momentum, const at::Tensor& lr, double dampening, bool nesterov, bool maximize,
                         bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                         const std::optional<at::Tensor>& found_inf) {
  if (sgd_native(params, grads, bufs, weight_decay, momentum, 0.0, &lr, dampening, nesterov, maximize,
                 is_first_step, grad_scale, found_inf))
    return;
  fall_back<ATEN_OP2(_fused_sgd_, tensor_lr)>(params, grads, bufs, weight_decay, momentum, lr, dampening, nesterov,
                                              maximize, is_first_step, grad_scale, found_inf);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_adam_", TORCH_FN((fused_adam<false, ATEN_OP(_fused_adam_)>)));
  m.impl("_fused_adam_.tensor_lr", TORCH_FN((fused_adam_tensor_lr<false, ATEN_OP2(_fused_adam_, tensor_lr)>)));
  m.impl("_fused_adamw_", TORCH_FN((fused_adam<true, ATEN_OP(_fused_adamw_)>)));
  m.impl("_fused_adamw_.tensor_lr", TORCH_FN((fused_adam_tensor_lr<true, ATEN_OP2(_fused_adamw_, tensor_lr)>)));
  m.impl("_fused_sgd_", TORCH_FN(fused_sgd));
  m.impl("_fused_sgd_.tensor_lr", TORCH_FN(fused_sgd_tensor_lr));
}

}  // namespace
}  // namespace torch_axon
