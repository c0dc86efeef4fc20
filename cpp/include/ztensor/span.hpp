// ztensor/span.hpp: part of ztensor.hpp (include that). zt::span: std::span under C++20,
// else a small equivalent.
#ifndef ZTENSOR_CPP_SPAN_HPP
#define ZTENSOR_CPP_SPAN_HPP

#include "config.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {

#if ZT_CPP_STD_SPAN
template <class T>
using span = std::span<T, std::dynamic_extent>;
#else
/// A pointer and a count: the subset of std::span this header needs.
template <class T>
class span {
  template <class C>
  using element_of = std::remove_pointer_t<decltype(std::data(std::declval<C&>()))>;
  template <class U>
  static constexpr bool compatible = std::is_convertible_v<U (*)[], T (*)[]>;

 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using pointer = T*;
  using reference = T&;
  using iterator = T*;

  constexpr span() noexcept = default;
  constexpr span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  template <std::size_t N>
  constexpr span(T (&array)[N]) noexcept : data_(array), size_(N) {}
  template <class U, class = std::enable_if_t<compatible<U> && !std::is_same_v<U, T>>>
  constexpr span(const span<U>& other) noexcept : data_(other.data()), size_(other.size()) {}
  template <class C, class = std::enable_if_t<!std::is_array_v<C> && compatible<element_of<C>>>,
            class = decltype(std::size(std::declval<C&>()))>
  constexpr span(C& container) noexcept : data_(std::data(container)), size_(std::size(container)) {}
  template <class C, class = std::enable_if_t<!std::is_array_v<C> && compatible<element_of<const C>>>,
            class = decltype(std::size(std::declval<const C&>()))>
  constexpr span(const C& container) noexcept : data_(std::data(container)), size_(std::size(container)) {}

  constexpr T* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T* begin() const noexcept { return data_; }
  constexpr T* end() const noexcept { return data_ + size_; }
  constexpr T& operator[](std::size_t i) const noexcept { return data_[i]; }
  constexpr T& front() const noexcept { return data_[0]; }
  constexpr T& back() const noexcept { return data_[size_ - 1]; }
  constexpr span subspan(std::size_t offset, std::size_t count) const noexcept { return span(data_ + offset, count); }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};
#endif

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_SPAN_HPP
