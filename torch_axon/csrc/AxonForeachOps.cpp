// The _foreach_* ops on libaxon's multi-tensor kernels (libaxon/include/axon/foreach.h): one command per list (per
// chunk of a long list) instead of one per tensor.
//
// The fast route, as CUDA's: every tensor on one axon device, one float dtype (float32, float64, float16, bfloat16)
// across the lists, and tensor i of every list with self[i]'s sizes and strides, non-overlapping and dense. Each
// tensor is then described as its flat memory, which is what libaxon's lists take. Anything else (mixed devices or
// dtypes, integer lists, views with gaps, complex scalars) takes PyTorch's own slow path, the per-tensor loop
// (at::native::foreach_tensor_*_slow), whose per-tensor ops run on axon's pointwise kernels. API errors (empty lists,
// lists of different lengths) are PyTorch's, raised by check_foreach_api_restrictions before either route.
// A 0-dim operand on the same axon device (the .Tensor overloads, clip_grad_norm_'s coefficient) is read by the
// kernel when it runs, so no host synchronization.
#include <ATen/ATen.h>
#include <ATen/native/ForeachUtils.h>
#include <axon/foreach.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <initializer_list>
#include <vector>

#include "AxonException.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

using Vec = std::vector<at::Tensor>;
namespace nat = at::native;

bool is_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// Whether lists (lists[0] is self) can take the fast route. `same_dtype`: one dtype across all lists (else per list).
bool fast(std::initializer_list<at::TensorList> lists, bool same_dtype = true) {
  const at::TensorList self = *lists.begin();
  if (self.empty() || !self[0].defined()) return false;
  const at::Device dev = self[0].device();
  if (dev.type() != kAxon) return false;
  for (const at::TensorList l : lists) {
    if (l.size() != self.size() || l.empty()) return false;
    const c10::ScalarType dt = same_dtype ? self[0].scalar_type() : l[0].scalar_type();
    for (size_t i = 0; i < l.size(); ++i) {
      const at::Tensor& t = l[i];
      if (!t.defined() || t.device() != dev || t.scalar_type() != dt || !is_float(dt) || t.is_conj() || t.is_neg())
        return false;
      if (t.layout() != at::kStrided || !t.sizes().equals(self[i].sizes()) || !t.strides().equals(self[i].strides()) ||
          !t.is_non_overlapping_and_dense())
        return false;
    }
  }
  return true;
}

// Fresh outputs shaped (and strided) like self, for the functional forms.
Vec outputs_like(at::TensorList self) {
  Vec out;
  out.reserve(self.size());
  for (const at::Tensor& t : self) out.push_back(at::empty_like(t));
  return out;
}

axon_stream_t stream_of(at::TensorList self) { return current_stream(self[0].device().index()); }

axon_foreach_arg_t no_arg() {
  axon_foreach_arg_t a{};
  return a;
}

axon_foreach_arg_t value_arg(double v) {
  axon_foreach_arg_t a{};
  a.value = v;
  return a;
}

bool real(const at::Scalar& s) { return !s.isComplex(); }

bool reals(at::ArrayRef<at::Scalar> ss) {
  for (const at::Scalar& s : ss)
    if (s.isComplex()) return false;
  return true;
}

std::vector<double> doubles(at::ArrayRef<at::Scalar> ss, double sign = 1.0) {
  std::vector<double> v;
  v.reserve(ss.size());
  for (const at::Scalar& s : ss) v.push_back(sign * s.toDouble());
  return v;
}

void binary(axon_foreach_op_t op, at::TensorList out, at::TensorList self, const at::TensorList* other,
            axon_foreach_arg_t arg, double alpha) {
  const char* name = axon_foreach_op_name(op);
  auto od = describe_flat_list(out, name), sd = describe_flat_list(self, name);
  std::vector<axon_tensor_t> bd;
  if (other) {
    bd = describe_flat_list(*other, name);
    arg.tensors = bd.data();
  }
  AXON_CHECK(axon_foreach_binary(stream_of(self), op, static_cast<int64_t>(self.size()), od.data(), sd.data(), &arg,
                                 alpha));
}

// ---- binary ops: .Scalar, .List, .ScalarList, .Tensor, in place and functional ----
// SIGN is -1 for sub, which is add of the negated operand (exact in IEEE arithmetic).

template <axon_foreach_op_t OP, int SIGN, auto SLOW>
void scalar_(at::TensorList self, const at::Scalar& s) {
  nat::check_foreach_api_restrictions(self);
  if (!fast({self}) || !real(s)) return SLOW(self, s);
  binary(OP, self, self, nullptr, value_arg(SIGN * s.toDouble()), 1.0);
}

template <axon_foreach_op_t OP, int SIGN, auto SLOW>
Vec scalar(at::TensorList self, const at::Scalar& s) {
  nat::check_foreach_api_restrictions(self);
  if (!fast({self}) || !real(s)) return SLOW(self, s);
  Vec out = outputs_like(self);
  binary(OP, out, self, nullptr, value_arg(SIGN * s.toDouble()), 1.0);
  return out;
}

template <axon_foreach_op_t OP, int SIGN, auto SLOW>
void scalarlist_(at::TensorList self, at::ArrayRef<at::Scalar> ss) {
  nat::check_foreach_api_restrictions(self, ss);
  if (!fast({self}) || !reals(ss)) return SLOW(self, ss);
  const std::vector<double> v = doubles(ss, SIGN);
  axon_foreach_arg_t a = no_arg();
  a.values = v.data();
  binary(OP, self, self, nullptr, a, 1.0);
}

template <axon_foreach_op_t OP, int SIGN, auto SLOW>
Vec scalarlist(at::TensorList self, at::ArrayRef<at::Scalar> ss) {
  nat::check_foreach_api_restrictions(self, ss);
  if (!fast({self}) || !reals(ss)) return SLOW(self, ss);
  const std::vector<double> v = doubles(ss, SIGN);
  axon_foreach_arg_t a = no_arg();
  a.values = v.data();
  Vec out = outputs_like(self);
  binary(OP, out, self, nullptr, a, 1.0);
  return out;
}

template <axon_foreach_op_t OP, int SIGN, auto SLOW>
void list_alpha_(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
  nat::check_foreach_api_restrictions(self, other);
  if (!fast({self, other}) || !real(alpha)) return SLOW(self, other, alpha);
  binary(OP, self, self, &other, no_arg(), SIGN * alpha.toDouble());
}

template <axon_foreach_op_t OP, int SIGN, auto SLOW>
Vec list_alpha(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
  nat::check_foreach_api_restrictions(self, other);
  if (!fast({self, other}) || !real(alpha)) return SLOW(self, other, alpha);
  Vec out = outputs_like(self);
  binary(OP, out, self, &other, no_arg(), SIGN * alpha.toDouble());
  return out;
}

template <axon_foreach_op_t OP, auto SLOW>
void list_(at::TensorList self, at::TensorList other) {
  nat::check_foreach_api_restrictions(self, other);
  if (!fast({self, other})) return SLOW(self, other);
  binary(OP, self, self, &other, no_arg(), 1.0);
}

template <axon_foreach_op_t OP, auto SLOW>
Vec list(at::TensorList self, at::TensorList other) {
  nat::check_foreach_api_restrictions(self, other);
  if (!fast({self, other})) return SLOW(self, other);
  Vec out = outputs_like(self);
  binary(OP, out, self, &other, no_arg(), 1.0);
  return out;
}

// A 0-dim operand: read on the device when it is on self's axon device, else its value now (a CPU tensor).
// Returns false when the fast route cannot take it.
// `functional`: the result dtype must be self's, which type promotion gives only for another of self's dtype.
bool number_arg(at::TensorList self, const at::Tensor& other, axon_foreach_arg_t* a, axon_tensor_t* storage,
                bool functional) {
  if (!other.defined() || other.dim() != 0 || other.is_complex() || !fast({self})) return false;
  if (functional && other.scalar_type() != self[0].scalar_type()) return false;
  *a = no_arg();
  if (other.device() == self[0].device()) {
    if (!is_float(other.scalar_type())) return false;
    *storage = describe(other, "_foreach number operand");
    a->number = storage;
    return true;
  }
  if (!other.is_cpu()) return false;
  a->value = other.item<double>();
  return true;
}

template <axon_foreach_op_t OP, auto SLOW>
void tensor_alpha_(at::TensorList self, const at::Tensor& other, const at::Scalar& alpha) {
  nat::check_foreach_api_restrictions(self);
  axon_foreach_arg_t a;
  axon_tensor_t d;
  if (!real(alpha) || !number_arg(self, other, &a, &d, false)) return SLOW(self, other, alpha);
  binary(OP, self, self, nullptr, a, alpha.toDouble());
}

template <axon_foreach_op_t OP, auto SLOW>
Vec tensor_alpha(at::TensorList self, const at::Tensor& other, const at::Scalar& alpha) {
  nat::check_foreach_api_restrictions(self);
  axon_foreach_arg_t a;
  axon_tensor_t d;
  if (!real(alpha) || !number_arg(self, other, &a, &d, true)) return SLOW(self, other, alpha);
  Vec out = outputs_like(self);
  binary(OP, out, self, nullptr, a, alpha.toDouble());
  return out;
}

template <axon_foreach_op_t OP, auto SLOW>
void tensor_(at::TensorList self, const at::Tensor& other) {
  nat::check_foreach_api_restrictions(self);
  axon_foreach_arg_t a;
  axon_tensor_t d;
  if (!number_arg(self, other, &a, &d, false)) return SLOW(self, other);
  binary(OP, self, self, nullptr, a, 1.0);
}

template <axon_foreach_op_t OP, auto SLOW>
Vec tensor(at::TensorList self, const at::Tensor& other) {
  nat::check_foreach_api_restrictions(self);
  axon_foreach_arg_t a;
  axon_tensor_t d;
  if (!number_arg(self, other, &a, &d, true)) return SLOW(self, other);
  Vec out = outputs_like(self);
  binary(OP, out, self, nullptr, a, 1.0);
  return out;
}

// ---- unary ops ----

void unary(axon_foreach_op_t op, at::TensorList out, at::TensorList self) {
  const char* name = axon_foreach_op_name(op);
  auto od = describe_flat_list(out, name), sd = describe_flat_list(self, name);
  AXON_CHECK(axon_foreach_unary(stream_of(self), op, static_cast<int64_t>(self.size()), od.data(), sd.data()));
}

template <axon_foreach_op_t OP, auto SLOW>
void unary_(at::TensorList self) {
  nat::check_foreach_api_restrictions(self);
  if (!fast({self})) return SLOW(self);
  unary(OP, self, self);
}

template <axon_foreach_op_t OP, auto SLOW>
Vec unary_fn(at::TensorList self) {
  nat::check_foreach_api_restrictions(self);
  if (!fast({self})) return SLOW(self);
  Vec out = outputs_like(self);
  unary(OP, out, self);
  return out;
}

void zero_(at::TensorList self) {
  nat::check_foreach_api_restrictions(self);
  if (!fast({self})) return nat::foreach_tensor_zero_slow_(self);
  auto od = describe_flat_list(self, "_foreach_zero_");
  AXON_CHECK(axon_foreach_fill(stream_of(self), static_cast<int64_t>(self.size()), od.data(), 0.0));
}

// copy_ converts dtypes, so each list only needs one dtype of its own.
void copy_(at::TensorList self, at::TensorList src, bool non_blocking) {
  nat::check_foreach_api_restrictions(self, src);
  if (!fast({self, src}, /*same_dtype=*/false)) return nat::foreach_tensor_copy_list_kernel_slow_(self, src, non_blocking);
  unary(AXON_FOREACH_COPY, self, src);
}

// ---- ternary ops: addcmul, addcdiv (.Scalar, .ScalarList, .Tensor) and lerp (.List, .Scalar, .ScalarList) ----

void ternary(axon_foreach_op_t op, at::TensorList out, at::TensorList self, at::TensorList t1,
             const at::TensorList* t2, const at::TensorList* weights, axon_foreach_arg_t w) {
  const char* name = axon_foreach_op_name(op);
  auto od = describe_flat_list(out, name), sd = describe_flat_list(self, name), d1 = describe_flat_list(t1, name);
  std::vector<axon_tensor_t> d2, dw;
  if (t2) d2 = describe_flat_list(*t2, name);
  if (weights) {
    dw = describe_flat_list(*weights, name);
    w.tensors = dw.data();
  }
  AXON_CHECK(axon_foreach_ternary(stream_of(self), op, static_cast<int64_t>(self.size()), od.data(), sd.data(),
                                  d1.data(), t2 ? d2.data() : nullptr, &w));
}

template <axon_foreach_op_t OP, auto SLOW>
void addc_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value) {
  nat::check_foreach_api_restrictions(self, t1, t2);
  if (!fast({self, t1, t2}) || !real(value)) return SLOW(self, t1, t2, value);
  ternary(OP, self, self, t1, &t2, nullptr, value_arg(value.toDouble()));
}

template <axon_foreach_op_t OP, auto SLOW>
Vec addc_scalar(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value) {
  nat::check_foreach_api_restrictions(self, t1, t2);
  if (!fast({self, t1, t2}) || !real(value)) return SLOW(self, t1, t2, value);
  Vec out = outputs_like(self);
  ternary(OP, out, self, t1, &t2, nullptr, value_arg(value.toDouble()));
  return out;
}

void addc_values(axon_foreach_op_t op, at::TensorList out, at::TensorList self, at::TensorList t1,
                 at::TensorList t2, at::ArrayRef<at::Scalar> ss) {
  const std::vector<double> v = doubles(ss);
  axon_foreach_arg_t w = no_arg();
  w.values = v.data();
  ternary(op, out, self, t1, &t2, nullptr, w);
}

template <axon_foreach_op_t OP, auto SLOW>
void addc_scalarlist_(at::TensorList self, at::TensorList t1, at::TensorList t2, at::ArrayRef<at::Scalar> ss) {
  nat::check_foreach_api_restrictions(self, t1, t2, ss);
  if (!fast({self, t1, t2}) || !reals(ss)) return SLOW(self, t1, t2, ss);
  addc_values(OP, self, self, t1, t2, ss);
}

template <axon_foreach_op_t OP, auto SLOW>
Vec addc_scalarlist(at::TensorList self, at::TensorList t1, at::TensorList t2, at::ArrayRef<at::Scalar> ss) {
  nat::check_foreach_api_restrictions(self, t1, t2, ss);
  if (!fast({self, t1, t2}) || !reals(ss)) return SLOW(self, t1, t2, ss);
  Vec out = outputs_like(self);
  addc_values(OP, out, self, t1, t2, ss);
  return out;
}

// The .Tensor overloads pack the scalars in a 1-D CPU tensor; PyTorch's converter checks it (device, length).
template <axon_foreach_op_t OP, auto SLOW>
void addc_tensor_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Tensor& scalars) {
  nat::check_foreach_api_restrictions(self, t1, t2);
  if (!fast({self, t1, t2}) || scalars.is_complex()) return SLOW(self, t1, t2, scalars);
  addc_values(OP, self, self, t1, t2, nat::convert_tensor_to_scalar_list(scalars, self.size()));
}

template <axon_foreach_op_t OP, auto SLOW>
Vec addc_tensor(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Tensor& scalars) {
  nat::check_foreach_api_restrictions(self, t1, t2);
  if (!fast({self, t1, t2}) || scalars.is_complex()) return SLOW(self, t1, t2, scalars);
  const std::vector<at::Scalar> ss = nat::convert_tensor_to_scalar_list(scalars, self.size());
  Vec out = outputs_like(self);
  addc_values(OP, out, self, t1, t2, ss);
  return out;
}

void lerp_list_(at::TensorList self, at::TensorList ends, at::TensorList weights) {
  nat::check_foreach_api_restrictions(self, ends, weights);
  if (!fast({self, ends, weights})) return nat::foreach_tensor_ternary_lerp_slow_(self, ends, weights);
  ternary(AXON_FOREACH_LERP, self, self, ends, nullptr, &weights, no_arg());
}

Vec lerp_list(at::TensorList self, at::TensorList ends, at::TensorList weights) {
  nat::check_foreach_api_restrictions(self, ends, weights);
  if (!fast({self, ends, weights})) return nat::foreach_tensor_ternary_lerp_slow(self, ends, weights);
  Vec out = outputs_like(self);
  ternary(AXON_FOREACH_LERP, out, self, ends, nullptr, &weights, no_arg());
  return out;
}

void lerp_scalar_(at::TensorList self, at::TensorList ends, const at::Scalar& w) {
  nat::check_foreach_api_restrictions(self, ends);
  if (!fast({self, ends}) || !real(w)) return nat::foreach_tensor_lerp_list_kernel_slow_(self, ends, w);
  ternary(AXON_FOREACH_LERP, self, self, ends, nullptr, nullptr, value_arg(w.toDouble()));
}

Vec lerp_scalar(at::TensorList self, at::TensorList ends, const at::Scalar& w) {
  nat::check_foreach_api_restrictions(self, ends);
  if (!fast({self, ends}) || !real(w)) return nat::foreach_tensor_lerp_list_kernel_slow(self, ends, w);
  Vec out = outputs_like(self);
  ternary(AXON_FOREACH_LERP, out, self, ends, nullptr, nullptr, value_arg(w.toDouble()));
  return out;
}

void lerp_scalarlist_(at::TensorList self, at::TensorList ends, at::ArrayRef<at::Scalar> ws) {
  nat::check_foreach_api_restrictions(self, ends, ws);
  if (!fast({self, ends}) || !reals(ws)) return nat::foreach_tensor_lerp_scalarlist_kernel_slow_(self, ends, ws);
  const std::vector<double> v = doubles(ws);
  axon_foreach_arg_t w = no_arg();
  w.values = v.data();
  ternary(AXON_FOREACH_LERP, self, self, ends, nullptr, nullptr, w);
}

Vec lerp_scalarlist(at::TensorList self, at::TensorList ends, at::ArrayRef<at::Scalar> ws) {
  nat::check_foreach_api_restrictions(self, ends, ws);
  if (!fast({self, ends}) || !reals(ws)) return nat::foreach_tensor_lerp_scalarlist_kernel_slow(self, ends, ws);
  const std::vector<double> v = doubles(ws);
  axon_foreach_arg_t w = no_arg();
  w.values = v.data();
  Vec out = outputs_like(self);
  ternary(AXON_FOREACH_LERP, out, self, ends, nullptr, nullptr, w);
  return out;
}

// ---- norm: ord 1, 2 and inf natively; others (0, -inf, fractional p) through the slow path ----

Vec norm(at::TensorList self, const at::Scalar& ord, std::optional<at::ScalarType> dtype) {
  nat::check_foreach_api_restrictions(self);
  const double p = real(ord) ? ord.toDouble() : NAN;
  const c10::ScalarType out_dtype = dtype.value_or(self.empty() ? at::kFloat : self[0].scalar_type());
  bool empty = false;  // PyTorch refuses the inf norm of an empty tensor (no identity): its slow path says so
  for (const at::Tensor& t : self) empty = empty || (t.defined() && t.numel() == 0);
  if (!fast({self}) || !(p == 1.0 || p == 2.0 || p == INFINITY) || !is_float(out_dtype) || (p == INFINITY && empty))
    return nat::foreach_tensor_norm_slow(self, ord, dtype);
  Vec out;
  out.reserve(self.size());
  for (const at::Tensor& t : self) out.push_back(at::empty({}, t.options().dtype(out_dtype)));
  auto od = describe_flat_list(out, "_foreach_norm"), sd = describe_flat_list(self, "_foreach_norm");
  AXON_CHECK(axon_foreach_norm(stream_of(self), static_cast<int64_t>(self.size()), od.data(), sd.data(), p));
  return out;
}

constexpr axon_foreach_op_t ADD = AXON_FOREACH_ADD, MUL = AXON_FOREACH_MUL, DIV = AXON_FOREACH_DIV;
constexpr axon_foreach_op_t MAX = AXON_FOREACH_MAXIMUM, MIN = AXON_FOREACH_MINIMUM, POW = AXON_FOREACH_POW;

// The four binary forms of an op with PyTorch's slow kernels foreach_tensor_<slow>_{scalar,list,scalarlist}_...
#define REGISTER_SCALAR_FORMS(m, name, OP, SIGN, slow)                                                         \
  m.impl(name "_.Scalar", TORCH_FN((scalar_<OP, SIGN, &nat::foreach_tensor_##slow##_scalar_kernel_slow_>)));         \
  m.impl(name ".Scalar", TORCH_FN((scalar<OP, SIGN, &nat::foreach_tensor_##slow##_scalar_kernel_slow>)));            \
  m.impl(name "_.ScalarList",                                                                                      \
         TORCH_FN((scalarlist_<OP, SIGN, &nat::foreach_tensor_##slow##_scalarlist_kernel_slow_>)));                 \
  m.impl(name ".ScalarList", TORCH_FN((scalarlist<OP, SIGN, &nat::foreach_tensor_##slow##_scalarlist_kernel_slow>)))

#define REGISTER_LIST_FORMS(m, name, OP, slow)                                                                 \
  m.impl(name "_.List", TORCH_FN((list_<OP, &nat::foreach_tensor_##slow##_list_kernel_slow_>)));                     \
  m.impl(name ".List", TORCH_FN((list<OP, &nat::foreach_tensor_##slow##_list_kernel_slow>)))

#define REGISTER_UNARY(m, name, OP)                                                                            \
  m.impl("_foreach_" #name "_", TORCH_FN((unary_<OP, &nat::foreach_tensor_##name##_slow_>)));                         \
  m.impl("_foreach_" #name, TORCH_FN((unary_fn<OP, &nat::foreach_tensor_##name##_slow>)))

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  REGISTER_SCALAR_FORMS(m, "_foreach_add", ADD, 1, add);
  REGISTER_SCALAR_FORMS(m, "_foreach_sub", ADD, -1, sub);
  REGISTER_SCALAR_FORMS(m, "_foreach_mul", MUL, 1, mul);
  REGISTER_SCALAR_FORMS(m, "_foreach_div", DIV, 1, div);
  REGISTER_SCALAR_FORMS(m, "_foreach_maximum", MAX, 1, clamp_min);
  REGISTER_SCALAR_FORMS(m, "_foreach_minimum", MIN, 1, clamp_max);
  REGISTER_SCALAR_FORMS(m, "_foreach_clamp_min", MAX, 1, clamp_min);
  REGISTER_SCALAR_FORMS(m, "_foreach_clamp_max", MIN, 1, clamp_max);
  m.impl("_foreach_add_.List", TORCH_FN((list_alpha_<ADD, 1, &nat::foreach_tensor_add_list_kernel_slow_>)));
  m.impl("_foreach_add.List", TORCH_FN((list_alpha<ADD, 1, &nat::foreach_tensor_add_list_kernel_slow>)));
  m.impl("_foreach_sub_.List", TORCH_FN((list_alpha_<ADD, -1, &nat::foreach_tensor_sub_list_kernel_slow_>)));
  m.impl("_foreach_sub.List", TORCH_FN((list_alpha<ADD, -1, &nat::foreach_tensor_sub_list_kernel_slow>)));
  REGISTER_LIST_FORMS(m, "_foreach_mul", MUL, mul);
  REGISTER_LIST_FORMS(m, "_foreach_div", DIV, div);
  REGISTER_LIST_FORMS(m, "_foreach_maximum", MAX, clamp_min);
  REGISTER_LIST_FORMS(m, "_foreach_minimum", MIN, clamp_max);
  REGISTER_LIST_FORMS(m, "_foreach_clamp_min", MAX, clamp_min);
  REGISTER_LIST_FORMS(m, "_foreach_clamp_max", MIN, clamp_max);
  m.impl("_foreach_add_.Tensor", TORCH_FN((tensor_alpha_<ADD, &nat::foreach_tensor_add_tensor_kernel_slow_>)));
  m.impl("_foreach_add.Tensor", TORCH_FN((tensor_alpha<ADD, &nat::foreach_tensor_add_tensor_kernel_slow>)));
  m.impl("_foreach_mul_.Tensor", TORCH_FN((tensor_<MUL, &nat::foreach_tensor_mul_tensor_kernel_slow_>)));
  m.impl("_foreach_mul.Tensor", TORCH_FN((tensor<MUL, &nat::foreach_tensor_mul_tensor_kernel_slow>)));
  m.impl("_foreach_div_.Tensor", TORCH_FN((tensor_<DIV, &nat::foreach_tensor_div_tensor_kernel_slow_>)));
  m.impl("_foreach_div.Tensor", TORCH_FN((tensor<DIV, &nat::foreach_tensor_div_tensor_kernel_slow>)));
  // pow: tensor ** scalar / scalars / tensors (scalar ** tensors keeps PyTorch's per-tensor default).
  m.impl("_foreach_pow_.Scalar", TORCH_FN((scalar_<POW, 1, &nat::foreach_tensor_pow_scalar_kernel_slow_>)));
  m.impl("_foreach_pow.Scalar", TORCH_FN((scalar<POW, 1, &nat::foreach_tensor_pow_scalar_kernel_slow>)));
  m.impl("_foreach_pow_.ScalarList",
         TORCH_FN((scalarlist_<POW, 1, &nat::foreach_tensor_pow_scalarlist_kernel_slow_>)));
  m.impl("_foreach_pow.ScalarList", TORCH_FN((scalarlist<POW, 1, &nat::foreach_tensor_pow_scalarlist_kernel_slow>)));
  REGISTER_LIST_FORMS(m, "_foreach_pow", POW, pow);

  REGISTER_UNARY(m, neg, AXON_FOREACH_NEG);
  REGISTER_UNARY(m, sqrt, AXON_FOREACH_SQRT);
  REGISTER_UNARY(m, abs, AXON_FOREACH_ABS);
  REGISTER_UNARY(m, exp, AXON_FOREACH_EXP);
  REGISTER_UNARY(m, sign, AXON_FOREACH_SIGN);
  REGISTER_UNARY(m, reciprocal, AXON_FOREACH_RECIPROCAL);
  m.impl("_foreach_zero_", TORCH_FN(zero_));
  m.impl("_foreach_copy_", TORCH_FN(copy_));

  m.impl("_foreach_addcmul_.Scalar", TORCH_FN((addc_scalar_<AXON_FOREACH_ADDCMUL, &nat::foreach_tensor_addcmul_scalar_slow_>)));
  m.impl("_foreach_addcmul.Scalar", TORCH_FN((addc_scalar<AXON_FOREACH_ADDCMUL, &nat::foreach_tensor_addcmul_scalar_slow>)));
  m.impl("_foreach_addcmul_.ScalarList",
         TORCH_FN((addc_scalarlist_<AXON_FOREACH_ADDCMUL, &nat::foreach_tensor_addcmul_scalarlist_slow_>)));
  m.impl("_foreach_addcmul.ScalarList",
         TORCH_FN((addc_scalarlist<AXON_FOREACH_ADDCMUL, &nat::foreach_tensor_addcmul_scalarlist_slow>)));
  m.impl("_foreach_addcmul_.Tensor", TORCH_FN((addc_tensor_<AXON_FOREACH_ADDCMUL, &nat::foreach_tensor_addcmul_tensor_slow_>)));
  m.impl("_foreach_addcmul.Tensor", TORCH_FN((addc_tensor<AXON_FOREACH_ADDCMUL, &nat::foreach_tensor_addcmul_tensor_slow>)));
  m.impl("_foreach_addcdiv_.Scalar", TORCH_FN((addc_scalar_<AXON_FOREACH_ADDCDIV, &nat::foreach_tensor_addcdiv_scalar_slow_>)));
  m.impl("_foreach_addcdiv.Scalar", TORCH_FN((addc_scalar<AXON_FOREACH_ADDCDIV, &nat::foreach_tensor_addcdiv_scalar_slow>)));
  m.impl("_foreach_addcdiv_.ScalarList",
         TORCH_FN((addc_scalarlist_<AXON_FOREACH_ADDCDIV, &nat::foreach_tensor_addcdiv_scalarlist_slow_>)));
  m.impl("_foreach_addcdiv.ScalarList",
         TORCH_FN((addc_scalarlist<AXON_FOREACH_ADDCDIV, &nat::foreach_tensor_addcdiv_scalarlist_slow>)));
  m.impl("_foreach_addcdiv_.Tensor", TORCH_FN((addc_tensor_<AXON_FOREACH_ADDCDIV, &nat::foreach_tensor_addcdiv_tensor_slow_>)));
  m.impl("_foreach_addcdiv.Tensor", TORCH_FN((addc_tensor<AXON_FOREACH_ADDCDIV, &nat::foreach_tensor_addcdiv_tensor_slow>)));
  m.impl("_foreach_lerp_.List", TORCH_FN(lerp_list_));
  m.impl("_foreach_lerp.List", TORCH_FN(lerp_list));
  m.impl("_foreach_lerp_.Scalar", TORCH_FN(lerp_scalar_));
  m.impl("_foreach_lerp.Scalar", TORCH_FN(lerp_scalar));
  m.impl("_foreach_lerp_.ScalarList", TORCH_FN(lerp_scalarlist_));
  m.impl("_foreach_lerp.ScalarList", TORCH_FN(lerp_scalarlist));
  m.impl("_foreach_norm.Scalar", TORCH_FN(norm));
}

}  // namespace
}  // namespace torch_axon
