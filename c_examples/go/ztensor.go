// Package ztensor reads and writes zTensor (.zt) files through the ztensor C library.
//
// It is a small example of calling the C API from Go with cgo; copy it into your
// project and extend it. Build it with the library's include and lib directories:
//
//	CGO_CFLAGS="-I/opt/ztensor/include" \
//	CGO_LDFLAGS="-L/opt/ztensor/lib -Wl,-rpath,/opt/ztensor/lib" go test
//
// # Errors
//
// A failing call returns an *Error carrying the library's status and message. Status
// also implements error, so errors.Is(err, ztensor.ErrNotFound) tests the status.
// The message is zt_last_error() of the failing call. That function is per OS thread
// and goroutines move between OS threads, so every fallible zt_ call is made from a
// small C function (ztgo.h) that copies the message before returning to Go: no
// runtime.LockOSThread is needed, and concurrent goroutines never see each other's
// messages.
//
// # Threads
//
// A Reader may be used from many goroutines at once. A Writer serializes its calls.
//
// # Zero-copy views and lifetimes
//
// View, Slice and ViewSlice return memory owned by the Reader: a slice of the mapped
// file (raw little-endian components) or of a decoded copy the Reader keeps. No bytes
// are copied. Such a slice is valid until the Reader is closed: it must not be used
// after Close. A Reader that becomes unreachable is closed by a finalizer, so keep the
// Reader reachable while you use its slices: a `defer r.Close()` in the function that
// uses them does it, otherwise call runtime.KeepAlive(r) after the last use. Copy
// (or use Read / ReadAs) when the data must outlive the Reader. The slices are
// read-only: the mapping is read-only and writing to it crashes the program.
package ztensor

/*
#cgo LDFLAGS: -lztensor
#include "ztgo.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Version is the C library's version, "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.zt_version()) }

// HeaderVersion is the version of the ztensor.h this package was compiled against,
// "MAJOR.MINOR.PATCH". While the version is 0.x, a library of another MAJOR.MINOR has
// another ABI (and another SONAME).
func HeaderVersion() string {
	return fmt.Sprintf("%d.%d.%d", C.ZT_VERSION_MAJOR, C.ZT_VERSION_MINOR, C.ZT_VERSION_PATCH)
}

// Status is a zt_status value. It implements error so that errors.Is can match it.
type Status uint32

// The zt_status values.
const (
	OK                 Status = C.ZT_OK
	ErrInvalidArgument Status = C.ZT_ERR_INVALID_ARGUMENT
	ErrIO              Status = C.ZT_ERR_IO
	ErrFormat          Status = C.ZT_ERR_FORMAT
	ErrUnsupported     Status = C.ZT_ERR_UNSUPPORTED
	ErrNotFound        Status = C.ZT_ERR_NOT_FOUND
	ErrChecksum        Status = C.ZT_ERR_CHECKSUM
	ErrLimit           Status = C.ZT_ERR_LIMIT
	ErrBufferTooSmall  Status = C.ZT_ERR_BUFFER_TOO_SMALL
	ErrState           Status = C.ZT_ERR_STATE
	ErrInternal        Status = C.ZT_ERR_INTERNAL
	ErrCanceled        Status = C.ZT_ERR_CANCELED
)

// String is the C name of the status, e.g. "ZT_ERR_FORMAT".
func (s Status) String() string { return C.GoString(C.zt_status_name(C.uint32_t(s))) }

// Error makes a Status usable as an error target: errors.Is(err, ztensor.ErrFormat).
func (s Status) Error() string { return s.String() }

// Error is a failed call: the status and the library's message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("ztensor: %s (%s)", e.Message, e.Status) }

// Unwrap returns the Status, for errors.Is.
func (e *Error) Unwrap() error { return e.Status }

// result turns a shim's status and copied message into an error.
func result(status C.zt_status, msg *C.char) error {
	if status == C.ZT_OK {
		return nil
	}
	text := C.GoString(msg) // "" when the shim could not allocate the copy
	C.free(unsafe.Pointer(msg))
	return &Error{Status: Status(status), Message: text}
}

func errorf(status Status, format string, args ...interface{}) error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// DType is a storage dtype (a zt_dtype value).
type DType uint32

// The storage dtypes.
const (
	F64  DType = C.ZT_F64
	F32  DType = C.ZT_F32
	F16  DType = C.ZT_F16
	BF16 DType = C.ZT_BF16
	I64  DType = C.ZT_I64
	I32  DType = C.ZT_I32
	I16  DType = C.ZT_I16
	I8   DType = C.ZT_I8
	U64  DType = C.ZT_U64
	U32  DType = C.ZT_U32
	U16  DType = C.ZT_U16
	U8   DType = C.ZT_U8
	Bool DType = C.ZT_BOOL
)

// String is the format's spelling, from the library (zt_dtype_name): "f32", "bf16",
// "bool" ...; "dtype(N)" for a value outside the enum.
func (d DType) String() string {
	if d.Size() == 0 {
		return fmt.Sprintf("dtype(%d)", uint32(d))
	}
	return C.GoString(C.zt_dtype_name(C.uint32_t(d)))
}

// Size is the size of one element in bytes, from the library (zt_dtype_get_size); 0 for a
// value outside the enum.
func (d DType) Size() uint64 {
	var size C.size_t
	// The message of a failure is not needed: an unknown value is all it can say.
	if C.zt_dtype_get_size(C.uint32_t(d), &size) != C.ZT_OK {
		return 0
	}
	return uint64(size)
}

// ParseDType is the dtype a name stands for ("f32", "bf16" ...: the names String gives),
// from the library (zt_dtype_find).
func ParseDType(name string) (DType, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var value C.uint32_t
	var msg *C.char
	if err := result(C.ztgo_dtype_from_name(cname, &value, &msg), msg); err != nil {
		return 0, err
	}
	return DType(value), nil
}

// Encoding is how a component is stored (a zt_encoding value).
type Encoding uint32

// The encodings. Pipeline is read-only: another format's decode steps (Tensogram).
const (
	Raw      Encoding = C.ZT_ENCODING_RAW
	Zstd     Encoding = C.ZT_ENCODING_ZSTD
	Pipeline Encoding = C.ZT_ENCODING_PIPELINE
)

func (e Encoding) String() string {
	switch e {
	case Raw:
		return "raw"
	case Zstd:
		return "zstd"
	case Pipeline:
		return "pipeline"
	}
	return fmt.Sprintf("encoding(%d)", uint32(e))
}

// Element is the Go types that stand for a storage dtype. Half-precision types (f16,
// bf16) have no Go type: view them with View.Bytes, or convert with ReadAs[float32].
type Element interface {
	float64 | float32 | int64 | int32 | int16 | int8 | uint64 | uint32 | uint16 | uint8
}

// DTypeOf is the dtype of T.
func DTypeOf[T Element]() DType {
	var zero T
	switch any(zero).(type) {
	case float64:
		return F64
	case float32:
		return F32
	case int64:
		return I64
	case int32:
		return I32
	case int16:
		return I16
	case int8:
		return I8
	case uint64:
		return U64
	case uint32:
		return U32
	case uint16:
		return U16
	default: // uint8
		return U8
	}
}

// ---------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------

// OpenOptions are zt_open_options. The zero value means the defaults; a zero limit
// means that limit's default.
type OpenOptions struct {
	NoMmap          bool // pread every access: nothing is zero-copy, a truncated file is an error, not SIGBUS
	Verify          bool // check every digest while opening
	MaxCBORDepth    uint32
	MaxRank         uint32
	MaxNameLength   uint32
	MaxManifestSize uint64
	MaxDecodedSize  uint64
	MaxTotalCached  uint64
}

// Reader is an open .zt file. Its methods may be called from many goroutines at once;
// Close waits for calls in progress.
type Reader struct {
	mu sync.RWMutex
	r  *C.zt_reader // nil once closed
}

// Open opens a file with the default options: maps it and validates its manifest.
func Open(path string) (*Reader, error) { return OpenWith(path, OpenOptions{}) }

// OpenWith opens a file with options.
func OpenWith(path string, o OpenOptions) (*Reader, error) {
	var copts C.zt_open_options
	if o.NoMmap {
		copts.flags |= C.ZT_OPEN_NO_MMAP
	}
	if o.Verify {
		copts.flags |= C.ZT_OPEN_VERIFY
	}
	copts.max_cbor_depth = C.uint32_t(o.MaxCBORDepth)
	copts.max_rank = C.uint32_t(o.MaxRank)
	copts.max_name_length = C.uint32_t(o.MaxNameLength)
	copts.max_manifest_size = C.uint64_t(o.MaxManifestSize)
	copts.max_decoded_size = C.uint64_t(o.MaxDecodedSize)
	copts.max_total_cached = C.uint64_t(o.MaxTotalCached)

	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var handle *C.zt_reader
	var msg *C.char
	if err := result(C.ztgo_open(cpath, &copts, &handle, &msg), msg); err != nil {
		return nil, err
	}
	r := &Reader{r: handle}
	// A forgotten Close frees the reader when it becomes unreachable. This is why
	// slices from it are valid only while the Reader is reachable (see the package doc).
	runtime.SetFinalizer(r, (*Reader).Close)
	return r, nil
}

// Close closes the file. Every slice and View obtained from the Reader becomes invalid.
// Closing twice is allowed. It always returns nil (it implements io.Closer).
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.r != nil {
		C.zt_close(r.r)
		r.r = nil
		runtime.SetFinalizer(r, nil)
	}
	return nil
}

// acquire returns the C handle with the read lock held; release with r.mu.RUnlock.
func (r *Reader) acquire() (*C.zt_reader, error) {
	r.mu.RLock()
	if r.r == nil {
		r.mu.RUnlock()
		return nil, errorf(ErrState, "the reader is closed")
	}
	return r.r, nil
}

// FileFormat is the container format the file was read from: "zt", "safetensors",
// "gguf" or "tensogram" ("" once closed).
func (r *Reader) FileFormat() string {
	h, err := r.acquire()
	if err != nil {
		return ""
	}
	defer r.mu.RUnlock()
	return C.GoString(C.zt_file_format(h))
}

// FileVersion is the file's format version: "2", "1.2.0", "1.1.0" or "0.1.0" for zTensor,
// the container's own for other formats ("3" for GGUF v3).
func (r *Reader) FileVersion() string {
	h, err := r.acquire()
	if err != nil {
		return ""
	}
	defer r.mu.RUnlock()
	return C.GoString(C.zt_file_version(h))
}

// Len is the number of objects (0 once closed).
func (r *Reader) Len() int {
	h, err := r.acquire()
	if err != nil {
		return 0
	}
	defer r.mu.RUnlock()
	return int(C.zt_object_count(h))
}

// Object describes one object. Its strings and shape are Go copies.
type Object struct {
	Index      int
	Name       string
	Format     string   // "dense", "sparse_csr", "sparse_coo", "quantized_group", or as stored
	Shape      []uint64 // empty for a scalar
	Components []Component
}

// Component describes one component of an object.
type Component struct {
	Role          string // "data" for dense objects
	DType         DType
	Type          string // logical type ("f8_e4m3fn", "complex64" ...), or ""
	Encoding      Encoding
	Offset        uint64 // absolute file offset of the stored bytes
	Length        uint64 // stored bytes
	DecodedLength uint64 // bytes after decoding
	Digest        string // "sha256:...", "xxh3:...", "crc32c:0x..." (1.x), or ""
}

// Component returns the component with that role.
func (o Object) Component(role string) (Component, bool) {
	for _, c := range o.Components {
		if c.Role == role {
			return c, true
		}
	}
	return Component{}, false
}

func goStringOrEmpty(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

func (r *Reader) object(h *C.zt_reader, index int) (Object, error) {
	var info C.zt_object_info
	var msg *C.char
	if index < 0 {
		return Object{}, errorf(ErrNotFound, "no object %d", index)
	}
	if err := result(C.ztgo_object_info(h, C.size_t(index), &info, &msg), msg); err != nil {
		return Object{}, err
	}
	o := Object{
		Index:  index,
		Name:   C.GoString(info.name),
		Format: C.GoString(info.format),
		Shape:  make([]uint64, int(info.ndim)),
	}
	if info.ndim > 0 {
		// A borrowed C array: copy it.
		for i, d := range unsafe.Slice(info.shape, int(info.ndim)) {
			o.Shape[i] = uint64(d)
		}
	}
	o.Components = make([]Component, int(info.component_count))
	for i := range o.Components {
		var c C.zt_component_info
		if err := result(C.ztgo_component_info(h, C.size_t(index), C.size_t(i), &c, &msg), msg); err != nil {
			return Object{}, err
		}
		o.Components[i] = Component{
			Role:          C.GoString(c.role),
			DType:         DType(c.dtype),
			Type:          goStringOrEmpty(c._type),
			Encoding:      Encoding(c.encoding),
			Offset:        uint64(c.offset),
			Length:        uint64(c.length),
			DecodedLength: uint64(c.decoded_length),
			Digest:        goStringOrEmpty(c.digest),
		}
	}
	return o, nil
}

// Object describes object index (0 <= index < Len()).
func (r *Reader) Object(index int) (Object, error) {
	h, err := r.acquire()
	if err != nil {
		return Object{}, err
	}
	defer r.mu.RUnlock()
	return r.object(h, index)
}

// Objects describes every object, in file order.
func (r *Reader) Objects() ([]Object, error) {
	h, err := r.acquire()
	if err != nil {
		return nil, err
	}
	defer r.mu.RUnlock()
	objects := make([]Object, int(C.zt_object_count(h)))
	for i := range objects {
		if objects[i], err = r.object(h, i); err != nil {
			return nil, err
		}
	}
	return objects, nil
}

// Find returns the index of the object with that name (ErrNotFound when absent).
func (r *Reader) Find(name string) (int, error) {
	h, err := r.acquire()
	if err != nil {
		return 0, err
	}
	defer r.mu.RUnlock()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var index C.size_t
	var msg *C.char
	if err := result(C.ztgo_object_find(h, cname, &index, &msg), msg); err != nil {
		return 0, err
	}
	return int(index), nil
}

// Lookup describes the object with that name.
func (r *Reader) Lookup(name string) (Object, error) {
	index, err := r.Find(name)
	if err != nil {
		return Object{}, err
	}
	return r.Object(index)
}

// View is a component's decoded bytes, owned by the Reader: valid until Close.
type View struct {
	Data     unsafe.Pointer // may be nil when Size is 0
	Size     uint64         // bytes
	DType    DType
	ZeroCopy bool // true: points into the mapped file; false: a copy decoded once and kept by the Reader
}

// View returns a view of component role ("data" for dense objects) of object name.
// Nothing is copied for raw components of a mapped file; anything else is decoded once
// and kept by the Reader.
func (r *Reader) View(name, role string) (View, error) {
	h, err := r.acquire()
	if err != nil {
		return View{}, err
	}
	defer r.mu.RUnlock()
	cname, crole := C.CString(name), C.CString(role)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(crole))
	var v C.zt_view
	var msg *C.char
	if err := result(C.ztgo_view(h, cname, crole, &v, &msg), msg); err != nil {
		return View{}, err
	}
	return View{Data: unsafe.Pointer(v.data), Size: uint64(v.size), DType: DType(v.dtype), ZeroCopy: bool(v.zero_copy)}, nil
}

// Bytes is the view's memory as a byte slice, without copying. Read-only; valid until
// the Reader is closed.
func (v View) Bytes() []byte {
	if v.Size == 0 || v.Data == nil {
		return []byte{}
	}
	return unsafe.Slice((*byte)(v.Data), int(v.Size))
}

// Slice is the view's memory as a []T, without copying, after checking that T is the
// stored dtype and that the pointer is aligned for T. Read-only; valid until the Reader
// is closed.
func Slice[T Element](v View) ([]T, error) {
	want := DTypeOf[T]()
	if v.DType != want {
		return nil, errorf(ErrInvalidArgument, "the data is %s, not %s", v.DType, want)
	}
	var zero T
	size := uint64(unsafe.Sizeof(zero))
	if v.Size == 0 || v.Data == nil {
		return []T{}, nil
	}
	if v.Size%size != 0 {
		return nil, errorf(ErrInvalidArgument, "%d bytes are not a whole number of %s elements", v.Size, want)
	}
	if uintptr(v.Data)%unsafe.Alignof(zero) != 0 {
		return nil, errorf(ErrInvalidArgument, "the data at %p is not aligned for %s", v.Data, want)
	}
	return unsafe.Slice((*T)(v.Data), int(v.Size/size)), nil
}

// ViewSlice is the "data" component of a dense object as a []T, without copying:
// r.View(name, "data") and Slice. Valid until the Reader is closed (see the package doc).
func ViewSlice[T Element](r *Reader, name string) ([]T, error) {
	v, err := r.View(name, "data")
	if err != nil {
		return nil, err
	}
	return Slice[T](v)
}

// dataInfo describes component "data" of object name.
func (r *Reader) dataInfo(h *C.zt_reader, cname, crole *C.char) (C.zt_component_info, error) {
	var info C.zt_component_info
	var msg *C.char
	err := result(C.ztgo_find_component(h, cname, crole, &info, &msg), msg)
	return info, err
}

// Read copies (or decodes) the "data" component of a dense object into dst, which must
// have exactly its number of elements, and T must be its dtype.
func Read[T Element](r *Reader, name string, dst []T) error {
	h, err := r.acquire()
	if err != nil {
		return err
	}
	defer r.mu.RUnlock()
	cname, crole := C.CString(name), C.CString("data")
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(crole))
	info, err := r.dataInfo(h, cname, crole)
	if err != nil {
		return err
	}
	if want := DTypeOf[T](); DType(info.dtype) != want {
		return errorf(ErrInvalidArgument, "object '%s' is %s, not %s", name, DType(info.dtype), want)
	}
	var zero T
	// The library checks the size: fewer bytes than the data is ErrBufferTooSmall, more
	// ErrInvalidArgument, and dst is untouched then.
	var msg *C.char
	return result(C.ztgo_read(h, cname, crole, pointerTo(dst), C.size_t(uintptr(len(dst))*unsafe.Sizeof(zero)), &msg), msg)
}

// ReadAs decodes the "data" component of a dense object into a new []T, converting each
// element to T's dtype (bf16, f16 or fp8 to float32, i8 to int64 ...). A lossy
// conversion (float to integer, i64 to float32 ...) is ErrUnsupported.
func ReadAs[T Element](r *Reader, name string) ([]T, error) {
	h, err := r.acquire()
	if err != nil {
		return nil, err
	}
	defer r.mu.RUnlock()
	cname, crole := C.CString(name), C.CString("data")
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(crole))
	info, err := r.dataInfo(h, cname, crole)
	if err != nil {
		return nil, err
	}
	stored := DType(info.dtype)
	if stored.Size() == 0 {
		return nil, errorf(ErrUnsupported, "object '%s' has an unknown dtype %d", name, uint32(stored))
	}
	dst := make([]T, int(uint64(info.decoded_length)/stored.Size()))
	var zero T
	var msg *C.char
	err = result(C.ztgo_read_as(h, cname, crole, C.uint32_t(DTypeOf[T]()), pointerTo(dst),
		C.size_t(uintptr(len(dst))*unsafe.Sizeof(zero)), &msg), msg)
	if err != nil {
		return nil, err
	}
	return dst, nil
}

// pointerTo is the address of s's first element, or nil for an empty slice. Passing it
// to C is allowed: the elements hold no Go pointers, and C does not keep it.
func pointerTo[T Element](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// Verify checks every stored digest: ErrChecksum names the first mismatch.
func (r *Reader) Verify() error {
	h, err := r.acquire()
	if err != nil {
		return err
	}
	defer r.mu.RUnlock()
	var msg *C.char
	return result(C.ztgo_verify(h, &msg), msg)
}

// AttributesJSON is the attributes of object name as JSON text, or of the file when
// name is "". "{}" when there are none.
func (r *Reader) AttributesJSON(name string) (string, error) {
	h, err := r.acquire()
	if err != nil {
		return "", err
	}
	defer r.mu.RUnlock()
	var cname *C.char
	if name != "" {
		cname = C.CString(name)
		defer C.free(unsafe.Pointer(cname))
	}
	var json *C.char
	var msg *C.char
	if err := result(C.ztgo_attributes(h, cname, &json, &msg), msg); err != nil {
		return "", err
	}
	return C.GoString(json), nil
}
