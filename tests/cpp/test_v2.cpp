// A zTensor v2 file (written through the C API with zt_writer_options.version) read
// through the C++ wrapper: the same zt::Reader, objects, components and views as a v1.2
// file, tied weights sharing one zero-copy view, v2 layout ids, verification.
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support.hpp"

namespace {

const std::vector<float> k_weights = {1.5f, -2.0f, 3.25f, 4.0f};

std::string write_v2(const std::string& path) {
  zt_writer* w = nullptr;
  zt_writer_options o{};
  o.flags = ZT_WRITER_NO_SYNC;
  o.version = ZT_WRITE_V2;
  const std::uint64_t shape[1] = {k_weights.size()};
  const std::uint64_t csr_shape[2] = {2, 3};
  const float values[2] = {1.0f, 2.0f};
  const std::uint64_t indices[2] = {0, 2};
  const std::uint64_t indptr[3] = {0, 1, 2};
  EXPECT_EQ(zt_writer_create_with(path.c_str(), &o, &w), ZT_OK);
  EXPECT_EQ(zt_writer_add(w, "wte", ZT_F32, shape, 1, k_weights.data(), 16, nullptr), ZT_OK);
  EXPECT_EQ(zt_writer_add(w, "head", ZT_F32, shape, 1, k_weights.data(), 16, nullptr), ZT_OK);
  EXPECT_EQ(zt_writer_begin_object(w, "csr", "sparse_csr", csr_shape, 2), ZT_OK);
  EXPECT_EQ(zt_writer_add_component(w, "values", ZT_F32, nullptr, values, sizeof values, nullptr), ZT_OK);
  EXPECT_EQ(zt_writer_add_component(w, "indices", ZT_U64, nullptr, indices, sizeof indices, nullptr), ZT_OK);
  EXPECT_EQ(zt_writer_add_component(w, "indptr", ZT_U64, nullptr, indptr, sizeof indptr, nullptr), ZT_OK);
  EXPECT_EQ(zt_writer_end_object(w), ZT_OK);
  EXPECT_EQ(zt_writer_finish(w), ZT_OK);
  zt_writer_free(w);
  return path;
}

TEST(V2, ReadsThroughTheSameWrapper) {
  const std::string path = write_v2(zt_test::temp_path("v2"));
  {
    zt::Reader r = zt::Reader::open(path);
    EXPECT_EQ(r.version(), "2");
    EXPECT_EQ(r.file_format(), "zt");
    ASSERT_EQ(r.size(), 3u);
    std::vector<std::string> names;
    for (const auto& obj : r) names.emplace_back(obj.name());
    EXPECT_EQ(names, (std::vector<std::string>{"csr", "head", "wte"}));  // name order
    EXPECT_EQ(r["csr"].format(), "zt.sparse_csr/1");
    EXPECT_EQ(r["csr"].view("indices").as<std::uint64_t>().size(), 2u);
    auto a = r["wte"].view().as<float>();
    auto b = r["head"].view().as<float>();
    ASSERT_EQ(a.size(), k_weights.size());
    EXPECT_EQ(a.data(), b.data());  // one blob, two objects
    EXPECT_EQ(std::vector<float>(a.begin(), a.end()), k_weights);
    EXPECT_NO_THROW(r["wte"].component("data").verify());  // an xxh3 digest on every part
    EXPECT_NO_THROW(r["csr"].verify());
  }
  zt_test::remove(path);
}

}  // namespace
