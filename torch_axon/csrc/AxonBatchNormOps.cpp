// Batch norm and group norm on libaxon's kernels (libaxon/include/axon/batchnorm.h, groupnorm.h).
//
// Every batch norm entry point PyTorch dispatches to (native_batch_norm, the _native_batch_norm_legit family,
// _batch_norm_with_update/_no_update and both backward ops) reduces to one forward and one backward here. Inputs
// are made contiguous (channels-last ones stay channels-last) and viewed as [N, C, S]; the running statistics are updated in place by the kernel, so they
// must already be contiguous (module buffers are). Statistics take PyTorch CPU's dtype: float32 when a half input
// comes with float32 parameters ("mixed type"), else the input's dtype. Other dtypes, empty inputs and strided
// running statistics run through the host fallback.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <axon/batchnorm.h>
#include <axon/groupnorm.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

using Tensor3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using Tensor4 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

bool is_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

bool floats(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    if (t->defined() && !is_float(t->scalar_type())) return false;
  return true;
}

at::Tensor value_or_undefined(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? *t : at::Tensor();
}

// PyTorch CPU's rule for statistics and parameter gradients: float32 for a half input with float32 parameters.
c10::ScalarType param_dtype(const at::Tensor& input, std::initializer_list<const at::Tensor*> params) {
  const bool half = input.scalar_type() == at::kHalf || input.scalar_type() == at::kBFloat16;
  for (const at::Tensor* p : params)
    if (half && p->defined() && p->scalar_type() == at::kFloat) return at::kFloat;
  return input.scalar_type();
}

// A per-channel tensor's descriptor as a flat [C] view (nullopt when undefined); PyTorch's message if it has the
// wrong number of elements.
std::optional<axon_tensor_t> per_channel(const at::Tensor& t, int64_t c, const char* role, const char* op) {
  if (!t.defined()) return std::nullopt;
  TORCH_CHECK(t.numel() == c, role, " should contain ", c, " elements not ", t.numel());
  return describe(t.view({c}), op);
}

// PyTorch CPU's rule for parameter dtypes: the input's, or float32 throughout for a half input.
void check_mixed(const at::Tensor& input, std::initializer_list<const at::Tensor*> params) {
  const bool half = input.scalar_type() == at::kHalf || input.scalar_type() == at::kBFloat16;
  bool same = true, all_float = true;
  for (const at::Tensor* p : params) {
    if (!p->defined()) continue;
    same = same && p->scalar_type() == input.scalar_type();
    all_float = all_float && p->scalar_type() == at::kFloat;
  }
  TORCH_CHECK(same || (half && all_float), "mixed dtype (axon): all inputs must share same datatype.");
}

const axon_tensor_t* ptr(const std::optional<axon_tensor_t>& t) { return t ? &*t : nullptr; }

// The [N, C, S] view of an input of at least 2 dims, contiguous or channels-last (then so is the view).
at::Tensor as_ncs(const at::Tensor& t) {
  int64_t s = 1;
  for (int64_t d = 2; d < t.dim(); ++d) s *= t.size(d);
  return t.view({t.size(0), t.size(1), s});
}

bool usable_running(const at::Tensor& t) { return !t.defined() || t.is_contiguous(); }

// ---- batch norm forward ----

// out, save_mean, save_invstd; nullopt when the case belongs to the host fallback.
std::optional<Tensor3> batch_norm_forward(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                                          const at::Tensor& running_mean, const at::Tensor& running_var,
                                          bool training, double momentum, double eps) {
  if (!floats({&input, &weight, &bias, &running_mean, &running_var}) || input.dim() < 2 || input.numel() == 0 ||
      !usable_running(running_mean) || !usable_running(running_var))
    return std::nullopt;
  if (!training && (!running_mean.defined() || !running_var.defined())) return std::nullopt;
  check_mixed(input, {&weight, &bias, &running_mean, &running_var});
  const char* op = "batch_norm";
  const int64_t c = input.size(1);
  // libaxon takes channels-last images as they are (PyTorch CPU's output layout is the input's).
  const auto fmt = input.suggest_memory_format();
  const at::Tensor x = input.contiguous(fmt), w = weight.defined() ? weight.contiguous() : weight;
  const at::Tensor b = bias.defined() ? bias.contiguous() : bias;
  const auto wd = per_channel(w, c, "weight", op), bd = per_channel(b, c, "bias", op);
  const auto rmd = per_channel(running_mean, c, "running_mean", op);
  const auto rvd = per_channel(running_var, c, "running_var", op);
  at::Tensor out = at::empty(x.sizes(), x.options().memory_format(fmt));
  const auto stat = x.options().dtype(param_dtype(x, {&weight, &bias, &running_mean, &running_var}));
  at::Tensor save_mean = at::empty({training ? c : 0}, stat), save_invstd = at::empty({training ? c : 0}, stat);
  const axon_tensor_t xd = describe(as_ncs(x), op), od = describe(as_ncs(out), op);
  const auto smd = training ? std::optional(describe(save_mean, op)) : std::nullopt;
  const auto sid = training ? std::optional(describe(save_invstd, op)) : std::nullopt;
  AXON_CHECK(axon_kernel_batch_norm(current_stream(input.device().index()), &od, ptr(smd), ptr(sid), ptr(rmd),
                                    ptr(rvd), &xd, ptr(wd), ptr(bd), training ? 1 : 0, momentum, eps));
  return Tensor3{out, save_mean, save_invstd};
}

Tensor3 native_batch_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                          const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
                          const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps) {
  if (auto r = batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias),
                                  value_or_undefined(running_mean), value_or_undefined(running_var), training,
                                  momentum, eps))
    return *r;
  return fall_back<ATEN_OP(native_batch_norm)>(input, weight, bias, running_mean, running_var, training, momentum,
                                               eps);
}

Tensor3 native_batch_norm_legit(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                const std::optional<at::Tensor>& bias, at::Tensor& running_mean,
                                at::Tensor& running_var, bool training, double momentum, double eps) {
  if (auto r = batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias), running_mean,
                                  running_var, training, momentum, eps))
    return *r;
  return fall_back<ATEN_OP(_native_batch_norm_legit)>(input, weight, bias, running_mean, running_var, training,
                                                      momentum, eps);
}

Tensor3 native_batch_norm_legit_no_stats(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                         const std::optional<at::Tensor>& bias, bool training, double momentum,
                                         double eps) {
  if (auto r = batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias), at::Tensor(),
                                  at::Tensor(), training, momentum, eps))
    return *r;
  return fall_back<ATEN_OP2(_native_batch_norm_legit, no_stats)>(input, weight, bias, training, momentum, eps);
}

Tensor3 native_batch_norm_legit_no_training(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                            const std::optional<at::Tensor>& bias, const at::Tensor& running_mean,
                                            const at::Tensor& running_var, double momentum, double eps) {
  if (auto r = batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias), running_mean,
                                  running_var, false, momentum, eps))
    return *r;
  return fall_back<ATEN_OP(_native_batch_norm_legit_no_training)>(input, weight, bias, running_mean, running_var,
                                                                  momentum, eps);
}

// The reserve tensor CPU returns: empty bytes (cuDNN keeps workspace there; nothing here needs it).
at::Tensor reserve_of(const at::Tensor& input) { return at::empty({0}, input.options().dtype(at::kByte)); }

Tensor4 batch_norm_with_update(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                               const std::optional<at::Tensor>& bias, at::Tensor& running_mean,
                               at::Tensor& running_var, double momentum, double eps) {
  if (auto r = batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias), running_mean,
                                  running_var, true, momentum, eps))
    return {std::get<0>(*r), std::get<1>(*r), std::get<2>(*r), reserve_of(input)};
  return fall_back<ATEN_OP(_batch_norm_with_update)>(input, weight, bias, running_mean, running_var, momentum, eps);
}

Tensor4 batch_norm_no_update(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                             const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
                             const std::optional<at::Tensor>& running_var, double momentum, double eps) {
  if (auto r = batch_norm_forward(input, value_or_undefined(weight), value_or_undefined(bias),
                                  value_or_undefined(running_mean), value_or_undefined(running_var), false, momentum,
                                  eps))
    return {std::get<0>(*r), std::get<1>(*r), std::get<2>(*r), reserve_of(input)};
  return fall_back<ATEN_OP(_batch_norm_no_update)>(input, weight, bias, running_mean, running_var, momentum, eps);
}

// ---- batch norm backward ----

std::optional<Tensor3> batch_norm_grad(const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
                                       const at::Tensor& running_mean, const at::Tensor& running_var,
                                       const at::Tensor& save_mean, const at::Tensor& save_invstd, bool train,
                                       double eps, std::array<bool, 3> mask) {
  const at::Tensor& mean = train ? save_mean : running_mean;
  const at::Tensor& inv = train ? save_invstd : running_var;
  if (!floats({&grad_out, &input, &weight, &mean, &inv}) || input.dim() < 2 || input.numel() == 0 ||
      !mean.defined() || !inv.defined())
    return std::nullopt;
  TORCH_CHECK(grad_out.sizes() == input.sizes(), "batch_norm_backward: grad_out shape ", grad_out.sizes(),
              " does not match input shape ", input.sizes());
  const char* op = "batch_norm_backward";
  const int64_t c = input.size(1);
  const auto fmt = input.suggest_memory_format();
  const at::Tensor x = input.contiguous(fmt), g = grad_out.contiguous(fmt);
  const at::Tensor w = weight.defined() ? weight.contiguous() : weight, m = mean.contiguous(), v = inv.contiguous();
  const auto pd = weight.defined() ? weight.scalar_type() : param_dtype(x, {&mean});
  at::Tensor gi = mask[0] ? at::empty(x.sizes(), x.options().memory_format(fmt)) : at::Tensor();
  at::Tensor gw = mask[1] ? at::empty({c}, x.options().dtype(pd)) : at::Tensor();
  at::Tensor gb = mask[2] ? at::empty({c}, x.options().dtype(pd)) : at::Tensor();
  const auto wd = per_channel(w, c, "weight", op), md = per_channel(m, c, train ? "save_mean" : "running_mean", op);
  const auto vd = per_channel(v, c, train ? "save_invstd" : "running_var", op);
  const axon_tensor_t xd = describe(as_ncs(x), op), gd = describe(as_ncs(g), op);
  const auto gid = gi.defined() ? std::optional(describe(as_ncs(gi), op)) : std::nullopt;
  const auto gwd = per_channel(gw, c, "grad_weight", op), gbd = per_channel(gb, c, "grad_bias", op);
  AXON_CHECK(axon_kernel_batch_norm_backward(current_stream(input.device().index()), ptr(gid), ptr(gwd), ptr(gbd),
                                             &gd, &xd, ptr(wd), ptr(md), ptr(vd), train ? 1 : 0, eps));
  return Tensor3{gi, gw, gb};
}

Tensor3 native_batch_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                                   const std::optional<at::Tensor>& weight,
                                   const std::optional<at::Tensor>& running_mean,
                                   const std::optional<at::Tensor>& running_var,
                                   const std::optional<at::Tensor>& save_mean,
                                   const std::optional<at::Tensor>& save_invstd, bool train, double eps,
                                   std::array<bool, 3> mask) {
  if (auto r = batch_norm_grad(grad_out, input, value_or_undefined(weight), value_or_undefined(running_mean),
                               value_or_undefined(running_var), value_or_undefined(save_mean),
                               value_or_undefined(save_invstd), train, eps, mask))
    return *r;
  return fall_back<ATEN_OP(native_batch_norm_backward)>(grad_out, input, weight, running_mean, running_var,
                                                        save_mean, save_invstd, train, eps, mask);
}

Tensor3 batch_norm_backward(const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
                            const std::optional<at::Tensor>& running_mean,
                            const std::optional<at::Tensor>& running_var, const std::optional<at::Tensor>& save_mean,
                            const std::optional<at::Tensor>& save_var, bool update, double eps,
                            std::array<bool, 3> mask, const at::Tensor& reserve) {
  if (auto r = batch_norm_grad(grad_out, input, weight, value_or_undefined(running_mean),
                               value_or_undefined(running_var), value_or_undefined(save_mean),
                               value_or_undefined(save_var), update, eps, mask))
    return *r;
  return fall_back<ATEN_OP(batch_norm_backward)>(grad_out, input, weight, running_mean, running_var, save_mean,
                                                 save_var, update, eps, mask, reserve);
}

// ---- group norm ----

void check_group_norm(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, int64_t n,
                      int64_t c, int64_t hxw, int64_t group) {
  TORCH_CHECK(group > 0 && c % group == 0,
              "Expected number of channels in input to be divisible by num_groups, but got input of shape ",
              input.sizes(), " and num_groups=", group);
  TORCH_CHECK(input.numel() == n * c * hxw, "Expected input to have ", n * c * hxw, " elements (N=", n, ", C=", c,
              ", HxW=", hxw, "), but got input of shape ", input.sizes());
  TORCH_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == c),
              "Expected weight to be a vector of size equal to the number of channels in input, but got weight of "
              "shape ", weight.sizes(), " and input of shape ", input.sizes());
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.numel() == c),
              "Expected bias to be a vector of size equal to the number of channels in input, but got bias of "
              "shape ", bias.sizes(), " and input of shape ", input.sizes());
}

Tensor3 native_group_norm(const at::Tensor& input, const std::optional<at::Tensor>& weight_opt,
                          const std::optional<at::Tensor>& bias_opt, c10::SymInt n_, c10::SymInt c_,
                          c10::SymInt hxw_, int64_t group, double eps) {
  const int64_t n = n_.expect_int(), c = c_.expect_int(), hxw = hxw_.expect_int();
  const at::Tensor weight = value_or_undefined(weight_opt), bias = value_or_undefined(bias_opt);
  check_group_norm(input, weight, bias, n, c, hxw, group);
  if (!floats({&input, &weight, &bias}) || input.numel() == 0)
    return fall_back<ATEN_OP(native_group_norm)>(input, weight_opt, bias_opt, n, c, hxw, group, eps);
  check_mixed(input, {&weight, &bias});
  const char* op = "group_norm";
  const at::Tensor x = input.contiguous().view({n, c, hxw});
  const at::Tensor w = weight.defined() ? weight.contiguous() : weight, b = bias.defined() ? bias.contiguous() : bias;
  at::Tensor out = at::empty(input.sizes(), input.options());
  const auto stat = input.options().dtype(param_dtype(input, {&weight, &bias}));
  at::Tensor mean = at::empty({n, group}, stat), rstd = at::empty({n, group}, stat);
  const axon_tensor_t xd = describe(x, op), od = describe(out.view({n, c, hxw}), op);
  const axon_tensor_t md = describe(mean, op), rd = describe(rstd, op);
  const auto wd = per_channel(w, c, "weight", op), bd = per_channel(b, c, "bias", op);
  AXON_CHECK(axon_kernel_group_norm(current_stream(input.device().index()), &od, &md, &rd, &xd, ptr(wd), ptr(bd),
                                    group, eps));
  return {in_memory_format(out, input.suggest_memory_format()), mean, rstd};
}

Tensor3 native_group_norm_backward(const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean,
                                   const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt,
                                   c10::SymInt n_, c10::SymInt c_, c10::SymInt hxw_, int64_t group,
                                   std::array<bool, 3> mask) {
  const int64_t n = n_.expect_int(), c = c_.expect_int(), hxw = hxw_.expect_int();
  const at::Tensor weight = value_or_undefined(weight_opt);
  check_group_norm(input, weight, at::Tensor(), n, c, hxw, group);
  if (!floats({&grad_out, &input, &mean, &rstd, &weight}) || input.numel() == 0)
    return fall_back<ATEN_OP(native_group_norm_backward)>(grad_out, input, mean, rstd, weight_opt, n, c, hxw, group,
                                                          mask);
  TORCH_CHECK(grad_out.sizes() == input.sizes(), "native_group_norm_backward: grad_out shape ", grad_out.sizes(),
              " does not match input shape ", input.sizes());
  TORCH_CHECK(mean.numel() == n * group && rstd.numel() == n * group, "native_group_norm_backward: expected mean "
              "and rstd of ", n * group, " elements, got ", mean.sizes(), " and ", rstd.sizes());
  const char* op = "group_norm_backward";
  const at::Tensor x = input.contiguous().view({n, c, hxw}), g = grad_out.contiguous().view({n, c, hxw});
  const at::Tensor m = mean.contiguous().view({n * group}), r = rstd.contiguous().view({n * group});
  const at::Tensor w = weight.defined() ? weight.contiguous() : weight;
  const auto pd = weight.defined() ? weight.scalar_type() : param_dtype(input, {&mean});
  at::Tensor gi = mask[0] ? at::empty(input.sizes(), input.options()) : at::Tensor();
  at::Tensor gw = mask[1] ? at::empty({c}, input.options().dtype(pd)) : at::Tensor();
  at::Tensor gb = mask[2] ? at::empty({c}, input.options().dtype(pd)) : at::Tensor();
  const axon_tensor_t xd = describe(x, op), gd = describe(g, op), md = describe(m, op), rd = describe(r, op);
  const auto gid = gi.defined() ? std::optional(describe(gi.view({n, c, hxw}), op)) : std::nullopt;
  const auto wd = per_channel(w, c, "weight", op);
  const auto gwd = per_channel(gw, c, "grad_weight", op), gbd = per_channel(gb, c, "grad_bias", op);
  AXON_CHECK(axon_kernel_group_norm_backward(current_stream(input.device().index()), ptr(gid), ptr(gwd), ptr(gbd),
                                             &gd, &xd, &md, &rd, ptr(wd), group));
  return {in_memory_format(gi, input.suggest_memory_format()), gw, gb};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_batch_norm", TORCH_FN(native_batch_norm));
  m.impl("_native_batch_norm_legit", TORCH_FN(native_batch_norm_legit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(native_batch_norm_legit_no_stats));
  m.impl("_native_batch_norm_legit_no_training", TORCH_FN(native_batch_norm_legit_no_training));
  m.impl("_batch_norm_with_update", TORCH_FN(batch_norm_with_update));
  m.impl("_batch_norm_no_update", TORCH_FN(batch_norm_no_update));
  m.impl("native_batch_norm_backward", TORCH_FN(native_batch_norm_backward));
  m.impl("batch_norm_backward", TORCH_FN(batch_norm_backward));
  m.impl("native_group_norm", TORCH_FN(native_group_norm));
  m.impl("native_group_norm_backward", TORCH_FN(native_group_norm_backward));
}

}  // namespace
}  // namespace torch_axon
