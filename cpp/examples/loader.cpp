// loader: maps every tensor of a file (zTensor .zt, safetensors, GGUF or Tensogram) into a
// name -> zt::tensor_view table, the way an inference runtime would, and prints a summary.
//
//   loader [--no-mmap] [--verify] FILE
//
// Dense objects are keyed by their name; the components of other formats (sparse,
// quantized ...) by "name:role". Raw components of a mapped file are zero-copy; encoded
// ones (zstd, legacy big-endian, Tensogram pipelines ...) are decoded once and owned by the reader. The views
// stay valid as long as the zt::Reader lives.
#include <ztensor.hpp>

#if !ZT_CPP_EXCEPTIONS
#error "this example uses exceptions (see tests/cpp/test_noexceptions.cpp for the result mode)"
#endif

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    std::uint32_t e = 113;
    std::uint32_t m = man;
    while ((m & 0x400u) == 0) {
      m <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((m & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// The first few elements of a view, as text.
std::string preview(const zt::tensor_view& v, std::size_t max = 4) {
  std::string out;
  const std::size_t n = std::min(v.count(), max);
  auto add = [&out](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%g", out.empty() ? "" : ", ", x);
    out += buf;
  };
  auto add_int = [&out](long long x) { out += (out.empty() ? "" : ", ") + std::to_string(x); };
  switch (v.dtype()) {
    case zt::dtype::f64: for (std::size_t i = 0; i < n; ++i) add(v.as<double>()[i]); break;
    case zt::dtype::f32: for (std::size_t i = 0; i < n; ++i) add(v.as<float>()[i]); break;
    case zt::dtype::f16: for (std::size_t i = 0; i < n; ++i) add(half_to_float(v.as<std::uint16_t>(zt::dtype::f16)[i])); break;
    case zt::dtype::bf16: for (std::size_t i = 0; i < n; ++i) add(bf16_to_float(v.as<std::uint16_t>(zt::dtype::bf16)[i])); break;
    case zt::dtype::i64: for (std::size_t i = 0; i < n; ++i) add_int(v.as<std::int64_t>()[i]); break;
    case zt::dtype::i32: for (std::size_t i = 0; i < n; ++i) add_int(v.as<std::int32_t>()[i]); break;
    case zt::dtype::i16: for (std::size_t i = 0; i < n; ++i) add_int(v.as<std::int16_t>()[i]); break;
    case zt::dtype::i8: for (std::size_t i = 0; i < n; ++i) add_int(v.as<std::int8_t>()[i]); break;
    case zt::dtype::u64: for (std::size_t i = 0; i < n; ++i) out += (out.empty() ? "" : ", ") + std::to_string(v.as<std::uint64_t>()[i]); break;
    case zt::dtype::u32: for (std::size_t i = 0; i < n; ++i) add_int(v.as<std::uint32_t>()[i]); break;
    case zt::dtype::u16: for (std::size_t i = 0; i < n; ++i) add_int(v.as<std::uint16_t>()[i]); break;
    case zt::dtype::u8: for (std::size_t i = 0; i < n; ++i) add_int(v.as<std::uint8_t>()[i]); break;
    case zt::dtype::bool_: for (std::size_t i = 0; i < n; ++i) out += (out.empty() ? "" : ", ") + std::string(v.as<bool>()[i] ? "true" : "false"); break;
  }
  if (v.count() > max) out += ", ...";
  return "[" + out + "]";
}

std::string shape_text(zt::span<const std::uint64_t> shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

int usage() {
  std::fprintf(stderr, "usage: loader [--no-mmap] [--verify] FILE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  zt::open_options options;
  const char* path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-mmap") == 0) {
      options.no_mmap = true;
    } else if (std::strcmp(argv[i], "--verify") == 0) {
      options.verify = true;
    } else if (argv[i][0] == '-' || path != nullptr) {
      return usage();
    } else {
      path = argv[i];
    }
  }
  if (path == nullptr) return usage();

  try {
    const zt::Reader reader = zt::Reader::open(path, options);

    // The runtime's table: every tensor by name, borrowed from the reader.
    std::unordered_map<std::string, zt::tensor_view> tensors;
    std::unordered_map<std::string, std::string> shapes;
    for (const zt::Object& obj : reader) {
      for (const zt::Component& c : obj.components()) {
        std::string key(obj.name());
        if (obj.format() != "dense") key += ":" + std::string(c.role());
        tensors.emplace(key, c.view());
        shapes.emplace(key, obj.format() == "dense" ? shape_text(obj.shape()) : "(" + std::string(obj.format()) + " " +
                                                                                      shape_text(obj.shape()) + ")");
      }
    }

    std::printf("%s: %.*s %.*s, %zu objects, %zu tensors, file attributes %.*s\n", path,
                static_cast<int>(reader.file_format().size()), reader.file_format().data(),
                static_cast<int>(reader.version().size()), reader.version().data(), reader.size(), tensors.size(),
                static_cast<int>(reader.attributes_json().size()), reader.attributes_json().data());

    std::vector<std::string> keys;
    keys.reserve(tensors.size());
    for (const auto& entry : tensors) keys.push_back(entry.first);
    std::sort(keys.begin(), keys.end());
    std::uint64_t total = 0, mapped = 0;
    for (const std::string& key : keys) {
      const zt::tensor_view& v = tensors.at(key);
      total += v.size();
      if (v.zero_copy()) mapped += v.size();
      const std::string_view dt = zt::dtype_name(v.dtype());
      std::printf("  %-32s %-5.*s %-20s %10zu bytes  %-9s %s\n", key.c_str(), static_cast<int>(dt.size()), dt.data(),
                  shapes.at(key).c_str(), v.size(), v.zero_copy() ? "zero-copy" : "decoded", preview(v).c_str());
    }
    std::printf("total %" PRIu64 " bytes, %" PRIu64 " zero-copy, %" PRIu64 " decoded%s\n", total, mapped, total - mapped,
                options.verify ? ", every digest verified" : "");
    return 0;
  } catch (const zt::error& e) {
    const std::string_view status = zt::status_name(e.status());
    std::fprintf(stderr, "loader: %.*s: %s\n", static_cast<int>(status.size()), status.data(), e.what());
    return 1;
  }
}
