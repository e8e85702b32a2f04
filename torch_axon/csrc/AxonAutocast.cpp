// Autocast for axon: torch.autocast("axon", dtype=torch.bfloat16 or torch.float16) with CUDA's op policy lists,
// which PyTorch publishes as macros so that every backend can reuse them.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

// Inside at::autocast because PyTorch's registration macros name ATen types unqualified.
namespace at::autocast {
namespace {

// CUDA refuses binary_cross_entropy under autocast (PyTorch keeps that kernel private to autocast_mode.cpp): the same
// error, word for word.
Tensor binary_cross_entropy_banned(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

// Ops without a policy run as they are.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define AXON_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define AXON_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define AXON_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define AXON_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(AXON_LOWER_PRECISION_FP)
  AT_FORALL_FP32(AXON_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(AXON_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(AXON_PROMOTE)
  m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy_banned));
#undef AXON_LOWER_PRECISION_FP
#undef AXON_FP32
#undef AXON_FP32_SET_OPT_DTYPE
#undef AXON_PROMOTE
}

}  // namespace
}  // namespace at::autocast
