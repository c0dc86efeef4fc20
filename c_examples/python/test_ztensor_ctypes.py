#!/usr/bin/env python3
"""Tests of ztensor_ctypes.py (run by ctest as lang_python).

    ZTENSOR_LIBRARY=build/lib/libztensor.so.0.2 ZT_TEST_VECTORS=tests/vectors \
        python test_ztensor_ctypes.py

Reads the reference implementation's vectors: exact values, and views that share memory
with the file mapping (zero-copy) or with the reader's decoded copy.
"""
import gc
import os
import subprocess
import sys
import unittest
import weakref

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ztensor_ctypes as zt  # noqa: E402

VECTORS = os.path.join(os.environ.get("ZT_TEST_VECTORS", ""), "reference")
MIXED = os.path.join(VECTORS, "v12_mixed.zt")
LEGACY = os.path.join(VECTORS, "v01_multi.zt")


def base_chain(array):
    """array.base, its base ... down to the first object that is not an ndarray."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return base


class CtypesExample(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(MIXED):
            raise unittest.SkipTest("set ZT_TEST_VECTORS to the tests/vectors directory")
        cls.lib = zt.load_library()

    def test_listing(self):
        with zt.Reader(MIXED, self.lib) as r:
            self.assertEqual(r.version, "1.2.0")
            self.assertEqual(len(r), 13)
            listing = [(o.name, o.format, o.shape, [(c.role, c.dtype, c.type, c.encoding) for c in o.components])
                       for o in r.objects()]
        self.assertEqual(listing[:6], [
            ("adj", "sparse_csr", (3, 3), [("indices", "u64", None, "zstd"), ("indptr", "u64", None, "zstd"),
                                           ("values", "u8", None, "zstd")]),
            ("big", "dense", (300,), [("data", "u8", None, "zstd")]),
            ("embed", "dense", (4, 6), [("data", "bf16", None, "zstd")]),
            ("fp8", "dense", (9,), [("data", "u8", "f8_e4m3fn", "raw")]),
            ("layer.0.bias", "dense", (3,), [("data", "f32", None, "raw")]),
            ("layer.0.weight", "dense", (3, 4), [("data", "f32", None, "raw")]),
        ])
        self.assertEqual(listing[10], ("scalar", "dense", (), [("data", "f64", None, "raw")]))

    def test_zero_copy_view(self):
        r = zt.Reader(MIXED, self.lib)
        raw = r.raw_view("layer.0.weight")
        weight = r.view("layer.0.weight")
        self.assertTrue(raw.zero_copy)
        self.assertEqual(weight.dtype, np.float32)
        self.assertEqual(weight.shape, (3, 4))
        np.testing.assert_array_equal(weight, np.arange(-1.5, 1.5, 0.25, dtype=np.float32).reshape(3, 4))
        # The same memory as the library's pointer: no copy was made ...
        self.assertEqual(weight.ctypes.data, raw.data)
        self.assertFalse(weight.flags.owndata)
        self.assertFalse(weight.flags.writeable)
        with self.assertRaises(ValueError):
            weight[0, 0] = 1.0
        # ... and that memory is the file, mapped: the pointer lies in a mapping of it, at
        # the component's offset from the start of the file.
        self.assertEqual(os.path.realpath(zt.mapped_file(raw.data)), os.path.realpath(MIXED))
        bias_raw = r.raw_view("layer.0.bias")
        offsets = {o.name: o.components[0].offset for o in r.objects()}
        self.assertEqual(raw.data - bias_raw.data, offsets["layer.0.weight"] - offsets["layer.0.bias"])
        self.assertEqual(raw.data % 64, 0)
        # arr.base leads to the ctypes buffer at that address, which holds the open reader.
        memory = base_chain(weight)
        self.assertEqual(zt.ctypes.addressof(memory), raw.data)
        self.assertIs(memory.zt_handle, r._handle)

    def test_decoded_view(self):
        with zt.Reader(MIXED, self.lib) as r:
            raw = r.raw_view("embed")
            embed = r.view("embed")
            again = r.view("embed")
        self.assertFalse(raw.zero_copy)  # zstd: decoded once, kept by the reader
        self.assertEqual(embed.ctypes.data, raw.data)
        self.assertEqual(again.ctypes.data, raw.data)
        self.assertEqual((embed.dtype, embed.shape), (np.dtype("<u2"), (4, 6)))
        as_f32 = (embed.astype(np.uint32) << 16).view(np.float32)  # bf16 bits -> f32
        np.testing.assert_array_equal(as_f32.ravel()[:4], [0.0, 0.125, 0.25, 0.375])
        self.assertEqual(as_f32[3, 5], 2.875)

    def test_dtypes_and_shapes(self):
        with zt.Reader(MIXED, self.lib) as r:
            self.assertEqual(r.view("scalar").shape, ())
            self.assertEqual(float(r.view("scalar")), -1.0)
            self.assertEqual(r.view("step").tolist(), [1234567890123])
            self.assertEqual(r.view("u").tolist(), [2**64 - 1, 0])
            self.assertEqual(r.view("mask").tolist(),
                             [True, False, False, True, False, False, True, False, False, True])
            self.assertEqual(r.view("nothing").shape, (3, 0, 2))
            self.assertEqual(r.view("big")[:7].tolist(), [0, 1, 2, 3, 4, 0, 1])
            self.assertEqual(r.view("adj", "indptr").tolist(), [0, 1, 2, 3])
            self.assertEqual(r.view("pts", "values").tolist(), [0.25, 0.75])

    def test_legacy_file(self):
        with zt.Reader(LEGACY, self.lib) as r:
            self.assertEqual(r.version, "0.1.0")
            self.assertEqual([o.name for o in r.objects()], ["zeta", "alpha", "mid.dle/name", "beta", "ß"])  # file order
            zeta = r.view("zeta")
            self.assertEqual(zeta.shape, (1, 2, 3))
            self.assertEqual(zeta.ravel().tolist(), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
            self.assertEqual(r.view("ß").tolist(), [-1])

    def test_arrays_keep_the_reader_alive(self):
        r = zt.Reader(MIXED, self.lib)
        weight = r.view("layer.0.weight")
        handle = weakref.ref(r._handle)
        r.close()
        del r
        gc.collect()
        self.assertIsNotNone(handle(), "the reader was closed under a live array")
        self.assertEqual(weight[2, 3], 1.25)  # still mapped
        del weight
        gc.collect()
        self.assertIsNone(handle(), "the reader outlived its last array")

    def test_errors(self):
        with self.assertRaises(zt.ZtError) as e:
            zt.Reader(os.path.join(VECTORS, "no-such-file.zt"), self.lib)
        self.assertEqual((e.exception.status, e.exception.status_name), (zt.ZT_ERR_IO, "ZT_ERR_IO"))
        self.assertIn("no-such-file.zt", e.exception.message)

        with self.assertRaises(zt.ZtError) as e:
            zt.Reader(os.path.join(VECTORS, "v12_mixed.json"), self.lib)
        self.assertEqual(e.exception.status, zt.ZT_ERR_FORMAT)

        with zt.Reader(MIXED, self.lib) as r:
            with self.assertRaises(zt.ZtError) as e:
                r.view("missing")
            self.assertEqual(e.exception.status, zt.ZT_ERR_NOT_FOUND)
            self.assertEqual(e.exception.message, f"{MIXED}: no object named 'missing'")
            with self.assertRaises(zt.ZtError) as e:
                r.view("adj", "data")
            self.assertEqual(e.exception.status, zt.ZT_ERR_NOT_FOUND)
            self.assertIn("'data'", e.exception.message)
        with self.assertRaises(zt.ZtError) as e:
            len(r)
        self.assertEqual(e.exception.status, zt.ZT_ERR_STATE)

    def test_command_line(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ztensor_ctypes.py")
        out = subprocess.run([sys.executable, script, MIXED, "layer.0.bias"], check=True,
                             capture_output=True, text=True).stdout.splitlines()
        self.assertEqual(out[0], f"{MIXED}: zt 1.2.0, 13 objects")
        self.assertEqual(out[4], "  fp8  dense [9]  data: u8/f8_e4m3fn raw")
        self.assertEqual(out[10], "  q4  quantized_group [2, 8]  packed_weight: i32 raw, scales: f16 raw, zeros: f16 raw")
        self.assertRegex(out[14], r"^layer\.0\.bias: float32 \(3,\) at 0x[0-9a-f]+ \(zero-copy, in the mapping of "
                         r".*v12_mixed\.zt\), owndata=False$")
        self.assertEqual(out[15], "[ 0.5, -0.5,  0. ]")
        failed = subprocess.run([sys.executable, script, MIXED, "missing"], capture_output=True, text=True)
        self.assertEqual(failed.returncode, 1)
        self.assertEqual(failed.stderr, f"ztensor_ctypes: {MIXED}: no object named 'missing' (ZT_ERR_NOT_FOUND)\n")

    def test_other_formats(self):
        """zt_open reads GGUF and Tensogram files too; the listing says which format."""
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ztensor_ctypes.py")
        vectors = os.path.dirname(VECTORS)
        gguf = os.path.join(vectors, "gguf", "plain_v3.gguf")
        out = subprocess.run([sys.executable, script, gguf, "f64"], check=True,
                             capture_output=True, text=True).stdout.splitlines()
        self.assertEqual(out[0], f"{gguf}: gguf 3, 9 objects")
        self.assertEqual(out[1], "  f32  dense [2, 3, 4]  data: f32 raw")
        with zt.Reader(gguf, self.lib) as r:
            self.assertEqual((r.format, r.version), ("gguf", "3"))
        tensogram = os.path.join(vectors, "tensogram", "compressed.tgm")
        with zt.Reader(tensogram, self.lib) as r:
            self.assertEqual(r.format, "tensogram")
            self.assertIn("pipeline", [c.encoding for o in r.objects() for c in o.components])


if __name__ == "__main__":
    unittest.main(verbosity=2)
