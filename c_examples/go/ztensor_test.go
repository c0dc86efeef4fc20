package ztensor_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"ztensor.example/ztensor"
)

// wantStatus fails the test unless err is an *ztensor.Error with that status whose
// message contains every fragment.
func wantStatus(t *testing.T, err error, status ztensor.Status, fragments ...string) {
	t.Helper()
	var zerr *ztensor.Error
	if !errors.As(err, &zerr) {
		t.Fatalf("want a *ztensor.Error with %v, got %v", status, err)
	}
	if zerr.Status != status {
		t.Fatalf("want %v, got %v: %q", status, zerr.Status, zerr.Message)
	}
	if !errors.Is(err, status) {
		t.Fatalf("errors.Is(err, %v) is false", status)
	}
	for _, f := range fragments {
		if !strings.Contains(zerr.Message, f) {
			t.Fatalf("message %q lacks %q", zerr.Message, f)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// bf16 bits of small exactly representable floats.
func bf16(f float32) uint16 { return uint16(math.Float32bits(f) >> 16) }

// writeSample writes the file the reading tests use and returns its path.
func writeSample(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sample.zt")
	w, err := ztensor.Create(path)
	must(t, err)
	defer w.Close()

	must(t, w.Add("w", []uint64{2, 3}, []float32{1, 2, 3, 4, 5, 6.5},
		&ztensor.WriteOptions{Digest: ztensor.SHA256}))
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(i*i) - 7
	}
	must(t, w.Add("ids", []uint64{10, 100}, ids,
		&ztensor.WriteOptions{Encoding: ztensor.Zstd, Level: 5, Digest: ztensor.XXH3}))
	must(t, w.Add("scalar", nil, []float64{-0.125}, nil))
	must(t, w.Add("empty", []uint64{0, 4}, []uint16{}, nil))
	halves := []uint16{bf16(1), bf16(-2), bf16(0.5), bf16(1024)}
	raw := make([]byte, 2*len(halves))
	for i, h := range halves {
		raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
	}
	must(t, w.AddBytes("h", ztensor.BF16, []uint64{4}, raw, nil))
	must(t, w.SetAttributesJSON("", `{"model":"go-test","layers":2}`))
	must(t, w.SetAttributesJSON("w", `{"scale":0.5}`))

	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("%s exists before Finish: %v", path, err)
	}
	must(t, w.Finish())
	must(t, w.Close())
	return path
}

func TestVersion(t *testing.T) {
	// The library's ABI is the header's: the same MAJOR.MINOR while 0.x.
	h := ztensor.HeaderVersion()
	series := h[:strings.LastIndex(h, ".")+1]
	if v := ztensor.Version(); !strings.HasPrefix(v, series) {
		t.Fatalf("library version %q, this package was compiled against the header of %s", v, h)
	}
}

func TestWriteThenRead(t *testing.T) {
	path := writeSample(t)
	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()

	if v := r.FileVersion(); v != "2" { // zTensor v2, the writer's default
		t.Fatalf("file version %q", v)
	}
	objects, err := r.Objects()
	must(t, err)
	type row struct {
		name, format string
		shape        []uint64
		dtype        ztensor.DType
		encoding     ztensor.Encoding
		digest       string
	}
	var got []row
	for _, o := range objects {
		if len(o.Components) != 1 || o.Components[0].Role != "data" {
			t.Fatalf("%s: components %+v", o.Name, o.Components)
		}
		c := o.Components[0]
		digest := c.Digest
		if i := strings.IndexByte(digest, ':'); i >= 0 {
			digest = digest[:i]
		}
		got = append(got, row{o.Name, o.Format, o.Shape, c.DType, c.Encoding, digest})
	}
	// v2 lists objects sorted by name, not in write order, and records an xxh3 digest
	// where none is asked for.
	want := []row{
		{"empty", "dense", []uint64{0, 4}, ztensor.U16, ztensor.Raw, "xxh3"},
		{"h", "dense", []uint64{4}, ztensor.BF16, ztensor.Raw, "xxh3"},
		{"ids", "dense", []uint64{10, 100}, ztensor.I64, ztensor.Zstd, "xxh3"},
		{"scalar", "dense", []uint64{}, ztensor.F64, ztensor.Raw, "xxh3"},
		{"w", "dense", []uint64{2, 3}, ztensor.F32, ztensor.Raw, "sha256"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("objects:\n got %+v\nwant %+v", got, want)
	}
	if n := r.Len(); n != 5 {
		t.Fatalf("Len %d", n)
	}
	if o, err := r.Lookup("ids"); err != nil || o.Index != 2 || o.Components[0].DecodedLength != 8000 {
		t.Fatalf("Lookup(ids) = %+v, %v", o, err)
	}

	// Zero-copy: a slice of the mapped file, at the component's offset.
	v, err := r.View("w", "data")
	must(t, err)
	if !v.ZeroCopy || v.Size != 24 || v.DType != ztensor.F32 {
		t.Fatalf("view of w: %+v", v)
	}
	if uintptr(v.Data)%64 != 0 {
		t.Fatalf("view of w at %p is not 64-byte aligned", v.Data)
	}
	w32, err := ztensor.ViewSlice[float32](r, "w")
	must(t, err)
	if !reflect.DeepEqual(w32, []float32{1, 2, 3, 4, 5, 6.5}) {
		t.Fatalf("w = %v", w32)
	}
	if unsafe.Pointer(&w32[0]) != v.Data {
		t.Fatalf("ViewSlice copied: %p != %p", &w32[0], v.Data)
	}

	// zstd: decoded once, then the same memory on every view.
	ids, err := ztensor.ViewSlice[int64](r, "ids")
	must(t, err)
	again, err := ztensor.ViewSlice[int64](r, "ids")
	must(t, err)
	if len(ids) != 1000 || &ids[0] != &again[0] {
		t.Fatalf("ids: len %d, %p vs %p", len(ids), &ids[0], &again[0])
	}
	for i, x := range ids {
		if x != int64(i*i)-7 {
			t.Fatalf("ids[%d] = %d", i, x)
		}
	}
	if v, _ := r.View("ids", "data"); v.ZeroCopy {
		t.Fatal("a zstd view claims to be zero-copy")
	}

	// Copies into Go memory.
	dst := make([]int64, 1000)
	must(t, ztensor.Read(r, "ids", dst))
	if !reflect.DeepEqual(dst, ids) {
		t.Fatal("Read(ids) differs from the view")
	}
	scalar := make([]float64, 1)
	must(t, ztensor.Read(r, "scalar", scalar))
	if scalar[0] != -0.125 {
		t.Fatalf("scalar = %v", scalar[0])
	}
	empty, err := ztensor.ViewSlice[uint16](r, "empty")
	must(t, err)
	if len(empty) != 0 {
		t.Fatalf("empty = %v", empty)
	}
	must(t, ztensor.Read(r, "empty", []uint16{}))

	// Converted copies: bf16 -> f32, f32 -> f64.
	h, err := ztensor.ReadAs[float32](r, "h")
	must(t, err)
	if !reflect.DeepEqual(h, []float32{1, -2, 0.5, 1024}) {
		t.Fatalf("h = %v", h)
	}
	w64, err := ztensor.ReadAs[float64](r, "w")
	must(t, err)
	if !reflect.DeepEqual(w64, []float64{1, 2, 3, 4, 5, 6.5}) {
		t.Fatalf("w as f64 = %v", w64)
	}
	hb, err := r.View("h", "data")
	must(t, err)
	if !reflect.DeepEqual(hb.Bytes(), []byte{0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x80, 0x44}) {
		t.Fatalf("h bytes = % x", hb.Bytes())
	}

	attrs, err := r.AttributesJSON("")
	must(t, err)
	if attrs != `{"model":"go-test","layers":2}` {
		t.Fatalf("file attributes %s", attrs)
	}
	attrs, err = r.AttributesJSON("w")
	must(t, err)
	if attrs != `{"scale":0.5}` {
		t.Fatalf("attributes of w %s", attrs)
	}
	attrs, err = r.AttributesJSON("ids")
	must(t, err)
	if attrs != `{}` {
		t.Fatalf("attributes of ids %s", attrs)
	}
	must(t, r.Verify())

	// The verify-on-open and pread paths read the same values.
	r2, err := ztensor.OpenWith(path, ztensor.OpenOptions{NoMmap: true, Verify: true})
	must(t, err)
	defer r2.Close()
	w32b, err := ztensor.ViewSlice[float32](r2, "w")
	must(t, err)
	if !reflect.DeepEqual(w32b, w32) {
		t.Fatalf("w without mmap = %v", w32b)
	}
	if v, _ := r2.View("w", "data"); v.ZeroCopy {
		t.Fatal("a view of a NoMmap reader claims to be zero-copy")
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.zt")
	_, err := ztensor.Open(missing)
	wantStatus(t, err, ztensor.ErrIO, missing)

	garbage := filepath.Join(dir, "garbage.zt")
	must(t, os.WriteFile(garbage, []byte("this is not a tensor file at all"), 0o644))
	_, err = ztensor.Open(garbage)
	wantStatus(t, err, ztensor.ErrFormat, garbage)

	path := writeSample(t)
	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()

	_, err = r.Find("nope")
	wantStatus(t, err, ztensor.ErrNotFound, path+": no object named 'nope'")
	_, err = r.View("w", "scales")
	wantStatus(t, err, ztensor.ErrNotFound, "'w'", "'scales'")
	_, err = r.Object(5)
	wantStatus(t, err, ztensor.ErrNotFound)
	_, err = r.AttributesJSON("nope")
	wantStatus(t, err, ztensor.ErrNotFound, "'nope'")

	// Sizes must be exact; a refused read leaves dst untouched.
	small := []float32{9, 9, 9, 9, 9}
	wantStatus(t, ztensor.Read(r, "w", small), ztensor.ErrBufferTooSmall)
	if !reflect.DeepEqual(small, []float32{9, 9, 9, 9, 9}) {
		t.Fatalf("a refused read wrote %v", small)
	}
	wantStatus(t, ztensor.Read(r, "w", make([]float32, 7)), ztensor.ErrInvalidArgument)
	// The Go side checks the element type.
	wantStatus(t, ztensor.Read(r, "w", make([]int32, 6)), ztensor.ErrInvalidArgument, "f32, not i32")
	_, err = ztensor.ViewSlice[float64](r, "w")
	wantStatus(t, err, ztensor.ErrInvalidArgument, "f32, not f64")
	// Lossy conversions are refused by the library.
	_, err = ztensor.ReadAs[int32](r, "w")
	wantStatus(t, err, ztensor.ErrUnsupported)
	_, err = ztensor.ReadAs[float32](r, "ids")
	wantStatus(t, err, ztensor.ErrUnsupported)

	// A closed reader refuses everything; closing again is fine.
	must(t, r.Close())
	must(t, r.Close())
	_, err = r.Find("w")
	wantStatus(t, err, ztensor.ErrState, "closed")
	if r.Len() != 0 {
		t.Fatal("Len of a closed reader")
	}

	// Corrupt one stored byte of w (sha256) and of ids (xxh3): Verify names them.
	r, err = ztensor.Open(path)
	must(t, err)
	o, err := r.Lookup("w")
	must(t, err)
	offset := o.Components[0].Offset
	r.Close()
	data, err := os.ReadFile(path)
	must(t, err)
	data[offset] ^= 0xff
	bad := filepath.Join(dir, "bad.zt")
	must(t, os.WriteFile(bad, data, 0o644))
	r, err = ztensor.Open(bad)
	must(t, err)
	wantStatus(t, r.Verify(), ztensor.ErrChecksum, "'w'")
	r.Close()
	_, err = ztensor.OpenWith(bad, ztensor.OpenOptions{Verify: true})
	wantStatus(t, err, ztensor.ErrChecksum, "'w'")

	// Limits: a reader refuses a rank above its max_rank (a zTensor 1.2 file: the
	// library's v2 reader applies only the format's own rank limit, 64, so far).
	if dir := os.Getenv("ZT_TEST_VECTORS"); dir != "" {
		_, err = ztensor.OpenWith(filepath.Join(dir, "reference/v12_mixed.zt"), ztensor.OpenOptions{MaxRank: 1})
		wantStatus(t, err, ztensor.ErrLimit)
	}
}

func TestWriterErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.zt")
	w, err := ztensor.Create(path)
	must(t, err)
	defer w.Close()
	// 5 elements for a [2, 3] shape.
	wantStatus(t, w.Add("bad", []uint64{2, 3}, []float32{1, 2, 3, 4, 5}, nil), ztensor.ErrInvalidArgument, "'bad'")
	wantStatus(t, w.Add("int", []uint64{1}, []int{1}, nil), ztensor.ErrInvalidArgument, "[]int")
	wantStatus(t, w.Add("", []uint64{1}, []uint8{1}, nil), ztensor.ErrInvalidArgument)
	wantStatus(t, w.Add("enc", []uint64{1}, []uint8{1}, &ztensor.WriteOptions{Encoding: 7}), ztensor.ErrInvalidArgument)
	must(t, w.Add("ok", []uint64{1}, []uint8{1}, nil))
	wantStatus(t, w.Add("ok", []uint64{1}, []uint8{2}, nil), ztensor.ErrInvalidArgument, "'ok'")
	wantStatus(t, w.SetAttributesJSON("", `[1, 2]`), ztensor.ErrInvalidArgument)
	must(t, w.Finish())
	wantStatus(t, w.Add("late", []uint64{1}, []uint8{1}, nil), ztensor.ErrState)
	wantStatus(t, w.Finish(), ztensor.ErrState)
	must(t, w.Close())
	wantStatus(t, w.Add("closed", []uint64{1}, []uint8{1}, nil), ztensor.ErrState, "closed")

	// The refused objects are not in the file.
	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()
	objects, err := r.Objects()
	must(t, err)
	if len(objects) != 1 || objects[0].Name != "ok" {
		t.Fatalf("objects %+v", objects)
	}

	// An abandoned writer leaves nothing at its path.
	abandoned := filepath.Join(t.TempDir(), "abandoned.zt")
	w2, err := ztensor.Create(abandoned)
	must(t, err)
	must(t, w2.Add("x", []uint64{1}, []uint8{1}, nil))
	must(t, w2.Close())
	if _, err := os.Stat(abandoned); !os.IsNotExist(err) {
		t.Fatalf("an abandoned writer left %s: %v", abandoned, err)
	}
	entries, err := os.ReadDir(filepath.Dir(abandoned))
	must(t, err)
	if len(entries) != 0 {
		t.Fatalf("an abandoned writer left %v", entries)
	}
}

// Many goroutines share one Reader; half their calls fail on purpose. Every error must
// carry the status and the message of that goroutine's own call: with zt_last_error read
// in a separate cgo call, goroutines moving between OS threads would get another
// goroutine's message (or "").
func TestConcurrentErrors(t *testing.T) {
	path := writeSample(t)
	r, err := ztensor.Open(path)
	must(t, err)
	defer r.Close()

	old := runtime.GOMAXPROCS(8) // more Ps than cores: goroutines move between threads often
	defer runtime.GOMAXPROCS(old)

	const goroutines, rounds = 32, 300
	var wg sync.WaitGroup
	failures := make(chan string, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			fail := func(format string, args ...interface{}) {
				failures <- fmt.Sprintf("goroutine %d: "+format, append([]interface{}{g}, args...)...)
			}
			dst := make([]int64, 1000)
			for i := 0; i < rounds; i++ {
				name := fmt.Sprintf("missing-%d-%d", g, i)
				_, err := r.Find(name)
				var zerr *ztensor.Error
				if !errors.As(err, &zerr) || zerr.Status != ztensor.ErrNotFound || zerr.Message != path+": no object named '"+name+"'" {
					fail("Find(%s): %v", name, err)
					return
				}
				runtime.Gosched()
				// A missing role: the message names this goroutine's own role.
				role := fmt.Sprintf("role-%d-%d", g, i)
				_, err = r.View("w", role)
				if !errors.As(err, &zerr) || zerr.Status != ztensor.ErrNotFound || !strings.Contains(zerr.Message, "'"+role+"'") {
					fail("View(w, %s): %v", role, err)
					return
				}
				// Successful calls in between, with exact values.
				w32, err := ztensor.ViewSlice[float32](r, "w")
				if err != nil || w32[5] != 6.5 {
					fail("ViewSlice(w): %v %v", w32, err)
					return
				}
				if err := ztensor.Read(r, "ids", dst); err != nil || dst[999] != 999*999-7 {
					fail("Read(ids): %v", err)
					return
				}
				err = ztensor.Read(r, "ids", dst[:g%999+1])
				if !errors.As(err, &zerr) || zerr.Status != ztensor.ErrBufferTooSmall || zerr.Message == "" {
					fail("short Read(ids): %v", err)
					return
				}
				if (i+g)%50 == 0 {
					if err := r.Verify(); err != nil {
						fail("Verify: %v", err)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
}

// Names and sizes come from the library's dtype table.
func TestDTypes(t *testing.T) {
	names := []string{"f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "bool"}
	sizes := []uint64{8, 4, 2, 2, 8, 4, 2, 1, 8, 4, 2, 1, 1}
	for i, name := range names {
		d := ztensor.DType(i)
		if d.String() != name || d.Size() != sizes[i] {
			t.Errorf("DType(%d): %q, size %d; want %q, size %d", i, d.String(), d.Size(), name, sizes[i])
		}
		parsed, err := ztensor.ParseDType(name)
		if err != nil || parsed != d {
			t.Errorf("ParseDType(%q) = %v, %v", name, parsed, err)
		}
	}
	if ztensor.BF16.String() != "bf16" || ztensor.Bool.Size() != 1 || ztensor.F64.Size() != 8 {
		t.Errorf("BF16 %q, Bool size %d, F64 size %d", ztensor.BF16.String(), ztensor.Bool.Size(), ztensor.F64.Size())
	}
	if d := ztensor.DType(13); d.String() != "dtype(13)" || d.Size() != 0 {
		t.Errorf("DType(13): %q, size %d", d.String(), d.Size())
	}
	_, err := ztensor.ParseDType("float32")
	wantStatus(t, err, ztensor.ErrInvalidArgument, "unknown dtype name 'float32'")
}

// Every format zt_open reads, and what FileFormat and FileVersion say about it.
func TestFileFormats(t *testing.T) {
	dir := os.Getenv("ZT_TEST_VECTORS")
	if dir == "" {
		t.Skip("ZT_TEST_VECTORS is not set (ctest sets it to tests/vectors)")
	}
	for _, c := range []struct{ file, format, version string }{
		{"reference/v12_mixed.zt", "zt", "1.2.0"},
		{"reference/v01_multi.zt", "zt", "0.1.0"},
		{"gguf/plain_v3.gguf", "gguf", "3"},
	} {
		r, err := ztensor.Open(filepath.Join(dir, c.file))
		must(t, err)
		if r.FileFormat() != c.format || r.FileVersion() != c.version {
			t.Errorf("%s: %q %q, want %q %q", c.file, r.FileFormat(), r.FileVersion(), c.format, c.version)
		}
		must(t, r.Close())
		if r.FileFormat() != "" {
			t.Errorf("%s: FileFormat after Close is %q", c.file, r.FileFormat())
		}
	}
}

// The reference implementation's v1.2 vector, when ctest passes the vectors directory.
func TestReferenceVector(t *testing.T) {
	dir := os.Getenv("ZT_TEST_VECTORS")
	if dir == "" {
		t.Skip("ZT_TEST_VECTORS is not set (ctest sets it to tests/vectors)")
	}
	r, err := ztensor.Open(filepath.Join(dir, "reference", "v12_mixed.zt"))
	must(t, err)
	defer r.Close()
	objects, err := r.Objects()
	must(t, err)
	var listing []string
	for _, o := range objects {
		roles := []string{}
		for _, c := range o.Components {
			roles = append(roles, c.Role+":"+c.DType.String())
		}
		listing = append(listing, fmt.Sprintf("%s %s %v %s", o.Name, o.Format, o.Shape, strings.Join(roles, ",")))
	}
	want := []string{
		"adj sparse_csr [3 3] indices:u64,indptr:u64,values:u8",
		"big dense [300] data:u8",
		"embed dense [4 6] data:bf16",
		"fp8 dense [9] data:u8",
		"layer.0.bias dense [3] data:f32",
		"layer.0.weight dense [3 4] data:f32",
		"mask dense [10] data:bool",
		"nothing dense [3 0 2] data:i16",
		"pts sparse_coo [10 10] coords:u64,values:f16",
		"q4 quantized_group [2 8] packed_weight:i32,scales:f16,zeros:f16",
		"scalar dense [] data:f64",
		"step dense [1] data:i64",
		"u dense [2] data:u64",
	}
	if !reflect.DeepEqual(listing, want) {
		t.Fatalf("listing:\n%s", strings.Join(listing, "\n"))
	}
	weight, err := ztensor.ViewSlice[float32](r, "layer.0.weight")
	must(t, err)
	if !reflect.DeepEqual(weight, []float32{-1.5, -1.25, -1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1, 1.25}) {
		t.Fatalf("layer.0.weight = %v", weight)
	}
	embed, err := ztensor.ReadAs[float32](r, "embed")
	must(t, err)
	if len(embed) != 24 || embed[0] != 0 || embed[1] != 0.125 || embed[23] != 2.875 {
		t.Fatalf("embed = %v", embed)
	}
	fp8, err := ztensor.ReadAs[float32](r, "fp8")
	must(t, err)
	if fp8[0] != 0 || fp8[2] != 0.5 || fp8[5] != 448 || fp8[6] != -448 || !math.IsNaN(float64(fp8[7])) {
		t.Fatalf("fp8 = %v", fp8)
	}
}
