// Free functions, enums, dtype_of, string_arg, shape_ref, the options structs and
// zt::result (exceptions mode; result<T> is also covered without exceptions).
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {

// A user's half type, mapped through the documented extension point.
struct my_half {
  std::uint16_t bits;
};

}  // namespace

namespace zt {
template <>
struct dtype_of<my_half> : std::integral_constant<dtype, dtype::f16> {};
}  // namespace zt

namespace {

static_assert(zt::dtype_v<double> == zt::dtype::f64);
static_assert(zt::dtype_v<float> == zt::dtype::f32);
static_assert(zt::dtype_v<std::int64_t> == zt::dtype::i64);
static_assert(zt::dtype_v<std::int32_t> == zt::dtype::i32);
static_assert(zt::dtype_v<std::int16_t> == zt::dtype::i16);
static_assert(zt::dtype_v<std::int8_t> == zt::dtype::i8);
static_assert(zt::dtype_v<std::uint64_t> == zt::dtype::u64);
static_assert(zt::dtype_v<std::uint32_t> == zt::dtype::u32);
static_assert(zt::dtype_v<std::uint16_t> == zt::dtype::u16);
static_assert(zt::dtype_v<std::uint8_t> == zt::dtype::u8);
static_assert(zt::dtype_v<bool> == zt::dtype::bool_);
static_assert(zt::dtype_v<long long> == zt::dtype::i64);
static_assert(zt::dtype_v<unsigned long long> == zt::dtype::u64);
static_assert(zt::dtype_v<const float> == zt::dtype::f32);
static_assert(zt::dtype_v<my_half> == zt::dtype::f16);
static_assert(zt::has_dtype_v<volatile std::int8_t>);
static_assert(!zt::has_dtype_v<char>, "plain char has no fixed signedness: no dtype");
static_assert(!zt::has_dtype_v<char16_t>);
static_assert(!zt::has_dtype_v<wchar_t>);
static_assert(!zt::has_dtype_v<long double>);
static_assert(!zt::has_dtype_v<std::byte>);
static_assert(!zt::has_dtype_v<std::string>);
static_assert(zt::dtype_size(zt::dtype::f64) == 8 && zt::dtype_size(zt::dtype::bf16) == 2 &&
              zt::dtype_size(zt::dtype::bool_) == 1 && zt::dtype_size(static_cast<zt::dtype>(77)) == 0);
static_assert(zt::dtype_name(zt::dtype::bf16) == "bf16");
static_assert(static_cast<std::uint32_t>(zt::dtype::bool_) == ZT_BOOL);
static_assert(static_cast<std::uint32_t>(zt::encoding::zstd) == ZT_ENCODING_ZSTD);
static_assert(static_cast<std::uint32_t>(zt::encoding::pipeline) == ZT_ENCODING_PIPELINE);
static_assert(static_cast<std::uint32_t>(zt::digest::crc32c) == ZT_DIGEST_CRC32C);
static_assert(zt::write_options::zstd(7, zt::digest::sha256).level == 7, "usable in constant expressions");

// move-only handles, copyable borrowed handles, nothrow moves everywhere
static_assert(!std::is_copy_constructible_v<zt::Reader> && std::is_nothrow_move_constructible_v<zt::Reader>);
static_assert(!std::is_copy_assignable_v<zt::Reader> && std::is_nothrow_move_assignable_v<zt::Reader>);
static_assert(!std::is_copy_constructible_v<zt::Writer> && std::is_nothrow_move_constructible_v<zt::Writer>);
static_assert(std::is_nothrow_move_assignable_v<zt::Writer>);
static_assert(!std::is_copy_constructible_v<zt::object_builder> && std::is_nothrow_move_constructible_v<zt::object_builder>);
static_assert(std::is_nothrow_move_assignable_v<zt::object_builder>);
static_assert(!std::is_copy_constructible_v<zt::component_builder> &&
              std::is_nothrow_move_constructible_v<zt::component_builder>);
static_assert(std::is_nothrow_destructible_v<zt::Reader> && std::is_nothrow_destructible_v<zt::Writer> &&
              std::is_nothrow_destructible_v<zt::object_builder> && std::is_nothrow_destructible_v<zt::component_builder>);
static_assert(std::is_trivially_copyable_v<zt::tensor_view>);
static_assert(std::is_copy_constructible_v<zt::Object> && std::is_copy_constructible_v<zt::Component>);
// the wrong kind of call does not compile: reader[0] (use at), object.component(0) (use component_at)
template <class R, class = void>
struct can_index_by_int : std::false_type {};
template <class R>
struct can_index_by_int<R, std::void_t<decltype(std::declval<const R&>()[0])>> : std::true_type {};
static_assert(!can_index_by_int<zt::Reader>::value);
template <class O, class = void>
struct can_component_by_int : std::false_type {};
template <class O>
struct can_component_by_int<O, std::void_t<decltype(std::declval<const O&>().component(std::size_t{1}))>> : std::true_type {};
static_assert(!can_component_by_int<zt::Object>::value);
// begin_object()/begin_component() only on lvalues, so a builder can't outlive a temporary writer
template <class W, class = void>
struct can_begin_on_rvalue : std::false_type {};
template <class W>
struct can_begin_on_rvalue<W, std::void_t<decltype(std::declval<W&&>().begin_object("a", "dense"))>> : std::true_type {};
static_assert(!can_begin_on_rvalue<zt::Writer>::value);
template <class W, class = void>
struct can_add_vector_bool : std::false_type {};
template <class W>
struct can_add_vector_bool<W, std::void_t<decltype(std::declval<W&>().add("a", std::vector<bool>{}, {1}))>> : std::true_type {};
static_assert(!can_add_vector_bool<zt::Writer>::value, "std::vector<bool> has no contiguous storage");

TEST(Basics, NamesAndVersions) {
  EXPECT_EQ(zt::status_name(ZT_OK), "ZT_OK");
  EXPECT_EQ(zt::status_name(ZT_ERR_BUFFER_TOO_SMALL), "ZT_ERR_BUFFER_TOO_SMALL");
  const std::string expected = std::to_string(ZT_VERSION_MAJOR) + "." + std::to_string(ZT_VERSION_MINOR) + "." +
                               std::to_string(ZT_VERSION_PATCH);
  EXPECT_EQ(zt::library_version(), expected);
  EXPECT_EQ(zt::encoding_name(zt::encoding::raw), "raw");
  EXPECT_EQ(zt::encoding_name(zt::encoding::zstd), "zstd");
  EXPECT_EQ(zt::encoding_name(zt::encoding::pipeline), "pipeline");
  EXPECT_EQ(zt::encoding_name(static_cast<zt::encoding>(5)), "unknown");
  const char* names[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "bool"};
  const std::size_t sizes[] = {8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1};
  for (std::uint32_t i = 0; i < 13; ++i) {
    EXPECT_EQ(zt::dtype_name(static_cast<zt::dtype>(i)), names[i]);
    EXPECT_EQ(zt::dtype_size(static_cast<zt::dtype>(i)), sizes[i]);
  }
  EXPECT_EQ(zt::dtype_name(static_cast<zt::dtype>(13)), "unknown");
}

// The wrapper's dtype tables are constexpr (usable in static_assert), so they can't call
// the library; this keeps them equal to the library's one table (dtypes! in src/dtype.rs)
// for every value, including ones outside the enum.
TEST(Basics, DtypeTablesAgreeWithTheLibrary) {
  for (std::uint32_t i = 0; i < 300; ++i) {
    const auto t = static_cast<zt::dtype>(i);
    std::size_t size = 0;
    const zt_status s = zt_dtype_get_size(i, &size);
    EXPECT_EQ(zt::dtype_name(t), std::string_view(zt_dtype_name(i))) << i;
    if (s == ZT_OK) {
      EXPECT_EQ(zt::dtype_size(t), size) << i;
    } else {
      EXPECT_EQ(s, ZT_ERR_INVALID_ARGUMENT) << i;
      EXPECT_EQ(zt::dtype_size(t), 0u) << i;
    }
  }
}

TEST(Basics, StringArg) {
  zt::string_arg null_arg;
  EXPECT_EQ(null_arg.c_str(), nullptr);
  EXPECT_TRUE(null_arg.valid());
  EXPECT_EQ(zt::string_arg(nullptr).c_str(), nullptr);
  const char* lit = "abc";
  EXPECT_EQ(zt::string_arg(lit).c_str(), lit);  // no copy
  const std::string s = "name";
  EXPECT_EQ(zt::string_arg(s).c_str(), s.c_str());  // no copy
  EXPECT_TRUE(zt::string_arg(s).valid());
  EXPECT_FALSE(zt::string_arg(std::string("a\0b", 3)).valid());
  const std::string_view view = std::string_view("prefix-and-more").substr(0, 6);
  zt::string_arg copied(view);
  EXPECT_STREQ(copied.c_str(), "prefix");  // copied to add the NUL
  EXPECT_TRUE(copied.valid());
  EXPECT_FALSE(zt::string_arg(std::string_view("x\0y", 3)).valid());
  zt::string_arg copy = copied;  // copies keep pointing at their own bytes
  EXPECT_STREQ(copy.c_str(), "prefix");
  EXPECT_NE(copy.c_str(), copied.c_str());
}

TEST(Basics, ShapeRef) {
  auto dims = [](zt::shape_ref s) { return std::vector<std::uint64_t>(s.data(), s.data() + s.size()); };
  EXPECT_EQ(zt::shape_ref().size(), 0u);
  EXPECT_EQ(zt::shape_ref().data(), nullptr);
  EXPECT_EQ(zt::shape_ref({}).data(), nullptr);
  EXPECT_EQ(dims({2, 3, 4}), (std::vector<std::uint64_t>{2, 3, 4}));
  EXPECT_EQ(dims({0}), (std::vector<std::uint64_t>{0}));
  const std::vector<std::uint64_t> v = {5, 6};
  EXPECT_EQ(dims(v), v);
  const std::array<std::uint64_t, 1> a = {9};
  EXPECT_EQ(dims(a), (std::vector<std::uint64_t>{9}));
  const std::uint64_t c[2] = {1, 2};
  EXPECT_EQ(dims(c), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(dims(zt::shape_ref(c, 1)), (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(dims(zt::span<const std::uint64_t>(v.data(), v.size())), v);
  EXPECT_EQ(zt::shape_ref(v.data(), 0).data(), nullptr);  // ndim 0: the C API gets NULL
}

TEST(Basics, Options) {
  zt::write_options d;
  EXPECT_EQ(d.encoding, zt::encoding::raw);
  EXPECT_EQ(d.level, 0);
  EXPECT_EQ(d.digest, zt::digest::none);
  zt_write_options c = d.to_c();
  EXPECT_EQ(c.encoding, 0u);
  EXPECT_EQ(c.level, 0);
  EXPECT_EQ(c.digest, 0u);
  c = zt::write_options::zstd(-3, zt::digest::crc32c).to_c();
  EXPECT_EQ(c.encoding, static_cast<std::uint32_t>(ZT_ENCODING_ZSTD));
  EXPECT_EQ(c.level, -3);
  EXPECT_EQ(c.digest, static_cast<std::uint32_t>(ZT_DIGEST_CRC32C));
  c = zt::write_options::raw(zt::digest::sha256).to_c();
  EXPECT_EQ(c.encoding, static_cast<std::uint32_t>(ZT_ENCODING_RAW));
  EXPECT_EQ(c.digest, static_cast<std::uint32_t>(ZT_DIGEST_SHA256));
  EXPECT_EQ(zt::write_options::zstd().level, 0);

  const zt_open_options o = zt::open_options{}.to_c();
  EXPECT_EQ(o.flags, 0u);
  EXPECT_EQ(o.max_manifest_size, 0u);
  zt::open_options both;
  both.no_mmap = true;
  both.verify = true;
  both.max_name_length = 12;
  both.max_decoded_size = 99;
  EXPECT_EQ(both.to_c().flags, static_cast<std::uint32_t>(ZT_OPEN_NO_MMAP | ZT_OPEN_VERIFY));
  EXPECT_EQ(both.to_c().max_name_length, 12u);
  EXPECT_EQ(both.to_c().max_decoded_size, 99u);
}

TEST(Basics, Result) {
  zt::result<std::string> ok(std::string("value"));
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(ok.status(), ZT_OK);
  EXPECT_EQ(ok.message(), "");
  EXPECT_EQ(ok.value(), "value");
  EXPECT_EQ(*ok, "value");
  EXPECT_EQ(ok->size(), 5u);
  const zt::result<std::string>& cref = ok;
  EXPECT_EQ(cref.value(), "value");
  EXPECT_EQ(*cref, "value");
  EXPECT_EQ(cref->size(), 5u);
  EXPECT_EQ(cref.value_or("other"), "value");
  ok.value() += "!";
  EXPECT_EQ(*ok, "value!");
  std::string moved = std::move(ok).value();
  EXPECT_EQ(moved, "value!");

  zt::result<std::string> bad(zt::failure{ZT_ERR_NOT_FOUND, "no such thing"});
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(bad.status(), ZT_ERR_NOT_FOUND);
  EXPECT_EQ(bad.message(), "no such thing");
  EXPECT_EQ(bad.value_or("fallback"), "fallback");
  EXPECT_EQ(zt::result<std::string>(zt::failure{ZT_ERR_IO, "x"}).value_or("f"), "f");
  zt::failure f = bad.as_failure();
  EXPECT_EQ(f.status, ZT_ERR_NOT_FOUND);
  EXPECT_EQ(f.message, "no such thing");
  zt::result<int> passed_on(bad.as_failure());
  EXPECT_EQ(passed_on.status(), ZT_ERR_NOT_FOUND);

  zt::result<int> not_a_failure(zt::failure{ZT_OK, "?"});  // a failure is never ok
  EXPECT_FALSE(not_a_failure.ok());
  EXPECT_EQ(not_a_failure.status(), ZT_ERR_INTERNAL);

  zt::result<void> vok;
  EXPECT_TRUE(vok.ok());
  EXPECT_EQ(vok.status(), ZT_OK);
  EXPECT_EQ(vok.message(), "");
  zt::result<void> vbad(zt::failure{ZT_ERR_STATE, "later"});
  EXPECT_FALSE(static_cast<bool>(vbad));
  EXPECT_EQ(vbad.status(), ZT_ERR_STATE);
  EXPECT_EQ(vbad.message(), "later");
  EXPECT_EQ(vbad.as_failure().message, "later");

  // move-only values
  zt::result<std::unique_ptr<int>> up(std::make_unique<int>(3));
  std::unique_ptr<int> p = std::move(up).value();
  EXPECT_EQ(*p, 3);
}

}  // namespace
