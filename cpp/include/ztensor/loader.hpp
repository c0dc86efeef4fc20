// ztensor/loader.hpp: part of ztensor.hpp (include that). The staged loader: zt::Loader
// (zt_loader), zt::load_request builders, zt::device_callbacks (a zt_device made from a
// class of yours) and zt::Cuda (the CUDA backend, zt_cuda).
#ifndef ZTENSOR_CPP_LOADER_HPP
#define ZTENSOR_CPP_LOADER_HPP

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config.hpp"
#include "dtype.hpp"
#include "reader.hpp"
#include "result.hpp"
#include "span.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {

/// Builders of zt_loader_request: what to load (whole, rows, columns; converted) and
/// where (device memory, or host memory with host()).
///
///   std::vector<zt_loader_request> q = {
///       zt::load_request(0, dev_ptr, bytes),                          // whole, to the device
///       zt::load_request(1, dev_ptr2, bytes2).columns(512, 512),      // a column shard
///       zt::load_request(2, buf.data(), buf.size()).host().convert(zt::dtype::f32)};
class load_request {
 public:
  load_request(std::size_t object, void* dst, std::uint64_t dst_size, const char* role = nullptr) noexcept {
    r_ = zt_loader_request{};
    r_.object = object;
    r_.role = role;
    r_.dst = dst;
    r_.dst_size = dst_size;
  }
  /// The same, for an Object of the reader (its index).
  load_request(const Object& object, void* dst, std::uint64_t dst_size, const char* role = nullptr) noexcept
      : load_request(object.index(), dst, dst_size, role) {}
  /// [first, first + count) in storage order: decoded bytes, or values with convert().
  load_request& range(std::uint64_t first, std::uint64_t count) noexcept { return slice(ZT_SLICE_RANGE, first, count); }
  /// Rows [first, first + count) of the first dimension.
  load_request& rows(std::uint64_t first, std::uint64_t count) noexcept { return slice(ZT_SLICE_ROWS, first, count); }
  /// Columns [first, first + count) of the last dimension of every row (packed).
  load_request& columns(std::uint64_t first, std::uint64_t count) noexcept { return slice(ZT_SLICE_COLUMNS, first, count); }
  /// Every value converted into `to` (ggml blocks dequantized to f32, f16, bf16).
  load_request& convert(dtype to) noexcept {
    r_.flags |= ZT_LOAD_CONVERT;
    r_.dtype = static_cast<std::uint32_t>(to);
    return *this;
  }
  /// `dst` is host memory, filled in place.
  load_request& host() noexcept {
    r_.flags |= ZT_LOAD_HOST;
    return *this;
  }
  /// Check the component's digest first.
  load_request& verify() noexcept {
    r_.flags |= ZT_LOAD_VERIFY;
    return *this;
  }
  /// Bytes into `dst` where the request starts (handle-based devices).
  load_request& offset(std::uint64_t bytes) noexcept {
    r_.dst_offset = bytes;
    return *this;
  }
  /// The exact dst_size this request fills in `reader` (slices, conversions, ggml blocks
  /// dequantized): zt_loader_get_request_size.
  ret<std::uint64_t> size(const Reader& reader) const { return detail::unwrap(try_size(reader)); }
  result<std::uint64_t> try_size(const Reader& reader) const {
    std::uint64_t n = 0;
    zt_status st = zt_loader_get_request_size(reader.handle(), &r_, &n);
    if (st != ZT_OK) return detail::last_failure(st);
    return n;
  }
  /// A copy with dst_size set to size(reader).
  ret<load_request> sized(const Reader& reader) const { return detail::unwrap(try_sized(reader)); }
  result<load_request> try_sized(const Reader& reader) const {
    result<std::uint64_t> n = try_size(reader);
    if (!n) return failure{n.status(), n.message()};
    load_request q = *this;
    q.r_.dst_size = n.value();
    return q;
  }
  operator zt_loader_request() const noexcept { return r_; }

 private:
  load_request& slice(zt_slice s, std::uint64_t first, std::uint64_t count) noexcept {
    r_.slice = static_cast<std::uint32_t>(s);
    r_.first = first;
    r_.count = count;
    return *this;
  }
  zt_loader_request r_;
};

/// A device for the loader from a class of yours (zt_device, every callback of it): override
/// the callbacks (each returns 0 on success, your runtime's error code otherwise) and pass
/// callbacks() to Loader::create. The object must outlive every Loader made with it; the
/// loader calls it from its threads (never two at once, except event_wait and read_direct,
/// which may overlap the others). Exceptions must not leave the callbacks (they are
/// noexcept). The optional ones are offered to the loader only when their has_*() says so:
///
///   host_alloc, host_free         pinned staging buffers of your runtime's (cudaHostAlloc)
///   host_register, host_unregister  pinning memory the loader allocated, or your own
///                                 staging buffers (loader_options::register_staging)
///   event_wait                    blocking on an event (else the loader polls event_query)
///   read_direct                   storage straight into device memory (GPUDirect Storage)
class device_callbacks {
 public:
  virtual ~device_callbacks() = default;
  virtual int copy_async(void* dst, std::uint64_t offset, const void* src, std::size_t size) noexcept = 0;
  virtual int event_create(void** event) noexcept = 0;
  virtual int event_destroy(void* event) noexcept = 0;
  virtual int event_record(void* event) noexcept = 0;
  virtual int event_query(void* event, bool& done) noexcept = 0;
  /// Optional ones: say which you provide (has_*) and override them.
  virtual bool has_host_alloc() const noexcept { return false; }
  virtual int host_alloc(std::size_t size, void** out) noexcept { (void)size; (void)out; return 1; }
  virtual int host_free(void* ptr, std::size_t size) noexcept { (void)ptr; (void)size; return 0; }
  /// Pins `size` bytes of host memory at `ptr` (cudaHostRegister); host_unregister undoes it.
  virtual bool has_host_register() const noexcept { return false; }
  virtual int host_register(void* ptr, std::size_t size) noexcept { (void)ptr; (void)size; return 1; }
  virtual int host_unregister(void* ptr) noexcept { (void)ptr; return 0; }
  virtual bool has_event_wait() const noexcept { return false; }
  virtual int event_wait(void* event) noexcept { (void)event; return 1; }
  /// Reads `size` bytes at `file_offset` of the open file `fd` straight into `dst` at
  /// `offset` (cuFile, hipFile): done when it returns, or queued so that an event recorded
  /// after it covers it. handled = false declines (the loader reads through staging).
  /// Called only for raw bytes loaded as they are, unchecked; from several threads at once.
  virtual bool has_read_direct() const noexcept { return false; }
  virtual int read_direct(int fd, std::uint64_t file_offset, void* dst, std::uint64_t offset, std::size_t size,
                          bool& handled) noexcept {
    (void)fd;
    (void)file_offset;
    (void)dst;
    (void)offset;
    (void)size;
    handled = false;
    return 0;
  }
  /// Destinations are handles, not addresses (ZT_DEVICE_HANDLES).
  virtual bool handles() const noexcept { return false; }
  virtual const char* error_string(int code) noexcept { (void)code; return nullptr; }

  /// The zt_device whose callbacks call this object.
  zt_device callbacks() noexcept {
    zt_device d{};
    d.struct_size = sizeof d;
    d.flags = handles() ? ZT_DEVICE_HANDLES : 0u;
    d.context = this;
    d.copy_async = [](void* c, void* dst, std::uint64_t off, const void* src, std::size_t n) {
      return self(c)->copy_async(dst, off, src, n);
    };
    d.event_create = [](void* c, void** e) { return self(c)->event_create(e); };
    d.event_destroy = [](void* c, void* e) { return self(c)->event_destroy(e); };
    d.event_record = [](void* c, void* e) { return self(c)->event_record(e); };
    d.event_query = [](void* c, void* e, int* done) {
      bool b = false;
      int rc = self(c)->event_query(e, b);
      *done = b ? 1 : 0;
      return rc;
    };
    if (has_host_alloc()) {
      d.host_alloc = [](void* c, std::size_t n, void** out) { return self(c)->host_alloc(n, out); };
      d.host_free = [](void* c, void* p, std::size_t n) { return self(c)->host_free(p, n); };
    }
    if (has_host_register()) {
      d.host_register = [](void* c, void* p, std::size_t n) { return self(c)->host_register(p, n); };
      d.host_unregister = [](void* c, void* p) { return self(c)->host_unregister(p); };
    }
    if (has_event_wait()) d.event_wait = [](void* c, void* e) { return self(c)->event_wait(e); };
    if (has_read_direct()) {
      d.read_direct = [](void* c, int fd, std::uint64_t at, void* dst, std::uint64_t off, std::size_t n, int* handled) {
        bool b = false;
        int rc = self(c)->read_direct(fd, at, dst, off, n, b);
        *handled = b ? 1 : 0;
        return rc;
      };
    }
    d.error_string = [](void* c, int code) { return self(c)->error_string(code); };
    return d;
  }

 private:
  static device_callbacks* self(void* c) noexcept { return static_cast<device_callbacks*>(c); }
};

/// Options of Cuda::open (zt_cuda_options).
struct cuda_options {
  int device = 0;                 // the GPU's ordinal
  void* stream = nullptr;         // your cudaStream_t / CUstream; nullptr: one of its own
  const char* library = nullptr;  // a driver library to load instead of libcuda.so.1
};

/// The CUDA backend (zt_cuda): the CUDA driver loaded at run time. Move-only.
class Cuda {
 public:
  using options = cuda_options;
  /// unsupported where there is no CUDA driver or GPU.
  static ret<Cuda> open(const options& o = {}) { return detail::unwrap(try_open(o)); }
  static result<Cuda> try_open(const options& o = {}) {
    zt_cuda_options c{};
    c.struct_size = sizeof c;
    c.device = o.device;
    c.stream = o.stream;
    c.library = o.library;
    zt_cuda* h = nullptr;
    zt_status st = zt_cuda_create_with(&c, &h);
    if (st != ZT_OK) return detail::last_failure(st);
    return Cuda(h);
  }
  Cuda(Cuda&&) noexcept = default;
  Cuda& operator=(Cuda&&) noexcept = default;

  const zt_cuda* handle() const noexcept { return h_.get(); }
  /// The callbacks for Loader::create (valid while this Cuda lives).
  zt_device device() const noexcept {
    zt_device d{};
    (void)zt_cuda_get_device(h_.get(), &d);
    return d;
  }
  /// Device memory, for programs without CUDA headers.
  ret<void*> alloc(std::size_t size) const {
    void* p = nullptr;
    zt_status st = zt_cuda_alloc_memory(h_.get(), size, &p);
    if (st != ZT_OK) return detail::unwrap(result<void*>(detail::last_failure(st)));
    return detail::unwrap(result<void*>(p));
  }
  ret<void> dealloc(void* p) const { return detail::unwrap(detail::check(zt_cuda_free_memory(h_.get(), p))); }
  ret<void> copy_to_host(void* dst, const void* src, std::size_t size) const {
    return detail::unwrap(detail::check(zt_cuda_copy_to_host(h_.get(), dst, src, size)));
  }
  ret<void> synchronize() const { return detail::unwrap(detail::check(zt_cuda_synchronize(h_.get()))); }

 private:
  struct closer {
    void operator()(zt_cuda* h) const noexcept { zt_cuda_free(h); }
  };
  explicit Cuda(zt_cuda* h) noexcept : h_(h) {}
  std::unique_ptr<zt_cuda, closer> h_;
};

/// How a load reads raw bytes from local files (zt_io_mode).
enum class io_mode : std::uint32_t {
  automatic = ZT_IO_AUTO,  // per file: cached or under 64 MiB: pread; cold: O_DIRECT
  mmap = ZT_IO_MMAP,       // copied from the reader's mapping
  pread = ZT_IO_PREAD,     // pread through the page cache
  direct = ZT_IO_DIRECT,   // O_DIRECT into aligned buffers (pread where refused)
};

/// Options of Loader::create. Callbacks run on the loader's threads, possibly several at
/// once (on_complete) and never concurrently with themselves (on_progress); they may call
/// reader functions and Loader::cancel, not another load on the same loader. An exception
/// thrown by one cancels the load and is rethrown by load() (with exceptions enabled).
struct loader_options {
  std::uint32_t readers = 0;        // 0: the pool's size
  std::uint32_t staging_count = 0;  // 0: readers + 2 (with `staging`: its size)
  std::uint64_t staging_size = 0;   // 0: 16 MiB (with max_bytes_in_flight: what fits)
  bool verify = false;              // check every request's digest (ZT_LOADER_VERIFY)
  std::uint64_t max_bytes_in_flight = 0;  // memory a load holds besides destinations (0: staging + 1 GiB)
  io_mode io = io_mode::automatic;
  bool queue = true;  // a load while another runs waits its turn; false: state_error (ZT_LOADER_NO_QUEUE)
  /// Staging buffers of yours, each of staging_size bytes (zt_loader_options.staging):
  /// pinned already, or registered by the loader with register_staging; valid and
  /// untouched by anything else while the Loader lives. Empty: the loader allocates them.
  std::vector<void*> staging;
  bool register_staging = false;    // host_register `staging` (ZT_LOADER_REGISTER_STAGING)
  std::uint32_t flags = 0;          // further ZT_LOADER_* flags, or'ed with those above
  std::function<void(std::size_t request, zt_status status, std::uint64_t bytes)> on_complete;
  std::function<void(std::uint64_t done, std::uint64_t total)> on_progress;
};

/// The staged loader (zt_loader). Move-only; frees itself.
class Loader {
 public:
  /// A loader for device (with `device`) and host destinations; nullptr: host only.
  static ret<Loader> create(const zt_device* device, loader_options o = {}) {
    return detail::unwrap(try_create(device, std::move(o)));
  }
  static result<Loader> try_create(const zt_device* device, loader_options o = {}) {
    std::unique_ptr<state> s(new state{std::move(o), nullptr, {}, {}, nullptr});
    zt_loader_options c{};
    c.struct_size = sizeof c;
    c.flags = s->options.flags | (s->options.verify ? ZT_LOADER_VERIFY : 0u) |
              (s->options.register_staging ? ZT_LOADER_REGISTER_STAGING : 0u) |
              (s->options.queue ? 0u : ZT_LOADER_NO_QUEUE);
    c.max_bytes_in_flight = s->options.max_bytes_in_flight;
    c.io = static_cast<std::uint32_t>(s->options.io);
    c.readers = s->options.readers;
    c.staging_count = s->options.staging_count;
    c.staging_size = s->options.staging_size;
    if (!s->options.staging.empty()) {
      // The C struct has a count and a pointer: the count must be the vector's (the
      // library would read staging_count pointers).
      const std::size_t n = s->options.staging.size();
      if (n > UINT32_MAX || (c.staging_count != 0 && c.staging_count != n))
        return detail::fail(ZT_ERR_INVALID_ARGUMENT, "staging_count " + std::to_string(c.staging_count) + " but " +
                                                         std::to_string(n) + " staging buffers");
      c.staging = s->options.staging.data();
      c.staging_count = static_cast<std::uint32_t>(n);
    }
    c.user = s.get();
    if (s->options.on_complete) c.on_complete = &state::complete;
    if (s->options.on_progress) c.on_progress = &state::progress;
    zt_loader* h = nullptr;
    zt_status st = zt_loader_create_with(device, &c, &h);
    if (st != ZT_OK) return detail::last_failure(st);
    s->handle = h;
    return Loader(std::move(s));
  }

  Loader(Loader&&) noexcept = default;
  Loader& operator=(Loader&&) noexcept = default;

  zt_loader* handle() const noexcept { return s_ ? s_->handle : nullptr; }

  /// Loads every request (each one's status and bytes are set); returns the first
  /// failure in request order (canceled after cancel()). From several threads, loads run
  /// one after the other (queue = false: state_error while one runs); from a callback of
  /// this loader, state_error.
  ret<void> load(const Reader& reader, span<zt_loader_request> requests) {
    if (!s_ || state::inside() == s_.get()) {
      // No handle (moved from), or inside one of its own callbacks: the C call refuses.
      return detail::unwrap(detail::check(zt_loader_load(handle(), reader.handle(), requests.data(), requests.size())));
    }
    // One load at a time here too, so a load's exception is its own.
    std::unique_lock<std::mutex> turn(s_->turn, std::defer_lock);
    if (s_->options.queue) {
      turn.lock();
    } else if (!turn.try_lock()) {
      return detail::unwrap(result<void>(failure{ZT_ERR_STATE, "another load is running on this loader (queue is off)"}));
    }
    s_->thrown = nullptr;
    zt_status st = zt_loader_load(handle(), reader.handle(), requests.data(), requests.size());
    result<void> r = detail::check(st);
#if ZT_CPP_EXCEPTIONS
    if (s_->thrown) {
      std::exception_ptr e = s_->thrown;
      s_->thrown = nullptr;
      std::rethrow_exception(e);
    }
#endif
    return detail::unwrap(std::move(r));
  }
  ret<void> load(const Reader& reader, std::vector<zt_loader_request>& requests) {
    return load(reader, span<zt_loader_request>(requests.data(), requests.size()));
  }
  /// Stops the running load (or the next one); thread-safe.
  void cancel() noexcept { (void)zt_loader_cancel(handle()); }
  zt_loader_stats stats() const noexcept {
    zt_loader_stats st{};
    (void)zt_loader_get_stats(handle(), &st);
    return st;
  }

 private:
  struct state {
    loader_options options;
    zt_loader* handle;
    std::mutex lock;
    std::mutex turn;  // held by the load running
#if ZT_CPP_EXCEPTIONS
    std::exception_ptr thrown;
#else
    void* thrown;
#endif
    /// The loader whose callback this thread is running, if any.
    static state*& inside() noexcept {
      static thread_local state* current = nullptr;
      return current;
    }
    struct in_callback {
      state* saved;
      explicit in_callback(state* s) noexcept : saved(inside()) { inside() = s; }
      ~in_callback() { inside() = saved; }
      in_callback(const in_callback&) = delete;
      in_callback& operator=(const in_callback&) = delete;
    };
    static void complete(void* user, std::size_t request, zt_status status, std::uint64_t bytes) {
      auto* s = static_cast<state*>(user);
      in_callback mark(s);
#if ZT_CPP_EXCEPTIONS
      try {
        s->options.on_complete(request, status, bytes);
      } catch (...) {
        s->fail();
      }
#else
      s->options.on_complete(request, status, bytes);
#endif
    }
    static void progress(void* user, std::uint64_t done, std::uint64_t total) {
      auto* s = static_cast<state*>(user);
      in_callback mark(s);
#if ZT_CPP_EXCEPTIONS
      try {
        s->options.on_progress(done, total);
      } catch (...) {
        s->fail();
      }
#else
      s->options.on_progress(done, total);
#endif
    }
#if ZT_CPP_EXCEPTIONS
    void fail() {
      std::lock_guard<std::mutex> g(lock);
      if (!thrown) thrown = std::current_exception();
      (void)zt_loader_cancel(handle);
    }
#endif
  };
  /// Frees the loader, then the state its callbacks use.
  struct closer {
    void operator()(state* s) const noexcept {
      zt_loader_free(s->handle);
      delete s;
    }
  };
  explicit Loader(std::unique_ptr<state> s) noexcept : s_(s.release()) {}
  std::unique_ptr<state, closer> s_;
};

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_LOADER_HPP
