package ztensor_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"ztensor.example/ztensor"
)

// Write a file, list it, and use a tensor in place.
func Example() {
	dir, err := os.MkdirTemp("", "ztensor-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.zt")

	w, err := ztensor.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	if err := w.Add("embed", []uint64{2, 3}, []float32{0.5, 1, 1.5, 2, 2.5, 3}, nil); err != nil {
		log.Fatal(err)
	}
	if err := w.Add("steps", []uint64{3}, []int64{10, 20, 30},
		&ztensor.WriteOptions{Encoding: ztensor.Zstd, Digest: ztensor.SHA256}); err != nil {
		log.Fatal(err)
	}
	if err := w.Finish(); err != nil {
		log.Fatal(err)
	}

	r, err := ztensor.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close() // keeps r reachable, so the slices below stay valid
	objects, err := r.Objects()
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range objects {
		c := o.Components[0]
		fmt.Println(o.Name, o.Format, o.Shape, c.DType, c.Encoding)
	}

	embed, err := ztensor.ViewSlice[float32](r, "embed") // no copy: points into the file
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(embed[3:])

	_, err = r.Find("missing")
	fmt.Println(errors.Is(err, ztensor.ErrNotFound), strings.TrimPrefix(err.Error(), "ztensor: "+path+": "))
	// Output:
	// embed dense [2 3] f32 raw
	// steps dense [3] i64 zstd
	// [2 2.5 3]
	// true no object named 'missing' (ZT_ERR_NOT_FOUND)
}
