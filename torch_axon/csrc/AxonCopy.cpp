// Copies between CPU and axon and between axon devices (_copy_from), and reading one element back (item()).
// The element-wise work (strides, broadcasting, dtype conversion) is libaxon's copy kernel; this file only picks the
// stream, the ordering between streams and whether the host must wait, with CUDA's semantics:
//   - device-to-device copies are asynchronous;
//   - host-to-device and device-to-host copies return only when the host memory may be reused, unless the host side
//     is pinned and non_blocking=True, in which case they are asynchronous and the pinned block is held for the stream.
// Two cases go through the host instead, synchronously, with PyTorch's CPU kernels doing the element work: tensors
// with conjugate or negative bits, and conversions from or to dtypes libaxon does not know (float8, bits types).
// Same-dtype copies of those dtypes stay on libaxon, which moves their bytes.
#include <ATen/ATen.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/MemoryOverlap.h>
#include <torch/library.h>

#include "AxonException.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

// Make `waiter` wait for the work queued so far on `producer` (different devices' streams).
void stream_wait_stream(axon_stream_t waiter, axon_stream_t producer) {
  if (waiter == producer) return;
  axon_event_t e = nullptr;
  AXON_CHECK(axon_event_create(runtime(), AXON_EVENT_DEFAULT, &e));
  const axon_status_t st1 = axon_event_record(e, producer);
  const axon_status_t st2 = st1 == AXON_OK ? axon_stream_wait_event(waiter, e) : st1;
  axon_event_destroy(e);  // safe: the wait captured the point already
  AXON_CHECK(st2);
}

bool same_dense_layout(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.is_contiguous() && b.is_contiguous();
}

bool is_pinned_host(const at::Tensor& t) {
  return t.is_cpu() && axon_host_is_pinned(runtime(), t.storage().data()) != 0;
}

// A view of t's bytes without its conjugate and negative bits (a new TensorImpl: t itself is untouched).
at::Tensor without_math_bits(const at::Tensor& t) {
  if (!t.is_conj() && !t.is_neg()) return t;
  at::Tensor plain = t.alias();
  plain._set_conj(false);
  plain._set_neg(false);
  return plain;
}

// libaxon's copy kernel for dst = src (same shape); one launch per index of the first dimension while the two do not
// fit a descriptor together.
void enqueue_copy_kernel(axon_stream_t stream, const at::Tensor& dst, const at::Tensor& src) {
  if (!fits_pair(dst, src)) {
    for (int64_t i = 0; i < dst.size(0); ++i) enqueue_copy_kernel(stream, dst.select(0, i), src.select(0, i));
    return;
  }
  axon_tensor_t d, s;
  describe_pair(dst, src, /*bytes=*/true, "copy_", &d, &s);
  if (src.scalar_type() != dst.scalar_type()) {  // a cast: name the dtypes, storage ones included
    d.dtype = *axon_storage_dtype_of(dst.scalar_type());
    s.dtype = *axon_storage_dtype_of(src.scalar_type());
  }
  AXON_CHECK(axon_kernel_copy(stream, &d, &s));
}

// dst = src for tensors without math bits, of the same shape; either dtype libaxon knows, or the same dtype (then
// only bytes move). The ordering and waiting rules are those at the top of this file.
void copy_plain(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  const bool to_axon_dev = dst.device().type() == kAxon, from_axon_dev = src.device().type() == kAxon;
  // The stream that orders the copy: the destination's on the device side, else the source's.
  const c10::DeviceIndex index = to_axon_dev ? dst.device().index() : src.device().index();
  axon_stream_t stream = current_stream(index);
  // Between devices, CUDA's two-way barrier: the copy (on the destination's stream) waits for the work queued on the
  // source's stream, and the source's stream waits for the copy, so that the source block, if freed on its own
  // stream, is not reused before the copy has read it.
  axon_stream_t src_stream = nullptr;
  if (to_axon_dev && from_axon_dev && src.device().index() != index) {
    src_stream = current_stream(src.device().index());
    stream_wait_stream(stream, src_stream);
  }

  const at::Tensor& host = to_axon_dev ? src : dst;  // meaningful only when one side is the CPU
  const bool host_involved = !(to_axon_dev && from_axon_dev);
  const bool async_host = host_involved && non_blocking && is_pinned_host(host);

  if (same_dense_layout(src, dst)) {
    const axon_copy_kind_t kind = !host_involved ? AXON_COPY_DEVICE_TO_DEVICE
                                  : to_axon_dev  ? AXON_COPY_HOST_TO_DEVICE
                                                 : AXON_COPY_DEVICE_TO_HOST;
    AXON_CHECK(axon_memcpy_async(dst.mutable_data_ptr(), src.const_data_ptr(), dst.nbytes(), kind, stream));
  } else {
    enqueue_copy_kernel(stream, dst, src);
  }
  if (src_stream != nullptr) stream_wait_stream(src_stream, stream);
  if (async_host) {
    AXON_CHECK(axon_host_record_stream(runtime(), host.storage().mutable_data(), stream));
  } else if (host_involved) {
    AXON_CHECK(axon_stream_sync(stream));
  }
}

// dst = src where libaxon cannot do it alone: conjugate or negative bits on either side, or a conversion from or to
// a dtype libaxon does not know. The values pass through the host, where PyTorch's CPU kernels resolve the bits and
// convert; libaxon only moves bytes. Synchronous.
void copy_through_host(const at::Tensor& src, const at::Tensor& dst) {
  at::Tensor values;
  if (src.is_cpu()) {
    values = src;
  } else {
    values = at::empty(src.sizes(), src.options().device(c10::kCPU));
    copy_plain(without_math_bits(src), values, /*non_blocking=*/false);
    values._set_conj(src.is_conj());
    values._set_neg(src.is_neg());
  }
  values = values.resolve_conj().resolve_neg().to(dst.scalar_type());
  // What dst's bytes must hold so that its bits give back these values.
  if (dst.is_conj()) values = values.conj_physical();
  if (dst.is_neg()) values = values.neg();
  if (dst.is_cpu()) {
    without_math_bits(dst).copy_(values);
  } else {
    copy_plain(values, without_math_bits(dst), /*non_blocking=*/false);
  }
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(dst.defined() && self.defined(), "copy_: undefined tensor");
  TORCH_CHECK(dst.device().type() == kAxon || self.device().type() == kAxon, "axon copy between ", self.device(),
              " and ", dst.device());
  TORCH_CHECK(self.device().type() == kAxon || self.is_cpu(), "axon cannot copy from ", self.device());
  TORCH_CHECK(dst.device().type() == kAxon || dst.is_cpu(), "axon cannot copy to ", dst.device());
  if (dst.numel() == 0) return dst;
  // What copy_ checks through TensorIterator for CPU and CUDA, with the same messages.
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, self);
  const bool same_data = dst.is_alias_of(self) && dst.storage_offset() == self.storage_offset() &&
                         dst.strides() == self.strides() && dst.sizes() == self.sizes() &&
                         dst.scalar_type() == self.scalar_type() && dst.is_conj() == self.is_conj() &&
                         dst.is_neg() == self.is_neg();
  if (same_data) return dst;

  at::Tensor src = self;
  if (src.sizes() != dst.sizes()) src = src.expand_as(dst);  // broadcasting: zero strides, read by the kernel

  const bool math_bits = src.is_conj() || src.is_neg() || dst.is_conj() || dst.is_neg();
  const bool libaxon_casts = axon_storage_dtype_of(src.scalar_type()) && axon_storage_dtype_of(dst.scalar_type());
  const bool foreign_conversion = src.scalar_type() != dst.scalar_type() && !libaxon_casts;
  if (math_bits || foreign_conversion) {
    copy_through_host(src, dst);
  } else {
    copy_plain(src, dst, non_blocking);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, /*non_blocking=*/false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  const c10::ScalarType t = self.scalar_type();
  const bool plain_type = !c10::isQIntType(t) && !c10::isBitsType(t) && t != c10::kFloat4_e2m1fn_x2;
  if (plain_type && !self.is_conj() && !self.is_neg()) {
    // The element's bytes straight into a host buffer after the stream's work (item() sits in Python control flow:
    // a host tensor and a full copy_ cost four times the read).
    alignas(16) unsigned char bytes[16];
    AXON_CHECK(axon_memcpy(bytes, self.const_data_ptr(), self.element_size(), AXON_COPY_DEVICE_TO_HOST,
                           current_stream(self.device().index())));
    c10::Scalar value;
    AT_DISPATCH_V2(t, "_local_scalar_dense", AT_WRAP([&] {
      value = c10::Scalar(*reinterpret_cast<const scalar_t*>(bytes));
    }), AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), c10::kComplexHalf, c10::kHalf, c10::kBool, c10::kBFloat16,
                   AT_EXPAND(AT_FLOAT8_TYPES), AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
    return value;
  }
  at::Tensor host = at::empty({}, self.options().device(c10::kCPU));
  copy_from(self.reshape({}), host, /*non_blocking=*/false);  // a [1] or [1, 1] tensor as the 0-dim host one
  return host.item();
}

// PyTorch's conjugate and negative fallbacks would materialize a source with those bits by cloning it, and the clone
// copies with _copy_from again: an endless recursion. copy_from resolves the bits itself (as copy_ does for CPU and
// CUDA, which do not go through _copy_from), so these two ops pass through those keys.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
}

}  // namespace
}  // namespace torch_axon
