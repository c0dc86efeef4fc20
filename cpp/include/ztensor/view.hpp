// ztensor/view.hpp: part of ztensor.hpp (include that). zt::tensor_view, a component's
// decoded bytes, and its checked typed access.
#ifndef ZTENSOR_CPP_VIEW_HPP
#define ZTENSOR_CPP_VIEW_HPP

#include "config.hpp"
#include "dtype.hpp"
#include "result.hpp"
#include "span.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {

namespace detail {
/// True when n bytes can exist in this address space.
inline bool fits_size(std::uint64_t n) noexcept { return n <= std::uint64_t{std::numeric_limits<std::size_t>::max()}; }
/// n as size_t (checked with fits_size first); no cast where they are the same type.
template <class Size = std::size_t>
Size to_size(std::uint64_t n) noexcept {
  if constexpr (std::is_same_v<Size, std::uint64_t>) {
    return n;
  } else {
    return static_cast<Size>(n);
  }
}

inline failure bool_failure(std::size_t at, unsigned value) {
  return fail(ZT_ERR_FORMAT, cat("bool byte ", std::to_string(value), " at index ", std::to_string(at), " is neither 0 nor 1"));
}
/// Index of the first byte that is not 0 or 1, or n.
inline std::size_t first_non_bool(const unsigned char* p, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] > 1) return i;
  return n;
}
}  // namespace detail

/// A component's decoded bytes (zt_view): borrowed from the Reader, 64-byte aligned,
/// zero-copy when the component is stored raw in a mapped file. Cheap to copy.
class tensor_view {
 public:
  tensor_view() noexcept = default;
  explicit tensor_view(const zt_view& v) noexcept
      : data_(v.data), size_(detail::to_size(v.size)), dtype_(static_cast<zt::dtype>(v.dtype)), zero_copy_(v.zero_copy) {}

  const void* data() const noexcept { return data_; }
  /// Bytes (as zt_view::size).
  std::size_t size() const noexcept { return size_; }
  /// Elements of the storage dtype.
  std::size_t count() const noexcept {
    std::size_t s = dtype_size(dtype_);
    return s == 0 ? 0 : size_ / s;
  }
  bool empty() const noexcept { return size_ == 0; }
  zt::dtype dtype() const noexcept { return dtype_; }
  /// True: points into the mapped file (or the caller's memory); false: a decoded copy.
  bool zero_copy() const noexcept { return zero_copy_; }
  span<const std::byte> bytes() const noexcept { return span<const std::byte>(static_cast<const std::byte*>(data_), size_); }

  /// The elements as T: invalid_argument unless dtype_of<T> is the view's dtype, the size
  /// is a whole number of T and the data is aligned for T; format_error for a bool byte
  /// other than 0 or 1 (as<bool>() checks every byte).
  template <class T>
  ret<span<const T>> as() const {
    static_assert(has_dtype_v<T>, "as<T>(): T has no zt::dtype_of; use as<T>(zt::dtype) or bytes()");
    return detail::unwrap(typed<T>(dtype_v<T>));
  }
  /// The elements as T when the view's dtype is `expected` and T has its size, e.g.
  /// as<uint16_t>(zt::dtype::bf16).
  template <class T>
  ret<span<const T>> as(zt::dtype expected) const {
    return detail::unwrap(typed<T>(expected));
  }

 private:
  template <class T>
  result<span<const T>> typed(zt::dtype expected) const {
    static_assert(std::is_trivially_copyable_v<T>, "as<T>(): T must be trivially copyable");
    static_assert(detail::little_endian, "typed access assumes a little-endian host");
    if (dtype_ != expected)
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, detail::cat("the view holds ", dtype_name(dtype_), " data, not ", dtype_name(expected)));
    if (sizeof(T) != dtype_size(expected))
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, detail::cat("a ", std::to_string(sizeof(T)), "-byte type can't hold ",
                                                               dtype_name(expected), " elements"));
    if (size_ % sizeof(T) != 0)
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, detail::cat("the view's ", std::to_string(size_), " bytes are not a whole number of ",
                                                               std::to_string(sizeof(T)), "-byte elements"));
    if (size_ != 0 && reinterpret_cast<std::uintptr_t>(data_) % alignof(T) != 0)
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, detail::cat("the view's data is not aligned to ", std::to_string(alignof(T)), " bytes"));
    if constexpr (std::is_same_v<std::remove_cv_t<T>, bool>) {
      const auto* p = static_cast<const unsigned char*>(data_);
      std::size_t bad = detail::first_non_bool(p, size_);
      if (bad != size_) return detail::bool_failure(bad, p[bad]);
    }
    return result<span<const T>>(span<const T>(static_cast<const T*>(data_), size_ / sizeof(T)));
  }

  const void* data_ = nullptr;
  std::size_t size_ = 0;
  zt::dtype dtype_ = zt::dtype::u8;
  bool zero_copy_ = false;
};

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_VIEW_HPP
