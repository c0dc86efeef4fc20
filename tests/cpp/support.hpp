// Helpers shared by the C++ wrapper tests (not a test itself). Builds in both error modes.
#ifndef ZT_TESTS_CPP_SUPPORT_HPP
#define ZT_TESTS_CPP_SUPPORT_HPP

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace zt_test {

namespace fs = std::filesystem;

/// A fresh path in the working directory (ctest runs each test binary in a scratch dir).
inline std::string temp_path(const std::string& stem) {
  static int counter = 0;
  return "zt_cpp_" + stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".zt";
}

inline bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

inline void remove(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

/// Temporary files a Writer for `path` may have left beside it (".<name>.<pid>.<n>.tmp").
inline int leftover_temps(const std::string& path) {
  const fs::path p(path);
  const std::string prefix = "." + p.filename().string() + ".";
  fs::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

inline std::vector<unsigned char> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void spit(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::string hex(const void* data, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

/// The test-vector directory: the first non-flag program argument (ctest passes
/// <repo>/tests/vectors), else $ZT_TEST_VECTORS, else ../vectors beside this file.
inline std::string vectors_dir() {
  const std::vector<std::string> args = ::testing::internal::GetArgvs();
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (!args[i].empty() && args[i][0] != '-') return args[i];
  }
  if (const char* env = std::getenv("ZT_TEST_VECTORS")) return env;
  return (fs::path(__FILE__).parent_path().parent_path() / "vectors").string();
}

/// 64-byte aligned heap bytes (for zero-copy open_memory).
struct aligned_bytes {
  explicit aligned_bytes(const std::vector<unsigned char>& src) : size(src.size()) {
    data = static_cast<unsigned char*>(std::aligned_alloc(64, (size + 63) / 64 * 64 + 64));
    if (size != 0) std::memcpy(data, src.data(), size);
  }
  ~aligned_bytes() { std::free(data); }
  aligned_bytes(const aligned_bytes&) = delete;
  aligned_bytes& operator=(const aligned_bytes&) = delete;
  unsigned char* data = nullptr;
  std::size_t size = 0;
};

}  // namespace zt_test

#endif
