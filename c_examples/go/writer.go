package ztensor

/*
#include "ztgo.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Digest is a digest algorithm the writer can record (a zt_digest value).
type Digest uint32

// The digest algorithms.
const (
	NoDigest Digest = C.ZT_DIGEST_NONE
	SHA256   Digest = C.ZT_DIGEST_SHA256
	CRC32C   Digest = C.ZT_DIGEST_CRC32C // zTensor 1.x only
	XXH3     Digest = C.ZT_DIGEST_XXH3
)

// WriteOptions say how a component is stored. The zero value (or nil) is raw, no digest.
type WriteOptions struct {
	Encoding Encoding
	Level    int32 // zstd level; 0 = the library's default (3)
	Digest   Digest
}

// Writer writes a .zt file (zTensor v2). Nothing appears at the path until Finish
// succeeds. Calls are serialized, so a Writer may be shared, but one goroutine at a
// time is the normal use.
type Writer struct {
	mu sync.Mutex
	w  *C.zt_writer // nil once closed
}

// Create starts writing path. The bytes go to a temporary file next to it. Always
// Close the Writer (after Finish, or to abandon the file).
func Create(path string) (*Writer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var handle *C.zt_writer
	var msg *C.char
	if err := result(C.ztgo_writer_create(cpath, &handle, &msg), msg); err != nil {
		return nil, err
	}
	w := &Writer{w: handle}
	runtime.SetFinalizer(w, (*Writer).Close) // an abandoned Writer discards its file
	return w, nil
}

func (w *Writer) acquire() (*C.zt_writer, error) {
	w.mu.Lock()
	if w.w == nil {
		w.mu.Unlock()
		return nil, errorf(ErrState, "the writer is closed")
	}
	return w.w, nil
}

// Add adds a dense object with one "data" component. data is a []float64, []float32,
// []int64, []int32, []int16, []int8, []uint64, []uint32, []uint16 or []uint8, holding
// the product of shape elements in row-major order; shape is empty for a scalar.
// The bytes are written now. opts may be nil.
func (w *Writer) Add(name string, shape []uint64, data interface{}, opts *WriteOptions) error {
	switch d := data.(type) {
	case []float64:
		return w.add(name, F64, shape, pointerTo(d), uintptr(len(d))*8, opts)
	case []float32:
		return w.add(name, F32, shape, pointerTo(d), uintptr(len(d))*4, opts)
	case []int64:
		return w.add(name, I64, shape, pointerTo(d), uintptr(len(d))*8, opts)
	case []int32:
		return w.add(name, I32, shape, pointerTo(d), uintptr(len(d))*4, opts)
	case []int16:
		return w.add(name, I16, shape, pointerTo(d), uintptr(len(d))*2, opts)
	case []int8:
		return w.add(name, I8, shape, pointerTo(d), uintptr(len(d)), opts)
	case []uint64:
		return w.add(name, U64, shape, pointerTo(d), uintptr(len(d))*8, opts)
	case []uint32:
		return w.add(name, U32, shape, pointerTo(d), uintptr(len(d))*4, opts)
	case []uint16:
		return w.add(name, U16, shape, pointerTo(d), uintptr(len(d))*2, opts)
	case []uint8:
		return w.add(name, U8, shape, pointerTo(d), uintptr(len(d)), opts)
	}
	return errorf(ErrInvalidArgument, "object '%s': unsupported data type %T", name, data)
}

// AddBytes adds a dense object whose elements are given as little-endian bytes, for the
// dtypes without a Go type (F16, BF16, Bool) or data already in bytes.
func (w *Writer) AddBytes(name string, dtype DType, shape []uint64, data []byte, opts *WriteOptions) error {
	return w.add(name, dtype, shape, pointerTo(data), uintptr(len(data)), opts)
}

func (w *Writer) add(name string, dtype DType, shape []uint64, data unsafe.Pointer, size uintptr, opts *WriteOptions) error {
	h, err := w.acquire()
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var copts *C.zt_write_options
	if opts != nil {
		copts = &C.zt_write_options{
			encoding: C.uint32_t(opts.Encoding),
			level:    C.int32_t(opts.Level),
			digest:   C.uint32_t(opts.Digest),
		}
	}
	var cshape *C.uint64_t
	if len(shape) > 0 {
		cshape = (*C.uint64_t)(unsafe.Pointer(&shape[0]))
	}
	var msg *C.char
	// Go memory passed to C for the duration of the call only: data, shape and options
	// hold no Go pointers, and the library copies what it keeps.
	return result(C.ztgo_writer_add(h, cname, C.uint32_t(dtype), cshape, C.size_t(len(shape)),
		data, C.size_t(size), copts, &msg), msg)
}

// SetAttributesJSON sets the attributes of object name (already added), or of the file
// when name is "", from a JSON object. A second call replaces.
func (w *Writer) SetAttributesJSON(name, json string) error {
	h, err := w.acquire()
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	var cname *C.char
	if name != "" {
		cname = C.CString(name)
		defer C.free(unsafe.Pointer(cname))
	}
	cjson := C.CString(json)
	defer C.free(unsafe.Pointer(cjson))
	var msg *C.char
	return result(C.ztgo_writer_set_attributes(h, cname, cjson, &msg), msg)
}

// Finish writes the manifest, syncs and renames the file into place. After it, whatever
// its result, only Close is accepted (other calls return ErrState).
func (w *Writer) Finish() error {
	h, err := w.acquire()
	if err != nil {
		return err
	}
	defer w.mu.Unlock()
	var msg *C.char
	return result(C.ztgo_writer_finish(h, &msg), msg)
}

// Close frees the writer; an unfinished file is discarded (nothing appears at the path).
// Closing twice is allowed. It always returns nil (it implements io.Closer).
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.w != nil {
		C.zt_writer_free(w.w)
		w.w = nil
		runtime.SetFinalizer(w, nil)
	}
	return nil
}
