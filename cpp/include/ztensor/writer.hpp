// ztensor/writer.hpp: part of ztensor.hpp (include that). Writing: zt::Writer,
// zt::object_builder, zt::component_builder.
#ifndef ZTENSOR_CPP_WRITER_HPP
#define ZTENSOR_CPP_WRITER_HPP

#include "arguments.hpp"
#include "config.hpp"
#include "dtype.hpp"
#include "owned_value.hpp"
#include "reader.hpp"
#include "result.hpp"
#include "value.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {


// A Writer has at most one open object_builder, which has at most one open
// component_builder (the C API allows no more). They share one detail::writer_state on
// the heap, which says which builder is open (by an id each builder keeps); nothing points
// at a Writer or a builder itself, so each may be moved, or destroyed, in any order: a
// Writer destroyed first ends its open builders' work, and their later calls then report
// state_error.

namespace detail {
/// What a Writer shares with its builders. Its address never changes.
struct writer_state {
  explicit writer_state(zt_writer* h) noexcept : handle(h) {}
  writer_state(const writer_state&) = delete;
  writer_state& operator=(const writer_state&) = delete;

  zt_writer* handle;             ///< owned by the Writer; null once it is freed
  std::uint64_t object = 0;      ///< the id of the open object's builder; 0: none
  std::uint64_t component = 0;   ///< the id of the open component's builder; 0: none
  std::uint64_t last_id = 0;     ///< ids handed out so far

  /// Ends the open component and object, if any (what a destroyed builder does).
  void close_open() noexcept {
    if (handle != nullptr && component != 0) (void)zt_writer_end_component(handle);
    component = 0;
    if (handle != nullptr && object != 0) (void)zt_writer_end_object(handle);
    object = 0;
  }
};
using shared_writer = std::shared_ptr<writer_state>;

/// A scalar or string made into a value, then `set` with it.
template <class T, class Set>
result<void> set_made(const T& x, Set&& set) {
  result<owned_value> v = [&]() -> result<owned_value> {
    if constexpr (std::is_arithmetic_v<T>) {
      return make_scalar(x);
    } else {
      const std::string_view s(x);
      return made([&](zt_value** o) { return zt_value_create_string(s.data(), s.size(), o); });
    }
  }();
  if (!v.ok()) return v.as_failure();
  return set(v->value());
}

inline result<void> builder_not_open(const char* what) {
  return fail(ZT_ERR_STATE, cat("the ", what, " builder is not open (ended, moved from, or its writer is gone)"));
}
}  // namespace detail

/// Streams one component of an open object in chunks. Scoped: destroying it while open
/// ends the component.
class component_builder {
 public:
  component_builder() noexcept = default;
  component_builder(component_builder&& o) noexcept : state_(std::move(o.state_)), id_(std::exchange(o.id_, 0)) {}
  component_builder& operator=(component_builder&& o) noexcept {
    if (this != &o) {
      close_quietly();
      state_ = std::move(o.state_);
      id_ = std::exchange(o.id_, 0);
    }
    return *this;
  }
  component_builder(const component_builder&) = delete;
  component_builder& operator=(const component_builder&) = delete;
  ~component_builder() { close_quietly(); }

  bool is_open() const noexcept { return state_ != nullptr && state_->handle != nullptr && id_ != 0 && state_->component == id_; }

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
  component_builder(detail::shared_writer state, std::uint64_t id) noexcept : state_(std::move(state)), id_(id) {}

  result<void> try_write(const void* data, std::size_t size) {
    if (!is_open()) return detail::builder_not_open("component");
    return detail::check(zt_writer_write(state_->handle, data, size));
  }
  result<void> try_end() {
    if (!is_open()) return detail::builder_not_open("component");
    zt_status st = zt_writer_end_component(state_->handle);
    state_->component = 0;
    return detail::check(st);
  }
  void close_quietly() noexcept {
    if (is_open()) {
      (void)zt_writer_end_component(state_->handle);
      state_->component = 0;
    }
  }

  detail::shared_writer state_;
  std::uint64_t id_ = 0;
};

/// Builds one object of any format. Scoped: destroying it while open ends it (see the
/// top of ztensor.hpp).
class object_builder {
 public:
  object_builder() noexcept = default;
  object_builder(object_builder&& o) noexcept
      : state_(std::move(o.state_)), id_(std::exchange(o.id_, 0)), name_(std::exchange(o.name_, std::string())) {}
  object_builder& operator=(object_builder&& o) noexcept {
    if (this != &o) {
      close_quietly();
      state_ = std::move(o.state_);
      id_ = std::exchange(o.id_, 0);
      name_ = std::exchange(o.name_, std::string());
    }
    return *this;
  }
  object_builder(const object_builder&) = delete;
  object_builder& operator=(const object_builder&) = delete;
  ~object_builder() { close_quietly(); }

  bool is_open() const noexcept { return state_ != nullptr && state_->handle != nullptr && id_ != 0 && state_->object == id_; }
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
    if (!is_open()) return detail::unwrap(detail::builder_not_open("object"));
    if (result<void> r = detail::check_text(json, "json"); !r.ok()) return detail::unwrap(std::move(r));
    return detail::unwrap(detail::check(zt_writer_set_object_attributes_json(state_->handle, name_.c_str(), json.c_str())));
  }

  /// Sets one attribute of this object, with its type (zt_writer_set_object_attribute):
  /// a reader's value as it is, an owned_value, or a scalar or string made into one
  /// (set_attribute("ggml_type_id", std::uint32_t{2}) reads back as u32).
  ret<void> set_attribute(const string_arg& key, const zt::value& v) { return detail::unwrap(try_set(key, v)); }
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_convertible_v<const T&, std::string_view>, int> = 0>
  ret<void> set_attribute(const string_arg& key, const T& x) {
    return detail::unwrap(detail::set_made(x, [&](const zt::value& v) { return try_set(key, v); }));
  }
  /// Replaces this object's attributes with a map value (zt_writer_set_object_attributes).
  ret<void> set_attributes(const zt::value& map) {
    if (!is_open()) return detail::unwrap(detail::builder_not_open("object"));
    return detail::unwrap(detail::check(zt_writer_set_object_attributes(state_->handle, name_.c_str(), map.handle())));
  }

  /// Ends the object after the library checks it against its format; a refused object
  /// (invalid_argument) is left out of the file and the writer stays usable. The builder
  /// stays open only when a component is still being streamed (state_error).
  ret<void> end() { return detail::unwrap(try_end()); }

 private:
  friend class Writer;
  object_builder(detail::shared_writer state, std::uint64_t id, std::string&& name) noexcept
      : state_(std::move(state)), id_(id), name_(std::move(name)) {}

  result<void> try_set(const string_arg& key, const zt::value& v) {
    if (!is_open()) return detail::builder_not_open("object");
    if (result<void> r = detail::check_text(key, "key"); !r.ok()) return r;
    return detail::check(zt_writer_set_object_attribute(state_->handle, name_.c_str(), key.c_str(), v.handle()));
  }
  result<void> try_add(const string_arg& role, zt::dtype t, const void* data, std::size_t size, const write_options& options,
                       const string_arg& type) {
    if (!is_open()) return detail::builder_not_open("object");
    if (result<void> r = detail::check_text(role, "role"); !r.ok()) return r;
    if (result<void> r = detail::check_text(type, "type"); !r.ok()) return r;
    const zt_write_options o = options.to_c();
    return detail::check(
        zt_writer_add_component(state_->handle, role.c_str(), static_cast<std::uint32_t>(t), type.c_str(), data, size, &o));
  }
  result<component_builder> try_begin(const string_arg& role, zt::dtype t, const write_options& options, const string_arg& type) {
    if (!is_open()) return detail::builder_not_open("object").as_failure();
    if (result<void> r = detail::check_text(role, "role"); !r.ok()) return r.as_failure();
    if (result<void> r = detail::check_text(type, "type"); !r.ok()) return r.as_failure();
    const zt_write_options o = options.to_c();
    zt_status st = zt_writer_begin_component(state_->handle, role.c_str(), static_cast<std::uint32_t>(t), type.c_str(), &o);
    if (st != ZT_OK) return detail::last_failure(st);
    state_->component = ++state_->last_id;
    return result<component_builder>(component_builder(state_, state_->component));
  }
  result<void> try_end() {
    if (!is_open()) return detail::builder_not_open("object");
    zt_status st = zt_writer_end_object(state_->handle);
    // ZT_ERR_STATE: still open (a component is being streamed, or the writer failed
    // earlier and can't end anything); anything else closed it, accepted or dropped.
    if (st != ZT_ERR_STATE) state_->object = 0;
    return detail::check(st);
  }
  void close_quietly() noexcept {
    if (is_open()) state_->close_open();
  }

  detail::shared_writer state_;
  std::uint64_t id_ = 0;
  std::string name_;
};

/// Writes a zTensor file (v2 by default, v1.2.0 when asked), a safetensors file or a GGUF
/// file (writer_options::format, or the path's extension). Move-only. The bytes go to a temporary file
/// beside the path; finish() renames it into place, and destroying an unfinished Writer
/// removes it, so nothing appears at the path unless finish() succeeds.
class Writer {
 public:
  /// An empty writer, as a moved-from one; every call on it is invalid_argument.
  Writer() noexcept = default;

  static ret<Writer> create(const string_arg& path, const writer_options& options = {}) {
    return detail::unwrap(try_create(path, options));
  }
  /// A writer of a sharded set at `base` (zt_writer_create_sharded_with): zTensor shards
  /// `<base>-0000k-of-0000n.zt` of about `max_shard_bytes` each and the index
  /// `<base>.zt.index.json`, which Reader::open opens as one reader. Every member works
  /// on it as on one file; nothing appears under a final name before finish().
  static ret<Writer> create_sharded(const string_arg& base, std::uint64_t max_shard_bytes,
                                    const writer_options& options = {}) {
    return detail::unwrap(try_create_sharded(base, max_shard_bytes, options));
  }
  /// create_sharded() with writer_options::durable = `durable`.
  static ret<Writer> create_sharded(const string_arg& base, std::uint64_t max_shard_bytes, bool durable) {
    writer_options o;
    o.durable = durable;
    return detail::unwrap(try_create_sharded(base, max_shard_bytes, o));
  }

  Writer(Writer&& o) noexcept = default;
  Writer& operator=(Writer&& o) noexcept {
    if (this != &o) {
      close();  // ends its open builders' work and discards this writer's own file
      state_ = std::move(o.state_);
    }
    return *this;
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer() { close(); }

  bool is_open() const noexcept { return handle() != nullptr; }
  explicit operator bool() const noexcept { return is_open(); }
  zt_writer* handle() const noexcept { return state_ != nullptr ? state_->handle : nullptr; }

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

  /// Declares a dense tensor before any data (zt_writer_declare): a safetensors or GGUF
  /// file whose tensors are all declared first is written in one pass (header first,
  /// each tensor's bytes straight to their place, in whatever order they are added;
  /// declared_order() is the order that writes it front to back). Declare every tensor
  /// before the first object begins, and set a GGUF's key/values or safetensors'
  /// metadata before the first tensor's data. The tensors added must then be exactly
  /// those declared (invalid_argument otherwise; finish() is state_error while one is
  /// missing). `type` is an optional logical type ("f8_e4m3fn" ...).
  ret<void> declare(const string_arg& name, zt::dtype type_of_data, shape_ref shape, const string_arg& type = {}) {
    return detail::unwrap(try_declare(name, string_arg(), type_of_data, shape, type));
  }
  /// declare() of a tensor of element type T (dtype_of T).
  template <class T>
  ret<void> declare(const string_arg& name, shape_ref shape, const string_arg& type = {}) {
    static_assert(has_dtype_v<T>, "declare<T>(): T has no zt::dtype_of");
    return detail::unwrap(try_declare(name, string_arg(), dtype_v<T>, shape, type));
  }
  /// declare() of an object of `format`: "dense", or a ggml block format ("ggml_q4_k"),
  /// whose data is dtype::u8 of its logical type (an empty `type` says so).
  ret<void> declare_object(const string_arg& name, const string_arg& format, zt::dtype type_of_data, shape_ref shape,
                           const string_arg& type = {}) {
    return detail::unwrap(try_declare(name, format, type_of_data, shape, type));
  }
  /// Declares a dense tensor with its bytes (zt_writer_declare_data): finish() writes
  /// them, in the file's order, so a safetensors or GGUF file of tensors already in
  /// memory is written in one pass with no order to follow. The bytes are not copied:
  /// `data` must stay alive and unchanged until finish() succeeds or the writer is
  /// destroyed. The tensor is then not added otherwise (invalid_argument), and `data`
  /// must hold exactly the shape's element count (invalid_argument, nothing declared).
  template <class Range, detail::if_typed_range<Range> = 0>
  ret<void> declare_data(const string_arg& name, const Range& data, shape_ref shape, const string_arg& type = {}) {
    return detail::unwrap(try_declare_data(name, string_arg(), dtype_v<detail::range_element_t<Range>>,
                                           detail::range_data(data), detail::range_bytes(data), shape, type));
  }
  /// declare_data() of an explicit dtype (e.g. f16 / bf16 held in uint16_t), or of an
  /// object of `format` ("dense", or a ggml block format with dtype::u8 data).
  template <class Range, detail::if_data_range<Range> = 0>
  ret<void> declare_data(const string_arg& name, zt::dtype type_of_data, const Range& data, shape_ref shape,
                         const string_arg& type = {}, const string_arg& format = {}) {
    return detail::unwrap(try_declare_data(name, format, type_of_data, detail::range_data(data),
                                           detail::range_bytes(data), shape, type));
  }
  /// The declared tensors in the file's order, as indices into the declarations (0 for
  /// the first declared): adding them in this order writes the file front to back.
  ret<std::vector<std::size_t>> declared_order() const {
    using order_result = result<std::vector<std::size_t>>;
    std::size_t count = 0;
    zt_status st = zt_writer_declared_order(handle(), nullptr, 0, &count);
    if (st != ZT_OK && st != ZT_ERR_BUFFER_TOO_SMALL) return detail::unwrap(order_result(detail::last_failure(st)));
    std::vector<std::size_t> out(count);
    st = zt_writer_declared_order(handle(), out.data(), out.size(), &count);
    if (st != ZT_OK) return detail::unwrap(order_result(detail::last_failure(st)));
    return detail::unwrap(order_result(std::move(out)));
  }

  /// Begins an object of any format; add its components, then end() the builder.
  ret<object_builder> begin_object(const string_arg& name, const string_arg& format, shape_ref shape = {}) & {
    return detail::unwrap(try_begin_object(name, format, shape));
  }

  /// Sets the file's attributes from a JSON object text; a second call replaces them.
  ret<void> set_attributes_json(const string_arg& json) { return detail::unwrap(try_file_attributes(json)); }
  /// Sets the attributes of an object already begun (open or ended).
  ret<void> set_attributes_json(const string_arg& object, const string_arg& json) {
    return detail::unwrap(try_attributes(object, json));
  }

  /// Sets one file attribute, with its type (zt_writer_set_file_attribute): a reader's
  /// value as it is (in.attributes()["llama.context_length"] stays a u32), an
  /// owned_value, or a scalar or string made into one. A key set before gets the new
  /// value in place; the other attributes stay.
  ret<void> set_attribute(const string_arg& key, const zt::value& v) { return detail::unwrap(try_set(key, v)); }
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_convertible_v<const T&, std::string_view>, int> = 0>
  ret<void> set_attribute(const string_arg& key, const T& x) {
    return detail::unwrap(detail::set_made(x, [&](const zt::value& v) { return try_set(key, v); }));
  }
  /// Replaces the file's attributes with a map value (zt_writer_set_file_attributes), e.g.
  /// set_attributes(gguf.attributes()): every key/value of a reader, types kept.
  ret<void> set_attributes(const zt::value& map) {
    return detail::unwrap(detail::check(zt_writer_set_file_attributes(handle(), map.handle())));
  }
  /// set_attribute() of an object already begun (open or ended).
  ret<void> set_object_attribute(const string_arg& object, const string_arg& key, const zt::value& v) {
    return detail::unwrap(try_set_object(object, key, v));
  }
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_convertible_v<const T&, std::string_view>, int> = 0>
  ret<void> set_object_attribute(const string_arg& object, const string_arg& key, const T& x) {
    return detail::unwrap(detail::set_made(x, [&](const zt::value& v) { return try_set_object(object, key, v); }));
  }
  /// set_attributes() of an object already begun (open or ended).
  ret<void> set_object_attributes(const string_arg& object, const zt::value& map) {
    if (result<void> r = detail::check_text(object, "object"); !r.ok()) return detail::unwrap(std::move(r));
    return detail::unwrap(detail::check(zt_writer_set_object_attributes(handle(), object.c_str(), map.handle())));
  }

  /// Copies object `object` of `reader` (any format it reads) into this file
  /// (zt_writer_copy_object): format, shape, attributes with their types, every component;
  /// raw and zstd components as stored unless `options` says otherwise. On failure the
  /// object is left out and the writer stays usable. No object may be open.
  ret<void> copy_object(const Reader& reader, std::size_t object, const copy_options& options = {}) {
    const zt_copy_options o = options.to_c();
    return detail::unwrap(detail::check(zt_writer_copy_object(handle(), reader.handle(), object, &o)));
  }
  /// copy_object() of the object with this name (not_found when absent).
  ret<void> copy_object(const Reader& reader, const string_arg& name, const copy_options& options = {}) {
    if (result<void> r = detail::check_text(name, "name"); !r.ok()) return detail::unwrap(std::move(r));
    std::size_t index = 0;
    zt_status st = zt_object_find(reader.handle(), name.c_str(), &index);
    if (st != ZT_OK) return detail::unwrap(result<void>(detail::last_failure(st)));
    return copy_object(reader, index, options);
  }

  /// Writes the manifest and footer, syncs and renames the file into place. With an
  /// object open: state_error, and the writer stays usable. Otherwise, whatever the
  /// result, the writer accepts nothing more (state_error).
  ret<void> finish() { return detail::unwrap(detail::check(zt_writer_finish(handle()))); }

 private:
  explicit Writer(detail::shared_writer state) noexcept : state_(std::move(state)) {}

  /// Ends the open builders' work and frees the C writer (an unfinished file is removed).
  void close() noexcept {
    if (state_ != nullptr) {
      state_->close_open();
      zt_writer_free(state_->handle);
      state_->handle = nullptr;
      state_.reset();
    }
  }
  /// A writer over `raw` (state allocated first, so a throwing allocation leaks nothing).
  template <class Create>
  static result<Writer> make(Create&& create) {
    detail::shared_writer state = std::make_shared<detail::writer_state>(nullptr);
    zt_writer* raw = nullptr;
    zt_status st = create(&raw);
    if (st != ZT_OK) return detail::last_failure(st);
    state->handle = raw;
    return result<Writer>(Writer(std::move(state)));
  }
  static result<Writer> try_create_sharded(const string_arg& base, std::uint64_t max_shard_bytes,
                                           const writer_options& options) {
    if (result<void> r = detail::check_text(base, "base"); !r.ok()) return r.as_failure();
    const zt_writer_options o = options.to_c();
    return make([&](zt_writer** out) { return zt_writer_create_sharded_with(base.c_str(), max_shard_bytes, &o, out); });
  }
  static result<Writer> try_create(const string_arg& path, const writer_options& options) {
    if (result<void> r = detail::check_text(path, "path"); !r.ok()) return r.as_failure();
    const zt_writer_options o = options.to_c();
    return make([&](zt_writer** out) { return zt_writer_create_with(path.c_str(), &o, out); });
  }
  result<void> try_set(const string_arg& key, const zt::value& v) {
    if (result<void> r = detail::check_text(key, "key"); !r.ok()) return r;
    return detail::check(zt_writer_set_file_attribute(handle(), key.c_str(), v.handle()));
  }
  result<void> try_set_object(const string_arg& object, const string_arg& key, const zt::value& v) {
    if (result<void> r = detail::check_text(object, "object"); !r.ok()) return r;
    if (result<void> r = detail::check_text(key, "key"); !r.ok()) return r;
    return detail::check(zt_writer_set_object_attribute(handle(), object.c_str(), key.c_str(), v.handle()));
  }
  result<void> try_add(const string_arg& name, zt::dtype t, const void* data, std::size_t size, shape_ref shape,
                       const write_options& options) {
    if (result<void> r = detail::check_text(name, "name"); !r.ok()) return r;
    const zt_write_options o = options.to_c();
    return detail::check(zt_writer_add(handle(), name.c_str(), static_cast<std::uint32_t>(t), shape.data(), shape.size(),
                                       data, size, &o));
  }
  result<void> try_declare(const string_arg& name, const string_arg& format, zt::dtype t, shape_ref shape,
                           const string_arg& type) {
    if (result<void> r = detail::check_text(name, "name"); !r.ok()) return r;
    if (result<void> r = detail::check_text(format, "format"); !r.ok()) return r;
    if (result<void> r = detail::check_text(type, "type"); !r.ok()) return r;
    return detail::check(zt_writer_declare(handle(), name.c_str(), format.c_str(), static_cast<std::uint32_t>(t),
                                           type.c_str(), shape.data(), shape.size()));
  }
  result<void> try_declare_data(const string_arg& name, const string_arg& format, zt::dtype t, const void* data,
                                std::size_t size, shape_ref shape, const string_arg& type) {
    if (result<void> r = detail::check_text(name, "name"); !r.ok()) return r;
    if (result<void> r = detail::check_text(format, "format"); !r.ok()) return r;
    if (result<void> r = detail::check_text(type, "type"); !r.ok()) return r;
    return detail::check(zt_writer_declare_data(handle(), name.c_str(), format.c_str(), static_cast<std::uint32_t>(t),
                                                type.c_str(), shape.data(), shape.size(), data, size));
  }
  result<object_builder> try_begin_object(const string_arg& name, const string_arg& format, shape_ref shape) {
    if (result<void> r = detail::check_text(name, "name"); !r.ok()) return r.as_failure();
    if (result<void> r = detail::check_text(format, "format"); !r.ok()) return r.as_failure();
    // Allocate before the object is begun, so nothing can throw while it is open and unowned.
    std::string owned_name(name.c_str() == nullptr ? "" : name.c_str());
    zt_status st = zt_writer_begin_object(handle(), name.c_str(), format.c_str(), shape.data(), shape.size());
    if (st != ZT_OK) return detail::last_failure(st);
    state_->object = ++state_->last_id;
    return result<object_builder>(object_builder(state_, state_->object, std::move(owned_name)));
  }
  result<void> try_file_attributes(const string_arg& json) {
    if (result<void> r = detail::check_text(json, "json"); !r.ok()) return r;
    return detail::check(zt_writer_set_file_attributes_json(handle(), json.c_str()));
  }
  result<void> try_attributes(const string_arg& object, const string_arg& json) {
    if (result<void> r = detail::check_text(object, "object"); !r.ok()) return r;
    if (result<void> r = detail::check_text(json, "json"); !r.ok()) return r;
    return detail::check(zt_writer_set_object_attributes_json(handle(), object.c_str(), json.c_str()));
  }

  detail::shared_writer state_;
};

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_WRITER_HPP
