// The no-exceptions mode: every fallible call returns zt::result<T>, nothing throws.
// Build with -DZT_NO_EXCEPTIONS -fno-exceptions.
#ifndef ZT_NO_EXCEPTIONS
#define ZT_NO_EXCEPTIONS 1
#endif
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "support.hpp"

namespace {

static_assert(ZT_CPP_EXCEPTIONS == 0, "this file tests the no-exceptions mode");

using zt::result;
template <class E, class T>
constexpr bool returns = std::is_same_v<E, result<T>>;

// The shape of the API in this mode: results from every fallible call.
static_assert(std::is_same_v<zt::ret<int>, result<int>>);
static_assert(returns<decltype(zt::Reader::open("x")), zt::Reader>);
static_assert(returns<decltype(zt::Reader::open_memory(nullptr, 0)), zt::Reader>);
static_assert(returns<decltype(std::declval<const zt::Reader&>().at(0)), zt::Object>);
static_assert(returns<decltype(std::declval<const zt::Reader&>()["x"]), zt::Object>);
static_assert(returns<decltype(std::declval<const zt::Reader&>().verify()), void>);
static_assert(returns<decltype(std::declval<const zt::Reader&>().attributes_json()), std::string_view>);
static_assert(std::is_same_v<decltype(std::declval<const zt::Reader&>().find("x")), std::optional<zt::Object>>);
static_assert(std::is_same_v<decltype(std::declval<const zt::Reader&>().size()), std::size_t>);
static_assert(returns<decltype(std::declval<const zt::Object&>().view()), zt::tensor_view>);
static_assert(returns<decltype(std::declval<const zt::Object&>().read<float>()), std::vector<float>>);
static_assert(returns<decltype(std::declval<const zt::Object&>().read<std::uint16_t>(zt::dtype::f16)), std::vector<std::uint16_t>>);
static_assert(returns<decltype(std::declval<const zt::Object&>().read_as<std::uint16_t>(zt::dtype::bf16)),
                      std::vector<std::uint16_t>>);
static_assert(returns<decltype(std::declval<const zt::Object&>().component("data")), zt::Component>);
static_assert(returns<decltype(std::declval<const zt::Component&>().read_as<double>()), std::vector<double>>);
static_assert(returns<decltype(std::declval<const zt::tensor_view&>().as<float>()), zt::span<const float>>);
static_assert(returns<decltype(std::declval<zt::Writer&>().finish()), void>);
static_assert(returns<decltype(std::declval<zt::Writer&>().begin_object("a", "dense")), zt::object_builder>);
static_assert(returns<decltype(std::declval<zt::object_builder&>().begin_component<float>("data")), zt::component_builder>);
static_assert(returns<decltype(std::declval<zt::component_builder&>().end()), void>);

TEST(NoExceptions, BuiltWithoutExceptions) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  ADD_FAILURE() << "compile test_noexceptions.cpp with -fno-exceptions (the ZT_NO_EXCEPTIONS mode is active either way)";
#endif
}

#define ZT_ASSERT_OK(expr)                                                     \
  do {                                                                         \
    const auto& zt_r_ = (expr);                                                \
    ASSERT_TRUE(zt_r_.ok()) << #expr << ": " << zt_r_.message();               \
  } while (0)
#define ZT_EXPECT_STATUS(expr, st)                                             \
  do {                                                                         \
    const auto& zt_r_ = (expr);                                                \
    EXPECT_EQ(zt_r_.status(), st) << #expr << ": " << zt_r_.message();         \
    EXPECT_NE(zt_r_.message(), "") << #expr;                                   \
  } while (0)

TEST(NoExceptions, WriteAndReadBack) {
  const std::string path = zt_test::temp_path("noexc");
  const std::vector<float> data = {1, 2, 3, 4, 5, 6};
  const std::vector<std::uint16_t> halves = {0x3c00, 0x4000};
  {
    // zTensor v1.2.0: the test reads back its version and a sparse object's layout.
    zt::writer_options v1_2;
    v1_2.version = zt::writer_options::file_version::v1_2;
    result<zt::Writer> created = zt::Writer::create(path, v1_2);
    ASSERT_TRUE(created.ok()) << created.message();
    zt::Writer w = std::move(created).value();
    ZT_ASSERT_OK(w.add("t", data, {2, 3}, zt::write_options::zstd(3, zt::digest::sha256)));
    ZT_ASSERT_OK(w.add("h", zt::dtype::f16, halves, {2}));
    ZT_EXPECT_STATUS(w.add("t", data, {6}), ZT_ERR_INVALID_ARGUMENT);     // duplicate name
    ZT_EXPECT_STATUS(w.add("short", data, {7}), ZT_ERR_INVALID_ARGUMENT);  // size mismatch
    {
      result<zt::object_builder> begun = w.begin_object("sparse", "sparse_csr", {2, 2});
      ASSERT_TRUE(begun.ok()) << begun.message();
      zt::object_builder& obj = *begun;
      ZT_EXPECT_STATUS(w.begin_object("other", "dense"), ZT_ERR_STATE);
      ZT_EXPECT_STATUS(w.finish(), ZT_ERR_STATE);
      ZT_ASSERT_OK(obj.add_component("values", std::vector<float>{1, 2}));
      {
        result<zt::component_builder> streamed = obj.begin_component<std::uint64_t>("indices");
        ASSERT_TRUE(streamed.ok()) << streamed.message();
        ZT_ASSERT_OK(streamed->write(std::vector<std::uint64_t>{0}));
        const std::uint64_t one = 1;
        ZT_ASSERT_OK(streamed->write(&one, sizeof one));
        ZT_EXPECT_STATUS(obj.end(), ZT_ERR_STATE);  // still streaming
        ZT_ASSERT_OK(streamed->end());
        ZT_EXPECT_STATUS(streamed->end(), ZT_ERR_STATE);
        ZT_EXPECT_STATUS(streamed->write(&one, sizeof one), ZT_ERR_STATE);
      }
      result<zt::component_builder> indptr = obj.begin_component("indptr", zt::dtype::u64);
      ASSERT_TRUE(indptr.ok());
      ZT_ASSERT_OK(indptr->write(std::vector<std::uint64_t>{0, 1, 2}));
      ZT_ASSERT_OK(indptr->end());
      ZT_ASSERT_OK(obj.set_attributes_json(R"({"k":1})"));
      ZT_EXPECT_STATUS(obj.set_attributes_json("[]"), ZT_ERR_INVALID_ARGUMENT);
      ZT_ASSERT_OK(obj.end());
      ZT_EXPECT_STATUS(obj.end(), ZT_ERR_STATE);
      ZT_EXPECT_STATUS(obj.add_component("x", data), ZT_ERR_STATE);
      ZT_EXPECT_STATUS(obj.add_component("x", zt::dtype::u8, data), ZT_ERR_STATE);
      ZT_EXPECT_STATUS(obj.begin_component("x", zt::dtype::u8), ZT_ERR_STATE);
    }
    {
      // a builder destroyed open is ended: this one is refused (no data) and dropped
      result<zt::object_builder> dropped = w.begin_object("dropped", "dense", {1});
      ASSERT_TRUE(dropped.ok());
    }
    ZT_ASSERT_OK(w.set_attributes_json(R"({"file":true})"));
    ZT_ASSERT_OK(w.set_attributes_json("t", R"({"unit":"s"})"));
    ZT_EXPECT_STATUS(w.set_attributes_json("missing", "{}"), ZT_ERR_NOT_FOUND);
    ZT_ASSERT_OK(w.finish());
    ZT_EXPECT_STATUS(w.finish(), ZT_ERR_STATE);
    ZT_EXPECT_STATUS(w.add("late", data, {6}), ZT_ERR_STATE);
  }

  result<zt::Reader> opened = zt::Reader::open(path, zt::open_options{false, true});
  ASSERT_TRUE(opened.ok()) << opened.message();
  const zt::Reader r = std::move(opened).value();
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(r.version(), "1.2.0");
  EXPECT_FALSE(r.contains("dropped"));
  ZT_ASSERT_OK(r.verify());
  ASSERT_TRUE(r.attributes_json().ok());
  EXPECT_EQ(*r.attributes_json(), R"({"file":true})");

  result<zt::Object> t = r["t"];
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name(), "t");
  EXPECT_EQ(t->shape().size(), 2u);
  EXPECT_EQ(*t->attributes_json(), R"({"unit":"s"})");
  ZT_ASSERT_OK(t->verify());
  ZT_ASSERT_OK(t->validate());
  result<zt::tensor_view> v = t->view();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->zero_copy());  // zstd: decoded
  result<zt::span<const float>> f = v->as<float>();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)[5], 6.0f);
  ZT_EXPECT_STATUS(v->as<double>(), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(v->as<std::uint16_t>(zt::dtype::f32), ZT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(v->as<std::uint32_t>(zt::dtype::f32)->size(), 6u);

  result<std::vector<float>> copy = t->read<float>();
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(*copy, data);
  ZT_EXPECT_STATUS(t->read<double>(), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(t->read<float>("nope"), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(t->read_as<double>()->at(1), 2.0);
  ZT_EXPECT_STATUS(t->read_as<std::int32_t>(), ZT_ERR_UNSUPPORTED);
  ZT_EXPECT_STATUS(t->read_as<float>("nope"), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(*t->read<std::uint32_t>(zt::dtype::f32),
            (std::vector<std::uint32_t>{0x3f800000, 0x40000000, 0x40400000, 0x40800000, 0x40a00000, 0x40c00000}));
  ZT_EXPECT_STATUS(t->read<std::uint16_t>(zt::dtype::f16), ZT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(*t->read_as<std::uint16_t>(zt::dtype::f16, "data"),
            (std::vector<std::uint16_t>{0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600}));  // 1 .. 6
  ZT_EXPECT_STATUS(t->read_as<std::uint32_t>(zt::dtype::f16), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(t->read_as<std::uint16_t>(zt::dtype::bf16, "nope"), ZT_ERR_NOT_FOUND);
  std::vector<std::byte> buf(24), small(8);
  ZT_ASSERT_OK(t->read_into(buf));
  ZT_ASSERT_OK(t->read_into(buf.data(), buf.size(), "data"));
  ZT_EXPECT_STATUS(t->read_into(small), ZT_ERR_BUFFER_TOO_SMALL);
  ZT_ASSERT_OK(t->read_range(16, small));
  ZT_ASSERT_OK(t->read_range(0, small.data(), small.size()));
  ZT_EXPECT_STATUS(t->read_range(20, small), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(t->view("nope"), ZT_ERR_NOT_FOUND);
  ZT_EXPECT_STATUS(t->view(std::string("da\0ta", 5)), ZT_ERR_INVALID_ARGUMENT);

  result<zt::Component> c = t->component("data");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->encoding(), zt::encoding::zstd);
  ZT_ASSERT_OK(c->verify());
  ZT_ASSERT_OK(c->view());
  ZT_ASSERT_OK(c->read<float>());
  ZT_ASSERT_OK(c->read<std::uint32_t>(zt::dtype::f32));
  ZT_ASSERT_OK(c->read_as<double>());
  ZT_ASSERT_OK(c->read_as<std::uint16_t>(zt::dtype::bf16));
  ZT_ASSERT_OK(c->read_into(buf));
  ZT_ASSERT_OK(c->read_into(buf.data(), buf.size()));
  ZT_ASSERT_OK(c->read_range(8, small));
  ZT_ASSERT_OK(c->read_range(8, small.data(), small.size()));
  ZT_EXPECT_STATUS(c->read_range(24, small), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(t->component("nope"), ZT_ERR_NOT_FOUND);
  ZT_EXPECT_STATUS(t->component_at(1), ZT_ERR_NOT_FOUND);
  ZT_ASSERT_OK(t->component_at(0));

  result<zt::Object> h = r.at(1);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->read<std::uint16_t>().status(), ZT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(*h->component("data")->read<std::uint16_t>(zt::dtype::f16), halves);
  EXPECT_EQ(*h->read_as<float>(), (std::vector<float>{1, 2}));
  ZT_EXPECT_STATUS(r.at(3), ZT_ERR_NOT_FOUND);
  ZT_EXPECT_STATUS(r["absent"], ZT_ERR_NOT_FOUND);
  EXPECT_NE(r["absent"].message().find("absent"), std::string::npos);

  std::size_t n = 0;
  for (const auto& obj : r) n += obj.component_count();
  EXPECT_EQ(n, 1u + 1u + 3u);

  ZT_EXPECT_STATUS(zt::Reader::open("/nonexistent-zt/x.zt"), ZT_ERR_IO);
  ZT_EXPECT_STATUS(zt::Reader::open(nullptr), ZT_ERR_INVALID_ARGUMENT);
  std::vector<unsigned char> junk(64, 1);
  ZT_EXPECT_STATUS(zt::Reader::open_memory(junk.data(), junk.size()), ZT_ERR_FORMAT);
  ZT_EXPECT_STATUS(zt::Reader::open_memory(zt::span<const std::byte>(reinterpret_cast<const std::byte*>(junk.data()), 8)),
                   ZT_ERR_FORMAT);
  std::vector<unsigned char> bytes = zt_test::slurp(path);
  ZT_ASSERT_OK(zt::Reader::open_memory(bytes.data(), bytes.size()));
  zt::open_options tight;
  tight.max_manifest_size = 4;
  ZT_EXPECT_STATUS(zt::Reader::open(path, tight), ZT_ERR_LIMIT);
  ZT_EXPECT_STATUS(zt::Writer::create("/nonexistent-zt/x.zt"), ZT_ERR_IO);

  // corrupt a stored byte: verify reports the checksum
  bytes[static_cast<std::size_t>(c->offset())] ^= 0xff;
  result<zt::Reader> corrupt = zt::Reader::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(corrupt.ok());
  ZT_EXPECT_STATUS(corrupt->verify(), ZT_ERR_CHECKSUM);
  zt::open_options verify;
  verify.verify = true;
  ZT_EXPECT_STATUS(zt::Reader::open_memory(bytes.data(), bytes.size(), verify), ZT_ERR_CHECKSUM);

  zt_test::remove(path);
}

TEST(NoExceptions, EmptyHandlesAndUnfinishedWriters) {
  zt::Reader closed;
  EXPECT_EQ(closed.size(), 0u);
  ZT_EXPECT_STATUS(closed.verify(), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(closed.at(0), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(closed.attributes_json(), ZT_ERR_INVALID_ARGUMENT);
  EXPECT_FALSE(closed.find("x").has_value());

  zt::Writer none;
  ZT_EXPECT_STATUS(none.finish(), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(none.set_attributes_json("{}"), ZT_ERR_INVALID_ARGUMENT);

  zt::Component def;
  ZT_EXPECT_STATUS(def.view(), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(def.verify(), ZT_ERR_INVALID_ARGUMENT);
  zt::Object odef;
  ZT_EXPECT_STATUS(odef.view(), ZT_ERR_INVALID_ARGUMENT);
  ZT_EXPECT_STATUS(odef.validate(), ZT_ERR_INVALID_ARGUMENT);

  alignas(8) unsigned char raw[9] = {};
  zt_view hand{};
  hand.data = raw + 1;
  hand.size = 8;
  hand.dtype = ZT_F64;
  ZT_EXPECT_STATUS(zt::tensor_view(hand).as<double>(), ZT_ERR_INVALID_ARGUMENT);  // misaligned
  unsigned char bools[2] = {1, 3};
  hand.data = bools;
  hand.size = 2;
  hand.dtype = ZT_BOOL;
  ZT_EXPECT_STATUS(zt::tensor_view(hand).as<bool>(), ZT_ERR_FORMAT);

  const std::string path = zt_test::temp_path("noexc_unfinished");
  {
    result<zt::Writer> w = zt::Writer::create(path);
    ASSERT_TRUE(w.ok());
    ZT_ASSERT_OK(w->add("t", std::vector<float>{1}, {1}));
    result<zt::object_builder> open = w->begin_object("o", "dense", {1});
    ASSERT_TRUE(open.ok());
  }
  EXPECT_FALSE(zt_test::exists(path));
  EXPECT_EQ(zt_test::leftover_temps(path), 0);
}

TEST(NoExceptionsDeathTest, ValueOfAFailureAborts) {
#ifdef GTEST_FLAG_SET
  GTEST_FLAG_SET(death_test_style, "threadsafe");
#else
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";
#endif
  result<int> bad(zt::failure{ZT_ERR_NOT_FOUND, "no object named 'x'"});
  EXPECT_DEATH((void)bad.value(), "ZT_ERR_NOT_FOUND: no object named 'x'");
  result<void> vbad(zt::failure{ZT_ERR_IO, "disk"});
  EXPECT_DEATH(vbad.value(), "ZT_ERR_IO: disk");
  EXPECT_EQ(bad.value_or(4), 4);
}

}  // namespace
