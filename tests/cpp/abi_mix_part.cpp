// One part of the cpp_abi_mix test: compiled four times, once per configuration of the
// wrapper (exceptions or ZT_NO_EXCEPTIONS, C++17 or C++20), at -O0 so that nothing is
// inlined, and linked with abi_mix_main.cpp into one program. Each part defines
// ZT_ABI_PART (a function name, given with -D) that writes a file, reads it back and
// fails a missing file, through calls whose return types differ between configurations
// (Reader::open, Object::shape, tensor_view::bytes ...). If the configurations shared
// mangled names, the linker would keep one definition of each for all four parts and
// some part would get the wrong one.
#include <ztensor.hpp>

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#ifndef ZT_ABI_PART
#error "define ZT_ABI_PART to the name of this part's function"
#endif
#define ZT_ABI_STR2(x) #x
#define ZT_ABI_STR(x) ZT_ABI_STR2(x)
#define ZT_ABI_PART_NAME ZT_ABI_STR(ZT_ABI_PART)

namespace {
int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s: FAIL: %s\n", ZT_ABI_PART_NAME, what);
    ++failures;
  }
}

#if ZT_CPP_EXCEPTIONS
template <class T>
T get(T value) { return value; }
#else
template <class T>
T get(zt::result<T>&& r) {
  if (!r.ok()) std::fprintf(stderr, "%s: %s\n", ZT_ABI_PART_NAME, r.message().c_str());
  return std::move(r).value();  // aborts on failure
}
#endif
}  // namespace

extern "C" int ZT_ABI_PART(const char* path, int* exceptions, int* std_span) {
  *exceptions = ZT_CPP_EXCEPTIONS;
  *std_span = ZT_CPP_STD_SPAN;
#if ZT_CPP_STD_SPAN
  static_assert(std::is_same_v<zt::span<const std::uint64_t>, std::span<const std::uint64_t>>);
#endif

  const std::vector<float> data = {1, 2, 3, 4, 5, 6};
  {
    zt::Writer w = get(zt::Writer::create(path));
#if ZT_CPP_EXCEPTIONS
    w.add("t", data, {2, 3});
    w.finish();
#else
    expect(w.add("t", data, {2, 3}).ok(), "add");
    expect(w.finish().ok(), "finish");
#endif
  }

  const zt::Reader r = get(zt::Reader::open(path));
  const zt::Object t = get(r["t"]);
  const zt::span<const std::uint64_t> shape = t.shape();
  expect(shape.size() == 2 && shape[0] == 2 && shape[1] == 3, "shape");
  const zt::tensor_view v = get(t.view());
  const zt::span<const std::byte> bytes = v.bytes();
  expect(bytes.size() == 24, "bytes");
  const zt::span<const float> f = get(v.as<float>());
  expect(f.size() == 6 && f[5] == 6.0f, "as<float>");
  expect(get(t.read_as<double>()) == std::vector<double>{1, 2, 3, 4, 5, 6}, "read_as<double>");

  const std::string missing = std::string(path) + ".missing";
#if ZT_CPP_EXCEPTIONS
  bool threw = false;
  try {
    (void)zt::Reader::open(missing);
  } catch (const zt::io_error& e) {
    threw = e.status() == ZT_ERR_IO;
  }
  expect(threw, "open(missing) throws zt::io_error");
  threw = false;
  try {
    (void)r["absent"];
  } catch (const zt::not_found&) {
    threw = true;
  }
  expect(threw, "reader[\"absent\"] throws zt::not_found");
#else
  zt::result<zt::Reader> opened = zt::Reader::open(missing);
  expect(!opened.ok() && opened.status() == ZT_ERR_IO && !opened.message().empty(), "open(missing) is ZT_ERR_IO");
  expect(r["absent"].status() == ZT_ERR_NOT_FOUND, "reader[\"absent\"] is ZT_ERR_NOT_FOUND");
#endif
  return failures;
}
