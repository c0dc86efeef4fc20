// A runtime author's points on the C++ wrapper (issue 40): zt::device_callbacks offers
// every callback zt_device has (host_register/host_unregister and read_direct included),
// zt::loader_options every field of zt_loader_options (staging buffers of the caller's,
// registered with ZT_LOADER_REGISTER_STAGING or not), zt::Object::ggml_type() gives every
// tensor's ggml type, and a config.json opened by path says what to open instead.
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <vector>

#include <unistd.h>

#include "support.hpp"

namespace {

static_assert(ZT_CPP_EXCEPTIONS == 1, "this file tests the exceptions mode");

// The wrapper knows every member of the C structs: one of them growing (an appended
// callback, option or flag) fails here until zt::device_callbacks / zt::loader_options
// offer it too (and these lines name it).
static_assert(sizeof(zt_device) == offsetof(zt_device, error_string) + sizeof(void*),
              "zt_device grew: give zt::device_callbacks the new member");
// zt_loader_options ends with io (a uint32_t) and its padding to the struct's alignment.
static_assert(sizeof(zt_loader_options) ==
                  (offsetof(zt_loader_options, io) + sizeof(std::uint32_t) + alignof(zt_loader_options) - 1) /
                      alignof(zt_loader_options) * alignof(zt_loader_options),
              "zt_loader_options grew: give zt::loader_options the new member");

/// Device memory is host memory; copies are done when copy_async returns (so every event
/// is done). Counts the optional callbacks.
class host_device : public zt::device_callbacks {
 public:
  explicit host_device(std::size_t size, bool offer_all) : memory(size, 0xEE), all_(offer_all) {}

  int copy_async(void* dst, std::uint64_t offset, const void* src, std::size_t size) noexcept override {
    std::memcpy(static_cast<unsigned char*>(dst) + offset, src, size);
    copies++;
    return 0;
  }
  int event_create(void** e) noexcept override {
    *e = this;
    return 0;
  }
  int event_destroy(void*) noexcept override { return 0; }
  int event_record(void*) noexcept override { return 0; }
  int event_query(void*, bool& done) noexcept override {
    done = true;
    return 0;
  }

  bool has_host_alloc() const noexcept override { return all_; }
  int host_alloc(std::size_t size, void** out) noexcept override {
    *out = std::malloc(size);
    return *out != nullptr ? 0 : 12;
  }
  int host_free(void* p, std::size_t) noexcept override {
    std::free(p);
    return 0;
  }
  bool has_host_register() const noexcept override { return all_; }
  int host_register(void* p, std::size_t size) noexcept override {
    std::lock_guard<std::mutex> g(m);
    registered.push_back({p, size});
    return 0;
  }
  int host_unregister(void* p) noexcept override {
    std::lock_guard<std::mutex> g(m);
    unregistered.push_back(p);
    return 0;
  }
  bool has_event_wait() const noexcept override { return all_; }
  int event_wait(void*) noexcept override {
    waits++;
    return 0;
  }
  bool has_read_direct() const noexcept override { return all_; }
  int read_direct(int fd, std::uint64_t file_offset, void* dst, std::uint64_t offset, std::size_t size,
                  bool& handled) noexcept override {
    direct_calls++;
    if (decline) {
      handled = false;
      return 0;
    }
    handled = true;
    ssize_t got = ::pread(fd, static_cast<unsigned char*>(dst) + offset, size, static_cast<off_t>(file_offset));
    direct_bytes += size;
    return got == static_cast<ssize_t>(size) ? 0 : 5;
  }
  bool handles() const noexcept override { return all_; }

  std::vector<unsigned char> memory;
  std::mutex m;
  std::vector<std::pair<void*, std::size_t>> registered;
  std::vector<void*> unregistered;
  std::atomic<int> copies{0}, waits{0}, direct_calls{0};
  std::atomic<std::uint64_t> direct_bytes{0};
  bool decline = false;

 private:
  bool all_;
};

/// "a" (300 x 200 f32, raw) and "b" (64 x 96 i16, zstd).
struct model_file {
  model_file() : path(zt_test::temp_path("runtime_points")) {
    zt::Writer w = zt::Writer::create(path);
    a.resize(300 * 200);
    for (std::size_t i = 0; i < a.size(); i++) a[i] = static_cast<float>(i) * 0.5f - 7.0f;
    w.add("a", a, {300, 200});
    std::vector<std::int16_t> b(64 * 96);
    for (std::size_t i = 0; i < b.size(); i++) b[i] = static_cast<std::int16_t>(i * 5 - 1000);
    w.add("b", b, {64, 96}, zt::write_options::zstd(1));
    w.finish();
  }
  ~model_file() { zt_test::remove(path); }
  std::string path;
  std::vector<float> a;
};

TEST(DeviceCallbacks, EveryCallbackOfTheCStructIsOffered) {
  host_device all(16, true), bare(16, false);
  const zt_device d = all.callbacks(), b = bare.callbacks();
  EXPECT_EQ(d.struct_size, sizeof(zt_device));
  EXPECT_EQ(d.flags, static_cast<std::uint32_t>(ZT_DEVICE_HANDLES));
  EXPECT_EQ(d.context, static_cast<void*>(&all));
  EXPECT_NE(d.host_alloc, nullptr);
  EXPECT_NE(d.host_free, nullptr);
  EXPECT_NE(d.host_register, nullptr);
  EXPECT_NE(d.host_unregister, nullptr);
  EXPECT_NE(d.copy_async, nullptr);
  EXPECT_NE(d.event_create, nullptr);
  EXPECT_NE(d.event_destroy, nullptr);
  EXPECT_NE(d.event_record, nullptr);
  EXPECT_NE(d.event_query, nullptr);
  EXPECT_NE(d.event_wait, nullptr);
  EXPECT_NE(d.read_direct, nullptr);
  EXPECT_NE(d.error_string, nullptr);
  // Without has_*(), the optional ones are NULL: the loader then does without them.
  EXPECT_EQ(b.flags, 0u);
  EXPECT_EQ(b.host_alloc, nullptr);
  EXPECT_EQ(b.host_free, nullptr);
  EXPECT_EQ(b.host_register, nullptr);
  EXPECT_EQ(b.host_unregister, nullptr);
  EXPECT_EQ(b.event_wait, nullptr);
  EXPECT_EQ(b.read_direct, nullptr);
  EXPECT_NE(b.copy_async, nullptr);

  // Each C entry point reaches the object's override, and translates its arguments.
  int x = 0;
  ASSERT_EQ(d.host_register(d.context, &x, sizeof x), 0);
  ASSERT_EQ(d.host_unregister(d.context, &x), 0);
  ASSERT_EQ(all.registered.size(), 1u);
  EXPECT_EQ(all.registered[0].first, static_cast<void*>(&x));
  EXPECT_EQ(all.registered[0].second, sizeof x);
  EXPECT_EQ(all.unregistered, std::vector<void*>({&x}));
  int handled = 7;
  all.decline = true;
  EXPECT_EQ(d.read_direct(d.context, -1, 0, nullptr, 0, 0, &handled), 0);
  EXPECT_EQ(handled, 0);
  EXPECT_EQ(d.event_wait(d.context, nullptr), 0);
  EXPECT_EQ(all.waits.load(), 1);
}

TEST(LoaderOptions, StagingOfYoursRegisteredOrNot) {
  model_file f;
  zt::Reader r = zt::Reader::open(f.path);
  host_device dev(1 << 20, true);
  dev.decline = true;  // everything through the caller's staging buffers
  zt_device d = dev.callbacks();
  d.host_alloc = nullptr;  // the loader must not allocate: the buffers are ours
  d.host_free = nullptr;
  d.flags = 0;
  std::vector<std::vector<unsigned char>> buffers(3, std::vector<unsigned char>(64 << 10));
  zt::loader_options o;
  o.staging_size = 64 << 10;
  for (auto& b : buffers) o.staging.push_back(b.data());
  o.register_staging = true;
  const std::set<void*> ours(o.staging.begin(), o.staging.end());
  {
    zt::Loader loader = zt::Loader::create(&d, o);
    ASSERT_EQ(dev.registered.size(), 3u);
    for (const auto& reg : dev.registered) {
      EXPECT_TRUE(ours.count(reg.first)) << reg.first;
      EXPECT_EQ(reg.second, std::size_t(64) << 10);
    }
    unsigned char* base = dev.memory.data();
    std::vector<zt_loader_request> q = {
        zt::load_request(0, base, 300 * 200 * 4),
        zt::load_request(0, base + 300 * 200 * 4, 300 * 8 * 4).columns(192, 8),
        zt::load_request(1, base + 300 * 208 * 4, 10 * 96 * 4).rows(5, 10).convert(zt::dtype::i32),
    };
    loader.load(r, q);
    EXPECT_EQ(std::memcmp(base, f.a.data(), f.a.size() * 4), 0);
    for (std::size_t row = 0; row < 300; row++)
      EXPECT_EQ(std::memcmp(base + (300 * 200 + row * 8) * 4, &f.a[row * 200 + 192], 8 * 4), 0) << row;
    std::vector<std::int32_t> b = r["b"].read_as<std::int32_t>();
    EXPECT_EQ(std::memcmp(base + 300 * 208 * 4, &b[5 * 96], 10 * 96 * 4), 0);
    const zt_loader_stats st = loader.stats();
    EXPECT_EQ(st.pinned, 1u);
    EXPECT_EQ(st.staging_count, 3u);
    EXPECT_EQ(st.staging_size, std::uint64_t(64) << 10);
    EXPECT_TRUE(dev.unregistered.empty());
  }
  // Freed with the Loader: each buffer unregistered once.
  EXPECT_EQ(std::set<void*>(dev.unregistered.begin(), dev.unregistered.end()), ours);
  EXPECT_EQ(dev.unregistered.size(), 3u);

  // Not registered: staged in as they are (pageable), nothing registered.
  o.register_staging = false;
  {
    zt::Loader loader = zt::Loader::create(&d, o);
    EXPECT_EQ(loader.stats().pinned, 0u);
    std::vector<zt_loader_request> q = {zt::load_request(0, dev.memory.data(), 300 * 200 * 4)};
    std::memset(dev.memory.data(), 0, 300 * 200 * 4);
    loader.load(r, q);
    EXPECT_EQ(std::memcmp(dev.memory.data(), f.a.data(), f.a.size() * 4), 0);
  }
  EXPECT_EQ(dev.registered.size(), 3u);

  // A count that isn't the vector's is refused before the library reads past it.
  o.staging_count = 4;
  zt::result<zt::Loader> bad = zt::Loader::try_create(&d, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status(), ZT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bad.message(), "staging_count 4 but 3 staging buffers");
  // The library's own checks come through: a NULL buffer.
  o.staging_count = 0;
  o.staging[2] = nullptr;
  EXPECT_THROW(zt::Loader::create(&d, o), zt::invalid_argument);
  // Other flags pass through as they are: an unknown one is refused by the library.
  o.staging.clear();
  o.flags = 1u << 30;
  EXPECT_THROW(zt::Loader::create(&d, o), zt::invalid_argument);
}

TEST(DeviceCallbacks, ReadDirectFromTheFileIntoDeviceMemory) {
  model_file f;
  zt::Reader r = zt::Reader::open(f.path);
  host_device dev(1 << 20, true);
  zt_device d = dev.callbacks();
  d.flags = 0;  // addresses, so that rows land at dst + offset
  zt::loader_options o;
  o.staging_size = 64 << 10;
  zt::Loader loader = zt::Loader::create(&d, o);
  unsigned char* base = dev.memory.data();
  std::vector<zt_loader_request> q = {
      zt::load_request(0, base, 300 * 200 * 4),                              // raw, whole: direct
      zt::load_request(0, base + 300 * 200 * 4, 20 * 200 * 4).rows(100, 20),  // raw rows: direct
      zt::load_request(1, base + 320 * 200 * 4, 64 * 96 * 2),                // zstd: staged
  };
  loader.load(r, q);
  EXPECT_EQ(std::memcmp(base, f.a.data(), f.a.size() * 4), 0);
  EXPECT_EQ(std::memcmp(base + 300 * 200 * 4, &f.a[100 * 200], 20 * 200 * 4), 0);
  std::vector<std::int16_t> b = r["b"].read<std::int16_t>();
  EXPECT_EQ(std::memcmp(base + 320 * 200 * 4, b.data(), b.size() * 2), 0);
  const zt_loader_stats st = loader.stats();
  EXPECT_GT(st.direct_reads, 0u);
  EXPECT_EQ(st.direct_reads, static_cast<std::uint64_t>(dev.direct_calls.load()));
  EXPECT_EQ(dev.direct_bytes.load(), std::uint64_t(320) * 200 * 4);  // every raw byte, none of b's

  // Declined: the same bytes through staging.
  dev.decline = true;
  std::memset(base, 0, 330 * 200 * 4);
  zt::Loader staged = zt::Loader::create(&d, o);
  staged.load(r, q);
  EXPECT_EQ(std::memcmp(base, f.a.data(), f.a.size() * 4), 0);
  EXPECT_EQ(std::memcmp(base + 300 * 200 * 4, &f.a[100 * 200], 20 * 200 * 4), 0);
  EXPECT_EQ(staged.stats().direct_reads, 0u);
  EXPECT_GT(dev.direct_calls.load(), static_cast<int>(st.direct_reads));
}

TEST(Object, GgmlTypeOfDenseAndQuantizedTensors) {
  // A llama.cpp-style GGUF (gguf-py's): every tensor has the type gguf_get_tensor_type gives,
  // its dense f32 and f16 ones included; quant_info() agrees for the quantized ones.
  zt::Reader g = zt::Reader::open(zt_test::vectors_dir() + "/gguf/llama_tiny.gguf");
  int dense = 0, quantized = 0;
  for (const zt::Object& o : g) {
    const zt::ggml_type t = o.ggml_type();
    if (o.is_quantized()) {
      quantized++;
      EXPECT_EQ(t.id, o.quant_info().ggml_type) << o.name();
      EXPECT_EQ(t.name, o.quant_info().name) << o.name();
    } else {
      dense++;
      ASSERT_EQ(o.format(), "dense") << o.name();
      const zt::dtype d = o.component("data").dtype();
      EXPECT_EQ(t.id, d == zt::dtype::f32 ? 0u : d == zt::dtype::f16 ? 1u : 99u) << o.name();
      EXPECT_EQ(t.name, d == zt::dtype::f32 ? "F32" : "F16") << o.name();
    }
  }
  EXPECT_GT(dense, 0);
  EXPECT_GT(quantized, 0);

  // Any format: a safetensors bf16 tensor is BF16 (30); a u8 one has no ggml type.
  zt::Reader s = zt::Reader::open(zt_test::vectors_dir() + "/safetensors/dtypes.safetensors");
  EXPECT_EQ(s["t.bfloat16"].ggml_type().id, 30u);
  EXPECT_EQ(s["t.bfloat16"].ggml_type().name, "BF16");
  EXPECT_EQ(s["t.int8"].ggml_type().id, 24u);
  try {
    (void)s["t.uint8"].ggml_type();
    ADD_FAILURE() << "a u8 tensor has a ggml type";
  } catch (const zt::not_found& e) {
    EXPECT_NE(std::string(e.what()).find("object 't.uint8' (dense u8) has no ggml type"), std::string::npos) << e.what();
  }
}

TEST(Reader, AConfigJsonByPathSaysWhatToOpen) {
  const std::string path = "config.json";
  {
    std::ofstream out(path);
    out << "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64}\n";
  }
  try {
    (void)zt::Reader::open(path);
    ADD_FAILURE() << "config.json opened";
  } catch (const zt::format_error& e) {
    EXPECT_STREQ(e.what(),
                 "config.json: a JSON file, not a tensor file (it starts \"{\\\"archit\"): a model's configuration "
                 "(config.json, tokenizer.json ...) holds no tensors; open its weights (*.safetensors, *.gguf, *.bin "
                 "...) by their paths, or a sharded set by the path of its *.index.json");
  }
  zt_test::remove(path);
}

}  // namespace
