//! One error type for the whole library, and its mapping to the C status codes.

use std::fmt;

/// What went wrong, in the categories a caller can act on. The numeric values are the
/// C ABI's `zt_status` values and never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ErrorKind {
    /// A caller passed something unusable: a bad shape, a wrong size, an unknown enum value.
    InvalidArgument = 1,
    /// The operating system refused a read, write, open or rename.
    Io = 2,
    /// The file is malformed, truncated or inconsistent.
    Format = 3,
    /// The file is well-formed but uses a feature this build cannot decode.
    Unsupported = 4,
    /// No such object, component or attribute.
    NotFound = 5,
    /// A stored digest does not match the stored bytes.
    Checksum = 6,
    /// A safety limit was hit (manifest size, decoded size, depth, rank ...).
    Limit = 7,
    /// The destination buffer is smaller than the data.
    BufferTooSmall = 8,
    /// The call is not valid in the current state (e.g. adding after finish).
    State = 9,
    /// A bug: a caught panic or a broken invariant.
    Internal = 10,
}

impl ErrorKind {
    /// The stable C name of the status, e.g. "ZT_ERR_FORMAT".
    pub fn status_name(self) -> &'static str {
        STATUS_NAMES[self as usize].to_str().expect("ASCII")
    }

    /// The `zt_status` value.
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// The C names of the `zt_status` values, indexed by value (0 is success). NUL-terminated
/// so the C ABI lends them out directly.
pub(crate) const STATUS_NAMES: [&std::ffi::CStr; 11] = [
    c"ZT_OK",
    c"ZT_ERR_INVALID_ARGUMENT",
    c"ZT_ERR_IO",
    c"ZT_ERR_FORMAT",
    c"ZT_ERR_UNSUPPORTED",
    c"ZT_ERR_NOT_FOUND",
    c"ZT_ERR_CHECKSUM",
    c"ZT_ERR_LIMIT",
    c"ZT_ERR_BUFFER_TOO_SMALL",
    c"ZT_ERR_STATE",
    c"ZT_ERR_INTERNAL",
];

/// An error with its kind and a human-readable message that names the context
/// (file, object, component, offset) where one is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// Builds an error from a kind and a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
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
        Error::new(ErrorKind::Io, format!("{what}: {err}"))
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
