// A per-thread cache of meta-function results. The glue asks ATen's meta functions for the outputs' sizes, strides
// and dtypes (and for its argument checks) rather than keeping shape rules of its own; many of those meta functions
// are registered from Python (torch/_meta_registrations.py) and cost 30-60 us a call, ten times a small matrix's
// factorization. A meta result depends only on its inputs' metadata and the scalar arguments, so it is kept under a
// key made of them: a call that raised keeps nothing, and the next call with those inputs raises again.
#pragma once

#include <ATen/ATen.h>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace torch_axon {

// The bytes that decide a meta result: each tensor's dtype, sizes, strides and conj/neg bits, and scalar arguments.
class MetaKey {
 public:
  explicit MetaKey(std::string_view op) : key_(op) { key_.push_back('\0'); }

  MetaKey& operator<<(const at::Tensor& t) {
    put(static_cast<int64_t>(t.scalar_type()) | (int64_t{t.is_conj()} << 8) | (int64_t{t.is_neg()} << 9));
    put(t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) put(t.size(d)), put(t.stride(d));
    return *this;
  }
  MetaKey& operator<<(bool b) { return put(int64_t{b}); }
  MetaKey& operator<<(int64_t v) { return put(v); }
  MetaKey& operator<<(std::string_view s) {
    put(static_cast<int64_t>(s.size()));
    key_.append(s);
    return *this;
  }
  MetaKey& operator<<(const std::optional<std::string_view>& s) {
    put(int64_t{s.has_value()});
    return s ? *this << *s : *this;
  }

  const std::string& str() const { return key_; }

 private:
  MetaKey& put(int64_t v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    key_.append(b, sizeof v);
    return *this;
  }
  std::string key_;
};

namespace detail {
// The calling thread's cached results; cleared whole when it grows past a bound (shapes seen once in a long run).
inline std::unordered_map<std::string, std::vector<at::Tensor>>& meta_cache() {
  thread_local std::unordered_map<std::string, std::vector<at::Tensor>> cache;
  return cache;
}
constexpr size_t kMetaCacheMaxEntries = 1024;

inline at::Tensor as_meta(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}
template <typename A>
const A& as_meta(const A& a) {
  return a;
}

template <typename R>
std::vector<at::Tensor> to_vector(const R& r) {
  if constexpr (std::is_same_v<R, at::Tensor>) {
    return {r};
  } else {
    return std::apply([](const auto&... t) { return std::vector<at::Tensor>{t...}; }, r);
  }
}

template <typename R, size_t... I>
R from_vector(const std::vector<at::Tensor>& v, std::index_sequence<I...>) {
  return R{v[I]...};
}
}  // namespace detail

// compute() (a call of a meta function returning a Tensor or a tuple of Tensors), or its result from an earlier call
// with the same key. The meta tensors returned are shared: callers read their metadata and must not change them.
template <typename F>
auto meta_cached(const MetaKey& key, F&& compute) -> decltype(compute()) {
  using R = decltype(compute());
  auto& cache = detail::meta_cache();
  auto it = cache.find(key.str());
  if (it == cache.end()) {
    R r = compute();
    if (cache.size() >= detail::kMetaCacheMaxEntries) cache.clear();
    it = cache.emplace(key.str(), detail::to_vector(r)).first;
  }
  if constexpr (std::is_same_v<R, at::Tensor>) {
    return it->second[0];
  } else {
    return detail::from_vector<R>(it->second, std::make_index_sequence<std::tuple_size_v<R>>());
  }
}

// ATen's meta function `fn` on meta copies of the tensors among its arguments (the rest passed as they are), cached
// under fn's name and the arguments: AXON_META(at::linalg_cholesky_ex, A, upper, false).
#define AXON_META(fn, ...)                                                                     \
  ::torch_axon::detail::meta_call(#fn, [](const auto&... a) { return fn(::torch_axon::detail::as_meta(a)...); }, \
                                  __VA_ARGS__)

namespace detail {
template <typename F, typename... Args>
auto meta_call(std::string_view name, F&& fn, const Args&... args) {
  MetaKey key(name);
  (key << ... << args);
  return meta_cached(key, [&] { return fn(args...); });
}
}  // namespace detail

}  // namespace torch_axon
