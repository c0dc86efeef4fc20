// zt::Reader, zt::Object, zt::Component, zt::tensor_view (exceptions mode).
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "support.hpp"

namespace {

static_assert(ZT_CPP_EXCEPTIONS == 1, "this file tests the exceptions mode");

const std::vector<float> k_f32 = {1.5f, -2.0f, 3.25f, 4.0f, 5.5f, -6.75f};
const std::vector<double> k_f64 = {0.5, 1e300, -2.25, 3.0};
const std::vector<std::int32_t> k_i32 = {-7, 0, 2147483647};
const std::vector<std::uint16_t> k_half = {0x3c00, 0x4000, 0xc000, 0x0000};  // f16 1, 2, -2, 0
const std::array<bool, 5> k_bool = {true, false, true, true, false};
const std::vector<std::uint8_t> k_fp8 = {0x38, 0x40, 0xb8, 0x00};  // f8_e4m3fn 1, 2, -1, 0
// sparse_csr 3 x 4: row 0 has (0,1)=1, row 2 has (2,0)=2 and (2,3)=3
const std::vector<float> k_values = {1, 2, 3};
const std::vector<std::uint64_t> k_indices = {1, 0, 3};
const std::vector<std::uint64_t> k_indptr = {0, 1, 1, 3};

/// The sample file every reader test opens.
std::string write_sample(const std::string& path) {
  // zTensor v1.2.0: the sample has crc32c digests and the tests check the v1.2 version.
  zt::writer_options v1_2;
  v1_2.version = zt::writer_options::file_version::v1_2;
  zt::Writer w = zt::Writer::create(path, v1_2);
  w.add("w_f32", k_f32, {2, 3});
  w.add("w_zstd", k_f64, {4}, zt::write_options::zstd(5, zt::digest::sha256));
  w.add("w_crc", k_i32, {3}, zt::write_options::raw(zt::digest::crc32c));
  w.add("half", zt::dtype::f16, k_half, {4});
  w.add("flags", k_bool, {5});
  const float scalar[1] = {42.0f};
  w.add("scalar", scalar, {});
  w.add("empty", std::vector<std::uint8_t>{}, {0});
  {
    auto obj = w.begin_object("sparse", "sparse_csr", {3, 4});
    obj.add_component("values", k_values, zt::write_options::zstd());
    obj.add_component("indices", k_indices);
    obj.add_component("indptr", k_indptr);
    obj.end();
  }
  {
    auto obj = w.begin_object("fp8", "dense", {4});
    obj.add_component("data", zt::dtype::u8, k_fp8, {}, "f8_e4m3fn");
    obj.end();
  }
  w.set_attributes_json(R"({"model":"demo","layers":2})");
  w.set_attributes_json("w_f32", R"({"trained":true})");
  w.finish();
  return path;
}

class ReaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { path_ = new std::string(write_sample(zt_test::temp_path("reader"))); }
  static void TearDownTestSuite() {
    zt_test::remove(*path_);
    delete path_;
  }
  static const std::string& path() { return *path_; }
  static std::string* path_;
};
std::string* ReaderTest::path_ = nullptr;

TEST_F(ReaderTest, OpenSizeVersionIteration) {
  zt::Reader r = zt::Reader::open(path());
  EXPECT_TRUE(r.is_open());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_NE(r.handle(), nullptr);
  EXPECT_EQ(r.size(), 9u);
  EXPECT_FALSE(r.empty());
  EXPECT_EQ(r.version(), "1.2.0");
  EXPECT_EQ(r.file_format(), "zt");

  std::vector<std::string> names;
  for (const auto& obj : r) names.emplace_back(obj.name());
  EXPECT_EQ(names, (std::vector<std::string>{"w_f32", "w_zstd", "w_crc", "half", "flags", "scalar", "empty", "sparse", "fp8"}));

  // iterator protocol
  zt::object_iterator it = r.begin();
  zt::object_iterator copy = it++;
  EXPECT_EQ((*copy).name(), "w_f32");
  EXPECT_EQ((*it).name(), "w_zstd");
  EXPECT_NE(it, copy);
  ++it;
  EXPECT_EQ((*it).index(), 2u);
  EXPECT_EQ(std::distance(r.begin(), r.end()), 9);
  static_assert(std::is_same_v<std::iterator_traits<zt::object_iterator>::value_type, zt::Object>);
}

TEST_F(ReaderTest, FindIndexAndContains) {
  zt::Reader r = zt::Reader::open(path());
  std::optional<zt::Object> o = r.find("w_zstd");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->name(), "w_zstd");
  EXPECT_EQ(o->index(), 1u);
  EXPECT_FALSE(r.find("nope").has_value());
  EXPECT_FALSE(r.find(std::string_view("w_f32\0x", 7)).has_value());  // an embedded NUL never matches
  EXPECT_TRUE(r.contains("half"));
  EXPECT_TRUE(r.contains(std::string("half")));
  EXPECT_FALSE(r.contains("halfx"));

  EXPECT_EQ(r["sparse"].format(), "sparse_csr");
  EXPECT_EQ(r[std::string("w_crc")].index(), 2u);
  EXPECT_EQ(r[std::string_view("flags")].index(), 4u);
  EXPECT_THROW((void)r["missing"], zt::not_found);
  try {
    (void)r["missing"];
    FAIL() << "expected zt::not_found";
  } catch (const zt::not_found& e) {
    EXPECT_EQ(e.status(), ZT_ERR_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)r[std::string("a\0b", 3)], zt::invalid_argument);

  EXPECT_EQ(r.at(7).name(), "sparse");
  EXPECT_THROW((void)r.at(9), zt::not_found);
}

TEST_F(ReaderTest, ObjectMembers) {
  zt::Reader r = zt::Reader::open(path());
  zt::Object o = r["w_f32"];
  EXPECT_EQ(o.name(), "w_f32");
  EXPECT_EQ(o.format(), "dense");
  ASSERT_EQ(o.ndim(), 2u);
  zt::span<const std::uint64_t> shape = o.shape();
  ASSERT_EQ(shape.size(), 2u);
  EXPECT_EQ(shape[0], 2u);
  EXPECT_EQ(shape[1], 3u);
  EXPECT_EQ(std::vector<std::uint64_t>(shape.begin(), shape.end()), (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(o.index(), 0u);
  EXPECT_EQ(o.component_count(), 1u);
  EXPECT_EQ(o.info().ndim, 2u);
  EXPECT_STREQ(o.info().name, "w_f32");
  EXPECT_EQ(o.attributes_json(), R"({"trained":true})");
  EXPECT_EQ(r["half"].attributes_json(), "{}");
  EXPECT_NO_THROW(o.validate());
  EXPECT_NO_THROW(o.verify());  // no digest: nothing to check

  zt::Object scalar = r["scalar"];
  EXPECT_EQ(scalar.ndim(), 0u);
  EXPECT_TRUE(scalar.shape().empty());
  EXPECT_EQ(scalar.read<float>(), std::vector<float>{42.0f});

  zt::Object sparse = r["sparse"];
  EXPECT_EQ(sparse.component_count(), 3u);
  std::vector<std::string> roles;
  for (const zt::Component& c : sparse.components()) roles.emplace_back(c.role());
  EXPECT_EQ(roles, (std::vector<std::string>{"values", "indices", "indptr"}));
  zt::component_range range = sparse.components();
  EXPECT_EQ(range.size(), 3u);
  EXPECT_FALSE(range.empty());
  zt::component_iterator ci = range.begin();
  zt::component_iterator before = ci++;
  EXPECT_EQ((*before).role(), "values");
  EXPECT_EQ((*ci).index(), 1u);
  EXPECT_NE(ci, before);
  EXPECT_EQ(std::distance(range.begin(), range.end()), 3);
  EXPECT_EQ(sparse.component_at(2).role(), "indptr");
  EXPECT_THROW((void)sparse.component_at(3), zt::not_found);
  EXPECT_EQ(sparse.component("indices").index(), 1u);
  EXPECT_THROW((void)sparse.component("data"), zt::not_found);
  EXPECT_TRUE(sparse.find_component("indptr").has_value());
  EXPECT_FALSE(sparse.find_component("data").has_value());
  EXPECT_NO_THROW(sparse.validate());
  EXPECT_EQ(sparse.read<float>("values"), k_values);
  EXPECT_EQ(sparse.read<std::uint64_t>("indptr"), k_indptr);
  EXPECT_EQ(sparse.read_as<double>("values"), (std::vector<double>{1, 2, 3}));
  EXPECT_THROW((void)sparse.view(), zt::not_found);  // no "data" component
  EXPECT_EQ(sparse.view("indices").as<std::uint64_t>().size(), 3u);
}

TEST_F(ReaderTest, ComponentMembers) {
  zt::Reader r = zt::Reader::open(path());
  zt::Component plain = r["w_f32"].component("data");
  EXPECT_EQ(plain.role(), "data");
  EXPECT_EQ(plain.dtype(), zt::dtype::f32);
  EXPECT_FALSE(plain.type().has_value());
  EXPECT_EQ(plain.encoding(), zt::encoding::raw);
  EXPECT_EQ(plain.offset() % 64, 0u);
  EXPECT_GT(plain.offset(), 0u);
  EXPECT_EQ(plain.length(), 24u);
  EXPECT_EQ(plain.decoded_length(), 24u);
  EXPECT_EQ(plain.count(), 6u);
  EXPECT_FALSE(plain.digest().has_value());
  EXPECT_EQ(plain.index(), 0u);
  EXPECT_EQ(plain.object_index(), 0u);
  EXPECT_EQ(plain.info().decoded_length, 24u);
  EXPECT_THROW(plain.verify(), zt::not_found);  // no digest recorded

  zt::Component z = r["w_zstd"].component_at(0);
  EXPECT_EQ(z.encoding(), zt::encoding::zstd);
  EXPECT_EQ(z.dtype(), zt::dtype::f64);
  EXPECT_EQ(z.decoded_length(), 32u);
  ASSERT_TRUE(z.digest().has_value());
  EXPECT_EQ(z.digest()->substr(0, 7), "sha256:");
  EXPECT_EQ(z.digest()->size(), 7u + 64u);
  EXPECT_NO_THROW(z.verify());
  EXPECT_EQ(z.object_index(), 1u);

  zt::Component crc = r["w_crc"].component("data");
  ASSERT_TRUE(crc.digest().has_value());
  EXPECT_EQ(crc.digest()->substr(0, 9), "crc32c:0x");
  EXPECT_NO_THROW(crc.verify());
  EXPECT_NO_THROW(r["w_crc"].verify());

  zt::Component fp8 = r["fp8"].component("data");
  ASSERT_TRUE(fp8.type().has_value());
  EXPECT_EQ(*fp8.type(), "f8_e4m3fn");
  EXPECT_EQ(fp8.dtype(), zt::dtype::u8);
  EXPECT_EQ(fp8.read_as<float>(), (std::vector<float>{1, 2, -1, 0}));

  zt::Component def;  // default: no reader; every call is an error, nothing crashes
  EXPECT_EQ(def.role(), "");
  EXPECT_THROW((void)def.view(), zt::invalid_argument);
  EXPECT_THROW((void)def.read<float>(), zt::invalid_argument);
}

TEST_F(ReaderTest, ViewsAndTypedSpans) {
  zt::Reader r = zt::Reader::open(path());
  zt::tensor_view v = r["w_f32"].view();
  EXPECT_TRUE(v.zero_copy());
  EXPECT_EQ(v.dtype(), zt::dtype::f32);
  EXPECT_EQ(v.size(), 24u);
  EXPECT_EQ(v.count(), 6u);
  EXPECT_FALSE(v.empty());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % 64, 0u);
  zt::span<const float> f = v.as<float>();
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(std::vector<float>(f.begin(), f.end()), k_f32);
  EXPECT_EQ(v.bytes().size(), 24u);
  EXPECT_EQ(std::memcmp(v.bytes().data(), k_f32.data(), 24), 0);
  EXPECT_EQ(v.as<float>(zt::dtype::f32).data(), f.data());

  // wrong T: dtype mismatch, even with the right size
  EXPECT_THROW((void)v.as<std::int32_t>(), zt::invalid_argument);
  EXPECT_THROW((void)v.as<double>(), zt::invalid_argument);
  EXPECT_EQ(v.as<std::uint32_t>(zt::dtype::f32).size(), 6u);  // explicit dtype: the bits, same size
  EXPECT_THROW((void)v.as<std::uint32_t>(zt::dtype::i32), zt::invalid_argument);
  EXPECT_THROW((void)v.as<std::uint16_t>(zt::dtype::f32), zt::invalid_argument);  // wrong size for f32
  try {
    (void)v.as<std::int64_t>();
  } catch (const zt::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("f32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("i64"), std::string::npos) << e.what();
  }

  // a decoded (zstd) view: reader-owned, aligned
  zt::tensor_view z = r["w_zstd"].view();
  EXPECT_FALSE(z.zero_copy());
  EXPECT_EQ(z.as<double>()[1], 1e300);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(z.data()) % 64, 0u);
  EXPECT_EQ(r["w_zstd"].view().data(), z.data());  // decoded once, cached

  // half types: only through the explicit dtype
  zt::tensor_view h = r["half"].view();
  EXPECT_EQ(h.dtype(), zt::dtype::f16);
  EXPECT_THROW((void)h.as<std::uint16_t>(), zt::invalid_argument);
  zt::span<const std::uint16_t> hs = h.as<std::uint16_t>(zt::dtype::f16);
  EXPECT_EQ(std::vector<std::uint16_t>(hs.begin(), hs.end()), k_half);
  EXPECT_THROW((void)h.as<std::uint16_t>(zt::dtype::bf16), zt::invalid_argument);
  EXPECT_THROW((void)h.as<std::uint32_t>(zt::dtype::f16), zt::invalid_argument);

  zt::span<const bool> b = r["flags"].view().as<bool>();
  EXPECT_EQ(std::vector<bool>(b.begin(), b.end()), std::vector<bool>(k_bool.begin(), k_bool.end()));

  zt::tensor_view e = r["empty"].view();
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.count(), 0u);
  EXPECT_TRUE(e.as<std::uint8_t>().empty());
  EXPECT_TRUE(e.bytes().empty());

  // views stay valid while the Reader lives, and across a move of it
  zt::Reader moved = std::move(r);
  EXPECT_EQ(f[5], -6.75f);
  EXPECT_EQ(moved["w_f32"].view().data(), v.data());
}

TEST(TensorView, DefaultAndHandMade) {
  zt::tensor_view d;
  EXPECT_EQ(d.data(), nullptr);
  EXPECT_EQ(d.size(), 0u);
  EXPECT_TRUE(d.empty());
  EXPECT_FALSE(d.zero_copy());
  EXPECT_TRUE(d.as<std::uint8_t>().empty());

  alignas(64) unsigned char buf[64] = {};
  zt_view raw{};
  raw.data = buf + 1;  // misaligned for float
  raw.size = 8;
  raw.dtype = ZT_F32;
  raw.zero_copy = true;
  zt::tensor_view mis(raw);
  EXPECT_EQ(mis.count(), 2u);
  EXPECT_EQ(mis.data(), buf + 1);
  try {
    (void)mis.as<float>();
    FAIL() << "expected a misalignment error";
  } catch (const zt::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("aligned"), std::string::npos) << e.what();
  }
  EXPECT_EQ(mis.bytes().size(), 8u);  // bytes need no alignment

  raw.data = buf;
  raw.size = 6;  // not a whole number of floats
  try {
    (void)zt::tensor_view(raw).as<float>();
    FAIL() << "expected a size error";
  } catch (const zt::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("whole number"), std::string::npos) << e.what();
  }

  raw.size = 8;
  EXPECT_EQ(zt::tensor_view(raw).as<float>().size(), 2u);

  unsigned char bools[3] = {0, 1, 2};
  raw.data = bools;
  raw.size = 3;
  raw.dtype = ZT_BOOL;
  EXPECT_THROW((void)zt::tensor_view(raw).as<bool>(), zt::format_error);
  bools[2] = 1;
  EXPECT_EQ(zt::tensor_view(raw).as<bool>().size(), 3u);
  EXPECT_EQ(zt::tensor_view(raw).as<std::uint8_t>(zt::dtype::bool_).size(), 3u);
}

TEST_F(ReaderTest, Copies) {
  zt::Reader r = zt::Reader::open(path());
  zt::Object o = r["w_f32"];
  zt::Component c = o.component("data");

  EXPECT_EQ(c.read<float>(), k_f32);
  EXPECT_EQ(o.read<float>(), k_f32);
  EXPECT_THROW((void)c.read<double>(), zt::invalid_argument);
  EXPECT_THROW((void)c.read<std::int32_t>(), zt::invalid_argument);
  EXPECT_THROW((void)o.read<float>("nope"), zt::not_found);
  EXPECT_EQ(c.read<std::uint32_t>(zt::dtype::f32).size(), 6u);
  EXPECT_THROW((void)c.read<std::uint16_t>(zt::dtype::f32), zt::invalid_argument);

  std::vector<std::byte> buf(24);
  c.read_into(buf);
  EXPECT_EQ(std::memcmp(buf.data(), k_f32.data(), 24), 0);
  std::vector<float> fl(6);
  c.read_into(fl.data(), fl.size() * sizeof(float));
  EXPECT_EQ(fl, k_f32);
  std::fill(fl.begin(), fl.end(), 0.0f);
  o.read_into(fl.data(), 24);
  EXPECT_EQ(fl, k_f32);
  std::fill(buf.begin(), buf.end(), std::byte{0});
  o.read_into(buf, "data");
  EXPECT_EQ(std::memcmp(buf.data(), k_f32.data(), 24), 0);

  std::vector<std::byte> small(23), large(25);
  EXPECT_THROW(c.read_into(small), zt::buffer_too_small);
  EXPECT_THROW(c.read_into(large), zt::invalid_argument);
  EXPECT_THROW(o.read_into(small), zt::buffer_too_small);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](std::byte b) { return b == std::byte{0}; }));

  // converted copies
  EXPECT_EQ(c.read_as<double>(), (std::vector<double>{1.5, -2.0, 3.25, 4.0, 5.5, -6.75}));
  EXPECT_EQ(o.read_as<double>()[2], 3.25);
  EXPECT_THROW((void)c.read_as<std::int32_t>(), zt::unsupported);
  std::vector<std::uint16_t> as_half = c.read_as<std::uint16_t>(zt::dtype::f16);
  EXPECT_EQ(as_half[0], 0x3e00);  // 1.5 in f16
  EXPECT_THROW((void)c.read_as<std::uint32_t>(zt::dtype::f16), zt::invalid_argument);
  zt::Component half = r["half"].component("data");
  EXPECT_EQ(half.read_as<float>(), (std::vector<float>{1, 2, -2, 0}));
  EXPECT_EQ(half.read<std::uint16_t>(zt::dtype::f16), k_half);
  EXPECT_THROW((void)half.read<std::uint16_t>(), zt::invalid_argument);
  EXPECT_EQ(r["w_crc"].read_as<std::int64_t>(), (std::vector<std::int64_t>{-7, 0, 2147483647}));
  EXPECT_EQ(r["w_crc"].read_as<double>(), (std::vector<double>{-7, 0, 2147483647}));
  EXPECT_EQ(r["flags"].read<bool>(), std::vector<bool>(k_bool.begin(), k_bool.end()));
  EXPECT_EQ(r["flags"].read_as<std::int32_t>(), (std::vector<std::int32_t>{1, 0, 1, 1, 0}));
  EXPECT_EQ(r["w_zstd"].read<double>(), k_f64);
  EXPECT_TRUE(r["empty"].read<std::uint8_t>().empty());

  // ranges
  std::array<std::byte, 8> part{};
  c.read_range(4, part);
  float two[2];
  std::memcpy(two, part.data(), 8);
  EXPECT_EQ(two[0], -2.0f);
  EXPECT_EQ(two[1], 3.25f);
  double d = 0;
  r["w_zstd"].component("data").read_range(8, &d, sizeof d);
  EXPECT_EQ(d, 1e300);
  o.read_range(20, zt::span<std::byte>(part.data(), 4));
  float last = 0;
  std::memcpy(&last, part.data(), 4);
  EXPECT_EQ(last, -6.75f);
  EXPECT_THROW(c.read_range(20, part), zt::invalid_argument);
  EXPECT_THROW(o.read_range(0, part, "nope"), zt::not_found);
  EXPECT_NO_THROW(c.read_range(24, nullptr, 0));
}

TEST_F(ReaderTest, AttributesAndVerify) {
  zt::Reader r = zt::Reader::open(path());
  EXPECT_EQ(r.attributes_json(), R"({"model":"demo","layers":2})");
  EXPECT_NO_THROW(r.verify());
  EXPECT_NO_THROW(r["w_zstd"].verify());
  zt::Reader verified = zt::Reader::open(path(), zt::open_options{false, true});
  EXPECT_EQ(verified.size(), 9u);
}

TEST_F(ReaderTest, OpenOptionsAndMemory) {
  zt::open_options no_map;
  no_map.no_mmap = true;
  zt::Reader pr = zt::Reader::open(path(), no_map);
  zt::tensor_view v = pr["w_f32"].view();
  EXPECT_FALSE(v.zero_copy());
  EXPECT_EQ(v.as<float>()[0], 1.5f);

  const std::vector<unsigned char> bytes = zt_test::slurp(path());
  zt_test::aligned_bytes aligned(bytes);
  zt::Reader mr = zt::Reader::open_memory(aligned.data, aligned.size);
  zt::tensor_view mv = mr["w_f32"].view();
  EXPECT_TRUE(mv.zero_copy());
  EXPECT_GE(static_cast<const unsigned char*>(mv.data()), aligned.data);
  EXPECT_LT(static_cast<const unsigned char*>(mv.data()), aligned.data + aligned.size);

  // an unaligned buffer still works: views are decoded copies, aligned
  std::vector<unsigned char> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  zt::Reader ur = zt::Reader::open_memory(
      zt::span<const std::byte>(reinterpret_cast<const std::byte*>(shifted.data() + 1), bytes.size()), zt::open_options{});
  zt::tensor_view uv = ur["w_f32"].view();
  EXPECT_FALSE(uv.zero_copy());
  EXPECT_EQ(uv.as<float>()[5], -6.75f);

  zt::open_options all;
  all.verify = true;
  all.max_cbor_depth = 64;
  all.max_rank = 8;
  all.max_name_length = 100;
  all.max_manifest_size = 1 << 20;
  all.max_decoded_size = 1 << 20;
  all.max_total_cached = 1 << 20;
  zt_open_options c = all.to_c();
  EXPECT_EQ(c.flags, static_cast<std::uint32_t>(ZT_OPEN_VERIFY));
  EXPECT_EQ(c.max_rank, 8u);
  EXPECT_EQ(c.max_total_cached, 1u << 20);
  EXPECT_EQ(zt::Reader::open(path(), all).size(), 9u);
  EXPECT_EQ(zt::open_options{true}.to_c().flags, static_cast<std::uint32_t>(ZT_OPEN_NO_MMAP));

  zt::open_options tiny_cache;
  tiny_cache.max_total_cached = 8;
  zt::Reader tr = zt::Reader::open(path(), tiny_cache);
  EXPECT_THROW((void)tr["w_zstd"].view(), zt::limit_error);
  EXPECT_EQ(tr["w_zstd"].read<double>(), k_f64);  // copies need no cache
}

TEST_F(ReaderTest, MovesAndClose) {
  zt::Reader a = zt::Reader::open(path());
  zt::Object keep = a["w_f32"];
  zt::Reader b(std::move(a));
  EXPECT_FALSE(a.is_open());  // NOLINT(bugprone-use-after-move): moved-from is specified empty
  EXPECT_EQ(a.size(), 0u);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.version(), "");
  EXPECT_EQ(a.file_format(), "");
  EXPECT_EQ(a.begin(), a.end());
  EXPECT_FALSE(a.find("w_f32").has_value());
  EXPECT_THROW((void)a["w_f32"], zt::invalid_argument);
  EXPECT_THROW((void)a.at(0), zt::invalid_argument);
  EXPECT_THROW(a.verify(), zt::invalid_argument);
  EXPECT_THROW((void)a.attributes_json(), zt::invalid_argument);
  EXPECT_EQ(keep.read<float>(), k_f32);  // still valid: b owns the same handle

  zt::Reader c = zt::Reader::open(path());
  c = std::move(b);  // closes c's own file, takes b's
  EXPECT_EQ(c.size(), 9u);
  EXPECT_FALSE(b.is_open());  // NOLINT(bugprone-use-after-move)
  c = zt::Reader();
  EXPECT_FALSE(c.is_open());

  zt::Reader d = zt::Reader::open(path());
  d.close();
  EXPECT_FALSE(d.is_open());
  d.close();  // twice is fine
  zt::Reader e;
  EXPECT_FALSE(e);
  for (const auto& o : e) ADD_FAILURE() << "empty reader yielded " << o.name();
}

TEST_F(ReaderTest, ConcurrentViews) {
  zt::Reader r = zt::Reader::open(path());
  std::vector<const void*> seen(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&r, &seen, i] {
      zt::tensor_view v = r["w_zstd"].view();
      seen[i] = v.as<double>()[1] == 1e300 ? v.data() : nullptr;
      for (const auto& obj : r) (void)obj.component_count();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::set<const void*>(seen.begin(), seen.end()).size(), 1u);
  EXPECT_NE(seen[0], nullptr);
}

TEST_F(ReaderTest, ValidateFindsBadSparseIndices) {
  const std::string p = zt_test::temp_path("badsparse");
  {
    zt::Writer w = zt::Writer::create(p);
    auto obj = w.begin_object("s", "sparse_csr", {2, 2});
    obj.add_component("values", std::vector<float>{1, 2});
    obj.add_component("indices", std::vector<std::uint64_t>{0, 7});  // column 7 of 2
    obj.add_component("indptr", std::vector<std::uint64_t>{0, 1, 2});
    obj.end();
    w.finish();
  }
  zt::Reader r = zt::Reader::open(p);
  EXPECT_THROW(r["s"].validate(), zt::format_error);
  zt_test::remove(p);
}

}  // namespace
