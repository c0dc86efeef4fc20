// A zTensor v2 file, written through the C API (ZT_WRITER_V2) and through zt::Writer, read
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
  o.flags = ZT_WRITER_NO_SYNC | ZT_WRITER_V2;
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

TEST(V2, WrittenThroughTheWrapperWithOneContentDigest) {
  const std::string a = zt_test::temp_path("v2_a");
  const std::string b = zt_test::temp_path("v2_b");
  zt::writer_options v2;
  v2.durable = false;
  v2.version = zt::writer_options::file_version::v2;
  v2.placement = zt::writer_options::blob_placement::canonical;
  zt::writer_options keep = v2;
  keep.keep_order = true;
  const std::vector<float> other = {4.0f, 3.25f, -2.0f, 1.5f};  // not k_weights: its own blob
  // The same tensors, added in two orders: one canonical file, one kept as written.
  {
    zt::Writer w = zt::Writer::create(a, v2);
    w.add("z", k_weights, {4});
    w.add("a", other, {2, 2});
    w.finish();
  }
  {
    zt::Writer w = zt::Writer::create(b, keep);
    w.add("z", k_weights, {4});
    w.add("a", other, {2, 2});
    w.finish();
  }
  zt::Reader ra = zt::Reader::open(a);
  zt::Reader rb = zt::Reader::open(b);
  EXPECT_EQ(ra.version(), "2");
  EXPECT_EQ(rb.version(), "2");
  const std::string_view da = ra.content_digest();
  EXPECT_EQ(da.substr(0, 5), "xxh3:");
  EXPECT_EQ(da.size(), 5u + 16u);
  EXPECT_EQ(da, rb.content_digest());  // the same model, whatever the placement
  EXPECT_EQ(ra.content_digest(zt::digest::sha256).size(), 7u + 64u);
  EXPECT_THROW(ra.content_digest(zt::digest::crc32c), zt::invalid_argument);
  // The first tensor's blob comes first in the canonical file, not in the kept one.
  EXPECT_LT(ra["a"].component("data").info().offset, ra["z"].component("data").info().offset);
  EXPECT_GT(rb["a"].component("data").info().offset, rb["z"].component("data").info().offset);
  const std::string digest(da);  // da points into ra, closed next
  ra.close();
  rb.close();
  // A compact file (the default placement) is never canonical: it keeps the written order.
  {
    zt::writer_options compact;
    compact.durable = false;
    zt::Writer w = zt::Writer::create(a, compact);
    w.add("z", k_weights, {4});
    w.add("a", other, {2, 2});
    w.finish();
  }
  zt::Reader rc = zt::Reader::open(a);
  EXPECT_EQ(rc.version(), "2");
  EXPECT_GT(rc["a"].component("data").info().offset, rc["z"].component("data").info().offset);
  EXPECT_EQ(rc.content_digest(), digest);  // the same model
  rc.close();
  // v1.2 explicitly: no content digest.
  zt::writer_options v12;
  v12.durable = false;
  v12.version = zt::writer_options::file_version::v1_2;
  {
    zt::Writer w = zt::Writer::create(a, v12);
    w.add("a", k_weights, {4});
    w.finish();
  }
  zt::Reader r12 = zt::Reader::open(a);
  EXPECT_EQ(r12.version(), "1.2.0");
  EXPECT_THROW(r12.content_digest(), zt::unsupported);
  r12.close();
  zt_test::remove(a);
  zt_test::remove(b);
}

}  // namespace
