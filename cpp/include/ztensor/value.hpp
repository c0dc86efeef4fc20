// ztensor/value.hpp: part of ztensor.hpp (include that). zt::value: a typed attribute
// value (GGUF key/values with their widths, zTensor and Tensogram CBOR attributes,
// safetensors metadata) over the C API's zt_value handles, without JSON.
//
//   zt::Reader in = zt::Reader::open("model.gguf");
//   std::uint32_t n_layer = in.attributes()["llama.block_count"].as<std::uint32_t>();
//   zt::value tokens = in.attributes()["tokenizer.ggml.tokens"];
//   for (zt::value t : tokens.elements()) use(t.as<std::string_view>());
//   zt::span<const float> scores = in.attributes()["tokenizer.ggml.scores"].array<float>();
//   for (const zt::value::entry& e : in.attributes().entries()) print(e.key, e.val.type());
//
// as<T>() converts only without loss (an integer of any type to any integer type its value
// fits, f32 to double, f64 to float when exact, bool only to bool); anything else fails
// with invalid_argument naming both types. type() gives the width the file declared, for
// callers that want llama.cpp's exact-type rule. Values borrow from the Reader: valid
// until it is closed; copying a value copies a pointer.
#ifndef ZTENSOR_CPP_VALUE_HPP
#define ZTENSOR_CPP_VALUE_HPP

#include "arguments.hpp"
#include "config.hpp"
#include "result.hpp"
#include "span.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {

/// The type of an attribute value (the C enum zt_value_type).
enum class value_type : std::uint32_t {
  null = ZT_VALUE_NULL,
  boolean = ZT_VALUE_BOOL,
  i8 = ZT_VALUE_I8,
  i16 = ZT_VALUE_I16,
  i32 = ZT_VALUE_I32,
  i64 = ZT_VALUE_I64,
  u8 = ZT_VALUE_U8,
  u16 = ZT_VALUE_U16,
  u32 = ZT_VALUE_U32,
  u64 = ZT_VALUE_U64,
  f32 = ZT_VALUE_F32,
  f64 = ZT_VALUE_F64,
  string = ZT_VALUE_STRING,
  bytes = ZT_VALUE_BYTES,
  array = ZT_VALUE_ARRAY,
  map = ZT_VALUE_MAP,
  other = ZT_VALUE_OTHER,
  /// Only as element_type(): elements of several types, or an empty untyped array.
  mixed = ZT_VALUE_MIXED,
};

/// "u32", "string", "mixed" ...
inline std::string_view value_type_name(value_type t) noexcept { return zt_value_type_name(static_cast<std::uint32_t>(t)); }

namespace detail {
/// The value_type whose contiguous array elements are T (bool, the fixed-width integers,
/// float, double); value_type::other for anything else.
template <class T>
constexpr value_type array_type_of() noexcept {
  if constexpr (std::is_same_v<T, bool>) return value_type::boolean;
  else if constexpr (std::is_same_v<T, float>) return value_type::f32;
  else if constexpr (std::is_same_v<T, double>) return value_type::f64;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 1) return value_type::i8;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 2) return value_type::i16;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 4) return value_type::i32;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 8) return value_type::i64;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 1) return value_type::u8;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 2) return value_type::u16;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 4) return value_type::u32;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 8) return value_type::u64;
  else return value_type::other;
}

/// One scalar through the C getter of T's width.
template <class T, class C>
result<T> scalar(const zt_value* v, zt_status (*get)(const zt_value*, C*)) {
  C out{};
  zt_status st = get(v, &out);
  if (st != ZT_OK) return last_failure(st);
  return result<T>(static_cast<T>(out));
}
}  // namespace detail

struct value_entry;

/// A typed attribute value. A small handle that borrows from its Reader; a default
/// constructed one is "no value" (type() null, every read fails with invalid_argument).
class value {
 public:
  value() noexcept = default;
  explicit value(const zt_value* handle) noexcept : handle_(handle) {}

  /// The C handle (NULL for "no value").
  const zt_value* handle() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  /// The value's type; value_type::null for "no value".
  value_type type() const noexcept {
    std::uint32_t t = ZT_VALUE_NULL;
    if (handle_ == nullptr || zt_value_get_type(handle_, &t) != ZT_OK) return value_type::null;
    return static_cast<value_type>(t);
  }
  bool is_null() const noexcept { return type() == value_type::null; }
  bool is_string() const noexcept { return type() == value_type::string; }
  bool is_array() const noexcept { return type() == value_type::array; }
  bool is_map() const noexcept { return type() == value_type::map; }

  /// The value as T: bool, an integer type, float, double, std::string_view (borrowed; a
  /// string's bytes as stored) or std::string (a copy). invalid_argument naming both types
  /// when it doesn't convert without loss.
  template <class T>
  ret<T> as() const { return detail::unwrap(try_as<T>()); }

  /// as<T>(), never throwing.
  template <class T>
  result<T> try_as() const {
    if constexpr (std::is_same_v<T, std::string_view> || std::is_same_v<T, std::string>) {
      const char* s = nullptr;
      std::size_t n = 0;
      zt_status st = zt_value_get_string(handle_, &s, &n);
      if (st != ZT_OK) return detail::last_failure(st);
      return result<T>(T(s, n));
    } else if constexpr (std::is_same_v<T, bool>) {
      return detail::scalar<T>(handle_, zt_value_get_bool);
    } else if constexpr (std::is_same_v<T, float>) {
      return detail::scalar<T>(handle_, zt_value_get_f32);
    } else if constexpr (std::is_same_v<T, double>) {
      return detail::scalar<T>(handle_, zt_value_get_f64);
    } else {
      static_assert(std::is_integral_v<T> && sizeof(T) <= 8, "as<T>(): T must be bool, an integer, float, double, std::string_view or std::string");
      constexpr value_type t = detail::array_type_of<T>();
      if constexpr (t == value_type::i8) return detail::scalar<T>(handle_, zt_value_get_i8);
      else if constexpr (t == value_type::i16) return detail::scalar<T>(handle_, zt_value_get_i16);
      else if constexpr (t == value_type::i32) return detail::scalar<T>(handle_, zt_value_get_i32);
      else if constexpr (t == value_type::i64) return detail::scalar<T>(handle_, zt_value_get_i64);
      else if constexpr (t == value_type::u8) return detail::scalar<T>(handle_, zt_value_get_u8);
      else if constexpr (t == value_type::u16) return detail::scalar<T>(handle_, zt_value_get_u16);
      else if constexpr (t == value_type::u32) return detail::scalar<T>(handle_, zt_value_get_u32);
      else return detail::scalar<T>(handle_, zt_value_get_u64);
    }
  }

  /// A byte string's bytes, borrowed.
  ret<span<const std::uint8_t>> bytes() const { return detail::unwrap(try_bytes()); }
  result<span<const std::uint8_t>> try_bytes() const {
    const std::uint8_t* p = nullptr;
    std::size_t n = 0;
    zt_status st = zt_value_get_bytes(handle_, &p, &n);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<span<const std::uint8_t>>(span<const std::uint8_t>(p, n));
  }

  /// Elements of an array or entries of a map; 0 for anything else.
  std::size_t size() const noexcept {
    std::size_t n = 0;
    if (handle_ == nullptr || zt_value_get_count(handle_, &n) != ZT_OK) return 0;
    return n;
  }
  /// An array's element type (value_type::mixed when they differ); null for non-arrays.
  value_type element_type() const noexcept {
    std::uint32_t t = ZT_VALUE_NULL;
    if (handle_ == nullptr || zt_value_get_array_type(handle_, &t) != ZT_OK) return value_type::null;
    return static_cast<value_type>(t);
  }

  /// The contiguous elements of an array whose element type is exactly T's (u32 for
  /// std::uint32_t, f32 for float, boolean for bool ...), borrowed; invalid_argument
  /// otherwise.
  template <class T>
  ret<span<const T>> array() const { return detail::unwrap(try_array<T>()); }
  template <class T>
  result<span<const T>> try_array() const {
    constexpr value_type want = detail::array_type_of<T>();
    static_assert(want != value_type::other, "array<T>(): T must be bool, a fixed-width integer, float or double");
    const void* data = nullptr;
    std::size_t n = 0;
    zt_status st = zt_value_get_array_data(handle_, &data, &n);
    if (st != ZT_OK) return detail::last_failure(st);
    if (element_type() != want)
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, detail::cat("attribute value is an array of ", value_type_name(element_type()),
                                                               ", not of ", value_type_name(want)));
    return result<span<const T>>(span<const T>(static_cast<const T*>(data), n));
  }

  /// Element `index` of an array (invalid_argument when out of range or not an array).
  ret<value> operator[](std::size_t index) const { return detail::unwrap(try_at(index)); }
  /// The value of a map's key (not_found when absent).
  ret<value> operator[](const string_arg& key) const { return detail::unwrap(try_get(key)); }
  /// The value of a map's key, or nullopt (also for non-maps). Allocates nothing.
  std::optional<value> find(const string_arg& key) const noexcept {
    const zt_value* out = nullptr;
    if (handle_ == nullptr || !key.valid() || zt_value_find(handle_, key.c_str(), &out) != ZT_OK) return std::nullopt;
    return value(out);
  }
  bool contains(const string_arg& key) const noexcept { return find(key).has_value(); }

  /// Element `index` of an array of strings, borrowed, in one call.
  ret<std::string_view> string_at(std::size_t index) const { return detail::unwrap(try_string_at(index)); }
  result<std::string_view> try_string_at(std::size_t index) const {
    const char* s = nullptr;
    std::size_t n = 0;
    zt_status st = zt_value_get_element_string(handle_, index, &s, &n);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<std::string_view>(std::string_view(s, n));
  }

  result<value> try_at(std::size_t index) const {
    const zt_value* out = nullptr;
    zt_status st = zt_value_get_element(handle_, index, &out);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<value>(value(out));
  }
  result<value> try_get(const string_arg& key) const {
    if (result<void> r = detail::check_text(key, "key"); !r.ok()) return r.as_failure();
    const zt_value* out = nullptr;
    zt_status st = zt_value_find(handle_, key.c_str(), &out);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<value>(value(out));
  }

  /// A map entry (zt::value_entry): key text, key value, value.
  using entry = value_entry;

  /// Iterates the elements of an array (values) or the entries of a map (entry).
  template <class Item>
  class iterator {
   public:
    using value_type = Item;
    using difference_type = std::ptrdiff_t;
    using reference = Item;
    using pointer = void;
    using iterator_category = std::input_iterator_tag;

    iterator() noexcept = default;
    Item operator*() const noexcept {
      if constexpr (std::is_same_v<Item, entry>) {
        const zt_value* k = nullptr;
        const zt_value* v = nullptr;
        Item e{};
        if (zt_value_get_entry(parent_, index_, &k, &v) == ZT_OK) {
          const char* s = nullptr;
          std::size_t n = 0;
          if (zt_value_get_string(k, &s, &n) == ZT_OK) e.key = std::string_view(s, n);
          e.key_value = value(k);
          e.val = value(v);
        }
        return e;
      } else {
        const zt_value* out = nullptr;
        if (zt_value_get_element(parent_, index_, &out) != ZT_OK) out = nullptr;
        return value(out);
      }
    }
    iterator& operator++() noexcept { ++index_; return *this; }
    iterator operator++(int) noexcept { iterator old = *this; ++index_; return old; }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.parent_ == b.parent_ && a.index_ == b.index_; }
    friend bool operator!=(const iterator& a, const iterator& b) noexcept { return !(a == b); }

   private:
    friend class value;
    iterator(const zt_value* parent, std::size_t index) noexcept : parent_(parent), index_(index) {}
    const zt_value* parent_ = nullptr;
    std::size_t index_ = 0;
  };

  /// A range of iterators.
  template <class Item>
  class range {
   public:
    iterator<Item> begin() const noexcept { return begin_; }
    iterator<Item> end() const noexcept { return end_; }
    std::size_t size() const noexcept { return size_; }

   private:
    friend class value;
    range(const zt_value* parent, std::size_t size) noexcept : begin_(parent, 0), end_(parent, size), size_(size) {}
    iterator<Item> begin_, end_;
    std::size_t size_;
  };

  /// The elements of an array, as values; empty for anything else.
  range<value> elements() const noexcept { return range<value>(handle_, is_array() ? size() : 0); }
  /// The entries of a map, in the file's order; empty for anything else.
  range<entry> entries() const noexcept { return range<entry>(handle_, is_map() ? size() : 0); }

 private:
  const zt_value* handle_ = nullptr;
};

/// A map entry: the key as text ("" for a CBOR key that is not a string; key_value has
/// it) and the value.
struct value_entry {
  std::string_view key;
  value key_value;
  value val;
};

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_VALUE_HPP
