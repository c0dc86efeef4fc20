/*
 * ztensor.hpp: a header-only C++17 wrapper over the ztensor C API (ztensor.h).
 *
 *   zt::Reader       an open .zt file. Move-only; closes itself. Iterate it for objects,
 *                    look them up with find() (std::optional) or operator[] (not_found).
 *   zt::Object       one object: name, format, shape, components. A small handle that
 *                    borrows from its Reader.
 *   zt::Component    one component: role, dtype, logical type, encoding, digest. View it,
 *                    copy it into your memory, read it converted, read a byte range.
 *   zt::tensor_view  a component's decoded bytes (zero-copy when the file is mapped);
 *                    as<T>() is a typed span after checking dtype, size and alignment.
 *   zt::Writer       writes a file. Move-only; nothing appears at the path unless
 *                    finish() succeeds. add() dense tensors, begin_object() for any format.
 *
 * Usage (exceptions on, the default):
 *
 *   std::vector<float> w = {1, 2, 3, 4, 5, 6};
 *   zt::Writer out = zt::Writer::create("model.zt");
 *   out.add("layer0.weight", w, {2, 3}, zt::write_options::zstd(3, zt::digest::sha256));
 *   out.finish();
 *
 *   zt::Reader in = zt::Reader::open("model.zt");
 *   for (const auto& obj : in)                          // objects, in file order
 *     std::cout << obj.name() << ": " << obj.format() << ", " << obj.ndim() << "-d\n";
 *   zt::tensor_view v = in["layer0.weight"].view();     // throws zt::not_found if absent
 *   zt::span<const float> f = v.as<float>();            // throws unless the data is f32
 *   std::vector<double> d = in["layer0.weight"].read_as<double>();   // converted copy
 *
 * Errors. With exceptions, a fallible call returns its value and throws a subclass of
 * zt::error (status(), what() = the library's message) on failure. With ZT_NO_EXCEPTIONS
 * defined, or exceptions disabled (-fno-exceptions), the same calls return
 * zt::result<T> instead ([[nodiscard]]; ok(), status(), message(), value()) and nothing
 * throws. zt::ret<T> names "T or zt::result<T>" for code that builds both ways, and
 * zt::result<T> exists in both modes. Calls that can't fail (names, shapes, sizes,
 * find()) return plain values in both modes. Allocation failure is std::bad_alloc as usual.
 *
 *   zt::result<zt::Reader> r = zt::Reader::open("model.zt");     // no-exceptions mode
 *   if (!r) { std::fprintf(stderr, "%s\n", r.message().c_str()); return 1; }
 *   zt::Reader in = std::move(r).value();
 *
 * Lifetimes. Objects, Components, tensor_views, and the names, shapes, spans and JSON they
 * return borrow from the Reader's handle: valid until the Reader is closed or destroyed
 * (moving a Reader keeps them valid). Reader::open_memory borrows the caller's bytes.
 * A Reader may be used from many threads at once; a Writer by one thread at a time.
 *
 * Builders. Writer::begin_object() returns a scoped object_builder, and
 * object_builder::begin_component() a scoped component_builder for streaming; end() them.
 * Destroying one that is still open (e.g. while an exception unwinds) ends it, the
 * component first. The C API has no way to abandon an object, so the library then keeps
 * the object if its components fit its format and drops it otherwise (dense data shorter
 * than the shape, a missing sparse component ...); either way the writer is never left
 * with an open object. Call end() yourself to see errors. Builders stay linked to their
 * Writer through moves of either, and any destruction order is safe: a Writer destroyed
 * first closes its open builders, whose calls then report state_error.
 *
 * Types. zt::dtype_of<T> maps double, float, bool and the integer types (by size and
 * signedness; not char) to their dtype, and as<T>(), read<T>(), read_as<T>() and the
 * typed add() use it. Half types have no standard C++17 type: read them as uint16_t with
 * the dtype spelled out (view.as<uint16_t>(zt::dtype::f16), read<uint16_t>(zt::dtype::bf16),
 * writer.add(name, zt::dtype::f16, halves, shape)); plain as<uint16_t>() accepts u16 data
 * only. Or specialize zt::dtype_of for your half type (std::float16_t and std::bfloat16_t
 * are mapped when the compiler has them). zt::span is std::span under C++20, else a
 * small equivalent.
 *
 * Each configuration (exceptions or not, std::span or not) lives in its own inline
 * namespace, so translation units built differently can share a program.
 */

#ifndef ZTENSOR_HPP
#define ZTENSOR_HPP

#include "ztensor.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(ZT_NO_EXCEPTIONS) || !(defined(__cpp_exceptions) || defined(_CPPUNWIND))
#define ZT_CPP_EXCEPTIONS 0
#else
#define ZT_CPP_EXCEPTIONS 1
#include <stdexcept>
#endif

#if defined(_MSVC_LANG)
#define ZT_CPP_STANDARD _MSVC_LANG
#else
#define ZT_CPP_STANDARD __cplusplus
#endif

#if ZT_CPP_STANDARD >= 202002L && defined(__has_include)
#if __has_include(<span>)
#include <span>
#endif
#endif
#if defined(__cpp_lib_span) && __cpp_lib_span >= 202002L
#define ZT_CPP_STD_SPAN 1
#else
#define ZT_CPP_STD_SPAN 0
#endif

#if ZT_CPP_STANDARD > 202002L && defined(__has_include)
#if __has_include(<stdfloat>)
#include <stdfloat>
#endif
#endif

#if ZT_CPP_EXCEPTIONS && ZT_CPP_STD_SPAN
#define ZT_CPP_ABI abi_exceptions_stdspan
#elif ZT_CPP_EXCEPTIONS
#define ZT_CPP_ABI abi_exceptions_span
#elif ZT_CPP_STD_SPAN
#define ZT_CPP_ABI abi_results_stdspan
#else
#define ZT_CPP_ABI abi_results_span
#endif

namespace zt {
inline namespace ZT_CPP_ABI {

// ---------------------------------------------------------------------------------------
// Enumerations and library information
// ---------------------------------------------------------------------------------------

/// Storage dtypes (the values of zt_dtype).
enum class dtype : std::uint32_t {
  f64 = ZT_F64, f32 = ZT_F32, f16 = ZT_F16, bf16 = ZT_BF16,
  i64 = ZT_I64, i32 = ZT_I32, i16 = ZT_I16, i8 = ZT_I8,
  u64 = ZT_U64, u32 = ZT_U32, u16 = ZT_U16, u8 = ZT_U8,
  bool_ = ZT_BOOL,
};

/// Component encodings (the values of zt_encoding).
enum class encoding : std::uint32_t { raw = ZT_ENCODING_RAW, zstd = ZT_ENCODING_ZSTD };

/// Digest algorithms the writer can record (the values of zt_digest).
enum class digest : std::uint32_t { none = ZT_DIGEST_NONE, sha256 = ZT_DIGEST_SHA256, crc32c = ZT_DIGEST_CRC32C };

/// Bytes per element of a dtype; 0 for a value outside the enum.
constexpr std::size_t dtype_size(zt::dtype t) noexcept {
  switch (t) {
    case dtype::f64: case dtype::i64: case dtype::u64: return 8;
    case dtype::f32: case dtype::i32: case dtype::u32: return 4;
    case dtype::f16: case dtype::bf16: case dtype::i16: case dtype::u16: return 2;
    case dtype::i8: case dtype::u8: case dtype::bool_: return 1;
  }
  return 0;
}

/// The format's spelling of a dtype ("f32", "bool" ...); "unknown" outside the enum.
constexpr std::string_view dtype_name(zt::dtype t) noexcept {
  switch (t) {
    case dtype::f64: return "f64";
    case dtype::f32: return "f32";
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
    case dtype::i64: return "i64";
    case dtype::i32: return "i32";
    case dtype::i16: return "i16";
    case dtype::i8: return "i8";
    case dtype::u64: return "u64";
    case dtype::u32: return "u32";
    case dtype::u16: return "u16";
    case dtype::u8: return "u8";
    case dtype::bool_: return "bool";
  }
  return "unknown";
}

/// "raw" or "zstd"; "unknown" outside the enum.
constexpr std::string_view encoding_name(zt::encoding e) noexcept {
  switch (e) {
    case encoding::raw: return "raw";
    case encoding::zstd: return "zstd";
  }
  return "unknown";
}

/// "ZT_ERR_FORMAT" ...; "ZT_UNKNOWN_STATUS" outside the enum.
inline std::string_view status_name(zt_status s) noexcept { return zt_status_name(static_cast<std::uint32_t>(s)); }

/// The library's run-time version, "MAJOR.MINOR.PATCH" (the header's is ZT_VERSION_*).
inline std::string_view library_version() noexcept { return zt_version(); }

// ---------------------------------------------------------------------------------------
// dtype_of<T>: the dtype a C++ element type stands for
// ---------------------------------------------------------------------------------------

/// Specialize (in namespace zt) to map your own element type, e.g. a half type:
///   namespace zt { template <> struct dtype_of<my_half> : std::integral_constant<dtype, dtype::f16> {}; }
template <class T, class = void>
struct dtype_of {};

namespace detail {
template <std::size_t Size, bool Signed> struct int_dtype {};
template <> struct int_dtype<1, true> : std::integral_constant<dtype, dtype::i8> {};
template <> struct int_dtype<2, true> : std::integral_constant<dtype, dtype::i16> {};
template <> struct int_dtype<4, true> : std::integral_constant<dtype, dtype::i32> {};
template <> struct int_dtype<8, true> : std::integral_constant<dtype, dtype::i64> {};
template <> struct int_dtype<1, false> : std::integral_constant<dtype, dtype::u8> {};
template <> struct int_dtype<2, false> : std::integral_constant<dtype, dtype::u16> {};
template <> struct int_dtype<4, false> : std::integral_constant<dtype, dtype::u32> {};
template <> struct int_dtype<8, false> : std::integral_constant<dtype, dtype::u64> {};

template <class T>
constexpr bool is_character_v = std::is_same_v<T, char> || std::is_same_v<T, wchar_t> ||
#if defined(__cpp_char8_t)
                                std::is_same_v<T, char8_t> ||
#endif
                                std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;

template <class T, class = void> struct has_dtype : std::false_type {};
template <class T> struct has_dtype<T, std::void_t<decltype(dtype_of<T>::value)>> : std::true_type {};
}  // namespace detail

template <> struct dtype_of<double> : std::integral_constant<dtype, dtype::f64> {};
template <> struct dtype_of<float> : std::integral_constant<dtype, dtype::f32> {};
template <> struct dtype_of<bool> : std::integral_constant<dtype, dtype::bool_> {};
template <class T>
struct dtype_of<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> && !detail::is_character_v<T>>>
    : detail::int_dtype<sizeof(T), std::is_signed_v<T>> {};
#if defined(__STDCPP_FLOAT16_T__)
template <> struct dtype_of<std::float16_t> : std::integral_constant<dtype, dtype::f16> {};
#endif
#if defined(__STDCPP_BFLOAT16_T__)
template <> struct dtype_of<std::bfloat16_t> : std::integral_constant<dtype, dtype::bf16> {};
#endif

/// True when T (cv ignored) has a dtype.
template <class T> constexpr bool has_dtype_v = detail::has_dtype<std::remove_cv_t<T>>::value;
/// The dtype of T (cv ignored).
template <class T> constexpr dtype dtype_v = dtype_of<std::remove_cv_t<T>>::value;

namespace detail {
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
constexpr bool little_endian = false;
#else
constexpr bool little_endian = true;
#endif
}  // namespace detail

// ---------------------------------------------------------------------------------------
// span
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Argument helpers: strings for the C API, shapes
// ---------------------------------------------------------------------------------------

/// A string argument the C API can take: a const char * (NULL allowed where the C API
/// allows it), a std::string, or a std::string_view (copied to add the NUL). A string
/// with an embedded NUL byte is refused with invalid_argument.
class string_arg {
 public:
  string_arg() noexcept = default;
  string_arg(std::nullptr_t) noexcept {}
  string_arg(const char* s) noexcept : ptr_(s) {}
  string_arg(const std::string& s) noexcept : ptr_(s.c_str()), valid_(std::strlen(s.c_str()) == s.size()) {}
  string_arg(std::string_view s) : owned_(s), ptr_(nullptr), valid_(s.find('\0') == std::string_view::npos), own_(true) {}

  const char* c_str() const noexcept { return own_ ? owned_.c_str() : ptr_; }
  bool valid() const noexcept { return valid_; }

 private:
  std::string owned_;
  const char* ptr_ = nullptr;
  bool valid_ = true;
  bool own_ = false;
};

/// A shape argument: {2, 3}, a std::vector<uint64_t>, a std::array, a span, or a pointer
/// and a count. Borrows: only for passing to a call, never to keep.
class shape_ref {
  template <class C>
  using element_of = std::remove_cv_t<std::remove_pointer_t<decltype(std::data(std::declval<const C&>()))>>;

 public:
  shape_ref() noexcept = default;
  shape_ref(std::initializer_list<std::uint64_t> dims) noexcept : list_(dims), size_(dims.size()) {}
  shape_ref(const std::uint64_t* data, std::size_t ndim) noexcept : data_(data), size_(ndim) {}
  template <class C, class = std::enable_if_t<std::is_same_v<element_of<C>, std::uint64_t>>,
            class = decltype(std::size(std::declval<const C&>()))>
  shape_ref(const C& dims) noexcept : data_(std::data(dims)), size_(std::size(dims)) {}

  const std::uint64_t* data() const noexcept {
    if (size_ == 0) return nullptr;
    return data_ != nullptr ? data_ : list_.begin();
  }
  std::size_t size() const noexcept { return size_; }

 private:
  std::initializer_list<std::uint64_t> list_;  // kept whole: its array lives as long as the call
  const std::uint64_t* data_ = nullptr;
  std::size_t size_ = 0;
};

/// How a file is opened (zt_open_options). Zero limits mean the library's defaults.
struct open_options {
  bool no_mmap = false;  ///< pread instead of mmap: nothing is zero-copy, but no SIGBUS
  bool verify = false;   ///< check every digest while opening (zt::checksum_error)
  std::uint32_t max_cbor_depth = 0;
  std::uint32_t max_rank = 0;
  std::uint32_t max_name_length = 0;
  std::uint64_t max_manifest_size = 0;
  std::uint64_t max_decoded_size = 0;
  std::uint64_t max_total_cached = 0;

  zt_open_options to_c() const noexcept {
    zt_open_options o{};
    o.flags = (no_mmap ? static_cast<std::uint32_t>(ZT_OPEN_NO_MMAP) : 0u) |
              (verify ? static_cast<std::uint32_t>(ZT_OPEN_VERIFY) : 0u);
    o.max_cbor_depth = max_cbor_depth;
    o.max_rank = max_rank;
    o.max_name_length = max_name_length;
    o.max_manifest_size = max_manifest_size;
    o.max_decoded_size = max_decoded_size;
    o.max_total_cached = max_total_cached;
    return o;
  }
};

/// How a component is stored (zt_write_options). The default is raw, no digest.
struct write_options {
  zt::encoding encoding = zt::encoding::raw;
  std::int32_t level = 0;  ///< zstd level; 0 = the library default (3)
  zt::digest digest = zt::digest::none;

  /// zstd at `level` (0 = default), with an optional digest of the stored bytes.
  static constexpr write_options zstd(std::int32_t level = 0, zt::digest d = zt::digest::none) noexcept {
    write_options o;
    o.encoding = zt::encoding::zstd;
    o.level = level;
    o.digest = d;
    return o;
  }
  /// Stored as is, with an optional digest.
  static constexpr write_options raw(zt::digest d = zt::digest::none) noexcept {
    write_options o;
    o.digest = d;
    return o;
  }

  zt_write_options to_c() const noexcept {
    zt_write_options o{};
    o.encoding = static_cast<std::uint32_t>(encoding);
    o.level = level;
    o.digest = static_cast<std::uint32_t>(digest);
    return o;
  }
};

// ---------------------------------------------------------------------------------------
// Errors: zt::failure, zt::result<T>, and (with exceptions) the zt::error hierarchy
// ---------------------------------------------------------------------------------------

/// A failed call: its status and the library's message (zt_last_error()).
struct failure {
  zt_status status = ZT_ERR_INTERNAL;
  std::string message;
};

namespace detail {
/// value() of a failed result: throws the matching zt::error, or without exceptions
/// prints the message and aborts.
[[noreturn]] inline void raise(zt_status status, const std::string& message);
}  // namespace detail

/// A value or a failure. Returned by every fallible call in no-exceptions mode; usable in
/// both modes. value() of a failed result throws (exceptions) or aborts (no exceptions).
template <class T>
class [[nodiscard]] result {
 public:
  using value_type = T;

  result(T value) noexcept(std::is_nothrow_move_constructible_v<T>) : value_(std::move(value)) {}
  result(failure f) noexcept
      : status_(f.status == ZT_OK ? ZT_ERR_INTERNAL : f.status), message_(std::move(f.message)) {}

  bool ok() const noexcept { return status_ == ZT_OK; }
  explicit operator bool() const noexcept { return ok(); }
  zt_status status() const noexcept { return status_; }
  /// The library's message; "" on success.
  const std::string& message() const noexcept { return message_; }

  T& value() & { check(); return *value_; }
  const T& value() const& { check(); return *value_; }
  T value() && { check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  template <class U>
  T value_or(U&& fallback) const& { return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback)); }
  template <class U>
  T value_or(U&& fallback) && { return ok() ? std::move(*value_) : static_cast<T>(std::forward<U>(fallback)); }

  /// The failure (status and message), e.g. to pass it on as another result.
  failure as_failure() const { return failure{status_, message_}; }

 private:
  void check() const {
    if (!ok()) detail::raise(status_, message_);
  }
  zt_status status_ = ZT_OK;
  std::string message_;
  std::optional<T> value_;
};

/// Success or a failure.
template <>
class [[nodiscard]] result<void> {
 public:
  using value_type = void;

  result() noexcept = default;
  result(failure f) noexcept
      : status_(f.status == ZT_OK ? ZT_ERR_INTERNAL : f.status), message_(std::move(f.message)) {}

  bool ok() const noexcept { return status_ == ZT_OK; }
  explicit operator bool() const noexcept { return ok(); }
  zt_status status() const noexcept { return status_; }
  const std::string& message() const noexcept { return message_; }
  /// Throws (exceptions) or aborts (no exceptions) when failed.
  void value() const {
    if (!ok()) detail::raise(status_, message_);
  }
  failure as_failure() const { return failure{status_, message_}; }

 private:
  zt_status status_ = ZT_OK;
  std::string message_;
};

#if ZT_CPP_EXCEPTIONS
/// Base of every exception this header throws.
class error : public std::runtime_error {
 public:
  error(zt_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  zt_status status() const noexcept { return status_; }

 private:
  zt_status status_;
};
// clang-format off
class invalid_argument : public error { public: explicit invalid_argument(const std::string& m) : error(ZT_ERR_INVALID_ARGUMENT, m) {} };
class io_error         : public error { public: explicit io_error(const std::string& m)         : error(ZT_ERR_IO, m) {} };
class format_error     : public error { public: explicit format_error(const std::string& m)     : error(ZT_ERR_FORMAT, m) {} };
class unsupported      : public error { public: explicit unsupported(const std::string& m)      : error(ZT_ERR_UNSUPPORTED, m) {} };
class not_found        : public error { public: explicit not_found(const std::string& m)        : error(ZT_ERR_NOT_FOUND, m) {} };
class checksum_error   : public error { public: explicit checksum_error(const std::string& m)   : error(ZT_ERR_CHECKSUM, m) {} };
class limit_error      : public error { public: explicit limit_error(const std::string& m)      : error(ZT_ERR_LIMIT, m) {} };
class buffer_too_small : public error { public: explicit buffer_too_small(const std::string& m) : error(ZT_ERR_BUFFER_TOO_SMALL, m) {} };
class state_error      : public error { public: explicit state_error(const std::string& m)      : error(ZT_ERR_STATE, m) {} };
class internal_error   : public error { public: explicit internal_error(const std::string& m)   : error(ZT_ERR_INTERNAL, m) {} };
// clang-format on

/// Throws the zt::error subclass for `f.status`.
[[noreturn]] inline void throw_error(const failure& f) {
  switch (f.status) {
    case ZT_ERR_INVALID_ARGUMENT: throw invalid_argument(f.message);
    case ZT_ERR_IO: throw io_error(f.message);
    case ZT_ERR_FORMAT: throw format_error(f.message);
    case ZT_ERR_UNSUPPORTED: throw unsupported(f.message);
    case ZT_ERR_NOT_FOUND: throw not_found(f.message);
    case ZT_ERR_CHECKSUM: throw checksum_error(f.message);
    case ZT_ERR_LIMIT: throw limit_error(f.message);
    case ZT_ERR_BUFFER_TOO_SMALL: throw buffer_too_small(f.message);
    case ZT_ERR_STATE: throw state_error(f.message);
    case ZT_ERR_INTERNAL: throw internal_error(f.message);
    case ZT_OK: break;  // not a failure: a plain zt::error, as for unknown values
    default: break;
  }
  throw error(f.status, f.message);
}

/// What a fallible call returns: T itself (failures throw).
template <class T>
using ret = T;
#else
/// What a fallible call returns: zt::result<T>.
template <class T>
using ret = result<T>;
#endif

namespace detail {
[[noreturn]] inline void raise(zt_status status, const std::string& message) {
#if ZT_CPP_EXCEPTIONS
  throw_error(failure{status, message});
#else
  std::fprintf(stderr, "ztensor: value() of a failed zt::result: %s: %s\n",
               zt_status_name(static_cast<std::uint32_t>(status)), message.c_str());
  std::abort();
#endif
}

#if ZT_CPP_EXCEPTIONS
template <class T>
T unwrap(result<T>&& r) { return std::move(r).value(); }
inline void unwrap(result<void>&& r) { r.value(); }
#else
template <class T>
result<T> unwrap(result<T>&& r) noexcept { return std::move(r); }
#endif

/// The failure of the C call that just returned `status` (reads zt_last_error() now).
inline failure last_failure(zt_status status) {
  const char* m = zt_last_error();
  return failure{status, std::string(m != nullptr && *m != '\0' ? m : zt_status_name(static_cast<std::uint32_t>(status)))};
}
inline result<void> check(zt_status status) {
  if (status == ZT_OK) return result<void>();
  return last_failure(status);
}
inline failure fail(zt_status status, std::string message) { return failure{status, std::move(message)}; }
inline result<void> check_text(const string_arg& s, const char* what) {
  if (s.valid()) return result<void>();
  return fail(ZT_ERR_INVALID_ARGUMENT, std::string(what) + " contains a NUL byte");
}

inline std::string_view sv(const char* s) noexcept { return s == nullptr ? std::string_view() : std::string_view(s); }
inline std::optional<std::string_view> opt_sv(const char* s) noexcept {
  if (s == nullptr) return std::nullopt;
  return std::string_view(s);
}
inline std::string quoted(const char* s) { return "'" + std::string(s == nullptr ? "" : s) + "'"; }

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

// Contiguous ranges of trivially copyable elements (vector, array, span, C array ...).
template <class R>
using range_element_t = std::remove_cv_t<std::remove_pointer_t<decltype(std::data(std::declval<const R&>()))>>;
template <class R, class = void>
struct is_data_range : std::false_type {};
template <class R>
struct is_data_range<R, std::void_t<decltype(std::data(std::declval<const R&>())), decltype(std::size(std::declval<const R&>()))>>
    : std::bool_constant<std::is_pointer_v<decltype(std::data(std::declval<const R&>()))> &&
                         !std::is_void_v<range_element_t<R>> && std::is_trivially_copyable_v<range_element_t<R>>> {};
template <class R, class = void>
struct is_typed_range : std::false_type {};
template <class R>
struct is_typed_range<R, std::enable_if_t<is_data_range<R>::value>> : std::bool_constant<has_dtype_v<range_element_t<R>>> {};

template <class R>
using if_data_range = std::enable_if_t<is_data_range<R>::value, int>;
template <class R>
using if_typed_range = std::enable_if_t<is_typed_range<R>::value, int>;

template <class R>
const void* range_data(const R& r) noexcept { return static_cast<const void*>(std::data(r)); }
template <class R>
std::size_t range_bytes(const R& r) noexcept { return static_cast<std::size_t>(std::size(r)) * sizeof(range_element_t<R>); }

inline failure bool_failure(std::size_t at, unsigned value) {
  return fail(ZT_ERR_FORMAT, "bool byte " + std::to_string(value) + " at index " + std::to_string(at) + " is neither 0 nor 1");
}
/// Index of the first byte that is not 0 or 1, or n.
inline std::size_t first_non_bool(const unsigned char* p, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] > 1) return i;
  return n;
}
}  // namespace detail

// ---------------------------------------------------------------------------------------
// tensor_view
// ---------------------------------------------------------------------------------------

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
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, "the view holds " + std::string(dtype_name(dtype_)) + " data, not " +
                                                       std::string(dtype_name(expected)));
    if (sizeof(T) != dtype_size(expected))
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, "a " + std::to_string(sizeof(T)) + "-byte type can't hold " +
                                                       std::string(dtype_name(expected)) + " elements");
    if (size_ % sizeof(T) != 0)
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, "the view's " + std::to_string(size_) +
                                                       " bytes are not a whole number of " + std::to_string(sizeof(T)) +
                                                       "-byte elements");
    if (size_ != 0 && reinterpret_cast<std::uintptr_t>(data_) % alignof(T) != 0)
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, "the view's data is not aligned to " + std::to_string(alignof(T)) + " bytes");
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

// ---------------------------------------------------------------------------------------
// Reading: Component, Object, Reader
// ---------------------------------------------------------------------------------------

class Object;
class Reader;

namespace detail {
inline result<tensor_view> view(const zt_reader* r, std::size_t object, const char* role) {
  zt_view v{};
  zt_status st = zt_component_view(r, object, role, &v);
  if (st != ZT_OK) return last_failure(st);
  return result<tensor_view>(tensor_view(v));
}
inline result<std::string_view> attributes(const zt_reader* r, std::size_t object) {
  const char* json = nullptr;
  zt_status st = zt_attributes_json(r, object, &json);
  if (st != ZT_OK) return last_failure(st);
  return result<std::string_view>(sv(json));
}
inline zt_object_info object_info(const zt_reader* r, std::size_t index) noexcept {
  zt_object_info info{};
  if (zt_object_info_get(r, index, &info) != ZT_OK) info = zt_object_info{};
  return info;
}
inline zt_component_info component_info(const zt_reader* r, std::size_t object, std::size_t index) noexcept {
  zt_component_info info{};
  if (zt_component_info_get(r, object, index, &info) != ZT_OK) info = zt_component_info{};
  return info;
}
}  // namespace detail

/// One component of an object. Borrows from the Reader; cheap to copy.
class Component {
 public:
  Component() noexcept = default;

  std::string_view role() const noexcept { return detail::sv(info_.role); }
  zt::dtype dtype() const noexcept { return static_cast<zt::dtype>(info_.dtype); }
  /// The logical type ("f8_e4m3fn", "complex64" ...), if any.
  std::optional<std::string_view> type() const noexcept { return detail::opt_sv(info_.type); }
  zt::encoding encoding() const noexcept { return static_cast<zt::encoding>(info_.encoding); }
  /// Absolute file offset of the stored bytes.
  std::uint64_t offset() const noexcept { return info_.offset; }
  /// Stored (possibly compressed) bytes.
  std::uint64_t length() const noexcept { return info_.length; }
  /// Bytes after decoding.
  std::uint64_t decoded_length() const noexcept { return info_.decoded_length; }
  /// "sha256:...", "crc32c:0x...", if recorded.
  std::optional<std::string_view> digest() const noexcept { return detail::opt_sv(info_.digest); }
  /// Elements of the storage dtype after decoding.
  std::uint64_t count() const noexcept {
    std::size_t s = dtype_size(dtype());
    return s == 0 ? 0 : info_.decoded_length / s;
  }
  std::size_t index() const noexcept { return index_; }
  std::size_t object_index() const noexcept { return object_; }
  const zt_component_info& info() const noexcept { return info_; }

  /// The decoded bytes, borrowed (zero-copy for raw components of a mapped file, else
  /// decoded once and cached by the Reader).
  ret<tensor_view> view() const { return detail::unwrap(detail::view(reader_, object_, info_.role)); }

  /// Copies or decodes into `dst`, which must be exactly decoded_length() bytes
  /// (buffer_too_small when smaller, invalid_argument when larger).
  ret<void> read_into(span<std::byte> dst) const { return read_into(dst.data(), dst.size()); }
  ret<void> read_into(void* dst, std::size_t size) const {
    return detail::unwrap(detail::check(zt_component_read(reader_, object_, info_.role, dst, size)));
  }

  /// A copy as std::vector<T>; invalid_argument unless dtype_of<T> is the stored dtype.
  template <class T>
  ret<std::vector<T>> read() const {
    static_assert(has_dtype_v<T>, "read<T>(): T has no zt::dtype_of; use read<T>(zt::dtype)");
    return detail::unwrap(try_read<T>(dtype_v<T>));
  }
  /// A copy as std::vector<T> when the stored dtype is `expected` and T has its size,
  /// e.g. read<uint16_t>(zt::dtype::f16).
  template <class T>
  ret<std::vector<T>> read(zt::dtype expected) const {
    return detail::unwrap(try_read<T>(expected));
  }

  /// Every element converted to dtype_of<T> by the library (floats among f64/f32/f16/bf16
  /// and fp8 logical types, integers widened, small integers to floats); unsupported for a
  /// lossy or meaningless conversion.
  template <class T>
  ret<std::vector<T>> read_as() const {
    static_assert(has_dtype_v<T>, "read_as<T>(): T has no zt::dtype_of; use read_as<T>(zt::dtype)");
    return detail::unwrap(try_read_as<T>(dtype_v<T>));
  }
  /// Converted to `target`, stored in T of the same size, e.g. read_as<uint16_t>(zt::dtype::bf16).
  template <class T>
  ret<std::vector<T>> read_as(zt::dtype target) const {
    return detail::unwrap(try_read_as<T>(target));
  }

  /// The decoded bytes [offset, offset + dst.size()) into `dst` (invalid_argument when
  /// the range leaves the component). For zstd only the frames needed are decoded.
  ret<void> read_range(std::uint64_t offset, span<std::byte> dst) const { return read_range(offset, dst.data(), dst.size()); }
  ret<void> read_range(std::uint64_t offset, void* dst, std::size_t size) const {
    return detail::unwrap(detail::check(zt_component_read_range(reader_, object_, info_.role, offset, dst, size)));
  }

  /// Checks the stored digest: checksum_error on mismatch, not_found when there is none,
  /// unsupported for an algorithm the library doesn't know.
  ret<void> verify() const { return detail::unwrap(detail::check(zt_component_verify(reader_, object_, info_.role))); }

 private:
  friend class Object;
  friend class component_iterator;

  Component(const zt_reader* r, std::size_t object, std::size_t index, const zt_component_info& info) noexcept
      : reader_(r), object_(object), index_(index), info_(info) {}

  template <class T>
  result<std::vector<T>> try_read(zt::dtype expected) const {
    static_assert(std::is_trivially_copyable_v<T>, "read<T>(): T must be trivially copyable");
    static_assert(detail::little_endian, "typed access assumes a little-endian host");
    if (dtype() != expected)
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, "component " + detail::quoted(info_.role) + " holds " +
                                                       std::string(dtype_name(dtype())) + " data, not " +
                                                       std::string(dtype_name(expected)) + " (read_as<T>() converts)");
    if (sizeof(T) != dtype_size(expected))
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, "a " + std::to_string(sizeof(T)) + "-byte type can't hold " +
                                                       std::string(dtype_name(expected)) + " elements");
    const std::uint64_t bytes = info_.decoded_length;
    if (bytes % sizeof(T) != 0)
      return detail::fail(ZT_ERR_FORMAT, "component " + detail::quoted(info_.role) + ": " + std::to_string(bytes) +
                                             " bytes are not a whole number of elements");
    if (!detail::fits_size(bytes)) return detail::fail(ZT_ERR_LIMIT, "component too large for this address space");
    const std::size_t n = detail::to_size(bytes / sizeof(T));
    if constexpr (std::is_same_v<std::remove_cv_t<T>, bool>) {
      std::vector<unsigned char> raw(n);
      zt_status st = zt_component_read(reader_, object_, info_.role, raw.data(), raw.size());
      if (st != ZT_OK) return detail::last_failure(st);
      std::size_t bad = detail::first_non_bool(raw.data(), raw.size());
      if (bad != raw.size()) return detail::bool_failure(bad, raw[bad]);
      return result<std::vector<T>>(std::vector<T>(raw.begin(), raw.end()));
    } else {
      std::vector<T> out(n);
      zt_status st = zt_component_read(reader_, object_, info_.role, out.data(), n * sizeof(T));
      if (st != ZT_OK) return detail::last_failure(st);
      return result<std::vector<T>>(std::move(out));
    }
  }

  template <class T>
  result<std::vector<T>> try_read_as(zt::dtype target) const {
    static_assert(std::is_trivially_copyable_v<T>, "read_as<T>(): T must be trivially copyable");
    static_assert(detail::little_endian, "typed access assumes a little-endian host");
    if (sizeof(T) != dtype_size(target))
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, "a " + std::to_string(sizeof(T)) + "-byte type can't hold " +
                                                       std::string(dtype_name(target)) + " elements");
    const std::uint64_t n64 = count();
    if (n64 > std::numeric_limits<std::uint64_t>::max() / sizeof(T) || !detail::fits_size(n64 * sizeof(T)))
      return detail::fail(ZT_ERR_LIMIT, "component too large for this address space");
    const std::size_t n = detail::to_size(n64);
    const auto to = static_cast<std::uint32_t>(target);
    if constexpr (std::is_same_v<std::remove_cv_t<T>, bool>) {
      std::vector<unsigned char> raw(n);
      zt_status st = zt_component_read_as(reader_, object_, info_.role, to, raw.data(), raw.size());
      if (st != ZT_OK) return detail::last_failure(st);
      std::size_t bad = detail::first_non_bool(raw.data(), raw.size());
      if (bad != raw.size()) return detail::bool_failure(bad, raw[bad]);
      return result<std::vector<T>>(std::vector<T>(raw.begin(), raw.end()));
    } else {
      std::vector<T> out(n);
      zt_status st = zt_component_read_as(reader_, object_, info_.role, to, out.data(), n * sizeof(T));
      if (st != ZT_OK) return detail::last_failure(st);
      return result<std::vector<T>>(std::move(out));
    }
  }

  const zt_reader* reader_ = nullptr;
  std::size_t object_ = 0;
  std::size_t index_ = 0;
  zt_component_info info_{};
};

/// Iterates the components of an object; dereferences to a Component value.
class component_iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Component;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = Component;

  component_iterator() noexcept = default;
  Component operator*() const noexcept { return Component(reader_, object_, index_, detail::component_info(reader_, object_, index_)); }
  component_iterator& operator++() noexcept { ++index_; return *this; }
  component_iterator operator++(int) noexcept { component_iterator old = *this; ++index_; return old; }
  friend bool operator==(const component_iterator& a, const component_iterator& b) noexcept {
    return a.reader_ == b.reader_ && a.object_ == b.object_ && a.index_ == b.index_;
  }
  friend bool operator!=(const component_iterator& a, const component_iterator& b) noexcept { return !(a == b); }

 private:
  friend class component_range;
  component_iterator(const zt_reader* r, std::size_t object, std::size_t index) noexcept : reader_(r), object_(object), index_(index) {}
  const zt_reader* reader_ = nullptr;
  std::size_t object_ = 0;
  std::size_t index_ = 0;
};

/// The components of an object, in stored order.
class component_range {
 public:
  component_iterator begin() const noexcept { return component_iterator(reader_, object_, 0); }
  component_iterator end() const noexcept { return component_iterator(reader_, object_, size_); }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

 private:
  friend class Object;
  component_range(const zt_reader* r, std::size_t object, std::size_t size) noexcept : reader_(r), object_(object), size_(size) {}
  const zt_reader* reader_;
  std::size_t object_;
  std::size_t size_;
};

/// One object of a file. Borrows from the Reader; cheap to copy.
class Object {
 public:
  Object() noexcept = default;

  std::string_view name() const noexcept { return detail::sv(info_.name); }
  /// "dense", "sparse_csr", "sparse_coo", "quantized_group", or as stored.
  std::string_view format() const noexcept { return detail::sv(info_.format); }
  span<const std::uint64_t> shape() const noexcept { return span<const std::uint64_t>(info_.shape, info_.ndim); }
  std::size_t ndim() const noexcept { return info_.ndim; }
  std::size_t index() const noexcept { return index_; }
  std::size_t component_count() const noexcept { return info_.component_count; }
  const zt_object_info& info() const noexcept { return info_; }

  component_range components() const noexcept { return component_range(reader_, index_, info_.component_count); }
  /// Component `i` (not_found past the end).
  ret<Component> component_at(std::size_t i) const { return detail::unwrap(try_component_at(i)); }
  /// The component with this role (not_found when absent).
  ret<Component> component(const string_arg& role) const { return detail::unwrap(try_component(role)); }
  ret<Component> component(std::size_t) const = delete;  // by index: component_at()
  /// The component with this role, or nullopt. Allocates nothing.
  std::optional<Component> find_component(const string_arg& role) const noexcept {
    std::size_t i = 0;
    zt_component_info ci{};
    if (!role.valid() || zt_component_find(reader_, index_, role.c_str(), &i) != ZT_OK ||
        zt_component_info_get(reader_, index_, i, &ci) != ZT_OK)
      return std::nullopt;
    return Component(reader_, index_, i, ci);
  }

  /// Component::view() of the component with this role.
  ret<tensor_view> view(const string_arg& role = "data") const {
    if (result<void> r = detail::check_text(role, "role"); !r.ok()) return detail::unwrap(result<tensor_view>(r.as_failure()));
    return detail::unwrap(detail::view(reader_, index_, role.c_str()));
  }
  /// Component::read_into() of the component with this role.
  ret<void> read_into(span<std::byte> dst, const string_arg& role = "data") const { return read_into(dst.data(), dst.size(), role); }
  ret<void> read_into(void* dst, std::size_t size, const string_arg& role = "data") const {
    if (result<void> r = detail::check_text(role, "role"); !r.ok()) return detail::unwrap(std::move(r));
    return detail::unwrap(detail::check(zt_component_read(reader_, index_, role.c_str(), dst, size)));
  }
  /// Component::read_range() of the component with this role.
  ret<void> read_range(std::uint64_t offset, span<std::byte> dst, const string_arg& role = "data") const {
    return read_range(offset, dst.data(), dst.size(), role);
  }
  ret<void> read_range(std::uint64_t offset, void* dst, std::size_t size, const string_arg& role = "data") const {
    if (result<void> r = detail::check_text(role, "role"); !r.ok()) return detail::unwrap(std::move(r));
    return detail::unwrap(detail::check(zt_component_read_range(reader_, index_, role.c_str(), offset, dst, size)));
  }
  /// Component::read<T>() of the component with this role.
  template <class T>
  ret<std::vector<T>> read(const string_arg& role = "data") const {
    static_assert(has_dtype_v<T>, "read<T>(): T has no zt::dtype_of");
    result<Component> c = try_component(role);
    if (!c.ok()) return detail::unwrap(result<std::vector<T>>(c.as_failure()));
    return detail::unwrap(c->template try_read<T>(dtype_v<T>));
  }
  /// Component::read_as<T>() of the component with this role.
  template <class T>
  ret<std::vector<T>> read_as(const string_arg& role = "data") const {
    static_assert(has_dtype_v<T>, "read_as<T>(): T has no zt::dtype_of");
    result<Component> c = try_component(role);
    if (!c.ok()) return detail::unwrap(result<std::vector<T>>(c.as_failure()));
    return detail::unwrap(c->template try_read_as<T>(dtype_v<T>));
  }

  /// Checks every component that has a digest (the first failure is reported).
  ret<void> verify() const { return detail::unwrap(try_verify()); }
  /// Checks the values beyond the manifest: sparse structure, bool bytes (format_error).
  ret<void> validate() const { return detail::unwrap(detail::check(zt_object_validate(reader_, index_))); }
  /// The object's attributes as JSON ("{}" when none).
  ret<std::string_view> attributes_json() const { return detail::unwrap(detail::attributes(reader_, index_)); }

 private:
  friend class Reader;
  friend class object_iterator;

  Object(const zt_reader* r, std::size_t index, const zt_object_info& info) noexcept : reader_(r), index_(index), info_(info) {}

  result<Component> try_component_at(std::size_t i) const {
    zt_component_info ci{};
    zt_status st = zt_component_info_get(reader_, index_, i, &ci);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<Component>(Component(reader_, index_, i, ci));
  }
  result<Component> try_component(const string_arg& role) const {
    if (result<void> r = detail::check_text(role, "role"); !r.ok()) return r.as_failure();
    std::size_t i = 0;
    zt_status st = zt_component_find(reader_, index_, role.c_str(), &i);
    if (st != ZT_OK) return detail::last_failure(st);
    return try_component_at(i);
  }
  result<void> try_verify() const {
    for (std::size_t i = 0; i < info_.component_count; ++i) {
      zt_component_info ci{};
      zt_status st = zt_component_info_get(reader_, index_, i, &ci);
      if (st == ZT_OK && ci.digest != nullptr) st = zt_component_verify(reader_, index_, ci.role);
      if (st != ZT_OK) return detail::last_failure(st);
    }
    return result<void>();
  }

  const zt_reader* reader_ = nullptr;
  std::size_t index_ = 0;
  zt_object_info info_{};
};

/// Iterates the objects of a file; dereferences to an Object value.
class object_iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Object;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = Object;

  object_iterator() noexcept = default;
  Object operator*() const noexcept { return Object(reader_, index_, detail::object_info(reader_, index_)); }
  object_iterator& operator++() noexcept { ++index_; return *this; }
  object_iterator operator++(int) noexcept { object_iterator old = *this; ++index_; return old; }
  friend bool operator==(const object_iterator& a, const object_iterator& b) noexcept {
    return a.reader_ == b.reader_ && a.index_ == b.index_;
  }
  friend bool operator!=(const object_iterator& a, const object_iterator& b) noexcept { return !(a == b); }

 private:
  friend class Reader;
  object_iterator(const zt_reader* r, std::size_t index) noexcept : reader_(r), index_(index) {}
  const zt_reader* reader_ = nullptr;
  std::size_t index_ = 0;
};

/// An open .zt file (v1.2, v1.1, legacy v0.1). Move-only; closing frees everything it
/// lent out. Its const members may be called from many threads at once.
class Reader {
 public:
  using iterator = object_iterator;
  using const_iterator = object_iterator;

  /// A closed reader (no objects), as a moved-from one.
  Reader() noexcept = default;

  /// Opens a file: maps it (unless options.no_mmap) and reads the manifest, no tensor data.
  static ret<Reader> open(const string_arg& path, const open_options& options = {}) {
    return detail::unwrap(try_open(path, options));
  }
  /// Opens a file held in memory. Borrows the bytes: keep them alive and unchanged until
  /// the Reader is closed. Views are zero-copy when `data` is 64-byte aligned.
  static ret<Reader> open_memory(const void* data, std::size_t size, const open_options& options = {}) {
    return detail::unwrap(try_open_memory(data, size, options));
  }
  static ret<Reader> open_memory(span<const std::byte> bytes, const open_options& options = {}) {
    return detail::unwrap(try_open_memory(bytes.data(), bytes.size(), options));
  }

  Reader(Reader&&) noexcept = default;
  Reader& operator=(Reader&&) noexcept = default;
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader() = default;

  bool is_open() const noexcept { return handle_ != nullptr; }
  explicit operator bool() const noexcept { return is_open(); }
  /// Closes now (as the destructor would); every borrowed view dies with it.
  void close() noexcept { handle_.reset(); }
  const zt_reader* handle() const noexcept { return handle_.get(); }

  /// Number of objects.
  std::size_t size() const noexcept { return zt_object_count(handle_.get()); }
  bool empty() const noexcept { return size() == 0; }
  /// The file's format version: "1.2.0", "1.1.0", "0.1.0" ...; "" when closed.
  std::string_view version() const noexcept { return detail::sv(zt_file_version(handle_.get())); }
  /// The container format: "zt", "safetensors", "gguf" or "tensogram"; "" when closed.
  std::string_view file_format() const noexcept { return detail::sv(zt_file_format(handle_.get())); }

  object_iterator begin() const noexcept { return object_iterator(handle_.get(), 0); }
  object_iterator end() const noexcept { return object_iterator(handle_.get(), size()); }

  /// Object `index` (not_found past the end).
  ret<Object> at(std::size_t index) const { return detail::unwrap(try_at(index)); }
  /// The object with this name (not_found when absent).
  ret<Object> operator[](const string_arg& name) const { return detail::unwrap(try_get(name)); }
  ret<Object> operator[](std::size_t) const = delete;  // by index: at()
  /// The object with this name, or nullopt. Allocates nothing.
  std::optional<Object> find(const string_arg& name) const noexcept {
    std::size_t index = 0;
    zt_object_info info{};
    if (!name.valid() || zt_object_find(handle_.get(), name.c_str(), &index) != ZT_OK ||
        zt_object_info_get(handle_.get(), index, &info) != ZT_OK)
      return std::nullopt;
    return Object(handle_.get(), index, info);
  }
  bool contains(const string_arg& name) const noexcept { return find(name).has_value(); }

  /// Checks every component that has a digest; the first failure is reported.
  ret<void> verify() const { return detail::unwrap(detail::check(zt_verify(handle_.get()))); }
  /// The file's attributes as JSON ("{}" when none).
  ret<std::string_view> attributes_json() const { return detail::unwrap(detail::attributes(handle_.get(), SIZE_MAX)); }

 private:
  struct closer {
    void operator()(zt_reader* r) const noexcept { zt_close(r); }
  };

  explicit Reader(zt_reader* r) noexcept : handle_(r) {}

  static result<Reader> try_open(const string_arg& path, const open_options& options) {
    if (result<void> r = detail::check_text(path, "path"); !r.ok()) return r.as_failure();
    const zt_open_options o = options.to_c();
    zt_reader* raw = nullptr;
    zt_status st = zt_open_with(path.c_str(), &o, &raw);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<Reader>(Reader(raw));
  }
  static result<Reader> try_open_memory(const void* data, std::size_t size, const open_options& options) {
    const zt_open_options o = options.to_c();
    zt_reader* raw = nullptr;
    zt_status st = zt_open_memory_with(data, size, &o, &raw);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<Reader>(Reader(raw));
  }
  result<Object> try_at(std::size_t index) const {
    zt_object_info info{};
    zt_status st = zt_object_info_get(handle_.get(), index, &info);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<Object>(Object(handle_.get(), index, info));
  }
  result<Object> try_get(const string_arg& name) const {
    if (result<void> r = detail::check_text(name, "name"); !r.ok()) return r.as_failure();
    std::size_t index = 0;
    zt_status st = zt_object_find(handle_.get(), name.c_str(), &index);
    if (st != ZT_OK) return detail::last_failure(st);
    return try_at(index);
  }

  std::unique_ptr<zt_reader, closer> handle_;
};

// ---------------------------------------------------------------------------------------
// Writing: Writer, object_builder, component_builder
// ---------------------------------------------------------------------------------------
//
// A Writer has at most one open object_builder, which has at most one open
// component_builder (the C API allows no more). They point at each other while open and
// fix the links up when moved, so any destruction order is safe: a Writer destroyed first
// closes its open builders, which then do nothing.

class Writer;
class object_builder;

/// Streams one component of an open object in chunks. Scoped: destroying it while open
/// ends the component.
class component_builder {
 public:
  component_builder() noexcept = default;
  component_builder(component_builder&& o) noexcept { take(o); }
  component_builder& operator=(component_builder&& o) noexcept {
    if (this != &o) {
      close_quietly();
      take(o);
    }
    return *this;
  }
  component_builder(const component_builder&) = delete;
  component_builder& operator=(const component_builder&) = delete;
  ~component_builder() { close_quietly(); }

  bool is_open() const noexcept { return owner_ != nullptr; }

  /// Appends bytes (any chunk size; the element type is not checked against the dtype).
  ret<void> write(const void* data, std::size_t size) { return detail::unwrap(try_write(data, size)); }
  template <class Range, detail::if_data_range<Range> = 0>
  ret<void> write(const Range& data) {
    return detail::unwrap(try_write(detail::range_data(data), detail::range_bytes(data)));
  }
  /// Ends the component (invalid_argument when the bytes aren't whole elements; the
  /// component is then left out). The builder is closed whatever the result.
  ret<void> end() { return detail::unwrap(try_end()); }

 private:
  friend class object_builder;
  explicit component_builder(object_builder* owner) noexcept;  // links itself to owner

  zt_writer* handle() const noexcept;
  void take(component_builder& o) noexcept;
  void unlink() noexcept;
  result<void> not_open() const { return detail::fail(ZT_ERR_STATE, "the component builder is not open (ended or moved from)"); }
  result<void> try_write(const void* data, std::size_t size) {
    if (!is_open()) return not_open();
    return detail::check(zt_writer_write(handle(), data, size));
  }
  result<void> try_end() {
    if (!is_open()) return not_open();
    zt_status st = zt_writer_end_component(handle());
    unlink();
    return detail::check(st);
  }
  void close_quietly() noexcept {
    if (is_open()) {
      (void)zt_writer_end_component(handle());
      unlink();
    }
  }

  object_builder* owner_ = nullptr;  // non-null while open
};

/// Builds one object of any format. Scoped: destroying it while open ends it (see the
/// top of this header).
class object_builder {
 public:
  object_builder() noexcept = default;
  object_builder(object_builder&& o) noexcept { take(o); }
  object_builder& operator=(object_builder&& o) noexcept {
    if (this != &o) {
      close_quietly();
      take(o);
    }
    return *this;
  }
  object_builder(const object_builder&) = delete;
  object_builder& operator=(const object_builder&) = delete;
  ~object_builder() { close_quietly(); }

  bool is_open() const noexcept { return writer_ != nullptr; }
  /// The object's name ("" for an empty builder).
  std::string_view name() const noexcept { return name_; }

  /// Adds a whole component; the dtype is dtype_of the element type. `type` is an
  /// optional logical type ("f8_e4m3fn", "complex64" ...).
  template <class Range, detail::if_typed_range<Range> = 0>
  ret<void> add_component(const string_arg& role, const Range& data, const write_options& options = {},
                          const string_arg& type = {}) {
    return detail::unwrap(try_add(role, dtype_v<detail::range_element_t<Range>>, detail::range_data(data),
                                  detail::range_bytes(data), options, type));
  }
  /// Adds a whole component of an explicit dtype; the data are taken as bytes.
  template <class Range, detail::if_data_range<Range> = 0>
  ret<void> add_component(const string_arg& role, zt::dtype type_of_data, const Range& data,
                          const write_options& options = {}, const string_arg& type = {}) {
    return detail::unwrap(try_add(role, type_of_data, detail::range_data(data), detail::range_bytes(data), options, type));
  }

  /// Begins streaming a component; write() it in chunks, then end() it.
  ret<component_builder> begin_component(const string_arg& role, zt::dtype type_of_data, const write_options& options = {},
                                         const string_arg& type = {}) & {
    return detail::unwrap(try_begin(role, type_of_data, options, type));
  }
  template <class T>
  ret<component_builder> begin_component(const string_arg& role, const write_options& options = {},
                                         const string_arg& type = {}) & {
    static_assert(has_dtype_v<T>, "begin_component<T>(): T has no zt::dtype_of");
    return detail::unwrap(try_begin(role, dtype_v<T>, options, type));
  }

  /// Sets this object's attributes from a JSON object text, while it is open (afterwards:
  /// Writer::set_attributes_json(name, json)).
  ret<void> set_attributes_json(const string_arg& json) {
    if (!is_open()) return detail::unwrap(not_open());
    if (result<void> r = detail::check_text(json, "json"); !r.ok()) return detail::unwrap(std::move(r));
    return detail::unwrap(detail::check(zt_writer_set_attributes_json(handle(), name_.c_str(), json.c_str())));
  }

  /// Ends the object after the library checks it against its format; a refused object
  /// (invalid_argument) is left out of the file and the writer stays usable. The builder
  /// stays open only when a component is still being streamed (state_error).
  ret<void> end() { return detail::unwrap(try_end()); }

 private:
  friend class Writer;
  friend class component_builder;
  object_builder(Writer* writer, std::string&& name) noexcept;  // links itself to writer

  zt_writer* handle() const noexcept;
  void take(object_builder& o) noexcept;
  void unlink() noexcept;
  result<void> not_open() const { return detail::fail(ZT_ERR_STATE, "the object builder is not open (ended or moved from)"); }

  result<void> try_add(const string_arg& role, zt::dtype t, const void* data, std::size_t size, const write_options& options,
                       const string_arg& type) {
    if (!is_open()) return not_open();
    if (result<void> r = detail::check_text(role, "role"); !r.ok()) return r;
    if (result<void> r = detail::check_text(type, "type"); !r.ok()) return r;
    const zt_write_options o = options.to_c();
    return detail::check(zt_writer_add_component(handle(), role.c_str(), static_cast<std::uint32_t>(t), type.c_str(), data, size, &o));
  }
  result<component_builder> try_begin(const string_arg& role, zt::dtype t, const write_options& options, const string_arg& type) {
    if (!is_open()) return not_open().as_failure();
    if (result<void> r = detail::check_text(role, "role"); !r.ok()) return r.as_failure();
    if (result<void> r = detail::check_text(type, "type"); !r.ok()) return r.as_failure();
    const zt_write_options o = options.to_c();
    zt_status st = zt_writer_begin_component(handle(), role.c_str(), static_cast<std::uint32_t>(t), type.c_str(), &o);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<component_builder>(component_builder(this));
  }
  result<void> try_end() {
    if (!is_open()) return not_open();
    zt_status st = zt_writer_end_object(handle());
    // ZT_ERR_STATE: still open (a component is being streamed, or the writer failed
    // earlier and can't end anything); anything else closed it, accepted or dropped.
    if (st != ZT_ERR_STATE) unlink();
    return detail::check(st);
  }
  void close_quietly() noexcept {
    if (is_open()) {
      if (stream_ != nullptr) stream_->close_quietly();
      (void)zt_writer_end_object(handle());
      unlink();
    }
  }

  Writer* writer_ = nullptr;               // non-null while open
  component_builder* stream_ = nullptr;    // the open component builder, if any
  std::string name_;
};

/// Writes a .zt file (always format 1.2.0). Move-only. The bytes go to a temporary file
/// beside the path; finish() renames it into place, and destroying an unfinished Writer
/// removes it, so nothing appears at the path unless finish() succeeds.
class Writer {
 public:
  /// An empty writer, as a moved-from one; every call on it is invalid_argument.
  Writer() noexcept = default;

  static ret<Writer> create(const string_arg& path) { return detail::unwrap(try_create(path)); }

  Writer(Writer&& o) noexcept : handle_(std::move(o.handle_)), open_(std::exchange(o.open_, nullptr)) {
    if (open_ != nullptr) open_->writer_ = this;
  }
  Writer& operator=(Writer&& o) noexcept {
    if (this != &o) {
      close_open();
      handle_ = std::move(o.handle_);  // frees (discards) this writer's own file, if any
      open_ = std::exchange(o.open_, nullptr);
      if (open_ != nullptr) open_->writer_ = this;
    }
    return *this;
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer() { close_open(); }

  bool is_open() const noexcept { return handle_ != nullptr; }
  explicit operator bool() const noexcept { return is_open(); }
  zt_writer* handle() const noexcept { return handle_.get(); }

  /// Adds a dense object with one "data" component; the dtype is dtype_of the element
  /// type and the data must hold exactly the shape's element count.
  template <class Range, detail::if_typed_range<Range> = 0>
  ret<void> add(const string_arg& name, const Range& data, shape_ref shape, const write_options& options = {}) {
    return detail::unwrap(try_add(name, dtype_v<detail::range_element_t<Range>>, detail::range_data(data),
                                  detail::range_bytes(data), shape, options));
  }
  /// Adds a dense object of an explicit dtype (e.g. f16 / bf16 held in uint16_t); the
  /// data are taken as bytes and must be the shape's element count times the dtype size.
  template <class Range, detail::if_data_range<Range> = 0>
  ret<void> add(const string_arg& name, zt::dtype type, const Range& data, shape_ref shape, const write_options& options = {}) {
    return detail::unwrap(try_add(name, type, detail::range_data(data), detail::range_bytes(data), shape, options));
  }

  /// Begins an object of any format; add its components, then end() the builder.
  ret<object_builder> begin_object(const string_arg& name, const string_arg& format, shape_ref shape = {}) & {
    return detail::unwrap(try_begin_object(name, format, shape));
  }

  /// Sets the file's attributes from a JSON object text; a second call replaces them.
  ret<void> set_attributes_json(const string_arg& json) { return detail::unwrap(try_attributes(string_arg(), json)); }
  /// Sets the attributes of an object already begun (open or ended).
  ret<void> set_attributes_json(const string_arg& object, const string_arg& json) {
    return detail::unwrap(try_attributes(object, json));
  }

  /// Writes the manifest and footer, syncs and renames the file into place. With an
  /// object open: state_error, and the writer stays usable. Otherwise, whatever the
  /// result, the writer accepts nothing more (state_error).
  ret<void> finish() { return detail::unwrap(detail::check(zt_writer_finish(handle_.get()))); }

 private:
  friend class object_builder;
  struct freer {
    void operator()(zt_writer* w) const noexcept { zt_writer_free(w); }
  };

  explicit Writer(zt_writer* w) noexcept : handle_(w) {}

  void close_open() noexcept {
    if (open_ != nullptr) open_->close_quietly();  // ends it and unlinks: open_ is now null
  }
  static result<Writer> try_create(const string_arg& path) {
    if (result<void> r = detail::check_text(path, "path"); !r.ok()) return r.as_failure();
    zt_writer* raw = nullptr;
    zt_status st = zt_writer_create(path.c_str(), &raw);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<Writer>(Writer(raw));
  }
  result<void> try_add(const string_arg& name, zt::dtype t, const void* data, std::size_t size, shape_ref shape,
                       const write_options& options) {
    if (result<void> r = detail::check_text(name, "name"); !r.ok()) return r;
    const zt_write_options o = options.to_c();
    return detail::check(zt_writer_add(handle_.get(), name.c_str(), static_cast<std::uint32_t>(t), shape.data(), shape.size(),
                                       data, size, &o));
  }
  result<object_builder> try_begin_object(const string_arg& name, const string_arg& format, shape_ref shape) {
    if (result<void> r = detail::check_text(name, "name"); !r.ok()) return r.as_failure();
    if (result<void> r = detail::check_text(format, "format"); !r.ok()) return r.as_failure();
    // Allocate before the object is begun, so nothing can throw while it is open and unowned.
    std::string owned_name(name.c_str() == nullptr ? "" : name.c_str());
    zt_status st = zt_writer_begin_object(handle_.get(), name.c_str(), format.c_str(), shape.data(), shape.size());
    if (st != ZT_OK) return detail::last_failure(st);
    return result<object_builder>(object_builder(this, std::move(owned_name)));
  }
  result<void> try_attributes(const string_arg& object, const string_arg& json) {
    if (result<void> r = detail::check_text(object, "object"); !r.ok()) return r;
    if (result<void> r = detail::check_text(json, "json"); !r.ok()) return r;
    return detail::check(zt_writer_set_attributes_json(handle_.get(), object.c_str(), json.c_str()));
  }

  std::unique_ptr<zt_writer, freer> handle_;
  object_builder* open_ = nullptr;  // the builder of the open object, if any
};

// The links between builders and writers (defined here, where all three are complete).

inline component_builder::component_builder(object_builder* owner) noexcept : owner_(owner) { owner_->stream_ = this; }
inline zt_writer* component_builder::handle() const noexcept { return owner_->handle(); }
inline void component_builder::take(component_builder& o) noexcept {
  owner_ = std::exchange(o.owner_, nullptr);
  if (owner_ != nullptr) owner_->stream_ = this;
}
inline void component_builder::unlink() noexcept {
  if (owner_ != nullptr) owner_->stream_ = nullptr;
  owner_ = nullptr;
}

inline object_builder::object_builder(Writer* writer, std::string&& name) noexcept : writer_(writer), name_(std::move(name)) {
  writer_->open_ = this;
}
inline zt_writer* object_builder::handle() const noexcept { return writer_->handle_.get(); }
inline void object_builder::take(object_builder& o) noexcept {
  writer_ = std::exchange(o.writer_, nullptr);
  stream_ = std::exchange(o.stream_, nullptr);
  name_ = std::exchange(o.name_, std::string());
  if (writer_ != nullptr) writer_->open_ = this;
  if (stream_ != nullptr) stream_->owner_ = this;
}
inline void object_builder::unlink() noexcept {
  if (stream_ != nullptr) stream_->owner_ = nullptr;  // a stream can't outlive its object
  stream_ = nullptr;
  if (writer_ != nullptr) writer_->open_ = nullptr;
  writer_ = nullptr;
}

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_HPP
