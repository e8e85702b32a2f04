// F.scaled_dot_product_attention on libaxon's fused attention kernel (libaxon/include/axon/attention.h).
//
// PyTorch's composite scaled_dot_product_attention asks _fused_sdp_choice_stub (keyed on the query's device type)
// which backend to run. For axon we answer "overrideable" when the kernel takes the call, and PyTorch then calls
// _scaled_dot_product_fused_attention_overrideable, whose autograd formula calls the matching _backward. Otherwise
// we answer "math", and PyTorch decomposes the call into matmul/softmax ops (which still run on axon): inputs that
// are not 4-d, nested, of a non-float dtype, k/v heads that do not divide q's (or differ without enable_gqa), a mask
// that needs a gradient, empty sizes, or a user who turned the overrideable backend off (sdpa_kernel).
//
// PyTorch has already turned a bool mask into a float one (0 / -inf) before it calls the fused op. The Philox seed
// and offset of the dropout decisions go back as CPU int64 scalars (philox_seed, philox_offset); the backward
// regenerates the decisions from them. The mask gets no gradient (the choice keeps such calls on the math path).
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <axon/attention.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <tuple>

#include "AxonException.h"
#include "AxonFunctions.h"
#include "AxonGenerator.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool is_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// Whether mask (dims right-aligned) broadcasts to [B, H, L, S].
bool broadcasts(const at::Tensor& mask, const std::array<c10::SymInt, 4>& full) {
  if (mask.dim() > 4) return false;
  for (int64_t i = 0; i < mask.dim(); ++i) {
    const c10::SymInt s = mask.sym_size(mask.dim() - 1 - i);
    if (s != 1 && s != full[3 - i]) return false;
  }
  return true;
}

// True when libaxon's attention kernel takes this call as it stands. Sizes are read as SymInts: Dynamo's fake tensors
// ask this too, and a plain size() would specialize a dynamic batch or sequence length to the traced value (one
// recompile per new size under torch.compile(dynamic=True)); comparisons of SymInts guard on relations instead.
bool kernel_takes(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& mask,
                  double dropout_p, bool is_causal, bool enable_gqa) {
  if (q.is_nested() || k.is_nested() || v.is_nested()) return false;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return false;
  if (!is_float(q.scalar_type()) || k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type())
    return false;
  if (k.device() != q.device() || v.device() != q.device()) return false;
  const c10::SymInt B = q.sym_size(0), Hq = q.sym_size(1), L = q.sym_size(2), E = q.sym_size(3);
  const c10::SymInt Hkv = k.sym_size(1), S = k.sym_size(2);
  if (k.sym_size(0) != B || v.sym_size(0) != B || v.sym_size(1) != Hkv || v.sym_size(2) != S || k.sym_size(3) != E)
    return false;
  if (q.sym_numel() == 0 || k.sym_numel() == 0 || v.sym_numel() == 0) return false;
  if (Hq != Hkv && !(enable_gqa && Hq % Hkv == 0)) return false;
  if (!(dropout_p >= 0 && dropout_p <= 1)) return false;
  if (mask.has_value() && mask->defined()) {
    const at::Tensor& m = *mask;
    if (is_causal) return false;  // PyTorch refuses the pair; the math path says so
    if (m.device() != q.device() || !(m.scalar_type() == at::kBool || is_float(m.scalar_type()))) return false;
    if (m.requires_grad() && c10::GradMode::is_enabled()) return false;
    if (!broadcasts(m, {B, Hq, L, S})) return false;
  }
  return true;
}

int64_t fused_sdp_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal,
                         std::optional<double> /*scale*/, bool enable_gqa) {
  const auto& ctx = at::globalContext();
  if (ctx.userEnabledOverrideableSDP() && kernel_takes(q, k, v, mask, dropout_p, is_causal, enable_gqa))
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  TORCH_CHECK(ctx.userEnabledMathSDP(), "scaled_dot_product_attention on axon: no enabled backend takes this call ",
              "(the fused axon kernel is either disabled or cannot take it, and the math backend is disabled)");
  return static_cast<int64_t>(at::SDPBackend::math);
}

// An uninitialized tensor of `sizes` whose dimensions lie in memory in the order of like's strides (largest first,
// ties in logical order), as PyTorch's CPU kernels lay out sdpa's output and gradients: q, k and v that are heads
// split off a [B, L, H*E] projection by view + transpose give an output whose transpose back is a free view.
at::Tensor empty_in_layout_of(const at::Tensor& like, at::IntArrayRef sizes) {
  std::array<int64_t, 4> order{0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return like.stride(x) > like.stride(y); });
  std::array<int64_t, 4> strides{};
  int64_t step = 1;
  for (int64_t i = 3; i >= 0; --i) {
    strides[order[i]] = step;
    step *= std::max<int64_t>(sizes[order[i]], 1);
  }
  return at::empty_strided(sizes, strides, like.options());
}

double softmax_scale(const at::Tensor& q, std::optional<double> scale) {
  return scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
}

axon_attention_params_t params(const at::Tensor& q, double dropout_p, bool is_causal, std::optional<double> scale,
                               uint64_t seed, uint64_t offset) {
  axon_attention_params_t p{};
  p.scale = softmax_scale(q, scale);
  p.is_causal = is_causal ? 1 : 0;
  p.dropout_p = dropout_p;
  p.seed = seed;
  p.offset = offset;
  return p;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor,
           at::Tensor>
fused_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                const std::optional<at::Tensor>& attn_bias, double dropout_p, bool is_causal,
                bool return_debug_mask, std::optional<double> scale) {
  const char* op = "scaled_dot_product_attention";
  TORCH_CHECK(!return_debug_mask, op, ": axon's fused kernel does not return the attention weights (debug mask)");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op, ": expected 4-d query, key and value, got ",
              q.sizes(), ", ", k.sizes(), ", ", v.sizes());
  const int64_t B = q.size(0), Hq = q.size(1), L = q.size(2), S = k.size(2), Ev = v.size(3);
  at::Tensor out = empty_in_layout_of(q, {B, Hq, L, Ev});
  at::Tensor lse = at::empty({B, Hq, L}, q.options().dtype(q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat));
  uint64_t seed = 0, offset = 0;
  if (dropout_p > 0) {
    const PhiloxDraw draw = claim_philox(std::nullopt, q.device().index(), axon_attention_philox_blocks(B, Hq, L, S));
    seed = draw.seed;
    offset = draw.offset;
  }
  const at::Tensor mask = attn_bias.has_value() ? *attn_bias : at::Tensor();
  const axon_tensor_t qd = describe(q, op), kd = describe(k, op), vd = describe(v, op);
  const axon_tensor_t od = describe(out, op), ld = describe(lse, op);
  const std::optional<axon_tensor_t> md = mask.defined() ? std::optional(describe(mask, op)) : std::nullopt;
  const axon_attention_params_t p = params(q, dropout_p, is_causal, scale, seed, offset);
  AXON_CHECK(axon_kernel_attention(current_stream(q.device().index()), &od, &ld, &qd, &kd, &vd, md ? &*md : nullptr,
                                   &p));
  const auto cpu64 = at::TensorOptions().dtype(at::kLong);
  return {out,
          lse,
          at::Tensor(),
          at::Tensor(),
          c10::SymInt(L),
          c10::SymInt(S),
          at::scalar_tensor(static_cast<int64_t>(seed), cpu64),
          at::scalar_tensor(static_cast<int64_t>(offset), cpu64),
          at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor& /*cum_seq_q*/, const at::Tensor& /*cum_seq_k*/,
    c10::SymInt /*max_q*/, c10::SymInt /*max_k*/, double dropout_p, bool is_causal, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset, std::optional<double> scale) {
  const char* op = "scaled_dot_product_attention_backward";
  if (!grad_out.defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  at::Tensor dq = grad_input_mask[0] ? empty_in_layout_of(q, q.sizes()) : at::Tensor();
  const bool kv = grad_input_mask[1] || grad_input_mask[2];
  at::Tensor dk = kv ? empty_in_layout_of(k, k.sizes()) : at::Tensor();
  at::Tensor dv = kv ? empty_in_layout_of(v, v.sizes()) : at::Tensor();
  if (!dq.defined() && !kv) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  const uint64_t seed = dropout_p > 0 ? static_cast<uint64_t>(philox_seed.item<int64_t>()) : 0;
  const uint64_t offset = dropout_p > 0 ? static_cast<uint64_t>(philox_offset.item<int64_t>()) : 0;
  const axon_tensor_t qd = describe(q, op), kd = describe(k, op), vd = describe(v, op), gd = describe(grad_out, op);
  const axon_tensor_t od = describe(out, op), ld = describe(logsumexp, op);
  const std::optional<axon_tensor_t> md =
      attn_bias.defined() ? std::optional(describe(attn_bias, op)) : std::nullopt;
  const std::optional<axon_tensor_t> dqd = dq.defined() ? std::optional(describe(dq, op)) : std::nullopt;
  const std::optional<axon_tensor_t> dkd = kv ? std::optional(describe(dk, op)) : std::nullopt;
  const std::optional<axon_tensor_t> dvd = kv ? std::optional(describe(dv, op)) : std::nullopt;
  const axon_attention_params_t p = params(q, dropout_p, is_causal, scale, seed, offset);
  AXON_CHECK(axon_kernel_attention_backward(current_stream(q.device().index()), dqd ? &*dqd : nullptr,
                                            dkd ? &*dkd : nullptr, dvd ? &*dvd : nullptr, &gd, &qd, &kd, &vd,
                                            md ? &*md : nullptr, &od, &ld, &p));
  return {dq, grad_input_mask[1] ? dk : at::Tensor(), grad_input_mask[2] ? dv : at::Tensor(), at::Tensor()};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fused_attention));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(fused_attention_backward));
}

}  // namespace
}  // namespace torch_axon

namespace at::native {
// The composite scaled_dot_product_attention consults the stub directly, not the dispatched op above.
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_axon::fused_sdp_choice);
}  // namespace at::native
