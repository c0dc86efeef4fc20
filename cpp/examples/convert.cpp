// convert: writes a model with compression and digests.
//
//   convert IN OUT.zt [--level N] [--crc32c]      rewrite any file the reader opens
//                                                 (zTensor v0.1, v1.1, v1.2, safetensors,
//                                                 GGUF, Tensogram) as zTensor 1.2, every
//                                                 component zstd compressed with a sha256
//                                                 digest
//   convert OUT.zt [--level N] [--crc32c]         write a small demo model the same way
//
// --level sets the zstd level (default 3), --crc32c records crc32c digests instead of
// sha256. Components are copied in 1 MiB chunks (read_range -> streaming writes), so a
// file larger than memory converts in bounded memory; sparse indices that older writers
// stored as u32 are widened to u64 (read_as, in memory), as 1.2 requires. The result is
// reopened with every digest verified and compared with its source element for element.
// Attributes are copied through their JSON form (CBOR tags arrive as plain
// {"$tag":n,"value":v} maps).
#include <ztensor.hpp>

#if !ZT_CPP_EXCEPTIONS
#error "this example uses exceptions (see tests/cpp/test_noexceptions.cpp for the result mode)"
#endif

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr std::size_t k_chunk = 1 << 20;

/// Index components, which zTensor 1.2 stores as u64.
bool is_index(const zt::Object& obj, const zt::Component& c) {
  return (obj.format() == "sparse_csr" && (c.role() == "indices" || c.role() == "indptr")) ||
         (obj.format() == "sparse_coo" && c.role() == "coords");
}

void copy_file(const zt::Reader& in, zt::Writer& out, const zt::write_options& options) {
  std::vector<std::byte> buffer(k_chunk);
  for (const zt::Object& obj : in) {
    zt::object_builder b = out.begin_object(obj.name(), obj.format(), obj.shape());
    for (const zt::Component& c : obj.components()) {
      const std::optional<std::string_view> type = c.type();
      if (is_index(obj, c) && c.dtype() != zt::dtype::u64) {
        // Older writers stored sparse indices as u32; 1.2 requires u64: widen them.
        b.add_component(c.role(), c.read_as<std::uint64_t>(), options);
        continue;
      }
      zt::component_builder stream = b.begin_component(
          c.role(), c.dtype(), options, type ? zt::string_arg(*type) : zt::string_arg());
      for (std::uint64_t done = 0; done < c.decoded_length();) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(k_chunk, c.decoded_length() - done));
        c.read_range(done, buffer.data(), n);
        stream.write(buffer.data(), n);
        done += n;
      }
      stream.end();
    }
    b.set_attributes_json(obj.attributes_json());
    b.end();
  }
  out.set_attributes_json(in.attributes_json());
}

/// float -> bf16 bits, rounding to nearest even.
std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

void write_demo(zt::Writer& out, const zt::write_options& options) {
  const std::size_t vocab = 512, dim = 64, hidden = 128;
  std::vector<float> embedding(vocab * dim);
  for (std::size_t i = 0; i < embedding.size(); ++i) embedding[i] = static_cast<float>(std::sin(0.01 * static_cast<double>(i)));
  out.add("embed.weight", embedding, {vocab, dim}, options);

  for (int layer = 0; layer < 2; ++layer) {
    const std::string prefix = "layers." + std::to_string(layer) + ".";
    std::vector<std::uint16_t> w(hidden * dim);  // bf16 weights, held as uint16_t
    for (std::size_t i = 0; i < w.size(); ++i)
      w[i] = to_bf16(static_cast<float>(std::cos(0.003 * static_cast<double>(i) + layer)) * 0.1f);
    out.add(prefix + "mlp.weight", zt::dtype::bf16, w, {hidden, dim}, options);
    std::vector<float> bias(hidden, 0.01f * static_cast<float>(layer + 1));
    out.add(prefix + "mlp.bias", bias, {hidden}, options);
  }

  // a sparse attention mask: the lower band of a 64 x 64 matrix
  std::vector<float> values;
  std::vector<std::uint64_t> indices, indptr = {0};
  for (std::uint64_t row = 0; row < 64; ++row) {
    for (std::uint64_t col = row >= 2 ? row - 2 : 0; col <= row; ++col) {
      values.push_back(1.0f);
      indices.push_back(col);
    }
    indptr.push_back(indices.size());
  }
  {
    zt::object_builder mask = out.begin_object("attn.mask", "sparse_csr", {64, 64});
    mask.add_component("values", values, options);
    mask.add_component("indices", indices, options);
    mask.add_component("indptr", indptr, options);
    mask.set_attributes_json(R"({"band":2})");
    mask.end();
  }

  // the vocabulary ids, streamed in pieces as a loader of a huge tensor would
  {
    zt::object_builder ids = out.begin_object("vocab.ids", "dense", {vocab});
    zt::component_builder stream = ids.begin_component<std::int64_t>("data", options);
    for (std::int64_t start = 0; start < static_cast<std::int64_t>(vocab); start += 100) {
      std::vector<std::int64_t> piece;
      for (std::int64_t i = start; i < std::min<std::int64_t>(start + 100, static_cast<std::int64_t>(vocab)); ++i)
        piece.push_back(i);
      stream.write(piece);
    }
    stream.end();
    ids.end();
  }
  out.set_attributes_json(R"({"model":"zt-demo","layers":2,"dim":64})");
}

/// Compares every component of two readers byte for byte, in chunks.
bool same_content(const zt::Reader& a, const zt::Reader& b) {
  std::vector<std::byte> x(k_chunk), y(k_chunk);
  if (a.size() != b.size()) return false;
  for (const zt::Object& oa : a) {
    const std::optional<zt::Object> ob = b.find(oa.name());
    if (!ob || ob->format() != oa.format() || ob->component_count() != oa.component_count()) return false;
    for (const zt::Component& ca : oa.components()) {
      const std::optional<zt::Component> cb = ob->find_component(ca.role());
      if (!cb) return false;
      if (is_index(oa, ca) && ca.dtype() != cb->dtype()) {  // widened by copy_file
        if (ca.read_as<std::uint64_t>() != cb->read<std::uint64_t>()) return false;
        continue;
      }
      if (cb->dtype() != ca.dtype() || cb->decoded_length() != ca.decoded_length()) return false;
      for (std::uint64_t done = 0; done < ca.decoded_length();) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(k_chunk, ca.decoded_length() - done));
        ca.read_range(done, x.data(), n);
        cb->read_range(done, y.data(), n);
        if (std::memcmp(x.data(), y.data(), n) != 0) return false;
        done += n;
      }
    }
  }
  return true;
}

int usage() {
  std::fprintf(stderr,
               "usage: convert IN OUT.zt [--level N] [--crc32c]\n"
               "       convert OUT.zt [--level N] [--crc32c]     (writes a demo model)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> paths;
  zt::write_options options = zt::write_options::zstd(3, zt::digest::sha256);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--level") == 0 && i + 1 < argc) {
      options.level = static_cast<std::int32_t>(std::strtol(argv[++i], nullptr, 10));
    } else if (std::strcmp(argv[i], "--crc32c") == 0) {
      options.digest = zt::digest::crc32c;
    } else if (argv[i][0] == '-') {
      return usage();
    } else {
      paths.push_back(argv[i]);
    }
  }
  if (paths.empty() || paths.size() > 2) return usage();
  const char* out_path = paths.back();

  try {
    {
      // zTensor 1.2 (the library writes v2 by default, which records xxh3 or sha256
      // digests, not crc32c). Nothing appears at out_path until finish().
      zt::writer_options v12;
      v12.version = zt::writer_options::file_version::v1_2;
      zt::Writer out = zt::Writer::create(out_path, v12);
      if (paths.size() == 2) {
        const zt::Reader in = zt::Reader::open(paths[0]);
        copy_file(in, out, options);
      } else {
        write_demo(out, options);
      }
      out.finish();
    }

    zt::open_options verify;
    verify.verify = true;  // every digest is checked while opening
    const zt::Reader result = zt::Reader::open(out_path, verify);
    if (paths.size() == 2 && !same_content(zt::Reader::open(paths[0]), result)) {
      std::fprintf(stderr, "convert: %s differs from %s\n", out_path, paths[0]);
      return 1;
    }
    std::uint64_t raw = 0, stored = 0;
    std::size_t components = 0;
    for (const zt::Object& obj : result) {
      for (const zt::Component& c : obj.components()) {
        raw += c.decoded_length();
        stored += c.length();
        ++components;
      }
    }
    std::printf("%s: %zu objects, %zu components, %" PRIu64 " bytes -> %" PRIu64 " stored (zstd level %d, %s), verified\n",
                out_path, result.size(), components, raw, stored, options.level == 0 ? 3 : options.level,
                options.digest == zt::digest::sha256 ? "sha256" : "crc32c");
    return 0;
  } catch (const zt::error& e) {
    const std::string_view status = zt::status_name(e.status());
    std::fprintf(stderr, "convert: %.*s: %s\n", static_cast<int>(status.size()), status.data(), e.what());
    return 1;
  }
}
