// ztensor/dtype.hpp: part of ztensor.hpp (include that). The dtype, encoding and digest
// enums, their names and sizes, library information, and dtype_of<T>.
#ifndef ZTENSOR_CPP_DTYPE_HPP
#define ZTENSOR_CPP_DTYPE_HPP

#include "config.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {

/// Storage dtypes (the values of zt_dtype).
enum class dtype : std::uint32_t {
  f64 = ZT_F64, f32 = ZT_F32, f16 = ZT_F16, bf16 = ZT_BF16,
  i64 = ZT_I64, i32 = ZT_I32, i16 = ZT_I16, i8 = ZT_I8,
  u64 = ZT_U64, u32 = ZT_U32, u16 = ZT_U16, u8 = ZT_U8,
  bool_ = ZT_BOOL,
};

/// Component encodings (the values of zt_encoding). pipeline: another format's decode
/// pipeline (Tensogram's packing, shuffle, compressors ...), read only.
enum class encoding : std::uint32_t { raw = ZT_ENCODING_RAW, zstd = ZT_ENCODING_ZSTD, pipeline = ZT_ENCODING_PIPELINE };

/// Digest algorithms the writer can record (the values of zt_digest).
enum class digest : std::uint32_t {
  none = ZT_DIGEST_NONE, sha256 = ZT_DIGEST_SHA256, crc32c = ZT_DIGEST_CRC32C, xxh3 = ZT_DIGEST_XXH3
};

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

/// "raw", "zstd" or "pipeline"; "unknown" outside the enum.
constexpr std::string_view encoding_name(zt::encoding e) noexcept {
  switch (e) {
    case encoding::raw: return "raw";
    case encoding::zstd: return "zstd";
    case encoding::pipeline: return "pipeline";
  }
  return "unknown";
}

/// "ZT_ERR_FORMAT" ...; "ZT_UNKNOWN_STATUS" outside the enum.
inline std::string_view status_name(zt_status s) noexcept { return zt_status_name(static_cast<std::uint32_t>(s)); }

/// The library's run-time version, "MAJOR.MINOR.PATCH" (the header's is ZT_VERSION_*).
inline std::string_view library_version() noexcept { return zt_version(); }
/// The same as MAJOR * 10000 + MINOR * 100 + PATCH, to compare with ZT_VERSION_NUMBER.
inline unsigned library_version_number() noexcept { return zt_version_number(); }

/// The OS error number (errno: ENOENT, EACCES ...) behind this thread's last failed
/// library call when the system refused it, else 0 (zt_last_os_error). Read it right
/// after the failure (a zt::io_error caught, a failed zt::result), before another call.
inline int last_os_error() noexcept { return zt_last_os_error(); }

/// Whether zt::Reader opens `path` as a remote object by URL (s3://, gs://, https:// ...)
/// rather than as a local file; decided by the text alone (zt_path_is_url).
inline bool path_is_url(const std::string& path) noexcept { return zt_path_is_url(path.c_str()); }

/// The dtype a name spells as the format does ("f32", "bf16", "bool" ...; exact, lower
/// case), or nullopt (zt_dtype_find).
inline std::optional<dtype> dtype_from_name(std::string_view name) {
  if (name.find('\0') != std::string_view::npos) return std::nullopt;
  const std::string text(name);
  std::uint32_t value = 0;
  if (zt_dtype_find(text.c_str(), &value) != ZT_OK) return std::nullopt;
  return static_cast<dtype>(value);
}

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

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_DTYPE_HPP
