// Tensogram files through the wrapper: components whose encoding is another format's
// decode pipeline (zt::encoding::pipeline), and Object's typed reads with an explicit
// dtype (read<T>(zt::dtype), read_as<T>(zt::dtype)) on files of that format.
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

static_assert(static_cast<std::uint32_t>(zt::encoding::pipeline) == ZT_ENCODING_PIPELINE);
static_assert(zt::encoding_name(zt::encoding::pipeline) == "pipeline");

std::string vector_path(const char* name) { return zt_test::vectors_dir() + "/tensogram/" + name; }

// 37 values 250 + 10 i / 36, as tests/interop/make_tensogram_vectors.py encodes them.
double expected(int i) { return 250.0 + 10.0 * i / 36.0; }

TEST(Tensogram, SimplePackingIsAPipeline) {
  const zt::Reader r = zt::Reader::open(vector_path("simple_packing.tgm"));
  EXPECT_EQ(r.file_format(), "tensogram");
  const zt::Object o = r["sp16"];
  const zt::Component c = o.component("data");
  EXPECT_EQ(c.encoding(), zt::encoding::pipeline);
  EXPECT_EQ(zt::encoding_name(c.encoding()), "pipeline");
  EXPECT_EQ(c.dtype(), zt::dtype::f64);
  EXPECT_EQ(c.decoded_length(), 37u * 8u);

  // 16-bit packing: within one step of the 10-wide range; the minimum is exact.
  const std::vector<double> v = c.read<double>();
  ASSERT_EQ(v.size(), 37u);
  EXPECT_EQ(v[0], 250.0);
  for (int i = 0; i < 37; ++i) EXPECT_NEAR(v[static_cast<std::size_t>(i)], expected(i), 10.0 / 65535) << i;
  EXPECT_EQ(o.read<double>(), v);

  // Decoded once into the reader's memory: a view, but not of the mapped file.
  const zt::tensor_view view = o.view();
  EXPECT_FALSE(view.zero_copy());
  ASSERT_EQ(view.as<double>().size(), 37u);
  EXPECT_EQ(std::memcmp(view.data(), v.data(), v.size() * sizeof(double)), 0);

  // Converted by the library: f64 to f32 rounds each value as a cast does.
  const std::vector<float> f = o.read_as<float>();
  ASSERT_EQ(f.size(), 37u);
  for (std::size_t i = 0; i < f.size(); ++i) EXPECT_EQ(f[i], static_cast<float>(v[i])) << i;

  // 64-bit packing is exact to 1e-9; 0 bits gives the reference value everywhere.
  const std::vector<double> v64 = r["sp64"].read<double>();
  ASSERT_EQ(v64.size(), 37u);
  for (int i = 0; i < 37; ++i) EXPECT_NEAR(v64[static_cast<std::size_t>(i)], expected(i), 1e-9) << i;
  EXPECT_EQ(r["sp0"].read<double>(), std::vector<double>(37, 250.0));
  EXPECT_NO_THROW(r.verify());
}

TEST(Tensogram, CompressedPipelinesAgree) {
  const zt::Reader r = zt::Reader::open(vector_path("compressed.tgm"));
  const zt::Component shuffled = r["shuffle_zstd"].component("data");
  EXPECT_EQ(shuffled.encoding(), zt::encoding::pipeline);
  const std::vector<float> a = shuffled.read<float>();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, r["shuffle_only"].read<float>());
  EXPECT_EQ(r["lz4"].read<double>(), r["shuffle_lz4"].read<double>());
}

TEST(Tensogram, ObjectReadsWithAnExplicitDtype) {
  const zt::Reader r = zt::Reader::open(vector_path("raw_dtypes.tgm"));
  const zt::Object t = r["temperature"];  // f32 {0, 0.25, 0.5, 0.75, 1, 1.25}, stored raw
  EXPECT_EQ(t.component("data").encoding(), zt::encoding::raw);
  EXPECT_EQ(zt::encoding_name(t.component("data").encoding()), "raw");

  // read<T>(dtype): the stored elements, held in a same-size type.
  EXPECT_EQ(t.read<std::uint32_t>(zt::dtype::f32),
            (std::vector<std::uint32_t>{0x00000000, 0x3e800000, 0x3f000000, 0x3f400000, 0x3f800000, 0x3fa00000}));
  EXPECT_EQ(t.read<std::uint32_t>(zt::dtype::f32, "data"), t.component("data").read<std::uint32_t>(zt::dtype::f32));

  // read_as<T>(dtype): converted by the library into half types held as uint16_t.
  EXPECT_EQ(t.read_as<std::uint16_t>(zt::dtype::f16),
            (std::vector<std::uint16_t>{0x0000, 0x3400, 0x3800, 0x3a00, 0x3c00, 0x3d00}));
  EXPECT_EQ(t.read_as<std::uint16_t>(zt::dtype::bf16, "data"),
            (std::vector<std::uint16_t>{0x0000, 0x3e80, 0x3f00, 0x3f40, 0x3f80, 0x3fa0}));
  EXPECT_EQ(t.read_as<std::uint16_t>(zt::dtype::bf16), t.component("data").read_as<std::uint16_t>(zt::dtype::bf16));
  EXPECT_EQ(t.read_as<double>(zt::dtype::f64), (std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25}));

  // The same errors as on the component.
  try {
    (void)t.read_as<std::uint32_t>(zt::dtype::f16);
    ADD_FAILURE() << "read_as<uint32_t>(f16) returned";
  } catch (const zt::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "a 4-byte type can't hold f16 elements");
  }
  try {
    (void)t.read<std::uint16_t>(zt::dtype::f16);
    ADD_FAILURE() << "read<uint16_t>(f16) of f32 data returned";
  } catch (const zt::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "component 'data' holds f32 data, not f16 (read_as<T>() converts)");
  }
  EXPECT_THROW((void)t.read_as<std::uint16_t>(zt::dtype::f16, "missing"), zt::not_found);
  EXPECT_THROW((void)t.read<float>(zt::dtype::f32, std::string_view("da\0ta", 5)), zt::invalid_argument);
}

}  // namespace
