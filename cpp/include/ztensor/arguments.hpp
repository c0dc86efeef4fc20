// ztensor/arguments.hpp: part of ztensor.hpp (include that). What calls take: string_arg,
// shape_ref, open_options, write_options.
#ifndef ZTENSOR_CPP_ARGUMENTS_HPP
#define ZTENSOR_CPP_ARGUMENTS_HPP

#include "config.hpp"
#include "dtype.hpp"
#include "result.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {

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
  bool populate = false;    ///< read every page of the mapping in while opening (ZT_OPEN_POPULATE)
  bool all_shards = false;  ///< a set: open and map every shard now, keep them open (ZT_OPEN_ALL_SHARDS)
  bool one_file = false;    ///< only the file named, even one split of a GGUF set (ZT_OPEN_ONE_FILE)
  bool take_fd = false;     ///< Reader::open_fd: the reader takes the descriptor over (ZT_OPEN_TAKE_FD)
  std::uint32_t max_cbor_depth = 0;
  std::uint32_t max_rank = 0;
  std::uint32_t max_name_length = 0;
  std::uint64_t max_manifest_size = 0;
  std::uint64_t max_decoded_size = 0;
  std::uint64_t max_total_cached = 0;

  zt_open_options to_c() const noexcept {
    zt_open_options o{};
    o.flags = (no_mmap ? static_cast<std::uint32_t>(ZT_OPEN_NO_MMAP) : 0u) |
              (verify ? static_cast<std::uint32_t>(ZT_OPEN_VERIFY) : 0u) |
              (populate ? static_cast<std::uint32_t>(ZT_OPEN_POPULATE) : 0u) |
              (all_shards ? static_cast<std::uint32_t>(ZT_OPEN_ALL_SHARDS) : 0u) |
              (one_file ? static_cast<std::uint32_t>(ZT_OPEN_ONE_FILE) : 0u) |
              (take_fd ? static_cast<std::uint32_t>(ZT_OPEN_TAKE_FD) : 0u);
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

namespace detail {
/// invalid_argument when a string argument holds a NUL byte.
inline result<void> check_text(const string_arg& s, const char* what) {
  if (s.valid()) return result<void>();
  return fail(ZT_ERR_INVALID_ARGUMENT, cat(what, " contains a NUL byte"));
}
}  // namespace detail

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_ARGUMENTS_HPP
