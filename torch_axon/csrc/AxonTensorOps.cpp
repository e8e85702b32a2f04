// The ATen kernels that make a tensor an axon tensor: factories (through the axon allocator, and the storage-less
// zero tensors of autograd), views (PyTorch's own metadata-only implementations, registered for axon), resize_ and
// set_. No data is touched here.
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "AxonFunctions.h"

namespace torch_axon {
namespace {

constexpr c10::DispatchKeySet kAxonKeys{c10::DispatchKey::PrivateUse1};

// Factories allocate on the requested device: it is made current while the allocator runs. No guard when it is
// current already (nearly always), since a guard costs two virtual device exchanges per tensor.
std::optional<c10::Device> indexed(std::optional<c10::Device> d) {
  if (d.has_value() && d->has_index() && d->index() != current_device()) return d;
  return std::nullopt;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> /*pin_memory*/, std::optional<c10::MemoryFormat> memory_format) {
  TORCH_CHECK(!layout.has_value() || *layout == c10::Layout::Strided, "axon supports only strided tensors, got layout ",
              *layout);
  c10::OptionalDeviceGuard g(indexed(device));
  return at::detail::empty_generic(size, device_allocator(), kAxonKeys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> /*pin_memory*/) {
  TORCH_CHECK(!layout.has_value() || *layout == c10::Layout::Strided, "axon supports only strided tensors, got layout ",
              *layout);
  c10::OptionalDeviceGuard g(indexed(device));
  return at::detail::empty_strided_generic(size, stride, device_allocator(), kAxonKeys, c10::dtype_or_default(dtype));
}

// A zero tensor without storage (autograd's zero gradients: sign, floor, round, comparisons), as CPU and CUDA make
// it: the ZeroTensor key over the backend's, whose fallback materializes zeros on the device when an op needs them.
at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                                 std::optional<c10::Layout> /*layout*/, std::optional<c10::Device> device,
                                 std::optional<bool> /*pin_memory*/) {
  c10::Device dev = device.value_or(c10::Device(kAxon, current_device()));
  if (!dev.has_index()) dev.set_index(current_device());
  at::native::ZeroTensorAllocator allocator(dev);
  const c10::DispatchKeySet keys = kAxonKeys | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, &allocator, keys, c10::dtype_or_default(dtype), std::nullopt);
}

// Grow self's storage, if needed, to hold its current sizes and strides (a new block, old bytes copied).
void grow_storage_to_fit(const at::Tensor& self) {
  auto* impl = self.unsafeGetTensorImpl();
  const size_t needed = at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.dtype().itemsize(),
                                                         impl->storage_offset());
  if (needed > impl->storage().nbytes()) at::native::resize_bytes_nocuda(impl->storage(), needed);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  for (int64_t s : size) TORCH_CHECK(s >= 0, "resize_: negative size ", s, " in ", size);
  auto* impl = self.unsafeGetTensorImpl();
  if (self.sizes() == size && !memory_format.has_value()) return self;
  impl->set_sizes_contiguous(size);
  if (memory_format.has_value() && *memory_format != c10::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  grow_storage_to_fit(self);
  return self;
}

at::Tensor& set_storage_offset(at::Tensor& self, c10::Storage source, int64_t offset, c10::IntArrayRef size,
                               c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, offset, size, stride);
  self.unsafeGetTensorImpl()->set_sizes_and_strides(size, stride, offset);
  grow_storage_to_fit(self);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source) {
  const int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage_offset(self, std::move(source), 0, {n}, {1});
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) return self;
  return set_storage_offset(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, device_allocator(), /*resizable=*/true);
  return set_storage_offset(self, std::move(empty), 0, {0}, {1});
}

// Whether `from`'s TensorImpl may replace `self`'s (param.data = other). c10 allows it between dense tensors of its
// built-in backends only; axon tensors are plain dense TensorImpls too. Without this, Module.to("axon") builds new
// Parameter objects and unties weights shared between modules (a GPT-2 head and its embedding).
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const auto dense = [](const at::Tensor& t) {
    return t.layout() == at::kStrided && (t.device().type() == c10::kCPU || t.device().type() == kAxon);
  };
  return self.key_set() == from.key_set() || (dense(self) && dense(from));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("_efficientzerotensor", efficient_zero_tensor);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage", set_storage);
  m.impl("set_.source_Storage_storage_offset", set_storage_offset);
  m.impl("set_.source_Tensor", set_tensor);
  m.impl("set_", set_empty);
  // Views change only metadata; PyTorch's implementations are device-independent but registered per backend.
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("unfold", at::native::unfold);
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
}

}  // namespace
}  // namespace torch_axon
