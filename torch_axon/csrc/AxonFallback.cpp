// The host fallback: an ATen op with no axon kernel runs PyTorch's CPU kernel directly on the device memory.
//
// Device memory is host memory in the CPU port, so each axon tensor argument is handed to the CPU kernel as a CPU
// tensor aliasing the same bytes: no copies in, and in-place and out= results land in device memory directly. The
// current stream is synchronized first, so the CPU kernel sees every earlier kernel's writes (stream order). Results
// that alias an argument come back as views of the original axon tensor; only freshly allocated results are copied
// to the device. Every use is counted per op (torch_axon.fallback_stats()), warned about once per op, and with
// AXON_STRICT=1 refused with an error naming the op.
//
// Random ops draw from the axon generator even here: the CPU kernel gets a CPU generator seeded from one Philox block
// of the axon generator (the one passed, else the device's default), which advances by that block. So
// torch.axon.manual_seed and generator= arguments make fallback random ops reproducible, as on CUDA.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/PhiloxRNGEngine.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonGenerator.h"

namespace torch_axon {

namespace {

std::mutex g_stats_lock;
std::map<std::string, int64_t> g_counts;
int g_strict = -1;  // -1: not yet read from AXON_STRICT

bool strict_fallback() {
  std::lock_guard<std::mutex> lock(g_stats_lock);
  if (g_strict < 0) {
    const char* v = std::getenv("AXON_STRICT");
    g_strict = (v != nullptr && std::strcmp(v, "1") == 0) ? 1 : 0;
  }
  return g_strict == 1;
}

std::set<std::string> g_warned;  // ops warned about: once per process, whatever reset_fallback_counts does

// Count one use of `name`; true if it is the first in this process (the one to warn about).
bool count_use(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_stats_lock);
  ++g_counts[name];
  return g_warned.insert(name).second;
}

// A CPU tensor over the same bytes as axon tensor t. Its storage is resizable with the CPU allocator, so a CPU
// kernel that resizes an out= argument gets fresh host memory, which is copied back afterwards.
at::Tensor host_alias(const at::Tensor& t) {
  if (!t.defined()) return t;
  c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
  c10::DataPtr view(impl->mutable_data(), c10::Device(c10::DeviceType::CPU));  // non-owning
  c10::Storage storage(c10::Storage::use_byte_size_t(), impl->nbytes(), std::move(view), c10::GetCPUAllocator(),
                       /*resizable=*/true);
  at::Tensor alias = at::empty({0}, t.options().device(c10::kCPU));
  alias.set_(std::move(storage), t.storage_offset(), t.sizes(), t.strides());
  alias._set_conj(t.is_conj());
  alias._set_neg(t.is_neg());
  return alias;
}

struct Aliased {
  at::Tensor original;  // the axon tensor
  at::Tensor alias;     // its CPU alias handed to the kernel
  const void* device_data;
};

class Fallback {
 public:
  Fallback(const c10::OperatorHandle& op) : op_(op) {}

  void run(torch::jit::Stack* stack) {
    const auto& schema = op_.schema();
    const size_t nargs = schema.arguments().size();
    const size_t first_arg = stack->size() - nargs;
    std::vector<size_t> generator_args;
    for (size_t i = 0; i < nargs; ++i) {
      if (is_generator_argument(schema.arguments()[i])) {
        generator_args.push_back(first_arg + i);
        continue;
      }
      (*stack)[first_arg + i] = to_host((*stack)[first_arg + i], schema.arguments()[i].name());
    }
    TORCH_CHECK(device_index_ >= 0 || axon_device_arg_, name(), ": the host fallback found no axon argument");
    if (device_index_ < 0) device_index_ = current_device();
    for (size_t i : generator_args) (*stack)[i] = host_generator((*stack)[i]);
    // Stream order: the CPU kernel must see every earlier kernel's writes.
    AXON_CHECK(axon_stream_sync(current_stream(device_index_)));
    op_.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
    write_back_resized_arguments();
    const size_t nret = schema.returns().size();
    const size_t first_ret = stack->size() - nret;
    for (size_t i = 0; i < nret; ++i) (*stack)[first_ret + i] = to_device((*stack)[first_ret + i]);
  }

  std::string name() const { return c10::toString(op_.schema().operator_name()); }

 private:
  c10::IValue to_host(const c10::IValue& v, const std::string& arg_name) {
    if (v.isTensor()) return c10::IValue(tensor_to_host(v.toTensor(), arg_name, /*in_list=*/false));
    if (v.isTensorList()) {
      auto list = v.toTensorList();
      c10::List<at::Tensor> out;
      out.reserve(list.size());
      for (const at::Tensor& t : list) out.push_back(tensor_to_host(t, arg_name, /*in_list=*/true));
      return c10::IValue(out);
    }
    if (v.isOptionalTensorList()) {
      auto list = v.toOptionalTensorList();
      c10::List<std::optional<at::Tensor>> out;
      out.reserve(list.size());
      for (std::optional<at::Tensor> t : list) {
        out.push_back(t.has_value() ? std::optional<at::Tensor>(tensor_to_host(*t, arg_name, true)) : std::nullopt);
      }
      return c10::IValue(out);
    }
    if (v.isDevice() && v.toDevice().type() == kAxon) {
      axon_device_arg_ = true;
      if (device_index_ < 0) device_index_ = v.toDevice().has_index() ? v.toDevice().index() : current_device();
      return c10::IValue(c10::Device(c10::kCPU));
    }
    return v;
  }

  static bool is_generator_argument(const c10::Argument& arg) {
    const c10::TypePtr& type = arg.type();
    if (type->kind() == c10::TypeKind::GeneratorType) return true;
    const auto* optional = type->castRaw<c10::OptionalType>();
    return optional != nullptr && optional->getElementType()->kind() == c10::TypeKind::GeneratorType;
  }

  // The CPU generator the kernel draws from, seeded from the next Philox block of the axon generator `v` (None: the
  // device's default).
  c10::IValue host_generator(const c10::IValue& v) {
    std::optional<at::Generator> given;
    if (v.isGenerator()) given = v.toGenerator();
    const PhiloxDraw draw = claim_philox(given, device_index_, 1);
    at::Philox4_32 philox(draw.seed, /*subsequence=*/0, /*offset=*/draw.offset);
    const uint64_t lo = philox(), hi = philox();
    return c10::IValue(at::make_generator<at::CPUGeneratorImpl>(lo | (hi << 32)));
  }

  at::Tensor tensor_to_host(const at::Tensor& t, const std::string& arg_name, bool in_list) {
    if (!t.defined()) return t;
    if (t.device().type() != kAxon) {
      // As on CUDA: a CPU tensor may join an axon op only as a 0-dim value (or inside an index list).
      TORCH_CHECK(in_list || t.dim() == 0 || !t.is_cpu(),
                  "Expected all tensors to be on the same device, but found at least two devices, ",
                  axon_device_string(), " and cpu! (when checking argument '", arg_name, "' of ", name(), ")");
      return t;
    }
    if (device_index_ < 0) {
      device_index_ = t.device().index();
    } else {
      TORCH_CHECK(t.device().index() == device_index_,
                  "Expected all tensors to be on the same device, but found at least two devices, axon:",
                  static_cast<int>(device_index_), " and ", t.device(), "! (when checking argument '", arg_name,
                  "' of ", name(), ")");
    }
    at::Tensor alias = host_alias(t);
    aliased_.push_back({t, alias, t.storage().data()});
    return alias;
  }

  std::string axon_device_string() const {
    return device_index_ >= 0 ? "axon:" + std::to_string(device_index_) : std::string("axon");
  }

  // A CPU kernel that resized an out= argument gave its alias new host memory: move that into the axon tensor.
  void write_back_resized_arguments() {
    for (const Aliased& a : aliased_) {
      const bool moved = a.alias.storage().data() != a.device_data;
      const bool reshaped = a.alias.sizes() != a.original.sizes() || a.alias.strides() != a.original.strides() ||
                            a.alias.storage_offset() != a.original.storage_offset();
      // Kernels may also flip an out= argument's conjugate or negative bit (linalg_lu_solve with left=False
      // returns a conjugated view): the axon tensor takes the same bits over the same raw values.
      const bool bits = a.alias.is_conj() != a.original.is_conj() || a.alias.is_neg() != a.original.is_neg();
      if (!moved && !reshaped && !bits) continue;
      if (moved) {
        // Fresh device memory laid out as the kernel's result (LAPACK-style kernels return column-major views with
        // padding), holding the alias's raw values (its bits cleared, so copy_ does not resolve them).
        at::Tensor raw = a.alias.is_conj() ? a.alias.conj() : a.alias;
        if (raw.is_neg()) raw = raw._neg_view();
        at::Tensor fresh = at::empty_strided(a.alias.sizes(), a.alias.strides(), a.original.options());
        fresh.copy_(raw);
        a.original.set_(fresh);
      } else if (reshaped) {
        a.original.as_strided_(a.alias.sizes(), a.alias.strides(), a.alias.storage_offset());
      }
      a.original._set_conj(a.alias.is_conj());
      a.original._set_neg(a.alias.is_neg());
    }
  }

  c10::IValue to_device(const c10::IValue& v) {
    if (v.isTensor()) return c10::IValue(tensor_to_device(v.toTensor()));
    if (v.isTensorList()) {
      auto list = v.toTensorList();
      c10::List<at::Tensor> out;
      out.reserve(list.size());
      for (const at::Tensor& t : list) out.push_back(tensor_to_device(t));
      return c10::IValue(out);
    }
    return v;
  }

  at::Tensor tensor_to_device(const at::Tensor& r) {
    if (!r.defined() || r.device().type() != c10::kCPU) return r;
    for (const Aliased& a : aliased_) {
      if (r.unsafeGetTensorImpl() == a.alias.unsafeGetTensorImpl()) return a.original;  // in-place / out=
    }
    for (const Aliased& a : aliased_) {
      // Empty tensors may all have null data: only real memory identifies a view.
      if (a.device_data != nullptr && r.dtype() == a.original.dtype() &&
          r.storage().data() == a.alias.storage().data() && r.storage().data() == a.device_data) {
        // A view of an argument: the same view of the axon tensor's storage, no copy.
        return a.original.as_strided(r.sizes(), r.strides(), r.storage_offset());
      }
    }
    return r.to(c10::Device(kAxon, device_index_));  // a fresh result: its one copy
  }

  const c10::OperatorHandle& op_;
  std::vector<Aliased> aliased_;
  c10::DeviceIndex device_index_ = -1;
  bool axon_device_arg_ = false;
};

void axon_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  Fallback fb(op);
  const std::string name = fb.name();
  const bool first = count_use(name);
  TORCH_CHECK(!strict_fallback(), "axon: ", name,
              " has no native axon kernel and AXON_STRICT=1 forbids running it through the host fallback");
  if (first) {
    TORCH_WARN("axon: ", name, " has no native axon kernel yet; it runs through the host fallback on the device's "
               "memory (counted in torch_axon.fallback_stats())");
  }
  fb.run(stack);
}

}  // namespace

void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) { axon_fallback(op, stack); }

std::map<std::string, int64_t> fallback_counts() {
  std::lock_guard<std::mutex> lock(g_stats_lock);
  return g_counts;
}

void reset_fallback_counts() {
  std::lock_guard<std::mutex> lock(g_stats_lock);
  g_counts.clear();
}

void set_strict_fallback(bool strict) {
  std::lock_guard<std::mutex> lock(g_stats_lock);
  g_strict = strict ? 1 : 0;
}

bool get_strict_fallback() { return strict_fallback(); }

}  // namespace torch_axon

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&torch_axon::axon_fallback>()); }

// Convolutions are native: AxonConvOps.cpp binds convolution_overrideable and convolution_backward_overrideable,
// which PyTorch's device-independent convolution calls for axon tensors.
