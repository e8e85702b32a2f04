// torch.linalg's factorizations and solves on libaxon's linear algebra (libaxon/include/axon/linalg.h): LU (factor,
// solve, unpack, inverse, det, slogdet, solve_ex), triangular solves, Cholesky (factor, solve, inverse), LDL, eig,
// eigh, SVD, QR (geqrf, householder_product, ormqr, linalg_qr), linalg.cross and linalg.matrix_exp.
//
// Each op first runs on meta tensors: ATen's meta functions check the arguments (with CPU's messages) and give the
// outputs' sizes and strides, so the glue holds no shape rules of its own (their results are cached: AxonMetaCache.h).
// libaxon wants batches of column-major matrices; operands are copied into that layout (the copy LAPACK needs anyway:
// it works in place), and results land in the strides the meta function chose. What libaxon does not take goes to the
// host: a build without MKL, other dtypes, more than AXON_MAX_DIMS dimensions, LU without pivoting, an SVD driver,
// out= tensors of another dtype.
// The errors that LAPACK's info reports are raised by ATen's own _linalg_check_errors.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <axon/linalg.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <initializer_list>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonMetaCache.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

using T2 = std::tuple<at::Tensor, at::Tensor>;
using T3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
using T4 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

bool linalg_dtype(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kComplexFloat || t == at::kComplexDouble;
}

// libaxon takes these operands: it has LAPACK, every one is a float or complex tensor of at most AXON_MAX_DIMS
// dimensions, and all are on the first one's device.
bool native(std::initializer_list<const at::Tensor*> ts) {
  if (!axon_linalg_available()) return false;
  const at::Tensor& first = **ts.begin();
  for (const at::Tensor* t : ts)
    if (!linalg_dtype(t->scalar_type()) || t->dim() > AXON_MAX_DIMS || t->device() != first.device()) return false;
  return true;
}

// An axon tensor with the sizes, strides and dtype of meta tensor m.
at::Tensor like_meta(const at::Tensor& m, const at::Tensor& ref) {
  return at::empty_strided(m.sizes(), m.strides(), m.options().device(ref.device()));
}

// A batch of column-major matrices (strides [..., rows * cols, 1, rows]), as LAPACK works on them.
at::Tensor cm_empty(at::IntArrayRef sizes, const at::TensorOptions& o) {
  std::vector<int64_t> t(sizes.begin(), sizes.end());
  std::swap(t[t.size() - 1], t[t.size() - 2]);
  return at::empty(t, o).mT();
}

// t (broadcast to `batch` first, when given) copied into a batch of column-major matrices; conj and neg bits
// resolved by the copy.
at::Tensor cm_copy(const at::Tensor& t, std::optional<at::IntArrayRef> batch = std::nullopt) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  if (batch) {
    sizes.assign(batch->begin(), batch->end());
    sizes.push_back(t.size(-2));
    sizes.push_back(t.size(-1));
  }
  at::Tensor r = cm_empty(sizes, t.options());
  r.copy_(batch ? t.expand(sizes) : t);
  return r;
}

// t in meta tensor m's strides: t itself when they match, else a copy.
at::Tensor in_layout(const at::Tensor& t, const at::Tensor& m) {
  if (t.strides() == m.strides()) return t;
  at::Tensor r = like_meta(m, t);
  r.copy_(t);
  return r;
}

// int32 pivots or infos, contiguous, broadcast to `sizes` when they are not already.
at::Tensor contiguous_int(const at::Tensor& t, at::IntArrayRef sizes) {
  return t.sizes() == sizes ? t.contiguous() : t.expand(sizes).contiguous();
}

// t as libaxon may read it: a batch of column-major matrices without a conj or neg bit.
bool plain_cm(const at::Tensor& t) { return t.mT().is_contiguous() && !t.is_conj() && !t.is_neg(); }

axon_stream_t stream_of(const at::Tensor& t) { return current_stream(t.device().index()); }

// ---- LU ----

// LU (column-major, a copy of A), pivots and info: the factorization into tensors shaped as meta's.
void lu_factor_into(const at::Tensor& A, const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& info) {
  LU.copy_(A);
  const axon_tensor_t a = describe(LU, "lu_factor"), p = describe(pivots, "lu_factor"), i = describe(info, "lu_factor");
  AXON_CHECK(axon_kernel_lu_factor(stream_of(A), &a, &p, &i));
}

T3 lu_factor_ex(const at::Tensor& A, bool pivot, bool check_errors) {
  if (!pivot || !native({&A})) return fall_back<ATEN_OP(linalg_lu_factor_ex)>(A, pivot, check_errors);
  auto [mLU, mpiv, minfo] = AXON_META(at::linalg_lu_factor_ex, A, pivot, false);
  at::Tensor LU = like_meta(mLU, A), pivots = like_meta(mpiv, A), info = like_meta(minfo, A);
  lu_factor_into(A, LU, pivots, info);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.lu_factor_ex", A.dim() == 2);
  return {LU, pivots, info};
}

// X with op(A) X = B (left) or X op(A) = B, op = adjoint or not, from A's LU; X column-major over the broadcast
// batch (left) or its transpose (right).
at::Tensor lu_solve_impl(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left,
                         bool adjoint) {
  const auto batch = at::infer_size(LU.sizes().slice(0, LU.dim() - 2), B.sizes().slice(0, B.dim() - 2));
  // X A = B is A^H X^H = B^H: solve for X^H with the other op, then take its conjugate transpose
  const at::Tensor rhs = left ? B : B.mH();
  at::Tensor X = cm_copy(rhs, batch);
  const at::Tensor lu = LU.sizes().slice(0, LU.dim() - 2) == at::IntArrayRef(batch) && plain_cm(LU)
                            ? LU
                            : cm_copy(LU, batch);
  std::vector<int64_t> psizes(batch.begin(), batch.end());
  psizes.push_back(pivots.size(-1));
  const at::Tensor piv = contiguous_int(pivots, psizes);
  const bool adj = left ? adjoint : !adjoint;
  const axon_linalg_op_t op = !adj ? AXON_LINALG_NOTRANS : LU.is_complex() ? AXON_LINALG_CONJTRANS : AXON_LINALG_TRANS;
  const axon_tensor_t l = describe(lu, "lu_solve"), p = describe(piv, "lu_solve"), x = describe(X, "lu_solve");
  AXON_CHECK(axon_kernel_lu_solve(stream_of(LU), &l, &p, &x, op));
  if (left) return X;
  if (X.is_complex()) at::conj_physical_out(X, X);
  return X.mT();
}

at::Tensor lu_solve(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left, bool adjoint) {
  if (!native({&LU, &B}) || pivots.device() != LU.device())
    return fall_back<ATEN_OP(linalg_lu_solve)>(LU, pivots, B, left, adjoint);
  const at::Tensor m = AXON_META(at::linalg_lu_solve, LU, pivots, B, left, adjoint);
  if (m.numel() == 0) return like_meta(m, LU);
  return in_layout(lu_solve_impl(LU, pivots, B, left, adjoint), m);
}

// P, L, U into tensors shaped as meta's (row-major); pass undefined tensors for the parts not wanted.
void lu_unpack_into(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& P, const at::Tensor& L,
                    const at::Tensor& U) {
  const at::Tensor lu = plain_cm(LU) ? LU : cm_copy(LU);
  const at::Tensor piv = pivots.contiguous();
  const axon_tensor_t l = describe(lu, "lu_unpack"), p = describe(piv, "lu_unpack");
  axon_tensor_t dp{}, dl{}, du{};
  if (P.defined()) dp = describe(P, "lu_unpack");
  if (L.defined()) dl = describe(L, "lu_unpack"), du = describe(U, "lu_unpack");
  AXON_CHECK(axon_kernel_lu_unpack(stream_of(LU), &l, &p, P.defined() ? &dp : nullptr, L.defined() ? &dl : nullptr,
                                   L.defined() ? &du : nullptr));
}

T3 unpack_lu(const at::Tensor& LU, const at::Tensor& pivots, bool unpack_data, bool unpack_pivots) {
  if (!native({&LU}) || pivots.device() != LU.device() || pivots.scalar_type() != at::kInt ||
      pivots.dim() != LU.dim() - 1 || pivots.sizes().slice(0, LU.dim() - 2) != LU.sizes().slice(0, LU.dim() - 2))
    return fall_back<ATEN_OP(lu_unpack)>(LU, pivots, unpack_data, unpack_pivots);
  auto [mP, mL, mU] = AXON_META(at::lu_unpack, LU, pivots, unpack_data, unpack_pivots);
  at::Tensor P = like_meta(mP, LU), L = like_meta(mL, LU), U = like_meta(mU, LU);
  if (LU.numel() > 0 && (unpack_data || unpack_pivots)) {
    lu_unpack_into(LU, pivots, unpack_pivots ? P : at::Tensor(), unpack_data ? L : at::Tensor(),
                   unpack_data ? U : at::Tensor());
  } else if (unpack_pivots && P.numel() > 0) {
    P.zero_().diagonal(0, -2, -1).fill_(1);   // no rows were swapped in an empty factorization
  }
  return {P, L, U};
}

T3 plu(const at::Tensor& A, bool pivot) {
  if (!pivot || !native({&A})) return fall_back<ATEN_OP(linalg_lu)>(A, pivot);
  auto [mP, mL, mU] = AXON_META(at::linalg_lu, A, pivot);
  auto [mLU, mpiv, minfo] = AXON_META(at::linalg_lu_factor_ex, A, pivot, false);
  at::Tensor P = like_meta(mP, A), L = like_meta(mL, A), U = like_meta(mU, A);
  if (A.numel() == 0) {
    if (P.numel() > 0) P.zero_().diagonal(0, -2, -1).fill_(1);
    return {P, L, U};
  }
  at::Tensor LU = like_meta(mLU, A), pivots = like_meta(mpiv, A), info = like_meta(minfo, A);
  lu_factor_into(A, LU, pivots, info);
  lu_unpack_into(LU, pivots, P, L, U);
  return {P, L, U};
}

// As ATen's CPU kernels, det and slogdet factor A^T when A is a contiguous real matrix (det A^T = det A, and A^T's
// rows are the columns LAPACK wants); their backward formulas read the LU with that convention.
bool factor_transpose(const at::Tensor& A) { return A.is_contiguous() && !A.is_complex(); }

// linalg.solve's vector case: B is a vector, or a batch of vectors (A's shape without its last dimension).
bool vector_rhs(const at::Tensor& A, const at::Tensor& B) {
  return B.dim() == 1 || (A.dim() - 1 == B.dim() && B.sizes() == A.sizes().slice(0, A.dim() - 1));
}

T4 solve_ex(const at::Tensor& A, const at::Tensor& B, bool left, bool check_errors) {
  if (!native({&A, &B})) return fall_back<ATEN_OP(_linalg_solve_ex)>(A, B, left, check_errors);
  auto [mX, mLU, mpiv, minfo] = AXON_META(at::_linalg_solve_ex, A, B, left, false);
  at::Tensor LU = like_meta(mLU, A), pivots = like_meta(mpiv, A), info = like_meta(minfo, A);
  lu_factor_into(A, LU, pivots, info);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.solve_ex", A.dim() == 2);
  at::Tensor X;
  if (mX.numel() == 0) {
    X = like_meta(mX, A);
  } else {
    const bool vec = vector_rhs(A, B);
    X = lu_solve_impl(LU, pivots, vec ? B.unsqueeze(-1) : B, left, false);
    X = in_layout(vec ? X.squeeze(-1) : X, mX);
  }
  return {X, LU, pivots, info};
}

T2 inv_ex(const at::Tensor& A, bool check_errors) {
  if (!native({&A})) return fall_back<ATEN_OP(linalg_inv_ex)>(A, check_errors);
  auto [mI, minfo] = AXON_META(at::linalg_inv_ex, A, false);
  at::Tensor inv = like_meta(mI, A), info = like_meta(minfo, A);
  inv.copy_(A);
  if (A.numel() > 0) {
    const axon_tensor_t a = describe(inv, "inverse"), i = describe(info, "inverse");
    AXON_CHECK(axon_kernel_inverse(stream_of(A), &a, &i));
  } else {
    info.zero_();
  }
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.inv_ex", A.dim() == 2);
  return {inv, info};
}

// det (logabsdet undefined) or sign and logabsdet from an LU.
void lu_det_into(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& det, const at::Tensor& logabsdet) {
  const at::Tensor d = det.contiguous(), la = logabsdet.defined() ? logabsdet.contiguous() : at::Tensor();
  const axon_tensor_t l = describe(LU, "det"), p = describe(pivots, "det"), dd = describe(d, "det");
  axon_tensor_t dl{};
  if (la.defined()) dl = describe(la, "det");
  AXON_CHECK(axon_kernel_lu_det(stream_of(LU), &l, &p, &dd, la.defined() ? &dl : nullptr));
  if (!d.is_same(det)) det.copy_(d);
  if (la.defined() && !la.is_same(logabsdet)) logabsdet.copy_(la);
}

T3 det_of(const at::Tensor& A) {
  if (!native({&A})) return fall_back<ATEN_OP(_linalg_det)>(A);
  auto [md, mLU, mpiv] = AXON_META(at::_linalg_det, A);
  at::Tensor d = like_meta(md, A), LU = like_meta(mLU, A), pivots = like_meta(mpiv, A);
  at::Tensor info = at::empty(d.sizes(), A.options().dtype(at::kInt));
  lu_factor_into(factor_transpose(A) ? A.mT() : A, LU, pivots, info);
  lu_det_into(LU, pivots, d, at::Tensor());
  return {d, LU, pivots};
}

T4 slogdet_of(const at::Tensor& A) {
  if (!native({&A})) return fall_back<ATEN_OP(_linalg_slogdet)>(A);
  auto [ms, ml, mLU, mpiv] = AXON_META(at::_linalg_slogdet, A);
  at::Tensor sign = like_meta(ms, A), logabs = like_meta(ml, A), LU = like_meta(mLU, A), pivots = like_meta(mpiv, A);
  at::Tensor info = at::empty(sign.sizes(), A.options().dtype(at::kInt));
  lu_factor_into(factor_transpose(A) ? A.mT() : A, LU, pivots, info);
  lu_det_into(LU, pivots, sign, logabs);
  return {sign, logabs, LU, pivots};
}

// ---- triangular solves ----

// X with op(A) X = B (left) or X op(A) = B, A triangular, broadcast over the batch; X column-major.
at::Tensor triangular_impl(const at::Tensor& A, const at::Tensor& B, bool upper, bool left, bool unit,
                           axon_linalg_op_t op, at::Tensor* cloned_a = nullptr) {
  const auto batch = at::infer_size(A.sizes().slice(0, A.dim() - 2), B.sizes().slice(0, B.dim() - 2));
  at::Tensor X = cm_copy(B, batch), a;
  if (!cloned_a && op != AXON_LINALG_CONJTRANS && A.sizes().slice(0, A.dim() - 2) == at::IntArrayRef(batch) &&
      plain_cm(A.mT())) {
    // a row-major A is A^T column-major: solve with the transposed op and the other triangle, without a copy
    a = A.mT();
    upper = !upper;
    op = op == AXON_LINALG_NOTRANS ? AXON_LINALG_TRANS : AXON_LINALG_NOTRANS;
  } else {
    a = cm_copy(A, batch);
  }
  const axon_tensor_t da = describe(a, "triangular_solve"), db = describe(X, "triangular_solve");
  AXON_CHECK(axon_kernel_triangular_solve(stream_of(A), &da, &db, upper, left, unit, op));
  if (cloned_a) *cloned_a = a;
  return X;
}

at::Tensor solve_triangular(const at::Tensor& A, const at::Tensor& B, bool upper, bool left, bool unitriangular) {
  if (!native({&A, &B})) return fall_back<ATEN_OP(linalg_solve_triangular)>(A, B, upper, left, unitriangular);
  const at::Tensor m = AXON_META(at::linalg_solve_triangular, A, B, upper, left, unitriangular);
  if (m.numel() == 0) return like_meta(m, A);
  return in_layout(triangular_impl(A, B, upper, left, unitriangular, AXON_LINALG_NOTRANS), m);
}

T2 triangular_solve_legacy(const at::Tensor& B, const at::Tensor& A, bool upper, bool transpose, bool unitriangular) {
  if (!native({&B, &A})) return fall_back<ATEN_OP(triangular_solve)>(B, A, upper, transpose, unitriangular);
  auto [mX, mM] = AXON_META(at::triangular_solve, B, A, upper, transpose, unitriangular);
  if (mX.numel() == 0 || mM.numel() == 0) {
    at::Tensor X = like_meta(mX, B), M = like_meta(mM, B);
    M.copy_(A.expand(M.sizes()));
    return {X, M};
  }
  at::Tensor M;
  at::Tensor X = triangular_impl(A, B, upper, true, unitriangular,
                                 transpose ? AXON_LINALG_TRANS : AXON_LINALG_NOTRANS, &M);
  return {in_layout(X, mX), in_layout(M, mM)};
}

// ---- Cholesky ----

// The factor of A (lower or upper) into F (A's shape, column-major) and info.
void cholesky_into(const at::Tensor& A, const at::Tensor& F, const at::Tensor& info, bool upper) {
  F.copy_(A);
  if (A.numel() == 0) return void(info.zero_());
  const axon_tensor_t f = describe(F, "cholesky"), i = describe(info, "cholesky");
  AXON_CHECK(axon_kernel_cholesky(stream_of(A), &f, upper, &i));
}

T2 cholesky_ex(const at::Tensor& A, bool upper, bool check_errors) {
  if (!native({&A})) return fall_back<ATEN_OP(linalg_cholesky_ex)>(A, upper, check_errors);
  auto [mL, minfo] = AXON_META(at::linalg_cholesky_ex, A, upper, false);
  at::Tensor L = like_meta(mL, A), info = like_meta(minfo, A);
  cholesky_into(A, L, info, upper);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.cholesky_ex", A.dim() == 2);
  return {L, info};
}

at::Tensor cholesky_legacy(const at::Tensor& A, bool upper) {
  if (!native({&A})) return fall_back<ATEN_OP(cholesky)>(A, upper);
  const at::Tensor m = AXON_META(at::cholesky, A, upper);
  at::Tensor F = cm_empty(A.sizes(), A.options());
  at::Tensor info = at::empty(A.sizes().slice(0, A.dim() - 2), A.options().dtype(at::kInt));
  cholesky_into(A, F, info, upper);
  at::_linalg_check_errors(info, "cholesky", A.dim() == 2);
  return in_layout(F, m);
}

at::Tensor cholesky_solve_helper(const at::Tensor& B, const at::Tensor& F, bool upper) {
  if (!native({&B, &F})) return fall_back<ATEN_OP(_cholesky_solve_helper)>(B, F, upper);
  const at::Tensor m = AXON_META(at::_cholesky_solve_helper, B, F, upper);
  if (m.numel() == 0) return like_meta(m, B);
  const auto batch = at::infer_size(F.sizes().slice(0, F.dim() - 2), B.sizes().slice(0, B.dim() - 2));
  at::Tensor X = cm_copy(B, batch), f = cm_copy(F, batch);
  const axon_tensor_t df = describe(f, "cholesky_solve"), dx = describe(X, "cholesky_solve");
  AXON_CHECK(axon_kernel_cholesky_solve(stream_of(B), &df, &dx, upper));
  return in_layout(X, m);
}

at::Tensor inverse_from_cholesky(const at::Tensor& F, bool upper) {
  if (!native({&F})) return fall_back<ATEN_OP(cholesky_inverse)>(F, upper);
  const at::Tensor m = AXON_META(at::cholesky_inverse, F, upper);
  if (F.numel() == 0) return like_meta(m, F);
  at::Tensor R = cm_copy(F);
  at::Tensor info = at::empty(F.sizes().slice(0, F.dim() - 2), F.options().dtype(at::kInt));
  const axon_tensor_t r = describe(R, "cholesky_inverse"), i = describe(info, "cholesky_inverse");
  AXON_CHECK(axon_kernel_cholesky_inverse(stream_of(F), &r, upper, &i));
  at::_linalg_check_errors(info, "cholesky_inverse", F.dim() == 2);
  return in_layout(R, m);
}

// ---- eig ----

// Eigenvalues into w and, when V is defined, eigenvectors into V (column-major): LAPACK's geev on a copy of A.
void eig_into(const at::Tensor& A, const at::Tensor& w, const at::Tensor& V) {
  // as on CPU, where LAPACK would be handed a NaN (and PyTorch's own eigvals crashes in MKL)
  TORCH_CHECK(at::isfinite(A).all().item<bool>(), "torch.linalg.eig: input tensor should not contain infs or NaNs.");
  at::Tensor work = cm_copy(A), wc = w.contiguous();
  at::Tensor info = at::empty(A.sizes().slice(0, A.dim() - 2), A.options().dtype(at::kInt));
  const axon_tensor_t da = describe(work, "eig"), dw = describe(wc, "eig"), di = describe(info, "eig");
  axon_tensor_t dv{};
  if (V.defined()) dv = describe(V, "eig");
  AXON_CHECK(axon_kernel_eig(stream_of(A), &da, &dw, V.defined() ? &dv : nullptr, &di));
  at::_linalg_check_errors(info, "linalg.eig", A.dim() == 2);
  if (!wc.is_same(w)) w.copy_(wc);
}

T2 eig(const at::Tensor& A) {
  if (!native({&A})) return fall_back<ATEN_OP(linalg_eig)>(A);
  auto [mw, mv] = AXON_META(at::linalg_eig, A);
  // eigenvectors column-major, as LAPACK writes them and CPU returns them (the meta function says row-major)
  at::Tensor w = like_meta(mw, A), V = cm_empty(mv.sizes(), A.options().dtype(mv.scalar_type()));
  if (A.numel() > 0) eig_into(A, w, V);
  return {w, V};
}

at::Tensor eigvals(const at::Tensor& A) {
  if (!native({&A})) return fall_back<ATEN_OP(_linalg_eigvals)>(A);
  auto [mw, mv] = AXON_META(at::linalg_eig, A);
  at::Tensor w = like_meta(mw, A);
  if (A.numel() > 0) eig_into(A, w, at::Tensor());
  return w;
}

// ---- LDL ----

T3 ldl_factor_ex(const at::Tensor& A, bool hermitian, bool check_errors) {
  if (!native({&A})) return fall_back<ATEN_OP(linalg_ldl_factor_ex)>(A, hermitian, check_errors);
  auto [mLD, mpiv, minfo] = AXON_META(at::linalg_ldl_factor_ex, A, hermitian, false);
  at::Tensor LD = like_meta(mLD, A), pivots = like_meta(mpiv, A), info = like_meta(minfo, A);
  LD.copy_(A);
  if (A.numel() > 0) {
    const axon_tensor_t a = describe(LD, "ldl_factor"), p = describe(pivots, "ldl_factor"),
                        i = describe(info, "ldl_factor");
    AXON_CHECK(axon_kernel_ldl_factor(stream_of(A), &a, &p, hermitian, &i));
  } else {
    info.zero_();
  }
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.ldl_factor_ex", A.dim() == 2);
  return {LD, pivots, info};
}

at::Tensor ldl_solve(const at::Tensor& LD, const at::Tensor& pivots, const at::Tensor& B, bool hermitian) {
  if (!native({&LD, &B}) || pivots.device() != LD.device())
    return fall_back<ATEN_OP(linalg_ldl_solve)>(LD, pivots, B, hermitian);
  const at::Tensor m = AXON_META(at::linalg_ldl_solve, LD, pivots, B, hermitian);
  if (m.numel() == 0) return like_meta(m, LD);
  const auto batch = at::infer_size(LD.sizes().slice(0, LD.dim() - 2), B.sizes().slice(0, B.dim() - 2));
  at::Tensor X = cm_copy(B, batch);
  const at::Tensor ld = LD.sizes().slice(0, LD.dim() - 2) == at::IntArrayRef(batch) && plain_cm(LD)
                            ? LD
                            : cm_copy(LD, batch);
  std::vector<int64_t> psizes(batch.begin(), batch.end());
  psizes.push_back(pivots.size(-1));
  const at::Tensor piv = contiguous_int(pivots, psizes);
  const axon_tensor_t l = describe(ld, "ldl_solve"), p = describe(piv, "ldl_solve"), x = describe(X, "ldl_solve");
  AXON_CHECK(axon_kernel_ldl_solve(stream_of(LD), &l, &p, &x, hermitian));
  return in_layout(X, m);
}

// ---- eigh, SVD ----

T2 eigh(const at::Tensor& A, c10::string_view uplo, bool compute_v) {
  if (!native({&A})) return fall_back<ATEN_OP(_linalg_eigh)>(A, uplo, compute_v);
  auto [mw, mv] = AXON_META(at::_linalg_eigh, A, uplo, compute_v);
  at::Tensor w = like_meta(mw, A), V = like_meta(mv, A);
  if (A.numel() == 0) return {w, V};
  const bool upper = uplo == "U" || uplo == "u";
  at::Tensor work = compute_v && V.mT().is_contiguous() ? V : cm_empty(A.sizes(), A.options());
  work.copy_(A);
  at::Tensor wc = w.contiguous();
  at::Tensor info = at::empty(w.sizes().slice(0, w.dim() - 1), A.options().dtype(at::kInt));
  const axon_tensor_t da = describe(work, "eigh"), dw = describe(wc, "eigh"), di = describe(info, "eigh");
  AXON_CHECK(axon_kernel_eigh(stream_of(A), &da, &dw, upper, compute_v, &di));
  at::_linalg_check_errors(info, "linalg.eigh", A.dim() == 2);
  if (!wc.is_same(w)) w.copy_(wc);
  if (compute_v && !work.is_same(V)) V.copy_(work);
  return {w, V};
}

T3 svd(const at::Tensor& A, bool full_matrices, bool compute_uv, std::optional<c10::string_view> driver) {
  if (!native({&A}) || driver.has_value())
    return fall_back<ATEN_OP(_linalg_svd)>(A, full_matrices, compute_uv, driver);
  auto [mU, mS, mVh] = AXON_META(at::_linalg_svd, A, full_matrices, compute_uv, driver);
  // Vh column-major, as LAPACK writes it and as CPU returns it (torch 2.13's meta function says row-major)
  at::Tensor U = like_meta(mU, A), S = like_meta(mS, A);
  at::Tensor Vh = compute_uv ? cm_empty(mVh.sizes(), A.options()) : like_meta(mVh, A);
  if (A.numel() == 0) {   // identities are a full SVD of an empty matrix
    if (compute_uv && full_matrices && U.numel() > 0) U.zero_().diagonal(0, -2, -1).fill_(1);
    if (compute_uv && full_matrices && Vh.numel() > 0) Vh.zero_().diagonal(0, -2, -1).fill_(1);
    return {U, S, Vh};
  }
  at::Tensor work = cm_copy(A);
  at::Tensor Sc = S.contiguous();
  at::Tensor info = at::empty(S.sizes().slice(0, S.dim() - 1), A.options().dtype(at::kInt));
  at::Tensor Uc, Vc;
  const axon_tensor_t da = describe(work, "svd"), ds = describe(Sc, "svd"), di = describe(info, "svd");
  axon_tensor_t du{}, dv{};
  if (compute_uv) {
    Uc = U.mT().is_contiguous() ? U : cm_empty(U.sizes(), U.options());
    Vc = Vh.mT().is_contiguous() ? Vh : cm_empty(Vh.sizes(), Vh.options());
    du = describe(Uc, "svd"), dv = describe(Vc, "svd");
  }
  AXON_CHECK(axon_kernel_svd(stream_of(A), &da, compute_uv ? &du : nullptr, &ds, compute_uv ? &dv : nullptr,
                             full_matrices, &di));
  at::_linalg_check_errors(info, "linalg.svd", A.dim() == 2);
  if (!Sc.is_same(S)) S.copy_(Sc);
  if (compute_uv && !Uc.is_same(U)) U.copy_(Uc);
  if (compute_uv && !Vc.is_same(Vh)) Vh.copy_(Vc);
  return {U, S, Vh};
}

// ---- QR ----

// geqrf in place on a column-major a; tau [batch..., min(m, n)].
at::Tensor geqrf_into(const at::Tensor& a) {
  std::vector<int64_t> ts(a.sizes().begin(), a.sizes().end() - 2);
  ts.push_back(std::min(a.size(-2), a.size(-1)));
  at::Tensor tau = at::empty(ts, a.options());
  const axon_tensor_t da = describe(a, "geqrf"), dt = describe(tau, "geqrf");
  AXON_CHECK(axon_kernel_geqrf(stream_of(a), &da, &dt));
  return tau;
}

// Q in place on a column-major q (the reflectors below its diagonal).
void householder_into(const at::Tensor& q, const at::Tensor& tau) {
  const at::Tensor t = tau.contiguous();
  const axon_tensor_t dq = describe(q, "householder_product"), dt = describe(t, "householder_product");
  AXON_CHECK(axon_kernel_householder_product(stream_of(q), &dq, &dt));
}

T2 qr_reflectors(const at::Tensor& A) {
  if (!native({&A}) || A.dim() < 2) return fall_back<ATEN_OP(geqrf)>(A);
  at::Tensor a = cm_copy(A);
  if (A.numel() == 0) {
    std::vector<int64_t> ts(A.sizes().begin(), A.sizes().end() - 2);
    ts.push_back(std::min(A.size(-2), A.size(-1)));
    return {a, at::empty(ts, A.options())};
  }
  at::Tensor tau = geqrf_into(a);
  return {a, tau};
}

at::Tensor householder_product(const at::Tensor& input, const at::Tensor& tau) {
  if (!native({&input, &tau})) return fall_back<ATEN_OP(linalg_householder_product)>(input, tau);
  const at::Tensor m = AXON_META(at::linalg_householder_product, input, tau);
  at::Tensor q = cm_copy(input);
  if (q.numel() > 0) householder_into(q, tau);
  return in_layout(q, m);
}

// ormqr: C multiplied by the reflectors' product Q (or its adjoint), from the left or the right.
at::Tensor apply_reflectors(const at::Tensor& A, const at::Tensor& tau, const at::Tensor& C, bool left,
                            bool transpose) {
  if (!native({&A, &tau, &C})) return fall_back<ATEN_OP(ormqr)>(A, tau, C, left, transpose);
  const at::Tensor m = AXON_META(at::ormqr, A, tau, C, left, transpose);
  if (m.numel() == 0) return like_meta(m, C);
  at::Tensor c = cm_copy(C);
  const at::Tensor a = plain_cm(A) ? A : cm_copy(A), t = tau.resolve_conj().contiguous();
  const axon_linalg_op_t op = !transpose ? AXON_LINALG_NOTRANS : A.is_complex() ? AXON_LINALG_CONJTRANS
                                                                                  : AXON_LINALG_TRANS;
  const axon_tensor_t da = describe(a, "ormqr"), dt = describe(t, "ormqr"), dc = describe(c, "ormqr");
  AXON_CHECK(axon_kernel_ormqr(stream_of(A), &da, &dt, &dc, left, op));
  return in_layout(c, m);
}

// linalg_matrix_exp on a column-major copy. bfloat16 and float16 stay on the host: CPU computes them in their own
// precision, where large norms overflow to NaN; libaxon's float64 result would round to infinities instead.
at::Tensor matrix_exp(const at::Tensor& A) {
  if (!native({&A})) return fall_back<ATEN_OP(linalg_matrix_exp)>(A);
  const at::Tensor m = AXON_META(at::linalg_matrix_exp, A);
  at::Tensor r = cm_copy(A);
  if (r.numel() > 0) {
    const axon_tensor_t d = describe(r, "matrix_exp");
    AXON_CHECK(axon_kernel_matrix_exp(stream_of(A), &d));
  }
  return in_layout(r, m);
}

T2 qr(const at::Tensor& A, c10::string_view mode) {
  if (!native({&A})) return fall_back<ATEN_OP(linalg_qr)>(A, mode);
  auto [mQ, mR] = AXON_META(at::linalg_qr, A, mode);
  at::Tensor Q = like_meta(mQ, A), R = like_meta(mR, A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const bool complete = mode == "complete", want_q = mode != "r";
  if (A.numel() == 0) {
    R.zero_();
    if (want_q && Q.numel() > 0) Q.zero_().diagonal(0, -2, -1).fill_(1);
    return {Q, R};
  }
  at::Tensor a = cm_copy(A);
  at::Tensor tau = geqrf_into(a);
  R.copy_(a.narrow(-2, 0, R.size(-2)).triu());
  if (!want_q) return {Q, R};
  const int64_t qcols = complete ? m : k;
  at::Tensor q;
  if (qcols == n) {
    q = a;                               // the reflectors fill a exactly
  } else {
    std::vector<int64_t> qs(A.sizes().begin(), A.sizes().end());
    qs.back() = qcols;
    q = cm_empty(qs, A.options());
    if (qcols < n) {
      q.copy_(a.narrow(-1, 0, qcols));
    } else {                             // complete with m > n: the reflectors, then columns orgqr overwrites
      q.narrow(-1, 0, n).copy_(a);
      q.narrow(-1, n, qcols - n).zero_();
    }
  }
  householder_into(q, tau);
  Q.copy_(q);
  return {Q, R};
}

// ---- cross product ----

at::Tensor& cross_out(const at::Tensor& a, const at::Tensor& b, int64_t dim, at::Tensor& out) {
  const auto t = a.scalar_type();
  if (!kernels_support(t) || t == at::kBool || b.scalar_type() != t || out.scalar_type() != t ||
      b.device() != a.device() || out.device() != a.device() || std::max(a.dim(), b.dim()) > AXON_MAX_DIMS)
    return fall_back<ATEN_OP2(linalg_cross, out)>(a, b, dim, out);
  const at::Tensor m = AXON_META(at::linalg_cross, a, b, dim);
  const int64_t d = c10::maybe_wrap_dim(dim, m.dim());
  at::native::resize_output(out, m.sizes());
  if (m.numel() == 0) return out;
  const bool direct = out.is_contiguous() && !out.is_alias_of(a) && !out.is_alias_of(b);
  at::Tensor o = direct ? out : at::empty(m.sizes(), a.options());
  const at::Tensor x = a.resolve_conj().resolve_neg().expand(m.sizes());
  const at::Tensor y = b.resolve_conj().resolve_neg().expand(m.sizes());
  const axon_tensor_t dout = describe(o, "cross"), da = describe(x, "cross"), db = describe(y, "cross");
  AXON_CHECK(axon_kernel_cross(stream_of(a), &dout, &da, &db, static_cast<int>(d)));
  if (!direct) out.copy_(o);
  return out;
}

at::Tensor cross(const at::Tensor& a, const at::Tensor& b, int64_t dim) {
  at::Tensor out = at::empty({0}, a.options());
  return cross_out(a, b, dim, out);
}

// ---- out= variants: the functional result copied into the outs, or the host when a dtype differs ----

// As ATen's structured out= kernels: an out that had to be resized takes the result's strides.
void write_out(const at::Tensor& out, const at::Tensor& result) {
  if (at::native::resize_output(out, result.sizes())) out.as_strided_(result.sizes(), result.strides());
  out.copy_(result);
}

// Whether the outs can take results of these dtypes; the meta result tells the dtypes without computing.
template <class... Outs>
bool outs_take(const std::vector<c10::ScalarType>& dtypes, const Outs&... outs) {
  size_t i = 0;
  bool ok = true;
  ((ok = ok && outs.scalar_type() == dtypes[i++]), ...);
  return ok;
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> lu_factor_ex_out(const at::Tensor& A, bool pivot, bool check_errors,
                                                                   at::Tensor& LU, at::Tensor& pivots,
                                                                   at::Tensor& info) {
  if (!native({&A}) || !outs_take({A.scalar_type(), at::kInt, at::kInt}, LU, pivots, info))
    return fall_back<ATEN_OP2(linalg_lu_factor_ex, out)>(A, pivot, check_errors, LU, pivots, info);
  auto [a, b, c] = lu_factor_ex(A, pivot, check_errors);
  write_out(LU, a), write_out(pivots, b), write_out(info, c);
  return {LU, pivots, info};
}

at::Tensor& lu_solve_out(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left, bool adjoint,
                         at::Tensor& out) {
  if (!native({&LU, &B}) || !outs_take({LU.scalar_type()}, out))
    return fall_back<ATEN_OP2(linalg_lu_solve, out)>(LU, pivots, B, left, adjoint, out);
  write_out(out, lu_solve(LU, pivots, B, left, adjoint));
  return out;
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> lu_unpack_out(const at::Tensor& LU, const at::Tensor& pivots,
                                                                bool unpack_data, bool unpack_pivots, at::Tensor& P,
                                                                at::Tensor& L, at::Tensor& U) {
  const auto t = LU.scalar_type();
  if (!native({&LU}) || !outs_take({t, t, t}, P, L, U))
    return fall_back<ATEN_OP2(lu_unpack, out)>(LU, pivots, unpack_data, unpack_pivots, P, L, U);
  auto [p, l, u] = unpack_lu(LU, pivots, unpack_data, unpack_pivots);
  write_out(P, p), write_out(L, l), write_out(U, u);
  return {P, L, U};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> linalg_lu_out(const at::Tensor& A, bool pivot, at::Tensor& P,
                                                                at::Tensor& L, at::Tensor& U) {
  const auto t = A.scalar_type();
  if (!native({&A}) || !outs_take({t, t, t}, P, L, U)) return fall_back<ATEN_OP2(linalg_lu, out)>(A, pivot, P, L, U);
  auto [p, l, u] = plu(A, pivot);
  write_out(P, p), write_out(L, l), write_out(U, u);
  return {P, L, U};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> solve_ex_out(const at::Tensor& A, const at::Tensor& B,
                                                                            bool left, bool check_errors,
                                                                            at::Tensor& X, at::Tensor& LU,
                                                                            at::Tensor& pivots, at::Tensor& info) {
  const auto t = A.scalar_type();
  if (!native({&A, &B}) || !outs_take({t, t, at::kInt, at::kInt}, X, LU, pivots, info))
    return fall_back<ATEN_OP2(_linalg_solve_ex, result)>(A, B, left, check_errors, X, LU, pivots, info);
  auto [x, lu, p, i] = solve_ex(A, B, left, check_errors);
  write_out(X, x), write_out(LU, lu), write_out(pivots, p), write_out(info, i);
  return {X, LU, pivots, info};
}

std::tuple<at::Tensor&, at::Tensor&> inv_ex_out(const at::Tensor& A, bool check_errors, at::Tensor& inv,
                                                at::Tensor& info) {
  if (!native({&A}) || !outs_take({A.scalar_type(), at::kInt}, inv, info))
    return fall_back<ATEN_OP2(linalg_inv_ex, inverse)>(A, check_errors, inv, info);
  auto [x, i] = inv_ex(A, check_errors);
  write_out(inv, x), write_out(info, i);
  return {inv, info};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> det_out(const at::Tensor& A, at::Tensor& d, at::Tensor& LU,
                                                          at::Tensor& pivots) {
  const auto t = A.scalar_type();
  if (!native({&A}) || !outs_take({t, t, at::kInt}, d, LU, pivots))
    return fall_back<ATEN_OP2(_linalg_det, result)>(A, d, LU, pivots);
  auto [x, lu, p] = det_of(A);
  write_out(d, x), write_out(LU, lu), write_out(pivots, p);
  return {d, LU, pivots};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> slogdet_out(const at::Tensor& A, at::Tensor& sign,
                                                                           at::Tensor& logabs, at::Tensor& LU,
                                                                           at::Tensor& pivots) {
  const auto t = A.scalar_type();
  if (!native({&A}) || !outs_take({t, c10::toRealValueType(t), t, at::kInt}, sign, logabs, LU, pivots))
    return fall_back<ATEN_OP2(_linalg_slogdet, sign)>(A, sign, logabs, LU, pivots);
  auto [s, l, lu, p] = slogdet_of(A);
  write_out(sign, s), write_out(logabs, l), write_out(LU, lu), write_out(pivots, p);
  return {sign, logabs, LU, pivots};
}

at::Tensor& solve_triangular_out(const at::Tensor& A, const at::Tensor& B, bool upper, bool left, bool unitriangular,
                                 at::Tensor& out) {
  if (!native({&A, &B}) || !outs_take({A.scalar_type()}, out))
    return fall_back<ATEN_OP2(linalg_solve_triangular, out)>(A, B, upper, left, unitriangular, out);
  write_out(out, solve_triangular(A, B, upper, left, unitriangular));
  return out;
}

std::tuple<at::Tensor&, at::Tensor&> triangular_solve_out(const at::Tensor& B, const at::Tensor& A, bool upper,
                                                          bool transpose, bool unitriangular, at::Tensor& X,
                                                          at::Tensor& M) {
  const auto t = B.scalar_type();
  if (!native({&B, &A}) || !outs_take({t, t}, X, M))
    return fall_back<ATEN_OP2(triangular_solve, X)>(B, A, upper, transpose, unitriangular, X, M);
  auto [x, m] = triangular_solve_legacy(B, A, upper, transpose, unitriangular);
  write_out(X, x), write_out(M, m);
  return {X, M};
}

std::tuple<at::Tensor&, at::Tensor&> cholesky_ex_out(const at::Tensor& A, bool upper, bool check_errors, at::Tensor& L,
                                                     at::Tensor& info) {
  if (!native({&A}) || !outs_take({A.scalar_type(), at::kInt}, L, info))
    return fall_back<ATEN_OP2(linalg_cholesky_ex, L)>(A, upper, check_errors, L, info);
  auto [l, i] = cholesky_ex(A, upper, check_errors);
  write_out(L, l), write_out(info, i);
  return {L, info};
}

at::Tensor& cholesky_out(const at::Tensor& A, bool upper, at::Tensor& out) {
  if (!native({&A}) || !outs_take({A.scalar_type()}, out)) return fall_back<ATEN_OP2(cholesky, out)>(A, upper, out);
  write_out(out, cholesky_legacy(A, upper));
  return out;
}

at::Tensor& cholesky_solve_helper_out(const at::Tensor& B, const at::Tensor& F, bool upper, at::Tensor& out) {
  if (!native({&B, &F}) || !outs_take({B.scalar_type()}, out))
    return fall_back<ATEN_OP2(_cholesky_solve_helper, out)>(B, F, upper, out);
  write_out(out, cholesky_solve_helper(B, F, upper));
  return out;
}

at::Tensor& cholesky_inverse_out(const at::Tensor& F, bool upper, at::Tensor& out) {
  if (!native({&F}) || !outs_take({F.scalar_type()}, out))
    return fall_back<ATEN_OP2(cholesky_inverse, out)>(F, upper, out);
  write_out(out, inverse_from_cholesky(F, upper));
  return out;
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> ldl_factor_ex_out(const at::Tensor& A, bool hermitian,
                                                                    bool check_errors, at::Tensor& LD,
                                                                    at::Tensor& pivots, at::Tensor& info) {
  if (!native({&A}) || !outs_take({A.scalar_type(), at::kInt, at::kInt}, LD, pivots, info))
    return fall_back<ATEN_OP2(linalg_ldl_factor_ex, out)>(A, hermitian, check_errors, LD, pivots, info);
  auto [a, b, c] = ldl_factor_ex(A, hermitian, check_errors);
  write_out(LD, a), write_out(pivots, b), write_out(info, c);
  return {LD, pivots, info};
}

at::Tensor& ldl_solve_out(const at::Tensor& LD, const at::Tensor& pivots, const at::Tensor& B, bool hermitian,
                          at::Tensor& out) {
  if (!native({&LD, &B}) || !outs_take({LD.scalar_type()}, out))
    return fall_back<ATEN_OP2(linalg_ldl_solve, out)>(LD, pivots, B, hermitian, out);
  write_out(out, ldl_solve(LD, pivots, B, hermitian));
  return out;
}

std::tuple<at::Tensor&, at::Tensor&> eig_out(const at::Tensor& A, at::Tensor& w, at::Tensor& V) {
  const auto c = c10::toComplexType(A.scalar_type());
  if (!native({&A}) || !outs_take({c, c}, w, V)) return fall_back<ATEN_OP2(linalg_eig, out)>(A, w, V);
  auto [a, b] = eig(A);
  write_out(w, a), write_out(V, b);
  return {w, V};
}

std::tuple<at::Tensor&, at::Tensor&> eigh_out(const at::Tensor& A, c10::string_view uplo, bool compute_v,
                                              at::Tensor& w, at::Tensor& V) {
  const auto t = A.scalar_type();
  if (!native({&A}) || !outs_take({c10::toRealValueType(t), t}, w, V))
    return fall_back<ATEN_OP2(_linalg_eigh, eigenvalues)>(A, uplo, compute_v, w, V);
  auto [a, b] = eigh(A, uplo, compute_v);
  write_out(w, a), write_out(V, b);
  return {w, V};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> svd_out(const at::Tensor& A, bool full_matrices, bool compute_uv,
                                                          std::optional<c10::string_view> driver, at::Tensor& U,
                                                          at::Tensor& S, at::Tensor& Vh) {
  const auto t = A.scalar_type();
  if (!native({&A}) || driver.has_value() || !outs_take({t, c10::toRealValueType(t), t}, U, S, Vh))
    return fall_back<ATEN_OP2(_linalg_svd, U)>(A, full_matrices, compute_uv, driver, U, S, Vh);
  auto [u, s, v] = svd(A, full_matrices, compute_uv, driver);
  write_out(U, u), write_out(S, s), write_out(Vh, v);
  return {U, S, Vh};
}

std::tuple<at::Tensor&, at::Tensor&> geqrf_out(const at::Tensor& A, at::Tensor& a, at::Tensor& tau) {
  const auto t = A.scalar_type();
  if (!native({&A}) || A.dim() < 2 || !outs_take({t, t}, a, tau)) return fall_back<ATEN_OP2(geqrf, a)>(A, a, tau);
  auto [x, y] = qr_reflectors(A);
  write_out(a, x), write_out(tau, y);
  return {a, tau};
}

at::Tensor& householder_product_out(const at::Tensor& input, const at::Tensor& tau, at::Tensor& out) {
  if (!native({&input, &tau}) || !outs_take({input.scalar_type()}, out))
    return fall_back<ATEN_OP2(linalg_householder_product, out)>(input, tau, out);
  write_out(out, householder_product(input, tau));
  return out;
}

at::Tensor& ormqr_out(const at::Tensor& A, const at::Tensor& tau, const at::Tensor& C, bool left, bool transpose,
                      at::Tensor& out) {
  if (!native({&A, &tau, &C}) || !outs_take({A.scalar_type()}, out))
    return fall_back<ATEN_OP2(ormqr, out)>(A, tau, C, left, transpose, out);
  write_out(out, apply_reflectors(A, tau, C, left, transpose));
  return out;
}

std::tuple<at::Tensor&, at::Tensor&> linalg_qr_out(const at::Tensor& A, c10::string_view mode, at::Tensor& Q,
                                                   at::Tensor& R) {
  const auto t = A.scalar_type();
  if (!native({&A}) || !outs_take({t, t}, Q, R)) return fall_back<ATEN_OP2(linalg_qr, out)>(A, mode, Q, R);
  auto [q, r] = qr(A, mode);
  write_out(Q, q), write_out(R, r);
  return {Q, R};
}

// ---- least squares ----
//
// linalg_lstsq.out in the steps of ATen's linalg_lstsq_out_info, on libaxon's lstsq kernel: A copied column-major,
// B into the first m rows of a column-major [..., max(m, n), k] work tensor, the driver (gelsy by default, as on
// CPU) with rcond defaulting to eps * max(m, n); the residuals from rows n.. when m > n and the driver is not gelsy
// (for gelsd and gelss only when every matrix has full rank), rank and singular values for the drivers that give
// them, LAPACK's errors raised by ATen. Broadcast batches, a batched vector b, empty matrices and anything CPU
// refuses go to the host, with CPU's errors.
std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> lstsq_out(
    const at::Tensor& A, const at::Tensor& B, std::optional<double> rcond, std::optional<c10::string_view> driver,
    at::Tensor& solution, at::Tensor& residuals, at::Tensor& rank, at::Tensor& sv) {
  const std::string_view name = driver.has_value() ? std::string_view(driver->data(), driver->size()) : "gelsy";
  const int drv = name == "gels" ? 0 : name == "gelsy" ? 1 : name == "gelsd" ? 2 : name == "gelss" ? 3 : -1;
  const bool vector = A.dim() == 2 && B.dim() == 1;
  const at::Tensor B2 = vector ? B.unsqueeze(-1) : B;
  const c10::ScalarType real = c10::toRealValueType(A.scalar_type());
  bool ok = drv >= 0 && native({&A, &B}) && A.dim() >= 2 && B2.dim() == A.dim() &&
            A.scalar_type() == B.scalar_type() && A.size(-2) == B2.size(-2) && A.numel() > 0 && B2.numel() > 0 &&
            A.sizes().slice(0, A.dim() - 2) == B2.sizes().slice(0, B2.dim() - 2) &&
            solution.scalar_type() == A.scalar_type() && residuals.scalar_type() == real &&
            rank.scalar_type() == at::kLong && sv.scalar_type() == real;
  for (const at::Tensor* t : {&solution, &residuals, &rank, &sv}) ok = ok && t->device() == A.device();
  if (!ok) return fall_back<ATEN_OP2(linalg_lstsq, out)>(A, B, rcond, driver, solution, residuals, rank, sv);
  const int64_t m = A.size(-2), n = A.size(-1), k = B2.size(-1), lb = std::max(m, n);
  const std::vector<int64_t> batch(A.sizes().begin(), A.sizes().end() - 2);
  const double eps = real == at::kFloat ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
  const double cut = rcond.has_value() ? *rcond : eps * static_cast<double>(lb);
  const at::Tensor a = cm_copy(A);
  std::vector<int64_t> wsizes(batch);
  wsizes.push_back(lb);
  wsizes.push_back(k);
  at::Tensor work = cm_empty(wsizes, B.options());
  if (lb > m) work.narrow(-2, m, lb - m).zero_();
  work.narrow(-2, 0, m).copy_(B2);
  const at::Tensor info = at::empty(batch, A.options().dtype(at::kInt));
  std::vector<int64_t> svs(batch);
  svs.push_back(std::min(m, n));
  const at::Tensor r = drv != 0 ? at::empty(batch, A.options().dtype(at::kLong)) : at::Tensor();
  const at::Tensor s_ = drv >= 2 ? at::empty(svs, A.options().dtype(real)) : at::Tensor();
  const axon_tensor_t ad = describe(a, "lstsq"), wd = describe(work, "lstsq"), id = describe(info, "lstsq");
  axon_tensor_t rd{}, sd{};
  if (r.defined()) rd = describe(r, "lstsq");
  if (s_.defined()) sd = describe(s_, "lstsq");
  AXON_CHECK(axon_kernel_lstsq(stream_of(A), &ad, &wd, r.defined() ? &rd : nullptr, s_.defined() ? &sd : nullptr,
                               &id, static_cast<axon_lstsq_driver_t>(drv), cut));
  at::_linalg_check_errors(info, "torch.linalg.lstsq", A.dim() == 2);
  at::Tensor res = at::empty({0}, A.options().dtype(real));
  if (m > n && drv != 1 && (drv == 0 || r.eq(n).all().item<bool>())) {
    const at::Tensor raw = work.narrow(-2, n, m - n);
    res = raw.is_complex() ? at::real(raw * raw.conj()).sum(-2) : raw.pow(2).sum(-2);
  }
  // CPU's solution is a view of its work buffer (column-major, leading dimension max(m, n)): an empty out becomes
  // that view here too; a given one gets a copy.
  at::Tensor sol = work.narrow(-2, 0, n);
  if (vector) sol = sol.squeeze(-1);
  if (solution.numel() == 0) {
    solution.set_(sol.storage(), sol.storage_offset(), sol.sizes(), sol.strides());
  } else {
    write_out(solution, sol.contiguous());
  }
  write_out(residuals, res);
  write_out(rank, r.defined() ? r : at::empty({0}, A.options().dtype(at::kLong)));
  write_out(sv, s_.defined() ? s_ : at::empty({0}, A.options().dtype(real)));
  return {solution, residuals, rank, sv};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_lstsq.out", TORCH_FN(lstsq_out));
  m.impl("linalg_lu_factor_ex", TORCH_FN(lu_factor_ex));
  m.impl("linalg_lu_factor_ex.out", TORCH_FN(lu_factor_ex_out));
  m.impl("linalg_lu_solve", TORCH_FN(lu_solve));
  m.impl("linalg_lu_solve.out", TORCH_FN(lu_solve_out));
  m.impl("lu_unpack", TORCH_FN(unpack_lu));
  m.impl("lu_unpack.out", TORCH_FN(lu_unpack_out));
  m.impl("linalg_lu", TORCH_FN(plu));
  m.impl("linalg_lu.out", TORCH_FN(linalg_lu_out));
  m.impl("_linalg_solve_ex", TORCH_FN(solve_ex));
  m.impl("_linalg_solve_ex.result", TORCH_FN(solve_ex_out));
  m.impl("linalg_inv_ex", TORCH_FN(inv_ex));
  m.impl("linalg_inv_ex.inverse", TORCH_FN(inv_ex_out));
  m.impl("_linalg_det", TORCH_FN(det_of));
  m.impl("_linalg_det.result", TORCH_FN(det_out));
  m.impl("_linalg_slogdet", TORCH_FN(slogdet_of));
  m.impl("_linalg_slogdet.sign", TORCH_FN(slogdet_out));
  m.impl("linalg_solve_triangular", TORCH_FN(solve_triangular));
  m.impl("linalg_solve_triangular.out", TORCH_FN(solve_triangular_out));
  m.impl("triangular_solve", TORCH_FN(triangular_solve_legacy));
  m.impl("triangular_solve.X", TORCH_FN(triangular_solve_out));
  m.impl("linalg_cholesky_ex", TORCH_FN(cholesky_ex));
  m.impl("linalg_cholesky_ex.L", TORCH_FN(cholesky_ex_out));
  m.impl("cholesky", TORCH_FN(cholesky_legacy));
  m.impl("cholesky.out", TORCH_FN(cholesky_out));
  m.impl("_cholesky_solve_helper", TORCH_FN(cholesky_solve_helper));
  m.impl("_cholesky_solve_helper.out", TORCH_FN(cholesky_solve_helper_out));
  m.impl("cholesky_inverse", TORCH_FN(inverse_from_cholesky));
  m.impl("cholesky_inverse.out", TORCH_FN(cholesky_inverse_out));
  m.impl("linalg_ldl_factor_ex", TORCH_FN(ldl_factor_ex));
  m.impl("linalg_ldl_factor_ex.out", TORCH_FN(ldl_factor_ex_out));
  m.impl("linalg_ldl_solve", TORCH_FN(ldl_solve));
  m.impl("linalg_ldl_solve.out", TORCH_FN(ldl_solve_out));
  m.impl("linalg_eig", TORCH_FN(eig));
  m.impl("linalg_eig.out", TORCH_FN(eig_out));
  m.impl("_linalg_eigvals", TORCH_FN(eigvals));
  m.impl("_linalg_eigh", TORCH_FN(eigh));
  m.impl("_linalg_eigh.eigenvalues", TORCH_FN(eigh_out));
  m.impl("_linalg_svd", TORCH_FN(svd));
  m.impl("_linalg_svd.U", TORCH_FN(svd_out));
  m.impl("geqrf", TORCH_FN(qr_reflectors));
  m.impl("geqrf.a", TORCH_FN(geqrf_out));
  m.impl("linalg_householder_product", TORCH_FN(householder_product));
  m.impl("linalg_householder_product.out", TORCH_FN(householder_product_out));
  m.impl("linalg_qr", TORCH_FN(qr));
  m.impl("linalg_qr.out", TORCH_FN(linalg_qr_out));
  m.impl("linalg_matrix_exp", TORCH_FN(matrix_exp));
  m.impl("ormqr", TORCH_FN(apply_reflectors));
  m.impl("ormqr.out", TORCH_FN(ormqr_out));
  m.impl("linalg_cross", TORCH_FN(cross));
  m.impl("linalg_cross.out", TORCH_FN(cross_out));
}

}  // namespace
}  // namespace torch_axon
