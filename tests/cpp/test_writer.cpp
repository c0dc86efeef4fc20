// zt::Writer, zt::object_builder, zt::component_builder (exceptions mode).
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"

// zTensor v1.2.0 (the library writes v2 by default): these tests check what v1.2 keeps
// (objects in the order written, 64-byte alignment, typed attributes with their widths).
static zt::writer_options v12(bool durable = true) {
  zt::writer_options o;
  o.durable = durable;
  o.version = zt::writer_options::file_version::v1_2;
  return o;
}

namespace {

static_assert(ZT_CPP_EXCEPTIONS == 1, "this file tests the exceptions mode");

/// Removes the file when the test ends (it may or may not exist).
struct scratch_file {
  explicit scratch_file(const std::string& stem) : path(zt_test::temp_path(stem)) {}
  ~scratch_file() { zt_test::remove(path); }
  std::string path;
};

template <class T>
void add_and_check(zt::Writer& w, const std::string& name, const std::vector<T>& data) {
  w.add(name, data, {static_cast<std::uint64_t>(data.size())});
}

TEST(Writer, EveryDeducedDtypeRoundTrips) {
  scratch_file f("dtypes");
  const std::vector<double> f64 = {1.0, -2.5};
  const std::vector<float> f32 = {3.5f};
  const std::vector<std::int64_t> i64 = {-9000000000LL, 1};
  const std::vector<std::int32_t> i32 = {-5, 6};
  const std::vector<std::int16_t> i16 = {-300, 7};
  const std::vector<std::int8_t> i8 = {-128, 127};
  const std::vector<std::uint64_t> u64 = {18000000000000000000ULL};
  const std::vector<std::uint32_t> u32 = {4000000000U};
  const std::vector<std::uint16_t> u16 = {65535, 0};
  const std::vector<std::uint8_t> u8 = {255, 0, 1};
  const std::vector<long long> ll = {-1, 2};               // deduced by size and sign: i64
  const std::vector<unsigned short> us = {9};              // u16
  const std::vector<signed char> sc = {-1};                // i8
  const std::array<bool, 3> bools = {true, false, true};   // bool
  const double c_array[2] = {7.0, 8.0};
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    add_and_check(w, "f64", f64);
    add_and_check(w, "f32", f32);
    add_and_check(w, "i64", i64);
    add_and_check(w, "i32", i32);
    add_and_check(w, "i16", i16);
    add_and_check(w, "i8", i8);
    add_and_check(w, "u64", u64);
    add_and_check(w, "u32", u32);
    add_and_check(w, "u16", u16);
    add_and_check(w, "u8", u8);
    add_and_check(w, "ll", ll);
    add_and_check(w, "us", us);
    add_and_check(w, "sc", sc);
    w.add("bool", bools, {3});
    w.add("c_array", c_array, {2});
    w.add("span", zt::span<const float>(f32.data(), f32.size()), {1});
    w.finish();
  }
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_EQ(r["f64"].read<double>(), f64);
  EXPECT_EQ(r["f32"].read<float>(), f32);
  EXPECT_EQ(r["i64"].read<std::int64_t>(), i64);
  EXPECT_EQ(r["i32"].read<std::int32_t>(), i32);
  EXPECT_EQ(r["i16"].read<std::int16_t>(), i16);
  EXPECT_EQ(r["i8"].read<std::int8_t>(), i8);
  EXPECT_EQ(r["u64"].read<std::uint64_t>(), u64);
  EXPECT_EQ(r["u32"].read<std::uint32_t>(), u32);
  EXPECT_EQ(r["u16"].read<std::uint16_t>(), u16);
  EXPECT_EQ(r["u8"].read<std::uint8_t>(), u8);
  EXPECT_EQ(r["ll"].component("data").dtype(), zt::dtype::i64);
  EXPECT_EQ(r["ll"].read<long long>(), ll);
  EXPECT_EQ(r["us"].component("data").dtype(), zt::dtype::u16);
  EXPECT_EQ(r["sc"].component("data").dtype(), zt::dtype::i8);
  EXPECT_EQ(r["bool"].component("data").dtype(), zt::dtype::bool_);
  EXPECT_EQ(r["bool"].read<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(r["c_array"].read<double>(), (std::vector<double>{7.0, 8.0}));
  EXPECT_EQ(r["span"].read<float>(), f32);
}

TEST(Writer, ExplicitDtypeAndShapes) {
  scratch_file f("explicit");
  const std::vector<std::uint16_t> halves = {0x3c00, 0xbc00};  // f16 1, -1
  const std::vector<std::uint16_t> bhalves = {0x3f80, 0x4000};  // bf16 1, 2
  std::array<std::byte, 8> raw{};
  const float two[2] = {0.25f, 8.0f};
  std::memcpy(raw.data(), two, 8);
  const std::vector<std::uint64_t> shape_vec = {2, 1};
  const std::array<std::uint64_t, 2> shape_arr = {1, 2};
  const std::uint64_t shape_ptr[3] = {1, 1, 2};
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    w.add("f16", zt::dtype::f16, halves, {2});
    w.add("bf16", zt::dtype::bf16, bhalves, {2}, zt::write_options::zstd(1));
    w.add("bytes_as_f32", zt::dtype::f32, raw, {2});
    w.add("vec_shape", zt::dtype::f32, raw, shape_vec);
    w.add("arr_shape", zt::dtype::f32, raw, shape_arr);
    w.add("ptr_shape", zt::dtype::f32, raw, zt::shape_ref(shape_ptr, 3));
    w.add("scalar", std::vector<std::int32_t>{5}, {});
    w.finish();
  }
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_EQ(r["f16"].component("data").dtype(), zt::dtype::f16);
  EXPECT_EQ(r["f16"].read_as<float>(), (std::vector<float>{1, -1}));
  EXPECT_EQ(r["bf16"].read_as<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(r["bf16"].component("data").encoding(), zt::encoding::zstd);
  EXPECT_EQ(r["bytes_as_f32"].read<float>(), (std::vector<float>{0.25f, 8.0f}));
  auto shape_of = [&](const char* name) {
    auto s = r[name].shape();
    return std::vector<std::uint64_t>(s.begin(), s.end());
  };
  EXPECT_EQ(shape_of("vec_shape"), shape_vec);
  EXPECT_EQ(shape_of("arr_shape"), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(shape_of("ptr_shape"), (std::vector<std::uint64_t>{1, 1, 2}));
  EXPECT_EQ(r["scalar"].ndim(), 0u);
}

TEST(Writer, OptionsReachTheFile) {
  scratch_file f("options");
  std::vector<float> big(10000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 7);
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    w.add("raw", big, {10000});
    w.add("zstd_sha", big, {100, 100}, zt::write_options::zstd(19, zt::digest::sha256));
    w.add("zstd_fast", big, {10000}, zt::write_options::zstd(-5));
    w.add("raw_crc", big, {10000}, zt::write_options::raw(zt::digest::crc32c));
    zt::write_options manual;
    manual.encoding = zt::encoding::zstd;
    manual.digest = zt::digest::crc32c;
    w.add("manual", big, {10000}, manual);
    w.finish();
  }
  zt::Reader r = zt::Reader::open(f.path, zt::open_options{false, true});
  zt::Component raw = r["raw"].component("data");
  EXPECT_EQ(raw.encoding(), zt::encoding::raw);
  EXPECT_EQ(raw.length(), 40000u);
  zt::Component z = r["zstd_sha"].component("data");
  EXPECT_EQ(z.encoding(), zt::encoding::zstd);
  EXPECT_LT(z.length(), 40000u);
  EXPECT_EQ(z.decoded_length(), 40000u);
  EXPECT_EQ(z.digest()->substr(0, 7), "sha256:");
  EXPECT_FALSE(r["zstd_fast"].component("data").digest().has_value());
  EXPECT_EQ(r["raw_crc"].component("data").digest()->substr(0, 7), "crc32c:");
  EXPECT_EQ(r["manual"].component("data").encoding(), zt::encoding::zstd);
  EXPECT_EQ(r["manual"].read<float>(), big);
  EXPECT_EQ(r["zstd_sha"].read<float>(), big);
  r.verify();

  zt::Writer w = zt::Writer::create(f.path + ".2", v12());
  EXPECT_THROW(w.add("bad_level", big, {10000}, zt::write_options::zstd(1000)), zt::invalid_argument);
  zt::write_options bogus;
  bogus.encoding = static_cast<zt::encoding>(7);
  EXPECT_THROW(w.add("bad_encoding", big, {10000}, bogus), zt::invalid_argument);
  bogus = zt::write_options{};
  bogus.digest = static_cast<zt::digest>(9);
  EXPECT_THROW(w.add("bad_digest", big, {10000}, bogus), zt::invalid_argument);
  EXPECT_THROW(w.add("bad_dtype", static_cast<zt::dtype>(99), big, {10000}), zt::invalid_argument);
}

TEST(Writer, RefusedAddsLeaveTheWriterUsable) {
  scratch_file f("refused");
  zt::Writer w = zt::Writer::create(f.path, v12());
  const std::vector<float> six(6, 1.0f);
  EXPECT_THROW(w.add("short", six, {2, 4}), zt::invalid_argument);
  try {
    w.add("short", six, {7});
  } catch (const zt::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("short"), std::string::npos) << e.what();
  }
  w.add("ok", six, {2, 3});
  EXPECT_THROW(w.add("ok", six, {6}), zt::invalid_argument);  // duplicate name
  EXPECT_THROW(w.add("", six, {6}), zt::invalid_argument);
  EXPECT_THROW(w.add(std::string_view("a\0b", 3), six, {6}), zt::invalid_argument);
  EXPECT_THROW(w.add(nullptr, six, {6}), zt::invalid_argument);
  w.finish();
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_EQ(r.size(), 1u);
}

TEST(Writer, CompositeObjectsThroughBuilders) {
  scratch_file f("builders");
  const std::vector<float> values = {1, 2, 3};
  const std::vector<std::uint64_t> coords = {0, 1, 2, 0, 1, 2};  // ndim 2 x nnz 3
  const std::vector<std::uint8_t> codes = {1, 2, 3, 4};
  const std::vector<std::uint16_t> scales = {0x3c00};
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    zt::object_builder coo = w.begin_object("coo", "sparse_coo", {3, 3});
    EXPECT_TRUE(coo.is_open());
    EXPECT_EQ(coo.name(), "coo");
    coo.add_component("values", values, zt::write_options::zstd(0, zt::digest::sha256));
    coo.add_component("coords", coords);
    coo.set_attributes_json(R"({"kind":"coo"})");
    coo.end();
    EXPECT_FALSE(coo.is_open());
    EXPECT_THROW(coo.end(), zt::state_error);
    EXPECT_THROW(coo.add_component("more", values), zt::state_error);
    EXPECT_THROW(coo.set_attributes_json("{}"), zt::state_error);  // ended: through the writer
    w.set_attributes_json("coo", R"({"kind":"coo","after_end":1})");  // allowed until finish

    auto q = w.begin_object(std::string("quant"), std::string_view("quantized_group"), {4});
    q.add_component("data", zt::dtype::u8, codes, {}, "my_int4");
    q.add_component("scales", zt::dtype::f16, scales);
    q.end();

    auto custom = w.begin_object("custom", "my_format");  // scalar shape by default
    custom.add_component("blob", std::vector<std::int8_t>{1, -1});
    custom.end();
    w.finish();
  }
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_EQ(r["coo"].format(), "sparse_coo");
  EXPECT_EQ(r["coo"].attributes_json(), R"({"kind":"coo","after_end":1})");
  EXPECT_EQ(r["coo"].read<std::uint64_t>("coords"), coords);
  EXPECT_NO_THROW(r["coo"].verify());
  EXPECT_NO_THROW(r["coo"].validate());
  EXPECT_EQ(r["quant"].format(), "quantized_group");
  EXPECT_EQ(*r["quant"].component("data").type(), "my_int4");
  EXPECT_THROW((void)r["quant"].read<std::uint16_t>("scales"), zt::invalid_argument);  // f16 is not u16
  EXPECT_EQ(r["quant"].component("scales").read<std::uint16_t>(zt::dtype::f16), scales);
  EXPECT_EQ(r["custom"].format(), "my_format");
  EXPECT_EQ(r["custom"].ndim(), 0u);
  EXPECT_EQ(r["custom"].read<std::int8_t>("blob"), (std::vector<std::int8_t>{1, -1}));
}

TEST(Writer, StreamingComponents) {
  scratch_file f("stream");
  std::vector<double> big(5000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i) * 0.5;
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    auto obj = w.begin_object("streamed", "dense", {5000});
    {
      zt::component_builder c = obj.begin_component<double>("data", zt::write_options::zstd(3, zt::digest::sha256));
      EXPECT_TRUE(c.is_open());
      // chunks of any size, including ones that split an element
      const auto* bytes = reinterpret_cast<const unsigned char*>(big.data());
      const std::size_t total = big.size() * sizeof(double);
      std::size_t done = 0;
      for (std::size_t chunk = 1; done < total; chunk = chunk * 3 + 1) {
        const std::size_t n = std::min(chunk, total - done);
        c.write(bytes + done, n);
        done += n;
      }
      c.write(std::vector<double>{});  // empty chunk
      c.end();
      EXPECT_FALSE(c.is_open());
      EXPECT_THROW(c.write(big), zt::state_error);
      EXPECT_THROW(c.end(), zt::state_error);
    }
    obj.end();

    auto two = w.begin_object("two", "sparse_csr", {2, 2});
    {
      auto v = two.begin_component("values", zt::dtype::f32);
      v.write(std::vector<float>{1.0f});
      v.write(zt::span<const float>());  // an empty chunk
      v.write(std::array<float, 1>{2.0f});
      v.end();
      auto ind = two.begin_component<std::uint64_t>("indices", {}, nullptr);
      ind.write(std::vector<std::uint64_t>{0, 1});
      ind.end();
    }
    two.add_component("indptr", std::vector<std::uint64_t>{0, 1, 2});
    two.end();

    auto fp8 = w.begin_object("fp8", "dense", {2});
    {
      auto c = fp8.begin_component("data", zt::dtype::u8, zt::write_options::raw(zt::digest::crc32c), "f8_e5m2");
      c.write(std::array<std::uint8_t, 2>{0x3c, 0x40});  // 1.0, 2.0
      c.end();
    }
    fp8.end();
    w.finish();
  }
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_EQ(r["streamed"].read<double>(), big);
  EXPECT_NO_THROW(r["streamed"].verify());
  EXPECT_EQ(r["two"].read<float>("values"), (std::vector<float>{1, 2}));
  EXPECT_NO_THROW(r["two"].validate());
  EXPECT_EQ(*r["fp8"].component("data").type(), "f8_e5m2");
  EXPECT_EQ(r["fp8"].read_as<float>(), (std::vector<float>{1, 2}));
  EXPECT_NO_THROW(r["fp8"].verify());
}

TEST(Writer, BuilderStateErrors) {
  scratch_file f("state");
  zt::Writer w = zt::Writer::create(f.path, v12());
  auto obj = w.begin_object("a", "dense", {2});
  EXPECT_THROW((void)w.begin_object("b", "dense", {2}), zt::state_error);  // one open object at a time
  EXPECT_THROW(w.add("c", std::vector<float>{1}, {1}), zt::state_error);
  EXPECT_THROW(w.finish(), zt::state_error);  // an object is open: refused, writer usable
  {
    auto c = obj.begin_component<float>("data");
    EXPECT_THROW((void)obj.begin_component<float>("other"), zt::state_error);
    EXPECT_THROW(obj.end(), zt::state_error);  // a component is being streamed
    EXPECT_TRUE(obj.is_open());
    c.write(std::vector<float>{1, 2});
  }  // c's destructor ends the component
  EXPECT_THROW(obj.add_component("data", std::vector<float>{1, 2}), zt::invalid_argument);  // duplicate role
  obj.end();
  w.finish();
  EXPECT_THROW(w.finish(), zt::state_error);
  EXPECT_THROW(w.add("late", std::vector<float>{1}, {1}), zt::state_error);
  EXPECT_THROW((void)w.begin_object("late", "dense", {1}), zt::state_error);
  EXPECT_THROW(w.set_attributes_json("{}"), zt::state_error);
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_EQ(r["a"].read<float>(), (std::vector<float>{1, 2}));
}

TEST(Writer, RefusedObjectIsDroppedAndBuilderCloses) {
  scratch_file f("refusedobj");
  zt::Writer w = zt::Writer::create(f.path, v12());
  auto obj = w.begin_object("short", "dense", {4});
  obj.add_component("data", std::vector<float>{1, 2});
  EXPECT_THROW(obj.end(), zt::invalid_argument);
  EXPECT_FALSE(obj.is_open());
  auto c_obj = w.begin_object("partial", "dense", {1});
  {
    auto c = c_obj.begin_component<float>("data");
    c.write("abc", 3);  // not a whole f32
    EXPECT_THROW(c.end(), zt::invalid_argument);
    EXPECT_FALSE(c.is_open());
  }
  EXPECT_THROW(c_obj.end(), zt::invalid_argument);  // no data left
  w.add("short", std::vector<float>{1}, {1});  // the name is free again
  w.finish();
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r["short"].read<float>(), std::vector<float>{1});
}

TEST(Writer, Attributes) {
  scratch_file f("attrs");
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    w.add("t", std::vector<float>{1}, {1});
    w.set_attributes_json(R"({"first":1})");
    w.set_attributes_json(std::string(R"({"second":"x","bytes":{"$bytes":"00ff"}})"));  // replaces
    w.set_attributes_json("t", R"({"unit":"m"})");
    EXPECT_THROW(w.set_attributes_json("missing", "{}"), zt::not_found);
    EXPECT_THROW(w.set_attributes_json("[1,2]"), zt::invalid_argument);
    EXPECT_THROW(w.set_attributes_json("{not json"), zt::invalid_argument);
    EXPECT_THROW(w.set_attributes_json(nullptr), zt::invalid_argument);
    EXPECT_THROW(w.set_attributes_json(std::string_view("{}\0", 3)), zt::invalid_argument);
    w.finish();
  }
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_EQ(r.attributes_json(), R"({"second":"x","bytes":{"$bytes":"00ff"}})");
  EXPECT_EQ(r["t"].attributes_json(), R"({"unit":"m"})");
}

TEST(Writer, UnfinishedWriterLeavesNoFile) {
  scratch_file f("unfinished");
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    w.add("t", std::vector<float>(1000, 1.0f), {1000});
    EXPECT_EQ(zt_test::leftover_temps(f.path), 1);  // the bytes go to a temporary file
    EXPECT_FALSE(zt_test::exists(f.path));
  }
  EXPECT_FALSE(zt_test::exists(f.path));
  EXPECT_EQ(zt_test::leftover_temps(f.path), 0);

  // an existing file stays intact until finish
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    w.add("old", std::vector<float>{1}, {1});
    w.finish();
  }
  const auto before = zt_test::slurp(f.path);
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    w.add("new", std::vector<float>{2}, {1});
  }
  EXPECT_EQ(zt_test::slurp(f.path), before);
  EXPECT_EQ(zt_test::leftover_temps(f.path), 0);

  // an exception unwinding through an open writer and builder
  zt_test::remove(f.path);
  try {
    zt::Writer w = zt::Writer::create(f.path, v12());
    auto obj = w.begin_object("o", "dense", {1});
    obj.add_component("data", std::vector<float>{1});
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(zt_test::exists(f.path));
  EXPECT_EQ(zt_test::leftover_temps(f.path), 0);
}

TEST(Writer, BuilderDestroyedDuringAnException) {
  scratch_file f("unwind");
  zt::Writer w = zt::Writer::create(f.path, v12());
  // complete components: the destructor's end() keeps the object
  try {
    auto obj = w.begin_object("kept", "dense", {2});
    obj.add_component("data", std::vector<float>{1, 2});
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  // no data: the library refuses the object, so it is dropped
  try {
    auto obj = w.begin_object("no_data", "dense", {2});
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  // a half-streamed component: ended, then the object is refused (too short)
  try {
    auto obj = w.begin_object("half_streamed", "dense", {4});
    auto c = obj.begin_component<float>("data", zt::write_options::zstd());
    c.write(std::vector<float>{1, 2});
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  // the wrapper's own exception (duplicate role) unwinding the builder
  try {
    auto obj = w.begin_object("dup", "dense", {1});
    obj.add_component("data", std::vector<float>{1});
    obj.add_component("data", std::vector<float>{1});
    ADD_FAILURE() << "expected zt::invalid_argument";
  } catch (const zt::invalid_argument&) {
  }
  // the writer is never left with an open object
  w.add("after", std::vector<float>{3}, {1});
  w.finish();
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_TRUE(r.contains("kept"));
  EXPECT_TRUE(r.contains("dup"));
  EXPECT_FALSE(r.contains("no_data"));
  EXPECT_FALSE(r.contains("half_streamed"));
  EXPECT_TRUE(r.contains("after"));
  EXPECT_EQ(r.size(), 3u);
  EXPECT_NO_THROW(r.verify());
}

TEST(Writer, Moves) {
  scratch_file f("moves"), g("moves_other");
  zt::Writer a = zt::Writer::create(f.path, v12());
  EXPECT_TRUE(a.is_open());
  EXPECT_TRUE(static_cast<bool>(a));
  EXPECT_NE(a.handle(), nullptr);
  a.add("x", std::vector<float>{1}, {1});
  zt::Writer b(std::move(a));
  EXPECT_FALSE(a.is_open());  // NOLINT(bugprone-use-after-move): moved-from is specified empty
  EXPECT_EQ(a.handle(), nullptr);
  EXPECT_THROW(a.add("y", std::vector<float>{1}, {1}), zt::invalid_argument);
  EXPECT_THROW(a.finish(), zt::invalid_argument);
  EXPECT_THROW((void)a.begin_object("y", "dense"), zt::invalid_argument);
  EXPECT_THROW(a.set_attributes_json("{}"), zt::invalid_argument);

  zt::Writer other = zt::Writer::create(g.path, v12());
  other.add("lost", std::vector<float>{1}, {1});
  other = std::move(b);  // discards other's unfinished file
  EXPECT_EQ(zt_test::leftover_temps(g.path), 0);

  // builders keep working across a move of their writer and of themselves
  zt::object_builder ob = other.begin_object("y", "dense", {2});
  zt::Writer moved_writer = std::move(other);
  zt::object_builder ob2(std::move(ob));
  EXPECT_FALSE(ob.is_open());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(ob.name(), "");    // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(ob.add_component("data", std::vector<float>{1, 2}), zt::state_error);
  EXPECT_THROW(ob.end(), zt::state_error);
  EXPECT_THROW(ob.set_attributes_json("{}"), zt::state_error);
  EXPECT_THROW((void)ob.begin_component<float>("data"), zt::state_error);
  zt::component_builder cb = ob2.begin_component("data", zt::dtype::f32);
  zt::component_builder cb2;
  EXPECT_FALSE(cb2.is_open());
  EXPECT_THROW(cb2.write("x", 1), zt::state_error);
  cb2 = std::move(cb);
  EXPECT_FALSE(cb.is_open());  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(cb.end(), zt::state_error);
  cb2.write(std::vector<float>{5, 6});
  cb2.end();
  zt::object_builder ob3;
  EXPECT_FALSE(ob3.is_open());
  ob3 = std::move(ob2);
  ob3.end();

  // move-assigning over an open builder ends it first
  zt::object_builder first = moved_writer.begin_object("z", "dense", {1});
  first.add_component("data", std::vector<float>{9});
  first = zt::object_builder();
  EXPECT_FALSE(first.is_open());
  zt::object_builder next = moved_writer.begin_object("w", "dense", {1});  // "z" was ended
  next.add_component("data", std::vector<float>{10});
  next.end();

  moved_writer.finish();
  EXPECT_FALSE(zt_test::exists(g.path));
  zt::Reader r = zt::Reader::open(f.path);
  EXPECT_EQ(r.size(), 4u);
  EXPECT_EQ(r["y"].read<float>(), (std::vector<float>{5, 6}));
  EXPECT_EQ(r["z"].read<float>(), (std::vector<float>{9}));

  zt::Writer empty;
  EXPECT_FALSE(empty);
}

TEST(Writer, CreateErrors) {
  EXPECT_THROW((void)zt::Writer::create("/nonexistent-dir-zt/x.zt", v12()), zt::io_error);
  EXPECT_THROW((void)zt::Writer::create("", v12()), zt::invalid_argument);
  EXPECT_THROW((void)zt::Writer::create(nullptr, v12()), zt::invalid_argument);
  EXPECT_THROW((void)zt::Writer::create(std::string("a\0b.zt", 6), v12()), zt::invalid_argument);
  EXPECT_FALSE(zt_test::exists("a"));
}

TEST(Writer, AnyDestructionOrderIsSafe) {
  scratch_file f("order"), g("order2");
  // a builder declared before its writer outlives it while an exception unwinds
  try {
    zt::object_builder obj;
    zt::component_builder stream;
    zt::Writer w = zt::Writer::create(f.path, v12());
    obj = w.begin_object("o", "dense", {2});
    stream = obj.begin_component<float>("data");
    stream.write(std::vector<float>{1});
    throw std::runtime_error("boom");  // w is destroyed first, then stream and obj
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(zt_test::exists(f.path));
  EXPECT_EQ(zt_test::leftover_temps(f.path), 0);

  // the writer destroyed first closes its builders: they report state_error afterwards
  zt::object_builder obj;
  zt::component_builder stream;
  {
    zt::Writer w = zt::Writer::create(f.path, v12());
    obj = w.begin_object("o", "dense", {2});
    stream = obj.begin_component<float>("data");
  }
  EXPECT_FALSE(obj.is_open());
  EXPECT_FALSE(stream.is_open());
  EXPECT_THROW(stream.write(std::vector<float>{1}), zt::state_error);
  EXPECT_THROW(stream.end(), zt::state_error);
  EXPECT_THROW(obj.add_component("x", std::vector<float>{1}), zt::state_error);
  EXPECT_THROW(obj.end(), zt::state_error);

  // an object builder destroyed before its component builder ends the stream first
  zt::Writer w = zt::Writer::create(g.path, v12());
  {
    zt::component_builder orphan;
    {
      zt::object_builder o = w.begin_object("kept", "dense", {2});
      orphan = o.begin_component<float>("data");
      orphan.write(std::vector<float>{1, 2});
    }
    EXPECT_FALSE(orphan.is_open());
    EXPECT_THROW(orphan.write(std::vector<float>{3}), zt::state_error);
  }
  // a writer moved while its builder is open: the builder follows it
  zt::object_builder moving = w.begin_object("moved", "dense", {1});
  zt::Writer w2 = std::move(w);
  moving.add_component("data", std::vector<float>{4});
  zt::object_builder moved_builder = std::move(moving);
  zt::Writer w3;
  w3 = std::move(w2);
  moved_builder.end();
  EXPECT_FALSE(moved_builder.is_open());
  // move-assigning a writer with an open object over another one closes that object
  zt::Writer other = zt::Writer::create(f.path, v12());
  zt::object_builder stale = other.begin_object("stale", "dense", {1});
  other = zt::Writer();
  EXPECT_FALSE(stale.is_open());
  EXPECT_FALSE(zt_test::exists(f.path));
  w3.finish();

  zt::Reader r = zt::Reader::open(g.path);
  EXPECT_EQ(r["kept"].read<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(r["moved"].read<float>(), (std::vector<float>{4}));
  EXPECT_EQ(r.size(), 2u);
}

// The usage examples of ztensor.hpp and cpp/README.md, kept compiling and running here.
TEST(Docs, UsageExamples) {
  scratch_file f("docs"), g("docs_out");
  std::ostringstream cout;
  {
    std::vector<float> w = {1, 2, 3, 4, 5, 6};
    zt::Writer out = zt::Writer::create(f.path, v12());
    out.add("layer0.weight", w, {2, 3}, zt::write_options::zstd(3, zt::digest::sha256));
    out.finish();

    zt::Reader in = zt::Reader::open(f.path);
    for (const auto& obj : in)  // objects, in file order
      cout << obj.name() << ": " << obj.format() << ", " << obj.ndim() << "-d\n";
    zt::tensor_view v = in["layer0.weight"].view();  // throws zt::not_found if absent
    zt::span<const float> fl = v.as<float>();        // throws unless the data is f32
    std::vector<double> d = in["layer0.weight"].read_as<double>();  // converted copy
    EXPECT_EQ(fl[5], 6.0f);
    EXPECT_EQ(d[4], 5.0);
  }
  EXPECT_EQ(cout.str(), "layer0.weight: dense, 2-d\n");
  {
    const std::vector<std::uint16_t> bf16_bits(32, 0x3f80);
    const std::vector<float> values = {1, 2};
    const std::vector<std::uint64_t> indices = {0, 1}, indptr = {0, 1, 2};
    zt::Writer w = zt::Writer::create(g.path, v12());  // nothing at the path until finish()
    w.add("ids", std::vector<int64_t>{1, 2, 3}, {3});  // dtype from the element type
    w.add("emb", zt::dtype::bf16, bf16_bits, {4, 8});  // half types: explicit dtype
    {
      auto m = w.begin_object("mask", "sparse_csr", {2, 2});  // scoped builder
      m.add_component("values", values, zt::write_options::zstd());
      m.add_component("indices", indices);
      auto s = m.begin_component<uint64_t>("indptr");  // streamed in chunks
      s.write(indptr);
      s.end();
      m.end();
    }
    w.set_attributes_json(R"({"model":"demo"})");
    w.finish();
  }
  zt::Reader r = zt::Reader::open(g.path);
  EXPECT_EQ(r.size(), 3u);
  EXPECT_NO_THROW(r["mask"].validate());
  EXPECT_EQ(r["emb"].read_as<float>(), std::vector<float>(32, 1.0f));
}

}  // namespace

// The library writes zTensor v2 by default, and safetensors or GGUF when the options (or
// the path's extension) say so.
TEST(Writer, FormatsAndTheDefaultVersion) {
  const std::vector<float> v = {1.0f, 2.0f};
  {
    scratch_file f("default");
    zt::Writer w = zt::Writer::create(f.path);
    w.add("x", v, {2});
    w.finish();
    EXPECT_EQ(zt::Reader::open(f.path).version(), "2");
  }
  for (auto [format, name] : {std::pair{zt::writer_options::file_format::safetensors, "safetensors"},
                              std::pair{zt::writer_options::file_format::gguf, "gguf"}}) {
    scratch_file f(std::string("as_") + name);
    zt::writer_options o;
    o.durable = false;
    o.format = format;
    zt::Writer w = zt::Writer::create(f.path, o);
    w.add("x", v, {2});
    w.finish();
    zt::Reader r = zt::Reader::open(f.path);
    EXPECT_EQ(r.file_format(), name);
  }
  {
    // safetensors holds dense tensors only: a sparse object is refused; the writer stays usable.
    scratch_file f("st_refused");
    zt::writer_options o;
    o.format = zt::writer_options::file_format::safetensors;
    zt::Writer w = zt::Writer::create(f.path, o);
    EXPECT_THROW(w.begin_object("s", "sparse_csr", {2, 2}), zt::invalid_argument);
    w.add("x", v, {2});
    w.finish();
  }
  // Placement: 4 KiB by default and when asked, 64 KiB (canonical) when asked.
  for (auto [placement, offset] : {std::pair{zt::writer_options::blob_placement::library_default, 4096u},
                                   std::pair{zt::writer_options::blob_placement::compact, 4096u},
                                   std::pair{zt::writer_options::blob_placement::canonical, 65536u}}) {
    scratch_file f("placed");
    zt::writer_options o;
    o.placement = placement;
    zt::Writer w = zt::Writer::create(f.path, o);
    w.add("x", v, {2});
    w.finish();
    zt::Reader r = zt::Reader::open(f.path);
    EXPECT_EQ(r.version(), "2");
    EXPECT_EQ(r["x"].component("data").info().offset, offset);
  }
}

// Tensors declared before their data: safetensors and GGUF written in one pass, the
// bytes of an undeclared writer's file whatever the order the tensors are added in.
TEST(Writer, DeclaredTensorsAreWrittenInOnePass) {
  const std::vector<float> a = {1.0f, 2.0f, 3.0f};
  const std::vector<std::int8_t> b = {1, 2, 3, 4, 5};
  const std::vector<std::uint8_t> q(34, 7);  // one q8_0 block of 32 values
  for (auto [format, name] : {std::pair{zt::writer_options::file_format::safetensors, "safetensors"},
                              std::pair{zt::writer_options::file_format::gguf, "gguf"}}) {
    const bool gguf = std::string(name) == "gguf";
    zt::writer_options o;
    o.durable = false;
    o.format = format;
    scratch_file spooled(std::string("spooled_") + name), declared(std::string("declared_") + name);
    {
      zt::Writer w = zt::Writer::create(spooled.path, o);
      w.set_attribute("general.name", "m");
      w.add("a", a, {3});
      w.add("b", b, {5});
      if (gguf) {
        zt::object_builder ob = w.begin_object("q", "ggml_q8_0", {32});
        ob.add_component("data", zt::dtype::u8, q, {}, "ggml_q8_0");
        ob.end();
      }
      w.finish();
    }
    {
      zt::Writer w = zt::Writer::create(declared.path, o);
      w.set_attribute("general.name", "m");
      w.declare<float>("a", {3});
      w.declare("b", zt::dtype::i8, {5});
      if (gguf) w.declare_object("q", "ggml_q8_0", zt::dtype::u8, {32});
      EXPECT_THROW(w.declare("a", zt::dtype::f32, {3}), zt::invalid_argument);
      const std::vector<std::size_t> order = w.declared_order();
      ASSERT_EQ(order.size(), gguf ? 3u : 2u);
      // safetensors: f32 before i8; GGUF: as declared.
      EXPECT_EQ(order[0], 0u);
      EXPECT_EQ(order[1], 1u);
      EXPECT_THROW(w.add("c", a, {3}), zt::invalid_argument);
      // Added last to first: each away from the cursor but the last.
      if (gguf) {
        zt::object_builder ob = w.begin_object("q", "ggml_q8_0", {32});
        ob.add_component("data", zt::dtype::u8, q, {}, "ggml_q8_0");
        ob.end();
      }
      w.add("b", b, {5});
      EXPECT_THROW(w.set_attribute("late", "x"), zt::state_error);
      EXPECT_THROW(w.finish(), zt::state_error);  // "a" is missing; the writer stays usable
      w.add("a", a, {3});
      w.finish();
    }
    EXPECT_EQ(zt_test::slurp(declared.path), zt_test::slurp(spooled.path)) << name;
    {
      // Declared with their bytes: finish() writes the same file.
      scratch_file with_data(std::string("with_data_") + name);
      zt::Writer w = zt::Writer::create(with_data.path, o);
      w.set_attribute("general.name", "m");
      EXPECT_THROW(w.declare_data("a", a, {4}), zt::invalid_argument);  // 12 bytes, 16 declared
      w.declare_data("a", a, {3});
      w.declare_data("b", zt::dtype::i8, b, {5});
      if (gguf) w.declare_data("q", zt::dtype::u8, q, {32}, {}, "ggml_q8_0");
      EXPECT_THROW(w.add("a", a, {3}), zt::invalid_argument);  // finish() writes it
      w.finish();
      EXPECT_EQ(zt_test::slurp(with_data.path), zt_test::slurp(spooled.path)) << name;
    }
  }
}
