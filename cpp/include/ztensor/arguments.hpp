// ztensor/arguments.hpp: part of ztensor.hpp (include that). What calls take: string_arg,
// shape_ref, open_options, write_options, writer_options, copy_options, remote_options.
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

/// How a Writer writes its file (zt_writer_options).
struct writer_options {
  /// false: finish() neither fsyncs the file nor its directory (ZT_WRITER_NO_SYNC), for
  /// scratch files that need not survive a crash. The rename is atomic either way.
  bool durable = true;
  /// The zTensor version to write: the library's default (v2 since this release), v2
  /// (ZT_WRITER_V2) or v1.2.0 whatever the default (ZT_WRITER_V1_2).
  enum class file_version { library_default, v1_2, v2 };
  file_version version = file_version::library_default;
  /// v2 with canonical placement: keep the blobs in the order written instead of name order
  /// (ZT_WRITER_KEEP_ORDER). A compact file (the default placement) always keeps it.
  bool keep_order = false;
  /// The container to write (zt_writer_format): by the path's extension (auto:
  /// .safetensors, .gguf, else zTensor), zTensor, safetensors or GGUF.
  enum class file_format : std::uint32_t {
    auto_detect = ZT_WRITER_FORMAT_AUTO,
    ztensor = ZT_WRITER_FORMAT_ZTENSOR,
    safetensors = ZT_WRITER_FORMAT_SAFETENSORS,
    gguf = ZT_WRITER_FORMAT_GGUF,
  };
  file_format format = file_format::auto_detect;
  /// zTensor v2: where blobs start: the library's default (4 KiB since this release),
  /// 64 KiB (canonical form, byte for byte the reference's: ZT_WRITER_CANONICAL) or
  /// 4 KiB (ZT_WRITER_COMPACT, whatever a later default).
  enum class blob_placement { library_default, canonical, compact };
  blob_placement placement = blob_placement::library_default;

  zt_writer_options to_c() const noexcept {
    zt_writer_options o{};
    o.flags = durable ? 0u : static_cast<std::uint32_t>(ZT_WRITER_NO_SYNC);
    o.flags |= static_cast<std::uint32_t>(ZT_WRITER_HAS_FORMAT);
    o.format = static_cast<std::uint32_t>(format);
    if (placement == blob_placement::canonical) o.flags |= static_cast<std::uint32_t>(ZT_WRITER_CANONICAL);
    if (placement == blob_placement::compact) o.flags |= static_cast<std::uint32_t>(ZT_WRITER_COMPACT);
    if (version == file_version::v2) o.flags |= static_cast<std::uint32_t>(ZT_WRITER_V2);
    if (version == file_version::v1_2) o.flags |= static_cast<std::uint32_t>(ZT_WRITER_V1_2);
    if (keep_order) o.flags |= static_cast<std::uint32_t>(ZT_WRITER_KEEP_ORDER);
    return o;
  }
};

/// How Writer::copy_object stores an object's components (zt_copy_options). The default
/// keeps what the input has: raw and zstd components copied as stored, each with its
/// digest algorithm; another format's pipeline becomes zstd.
struct copy_options {
  /// Re-encode every component this way (ZT_COPY_ENCODING): raw, or zstd at `level`.
  std::optional<zt::encoding> encoding;
  std::int32_t level = 0;  ///< zstd level with `encoding`; 0 = the library default
  /// Record this digest on every component, digest::none for none (ZT_COPY_DIGEST).
  std::optional<zt::digest> digest;
  /// The copy's name; empty keeps the object's own.
  std::string name;

  zt_copy_options to_c() const noexcept {
    zt_copy_options o{};
    if (encoding) {
      o.flags |= static_cast<std::uint32_t>(ZT_COPY_ENCODING);
      o.encoding = static_cast<std::uint32_t>(*encoding);
      o.level = level;
    }
    if (digest) {
      o.flags |= static_cast<std::uint32_t>(ZT_COPY_DIGEST);
      o.digest = static_cast<std::uint32_t>(*digest);
    }
    o.name = name.empty() ? nullptr : name.c_str();
    return o;
  }
};

/// What a remote open needs that the environment can't say (zt_remote_options): a token,
/// headers, store settings, an endpoint, limits. Empty fields mean the environment's or
/// the library's defaults. The strings are copied into the struct, which must outlive
/// the zt_remote_options to_c() gives (Reader::open_url takes care of that).
struct remote_options {
  std::string bearer_token;          ///< sent as "Authorization: Bearer <token>"
  std::vector<std::string> headers;  ///< "Name: value", sent with every request
  std::vector<std::string> config;   ///< "key=value" store settings ("aws_region=...")
  std::string endpoint;              ///< an S3- or Azure-compatible endpoint
  bool allow_http = false;           ///< plain-HTTP endpoints for S3, GCS, Azure
  bool no_retry = false;             ///< never retry a failed request
  std::uint32_t max_concurrency = 0;  ///< requests in flight per reader; 0: 8
  std::uint32_t retries = 0;          ///< retries of a failed request; 0: 3
  std::uint32_t timeout_ms = 0;       ///< one request's timeout; 0: 30 s

  /// The C struct, pointing into this one and into `pointers` (kept by the caller).
  zt_remote_options to_c(std::vector<const char*>& pointers) const {
    pointers.clear();
    pointers.reserve(headers.size() + config.size());
    for (const std::string& h : headers) pointers.push_back(h.c_str());
    for (const std::string& c : config) pointers.push_back(c.c_str());
    zt_remote_options o{};
    o.bearer_token = bearer_token.empty() ? nullptr : bearer_token.c_str();
    o.headers = headers.empty() ? nullptr : pointers.data();
    o.header_count = headers.size();
    o.config = config.empty() ? nullptr : pointers.data() + headers.size();
    o.config_count = config.size();
    o.endpoint = endpoint.empty() ? nullptr : endpoint.c_str();
    o.flags = (allow_http ? static_cast<std::uint32_t>(ZT_REMOTE_ALLOW_HTTP) : 0u) |
              (no_retry ? static_cast<std::uint32_t>(ZT_REMOTE_NO_RETRY) : 0u);
    o.max_concurrency = max_concurrency;
    o.retries = retries;
    o.timeout_ms = timeout_ms;
    return o;
  }
};

namespace detail {
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
constexpr bool is_data_range_v = is_data_range<R>::value;
template <class R>
using if_data_range = std::enable_if_t<is_data_range<R>::value, int>;
template <class R>
using if_typed_range = std::enable_if_t<is_typed_range<R>::value, int>;

template <class R>
const void* range_data(const R& r) noexcept { return static_cast<const void*>(std::data(r)); }
template <class R>
std::size_t range_bytes(const R& r) noexcept { return static_cast<std::size_t>(std::size(r)) * sizeof(range_element_t<R>); }
}  // namespace detail

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
