// ztensor/result.hpp: part of ztensor.hpp (include that). Errors: zt::failure,
// zt::result<T>, zt::ret<T>, the zt::error exceptions, and the helpers that turn C
// statuses into them.
#ifndef ZTENSOR_CPP_RESULT_HPP
#define ZTENSOR_CPP_RESULT_HPP

#include "config.hpp"

namespace zt {
inline namespace ZT_CPP_ABI {

/// A failed call: its status and the library's message (zt_last_error()).
struct failure {
  zt_status status = ZT_ERR_INTERNAL;
  std::string message;
};

namespace detail {
/// value() of a failed result: throws the matching zt::error, or without exceptions
/// prints the message and aborts.
[[noreturn]] inline void raise(zt_status status, const std::string& message);
}  // namespace detail

/// A value or a failure. Returned by every fallible call in no-exceptions mode; usable in
/// both modes. value() of a failed result throws (exceptions) or aborts (no exceptions).
template <class T>
class [[nodiscard]] result {
 public:
  using value_type = T;

  result(T value) noexcept(std::is_nothrow_move_constructible_v<T>) : value_(std::move(value)) {}
  result(failure f) noexcept
      : status_(f.status == ZT_OK ? ZT_ERR_INTERNAL : f.status), message_(std::move(f.message)) {}

  bool ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  zt_status status() const noexcept { return status_; }
  /// The library's message; "" on success.
  const std::string& message() const noexcept { return message_; }

  T& value() & { check(); return *value_; }
  const T& value() const& { check(); return *value_; }
  T value() && { check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  template <class U>
  T value_or(U&& fallback) const& { return value_.has_value() ? *value_ : static_cast<T>(std::forward<U>(fallback)); }
  template <class U>
  T value_or(U&& fallback) && {
    return value_.has_value() ? std::move(*value_) : static_cast<T>(std::forward<U>(fallback));
  }

  /// The failure (status and message), e.g. to pass it on as another result.
  failure as_failure() const { return failure{status_, message_}; }

 private:
  // Success is value_ holding a value, and every read of the value is guarded by that
  // same flag, so a compiler that inlines a failed result into value() sees the value is
  // never read there (guarding by status_ instead, which it can't tie to value_, gave
  // g++ -Wmaybe-uninitialized at -O1 and -O2). status_ is ZT_OK exactly when value_ holds.
  void check() const {
    if (!value_.has_value()) detail::raise(status_, message_);
  }
  zt_status status_ = ZT_OK;
  std::string message_;
  std::optional<T> value_;
};

/// Success or a failure.
template <>
class [[nodiscard]] result<void> {
 public:
  using value_type = void;

  result() noexcept = default;
  result(failure f) noexcept
      : status_(f.status == ZT_OK ? ZT_ERR_INTERNAL : f.status), message_(std::move(f.message)) {}

  bool ok() const noexcept { return status_ == ZT_OK; }
  explicit operator bool() const noexcept { return ok(); }
  zt_status status() const noexcept { return status_; }
  const std::string& message() const noexcept { return message_; }
  /// Throws (exceptions) or aborts (no exceptions) when failed.
  void value() const {
    if (!ok()) detail::raise(status_, message_);
  }
  failure as_failure() const { return failure{status_, message_}; }

 private:
  zt_status status_ = ZT_OK;
  std::string message_;
};

#if ZT_CPP_EXCEPTIONS
/// Base of every exception this header throws.
class error : public std::runtime_error {
 public:
  error(zt_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  zt_status status() const noexcept { return status_; }

 private:
  zt_status status_;
};
// clang-format off
class invalid_argument : public error { public: explicit invalid_argument(const std::string& m) : error(ZT_ERR_INVALID_ARGUMENT, m) {} };
class io_error         : public error { public: explicit io_error(const std::string& m)         : error(ZT_ERR_IO, m) {} };
class format_error     : public error { public: explicit format_error(const std::string& m)     : error(ZT_ERR_FORMAT, m) {} };
class unsupported      : public error { public: explicit unsupported(const std::string& m)      : error(ZT_ERR_UNSUPPORTED, m) {} };
class not_found        : public error { public: explicit not_found(const std::string& m)        : error(ZT_ERR_NOT_FOUND, m) {} };
class checksum_error   : public error { public: explicit checksum_error(const std::string& m)   : error(ZT_ERR_CHECKSUM, m) {} };
class limit_error      : public error { public: explicit limit_error(const std::string& m)      : error(ZT_ERR_LIMIT, m) {} };
class buffer_too_small : public error { public: explicit buffer_too_small(const std::string& m) : error(ZT_ERR_BUFFER_TOO_SMALL, m) {} };
class state_error      : public error { public: explicit state_error(const std::string& m)      : error(ZT_ERR_STATE, m) {} };
class internal_error   : public error { public: explicit internal_error(const std::string& m)   : error(ZT_ERR_INTERNAL, m) {} };
/// A load stopped by Loader::cancel() (ZT_ERR_CANCELED).
class canceled         : public error { public: explicit canceled(const std::string& m)         : error(ZT_ERR_CANCELED, m) {} };
// clang-format on

/// Throws the zt::error subclass for `f.status`.
[[noreturn]] inline void throw_error(const failure& f) {
  switch (f.status) {
    case ZT_ERR_INVALID_ARGUMENT: throw invalid_argument(f.message);
    case ZT_ERR_IO: throw io_error(f.message);
    case ZT_ERR_FORMAT: throw format_error(f.message);
    case ZT_ERR_UNSUPPORTED: throw unsupported(f.message);
    case ZT_ERR_NOT_FOUND: throw not_found(f.message);
    case ZT_ERR_CHECKSUM: throw checksum_error(f.message);
    case ZT_ERR_LIMIT: throw limit_error(f.message);
    case ZT_ERR_BUFFER_TOO_SMALL: throw buffer_too_small(f.message);
    case ZT_ERR_STATE: throw state_error(f.message);
    case ZT_ERR_INTERNAL: throw internal_error(f.message);
    case ZT_ERR_CANCELED: throw canceled(f.message);
    case ZT_OK: break;  // not a failure: a plain zt::error, as for unknown values
    default: break;
  }
  throw error(f.status, f.message);
}

/// What a fallible call returns: T itself (failures throw).
template <class T>
using ret = T;
#else
/// What a fallible call returns: zt::result<T>.
template <class T>
using ret = result<T>;
#endif

namespace detail {
[[noreturn]] inline void raise(zt_status status, const std::string& message) {
#if ZT_CPP_EXCEPTIONS
  throw_error(failure{status, message});
#else
  std::fprintf(stderr, "ztensor: value() of a failed zt::result: %s: %s\n",
               zt_status_name(static_cast<std::uint32_t>(status)), message.c_str());
  std::abort();
#endif
}

#if ZT_CPP_EXCEPTIONS
template <class T>
T unwrap(result<T>&& r) { return std::move(r).value(); }
inline void unwrap(result<void>&& r) { r.value(); }
#else
template <class T>
result<T> unwrap(result<T>&& r) noexcept { return std::move(r); }
#endif

/// The failure of the C call that just returned `status` (reads zt_last_error() now).
inline failure last_failure(zt_status status) {
  const char* m = zt_last_error();
  return failure{status, std::string(m != nullptr && *m != '\0' ? m : zt_status_name(static_cast<std::uint32_t>(status)))};
}
inline result<void> check(zt_status status) {
  if (status == ZT_OK) return result<void>();
  return last_failure(status);
}
inline failure fail(zt_status status, std::string message) { return failure{status, std::move(message)}; }

/// The text of `parts` one after the other (string views, strings, C strings), built by
/// appending into one string: `"a" + std::string(b)` inserts at the front of a temporary,
/// which g++ 12 reports as -Wrestrict at -O3 once inlined (a false report, but a warning
/// in users' builds all the same).
template <class... Parts>
std::string cat(const Parts&... parts) {
  const std::string_view views[] = {std::string_view(parts)...};
  std::size_t n = 0;
  for (std::string_view v : views) n += v.size();
  std::string out;
  out.reserve(n);
  for (std::string_view v : views) out.append(v.data(), v.size());
  return out;
}
}  // namespace detail

}  // inline namespace ZT_CPP_ABI
}  // namespace zt

#endif  // ZTENSOR_CPP_RESULT_HPP
