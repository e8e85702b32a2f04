// Copies between CPU and axon and between axon devices (_copy_from), and reading one element back (item()).
// The element-wise work (strides, broadcasting, dtype conversion) is libaxon's copy kernel; this file only picks the
// stream, the ordering between streams and whether the host must wait, with CUDA's semantics:
//   - device-to-device copies are asynchronous;
//   - host-to-device and device-to-host copies return only when the host memory may be reused, unless the host side
//     is pinned and non_blocking=True, in which case they are asynchronous and the pinned block is held for the stream.
#include <ATen/ATen.h>
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

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  const at::Tensor& src_in = self;
  TORCH_CHECK(dst.defined() && src_in.defined(), "copy_: undefined tensor");
  TORCH_CHECK(dst.device().type() == kAxon || src_in.device().type() == kAxon, "axon copy between ", src_in.device(),
              " and ", dst.device());
  TORCH_CHECK(src_in.device().type() == kAxon || src_in.is_cpu(), "axon cannot copy from ", src_in.device());
  TORCH_CHECK(dst.device().type() == kAxon || dst.is_cpu(), "axon cannot copy to ", dst.device());
  TORCH_CHECK(!dst.is_conj() && !dst.is_neg(), "copy_: axon destinations with conjugate or negative bits are not supported");
  if (dst.numel() == 0) return dst;

  at::Tensor src = src_in;
  if (src.is_conj() || src.is_neg()) src = src.resolve_conj().resolve_neg();
  if (src.sizes() != dst.sizes()) src = src.expand_as(dst);  // broadcasting: zero strides, read by the kernel

  const bool to_axon_dev = dst.device().type() == kAxon, from_axon_dev = src.device().type() == kAxon;
  // The stream that orders the copy: the destination's on the device side, else the source's.
  const c10::DeviceIndex index = to_axon_dev ? dst.device().index() : src.device().index();
  axon_stream_t stream = current_stream(index);
  if (to_axon_dev && from_axon_dev && src.device().index() != index) {
    axon_stream_t src_stream = current_stream(src.device().index());
    stream_wait_stream(stream, src_stream);
    // The source block must outlive this copy even if freed on its own stream meanwhile.
    AXON_CHECK(axon_mem_record_stream(device(src.device().index()), src.storage().mutable_data(), stream));
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
    const axon_tensor_t d = describe(dst, "copy_"), s = describe(src, "copy_");
    AXON_CHECK(axon_kernel_copy(stream, &d, &s));
  }
  if (async_host) {
    AXON_CHECK(axon_host_record_stream(runtime(), host.storage().mutable_data(), stream));
  } else if (host_involved) {
    AXON_CHECK(axon_stream_sync(stream));
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, /*non_blocking=*/false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  at::Tensor host = at::empty({}, self.options().device(c10::kCPU));
  copy_from(self, host, /*non_blocking=*/false);
  return host.item();
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
}

}  // namespace
}  // namespace torch_axon
