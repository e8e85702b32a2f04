// _embedding_bag (F.embedding_bag, nn.EmbeddingBag), its forward-only form, the weight's dense gradient and the
// per-sample weights' gradient on libaxon's embedding bag kernels (libaxon/include/axon/embedding_bag.h).
//
// The forward always returns offset2bag, bag_size (the non-padding indices per bag) and, in max mode, max_indices
// (-1 for an empty bag; the other modes return a copy of bag_size there, as PyTorch CPU does): the backward kernels
// read them. Half-type gradients of the weight accumulate in a float32 temporary. Layouts and dtypes the kernels do
// not take (2-d indices at this level, per-sample weights of another dtype, sparse gradients) go to the host
// fallback.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <axon/embedding_bag.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

using Quad = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

bool is_float(const at::Tensor& t) {
  const auto s = t.scalar_type();
  return s == at::kFloat || s == at::kDouble || s == at::kHalf || s == at::kBFloat16;
}

bool is_index(const at::Tensor& t) { return t.scalar_type() == at::kLong || t.scalar_type() == at::kInt; }

bool is_half(const at::Tensor& t) { return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16; }

axon_embedding_bag_params_t params(int64_t mode, bool include_last_offset, int64_t padding_idx) {
  TORCH_CHECK(mode >= 0 && mode < AXON_BAG_MODE_COUNT, "embedding_bag: unknown mode ", mode);
  axon_embedding_bag_params_t p{};
  p.mode = static_cast<axon_bag_mode_t>(mode);
  p.include_last_offset = include_last_offset;
  p.padding_idx = padding_idx;
  return p;
}

std::optional<axon_tensor_t> maybe(const at::Tensor& t, const char* op) {
  return t.defined() ? std::optional(describe(t, op)) : std::nullopt;
}

Quad forward(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets, int64_t mode,
             const at::Tensor& psw, bool include_last_offset, int64_t padding_idx) {
  const axon_embedding_bag_params_t p = params(mode, include_last_offset, padding_idx);
  TORCH_CHECK(mode == AXON_BAG_SUM || !psw.defined(), "embedding_bag: per_sample_weights was not None. ",
              "per_sample_weights is only supported for mode='sum' (got mode='", mode == 1 ? "mean" : "max", "')");
  TORCH_CHECK(!psw.defined() || psw.sizes() == indices.sizes(), "embedding_bag: expected per_sample_weights to be ",
              "1D with the same number of elements as indices, got ", psw.sizes(), " and ", indices.sizes());
  const int64_t bags = offsets.size(0) - (include_last_offset ? 1 : 0);
  TORCH_CHECK(bags >= 0, "embedding_bag: include_last_offset needs at least one offset");
  const at::Tensor w = weight.contiguous(), idx = indices.contiguous(), off = offsets.contiguous();
  const at::Tensor ps = psw.defined() ? psw.contiguous() : psw;
  const auto longs = indices.options().dtype(at::kLong);
  at::Tensor out = at::empty({bags, weight.size(1)}, weight.options());
  at::Tensor offset2bag = at::empty({indices.size(0)}, longs);
  at::Tensor bag_size = at::empty({bags}, longs);
  at::Tensor max_indices = mode == AXON_BAG_MAX ? at::empty({bags, weight.size(1)}, longs) : at::Tensor();
  const char* op = "embedding_bag";
  const axon_tensor_t od = describe(out, op), o2d = describe(offset2bag, op), bsd = describe(bag_size, op);
  const axon_tensor_t wd = describe(w, op), id = describe(idx, op), ofd = describe(off, op);
  const auto mid = maybe(max_indices, op), psd = maybe(ps, op);
  AXON_CHECK(axon_kernel_embedding_bag(current_stream(weight.device().index()), &od, &o2d, &bsd, mid ? &*mid : nullptr,
                                       &wd, &id, &ofd, psd ? &*psd : nullptr, &p));
  if (mode != AXON_BAG_MAX) max_indices = bag_size.clone();
  return {out, offset2bag, bag_size, max_indices};
}

bool native_forward(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
                    const at::Tensor& psw) {
  return weight.dim() == 2 && is_float(weight) && indices.dim() == 1 && offsets.dim() == 1 && is_index(indices) &&
         is_index(offsets) && (!psw.defined() || (psw.scalar_type() == weight.scalar_type() && psw.dim() == 1));
}

template <class Op>
Quad embedding_bag(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
                   bool scale_grad_by_freq, int64_t mode, bool sparse, const std::optional<at::Tensor>& psw_opt,
                   bool include_last_offset, int64_t padding_idx) {
  const at::Tensor psw = psw_opt.has_value() ? *psw_opt : at::Tensor();
  if (!native_forward(weight, indices, offsets, psw))
    return fall_back<Op>(weight, indices, offsets, scale_grad_by_freq, mode, sparse, psw_opt, include_last_offset,
                         padding_idx);
  return forward(weight, indices, offsets, mode, psw, include_last_offset, padding_idx);
}

at::Tensor dense_backward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offset2bag,
                          const at::Tensor& bag_size, const at::Tensor& max_indices, c10::SymInt num_weights_sym,
                          bool scale_grad_by_freq, int64_t mode, const std::optional<at::Tensor>& psw_opt,
                          int64_t padding_idx) {
  const int64_t num_weights = num_weights_sym.expect_int();
  const at::Tensor psw = psw_opt.has_value() ? *psw_opt : at::Tensor();
  const bool native = grad.dim() == 2 && is_float(grad) && indices.dim() == 1 && is_index(indices) &&
                      (mode == AXON_BAG_MAX ? max_indices.scalar_type() == at::kLong && max_indices.dim() == 2
                                            : is_index(offset2bag) && offset2bag.numel() == indices.numel() &&
                                                  bag_size.scalar_type() == at::kLong) &&
                      (!psw.defined() || psw.scalar_type() == grad.scalar_type());
  if (!native)
    return fall_back_symint<ATEN_OP(_embedding_bag_dense_backward)>(grad, indices, offset2bag, bag_size, max_indices,
                                                                    num_weights_sym, scale_grad_by_freq, mode,
                                                                    psw_opt, padding_idx);
  const axon_embedding_bag_params_t p = params(mode, false, padding_idx);
  const at::Tensor g = grad.contiguous(), idx = indices.contiguous();
  const at::Tensor o2b = offset2bag.contiguous(), bs = bag_size.contiguous(), mi = max_indices.contiguous();
  const at::Tensor ps = psw.defined() ? psw.contiguous() : psw;
  const bool half = is_half(grad);
  at::Tensor gw = at::empty({num_weights, grad.size(1)}, grad.options().dtype(half ? at::kFloat : grad.scalar_type()));
  const bool by_freq = scale_grad_by_freq && mode != AXON_BAG_MAX;
  at::Tensor counts = by_freq ? at::empty({num_weights}, idx.options().dtype(at::kLong)) : at::Tensor();
  const char* op = "embedding_bag_backward";
  const axon_tensor_t gwd = describe(gw, op), gd = describe(g, op), id = describe(idx, op);
  const bool max = mode == AXON_BAG_MAX;
  const auto o2d = max ? std::nullopt : maybe(o2b, op), bsd = max ? std::nullopt : maybe(bs, op);
  const auto mid = max ? maybe(mi, op) : std::nullopt, psd = maybe(ps, op), cd = maybe(counts, op);
  AXON_CHECK(axon_kernel_embedding_bag_backward(current_stream(grad.device().index()), &gwd, &gd, &id,
                                                o2d ? &*o2d : nullptr, bsd ? &*bsd : nullptr, mid ? &*mid : nullptr,
                                                psd ? &*psd : nullptr, cd ? &*cd : nullptr, &p));
  return half ? gw.to(grad.scalar_type()) : gw;
}

at::Tensor per_sample_weights_backward(const at::Tensor& grad, const at::Tensor& weight, const at::Tensor& indices,
                                       const at::Tensor& offsets, const at::Tensor& offset2bag, int64_t mode,
                                       int64_t padding_idx) {
  TORCH_CHECK(mode == AXON_BAG_SUM, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  const bool native = grad.dim() == 2 && is_float(grad) && weight.dim() == 2 && is_float(weight) &&
                      indices.dim() == 1 && is_index(indices) && is_index(offset2bag) &&
                      offset2bag.numel() == indices.numel();
  if (!native)
    return fall_back<ATEN_OP(_embedding_bag_per_sample_weights_backward)>(grad, weight, indices, offsets, offset2bag,
                                                                          mode, padding_idx);
  const axon_embedding_bag_params_t p = params(mode, false, padding_idx);
  const at::Tensor g = grad.contiguous(), w = weight.contiguous(), idx = indices.contiguous();
  const at::Tensor o2b = offset2bag.contiguous();
  at::Tensor out = at::empty({indices.size(0)}, grad.options());
  const char* op = "embedding_bag_per_sample_weights_backward";
  const axon_tensor_t od = describe(out, op), gd = describe(g, op), wd = describe(w, op), id = describe(idx, op);
  const axon_tensor_t o2d = describe(o2b, op);
  AXON_CHECK(axon_kernel_embedding_bag_psw_backward(current_stream(grad.device().index()), &od, &gd, &wd, &id, &o2d,
                                                    &p));
  return out;
}

// What autograd calls: the dense gradient for dense weights. A sparse gradient, or an offset2bag left empty (the
// forward here always fills it), goes to the host fallback.
at::Tensor embedding_bag_backward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offsets,
                                  const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                  const at::Tensor& max_indices, c10::SymInt num_weights, bool scale_grad_by_freq,
                                  int64_t mode, bool sparse, const std::optional<at::Tensor>& psw,
                                  int64_t padding_idx) {
  if (sparse || (mode != AXON_BAG_MAX && offset2bag.numel() != indices.numel()))
    return fall_back_symint<ATEN_OP(_embedding_bag_backward)>(grad, indices, offsets, offset2bag, bag_size,
                                                              max_indices, num_weights, scale_grad_by_freq, mode,
                                                              sparse, psw, padding_idx);
  return dense_backward(grad, indices, offset2bag, bag_size, max_indices, num_weights, scale_grad_by_freq, mode, psw,
                        padding_idx);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag_backward", TORCH_FN(embedding_bag_backward));
  m.impl("_embedding_bag", TORCH_FN(embedding_bag<ATEN_OP(_embedding_bag)>));
  m.impl("_embedding_bag_forward_only", TORCH_FN(embedding_bag<ATEN_OP(_embedding_bag_forward_only)>));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward", TORCH_FN(per_sample_weights_backward));
}

}  // namespace
}  // namespace torch_axon
