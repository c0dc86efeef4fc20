// zt::Loader, zt::load_request, zt::device_callbacks, zt::Cuda (exceptions mode): a
// device of C++ callbacks whose copies complete on a thread of their own, column and row
// slices and conversions landing byte for byte, callbacks as std::function (an exception
// thrown in one cancels the load and comes out of load()), and the CUDA backend refusing
// cleanly where there is no driver.
#include <ztensor.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support.hpp"

namespace {

static_assert(ZT_CPP_EXCEPTIONS == 1, "this file tests the exceptions mode");

/// Device memory is a host vector; copies run on a worker thread in order.
class thread_device : public zt::device_callbacks {
 public:
  explicit thread_device(std::size_t size) : memory(size, 0xEE), worker([this] { run(); }) {}
  ~thread_device() override {
    {
      std::lock_guard<std::mutex> g(m);
      stop = true;
    }
    cv.notify_all();
    worker.join();
  }
  int copy_async(void* dst, std::uint64_t offset, const void* src, std::size_t size) noexcept override {
    std::lock_guard<std::mutex> g(m);
    ops.push_back({static_cast<unsigned char*>(dst) + offset, static_cast<const unsigned char*>(src), size});
    issued++;
    cv.notify_all();
    return 0;
  }
  int event_create(void** e) noexcept override {
    *e = new std::uint64_t(0);
    return 0;
  }
  int event_destroy(void* e) noexcept override {
    delete static_cast<std::uint64_t*>(e);
    return 0;
  }
  int event_record(void* e) noexcept override {
    std::lock_guard<std::mutex> g(m);
    *static_cast<std::uint64_t*>(e) = issued;
    return 0;
  }
  int event_query(void* e, bool& done) noexcept override {
    std::lock_guard<std::mutex> g(m);
    done = completed >= *static_cast<std::uint64_t*>(e);
    return 0;
  }
  bool has_event_wait() const noexcept override { return true; }
  int event_wait(void* e) noexcept override {
    std::unique_lock<std::mutex> g(m);
    cv.wait(g, [&] { return completed >= *static_cast<std::uint64_t*>(e); });
    return 0;
  }

  std::vector<unsigned char> memory;

 private:
  struct op {
    unsigned char* dst;
    const unsigned char* src;
    std::size_t size;
  };
  void run() {
    std::unique_lock<std::mutex> g(m);
    for (;;) {
      cv.wait(g, [&] { return stop || !ops.empty(); });
      if (ops.empty()) return;
      op o = ops.front();
      ops.pop_front();
      g.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(30));
      std::memcpy(o.dst, o.src, o.size);
      g.lock();
      completed++;
      cv.notify_all();
    }
  }
  std::mutex m;
  std::condition_variable cv;
  std::deque<op> ops;
  std::uint64_t issued = 0, completed = 0;
  bool stop = false;
  std::thread worker;
};

struct model_file {
  model_file() : path(zt_test::temp_path("loader")) {
    zt::Writer w = zt::Writer::create(path);
    std::vector<float> a(300 * 200);
    for (std::size_t i = 0; i < a.size(); i++) a[i] = static_cast<float>(i) * 0.25f;
    w.add("a", a, {300, 200});
    std::vector<std::int16_t> b(64 * 96);
    for (std::size_t i = 0; i < b.size(); i++) b[i] = static_cast<std::int16_t>(i * 3);
    w.add("b", b, {64, 96}, zt::write_options::zstd(1));
    w.finish();
  }
  ~model_file() { zt_test::remove(path); }
  std::string path;
};

TEST(Loader, SlicesLandOnADeviceOfCallbacks) {
  model_file f;
  zt::Reader r = zt::Reader::open(f.path);
  thread_device dev(1 << 20);
  zt_device d = dev.callbacks();
  std::vector<int> calls(3, 0);
  std::uint64_t last = 0;
  zt::loader_options o;
  o.readers = 2;
  o.staging_count = 3;
  o.staging_size = 64 << 10;
  o.on_complete = [&](std::size_t i, zt_status s, std::uint64_t) {
    EXPECT_EQ(s, ZT_OK);
    calls.at(i)++;
  };
  o.on_progress = [&](std::uint64_t done, std::uint64_t) {
    EXPECT_GE(done, last);
    last = done;
  };
  zt::Loader loader = zt::Loader::create(&d, o);
  unsigned char* base = dev.memory.data();
  std::vector<zt_loader_request> q = {
      zt::load_request(0, base, 300 * 200 * 4),
      zt::load_request(0, base + 300 * 200 * 4, 300 * 50 * 4).columns(100, 50),
      zt::load_request(1, base + 300 * 250 * 4, 10 * 96 * 4).rows(5, 10).convert(zt::dtype::i32),
  };
  loader.load(r, q);
  EXPECT_EQ(calls, std::vector<int>({1, 1, 1}));
  std::vector<float> a = r["a"].read<float>();
  EXPECT_EQ(std::memcmp(base, a.data(), a.size() * 4), 0);
  for (std::size_t row = 0; row < 300; row++)
    EXPECT_EQ(std::memcmp(base + (300 * 200 + row * 50) * 4, &a[row * 200 + 100], 50 * 4), 0) << row;
  std::vector<std::int32_t> b = r["b"].read_as<std::int32_t>();
  EXPECT_EQ(std::memcmp(base + 300 * 250 * 4, &b[5 * 96], 10 * 96 * 4), 0);
  EXPECT_EQ(q[2].status, static_cast<std::uint32_t>(ZT_OK));
  EXPECT_EQ(q[2].bytes, 10u * 96 * 4);
  EXPECT_TRUE(loader.stats().pinned == 0);  // no host_alloc: pageable staging of its own
  EXPECT_EQ(loader.stats().loads, 1u);
}

TEST(Loader, HostDestinationsAndACallbackThatThrows) {
  model_file f;
  zt::Reader r = zt::Reader::open(f.path);
  std::vector<float> whole(300 * 200), cols(300 * 8);
  zt::loader_options o;
  o.staging_size = 64 << 10;
  std::atomic<int> done{0};
  o.on_complete = [&](std::size_t, zt_status, std::uint64_t) { done++; };
  zt::Loader loader = zt::Loader::create(nullptr, o);
  std::vector<zt_loader_request> q = {
      zt::load_request(0, whole.data(), whole.size() * 4).host(),
      zt::load_request(0, cols.data(), cols.size() * 4).host().columns(192, 8),
  };
  loader.load(r, q);
  EXPECT_EQ(done.load(), 2);
  std::vector<float> a = r["a"].read<float>();
  EXPECT_EQ(whole, a);
  for (std::size_t row = 0; row < 300; row++) EXPECT_EQ(cols[row * 8 + 7], a[row * 200 + 199]);

  zt::loader_options t;
  t.staging_size = 64 << 10;
  t.on_complete = [](std::size_t, zt_status, std::uint64_t) { throw std::runtime_error("from a callback"); };
  zt::Loader throwing = zt::Loader::create(nullptr, t);
  EXPECT_THROW(
      {
        try {
          throwing.load(r, q);
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "from a callback");
          throw;
        }
      },
      std::runtime_error);

  // A request the file can't satisfy: zt::invalid_argument, and its status.
  std::vector<zt_loader_request> bad = {zt::load_request(0, cols.data(), 5).host().rows(299, 2)};
  EXPECT_THROW(loader.load(r, bad), zt::invalid_argument);
  EXPECT_EQ(bad[0].status, static_cast<std::uint32_t>(ZT_ERR_INVALID_ARGUMENT));

  // A moved-from Loader has no handle: refused, not a crash.
  zt::Loader moved = std::move(loader);
  EXPECT_EQ(loader.handle(), nullptr);
  EXPECT_THROW(loader.load(r, q), zt::invalid_argument);
  moved.load(r, q);
  EXPECT_EQ(done.load(), 5);  // 2, the refused request, and 2 more
}

TEST(Loader, RequestsByObjectSizedRangesBudgetsAndCancel) {
  model_file f;
  zt::Reader r = zt::Reader::open(f.path);
  zt::Object a = r["a"];
  std::vector<float> all = a.read<float>();
  // The exact size of a slice converted, without a buffer yet.
  EXPECT_EQ(zt::load_request(a, nullptr, 0).host().columns(10, 20).convert(zt::dtype::f64).size(r), 300u * 20 * 8);
  EXPECT_EQ(zt::load_request(1, nullptr, 0).host().rows(2, 3).size(r), 3u * 96 * 2);
  EXPECT_THROW(zt::load_request(a, nullptr, 0).rows(299, 2).size(r), zt::invalid_argument);
  std::vector<double> cols(300 * 20);
  std::vector<float> part(100);
  std::vector<zt_loader_request> q = {
      zt::load_request(a, cols.data(), 0).host().columns(10, 20).convert(zt::dtype::f64).sized(r),
      // Bytes 1000.. of the component: floats 250..350.
      zt::load_request(a, part.data(), 400).host().range(1000, 400),
  };
  zt::loader_options o;
  o.max_bytes_in_flight = 4 << 20;
  o.io = zt::io_mode::pread;
  zt::Loader loader = zt::Loader::create(nullptr, o);
  loader.load(r, q);
  for (std::size_t row = 0; row < 300; row++)
    for (std::size_t c = 0; c < 20; c++) EXPECT_EQ(cols[row * 20 + c], static_cast<double>(all[row * 200 + 10 + c]));
  EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + 250));
  zt_loader_stats st = loader.stats();
  EXPECT_EQ(st.max_bytes_in_flight, 4u << 20);
  EXPECT_LE(st.peak_bytes_in_flight, st.max_bytes_in_flight);
  // A cancel while nothing runs stops the next load: zt::canceled.
  loader.cancel();
  EXPECT_THROW(loader.load(r, q), zt::canceled);
  loader.load(r, q);  // and only that one
}

TEST(Loader, LoadsFromTwoThreadsTakeTurns) {
  model_file f;
  zt::Reader r = zt::Reader::open(f.path);
  std::vector<float> all = r["a"].read<float>();
  for (bool queue : {true, false}) {
    std::mutex m;
    std::condition_variable cv;
    bool inside = false, release = false;
    zt::loader_options o;
    o.queue = queue;
    o.readers = 1;
    o.on_complete = [&](std::size_t, zt_status, std::uint64_t) {
      std::unique_lock<std::mutex> g(m);
      if (inside) return;  // only the first load's first request waits
      inside = true;
      cv.notify_all();
      cv.wait(g, [&] { return release; });
    };
    zt::Loader loader = zt::Loader::create(nullptr, o);
    std::vector<float> first(300 * 200), second(300 * 200);
    std::vector<zt_loader_request> q1 = {zt::load_request(0, first.data(), first.size() * 4).host()};
    std::vector<zt_loader_request> q2 = {zt::load_request(0, second.data(), second.size() * 4).host()};
    std::thread t([&] { loader.load(r, q1); });
    {
      std::unique_lock<std::mutex> g(m);
      cv.wait(g, [&] { return inside; });
    }
    if (queue) {
      // Waits for the first, then loads.
      std::thread release_soon([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        std::lock_guard<std::mutex> g(m);
        release = true;
        cv.notify_all();
      });
      loader.load(r, q2);
      release_soon.join();
      EXPECT_EQ(second, all);
    } else {
      EXPECT_THROW(loader.load(r, q2), zt::state_error);
      std::lock_guard<std::mutex> g(m);
      release = true;
      cv.notify_all();
    }
    t.join();
    EXPECT_EQ(first, all);
  }
}

TEST(Loader, TheCudaBackendRefusesCleanlyWithoutADriver) {
  zt::Cuda::options o;
  o.library = "/nonexistent/libcuda.so.1";
  zt::result<zt::Cuda> c = zt::Cuda::try_open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status(), ZT_ERR_UNSUPPORTED);
  EXPECT_NE(c.message().find("/nonexistent/libcuda.so.1"), std::string::npos) << c.message();
  EXPECT_THROW(zt::Cuda::open(o), zt::unsupported);
}

}  // namespace
