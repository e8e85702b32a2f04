// Ops that initialize tensors in place: fill_, zero_, and the random ones drawing from the device's Philox generator
// (uniform_, normal_, exponential_, cauchy_, log_normal_, geometric_, random_, bernoulli_ with one p or a tensor of
// them), and randperm and multinomial
// built on them. The numbers come from libaxon's kernels; this file picks the generator and claims its Philox blocks,
// so the same seed gives the same numbers whatever the thread count.
#include <ATen/ATen.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Operators.h>
#include <ATen/core/DistributionsHelper.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/native/TensorFactories.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "AxonElementBytes.h"
#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonGenerator.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

// libaxon's fill of t with a value's bytes; one launch per index of the first dimension while t does not fit a
// descriptor.
void enqueue_fill(axon_stream_t stream, const at::Tensor& t, const axon_scalar_t& bytes) {
  for (int64_t i = 0; i < t.dim(); ++i) {
    // An expanded dimension is one location: fill it once (CPU and CUDA allow filling such a tensor).
    if (t.stride(i) == 0 && t.size(i) > 1) return enqueue_fill(stream, t.narrow(i, 0, 1), bytes);
  }
  if (!fits(t)) {
    for (int64_t i = 0; i < t.size(0); ++i) enqueue_fill(stream, t.select(0, i), bytes);
    return;
  }
  const axon_tensor_t d = describe_bytes(t, "fill_");
  AXON_CHECK(axon_kernel_fill(stream, &d, bytes));
}

}  // namespace

axon_scalar_t element_bytes_scalar(const c10::Scalar& value, c10::ScalarType dtype) {
  axon_scalar_t bytes{};
  AT_DISPATCH_V2(dtype, "element_bytes_scalar", AT_WRAP([&] {
    const scalar_t v = value.to<scalar_t>();
    if constexpr (sizeof(scalar_t) == 16) {
      bytes = to_axon_scalar(c10::Scalar(v));  // a complex<double>: exact in libaxon's scalar
    } else {
      int64_t raw = 0;  // the element's bytes, as the low bytes of an integer that libaxon narrows by keeping them
      std::memcpy(&raw, &v, sizeof(scalar_t));
      bytes = axon_scalar_int(raw);
    }
  }), AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), c10::kHalf, c10::kBFloat16, c10::kBool, c10::kComplexHalf,
      AT_EXPAND(AT_FLOAT8_TYPES), AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
  return bytes;
}

namespace {

// The value is converted to self's dtype on the host with c10's checked conversion (a value the dtype cannot hold is
// an error), as CUDA's fill does; libaxon stores the resulting bytes. So every dtype can be filled, float8 and uint16
// included, with exactly the value CPU and CUDA store.
at::Tensor& fill_scalar(at::Tensor& self, const c10::Scalar& value) {
  const axon_scalar_t bytes = element_bytes_scalar(value, self.scalar_type());
  if (self.numel() > 0) enqueue_fill(current_stream(self.device().index()), self, bytes);
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  return fill_scalar(self, value.item());
}

at::Tensor& zero(at::Tensor& self) { return fill_scalar(self, 0); }

// The generator to draw from (the given one or the device's default), locked, with the blocks claimed for t.
struct Draw {
  uint64_t seed;
  uint64_t block_offset;
};

Draw claim(const at::Tensor& t, std::optional<at::Generator> gen) {
  auto* g = at::get_generator_or_default<AxonGeneratorImpl>(gen, default_generator(t.device().index()));
  TORCH_CHECK(g->device().index() == t.device().index() || !gen.has_value(), "generator on ", g->device(),
              " used for a tensor on ", t.device());
  std::lock_guard<std::mutex> lock(g->mutex_);
  const uint64_t blocks = axon_philox_blocks(*axon_dtype_of(t.scalar_type()), t.numel());
  return {g->current_seed(), g->claim_blocks(blocks)};
}

// Launches one random kernel for self: launch(stream, descriptor, draw) with the blocks claimed for self. A tensor
// whose layout does not fit a descriptor gets its numbers in a contiguous temporary first (the same numbers: they
// follow the elements' logical order), then copied in.
template <typename Launch>
at::Tensor& draw_into(at::Tensor& self, std::optional<at::Generator> gen, const char* op, const Launch& launch) {
  if (self.numel() == 0) return self;
  at::assert_no_internal_overlap(self);  // as TensorIterator checks for CPU and CUDA
  if (!fits(self)) {
    at::Tensor dense = at::empty(self.sizes(), self.options());
    draw_into(dense, gen, op, launch);
    self.copy_(dense);
    return self;
  }
  const axon_tensor_t d = describe(self, op);
  const Draw r = claim(self, gen);
  AXON_CHECK(launch(current_stream(self.device().index()), &d, r));
  return self;
}

at::Tensor& uniform(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  if (self.is_complex()) {  // as PyTorch: the real and imaginary parts each uniform in [from, to)
    at::Tensor parts = at::view_as_real(self);
    uniform(parts, from, to, gen);
    return self;
  }
  return draw_into(self, gen, "uniform_", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    return axon_kernel_uniform(s, d, r.seed, r.block_offset, from, to);
  });
}

at::Tensor& normal(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {  // as PyTorch: each part normal with std / sqrt(2), so |z| has variance std^2
    at::Tensor parts = at::view_as_real(self);
    normal(parts, mean, std / std::sqrt(2.0), gen);
    return self;
  }
  return draw_into(self, gen, "normal_", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    return axon_kernel_normal(s, d, r.seed, r.block_offset, mean, std);
  });
}

// normal with tensor parameters, as PyTorch computes it: standard normal draws scaled by std and shifted by mean
// (broadcast together), after its check that no std is negative (a read of std: it synchronizes).
void check_std(const at::Tensor& std) {
  TORCH_CHECK(!std.is_complex(), "normal expects standard deviation to be non-complex");
  TORCH_CHECK(std.numel() == 0 || std.min().ge(0).item<bool>(), "normal expects all elements of std >= 0.0");
}

at::Tensor normal_tensor_tensor(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  if (mean.is_complex() || std.device() != mean.device())
    return fall_back<ATEN_OP2(normal, Tensor_Tensor)>(mean, std, gen);
  check_std(std);
  at::Tensor out = at::empty(at::infer_size(mean.sizes(), std.sizes()), mean.options());
  normal(out, 0.0, 1.0, gen);
  return out.mul_(std).add_(mean);
}

at::Tensor normal_tensor_float(const at::Tensor& mean, double std, std::optional<at::Generator> gen) {
  if (mean.is_complex()) return fall_back<ATEN_OP2(normal, Tensor_float)>(mean, std, gen);
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  at::Tensor out = at::empty_like(mean, at::MemoryFormat::Contiguous);
  normal(out, 0.0, std, gen);
  return out.add_(mean);
}

at::Tensor normal_float_tensor(double mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  if (std.is_complex()) return fall_back<ATEN_OP2(normal, float_Tensor)>(mean, std, gen);
  check_std(std);
  at::Tensor out = at::empty_like(std, at::MemoryFormat::Contiguous);
  normal(out, 0.0, 1.0, gen);
  return out.mul_(std).add_(mean);
}

// The largest value random_ may produce without a bound: 2^digits for floating types (every integer up to it is
// exact), the type's maximum for integers, as PyTorch's random_ does.
uint64_t unbounded_max(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return 1ull << std::numeric_limits<float>::digits;
    case c10::ScalarType::Double: return 1ull << std::numeric_limits<double>::digits;
    case c10::ScalarType::Half: return 1ull << 11;
    case c10::ScalarType::BFloat16: return 1ull << 8;
    case c10::ScalarType::Bool: return 1;
    case c10::ScalarType::Byte: return std::numeric_limits<uint8_t>::max();
    case c10::ScalarType::Char: return std::numeric_limits<int8_t>::max();
    case c10::ScalarType::Short: return std::numeric_limits<int16_t>::max();
    case c10::ScalarType::Int: return std::numeric_limits<int32_t>::max();
    case c10::ScalarType::Long: return std::numeric_limits<int64_t>::max();
    default: TORCH_CHECK(false, "random_ is not supported for ", t);
  }
}

at::Tensor& random_range(at::Tensor& self, int64_t from, uint64_t range, std::optional<at::Generator> gen) {
  if (!kernels_support(self.scalar_type())) {
    // uint16/32/64: the same draws as int64, whose low bits the copy keeps (every value of the range fits).
    at::Tensor wide = at::empty(self.sizes(), self.options().dtype(at::kLong));
    random_range(wide, from, range, gen);
    self.copy_(wide);
    return self;
  }
  return draw_into(self, gen, "random_", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    return axon_kernel_random_int(s, d, r.seed, r.block_offset, from, range);
  });
}

// PyTorch's random_(from, to) front end, shared by CPU and CUDA (bounds checks naming the dtype, from/to moved to
// values the floating-point dtype can hold), calls this with the final range.
template <typename RNG>
struct RandomFromToKernel {
  void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t from, std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    random_range(self, from, range, gen);
  }
  // [int64 min, int64 max]: all 2^64 values (range 0).
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    at::Tensor self = iter.tensor(0);
    random_range(self, std::numeric_limits<int64_t>::lowest(), 0, gen);
  }
};

at::Tensor& random_from_to(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                           std::optional<at::Generator> gen) {
  return at::native::templates::random_from_to_impl<RandomFromToKernel, AxonGeneratorImpl*>(self, from, to, gen);
}

at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_from_to(self, 0, to, gen);
}

// [0, 2^digits] for floating dtypes, [0, max] for integers, as PyTorch's random_().
at::Tensor& random_plain(at::Tensor& self, std::optional<at::Generator> gen) {
  if (self.numel() == 0) return self;
  return random_range(self, 0, unbounded_max(self.scalar_type()) + 1, gen);
}

at::Tensor& bernoulli_float(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  return draw_into(self, gen, "bernoulli_", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    return axon_kernel_bernoulli(s, d, r.seed, r.block_offset, p);
  });
}

// bernoulli_(p) with a tensor of probabilities, broadcast to self's shape as CPU does (expand_inplace).
at::Tensor& bernoulli_tensor(at::Tensor& self, const at::Tensor& p_in, std::optional<at::Generator> gen) {
  TORCH_CHECK(p_in.device() == self.device(), "bernoulli_: p is on ", p_in.device(), " but self is on ",
              self.device());
  TORCH_CHECK(at::isFloatingType(p_in.scalar_type()) && axon_dtype_of(p_in.scalar_type()),
              "bernoulli_: p must have a floating dtype (float32, float64, float16 or bfloat16), got ",
              p_in.scalar_type());
  at::Tensor p = p_in.expand(self.sizes());
  // p read while self is written: a p sharing self's memory is read from a copy
  if (at::get_overlap_status(self, p) != at::MemOverlapStatus::No || !fits(p)) p = p.clone();
  return draw_into(self, gen, "bernoulli_", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    const axon_tensor_t pd = describe(p, "bernoulli_");
    return axon_kernel_bernoulli_tensor(s, d, &pd, r.seed, r.block_offset);
  });
}

at::Tensor& exponential(at::Tensor& self, double lambda, std::optional<at::Generator> gen) {
  TORCH_CHECK(lambda > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambda);
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "Exponential distribution is a continuous probability distribution. dtype must be a floating point but "
              "you specified ", self.scalar_type());
  return draw_into(self, gen, "exponential_", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    return axon_kernel_exponential(s, d, r.seed, r.block_offset, lambda);
  });
}

// cauchy_ and log_normal_ on float tensors; other dtypes go to the host fallback, which raises PyTorch's error.
at::Tensor& cauchy(at::Tensor& self, double median, double sigma, std::optional<at::Generator> gen) {
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  if (!at::isFloatingType(self.scalar_type())) return fall_back<ATEN_OP(cauchy_)>(self, median, sigma, gen);
  return draw_into(self, gen, "cauchy_", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    return axon_kernel_cauchy(s, d, r.seed, r.block_offset, median, sigma);
  });
}

at::Tensor& log_normal(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  if (!at::isFloatingType(self.scalar_type())) return fall_back<ATEN_OP(log_normal_)>(self, mean, std, gen);
  return draw_into(self, gen, "log_normal_", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    return axon_kernel_log_normal(s, d, r.seed, r.block_offset, mean, std);
  });
}

// geometric_: floats and integers (bool and complex go to the fallback).
at::Tensor& geometric(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  if (self.scalar_type() == at::kBool || self.is_complex()) return fall_back<ATEN_OP(geometric_)>(self, p, gen);
  return draw_into(self, gen, "geometric_", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    return axon_kernel_geometric(s, d, r.seed, r.block_offset, p);
  });
}

// multinomial: PyTorch's own method on device ops, with CPU's checks and messages (one sync for the probability
// checks, as CPU's and PyTorch's shared path take). Without replacement (or one sample): the k largest p / q with
// q ~ Exp(1) (Gumbel's trick, as PyTorch's shared path); with replacement: the inverse of each row's cumulative sum
// at uniform draws (searchsorted). float16 and bfloat16 probabilities are widened first, so that no q rounds to 0.
at::Tensor& multinomial_out(const at::Tensor& self, int64_t n_sample, bool replacement,
                            std::optional<at::Generator> gen, at::Tensor& result) {
  TORCH_CHECK(result.device() == self.device(), "multinomial arguments must have the same device");
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  TORCH_CHECK(result.scalar_type() == at::kLong, "multinomial expects Long tensor out, got: ", result.scalar_type());
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  const int64_t n_categories = self.size(-1);
  TORCH_CHECK(replacement || n_sample <= n_categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK(n_categories <= (int64_t(1) << 24), "number of categories cannot exceed 2^24");
  if (self.dim() == 1) {
    result.resize_({n_sample});
  } else {
    result.resize_({self.size(0), n_sample});
  }
  if (result.numel() == 0) return result;
  TORCH_CHECK(((self.max() < INFINITY) & (self.min() >= 0)).item<bool>(),
              "probability tensor contains either `inf`, `nan` or element < 0");
  TORCH_CHECK(!(self.sum(-1) == 0).any().item<bool>(), "invalid multinomial distribution (sum of probabilities <= 0)");
  const at::Tensor p = at::isReducedFloatingType(self.scalar_type()) ? self.to(at::kFloat) : self;
  if (!replacement || n_sample == 1) {
    at::Tensor q = at::empty_like(p, at::MemoryFormat::Contiguous);
    exponential(q, 1.0, gen);
    const at::Tensor keys = p / q;
    if (n_sample == 1) {
      at::argmax_out(result, keys, -1, /*keepdim=*/true);
    } else {
      at::Tensor values = at::empty(result.sizes(), keys.options());
      at::topk_out(values, result, keys, n_sample);
    }
    return result;
  }
  const at::Tensor cdf = p.cumsum(-1);
  at::Tensor u = at::empty(result.sizes(), p.options());
  uniform(u, 0.0, 1.0, gen);
  u.mul_(cdf.narrow(-1, n_categories - 1, 1));  // in [0, the row's total)
  at::searchsorted_out(result, cdf, u, /*out_int32=*/false, /*right=*/true);
  result.clamp_max_(n_categories - 1);  // a draw that rounds up to the total
  return result;
}

at::Tensor multinomial(const at::Tensor& self, int64_t n_sample, bool replacement, std::optional<at::Generator> gen) {
  at::Tensor result = at::empty({0}, self.options().dtype(at::kLong));
  return multinomial_out(self, n_sample, replacement, gen, result);
}

// randperm(n): libaxon's Fisher-Yates on the device's Philox stream, into int64, then out's dtype.
at::Tensor& randperm_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  // (checked on a CPU tensor of out's dtype: its messages are CPU's; a device fill would refuse an overflowing n first)
  at::native::check_supported_max_int_with_precision(n, at::empty({0}, out.options().device(at::kCPU)));
  out.resize_({n});
  if (n == 0) return out;
  const bool direct = out.scalar_type() == at::kLong && out.is_contiguous();
  at::Tensor perm = direct ? out : at::empty({n}, out.options().dtype(at::kLong));
  draw_into(perm, gen, "randperm", [&](axon_stream_t s, const axon_tensor_t* d, const Draw& r) {
    return axon_kernel_randperm(s, d, r.seed, r.block_offset);
  });
  if (!direct) out.copy_(perm);
  return out;
}

// arange(start, end, step, out=): PyTorch's own size rule (RangeUtils.h), then libaxon's kernel, which computes
// start + i * step in double (int64 for integers) as the CPU kernel does.
at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step, at::Tensor& out) {
  int64_t size = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "arange_axon",
                             [&] { size = at::native::compute_arange_size<scalar_t>(start, end, step); });
  if (out.numel() != size) out.resize_({size});
  if (size == 0) return out;
  if (!out.is_contiguous()) {
    at::Tensor tmp = at::empty({size}, out.options());
    arange_out(start, end, step, tmp);
    out.copy_(tmp);
    return out;
  }
  const axon_tensor_t d = describe(out, "arange");
  AXON_CHECK(axon_kernel_arange(current_stream(out.device().index()), &d, to_axon_scalar(start), to_axon_scalar(step)));
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", arange_out);
  m.impl("fill_.Scalar", fill_scalar);
  m.impl("fill_.Tensor", fill_tensor);
  m.impl("zero_", zero);
  m.impl("uniform_", uniform);
  m.impl("normal_", normal);
  m.impl("normal.Tensor_Tensor", normal_tensor_tensor);
  m.impl("normal.Tensor_float", normal_tensor_float);
  m.impl("normal.float_Tensor", normal_float_tensor);
  m.impl("random_.from", random_from_to);
  m.impl("random_.to", random_to);
  m.impl("random_", random_plain);
  m.impl("bernoulli_.float", bernoulli_float);
  m.impl("bernoulli_.Tensor", bernoulli_tensor);
  m.impl("randperm.generator_out", randperm_out);
  m.impl("exponential_", exponential);
  m.impl("cauchy_", cauchy);
  m.impl("log_normal_", log_normal);
  m.impl("geometric_", geometric);
  m.impl("multinomial", multinomial);
  m.impl("multinomial.out", multinomial_out);
}

}  // namespace
}  // namespace torch_axon
