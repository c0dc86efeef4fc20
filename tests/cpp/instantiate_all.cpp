// Every public function and template of the wrapper, instantiated, in one translation unit
// that is compiled and never run. The typed templates are instantiated for a few element
// types: bool (its own path), integers of 1, 2 and 8 bytes, float, and long long beside
// int64_t (distinct types on LP64); dtype_of of every type is checked by test_basics. The cpp_warnings_*
// tests compile it with g++ and clang++, as C++17 and C++20, at -O0 to -O3, with and
// without exceptions, under -Wall -Wextra -Werror -pedantic: warnings that only appear
// once a template is instantiated and inlined (-Wmaybe-uninitialized at -O1 ...) fail
// there instead of in a user's -Werror build.
#include <ztensor.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace {

// Uses a value so that no call is dropped as unused (and no result left unchecked).
template <class T>
void use(T&& value) {
  static_cast<void>(value);
}

}  // namespace

// The value of a fallible call in either mode.
#if ZT_CPP_EXCEPTIONS
#define get(call) (call)
#else
#define get(call) (call).value()
#endif

namespace {

// --- the result type itself ---------------------------------------------------------------
// The value of a result that can only have failed, returned: inlined, this is where g++
// once saw the value read uninitialized (-Wmaybe-uninitialized).
template <class T>
T value_of_failed(zt_status status) {
  zt::result<T> r(zt::failure{status, "failed"});
  return std::move(r).value();
}

template <class T>
void results(T value) {
  use(value_of_failed<T>(ZT_ERR_IO));
  zt::result<T> ok(std::move(value));
  zt::result<T> failed(zt::failure{ZT_ERR_IO, "io"});
  use(ok.ok() && static_cast<bool>(failed) && ok.status() == ZT_OK && ok.message().empty());
  use(ok.value());
  use(*ok);
  const zt::result<T>& cref = ok;
  use(cref.value());
  use(*cref);
  use(ok.operator->());
  use(cref.operator->());
  use(cref.value_or(T{}));
  use(zt::result<T>(failed.as_failure()).value_or(T{}));
  use(std::move(ok).value());
  use(*zt::result<T>(T{}));
  zt::result<T> copy = failed;
  copy = std::move(failed);
  use(copy.as_failure().message);
}

#define element_types bool, std::uint8_t, std::uint16_t, float, std::int64_t, long long

// --- reading, for each kind of element type ------------------------------------------------
template <class T>
void read_typed(const zt::Object& o, const zt::Component& c, const zt::tensor_view& v) {
  use(get(v.template as<T>()));
  use(get(v.template as<T>(zt::dtype_v<T>)));
  use(get(c.template read<T>()));
  use(get(c.template read<T>(zt::dtype_v<T>)));
  use(get(c.template read_as<T>()));
  use(get(c.template read_as<T>(zt::dtype_v<T>)));
  use(get(o.template read<T>()));
  use(get(o.template read<T>("values")));
  use(get(o.template read_as<T>()));
  use(get(o.template read_as<T>(std::string("values"))));
  use(get(o.template read<T>(zt::dtype_v<T>)));
  use(get(o.template read<T>(zt::dtype_v<T>, "values")));
  use(get(o.template read_as<T>(zt::dtype_v<T>)));
  use(get(o.template read_as<T>(zt::dtype_v<T>, std::string_view("values"))));
  use(get(c.template read_as_range<T>(0, 4)));
  use(get(c.template read_as_range<T>(zt::dtype_v<T>, 2, 1)));
  use(get(o.template read_as_range<T>(0, 4)));
  use(get(o.template read_as_range<T>(zt::dtype_v<T>, 0, 4, "values")));
}

template <class... T>
void read_all(const zt::Object& o, const zt::Component& c, const zt::tensor_view& v) {
  (read_typed<T>(o, c, v), ...);
}

// --- writing, for each kind of element type and range -------------------------------------
template <class T>
void write_typed(zt::Writer& w) {
  // std::vector<bool> has no contiguous storage: bool is written from arrays.
  using vector = std::conditional_t<std::is_same_v<T, bool>, std::array<T, 4>, std::vector<T>>;
  const vector vec{};
  const std::array<T, 4> arr{};
  const T carray[4] = {};
  const zt::span<const T> sp(vec.data(), vec.size());
  get(w.add("vector", vec, {4}));
  get(w.add("array", arr, {2, 2}, zt::write_options::zstd(3, zt::digest::sha256)));
  get(w.add("c_array", carray, {4}, zt::write_options::raw(zt::digest::crc32c)));
  get(w.add("span", sp, {4}));
  get(w.add(std::string("explicit"), zt::dtype_v<T>, vec, {4}));
  zt::object_builder b = get(w.begin_object("object", "dense", {4}));
  get(b.add_component("data", vec));
  get(b.add_component("typed", zt::dtype_v<T>, arr, zt::write_options{}, "f8_e4m3fn"));
  zt::component_builder s = get(b.template begin_component<T>("stream"));
  get(s.write(vec));
  get(s.write(sp));
  get(s.write(carray, sizeof carray));
  get(s.end());
  zt::component_builder s2 = get(b.begin_component("stream2", zt::dtype_v<T>, zt::write_options::zstd()));
  get(s2.write(arr));
  get(s2.end());
  get(b.set_attribute("scalar", T{}));
  get(b.end());
  // Values to write: a scalar, an array from each kind of range, set by key.
  zt::owned_value one = get(zt::make_value(T{}));
  get(w.set_attribute("scalar", T{}));
  get(w.set_attribute("value", one));
  get(w.set_attribute("array", get(zt::make_array(arr))));
  get(w.set_attribute("span", get(zt::make_array(sp))));
  get(w.set_attribute("c_array", get(zt::make_array(carray))));
  get(w.set_object_attribute("vector", "scalar", T{}));
}

template <class... T>
void write_all(zt::Writer& w) {
  (write_typed<T>(w), ...);
}

// A device of callbacks: the required ones, and the optional ones it says it has.
class null_device : public zt::device_callbacks {
 public:
  int copy_async(void* dst, std::uint64_t offset, const void* src, std::size_t size) noexcept override {
    use(dst != src && offset + size > 0);
    return 0;
  }
  int event_create(void** event) noexcept override {
    *event = this;
    return 0;
  }
  int event_destroy(void* event) noexcept override { return event == this ? 0 : 1; }
  int event_record(void* event) noexcept override { return event == this ? 0 : 1; }
  int event_query(void* event, bool& done) noexcept override {
    done = event == this;
    return 0;
  }
  bool has_host_alloc() const noexcept override { return true; }
  bool has_event_wait() const noexcept override { return true; }
  int event_wait(void* event) noexcept override { return event == this ? 0 : 1; }
  bool handles() const noexcept override { return true; }
  const char* error_string(int code) noexcept override { return code == 1 ? "one" : nullptr; }
};

}  // namespace

// Not called: compiled for its warnings. extern so that nothing is dropped unseen.
void zt_instantiate_all(const char* path, const void* bytes, std::size_t size);
void zt_instantiate_all(const char* path, const void* bytes, std::size_t size) {
  // enums, names, sizes, versions
  use(zt::dtype_size(zt::dtype::bf16) + zt::dtype_name(zt::dtype::f32).size() + zt::encoding_name(zt::encoding::zstd).size());
  use(zt::status_name(ZT_ERR_FORMAT));
  use(zt::library_version());
  use(zt::last_os_error() + static_cast<int>(zt::path_is_url("s3://b/k")));
  use(zt::library_version_number() + static_cast<unsigned>(zt::dtype_from_name("f32").value_or(zt::dtype::u8)));
  use(zt::has_dtype_v<char> || zt::dtype_v<long long> == zt::dtype::i64);

  // span
  std::vector<int> ints = {1, 2, 3};
  const std::vector<int> cints = {4, 5};
  int arr[3] = {6, 7, 8};
  zt::span<int> s(ints);
  zt::span<const int> cs(cints);
  zt::span<const int> converted = s;
  zt::span<int> from_array(arr);
  zt::span<const int> ptr_count(cints.data(), cints.size());
  use(s.data() != nullptr && s.size() + s.size_bytes() > 0 && !s.empty());
  for (int& x : s) x += s.front() + s.back() + s[0];
  use(s.subspan(1, 1).size() + cs.size() + converted.size() + from_array.size() + ptr_count.size());
  use(zt::span<int>().empty());

  // arguments
  const std::string str = "name";
  const std::string_view view = "view";
  zt::string_arg args[] = {zt::string_arg(), zt::string_arg(nullptr), zt::string_arg("lit"), zt::string_arg(str),
                           zt::string_arg(view)};
  for (const zt::string_arg& a : args) use(a.valid() && a.c_str() != nullptr);
  const std::vector<std::uint64_t> dims = {2, 3};
  const std::array<std::uint64_t, 2> adims = {2, 3};
  zt::shape_ref shapes[] = {zt::shape_ref(), zt::shape_ref({2, 3}), zt::shape_ref(dims), zt::shape_ref(adims),
                            zt::shape_ref(zt::span<const std::uint64_t>(dims)), zt::shape_ref(dims.data(), dims.size())};
  for (const zt::shape_ref& sh : shapes) use(sh.data() != nullptr && sh.size() > 0);
  zt::open_options oo;
  oo.no_mmap = true;
  use(oo.to_c().flags);
  use(zt::write_options::zstd(9, zt::digest::crc32c).to_c().level + zt::write_options::raw().to_c().digest);
  zt::writer_options wo;
  wo.durable = false;
  zt::copy_options co;
  co.encoding = zt::encoding::zstd;
  co.digest = zt::digest::sha256;
  // Strings assigned from std::string, not from a literal: g++ 12 -O3 reports -Wrestrict
  // in libstdc++'s own basic_string::operator=(const char *) here (a known false report of
  // that compiler, in the standard library, whatever the string is for).
  co.name = std::string("renamed");
  zt::remote_options ro;
  ro.headers = {"X-A: b"};
  ro.config = {"aws_region=x"};
  ro.bearer_token = std::string("t");
  std::vector<const char*> ro_pointers;
  use(wo.to_c().flags + co.to_c().flags + ro.to_c(ro_pointers).header_count);

  // results
  results<int>(1);
  results<std::string>("x");
  results<std::vector<float>>({});
  results<std::vector<bool>>({});
  results<zt::tensor_view>({});
  results<zt::Object>({});
  results<zt::Component>({});
  results<std::string_view>({});
  zt::result<void> rv;
  zt::result<void> rf(zt::failure{ZT_ERR_STATE, "state"});
  use(rv.ok() && static_cast<bool>(rf) && rf.status() == ZT_ERR_STATE && rf.message().empty());
  rv.value();
  use(rf.as_failure().status);
#if ZT_CPP_EXCEPTIONS
  try {
    zt::throw_error(zt::failure{ZT_ERR_CHECKSUM, "bad"});
  } catch (const zt::checksum_error& e) {
    use(e.status());
  } catch (const zt::error& e) {
    use(e.what());
  }
#endif

  // reading
  zt::Reader r = get(zt::Reader::open(path, oo));
  zt::Reader m = get(zt::Reader::open_memory(bytes, size));
  zt::Reader m2 = get(zt::Reader::open_memory(zt::span<const std::byte>(static_cast<const std::byte*>(bytes), size)));
  m = std::move(m2);
  use(r.is_open() && static_cast<bool>(r) && r.handle() != nullptr && r.size() > 0 && !r.empty());
  use(r.version().size() + r.file_format().size());
  get(r.verify());
  use(get(r.attributes_json()));
  use(r.contains("x") && r.find(str).has_value());
  for (const zt::Object& o : r) use(o.name());
  zt::Object o = get(r["x"]);
  zt::Object o2 = get(r.at(0));
  use(o.format().size() + o.shape().size() + o.ndim() + o.index() + o.component_count() + o.info().ndim + o2.ndim());
  get(o.verify());
  get(o.validate());
  use(get(o.attributes_json()));
  {
    // Typed attributes: every accessor, the scalar types of each width.
    const zt::value a = get(r.attributes());
    const zt::value v = get(a["k"]);
    use(get(o.attributes()).size() + get(o.attribute("k")).size() + get(r.attribute("k")).size());
    use(get(v.as<bool>()) || get(v.as<std::int8_t>()) || get(v.as<std::int16_t>()) || get(v.as<std::int32_t>()) ||
        get(v.as<std::int64_t>()) || get(v.as<long long>()) || get(v.as<std::uint8_t>()) || get(v.as<std::uint16_t>()) ||
        get(v.as<std::uint32_t>()) || get(v.as<std::uint64_t>()) || get(v.as<float>()) > 0 || get(v.as<double>()) > 0);
    use(get(v.as<std::string_view>()).size() + get(v.as<std::string>()).size() + get(v.bytes()).size());
    use(get(v.array<float>()).size() + get(v.array<bool>()).size() + get(v.array<std::int32_t>()).size() +
        get(v.array<std::uint64_t>()).size() + get(v.array<double>()).size());
    use(get(v[0]).handle() != nullptr && get(v.string_at(0)).size() > 0 && v.find("x").has_value() && v.contains("y"));
    use(v.size() + static_cast<std::size_t>(v.type()) + static_cast<std::size_t>(v.element_type()));
    use(v.is_null() || v.is_string() || v.is_array() || v.is_map() || static_cast<bool>(v));
    use(zt::value_type_name(zt::value_type::u32).size());
    for (const zt::value e : v.elements()) use(e.handle());
    for (const zt::value::entry& e : a.entries()) use(e.key.size() + e.val.size() + e.key_value.size());
    use(v.try_as<std::uint32_t>().ok() && v.try_at(1).ok() && v.try_get("z").ok() && v.try_string_at(2).ok() &&
        v.try_bytes().ok() && v.try_array<float>().ok());
  }
  const zt::component_range comps = o.components();
  use(comps.size() + (comps.empty() ? 1u : 0u));
  for (const zt::Component& c : comps) use(c.role());
  zt::Component c = get(o.component("data"));
  zt::Component c2 = get(o.component_at(0));
  use(o.find_component(view).has_value());
  use(c.dtype() == c2.dtype() && c.type().has_value() && c.encoding() == zt::encoding::raw && c.digest().has_value());
  use(zt::encoding_name(c.encoding()) == "pipeline");
  use(c.offset() + c.length() + c.decoded_length() + c.count() + c.index() + c.object_index() + c.info().length);
  zt::tensor_view v = get(c.view());
  zt::tensor_view v2 = get(o.view());
  zt::tensor_view v3 = get(o.view(str));
  use(v.data() != nullptr && v.size() + v.count() > 0 && !v.empty() && v.dtype() == v2.dtype() && v.zero_copy() &&
      v.bytes().size() == v3.size());
  std::vector<std::byte> buffer(16);
  get(c.read_into(buffer));
  get(c.read_into(buffer.data(), buffer.size()));
  get(c.read_range(0, buffer));
  get(c.read_range(0, buffer.data(), buffer.size()));
  get(c.verify());
  get(o.read_into(buffer));
  get(o.read_into(buffer.data(), buffer.size(), "values"));
  get(o.read_range(4, buffer));
  get(o.read_range(4, buffer.data(), buffer.size(), str));
  read_all<element_types>(o, c, v);
  use(get(v.as<std::uint16_t>(zt::dtype::bf16)));
  use(get(c.read<std::uint16_t>(zt::dtype::f16)));
  use(get(c.read_as<std::uint16_t>(zt::dtype::bf16)));
  // what a loader adds: quantized objects, layout, frames, remote readers, batches
  use(o.is_quantized());
  const zt::quant_info q = get(o.quant_info());
  use(q.ggml_type + q.name.size() + q.role.size() + q.block_size + q.type_size + q.row_size + q.row_count +
      (q.dequantizable ? 1u : 0u));
  const zt::file_layout layout = get(r.layout());
  use(layout.data_offset + layout.alignment);
  use(c.value_count(zt::dtype::f32) + get(c.frame_count()) + get(c.frame(0)).length + get(c.frames()).size());
  get(c.read_as_range_into(zt::dtype::f32, 0, buffer));
  get(c.read_as_range_into(zt::dtype::f32, 0, buffer.data(), buffer.size()));
  zt::Reader remote = get(zt::Reader::open_url("http://127.0.0.1:1/m.zt", oo, ro));
  const zt::transfer_stats stats = get(remote.remote_stats());
  use(stats.requests + stats.bytes);
  std::vector<zt_load_request> requests(2);
  get(r.load_batch(requests, 2));
  zt::Reader fd = get(zt::Reader::open_fd(3, oo));
  use(fd.shard_count() + get(r.shard_path(0)).size() + get(r.shard_mapping(0)).size() + get(r.mapping()).size());
  get(r.prefetch(0));
  get(r.evict(0));
  use(get(c.location()).offset);

  // writing
  zt::Writer w = get(zt::Writer::create(path, wo));
  zt::Writer sharded = get(zt::Writer::create_sharded(path, 1 << 20, wo));
  zt::Writer sharded2 = get(zt::Writer::create_sharded(path, 1 << 20, false));
  get(sharded.copy_object(r, 0, co));
  get(sharded2.copy_object(r, str));
  {
    // values of every kind, and attributes set from them, from a reader and as maps
    zt::owned_value null = get(zt::make_null());
    zt::owned_value text = get(zt::make_value("text"));
    zt::owned_value text2 = get(zt::make_value(str));
    zt::owned_value text3 = get(zt::make_value(view));
    const std::vector<std::uint8_t> raw = {1, 2};
    zt::owned_value bytes_value = get(zt::make_bytes(raw));
    const std::vector<std::string> tokens = {"a", "b"};
    const std::vector<std::string_view> token_views = {"a", "b"};
    const char* token_ptrs[2] = {"a", "b"};
    zt::owned_value strings = get(zt::make_strings(tokens));
    zt::owned_value strings2 = get(zt::make_strings(token_views));
    zt::owned_value strings3 = get(zt::make_strings(token_ptrs));
    zt::owned_value list = get(zt::make_array({null.value(), text, strings}));
    zt::owned_value map = get(zt::make_map({{"a", text2}, {"b", list}}));
    zt::owned_value moved = std::move(text3);
    text3 = std::move(moved);
    use(text3.handle() != nullptr && static_cast<bool>(bytes_value) && strings2.value().size() + strings3.value().size() > 0);
    const zt::value from_reader = get(get(r.attributes())["k"]);
    get(w.set_attribute("from_reader", from_reader));
    get(w.set_attribute("text", "literal"));
    get(w.set_attribute("string", str));
    get(w.set_attributes(map));
    get(w.set_attributes(get(r.attributes())));
    get(w.set_object_attribute("vector", "map", map));
    get(w.set_object_attributes("vector", map));
    zt::object_builder b = get(w.begin_object("attributes", "dense", {1}));
    get(b.set_attribute("text", view));
    get(b.set_attribute("value", map));
    get(b.set_attributes(map));
    get(b.end());
  }
  r.close();
  use(w.is_open() && static_cast<bool>(w) && w.handle() != nullptr);
  write_all<element_types>(w);
  {
    zt::object_builder b = get(w.begin_object(str, view, dims));
    use(b.is_open() && b.name().size() > 0);
    get(b.set_attributes_json(R"({"a":1})"));
    zt::object_builder moved = std::move(b);
    b = std::move(moved);
    zt::component_builder cb = get(b.begin_component<float>("data"));
    zt::component_builder cb2 = std::move(cb);
    use(cb2.is_open() && cb.is_open());
  }
  get(w.set_attributes_json(R"({"file":1})"));
  get(w.set_attributes_json("object", R"({"o":1})"));
  zt::Writer w2;
  w2 = std::move(w);
  get(w2.finish());

  // the staged loader
  {
    zt::Reader lr = get(zt::Reader::open(path));
    std::vector<zt_loader_request> q = {
        zt::load_request(0, buffer.data(), buffer.size()).host().rows(0, 1).convert(zt::dtype::f32).verify(),
        zt::load_request(1, buffer.data(), buffer.size(), "data").columns(0, 1).offset(8)};
    zt::loader_options lo;
    lo.readers = 2;
    lo.verify = true;
    lo.on_complete = [](std::size_t request, zt_status status, std::uint64_t bytes) { use(request + bytes + status); };
    lo.on_progress = [](std::uint64_t done, std::uint64_t total) { use(done + total); };
    zt::Loader l = get(zt::Loader::create(nullptr, std::move(lo)));
    get(l.load(lr, q));
    get(l.load(lr, zt::span<zt_loader_request>(q.data(), q.size())));
    l.cancel();
    zt_loader_stats st = l.stats();
    use(st.loads + st.bytes + (l.handle() != nullptr));
    zt::Loader l2 = std::move(l);
    l = std::move(l2);
    null_device nd;
    zt_device nd_callbacks = nd.callbacks();
    use(zt::Loader::try_create(&nd_callbacks));
    zt::Cuda cuda = get(zt::Cuda::open());
    zt::cuda_options co;
    co.device = 1;
    co.library = "libcuda.so.1";
    use(zt::Cuda::try_open(co));
    zt::Cuda cuda2 = get(zt::Cuda::open(co));
    cuda = std::move(cuda2);
    zt_device cd = cuda.device();
    zt::Loader cl = get(zt::Loader::create(&cd, zt::loader_options{}));
    void* p = get(cuda.alloc(16));
    get(cuda.copy_to_host(buffer.data(), p, 16));
    get(cuda.synchronize());
    get(cuda.dealloc(p));
    use(cuda.handle() != nullptr && cd.struct_size > 0 && cl.handle() != nullptr);
  }
}
