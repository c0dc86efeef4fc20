// ztensor/reader.hpp: part of ztensor.hpp (include that). Reading: zt::Reader, zt::Object,
// zt::Component and their iterators.
#ifndef ZTENSOR_CPP_READER_HPP
#define ZTENSOR_CPP_READER_HPP

#include "arguments.hpp"
#include "config.hpp"
#include "dtype.hpp"
#include "result.hpp"
#include "span.hpp"
#include "value.hpp"
#include "view.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {

class Object;
class Reader;

namespace detail {
inline std::string_view sv(const char* s) noexcept { return s == nullptr ? std::string_view() : std::string_view(s); }
inline std::optional<std::string_view> opt_sv(const char* s) noexcept {
  if (s == nullptr) return std::nullopt;
  return std::string_view(s);
}
inline std::string quoted(const char* s) { return cat("'", s == nullptr ? "" : s, "'"); }

inline result<tensor_view> view(const zt_reader* r, std::size_t object, const char* role) {
  zt_view v{};
  zt_status st = zt_component_view(r, object, role, &v);
  if (st != ZT_OK) return last_failure(st);
  return result<tensor_view>(tensor_view(v));
}
/// Attributes as JSON: an object's, or with no index the file's.
inline result<std::string_view> attributes(const zt_reader* r, std::optional<std::size_t> object) {
  const char* json = nullptr;
  zt_status st = object ? zt_object_get_attributes_json(r, *object, &json) : zt_file_get_attributes_json(r, &json);
  if (st != ZT_OK) return last_failure(st);
  return result<std::string_view>(sv(json));
}
/// The typed attribute map: an object's, or with no index the file's.
inline result<value> typed_attributes(const zt_reader* r, std::optional<std::size_t> object) {
  const zt_value* v = nullptr;
  zt_status st = object ? zt_object_get_attributes(r, *object, &v) : zt_file_get_attributes(r, &v);
  if (st != ZT_OK) return last_failure(st);
  return result<value>(value(v));
}
/// One attribute by key: an object's, or with no index the file's.
inline result<value> typed_attribute(const zt_reader* r, std::optional<std::size_t> object, const string_arg& key) {
  if (result<void> c = check_text(key, "key"); !c.ok()) return c.as_failure();
  const zt_value* v = nullptr;
  zt_status st = object ? zt_object_find_attribute(r, *object, key.c_str(), &v) : zt_file_find_attribute(r, key.c_str(), &v);
  if (st != ZT_OK) return last_failure(st);
  return result<value>(value(v));
}
inline zt_object_info object_info(const zt_reader* r, std::size_t index) noexcept {
  zt_object_info info{};
  if (zt_object_get_info(r, index, &info) != ZT_OK) info = zt_object_info{};
  return info;
}
inline zt_component_info component_info(const zt_reader* r, std::size_t object, std::size_t index) noexcept {
  zt_component_info info{};
  if (zt_component_get_info(r, object, index, &info) != ZT_OK) info = zt_component_info{};
  return info;
}
/// The product of a shape's dimensions, saturating at the largest uint64_t.
inline std::uint64_t elements_of(const std::uint64_t* shape, std::size_t ndim) noexcept {
  std::uint64_t n = 1;
  for (std::size_t i = 0; i < ndim; ++i) {
    if (shape[i] != 0 && n > std::numeric_limits<std::uint64_t>::max() / shape[i]) return std::numeric_limits<std::uint64_t>::max();
    n *= shape[i];
  }
  return n;
}
}  // namespace detail

/// How a block-quantized object is laid out (zt_quant_info): GGUF's ggml types.
struct quant_info {
  std::uint32_t ggml_type = 0;     ///< the value of GGML_TYPE_* (Q4_0 = 2 ...)
  std::string_view name;           ///< "Q4_K", "IQ2_XXS" ...
  std::string_view role;           ///< the component holding the blocks ("data")
  std::uint64_t block_size = 0;    ///< values per block
  std::uint64_t type_size = 0;     ///< bytes per block
  std::uint64_t row_size = 0;      ///< bytes per row (ggml's ne[0] values)
  std::uint64_t row_count = 0;     ///< rows
  bool dequantizable = false;      ///< read_as<float>() (f16, bf16) dequantizes it
};

/// An object's ggml type (zt_object_get_ggml_type), as gguf_get_tensor_type gives it.
struct ggml_type {
  std::uint32_t id = 0;   ///< the value of GGML_TYPE_* (F32 = 0, F16 = 1, Q4_0 = 2 ... BF16 = 30)
  std::string_view name;  ///< "F32", "Q4_K" ...; empty for an id this build doesn't know
};

/// Where a file's data section is (zt_file_layout): the offset the format's own tensor
/// offsets count from, and the alignment every one of them keeps.
struct file_layout {
  std::uint64_t data_offset = 0;
  std::uint64_t alignment = 1;
};

/// Objects described column by column (zt_file_get_columns): element i of each column is
/// object `first + i`'s; `dims` holds every object's dimensions one after another (object
/// i's are the next `ndim[i]`). `flags` are ZT_OBJECT_DENSE, ZT_OBJECT_PLAIN and
/// ZT_OBJECT_TYPED, or'ed.
struct object_columns {
  std::vector<std::uint64_t> offset;          ///< component 0's offset in its file
  std::vector<std::uint64_t> decoded_length;  ///< component 0's decoded bytes
  std::vector<std::uint32_t> dtype;           ///< component 0's zt_dtype
  std::vector<std::uint32_t> shard;           ///< the file holding component 0
  std::vector<std::uint32_t> flags;           ///< ZT_OBJECT_*
  std::vector<std::uint32_t> ndim;            ///< number of dimensions
  std::vector<std::uint64_t> dims;            ///< every object's dimensions, in order
};

/// What a remote reader has transferred so far: GET requests answered, body bytes.
struct transfer_stats {
  std::uint64_t requests = 0;
  std::uint64_t bytes = 0;
};

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
  /// Which file of a set holds the stored bytes (`shard`, 0 for a single file) and where
  /// in that file (`offset`, `length`): zt_component_get_location.
  ret<zt_location> location() const {
    zt_location loc{};
    zt_status st = zt_component_get_location(reader_, object_, index_, &loc);
    if (st != ZT_OK) return detail::unwrap(result<zt_location>(detail::last_failure(st)));
    return detail::unwrap(result<zt_location>(loc));
  }

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
  /// and fp8 logical types, integers widened, small integers to floats), or a
  /// block-quantized object's blocks dequantized (one value per element of its shape, to
  /// float, or f16/bf16 in uint16_t); unsupported for a lossy or meaningless conversion.
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

  /// How many values read_as to `target` gives: for the blocks of a block-quantized object
  /// read as anything but their bytes, the object's element count; else count().
  std::uint64_t value_count(zt::dtype target) const noexcept {
    zt_quant_info q{};
    zt_object_info o{};
    if (target != dtype() && zt_object_get_quant_info(reader_, object_, &q) == ZT_OK && q.role != nullptr &&
        info_.role != nullptr && std::strcmp(q.role, info_.role) == 0 && zt_object_get_info(reader_, object_, &o) == ZT_OK)
      return detail::elements_of(o.shape, o.ndim);
    return count();
  }

  /// `count` values from value `first` on, converted (or dequantized) to dtype_of<T> as
  /// read_as<T>() does (zt_component_read_as_range): e.g. the rows of a weight one
  /// tensor-parallel rank needs. Block-quantized data is read in whole blocks (whole rows
  /// always are); only the bytes the range needs are read.
  template <class T>
  ret<std::vector<T>> read_as_range(std::uint64_t first, std::size_t count) const {
    static_assert(has_dtype_v<T>, "read_as_range<T>(): T has no zt::dtype_of; use read_as_range<T>(zt::dtype, ...)");
    return detail::unwrap(try_read_as_range<T>(dtype_v<T>, first, count));
  }
  /// Converted to `target`, stored in T of the same size.
  template <class T>
  ret<std::vector<T>> read_as_range(zt::dtype target, std::uint64_t first, std::size_t count) const {
    return detail::unwrap(try_read_as_range<T>(target, first, count));
  }
  /// Into caller memory: dst.size() bytes of `target` values from value `first` on.
  ret<void> read_as_range_into(zt::dtype target, std::uint64_t first, span<std::byte> dst) const {
    return read_as_range_into(target, first, dst.data(), dst.size());
  }
  ret<void> read_as_range_into(zt::dtype target, std::uint64_t first, void* dst, std::size_t size) const {
    return detail::unwrap(detail::check(
        zt_component_read_as_range(reader_, object_, info_.role, static_cast<std::uint32_t>(target), first, dst, size)));
  }

  /// The frames of a zstd component (zt_component_get_frame_count / _get_frame): where
  /// each one's stored bytes are in the file and which decoded bytes they hold, for a
  /// loader that fetches and decodes frames itself. invalid_argument for a component that
  /// is not zstd frames.
  ret<std::size_t> frame_count() const { return detail::unwrap(try_frame_count()); }
  /// Frame `i` (not_found past the last).
  ret<zt_frame_info> frame(std::size_t i) const { return detail::unwrap(try_frame(i)); }
  /// Every frame, in order.
  ret<std::vector<zt_frame_info>> frames() const { return detail::unwrap(try_frames()); }

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
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, detail::cat("component ", detail::quoted(info_.role), " holds ",
                                                               dtype_name(dtype()), " data, not ", dtype_name(expected),
                                                               " (read_as<T>() converts)"));
    if (sizeof(T) != dtype_size(expected))
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, detail::cat("a ", std::to_string(sizeof(T)), "-byte type can't hold ",
                                                               dtype_name(expected), " elements"));
    const std::uint64_t bytes = info_.decoded_length;
    if (bytes % sizeof(T) != 0)
      return detail::fail(ZT_ERR_FORMAT, detail::cat("component ", detail::quoted(info_.role), ": ", std::to_string(bytes),
                                                     " bytes are not a whole number of elements"));
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
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, detail::cat("a ", std::to_string(sizeof(T)), "-byte type can't hold ",
                                                               dtype_name(target), " elements"));
    const std::uint64_t n64 = value_count(target);
    if (n64 > std::numeric_limits<std::uint64_t>::max() / sizeof(T) || !detail::fits_size(n64 * sizeof(T)))
      return detail::fail(ZT_ERR_LIMIT, "component too large for this address space");
    const auto to = static_cast<std::uint32_t>(target);
    return fill<T>(detail::to_size(n64), [&](void* dst, std::size_t size) {
      return zt_component_read_as(reader_, object_, info_.role, to, dst, size);
    });
  }

  template <class T>
  result<std::vector<T>> try_read_as_range(zt::dtype target, std::uint64_t first, std::size_t n) const {
    static_assert(std::is_trivially_copyable_v<T>, "read_as_range<T>(): T must be trivially copyable");
    static_assert(detail::little_endian, "typed access assumes a little-endian host");
    if (sizeof(T) != dtype_size(target))
      return detail::fail(ZT_ERR_INVALID_ARGUMENT, detail::cat("a ", std::to_string(sizeof(T)), "-byte type can't hold ",
                                                               dtype_name(target), " elements"));
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T))
      return detail::fail(ZT_ERR_LIMIT, "range too large for this address space");
    const auto to = static_cast<std::uint32_t>(target);
    return fill<T>(n, [&](void* dst, std::size_t size) {
      return zt_component_read_as_range(reader_, object_, info_.role, to, first, dst, size);
    });
  }

  /// `n` values of T from `read(dst, bytes)`; bools checked to be 0 or 1.
  template <class T, class Read>
  static result<std::vector<T>> fill(std::size_t n, Read&& read) {
    if constexpr (std::is_same_v<std::remove_cv_t<T>, bool>) {
      std::vector<unsigned char> raw(n);
      zt_status st = read(raw.data(), raw.size());
      if (st != ZT_OK) return detail::last_failure(st);
      std::size_t bad = detail::first_non_bool(raw.data(), raw.size());
      if (bad != raw.size()) return detail::bool_failure(bad, raw[bad]);
      return result<std::vector<T>>(std::vector<T>(raw.begin(), raw.end()));
    } else {
      std::vector<T> out(n);
      zt_status st = read(static_cast<void*>(out.data()), n * sizeof(T));
      if (st != ZT_OK) return detail::last_failure(st);
      return result<std::vector<T>>(std::move(out));
    }
  }

  result<std::size_t> try_frame_count() const {
    std::size_t n = 0;
    zt_status st = zt_component_get_frame_count(reader_, object_, info_.role, &n);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<std::size_t>(n);
  }
  result<zt_frame_info> try_frame(std::size_t i) const {
    zt_frame_info f{};
    zt_status st = zt_component_get_frame(reader_, object_, info_.role, i, &f);
    if (st != ZT_OK) return detail::last_failure(st);
    return result<zt_frame_info>(f);
  }
  result<std::vector<zt_frame_info>> try_frames() const {
    result<std::size_t> n = try_frame_count();
    if (!n.ok()) return n.as_failure();
    std::vector<zt_frame_info> out;
    out.reserve(*n);
    for (std::size_t i = 0; i < *n; ++i) {
      result<zt_frame_info> f = try_frame(i);
      if (!f.ok()) return f.as_failure();
      out.push_back(*f);
    }
    return result<std::vector<zt_frame_info>>(std::move(out));
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
        zt_component_get_info(reader_, index_, i, &ci) != ZT_OK)
      return std::nullopt;
    return Component(reader_, index_, i, ci);
  }

  /// Component::view() of the component with this role.
  ret<tensor_view> view(const string_arg& role = "data") const { return detail::unwrap(try_view(role)); }
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
    return detail::unwrap(try_read<T>(role, dtype_v<T>, false));
  }
  /// Component::read_as<T>() of the component with this role.
  template <class T>
  ret<std::vector<T>> read_as(const string_arg& role = "data") const {
    static_assert(has_dtype_v<T>, "read_as<T>(): T has no zt::dtype_of");
    return detail::unwrap(try_read<T>(role, dtype_v<T>, true));
  }
  /// Component::read<T>(zt::dtype) of the component with this role, e.g.
  /// read<uint16_t>(zt::dtype::f16).
  template <class T>
  ret<std::vector<T>> read(zt::dtype expected, const string_arg& role = "data") const {
    return detail::unwrap(try_read<T>(role, expected, false));
  }
  /// Component::read_as<T>(zt::dtype) of the component with this role, e.g.
  /// read_as<uint16_t>(zt::dtype::bf16).
  template <class T>
  ret<std::vector<T>> read_as(zt::dtype target, const string_arg& role = "data") const {
    return detail::unwrap(try_read<T>(role, target, true));
  }

  /// The block layout of a block-quantized object (GGUF's quantized ggml types;
  /// zt_object_get_quant_info): not_found for any other object, unsupported for a ggml
  /// type this build doesn't know.
  ret<zt::quant_info> quant_info() const { return detail::unwrap(try_quant_info()); }
  /// The object's ggml type (zt_object_get_ggml_type): dense f32, f16, bf16, f64 and
  /// i8 ... i64 objects of any format too, block-quantized ones their block type;
  /// not_found for an object ggml has no type for (other dtypes, fp8, complex, sparse).
  ret<zt::ggml_type> ggml_type() const { return detail::unwrap(try_ggml_type()); }
  /// Whether quant_info() describes this object.
  bool is_quantized() const noexcept {
    zt_quant_info q{};
    return zt_object_get_quant_info(reader_, index_, &q) == ZT_OK;
  }
  /// Component::read_as_range<T>() of the component with this role: `count` values from
  /// value `first` on, e.g. rows of a quantized weight dequantized to float.
  template <class T>
  ret<std::vector<T>> read_as_range(std::uint64_t first, std::size_t count, const string_arg& role = "data") const {
    static_assert(has_dtype_v<T>, "read_as_range<T>(): T has no zt::dtype_of");
    return detail::unwrap(try_read_as_range<T>(role, dtype_v<T>, first, count));
  }
  template <class T>
  ret<std::vector<T>> read_as_range(zt::dtype target, std::uint64_t first, std::size_t count,
                                    const string_arg& role = "data") const {
    return detail::unwrap(try_read_as_range<T>(role, target, first, count));
  }

  /// Checks every component that has a digest (the first failure is reported).
  ret<void> verify() const { return detail::unwrap(try_verify()); }
  /// Checks the values beyond the manifest: sparse structure, bool bytes (format_error).
  ret<void> validate() const { return detail::unwrap(detail::check(zt_object_validate(reader_, index_))); }
  /// The object's attributes as JSON ("{}" when none).
  ret<std::string_view> attributes_json() const { return detail::unwrap(detail::attributes(reader_, index_)); }
  /// The object's attributes as a typed map (empty when none), without JSON:
  /// attributes()["ggml_type"].as<std::string_view>().
  ret<value> attributes() const { return detail::unwrap(detail::typed_attributes(reader_, index_)); }
  /// One of the object's attributes by key (zt_object_find_attribute): not_found naming
  /// the key when absent.
  ret<value> attribute(const string_arg& key) const { return detail::unwrap(detail::typed_attribute(reader_, index_, key)); }

 private:
  friend class Reader;
  friend class object_iterator;

  Object(const zt_reader* r, std::size_t index, const zt_object_info& info) noexcept : reader_(r), index_(index), info_(info) {}

  result<Component> try_component_at(std::size_t i) const {
    zt_component_info ci{};
    zt_status st = zt_component_get_info(reader_, index_, i, &ci);
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
  result<tensor_view> try_view(const string_arg& role) const {
    if (result<void> r = detail::check_text(role, "role"); !r.ok()) return r.as_failure();
    return detail::view(reader_, index_, role.c_str());
  }
  /// Component::try_read<T>(), or try_read_as<T>() when `convert`, of the role's component.
  template <class T>
  result<std::vector<T>> try_read(const string_arg& role, zt::dtype t, bool convert) const {
    result<Component> c = try_component(role);
    if (!c.ok()) return c.as_failure();
    return convert ? c->template try_read_as<T>(t) : c->template try_read<T>(t);
  }
  result<zt::ggml_type> try_ggml_type() const {
    zt::ggml_type out;
    const char* name = nullptr;
    zt_status st = zt_object_get_ggml_type(reader_, index_, &out.id, &name);
    if (st != ZT_OK) return detail::last_failure(st);
    out.name = detail::sv(name);
    return result<zt::ggml_type>(out);
  }
  result<zt::quant_info> try_quant_info() const {
    zt_quant_info q{};
    zt_status st = zt_object_get_quant_info(reader_, index_, &q);
    if (st != ZT_OK) return detail::last_failure(st);
    zt::quant_info out;
    out.ggml_type = q.ggml_type;
    out.name = detail::sv(q.name);
    out.role = detail::sv(q.role);
    out.block_size = q.block_size;
    out.type_size = q.type_size;
    out.row_size = q.row_size;
    out.row_count = q.row_count;
    out.dequantizable = q.dequantizable;
    return result<zt::quant_info>(out);
  }
  template <class T>
  result<std::vector<T>> try_read_as_range(const string_arg& role, zt::dtype t, std::uint64_t first, std::size_t n) const {
    result<Component> c = try_component(role);
    if (!c.ok()) return c.as_failure();
    return c->template try_read_as_range<T>(t, first, n);
  }
  result<void> try_verify() const {
    for (std::size_t i = 0; i < info_.component_count; ++i) {
      zt_component_info ci{};
      zt_status st = zt_component_get_info(reader_, index_, i, &ci);
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

/// An open tensor file: zTensor (.zt v1.2, v1.1, legacy v0.1), safetensors, GGUF or
/// Tensogram, recognised by its bytes (file_format() says which). Move-only; closing
/// frees everything it lent out. Its const members may be called from many threads at once.
class Reader {
 public:
  using iterator = object_iterator;
  using const_iterator = object_iterator;

  /// A closed reader (no objects), as a moved-from one.
  Reader() noexcept = default;

  /// Opens a file: maps it (unless options.no_mmap) and reads its manifest or header, no
  /// tensor data.
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
  /// The file's format version: "1.2.0", "1.1.0", "0.1.0" for zTensor, the container's own
  /// for other formats (e.g. "3" for GGUF v3); "" when closed.
  std::string_view version() const noexcept { return detail::sv(zt_file_version(handle_.get())); }
  /// The container format: "zt", "safetensors", "gguf", "tensogram", "pytorch", "numpy" or
  /// "onnx"; "" when closed.
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
        zt_object_get_info(handle_.get(), index, &info) != ZT_OK)
      return std::nullopt;
    return Object(handle_.get(), index, info);
  }
  bool contains(const string_arg& name) const noexcept { return find(name).has_value(); }

  /// Opens a file from a descriptor (zt_open_fd_with): the reader works on its own duplicate,
  /// so the caller may close `fd` at once; with options.take_fd it takes `fd` over and
  /// closes it when closed (after a failed open `fd` is still the caller's).
  static ret<Reader> open_fd(int fd, const open_options& options = {}) {
    const zt_open_options o = options.to_c();
    zt_reader* raw = nullptr;
    zt_status st = zt_open_fd_with(fd, &o, &raw);
    if (st != ZT_OK) return detail::unwrap(result<Reader>(detail::last_failure(st)));
    return detail::unwrap(result<Reader>(Reader(raw)));
  }

  /// Opens a remote object by URL (zt_open_url_with): s3://, gs://, az://, http(s)://,
  /// any format open() reads, with settings the environment can't give. Opening costs a
  /// few range requests; reads fetch only their bytes; views are copies the reader keeps.
  static ret<Reader> open_url(const string_arg& url, const open_options& options = {},
                              const remote_options& remote = {}) {
    return detail::unwrap(try_open_url(url, options, remote));
  }
  /// What a reader of a remote object has transferred so far
  /// (zt_file_get_remote_stats); not_found for a local file or memory.
  ret<transfer_stats> remote_stats() const {
    transfer_stats s;
    zt_status st = zt_file_get_remote_stats(handle_.get(), &s.requests, &s.bytes);
    if (st != ZT_OK) return detail::unwrap(result<transfer_stats>(detail::last_failure(st)));
    return detail::unwrap(result<transfer_stats>(s));
  }
  /// The file's data section (zt_file_get_layout): GGUF's data offset and alignment
  /// (what gguf_get_data_offset and gguf_get_alignment give), safetensors' byte buffer.
  ret<file_layout> layout() const {
    zt_file_layout l{};
    zt_status st = zt_file_get_layout(handle_.get(), &l);
    if (st != ZT_OK) return detail::unwrap(result<file_layout>(detail::last_failure(st)));
    file_layout out;
    out.data_offset = l.data_offset;
    out.alignment = l.alignment;
    return detail::unwrap(result<file_layout>(out));
  }

  /// Carries out every request of a contiguous container of zt_load_request
  /// (std::vector, std::array, zt::span ...) in one zt_batch_load call, in parallel on at
  /// most `threads` threads (0: one per core). Each request's `status` is set; the result
  /// is the first failure (its message names the request), or success.
  template <class Requests>
  ret<void> load_batch(Requests& requests, std::uint32_t threads = 0) const {
    static_assert(std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(std::data(requests))>>, zt_load_request>,
                  "load_batch(): a contiguous container of zt_load_request");
    zt_batch_options o{};
    o.threads = threads;
    return detail::unwrap(detail::check(zt_batch_load(handle_.get(), std::data(requests), std::size(requests), &o)));
  }

  /// Starts reading object `object`'s stored bytes in, in the background (zt_object_prefetch).
  ret<void> prefetch(std::size_t object) const {
    return detail::unwrap(detail::check(zt_object_prefetch(handle_.get(), object)));
  }
  /// Drops object `object`'s stored bytes from the process, e.g. once uploaded
  /// (zt_object_evict). Views stay valid.
  ret<void> evict(std::size_t object) const {
    return detail::unwrap(detail::check(zt_object_evict(handle_.get(), object)));
  }
  /// The whole file as mapped (zt_shard_get_mapping of file 0): a component's stored
  /// bytes are at `offset()` in it. not_found without a mapping (no_mmap, a remote
  /// object) and for a set of several files (each has its own: shard_mapping).
  ret<span<const std::byte>> mapping() const {
    const std::size_t files = shard_count();
    if (files > 1)
      return detail::unwrap(result<span<const std::byte>>(detail::fail(
          ZT_ERR_NOT_FOUND,
          detail::cat("the reader reads a set of ", std::to_string(files), " files, each mapped on its own: see shard_mapping()"))));
    return shard_mapping(0);
  }

  /// How many files the reader reads: a set's shards, 1 for a single file, 0 when closed.
  std::size_t shard_count() const noexcept { return zt_shard_count(handle_.get()); }
  /// The path of file `index` (zt_shard_get_path); not_found past the end, or for a file
  /// opened from memory or a descriptor.
  ret<std::string_view> shard_path(std::size_t index) const {
    const char* path = nullptr;
    zt_status st = zt_shard_get_path(handle_.get(), index, &path);
    if (st != ZT_OK) return detail::unwrap(result<std::string_view>(detail::last_failure(st)));
    return detail::unwrap(result<std::string_view>(detail::sv(path)));
  }
  /// File `index`'s mapping (zt_shard_get_mapping; opens a set's shard if needed).
  ret<span<const std::byte>> shard_mapping(std::size_t index) const {
    const void* base = nullptr;
    std::uint64_t size = 0;
    zt_status st = zt_shard_get_mapping(handle_.get(), index, &base, &size);
    if (st != ZT_OK) return detail::unwrap(result<span<const std::byte>>(detail::last_failure(st)));
    return detail::unwrap(result<span<const std::byte>>(
        span<const std::byte>(static_cast<const std::byte*>(base), static_cast<std::size_t>(size))));
  }

  /// The content digest of a zTensor v2 file (zt_file_get_content_digest): the model's
  /// identity however its tensors are laid out, "xxh3:<16 hex>" or "sha256:<64 hex>",
  /// borrowed until the reader closes. unsupported for a file that is not v2.
  ret<std::string_view> content_digest(zt::digest algorithm = zt::digest::xxh3) const {
    const char* d = nullptr;
    zt_status st = zt_file_get_content_digest(handle_.get(), static_cast<std::uint32_t>(algorithm), &d);
    if (st != ZT_OK) return detail::unwrap(result<std::string_view>(detail::last_failure(st)));
    return detail::unwrap(result<std::string_view>(detail::sv(d)));
  }

  /// File `index`'s data section (zt_shard_get_layout): each shard of a set is a file with
  /// its own; a component's offset minus the data_offset of the shard that holds it is its
  /// offset in that shard's section. For a single file, index 0 is layout().
  ret<file_layout> shard_layout(std::size_t index) const {
    zt_file_layout l{};
    zt_status st = zt_shard_get_layout(handle_.get(), index, &l);
    if (st != ZT_OK) return detail::unwrap(result<file_layout>(detail::last_failure(st)));
    file_layout out;
    out.data_offset = l.data_offset;
    out.alignment = l.alignment;
    return detail::unwrap(result<file_layout>(out));
  }

  /// Every object's name in file order, in one call (zt_file_get_names): views into one
  /// block the reader keeps until it closes.
  ret<std::vector<std::string_view>> names() const {
    using names_result = result<std::vector<std::string_view>>;
    const char* block = nullptr;
    std::size_t length = 0;
    zt_status st = zt_file_get_names(handle_.get(), &block, &length);
    if (st != ZT_OK) return detail::unwrap(names_result(detail::last_failure(st)));
    std::vector<std::string_view> out;
    out.reserve(size());
    for (std::size_t at = 0; at < length;) {
      std::string_view name(block + at);
      out.push_back(name);
      at += name.size() + 1;
    }
    return detail::unwrap(names_result(std::move(out)));
  }

  /// Objects `first` .. `first + count - 1` described in one call (zt_file_get_objects):
  /// each object and its first component. Strings and shapes are borrowed until the
  /// reader closes. invalid_argument for a range past the last object.
  ret<std::vector<zt_object_entry>> objects(std::size_t first, std::size_t count) const {
    using objects_result = result<std::vector<zt_object_entry>>;
    std::vector<zt_object_entry> out(count);
    zt_status st = zt_file_get_objects(handle_.get(), first, out.data(), count);
    if (st != ZT_OK) return detail::unwrap(objects_result(detail::last_failure(st)));
    return detail::unwrap(objects_result(std::move(out)));
  }
  /// Every object, described in one call.
  ret<std::vector<zt_object_entry>> objects() const { return objects(0, size()); }

  /// Objects `first` .. `first + count - 1` column by column (zt_file_get_columns, two
  /// calls: the number of dimensions, then the columns). invalid_argument for a range
  /// past the last object.
  ret<object_columns> columns(std::size_t first, std::size_t count) const {
    using columns_result = result<object_columns>;
    zt_object_columns c{};
    zt_status st = zt_file_get_columns(handle_.get(), first, count, &c);
    if (st != ZT_OK) return detail::unwrap(columns_result(detail::last_failure(st)));
    object_columns out;
    out.offset.resize(count);
    out.decoded_length.resize(count);
    out.dtype.resize(count);
    out.shard.resize(count);
    out.flags.resize(count);
    out.ndim.resize(count);
    out.dims.resize(c.dims_count);
    c.offset = out.offset.data();
    c.decoded_length = out.decoded_length.data();
    c.dtype = out.dtype.data();
    c.shard = out.shard.data();
    c.flags = out.flags.data();
    c.ndim = out.ndim.data();
    c.dims = out.dims.data();
    c.dims_capacity = out.dims.size();
    st = zt_file_get_columns(handle_.get(), first, count, &c);
    if (st != ZT_OK) return detail::unwrap(columns_result(detail::last_failure(st)));
    return detail::unwrap(columns_result(std::move(out)));
  }
  /// Every object, column by column.
  ret<object_columns> columns() const { return columns(0, size()); }

  /// Objects `first` .. `first + count - 1` split into runs (zt_file_get_runs): repeats
  /// of objects laid out alike (a model's layers, `stride` bytes apart) and, between
  /// them, runs of one repeat. invalid_argument for a range past the last object.
  ret<std::vector<zt_object_run>> runs(std::size_t first, std::size_t count) const {
    using runs_result = result<std::vector<zt_object_run>>;
    std::vector<zt_object_run> out(count);
    std::size_t found = 0;
    zt_status st = zt_file_get_runs(handle_.get(), first, count, out.data(), out.size(), &found);
    if (st != ZT_OK) return detail::unwrap(runs_result(detail::last_failure(st)));
    out.resize(found);
    return detail::unwrap(runs_result(std::move(out)));
  }
  /// Every object, split into runs.
  ret<std::vector<zt_object_run>> runs() const { return runs(0, size()); }

  /// Checks every component that has a digest; the first failure is reported.
  ret<void> verify() const { return detail::unwrap(detail::check(zt_file_verify(handle_.get()))); }
  /// The file's attributes as JSON ("{}" when none).
  ret<std::string_view> attributes_json() const { return detail::unwrap(detail::attributes(handle_.get(), std::nullopt)); }
  /// The file's attributes as a typed map (empty when none), without JSON; built once,
  /// then every call is a lookup: attributes()["llama.block_count"].as<std::uint32_t>().
  ret<value> attributes() const { return detail::unwrap(detail::typed_attributes(handle_.get(), std::nullopt)); }
  /// One file attribute by key (zt_file_find_attribute), e.g. attribute("general.alignment"):
  /// not_found naming the key when absent.
  ret<value> attribute(const string_arg& key) const {
    return detail::unwrap(detail::typed_attribute(handle_.get(), std::nullopt, key));
  }

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
  static result<Reader> try_open_url(const string_arg& url, const open_options& options, const remote_options& remote) {
    if (result<void> r = detail::check_text(url, "url"); !r.ok()) return r.as_failure();
    const zt_open_options o = options.to_c();
    std::vector<const char*> pointers;
    const zt_remote_options ro = remote.to_c(pointers);
    zt_reader* raw = nullptr;
    zt_status st = zt_open_url_with(url.c_str(), &o, &ro, &raw);
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
    zt_status st = zt_object_get_info(handle_.get(), index, &info);
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

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_READER_HPP
