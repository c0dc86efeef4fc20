// The exception hierarchy: every status the library returns becomes its zt::error subclass,
// carrying the status and the library's message (exceptions mode).
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
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

static_assert(std::is_base_of_v<std::runtime_error, zt::error>);
static_assert(std::is_base_of_v<zt::error, zt::invalid_argument>);
static_assert(std::is_base_of_v<zt::error, zt::io_error>);
static_assert(std::is_base_of_v<zt::error, zt::format_error>);
static_assert(std::is_base_of_v<zt::error, zt::unsupported>);
static_assert(std::is_base_of_v<zt::error, zt::not_found>);
static_assert(std::is_base_of_v<zt::error, zt::checksum_error>);
static_assert(std::is_base_of_v<zt::error, zt::limit_error>);
static_assert(std::is_base_of_v<zt::error, zt::buffer_too_small>);
static_assert(std::is_base_of_v<zt::error, zt::state_error>);
static_assert(std::is_base_of_v<zt::error, zt::internal_error>);
// the fallible calls return plain values in this mode
static_assert(std::is_same_v<decltype(zt::Reader::open("x")), zt::Reader>);
static_assert(std::is_same_v<decltype(std::declval<zt::Reader&>().verify()), void>);
static_assert(std::is_same_v<decltype(std::declval<zt::tensor_view&>().as<float>()), zt::span<const float>>);
static_assert(std::is_same_v<zt::ret<int>, int>);

/// Runs `f`, expecting a zt::error of `status`; returns its message.
template <class F>
std::string status_of(F&& f, zt_status status) {
  try {
    f();
  } catch (const zt::error& e) {
    EXPECT_EQ(e.status(), status) << zt::status_name(e.status()) << ": " << e.what();
    EXPECT_STRNE(e.what(), "");
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a zt::error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "nothing thrown; expected " << zt::status_name(status);
  return "";
}

std::string sample(const std::string& stem) {
  const std::string path = zt_test::temp_path(stem);
  zt::Writer w = zt::Writer::create(path, v12());
  w.add("t", std::vector<float>{1, 2, 3, 4}, {2, 2}, zt::write_options::raw(zt::digest::sha256));
  w.add("m", std::vector<float>(64, 1.0f), {8, 8});
  w.finish();
  return path;
}

TEST(Errors, ThrowErrorMapsEveryStatus) {
  const std::pair<zt_status, const std::type_info*> cases[] = {
      {ZT_ERR_INVALID_ARGUMENT, &typeid(zt::invalid_argument)},
      {ZT_ERR_IO, &typeid(zt::io_error)},
      {ZT_ERR_FORMAT, &typeid(zt::format_error)},
      {ZT_ERR_UNSUPPORTED, &typeid(zt::unsupported)},
      {ZT_ERR_NOT_FOUND, &typeid(zt::not_found)},
      {ZT_ERR_CHECKSUM, &typeid(zt::checksum_error)},
      {ZT_ERR_LIMIT, &typeid(zt::limit_error)},
      {ZT_ERR_BUFFER_TOO_SMALL, &typeid(zt::buffer_too_small)},
      {ZT_ERR_STATE, &typeid(zt::state_error)},
      {ZT_ERR_INTERNAL, &typeid(zt::internal_error)},
  };
  for (const auto& [status, type] : cases) {
    try {
      zt::throw_error(zt::failure{status, "message " + std::to_string(status)});
    } catch (const zt::error& e) {
      EXPECT_EQ(typeid(e), *type) << zt::status_name(status);
      EXPECT_EQ(e.status(), status);
      EXPECT_EQ(std::string(e.what()), "message " + std::to_string(status));
    }
  }
  // each subclass is catchable as itself, as zt::error and as std::runtime_error
  EXPECT_THROW(zt::throw_error({ZT_ERR_LIMIT, "x"}), zt::limit_error);
  EXPECT_THROW(zt::throw_error({ZT_ERR_LIMIT, "x"}), zt::error);
  EXPECT_THROW(zt::throw_error({ZT_ERR_LIMIT, "x"}), std::runtime_error);
  zt::checksum_error direct("bad bytes");
  EXPECT_EQ(direct.status(), ZT_ERR_CHECKSUM);
  EXPECT_STREQ(direct.what(), "bad bytes");
  zt::error base(ZT_ERR_IO, "os");
  EXPECT_EQ(base.status(), ZT_ERR_IO);
}

TEST(Errors, LibraryStatusesBecomeTheirExceptions) {
  const std::string path = sample("errors");
  zt::Reader r = zt::Reader::open(path);

  // invalid argument
  std::string m = status_of([] { (void)zt::Reader::open(nullptr); }, ZT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(m.find("NULL"), std::string::npos) << m;
  status_of([&] { (void)r["t"].read_range(8, nullptr, 16); }, ZT_ERR_INVALID_ARGUMENT);
  zt::open_options bad;
  bad.max_manifest_size = 1;
  // io
  m = status_of([] { (void)zt::Reader::open("/nonexistent-zt-dir/missing.zt"); }, ZT_ERR_IO);
  EXPECT_NE(m.find("missing.zt"), std::string::npos) << m;
  EXPECT_EQ(zt::last_os_error(), ENOENT);  // the system's reason, read right after the failure
  (void)zt::Reader::open(path);
  EXPECT_EQ(zt::last_os_error(), 0);  // a success clears it
  EXPECT_TRUE(zt::path_is_url("s3://bucket/model.safetensors"));
  EXPECT_TRUE(zt::path_is_url("HTTPS://host/x.gguf"));
  EXPECT_FALSE(zt::path_is_url("/nonexistent-zt-dir/missing.zt"));
  EXPECT_FALSE(zt::path_is_url("file.s3://x"));
  // format
  const std::string garbage = zt_test::temp_path("garbage");
  zt_test::spit(garbage, std::vector<unsigned char>(100, 0x5a));
  status_of([&] { (void)zt::Reader::open(garbage); }, ZT_ERR_FORMAT);
  std::vector<unsigned char> bytes = zt_test::slurp(path);
  std::vector<unsigned char> truncated(bytes.begin(), bytes.end() - 3);
  status_of([&] { (void)zt::Reader::open_memory(truncated.data(), truncated.size()); }, ZT_ERR_FORMAT);
  // unsupported
  status_of([&] { (void)r["t"].read_as<std::int32_t>(); }, ZT_ERR_UNSUPPORTED);
  // not found
  m = status_of([&] { (void)r["absent"]; }, ZT_ERR_NOT_FOUND);
  EXPECT_NE(m.find("absent"), std::string::npos) << m;
  status_of([&] { (void)r["m"].component("data").verify(); }, ZT_ERR_NOT_FOUND);
  // limit
  status_of([&] { (void)zt::Reader::open(path, bad); }, ZT_ERR_LIMIT);
  zt::open_options rank;
  rank.max_rank = 1;
  status_of([&] { (void)zt::Reader::open(path, rank); }, ZT_ERR_LIMIT);
  // buffer too small
  std::vector<std::byte> small(15);
  status_of([&] { r["t"].read_into(small); }, ZT_ERR_BUFFER_TOO_SMALL);
  // state
  const std::string finished = zt_test::temp_path("state");
  zt::Writer w = zt::Writer::create(finished, v12());
  w.finish();
  status_of([&] { w.finish(); }, ZT_ERR_STATE);
  zt_test::remove(finished);

  // checksum: flip one stored byte of "t" (raw, sha256)
  const zt::Component t = r["t"].component("data");
  std::vector<unsigned char> corrupt = bytes;
  corrupt[static_cast<std::size_t>(t.offset()) + 1] ^= 0x01;
  zt::Reader cr = zt::Reader::open_memory(corrupt.data(), corrupt.size());
  m = status_of([&] { cr.verify(); }, ZT_ERR_CHECKSUM);
  status_of([&] { cr["t"].verify(); }, ZT_ERR_CHECKSUM);
  status_of([&] { cr["t"].component("data").verify(); }, ZT_ERR_CHECKSUM);
  zt::open_options verify;
  verify.verify = true;
  status_of([&] { (void)zt::Reader::open_memory(corrupt.data(), corrupt.size(), verify); }, ZT_ERR_CHECKSUM);
  EXPECT_NO_THROW(r.verify());

  zt_test::remove(garbage);
  zt_test::remove(path);
}

TEST(Errors, WrapperErrorsUseTheSameHierarchy) {
  const std::string path = sample("wrapper_errors");
  zt::Reader r = zt::Reader::open(path);
  std::string m = status_of([&] { (void)r["t"].view().as<double>(); }, ZT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(m.find("f32"), std::string::npos) << m;
  status_of([&] { (void)r["t"].read<std::int32_t>(); }, ZT_ERR_INVALID_ARGUMENT);
  status_of([&] { (void)r[std::string("t\0", 2)]; }, ZT_ERR_INVALID_ARGUMENT);
  status_of([&] { (void)r["t"].view(std::string("da\0ta", 5)); }, ZT_ERR_INVALID_ARGUMENT);
  zt::object_builder none;
  m = status_of([&] { none.end(); }, ZT_ERR_STATE);
  EXPECT_NE(m.find("not open"), std::string::npos) << m;
  zt_test::remove(path);
}

TEST(Errors, ResultInExceptionsMode) {
  zt::result<int> ok(7);
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), 7);
  zt::result<int> bad(zt::failure{ZT_ERR_FORMAT, "broken"});
  EXPECT_THROW((void)bad.value(), zt::format_error);
  EXPECT_THROW((void)*bad, zt::format_error);
  EXPECT_EQ(bad.value_or(3), 3);
  zt::result<void> vbad(zt::failure{ZT_ERR_IO, "disk"});
  EXPECT_THROW(vbad.value(), zt::io_error);
  zt::result<void> vok;
  EXPECT_NO_THROW(vok.value());
}

}  // namespace
