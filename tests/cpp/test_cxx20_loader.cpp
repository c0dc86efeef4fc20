// A GGUF loader written in C++20 with the wrapper alone (issue 23 item 12): what a runtime
// author reached for r.handle() and C to do. Dequantizing read_as<float>() sized by element
// count, quant info, the file's layout, read_as_range of rows, zstd frames, URL opens and
// remote stats, copy_object with copy and writer options, batch loads, and typed attribute
// writing, each against the values the C API and gguf-py give.
//
// Built as C++20 (std::span) with -Werror; the cpp_warnings_* tests compile it at every -O
// level with g++ and clang++ (g++ 12 -O3 once stopped at -Wrestrict here).
#include <ztensor.hpp>

#include "support.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

// zTensor v1.2.0 (the library writes v2 by default): these tests check what v1.2 keeps
// (objects in the order written, 64-byte alignment, typed attributes with their widths).
static zt::writer_options v12(bool durable = true) {
  zt::writer_options o;
  o.durable = durable;
  o.version = zt::writer_options::file_version::v1_2;
  return o;
}

namespace {

std::string vector_path(const std::string& rel) { return zt_test::vectors_dir() + "/" + rel; }

/// gguf-py's dequantized values of llama_tiny.gguf's Q4_0, Q8_0 and Q4_K tensors, in that
/// order (tests/interop/make_loader_vector.py).
std::vector<float> expected_values() {
  const std::vector<unsigned char> bytes = zt_test::slurp(vector_path("gguf/llama_tiny.f32"));
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

/// Whether two attribute values have the same type and value, recursively.
bool same(const zt::value& a, const zt::value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case zt::value_type::null: return true;
    case zt::value_type::boolean: return a.as<bool>() == b.as<bool>();
    case zt::value_type::i8: case zt::value_type::i16: case zt::value_type::i32: case zt::value_type::i64:
      return a.as<std::int64_t>() == b.as<std::int64_t>();
    case zt::value_type::u8: case zt::value_type::u16: case zt::value_type::u32: case zt::value_type::u64:
      return a.as<std::uint64_t>() == b.as<std::uint64_t>();
    case zt::value_type::f32: case zt::value_type::f64: {
      const double x = a.as<double>(), y = b.as<double>();
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case zt::value_type::string: return a.as<std::string_view>() == b.as<std::string_view>();
    case zt::value_type::bytes: {
      const auto x = a.bytes(), y = b.bytes();
      return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin());
    }
    case zt::value_type::array: {
      if (a.size() != b.size() || a.element_type() != b.element_type()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!same(a[i], b[i])) return false;
      return true;
    }
    case zt::value_type::map: {
      if (a.size() != b.size()) return false;
      auto ea = a.entries().begin(), eb = b.entries().begin();
      for (std::size_t i = 0; i < a.size(); ++i, ++ea, ++eb)
        if ((*ea).key != (*eb).key || !same((*ea).val, (*eb).val)) return false;
      return true;
    }
    default: return false;
  }
}

TEST(Loader, ReadAsDequantizesByElementCount) {
  zt::Reader r = zt::Reader::open(vector_path("gguf/llama_tiny.gguf"));
  const std::vector<float> want = expected_values();
  ASSERT_EQ(want.size(), 6400u + 4096u + 1024u);
  // The call: a Q4_K tensor read as float, sized by its 4 x 256 values, not by
  // its 576 stored bytes.
  const std::vector<float> q4k = r["blk.0.ffn_down.weight"].read_as<float>();
  ASSERT_EQ(q4k.size(), 1024u);
  EXPECT_TRUE(std::equal(q4k.begin(), q4k.end(), want.begin() + 10496));
  const std::vector<float> q4_0 = r["token_embd.weight"].read_as<float>();
  ASSERT_EQ(q4_0.size(), 6400u);
  EXPECT_TRUE(std::equal(q4_0.begin(), q4_0.end(), want.begin()));
  const zt::Component q8 = r["blk.0.attn_q.weight"].component("data");
  EXPECT_EQ(q8.value_count(zt::dtype::f32), 4096u);
  EXPECT_EQ(q8.value_count(zt::dtype::u8), q8.decoded_length());  // the blocks as bytes
  const std::vector<float> q8_0 = q8.read_as<float>();
  EXPECT_TRUE(std::equal(q8_0.begin(), q8_0.end(), want.begin() + 6400));
  // f16 and bf16 in uint16_t, one value per element too; the blocks themselves as bytes.
  EXPECT_EQ(q8.read_as<std::uint16_t>(zt::dtype::f16).size(), 4096u);
  EXPECT_EQ(q8.read_as<std::uint16_t>(zt::dtype::bf16).size(), 4096u);
  EXPECT_EQ(q8.read_as<std::uint8_t>().size(), q8.decoded_length());
  // Anything else is refused by the library, naming why.
  EXPECT_THROW(q8.read_as<std::int32_t>(), zt::unsupported);
  // A dense tensor reads as before.
  EXPECT_EQ(r["output_norm.weight"].read_as<double>().size(), r["output_norm.weight"].component("data").count());
}

TEST(Loader, QuantInfoLayoutAndHyperparameters) {
  zt::Reader r = zt::Reader::open(vector_path("gguf/llama_tiny.gguf"));
  const zt::Object w = r["blk.0.ffn_down.weight"];
  ASSERT_TRUE(w.is_quantized());
  const zt::quant_info q = w.quant_info();
  EXPECT_EQ(q.ggml_type, 12u);  // GGML_TYPE_Q4_K
  EXPECT_EQ(q.name, "Q4_K");
  EXPECT_EQ(q.role, "data");
  EXPECT_EQ(q.block_size, 256u);
  EXPECT_EQ(q.type_size, 144u);
  EXPECT_EQ(q.row_size, 144u);
  EXPECT_EQ(q.row_count, 4u);
  EXPECT_TRUE(q.dequantizable);
  EXPECT_FALSE(r["output_norm.weight"].is_quantized());
  EXPECT_THROW((void)r["output_norm.weight"].quant_info(), zt::not_found);

  const zt::file_layout l = r.layout();
  zt_file_layout c{};
  ASSERT_EQ(zt_file_get_layout(r.handle(), &c), ZT_OK);
  EXPECT_EQ(l.data_offset, c.data_offset);
  EXPECT_EQ(l.alignment, 32u);
  // Every tensor sits at data_offset + a multiple of the alignment, as gguf.cpp computes.
  for (const zt::Object& o : r) {
    const zt::Component d = o.component("data");
    EXPECT_EQ((d.offset() - l.data_offset) % l.alignment, 0u) << o.name();
  }
  // Hyperparameters with the widths the file declares.
  const zt::value a = r.attributes();
  EXPECT_EQ(a["llama.context_length"].type(), zt::value_type::u32);
  EXPECT_EQ(a["llama.attention.layer_norm_rms_epsilon"].as<float>(), 1e-5f);
  EXPECT_EQ(a["tokenizer.ggml.scores"].array<float>().size(), 100u);
  EXPECT_EQ(r.attribute("llama.block_count").as<std::uint32_t>(), a["llama.block_count"].as<std::uint32_t>());
  EXPECT_THROW((void)r.attribute("no.such.key"), zt::not_found);
  EXPECT_EQ(w.attribute("ggml_type").as<std::string_view>(), "Q4_K");
}

TEST(Loader, ReadAsRangeReadsRows) {
  zt::Reader r = zt::Reader::open(vector_path("gguf/llama_tiny.gguf"));
  const std::vector<float> want = expected_values();
  const zt::Object w = r["blk.0.ffn_down.weight"];
  // Rows 1 and 2 of the Q4_K weight (256 values a row), as one rank would load them.
  const std::vector<float> rows = w.read_as_range<float>(256, 512);
  ASSERT_EQ(rows.size(), 512u);
  EXPECT_TRUE(std::equal(rows.begin(), rows.end(), want.begin() + 10496 + 256));
  std::vector<std::uint16_t> halves = w.read_as_range<std::uint16_t>(zt::dtype::f16, 0, 256);
  EXPECT_EQ(halves.size(), 256u);
  std::vector<float> into(256);
  w.component("data").read_as_range_into(zt::dtype::f32, 768, zt::span<std::byte>(std::as_writable_bytes(std::span(into))));
  EXPECT_TRUE(std::equal(into.begin(), into.end(), want.begin() + 10496 + 768));
  // Not on a block boundary, or past the end: invalid_argument.
  EXPECT_THROW((void)w.read_as_range<float>(100, 256), zt::invalid_argument);
  EXPECT_THROW((void)w.read_as_range<float>(768, 512), zt::invalid_argument);
  // A plain tensor takes any range.
  const std::vector<double> norm = r["output_norm.weight"].read_as_range<double>(3, 5);
  const std::vector<double> all = r["output_norm.weight"].read_as<double>();
  EXPECT_TRUE(std::equal(norm.begin(), norm.end(), all.begin() + 3));
}

TEST(Loader, FramesOfAZstdComponent) {
  const std::string path = zt_test::temp_path("frames");
  std::vector<float> values(3 << 20);  // 12 MiB: three 4 MiB frames and a seek table
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000);
  {
    zt::Writer w = zt::Writer::create(path, v12(false));
    w.add("big", values, {values.size()}, zt::write_options::zstd(1));
    w.add("raw", std::vector<float>{1, 2}, {2});
    w.finish();
  }
  zt::Reader r = zt::Reader::open(path);
  const zt::Component c = r["big"].component("data");
  const std::vector<zt_frame_info> frames = c.frames();
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(c.frame_count(), 3u);
  std::uint64_t decoded = 0, stored_end = c.offset();
  for (const zt_frame_info& f : frames) {
    EXPECT_EQ(f.decoded_offset, decoded);
    EXPECT_EQ(f.offset, stored_end);  // back to back in the file
    decoded += f.decoded_length;
    stored_end = f.offset + f.length;
  }
  EXPECT_EQ(decoded, c.decoded_length());
  EXPECT_LT(stored_end, c.offset() + c.length());  // the seek table follows
  EXPECT_EQ(c.frame(1).decoded_offset, frames[1].decoded_offset);
  EXPECT_THROW((void)c.frame(3), zt::not_found);
  EXPECT_THROW((void)r["raw"].component("data").frames(), zt::invalid_argument);
  zt_test::remove(path);
}

TEST(Loader, UrlOpensAndRemoteStats) {
  // A local reader has no remote stats.
  zt::Reader local = zt::Reader::open(vector_path("gguf/llama_tiny.gguf"));
  EXPECT_THROW((void)local.remote_stats(), zt::not_found);
#ifdef ZT_TEST_NO_REMOTE
  EXPECT_THROW((void)zt::Reader::open_url("http://127.0.0.1:1/m.zt"), zt::unsupported);
#else
  // Not a URL: refused before any network.
  EXPECT_THROW((void)zt::Reader::open_url("http://[::1/m.zt"), zt::invalid_argument);
  // Nothing listens on port 1: the open fails at once (no retries), naming the URL and
  // never the credentials.
  zt::remote_options o;
  o.no_retry = true;
  o.timeout_ms = 2000;
  o.bearer_token = "SECRET-TOKEN";
  o.headers = {"X-Test: 1"};
  o.config = {"aws_region=us-east-1"};
  try {
    (void)zt::Reader::open_url("http://127.0.0.1:1/m.zt", {}, o);
    ADD_FAILURE() << "opened a URL nothing serves";
  } catch (const zt::io_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:1/m.zt"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("SECRET"), std::string::npos) << e.what();
  }
  // Malformed settings are refused by name.
  zt::remote_options bad;
  bad.headers = {"no colon"};
  EXPECT_THROW((void)zt::Reader::open_url("http://127.0.0.1:1/m.zt", {}, bad), zt::invalid_argument);
#endif
}

TEST(Loader, CopyObjectWithOptions) {
  const std::string path = zt_test::temp_path("copy");
  zt::Reader in = zt::Reader::open(vector_path("gguf/llama_tiny.gguf"));
  {
    zt::Writer w = zt::Writer::create(path, v12(false));
    w.copy_object(in, "blk.0.ffn_down.weight");  // as stored
    zt::copy_options o;
    o.encoding = zt::encoding::zstd;
    o.digest = zt::digest::sha256;
    o.name = "renamed";
    w.copy_object(in, in["output_norm.weight"].index(), o);
    EXPECT_THROW(w.copy_object(in, "no such tensor"), zt::not_found);
    w.set_attributes(in.attributes());  // every key/value, types kept
    w.finish();
  }
  zt::Reader out = zt::Reader::open(path);
  EXPECT_EQ(out.size(), 2u);
  const zt::Object q = out["blk.0.ffn_down.weight"];
  EXPECT_EQ(q.quant_info().name, "Q4_K");
  EXPECT_EQ(q.read_as<float>(), in["blk.0.ffn_down.weight"].read_as<float>());
  EXPECT_TRUE(same(q.attributes(), in["blk.0.ffn_down.weight"].attributes()));
  const zt::Component renamed = out["renamed"].component("data");
  EXPECT_EQ(renamed.encoding(), zt::encoding::zstd);
  ASSERT_TRUE(renamed.digest().has_value());
  EXPECT_EQ(renamed.digest()->substr(0, 7), "sha256:");
  EXPECT_NO_THROW(out.verify());
  EXPECT_EQ(out["renamed"].read<float>(), in["output_norm.weight"].read<float>());
  EXPECT_TRUE(same(out.attributes(), in.attributes()));
  EXPECT_EQ(out.attributes()["llama.context_length"].type(), zt::value_type::u32);
  zt_test::remove(path);
}

TEST(Loader, BatchLoadsDequantize) {
  zt::Reader r = zt::Reader::open(vector_path("gguf/llama_tiny.gguf"));
  const std::vector<float> want = expected_values();
  std::vector<float> q4k(1024), q8(4096);
  std::vector<std::byte> norm(r["output_norm.weight"].component("data").decoded_length());
  std::array<zt_load_request, 3> requests{};
  requests[0].object = r["blk.0.ffn_down.weight"].index();
  requests[0].flags = ZT_LOAD_CONVERT;
  requests[0].dtype = ZT_F32;
  requests[0].dst = q4k.data();
  requests[0].dst_size = q4k.size() * sizeof(float);
  requests[1].object = r["blk.0.attn_q.weight"].index();
  requests[1].flags = ZT_LOAD_CONVERT;
  requests[1].dtype = ZT_F32;
  requests[1].dst = q8.data();
  requests[1].dst_size = q8.size() * sizeof(float);
  requests[2].object = r["output_norm.weight"].index();
  requests[2].dst = norm.data();
  requests[2].dst_size = norm.size();
  r.load_batch(requests, 2);
  for (const zt_load_request& q : requests) EXPECT_EQ(q.status, static_cast<std::uint32_t>(ZT_OK));
  EXPECT_TRUE(std::equal(q4k.begin(), q4k.end(), want.begin() + 10496));
  EXPECT_TRUE(std::equal(q8.begin(), q8.end(), want.begin() + 6400));
  std::vector<std::byte> again(norm.size());
  r["output_norm.weight"].read_into(again);
  EXPECT_EQ(norm, again);
}

TEST(Loader, TypedAttributeWriting) {
  const std::string path = zt_test::temp_path("typed");
  const std::vector<float> scores = {0.0f, -1.25f, -2.5f};
  const std::vector<std::int32_t> kinds = {1, 3, 6};
  const std::vector<std::string> tokens = {"<s>", "</s>", "hello"};
  zt::Reader in = zt::Reader::open(vector_path("gguf/llama_tiny.gguf"));
  {
    zt::Writer w = zt::Writer::create(path, v12(false));
    w.set_attribute("llama.context_length", std::uint32_t{4096});
    w.set_attribute("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_attribute("general.name", "tiny");
    w.set_attribute("tokenizer.ggml.scores", zt::make_array(scores));
    w.set_attribute("tokenizer.ggml.token_type", zt::make_array(kinds));
    w.set_attribute("tokenizer.ggml.tokens", zt::make_strings(tokens));
    w.set_attribute("from.gguf", in.attributes()["llama.block_count"]);  // a reader's value
    zt::owned_value rope = zt::make_map({{"theta", zt::make_value(500000.0f)}, {"dims", zt::make_value(std::uint16_t{64})}});
    w.set_attribute("rope", rope);
    w.set_attribute("list", zt::make_array({rope, zt::make_null(), zt::make_value(std::int8_t{-1})}));
    w.set_attribute("llama.context_length", std::uint32_t{8192});  // replaced in place
    EXPECT_THROW(w.set_attributes(zt::make_value(1)), zt::invalid_argument);
    EXPECT_THROW(w.set_object_attribute("nope", "k", 1), zt::not_found);
    w.add("t", std::vector<float>{1}, {1});
    w.set_object_attribute("t", "ggml_type_id", std::uint32_t{2});
    {
      zt::object_builder o = w.begin_object("o", "dense", {1});
      o.add_component("data", std::vector<std::uint8_t>{7});
      o.set_attribute("bits", std::uint8_t{4});
      o.set_attribute("group_size", std::uint16_t{32});
      o.end();
      EXPECT_THROW(o.set_attribute("late", 1), zt::state_error);
    }
    w.finish();
  }
  zt::Reader r = zt::Reader::open(path);
  const zt::value a = r.attributes();
  std::vector<std::string> keys;
  for (const zt::value::entry& e : a.entries()) keys.emplace_back(e.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"llama.context_length", "llama.attention.layer_norm_rms_epsilon",
                                            "general.name", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                                            "tokenizer.ggml.tokens", "from.gguf", "rope", "list"}));
  EXPECT_EQ(a["llama.context_length"].type(), zt::value_type::u32);
  EXPECT_EQ(a["llama.context_length"].as<std::uint32_t>(), 8192u);
  EXPECT_EQ(a["llama.attention.layer_norm_rms_epsilon"].type(), zt::value_type::f32);
  EXPECT_EQ(a["tokenizer.ggml.scores"].element_type(), zt::value_type::f32);
  const zt::span<const float> s = a["tokenizer.ggml.scores"].array<float>();
  EXPECT_TRUE(std::equal(s.begin(), s.end(), scores.begin(), scores.end()));
  const zt::span<const std::int32_t> k = a["tokenizer.ggml.token_type"].array<std::int32_t>();
  EXPECT_TRUE(std::equal(k.begin(), k.end(), kinds.begin(), kinds.end()));
  EXPECT_EQ(a["tokenizer.ggml.tokens"].string_at(2), "hello");
  EXPECT_TRUE(same(a["from.gguf"], in.attributes()["llama.block_count"]));
  EXPECT_EQ(a["rope"]["theta"].type(), zt::value_type::f32);
  EXPECT_EQ(a["rope"]["dims"].type(), zt::value_type::u16);
  EXPECT_EQ(a["list"][0]["dims"].type(), zt::value_type::u16);
  EXPECT_EQ(a["list"][2].type(), zt::value_type::i8);
  EXPECT_EQ(r["t"].attributes()["ggml_type_id"].type(), zt::value_type::u32);
  EXPECT_EQ(r["o"].attributes()["bits"].type(), zt::value_type::u8);
  EXPECT_EQ(r["o"].attributes()["group_size"].as<std::uint16_t>(), 32u);
  // Values made here read as any value before they are written.
  const zt::owned_value made = zt::make_value(std::int16_t{-300});
  EXPECT_EQ(made.value().type(), zt::value_type::i16);
  EXPECT_EQ(made.value().as<std::int16_t>(), -300);
  zt_test::remove(path);
}

TEST(Loader, LibraryAndDtypeNames) {
  EXPECT_EQ(zt::library_version_number(), static_cast<unsigned>(ZT_VERSION_NUMBER));
  EXPECT_EQ(zt::dtype_from_name("bf16"), zt::dtype::bf16);
  EXPECT_EQ(zt::dtype_from_name("float32"), std::nullopt);
  EXPECT_EQ(zt::dtype_from_name(std::string_view("f32\0x", 5)), std::nullopt);
  // The wrapper's constexpr names and sizes are the C library's.
  for (std::uint32_t d = 0; d <= ZT_BOOL; ++d) {
    std::size_t size = 0;
    ASSERT_EQ(zt_dtype_get_size(d, &size), ZT_OK);
    EXPECT_EQ(zt::dtype_size(static_cast<zt::dtype>(d)), size);
    EXPECT_EQ(zt::dtype_name(static_cast<zt::dtype>(d)), zt_dtype_name(d));
  }
}

}  // namespace

namespace {

// The copying example of cpp/README.md ("Writing"), on a real GGUF.
TEST(Docs, ReadmeCopyExample) {
  const std::string path = zt_test::temp_path("readme");
  {
    zt::Reader gguf = zt::Reader::open(vector_path("gguf/llama_tiny.gguf"));
    zt::Writer out = zt::Writer::create(path, v12());
    out.set_attributes(gguf.attributes());  // u32 stays u32, f32 arrays stay f32
    out.set_attribute("general.quantized_by", "me");
    for (const zt::Object& o : gguf) out.copy_object(gguf, o.index());
    out.finish();
    zt::Reader copy = zt::Reader::open(path);
    EXPECT_EQ(copy.size(), gguf.size());
    EXPECT_EQ(copy.attribute("llama.context_length").type(), zt::value_type::u32);
    EXPECT_EQ(copy.attribute("tokenizer.ggml.scores").element_type(), zt::value_type::f32);
    EXPECT_EQ(copy.attribute("general.quantized_by").as<std::string_view>(), "me");
  }
  zt_test::remove(path);
}

}  // namespace
