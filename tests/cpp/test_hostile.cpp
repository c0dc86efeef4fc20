// The hostile corpus (tests/vectors/hostile/, expected.tsv) through the C++ wrapper: the
// same walk as tests/c/test_hostile.c, made with Reader / Object / Component calls, must
// give the same open status and the same first failing status in every open mode, with
// every failure arriving as the zt::error subclass of its status. On top of the C walk,
// the typed accessors (as<T>(), read<T>(), read_as<T>()) run on every component and may
// only succeed or throw zt::error. hostile/alloc/ is not run (it needs an address-space
// limit, which ASan and valgrind can't run under; tests/hostile_corpus.rs runs it).
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "support.hpp"

namespace {

struct walk_state {
  zt_status first = ZT_OK;
  std::string first_message;
  std::string problem;  // first broken invariant
  bool foreign = false;  // a safetensors/GGUF file: zero-copy views are element-aligned only
  void problem_once(const std::string& what) {
    if (problem.empty()) problem = what;
  }
};

const std::type_info& class_of(zt_status s) {
  switch (s) {
    case ZT_ERR_INVALID_ARGUMENT: return typeid(zt::invalid_argument);
    case ZT_ERR_IO: return typeid(zt::io_error);
    case ZT_ERR_FORMAT: return typeid(zt::format_error);
    case ZT_ERR_UNSUPPORTED: return typeid(zt::unsupported);
    case ZT_ERR_NOT_FOUND: return typeid(zt::not_found);
    case ZT_ERR_CHECKSUM: return typeid(zt::checksum_error);
    case ZT_ERR_LIMIT: return typeid(zt::limit_error);
    case ZT_ERR_BUFFER_TOO_SMALL: return typeid(zt::buffer_too_small);
    case ZT_ERR_STATE: return typeid(zt::state_error);
    case ZT_ERR_INTERNAL: return typeid(zt::internal_error);
    default: return typeid(zt::error);
  }
}

/// Runs f; its status (ZT_OK when nothing was thrown). Anything but a zt::error of the
/// right class is a problem.
template <class F>
zt_status call(walk_state& w, const char* what, F&& f) {
  try {
    f();
    return ZT_OK;
  } catch (const zt::error& e) {
    if (typeid(e) != class_of(e.status())) w.problem_once(std::string(what) + ": wrong exception class for its status");
    if (std::strlen(e.what()) == 0) w.problem_once(std::string(what) + ": empty message");
    if (e.status() != ZT_OK && w.first == ZT_OK) {
      w.first = e.status();
      w.first_message = std::string(what) + ": " + e.what();
    }
    return e.status();
  } catch (const std::exception& e) {
    w.problem_once(std::string(what) + ": threw a non-zt exception: " + e.what());
    return ZT_ERR_INTERNAL;
  }
}

/// The typed accessors must either work or throw zt::error (never crash, never lie).
template <class T>
void typed(walk_state& w, const zt::Component& c, const zt::tensor_view* v) {
  zt_status st = ZT_OK;
  try {
    if (v != nullptr) {
      zt::span<const T> s = v->as<T>();
      if (s.size_bytes() != v->size()) w.problem_once("as<T>() spans the wrong size");
    }
    if (c.decoded_length() <= (1u << 20)) {
      std::vector<T> copy = c.read<T>();
      if (copy.size() * sizeof(T) != c.decoded_length()) w.problem_once("read<T>() has the wrong size");
      (void)c.read_as<double>();
    }
  } catch (const zt::error& e) {
    st = e.status();
  } catch (const std::exception& e) {
    w.problem_once(std::string("typed access threw a non-zt exception: ") + e.what());
  }
  (void)st;
}

void typed_for(walk_state& w, const zt::Component& c, const zt::tensor_view* v) {
  switch (c.dtype()) {
    case zt::dtype::f64: typed<double>(w, c, v); break;
    case zt::dtype::f32: typed<float>(w, c, v); break;
    case zt::dtype::i64: typed<std::int64_t>(w, c, v); break;
    case zt::dtype::i32: typed<std::int32_t>(w, c, v); break;
    case zt::dtype::i16: typed<std::int16_t>(w, c, v); break;
    case zt::dtype::i8: typed<std::int8_t>(w, c, v); break;
    case zt::dtype::u64: typed<std::uint64_t>(w, c, v); break;
    case zt::dtype::u32: typed<std::uint32_t>(w, c, v); break;
    case zt::dtype::u16: typed<std::uint16_t>(w, c, v); break;
    case zt::dtype::u8: typed<std::uint8_t>(w, c, v); break;
    case zt::dtype::bool_: typed<bool>(w, c, v); break;
    case zt::dtype::f16:
    case zt::dtype::bf16: {
      try {
        if (v != nullptr) (void)v->as<std::uint16_t>(c.dtype());
        if (c.decoded_length() <= (1u << 20)) (void)c.read_as<float>();
      } catch (const zt::error&) {
      }
      break;
    }
  }
}

void walk_component(const zt::Object& obj, std::size_t index, walk_state& w) {
  zt::Component c;
  if (call(w, "component_at", [&] { c = obj.component_at(index); }) != ZT_OK) return;
  const std::string where = "object " + std::to_string(obj.index()) + " component '" + std::string(c.role()) + "': ";
  const std::uint64_t dl = c.decoded_length();

  std::byte first{}, last{};
  zt_status s0 = ZT_OK, s1 = ZT_OK;
  if (dl > 0) {
    s0 = call(w, "read_range(first byte)", [&] { c.read_range(0, &first, 1); });
    s1 = call(w, "read_range(last byte)", [&] { c.read_range(dl - 1, &last, 1); });
  }
  std::vector<std::byte> buf;
  zt_status rs = ZT_ERR_INTERNAL;
  if (!zt::detail::fits_size(dl)) {
    w.problem_once(where + "decoded_length does not fit in size_t");
  } else {
    buf.resize(static_cast<std::size_t>(dl));
    rs = call(w, "read_into", [&] { c.read_into(buf); });
    if (rs == ZT_OK && dl > 0) {
      if (s0 == ZT_OK && first != buf.front()) w.problem_once(where + "range read of the first byte differs from read");
      if (s1 == ZT_OK && last != buf.back()) w.problem_once(where + "range read of the last byte differs from read");
    }
  }

  zt::tensor_view v;
  const zt_status vs = call(w, "view", [&] { v = c.view(); });
  if (vs == ZT_OK) {
    if (v.size() != dl) w.problem_once(where + "view size differs from decoded_length");
    if (v.dtype() != c.dtype()) w.problem_once(where + "view dtype differs from the component's");
    if (v.size() > 0) {
      const std::size_t align = w.foreign && v.zero_copy() ? zt::dtype_size(v.dtype()) : 64;
      if (v.data() == nullptr || reinterpret_cast<std::uintptr_t>(v.data()) % align != 0) {
        w.problem_once(where + "view data is NULL or not " + std::to_string(align) + "-byte aligned");
      } else {
        unsigned sum = 0;  // touch every byte: an out-of-bounds view shows under ASan/valgrind
        for (std::byte b : v.bytes()) sum += std::to_integer<unsigned>(b);
        (void)sum;
        if (rs == ZT_OK && std::memcmp(v.data(), buf.data(), v.size()) != 0) w.problem_once(where + "view and read bytes differ");
      }
    }
  }
  typed_for(w, c, vs == ZT_OK ? &v : nullptr);

  walk_state scratch;  // verify: NOT_FOUND means "no digest", not a failure
  const zt_status ds = call(scratch, "verify", [&] { c.verify(); });
  if (!scratch.problem.empty()) w.problem_once(where + scratch.problem);
  if (ds == ZT_ERR_NOT_FOUND) {
    if (c.digest().has_value()) w.problem_once(where + "component has a digest but verifies as NOT_FOUND");
  } else {
    if (ds != ZT_OK && w.first == ZT_OK) {
      w.first = ds;
      w.first_message = scratch.first_message;
    }
    if (!c.digest().has_value()) w.problem_once(where + "component without a digest did not verify as NOT_FOUND");
  }
}

zt_status walk(const zt::Reader& r, walk_state& w) {
  w.foreign = r.file_format() != "zt";
  for (std::size_t i = 0; i < r.size(); ++i) {
    zt::Object obj;
    if (call(w, "at", [&] { obj = r.at(i); }) != ZT_OK) continue;
    for (std::size_t c = 0; c < obj.component_count(); ++c) walk_component(obj, c, w);
    call(w, "validate", [&] { obj.validate(); });
    call(w, "attributes_json", [&] {
      if (obj.attributes_json().substr(0, 1) != "{") w.problem_once("attributes JSON is not an object");
    });
  }
  // iteration agrees with at()
  std::size_t n = 0;
  for (const zt::Object& o : r) {
    if (o.index() != n++) w.problem_once("iteration out of order");
  }
  if (n != r.size()) w.problem_once("iteration count differs from size()");
  call(w, "attributes_json(file)", [&] {
    if (r.attributes_json().substr(0, 1) != "{") w.problem_once("file attributes JSON is not an object");
  });
  call(w, "verify", [&] { r.verify(); });
  return w.first;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

TEST(Hostile, CorpusThroughTheWrapper) {
  const std::string dir = zt_test::vectors_dir() + "/hostile";
  std::ifstream tsv(dir + "/expected.tsv");
  if (!tsv) GTEST_SKIP() << "no " << dir << "/expected.tsv";
  std::string line;
  std::size_t files = 0;
  while (std::getline(tsv, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("file\t", 0) == 0) continue;
    const std::vector<std::string> f = split_tabs(line);
    ASSERT_EQ(f.size(), 4u) << "malformed expected.tsv line: " << line;
    const std::string path = dir + "/" + f[0];
    ++files;
    const std::vector<unsigned char> bytes = zt_test::slurp(path);
    zt_test::aligned_bytes aligned(bytes);
    zt::open_options pread;
    pread.no_mmap = true;
    for (int mode = 0; mode < 3; ++mode) {
      const char* mode_name = mode == 0 ? "mmap" : mode == 1 ? "pread" : "memory";
      SCOPED_TRACE(f[0] + " [" + mode_name + "] -- " + f[3]);
      walk_state opening;
      zt::Reader r;
      const zt_status os = call(opening, "open", [&] {
        r = mode == 0 ? zt::Reader::open(path) : mode == 1 ? zt::Reader::open(path, pread)
                                                           : zt::Reader::open_memory(aligned.data, aligned.size);
      });
      EXPECT_TRUE(opening.problem.empty()) << opening.problem;
      EXPECT_EQ(zt::status_name(os), f[1]) << opening.first_message;
      if (os != ZT_OK) {
        EXPECT_FALSE(r.is_open());
        continue;
      }
      walk_state w;
      const zt_status ws = walk(r, w);
      EXPECT_EQ(zt::status_name(ws), f[2]) << (ws == ZT_OK ? "no failure" : w.first_message);
      EXPECT_TRUE(w.problem.empty()) << w.problem;
    }
  }
  EXPECT_GE(files, 150u) << "expected.tsv lists too few files";
  std::cout << "[ INFO     ] walked " << files << " hostile files in 3 open modes\n";
}

}  // namespace
