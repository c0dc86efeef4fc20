// Every test vector (X.zt with its X.json description, anywhere under the directory given
// as the first argument, normally <repo>/tests/vectors) reads through the C++ wrapper
// exactly as described: version, attributes, objects, components, decoded bytes; views,
// copies, ranges, memory and pread opening agree; digests verify.
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

// ---- a small JSON reader, enough for the vector descriptions ----------------------------

struct json {
  enum kind_t { null, boolean, number, string, array, object } kind = null;
  bool flag = false;
  std::string text;               // number literal or string value
  std::vector<std::string> keys;  // object keys, parallel to items
  std::vector<json> items;        // array elements or object values

  const json* get(const std::string& key) const {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == key) return &items[i];
    return nullptr;
  }
};

class json_parser {
 public:
  explicit json_parser(const std::string& s) : s_(s) {}
  bool parse(json& out) {
    if (!value(out, 0)) return false;
    skip();
    return pos_ == s_.size();
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::strchr(" \t\r\n", s_[pos_]) != nullptr && s_[pos_] != '\0') ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool literal(const char* word) {
    const std::size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }
  static void utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  bool hex4(unsigned long& v) {
    if (pos_ + 4 > s_.size()) return false;
    v = std::strtoul(s_.substr(pos_, 4).c_str(), nullptr, 16);
    pos_ += 4;
    return true;
  }
  bool str(std::string& out) {
    if (!eat('"')) return false;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return false;
      char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          unsigned long cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00 && s_.compare(pos_, 2, "\\u") == 0) {
            pos_ += 2;
            unsigned long lo = 0;
            if (!hex4(lo)) return false;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          utf8(out, cp);
          break;
        }
        default: out += e;
      }
    }
    return false;
  }
  bool value(json& out, int depth) {
    if (depth > 64) return false;
    skip();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      out.kind = json::object;
      if (eat('}')) return true;
      do {
        std::string key;
        json v;
        if (!str(key) || !eat(':') || !value(v, depth + 1)) return false;
        out.keys.push_back(key);
        out.items.push_back(v);
      } while (eat(','));
      return eat('}');
    }
    if (c == '[') {
      ++pos_;
      out.kind = json::array;
      if (eat(']')) return true;
      do {
        json v;
        if (!value(v, depth + 1)) return false;
        out.items.push_back(v);
      } while (eat(','));
      return eat(']');
    }
    if (c == '"') {
      out.kind = json::string;
      return str(out.text);
    }
    if (literal("null")) return true;
    if (literal("true") || literal("false")) {
      out.kind = json::boolean;
      out.flag = s_[pos_ - 1] == 'e' && s_[pos_ - 2] == 'u';
      return true;
    }
    const std::size_t start = pos_;
    while (pos_ < s_.size() && std::strchr("+-0123456789.eE", s_[pos_]) != nullptr && s_[pos_] != '\0') ++pos_;
    if (pos_ == start) return false;
    out.kind = json::number;
    out.text = s_.substr(start, pos_ - start);
    return true;
  }

  const std::string& s_;
  std::size_t pos_ = 0;
};

bool is_integer(const std::string& t) { return t.find_first_of(".eE") == std::string::npos; }

bool same(const json& a, const json& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case json::null: return true;
    case json::boolean: return a.flag == b.flag;
    case json::number:
      if (is_integer(a.text) && is_integer(b.text)) return a.text == b.text;
      return std::strtod(a.text.c_str(), nullptr) == std::strtod(b.text.c_str(), nullptr);
    case json::string: return a.text == b.text;
    case json::array:
      if (a.items.size() != b.items.size()) return false;
      for (std::size_t i = 0; i < a.items.size(); ++i)
        if (!same(a.items[i], b.items[i])) return false;
      return true;
    case json::object:
      if (a.keys.size() != b.keys.size()) return false;
      for (std::size_t i = 0; i < a.keys.size(); ++i) {
        const json* other = b.get(a.keys[i]);
        if (other == nullptr || !same(a.items[i], *other)) return false;
      }
      return true;
  }
  return false;
}

json parse_or_fail(const std::string& text, const std::string& what) {
  json out;
  EXPECT_TRUE(json_parser(text).parse(out)) << what << ": not JSON: " << text.substr(0, 200);
  return out;
}

json empty_object() {
  json j;
  j.kind = json::object;
  return j;
}

std::string text_of(const json* j) { return j != nullptr && j->kind == json::string ? j->text : std::string("<missing>"); }

// ---- the check ---------------------------------------------------------------------------

std::vector<std::string> vector_files() {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  const fs::path root = zt_test::vectors_dir();
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".zt" && fs::exists(fs::path(p).replace_extension(".json"))) files.push_back(p.string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void check_component(const zt::Object& obj, const zt::Component& c, const json& want, const std::string& ctx,
                     const zt::Reader& mem, const zt::Reader& pread) {
  EXPECT_EQ(c.role(), text_of(want.get("role"))) << ctx;
  EXPECT_EQ(zt::dtype_name(c.dtype()), text_of(want.get("dtype"))) << ctx;
  const json* type = want.get("type");
  if (type == nullptr || type->kind == json::null) {
    EXPECT_FALSE(c.type().has_value()) << ctx;
  } else {
    EXPECT_EQ(c.type().value_or("<none>"), type->text) << ctx;
  }
  EXPECT_EQ(zt::encoding_name(c.encoding()), text_of(want.get("encoding"))) << ctx;
  const json* digest = want.get("digest");
  if (digest == nullptr || digest->kind == json::null) {
    EXPECT_FALSE(c.digest().has_value()) << ctx;
  } else {
    EXPECT_EQ(c.digest().value_or("<none>"), digest->text) << ctx;
    EXPECT_NO_THROW(c.verify()) << ctx;
  }

  std::vector<std::byte> data(static_cast<std::size_t>(c.decoded_length()));
  c.read_into(data);
  EXPECT_EQ(zt_test::hex(data.data(), data.size()), text_of(want.get("data_hex"))) << ctx << ": decoded bytes";

  zt::tensor_view v = c.view();
  EXPECT_EQ(v.size(), data.size()) << ctx;
  EXPECT_EQ(v.dtype(), c.dtype()) << ctx;
  EXPECT_TRUE(data.empty() || std::memcmp(v.data(), data.data(), data.size()) == 0) << ctx << ": view";
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % 64, 0u) << ctx << ": view alignment";

  if (!data.empty()) {
    const std::size_t mid = data.size() / 3, len = data.size() - mid;
    std::vector<std::byte> part(len);
    c.read_range(mid, part);
    EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + static_cast<std::ptrdiff_t>(mid))) << ctx << ": range";
  }
  for (const zt::Reader* other : {&mem, &pread}) {
    zt::tensor_view ov = (*other)[obj.name()].view(c.role());
    EXPECT_TRUE(data.empty() || std::memcmp(ov.data(), data.data(), data.size()) == 0) << ctx << ": other reader";
  }
}

void check_file(const std::string& path) {
  SCOPED_TRACE(path);
  std::ifstream in(std::filesystem::path(path).replace_extension(".json"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const json expected = parse_or_fail(buffer.str(), path);
  const std::string file = std::filesystem::path(path).filename().string();

  zt::Reader r = zt::Reader::open(path);
  const std::vector<unsigned char> bytes = zt_test::slurp(path);
  zt_test::aligned_bytes aligned(bytes);
  zt::Reader mem = zt::Reader::open_memory(aligned.data, aligned.size);
  zt::open_options no_mmap;
  no_mmap.no_mmap = true;
  zt::Reader pread = zt::Reader::open(path, no_mmap);

  EXPECT_EQ(r.version(), text_of(expected.get("version"))) << file;
  const json* want_attrs = expected.get("attributes");
  const json file_attrs = parse_or_fail(std::string(r.attributes_json()), file);
  EXPECT_TRUE(same(file_attrs, want_attrs != nullptr ? *want_attrs : empty_object()))
      << file << ": file attributes " << r.attributes_json();

  const json* objects = expected.get("objects");
  ASSERT_NE(objects, nullptr) << file;
  std::vector<zt::Object> ours(r.begin(), r.end());
  std::sort(ours.begin(), ours.end(), [](const zt::Object& a, const zt::Object& b) { return a.name() < b.name(); });
  ASSERT_EQ(ours.size(), objects->items.size()) << file << ": object count";
  EXPECT_EQ(r.size(), ours.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const zt::Object& obj = ours[i];
    const json& want = objects->items[i];
    const std::string octx = file + " object '" + std::string(obj.name()) + "'";
    EXPECT_EQ(obj.name(), text_of(want.get("name"))) << octx;
    EXPECT_EQ(obj.format(), text_of(want.get("format"))) << octx;
    EXPECT_TRUE(r.contains(obj.name())) << octx;
    EXPECT_EQ(r[obj.name()].index(), obj.index()) << octx;
    const json* shape = want.get("shape");
    ASSERT_NE(shape, nullptr) << octx;
    std::vector<std::string> want_shape, our_shape;
    for (const json& d : shape->items) want_shape.push_back(d.text);
    for (std::uint64_t d : obj.shape()) our_shape.push_back(std::to_string(d));
    EXPECT_EQ(our_shape, want_shape) << octx;
    const json* oattrs = want.get("attributes");
    EXPECT_TRUE(same(parse_or_fail(std::string(obj.attributes_json()), octx), oattrs != nullptr ? *oattrs : empty_object()))
        << octx << ": attributes " << obj.attributes_json();

    const json* comps = want.get("components");
    ASSERT_NE(comps, nullptr) << octx;
    std::vector<zt::Component> cs(obj.components().begin(), obj.components().end());
    std::sort(cs.begin(), cs.end(), [](const zt::Component& a, const zt::Component& b) { return a.role() < b.role(); });
    ASSERT_EQ(cs.size(), comps->items.size()) << octx << ": component count";
    for (std::size_t k = 0; k < cs.size(); ++k)
      check_component(obj, cs[k], comps->items[k], octx + " component '" + std::string(cs[k].role()) + "'", mem, pread);
    EXPECT_NO_THROW(obj.validate()) << octx;
    EXPECT_NO_THROW(obj.verify()) << octx;
  }
  EXPECT_NO_THROW(r.verify()) << file;
}

TEST(Vectors, EveryVectorReadsAsDescribed) {
  const std::vector<std::string> files = vector_files();
  if (files.empty()) GTEST_SKIP() << "no test vectors under " << zt_test::vectors_dir();
  bool v12 = false, v01 = false;
  for (const std::string& f : files) {
    const std::string name = std::filesystem::path(f).filename().string();
    v12 = v12 || name.rfind("v12_", 0) == 0;
    v01 = v01 || name.rfind("v01_", 0) == 0;
    check_file(f);
  }
  EXPECT_TRUE(v12) << "no v1.2 vectors";
  EXPECT_TRUE(v01) << "no v0.1 vectors";
  std::cout << "[ INFO     ] checked " << files.size() << " vectors\n";
}

}  // namespace
