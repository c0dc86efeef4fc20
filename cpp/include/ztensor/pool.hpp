// ztensor/pool.hpp: part of ztensor.hpp (include that). The library's one thread pool:
// batch loads, zstd frames, verification, dequantization and set opens run on it.
#ifndef ZTENSOR_CPP_POOL_HPP
#define ZTENSOR_CPP_POOL_HPP

#include "config.hpp"
#include "result.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {
namespace pool {

/// Sizes the library's thread pool to `threads` (0: one per core) (zt_pool_set_threads).
/// Takes effect at once; invalid_argument past 1024 threads.
inline ret<void> set_threads(std::size_t threads) {
  return detail::unwrap(detail::check(zt_pool_set_threads(threads)));
}

/// The pool's number of threads: what set_threads set, else one per core
/// (zt_pool_thread_count). Starts nothing.
inline std::size_t thread_count() noexcept { return zt_pool_thread_count(); }

}  // namespace pool
}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_POOL_HPP
