// zt::value: typed attributes through the C++ wrapper (exceptions mode), on the GGUF,
// zTensor and safetensors vectors: widths, lossless conversions, refusals with their
// exception type and message, contiguous arrays as spans, ranges over arrays and maps.
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support.hpp"

namespace {

static_assert(ZT_CPP_EXCEPTIONS == 1, "this file tests the exceptions mode");

zt::Reader open_vector(const std::string& name) { return zt::Reader::open(zt_test::vectors_dir() + "/" + name); }

TEST(Value, LlamaHyperparametersAndVocabulary) {
  const zt::Reader r = open_vector("gguf/llama_tiny.gguf");
  EXPECT_EQ(r.attributes()["llama.block_count"].as<std::uint32_t>(), 2u);
  EXPECT_EQ(r.attributes()["llama.block_count"].type(), zt::value_type::u32);
  EXPECT_EQ(r.attributes()["llama.context_length"].as<std::uint64_t>(), 256u);
  EXPECT_EQ(r.attributes()["llama.attention.layer_norm_rms_epsilon"].as<float>(), 1e-5f);
  EXPECT_EQ(r.attributes()["general.architecture"].as<std::string_view>(), "llama");
  EXPECT_EQ(r.attributes()["general.name"].as<std::string>(), "tiny");

  const zt::value tokens = r.attributes()["tokenizer.ggml.tokens"];
  EXPECT_EQ(tokens.type(), zt::value_type::array);
  EXPECT_EQ(tokens.element_type(), zt::value_type::string);
  EXPECT_EQ(tokens.size(), 100u);
  EXPECT_EQ(tokens.string_at(99), "tok99");
  EXPECT_EQ(tokens[1].as<std::string_view>(), "<s>");
  std::vector<std::string_view> all;
  for (zt::value t : tokens.elements()) all.push_back(t.as<std::string_view>());
  ASSERT_EQ(all.size(), 100u);
  EXPECT_EQ(all[0], "<unk>");
  EXPECT_EQ(all[42], "tok42");

  const zt::span<const float> scores = r.attributes()["tokenizer.ggml.scores"].array<float>();
  ASSERT_EQ(scores.size(), 100u);
  EXPECT_EQ(scores[9], -9.0f);
  const zt::span<const std::int32_t> types = r.attributes()["tokenizer.ggml.token_type"].array<std::int32_t>();
  EXPECT_EQ(types[1], 3);

  // Keys in file order, with their declared types.
  std::vector<std::string> keys;
  for (const zt::value::entry& e : r.attributes().entries()) {
    keys.push_back(std::string(e.key) + ":" + std::string(zt::value_type_name(e.val.type())));
  }
  ASSERT_EQ(keys.size(), 14u);
  EXPECT_EQ(keys[0], "general.architecture:string");
  EXPECT_EQ(keys[2], "llama.block_count:u32");
  EXPECT_EQ(keys[6], "llama.attention.layer_norm_rms_epsilon:f32");
  EXPECT_EQ(keys[13], "tokenizer.ggml.bos_token_id:u32");

  // Quantized tensors explain themselves through their attributes too.
  EXPECT_EQ(r["token_embd.weight"].attributes()["ggml_type"].as<std::string_view>(), "Q4_0");
  EXPECT_EQ(r["output_norm.weight"].attributes().size(), 0u);
}

TEST(Value, WidthsConversionsAndRefusals) {
  const zt::Reader r = open_vector("gguf/plain_v3.gguf");
  const zt::value a = r.attributes();
  EXPECT_EQ(a["test.u8"].type(), zt::value_type::u8);
  EXPECT_EQ(a["test.u8"].as<std::uint8_t>(), 200);
  EXPECT_EQ(a["test.u8"].as<int>(), 200);  // widening
  EXPECT_EQ(a["test.i64"].as<long long>(), INT64_MIN);
  EXPECT_EQ(a["test.u64"].as<std::uint64_t>(), UINT64_MAX);
  EXPECT_EQ(a["test.f32"].as<double>(), static_cast<double>(0.1f));
  EXPECT_TRUE(a["test.bool_true"].as<bool>());

  try {
    (void)a["test.u16"].as<std::uint8_t>();
    FAIL() << "no exception";
  } catch (const zt::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "attribute value is u16 (60000), not u8");
  }
  try {
    (void)a["test.string"].as<std::uint32_t>();
    FAIL() << "no exception";
  } catch (const zt::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "attribute value is a string, not u32");
  }
  try {
    (void)a["test.array_i32"].array<std::uint32_t>();
    FAIL() << "no exception";
  } catch (const zt::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "attribute value is an array of i32, not of u32");
  }
  try {
    (void)a["no.such.key"];
    FAIL() << "no exception";
  } catch (const zt::not_found& e) {
    EXPECT_STREQ(e.what(), "the map has no key 'no.such.key'");
  }
  EXPECT_THROW((void)a["test.array_i32"][3], zt::invalid_argument);
  EXPECT_FALSE(a.find("no.such.key").has_value());
  EXPECT_TRUE(a.contains("test.u32"));

  const zt::span<const std::int32_t> i32 = a["test.array_i32"].array<std::int32_t>();
  ASSERT_EQ(i32.size(), 3u);
  EXPECT_EQ(i32[1], -2);
  const zt::span<const bool> flags = a["test.array_bool"].array<bool>();
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_TRUE(flags[0]);
  EXPECT_FALSE(flags[1]);
  // Nested arrays keep their element types.
  EXPECT_EQ(a["test.array_nested"][0].array<std::int32_t>()[1], 2);
  EXPECT_EQ(a["test.array_nested_strings"][1].string_at(0), "y");
  // A GGUF string that is not UTF-8: its bytes as stored.
  EXPECT_EQ(a["test.string_not_utf8"].as<std::string_view>(), std::string_view("ab\xff" "cd", 5));
}

TEST(Value, CborAttributesAndDefaultValue) {
  const zt::Reader r = open_vector("reference/v12_rust_file_attributes.zt");
  const zt::value a = r.attributes();
  EXPECT_EQ(a["epoch"].type(), zt::value_type::u64);
  EXPECT_EQ(a["epoch"].as<std::uint32_t>(), 3u);
  EXPECT_EQ(a["neg"].as<std::int8_t>(), -12);
  EXPECT_EQ(a["half"].as<float>(), 0.5f);
  EXPECT_EQ(a["nested"]["depth"]["k"].as<int>(), 1);
  EXPECT_EQ(a["tags"].element_type(), zt::value_type::mixed);
  EXPECT_EQ(a["tags"][2].as<unsigned>(), 1u);
  const zt::span<const std::uint8_t> raw = a["raw"].bytes();
  ASSERT_EQ(raw.size(), 4u);
  EXPECT_EQ(raw[3], 0xff);
  EXPECT_TRUE(a["none"].is_null());

  const zt::value none;
  EXPECT_FALSE(none);
  EXPECT_EQ(none.type(), zt::value_type::null);
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.elements().size(), 0u);
  try {
    (void)none.as<int>();
    FAIL() << "no exception";
  } catch (const zt::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "value is NULL");
  }

  const zt::Reader st = open_vector("safetensors/dtypes.safetensors");
  EXPECT_EQ(st.attributes()["format"].as<std::string_view>(), "np");
  EXPECT_EQ(st.attributes().entries().size(), 3u);
}

}  // namespace
