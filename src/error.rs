//! One error type for the whole library, and its mapping to the C status codes.

use std::fmt;

/// Declares `ErrorKind` and its C names from one table: each row is the Rust name, the
/// `zt_status` value and the C name. The C enum `zt_status` in `ffi` (which cbindgen
/// needs spelled out) is checked against this table by a test that reads the header.
macro_rules! error_kinds {
    ($( $(#[$doc:meta])* $kind:ident = $value:literal => $cname:ident, )*) => {
        /// What went wrong, in the categories a caller can act on. The numeric values are
        /// the C ABI's `zt_status` values and never change.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum ErrorKind {
            $( $(#[$doc])* $kind = $value, )*
        }

        impl ErrorKind {
            /// Every kind, in value order.
            pub const ALL: &[ErrorKind] = &[$(ErrorKind::$kind,)*];

            /// The C name of the status, NUL-terminated, e.g. `ZT_ERR_FORMAT`.
            pub(crate) const fn c_name(self) -> &'static std::ffi::CStr {
                match self {
                    $( ErrorKind::$kind => match std::ffi::CStr::from_bytes_with_nul(
                        concat!(stringify!($cname), "\0").as_bytes(),
                    ) {
                        Ok(name) => name,
                        Err(_) => panic!("a C name without NUL"),
                    }, )*
                }
            }
        }
    };
}

error_kinds! {
    /// A caller passed something unusable: a bad shape, a wrong size, an unknown enum value.
    InvalidArgument = 1 => ZT_ERR_INVALID_ARGUMENT,
    /// The operating system refused a read, write, open or rename.
    Io = 2 => ZT_ERR_IO,
    /// The file is malformed, truncated or inconsistent.
    Format = 3 => ZT_ERR_FORMAT,
    /// The file is well-formed but uses a feature this build cannot decode.
    Unsupported = 4 => ZT_ERR_UNSUPPORTED,
    /// No such object, component or attribute.
    NotFound = 5 => ZT_ERR_NOT_FOUND,
    /// A stored digest does not match the stored bytes.
    Checksum = 6 => ZT_ERR_CHECKSUM,
    /// A safety limit was hit (manifest size, decoded size, depth, rank ...).
    Limit = 7 => ZT_ERR_LIMIT,
    /// The destination buffer is smaller than the data.
    BufferTooSmall = 8 => ZT_ERR_BUFFER_TOO_SMALL,
    /// The call is not valid in the current state (e.g. adding after finish).
    State = 9 => ZT_ERR_STATE,
    /// A bug: a caught panic or a broken invariant.
    Internal = 10 => ZT_ERR_INTERNAL,
    /// The work was cancelled (`zt_loader_cancel`) before it was done.
    Canceled = 11 => ZT_ERR_CANCELED,
}

/// The C name of success, the one status that is no error.
pub(crate) const OK_NAME: &std::ffi::CStr = c"ZT_OK";

impl ErrorKind {
    /// The stable C name of the status, e.g. "ZT_ERR_FORMAT".
    pub fn status_name(self) -> &'static str {
        self.c_name().to_str().expect("ASCII")
    }

    /// The `zt_status` value.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The kind with this `zt_status` value (None for 0, success, and unknown values).
    pub fn from_code(code: u32) -> Option<ErrorKind> {
        ErrorKind::ALL.iter().copied().find(|k| k.code() == code)
    }
}

/// An error with its kind and a human-readable message that names the context
/// (file, object, component, offset) where one is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    /// The operating system's error number behind an `Io` error (`Error::io`).
    os: Option<i32>,
}

impl Error {
    /// Builds an error from a kind and a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            os: None,
        }
    }
    /// The category, for programs.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The message, for people.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// Prefixes the message with more context ("object 'w': ...").
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }
    /// Wraps an OS error with what we were doing.
    pub fn io(what: impl fmt::Display, err: std::io::Error) -> Self {
        let mut e = Error::new(ErrorKind::Io, format!("{what}: {err}"));
        e.os = err.raw_os_error();
        e
    }
    /// The operating system's error number (`errno`) when the OS refused, else None.
    pub fn os_error(&self) -> Option<i32> {
        self.os
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.status_name(), self.message)
    }
}

impl std::error::Error for Error {}

/// The library's result type.
pub type Result<T> = std::result::Result<T, Error>;

macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::new($crate::error::ErrorKind::$kind, format!($($arg)*)))
    };
}
pub(crate) use bail;

macro_rules! err {
    ($kind:ident, $($arg:tt)*) => {
        $crate::error::Error::new($crate::error::ErrorKind::$kind, format!($($arg)*))
    };
}
pub(crate) use err;
