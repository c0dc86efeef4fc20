// ztensor/owned_value.hpp: part of ztensor.hpp (include that). zt::owned_value: an
// attribute value to write, with its type (zt_value_create_*), and the make_* calls that
// make one.
//
//   zt::Writer out = zt::Writer::create("model.zt");
//   out.set_attribute("llama.context_length", std::uint32_t{4096});    // reads back as u32
//   out.set_attribute("tokenizer.ggml.scores", zt::make_array(scores)); // an array of f32
//   out.set_attribute("tokenizer.ggml.tokens", zt::make_strings(tokens));
//   out.set_attributes(in.attributes());  // every key/value of a reader, types kept
//
// An owned_value is move-only and frees itself; value() (or the implicit conversion to
// zt::value) reads it as any attribute value, and every call that takes a zt::value (the
// writer's, make_array, make_map) takes it. Values are immutable: one can go into many
// containers and files, and a container copies its items.
#ifndef ZTENSOR_CPP_OWNED_VALUE_HPP
#define ZTENSOR_CPP_OWNED_VALUE_HPP

#include "arguments.hpp"
#include "config.hpp"
#include "result.hpp"
#include "span.hpp"
#include "value.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {

/// An attribute value made to be written (zt_value_create_*). Move-only; freed when
/// destroyed. A default-constructed one is empty (no value).
class owned_value {
 public:
  owned_value() noexcept = default;
  owned_value(owned_value&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  owned_value& operator=(owned_value&& o) noexcept {
    if (this != &o) {
      zt_value_free(handle_);
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  owned_value(const owned_value&) = delete;
  owned_value& operator=(const owned_value&) = delete;
  ~owned_value() { zt_value_free(handle_); }

  /// The C handle (NULL when empty); still owned by this object.
  zt_value* handle() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  /// The value, to read or to pass to any call taking a zt::value; borrows from this.
  zt::value value() const noexcept { return zt::value(handle_); }
  operator zt::value() const noexcept { return value(); }  // NOLINT: a value is a view of it

  /// Takes over a handle made by zt_value_create_* (it will be freed with this object).
  static owned_value adopt(zt_value* handle) noexcept {
    owned_value v;
    v.handle_ = handle;
    return v;
  }

 private:
  zt_value* handle_ = nullptr;
};

namespace detail {
/// The owned value a zt_value_create_* call makes (through `make`), or its failure.
template <class Make>
result<owned_value> made(Make&& make) {
  zt_value* out = nullptr;
  zt_status st = make(&out);
  if (st != ZT_OK) return last_failure(st);
  return result<owned_value>(owned_value::adopt(out));
}

template <class T>
result<owned_value> make_scalar(T x) {
  constexpr value_type t = array_type_of<T>();
  static_assert(t != value_type::other, "make_value(T): T must be bool, a fixed-width integer, float or double");
  if constexpr (t == value_type::boolean) return made([&](zt_value** o) { return zt_value_create_bool(x, o); });
  else if constexpr (t == value_type::i8) return made([&](zt_value** o) { return zt_value_create_i8(x, o); });
  else if constexpr (t == value_type::i16) return made([&](zt_value** o) { return zt_value_create_i16(x, o); });
  else if constexpr (t == value_type::i32) return made([&](zt_value** o) { return zt_value_create_i32(x, o); });
  else if constexpr (t == value_type::i64) return made([&](zt_value** o) { return zt_value_create_i64(x, o); });
  else if constexpr (t == value_type::u8) return made([&](zt_value** o) { return zt_value_create_u8(x, o); });
  else if constexpr (t == value_type::u16) return made([&](zt_value** o) { return zt_value_create_u16(x, o); });
  else if constexpr (t == value_type::u32) return made([&](zt_value** o) { return zt_value_create_u32(x, o); });
  else if constexpr (t == value_type::u64) return made([&](zt_value** o) { return zt_value_create_u64(x, o); });
  else if constexpr (t == value_type::f32) return made([&](zt_value** o) { return zt_value_create_f32(x, o); });
  else return made([&](zt_value** o) { return zt_value_create_f64(x, o); });
}

template <class T>
result<owned_value> make_numbers(const T* data, std::size_t count) {
  constexpr value_type t = array_type_of<T>();
  static_assert(t != value_type::other, "make_array(): elements must be bool, fixed-width integers, float or double");
  static_assert(!std::is_same_v<T, bool> || sizeof(bool) == 1, "bool arrays are passed as bytes 0 and 1");
  return made([&](zt_value** o) { return zt_value_create_array_data(static_cast<std::uint32_t>(t), data, count, o); });
}

/// A string's bytes: std::string, std::string_view, const char *.
inline std::string_view text_of(std::string_view s) noexcept { return s; }
}  // namespace detail

/// A scalar of T's type: bool, a fixed-width integer, float or double
/// (make_value(std::uint32_t{4096}) reads back as u32).
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
ret<owned_value> make_value(T x) {
  return detail::unwrap(detail::make_scalar(x));
}
/// A string (its bytes as given: UTF-8 expected, not required).
inline ret<owned_value> make_value(std::string_view s) {
  return detail::unwrap(detail::made([&](zt_value** o) { return zt_value_create_string(s.data(), s.size(), o); }));
}
inline ret<owned_value> make_value(const char* s) { return make_value(std::string_view(s == nullptr ? "" : s)); }
inline ret<owned_value> make_value(const std::string& s) { return make_value(std::string_view(s)); }
/// Null.
inline ret<owned_value> make_null() {
  return detail::unwrap(detail::made([](zt_value** o) { return zt_value_create_null(o); }));
}
/// A byte string.
inline ret<owned_value> make_bytes(span<const std::uint8_t> bytes) {
  return detail::unwrap(detail::made([&](zt_value** o) { return zt_value_create_bytes(bytes.data(), bytes.size(), o); }));
}
/// An array of numbers (or bools) of one type, from any contiguous range: a vector, an
/// array, a span ... Empty, it still has its element type.
template <class Range, std::enable_if_t<detail::is_data_range_v<Range> &&
                                            detail::array_type_of<detail::range_element_t<Range>>() != value_type::other,
                                        int> = 0>
ret<owned_value> make_array(const Range& numbers) {
  return detail::unwrap(detail::make_numbers(std::data(numbers), static_cast<std::size_t>(std::size(numbers))));
}
/// An array of strings from a range of std::string, std::string_view or const char *
/// (a tokenizer's vocabulary, in one call).
template <class Range>
ret<owned_value> make_strings(const Range& strings) {
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
  for (const auto& s : strings) {
    std::string_view v = detail::text_of(s);
    ptrs.push_back(v.data());
    lens.push_back(v.size());
  }
  return detail::unwrap(
      detail::made([&](zt_value** o) { return zt_value_create_string_array(ptrs.data(), lens.data(), ptrs.size(), o); }));
}
/// An array of any values (a reader's or made ones), each copied with its type.
inline ret<owned_value> make_array(std::initializer_list<value> items) {
  std::vector<const zt_value*> handles;
  for (value v : items) handles.push_back(v.handle());
  return detail::unwrap(detail::made([&](zt_value** o) { return zt_value_create_array(handles.data(), handles.size(), o); }));
}
/// A map of text keys to values (a reader's or made ones), in this order.
inline ret<owned_value> make_map(std::initializer_list<std::pair<std::string_view, value>> entries) {
  std::vector<std::string> keys;
  std::vector<const char*> key_ptrs;
  std::vector<const zt_value*> values;
  keys.reserve(entries.size());
  for (const auto& e : entries) {
    if (e.first.find('\0') != std::string_view::npos)
      return detail::unwrap(result<owned_value>(detail::fail(ZT_ERR_INVALID_ARGUMENT, "key contains a NUL byte")));
    keys.emplace_back(e.first);
    values.push_back(e.second.handle());
  }
  for (const std::string& k : keys) key_ptrs.push_back(k.c_str());
  return detail::unwrap(
      detail::made([&](zt_value** o) { return zt_value_create_map(key_ptrs.data(), values.data(), values.size(), o); }));
}

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_OWNED_VALUE_HPP
