#!/usr/bin/env python3
"""Deterministic generator of the hostile zTensor corpus (tests/vectors/hostile/).

Plain Python 3, standard library only: its own CBOR encoder (definite and indefinite
lengths, forced head widths, raw byte injection), hand-made zstd frames (raw, RLE and
garbage blocks; optional content size, checksum, dictionary id), CRC-32C, SHA-256 and
XXH64. Running it rewrites every *.zt file of this directory and expected.tsv (run through
the C API by tests/c/test_hostile.c and the Rust API by tests/hostile_corpus.rs), and of
alloc/ with alloc/expected.tsv (claims that cannot be allocated, run by
tests/hostile_corpus.rs in child processes limited to 2 GiB of address space). The output
is byte-for-byte the same on every run; tests/hostile_corpus.rs checks that the committed
files are current.

Each case states the status a correct reader SHOULD give, from the specs and the
"Validation a reader owes its users" notes, not what some build happens to return. A note
starting with "BUG" marks a case where the library at the time of writing differed
(see the note text).

Usage: python3 generate.py [output-dir]   (default: the directory of this script)
"""

import hashlib
import os
import struct
import sys

# --------------------------------------------------------------------------------------
# CBOR encoder
# --------------------------------------------------------------------------------------


class Raw:
    """Bytes injected verbatim into the CBOR stream."""

    def __init__(self, b):
        self.b = bytes(b)


class U:
    """An unsigned integer with a forced head width (1, 2, 4 or 8 argument bytes)."""

    def __init__(self, n, width):
        self.n, self.width = n, width


class Neg:
    """The negative integer -1 - n (n may be up to 2**64 - 1)."""

    def __init__(self, n):
        self.n = n


class F:
    """A float with a forced width (2, 4 or 8 bytes)."""

    def __init__(self, value, width):
        self.value, self.width = value, width


class Tag:
    def __init__(self, tag, value):
        self.tag, self.value = tag, value


class Simple:
    def __init__(self, n):
        self.n = n


UNDEFINED = object()


class Map:
    """A map given as a list of pairs: any key types, duplicates, any order."""

    def __init__(self, pairs, indef=False):
        self.pairs, self.indef = list(pairs), indef


class Arr:
    def __init__(self, items, indef=False):
        self.items, self.indef = list(items), indef


class IText:
    """An indefinite-length text string made of chunks (str, or Raw for broken chunks)."""

    def __init__(self, chunks):
        self.chunks = chunks


class IBytes:
    def __init__(self, chunks):
        self.chunks = chunks


def head(major, n, width=None):
    if width is None:
        if n < 24:
            return bytes([major << 5 | n])
        width = 1 if n < 1 << 8 else 2 if n < 1 << 16 else 4 if n < 1 << 32 else 8
    info = {1: 24, 2: 25, 4: 26, 8: 27}[width]
    return bytes([major << 5 | info]) + n.to_bytes(width, "big")


def cbor(v):
    if isinstance(v, Raw):
        return v.b
    if v is True:
        return b"\xf5"
    if v is False:
        return b"\xf4"
    if v is None:
        return b"\xf6"
    if v is UNDEFINED:
        return b"\xf7"
    if isinstance(v, int):
        return head(0, v) if v >= 0 else head(1, -1 - v)
    if isinstance(v, U):
        return head(0, v.n, v.width)
    if isinstance(v, Neg):
        return head(1, v.n)
    if isinstance(v, float):
        return b"\xfb" + struct.pack(">d", v)
    if isinstance(v, F):
        code, fmt = {2: (0xF9, ">e"), 4: (0xFA, ">f"), 8: (0xFB, ">d")}[v.width]
        return bytes([code]) + struct.pack(fmt, v.value)
    if isinstance(v, Simple):
        return bytes([0xE0 | v.n]) if v.n < 24 else bytes([0xF8, v.n])
    if isinstance(v, str):
        b = v.encode("utf-8")
        return head(3, len(b)) + b
    if isinstance(v, (bytes, bytearray)):
        return head(2, len(v)) + bytes(v)
    if isinstance(v, IText):
        return b"\x7f" + b"".join(cbor(c) for c in v.chunks) + b"\xff"
    if isinstance(v, IBytes):
        return b"\x5f" + b"".join(cbor(c) for c in v.chunks) + b"\xff"
    if isinstance(v, Tag):
        return head(6, v.tag) + cbor(v.value)
    if isinstance(v, (list, Arr)):
        items, indef = (v.items, v.indef) if isinstance(v, Arr) else (v, False)
        body = b"".join(cbor(i) for i in items)
        return b"\x9f" + body + b"\xff" if indef else head(4, len(items)) + body
    if isinstance(v, (dict, Map)):
        pairs, indef = (v.pairs, v.indef) if isinstance(v, Map) else (list(v.items()), False)
        body = b"".join(cbor(k) + cbor(x) for k, x in pairs)
        return b"\xbf" + body + b"\xff" if indef else head(5, len(pairs)) + body
    raise TypeError(f"cannot encode {v!r}")


# --------------------------------------------------------------------------------------
# Checksums
# --------------------------------------------------------------------------------------


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283

_M64 = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (
    0x9E3779B185EBCA87,
    0xC2B2AE3D27D4EB4F,
    0x165667B19E3779F9,
    0x85EBCA77C2B2AE63,
    0x27D4EB2F165667C5,
)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc, lane):
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def _merge(h, v):
    return (((h ^ _round(0, v)) * _P1) + _P4) & _M64


def xxh64(data, seed=0):
    n, i = len(data), 0
    lane = lambda j: struct.unpack_from("<Q", data, j)[0]  # noqa: E731
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed, (seed - _P1) & _M64]
        while i + 32 <= n:
            v = [_round(v[k], lane(i + 8 * k)) for k in range(4)]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for k in range(4):
            h = _merge(h, v[k])
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h = ((_rotl(h ^ _round(0, lane(i)), 27) * _P1) + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * _P1) & _M64
        h = ((_rotl(h, 23) * _P2) + _P3) & _M64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    h ^= h >> 32
    return h


assert xxh64(b"") == 0xEF46DB3751D8E999


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def crc_digest(data):
    return "crc32c:0x%08X" % crc32c(data)


# --------------------------------------------------------------------------------------
# zstd frames, by hand (raw and RLE blocks decode to known bytes without a compressor)
# --------------------------------------------------------------------------------------

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def block(kind, size, payload=b"", last=False):
    """A block header (type 0 raw, 1 RLE, 2 compressed, 3 reserved) and its payload."""
    h = size << 3 | kind << 1 | int(last)
    return h.to_bytes(3, "little") + payload


def frame(blocks, *, window_log=17, fcs=None, fcs_bytes=None, single=False, checksum_of=None,
          dict_id=None, reserved_bit=False):
    """A frame around the given block bytes. `checksum_of` adds the XXH64 content checksum
    of those decoded bytes. Without `fcs` the header carries no content size, like the
    reference writer's frames."""
    fhd = 0
    tail = b""
    if fcs is not None:
        size = fcs_bytes or (1 if single and fcs < 256 else 2 if 256 <= fcs < 65536 + 256 else 4 if fcs < 1 << 32 else 8)
        flag = {1: 0, 2: 1, 4: 2, 8: 3}[size]
        fhd |= flag << 6
        tail = (fcs - 256 if size == 2 else fcs).to_bytes(size, "little")
    if single:
        fhd |= 1 << 5
    if checksum_of is not None:
        fhd |= 1 << 2
    if reserved_bit:
        fhd |= 1 << 3
    did = b""
    if dict_id is not None:
        fhd |= 3
        did = dict_id.to_bytes(4, "little")
    win = b"" if single else bytes([(window_log - 10) << 3])
    out = ZSTD_MAGIC + bytes([fhd]) + win + did + tail + blocks
    if checksum_of is not None:
        out += struct.pack("<I", xxh64(checksum_of) & 0xFFFFFFFF)
    return out


def zraw(data, **kw):
    """One frame of raw blocks (at most 128 KiB each) holding `data`."""
    chunks = [data[i:i + 131072] for i in range(0, len(data), 131072)] or [b""]
    blocks = b"".join(block(0, len(c), c, last=(i == len(chunks) - 1)) for i, c in enumerate(chunks))
    return frame(blocks, **kw)


def zrle(byte, total, **kw):
    """One frame of RLE blocks decoding to `total` copies of `byte` (4 bytes per 128 KiB)."""
    sizes = [131072] * (total // 131072) + ([total % 131072] if total % 131072 else [])
    blocks = b"".join(block(1, s, bytes([byte]), last=(i == len(sizes) - 1)) for i, s in enumerate(sizes))
    return frame(blocks, **kw)


# --------------------------------------------------------------------------------------
# Values and files
# --------------------------------------------------------------------------------------


def f32s(v):
    return struct.pack("<%df" % len(v), *v)


def f64s(v):
    return struct.pack("<%dd" % len(v), *v)


def u64s(v):
    return struct.pack("<%dQ" % len(v), *v)


def u32s(v):
    return struct.pack("<%dI" % len(v), *v)


def i32s(v):
    return struct.pack("<%di" % len(v), *v)


def i16s(v):
    return struct.pack("<%dh" % len(v), *v)


def lcg_bytes(seed, n):
    """Deterministic pseudo-random bytes."""
    out = bytearray()
    x = seed & 0xFFFFFFFF
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(x >> 16 & 0xFF)
    return bytes(out)


V1 = b"ZTEN1000"
V01 = b"ZTEN0001"


def place(head_magic, blobs):
    out = bytearray(head_magic)
    for off, b in blobs:
        if len(out) < off + len(b):
            out.extend(b"\0" * (off + len(b) - len(out)))
        out[off:off + len(b)] = b
    return out


def v1_file(manifest, blobs=(), *, mbytes=None, size=None, header=V1, footer=V1, pad_to=None):
    """Header, blobs at their offsets (gaps zero), manifest, size, footer."""
    out = place(header, blobs)
    if pad_to is not None:
        out.extend(b"\0" * (pad_to - len(out)))
    mb = cbor(manifest) if mbytes is None else mbytes
    out += mb
    out += struct.pack("<Q", len(mb) if size is None else size)
    out += footer
    return bytes(out)


def v01_file(manifest, blobs=(), *, mbytes=None, size=None, header=V01):
    out = place(header, blobs)
    mb = cbor(manifest) if mbytes is None else mbytes
    out += mb
    out += struct.pack("<Q", len(mb) if size is None else size)
    return bytes(out)


def replace1(hay, old, new):
    assert hay.count(old) == 1, old
    return hay.replace(old, new)


def set_size(data, size, legacy=False):
    b = bytearray(data)
    at = len(b) - (8 if legacy else 16)
    b[at:at + 8] = struct.pack("<Q", size)
    return bytes(b)


DELETE = object()


def deep(v):
    if isinstance(v, dict):
        return {k: deep(x) for k, x in v.items()}
    if isinstance(v, list):
        return [deep(x) for x in v]
    return v


def edit(manifest, path, value=DELETE):
    """A copy of `manifest` with the value at `path` replaced, added, or deleted."""
    m = deep(manifest)
    node = m
    for k in path[:-1]:
        node = node[k]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return m


def comp(dtype, offset, length, **extra):
    c = {"dtype": dtype, "offset": offset, "length": length}
    c.update(extra)
    return c


def zcomp(dtype, offset, length, ulen, **extra):
    c = {"dtype": dtype, "offset": offset, "length": length, "uncompressed_length": ulen, "encoding": "zstd"}
    c.update(extra)
    return c


def obj(shape, fmt, components, **extra):
    o = {"shape": shape, "format": fmt}
    o.update(extra)
    o["components"] = components
    return o


def root(objects, version="1.2.0", **extra):
    r = {"version": version}
    r.update(extra)
    r["objects"] = objects
    return r


# --------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------

CASES = []
NAMES = set()


def case(name, data, open_status, walk_status, note):
    assert name not in NAMES, name
    assert "\t" not in note and "\n" not in note
    NAMES.add(name)
    full = lambda s: s if s in ("-",) else "ZT_" + s if s == "OK" else "ZT_ERR_" + s  # noqa: E731
    if open_status != "OK":
        assert walk_status == "-", name
    CASES.append((name + ".zt", bytes(data), full(open_status), full(walk_status), note))


def ok(name, data, note):
    case(name, data, "OK", "OK", note)


def at_open(name, data, status, note):
    case(name, data, status, "-", note)


def at_walk(name, data, status, note):
    case(name, data, "OK", status, note)


# Shared values.
W4 = f32s([1.0, 2.0, 3.0, 4.0])
D16 = f32s([float(i) for i in range(16)])


def dense_m(version="1.2.0"):
    return root({"w": obj([2, 2], "dense", {"data": comp("f32", 64, 16)})}, version)


def dense_file(m=None, blobs=None, **kw):
    return v1_file(dense_m() if m is None else m, [(64, W4)] if blobs is None else blobs, **kw)


def D(*keys):
    return ("objects", "w", "components", "data") + keys


def O(*keys):
    return ("objects", "w") + keys


def two_m():
    return root({
        "a": obj([32], "dense", {"data": comp("f32", 64, 128)}),
        "b": obj([16], "dense", {"data": comp("f32", 192, 64)}),
    })


TWO_BLOBS = [(64, f32s([float(i) for i in range(32)])), (192, f32s([-float(i) for i in range(16)]))]


def csr_m(idx="u64"):
    return root({"s": obj([2, 3], "sparse_csr", {
        "values": comp("f32", 64, 12),
        "indices": comp(idx, 128, 24 if idx == "u64" else 12),
        "indptr": comp(idx, 192, 24 if idx == "u64" else 12),
    })})


def csr_blobs(values=(1.0, 2.0, 3.0), indices=(0, 2, 1), indptr=(0, 2, 3), pack=u64s):
    return [(64, f32s(list(values))), (128, pack(list(indices))), (192, pack(list(indptr)))]


def S(role, *keys):
    return ("objects", "s", "components", role) + keys


def coo_m():
    return root({"s": obj([2, 3], "sparse_coo", {
        "values": comp("f32", 64, 8),
        "coords": comp("u64", 128, 32),
    })})


def coo_blobs(coords=(0, 1, 2, 0)):
    return [(64, f32s([5.0, 6.0])), (128, u64s(list(coords)))]


def zstd_m(length, ulen, shape=(4, 4), version="1.2.0", **extra):
    return root({"w": obj(list(shape), "dense", {"data": zcomp("f32", 64, length, ulen, **extra)})}, version)


def zstd_file(frame_bytes, ulen, shape=(4, 4), **extra):
    return v1_file(zstd_m(len(frame_bytes), ulen, shape, **extra), [(64, frame_bytes)])


def multi():
    """A v1.2 file with several structures: dense raw with a digest, zstd, CSR, attributes."""
    z = zraw(D16)
    m = root({
        "w": obj([2, 2], "dense", {"data": comp("f32", 64, 16, digest=sha256(W4))}, attributes={"note": "raw"}),
        "z": obj([4, 4], "dense", {"data": zcomp("f32", 128, len(z), 64, digest=crc_digest(z))}),
        "s": obj([2, 3], "sparse_csr", {
            "values": comp("f32", 256, 12),
            "indices": comp("u64", 320, 24),
            "indptr": comp("u64", 384, 24),
        }),
    }, attributes={"framework": "hostile", "n": 3})
    blobs = [(64, W4), (128, z), (256, f32s([1.0, 2.0, 3.0])), (320, u64s([0, 2, 1])), (384, u64s([0, 2, 3]))]
    return m, blobs


def legacy_tensor(name="w", offset=64, size=16, dtype="float32", shape=(2, 2), **extra):
    t = {"name": name, "offset": offset, "size": size, "dtype": dtype, "shape": list(shape),
         "encoding": "raw", "layout": "dense", "data_endianness": "little"}
    t.update(extra)
    return t


def legacy_file(tensors, blobs, indef=False, **kw):
    m = Arr([Map(list(t.items()), indef=True) for t in tensors]) if indef else tensors
    return v01_file(m, blobs, **kw)


# ---------------------------------------------------------------------------------------


def container_v12():
    good = dense_file()
    ok("v12_ok_dense", good, "control: one dense f32 [2,2] object")
    mm, mb = multi()
    full = v1_file(mm, mb)
    ok("v12_ok_multi", full, "control: dense+digest, zstd+crc32c, CSR, attributes")
    ok("v12_ok_empty", v1_file(root({})), "control: no objects (8 + manifest + 16 bytes)")
    at_open("v12_container_zero_bytes", b"", "FORMAT", "empty file")
    at_open("v12_container_4_bytes", b"ZTEN", "FORMAT", "shorter than the header")
    at_open("v12_container_header_only", V1, "FORMAT", "header magic only")
    at_open("v12_container_24_bytes", V1 + struct.pack("<Q", 1) + V1, "FORMAT",
            "header + size + footer, no room for a manifest")
    at_open("v12_container_bad_header_magic", b"ZTEN1001" + good[8:], "FORMAT", "header magic ZTEN1001")
    at_open("v12_container_zip_magic", b"PK\x03\x04\0\0\0\0" + good[8:], "FORMAT", "a zip header")
    at_open("v12_container_bad_footer_magic", good[:-1] + b"1", "FORMAT", "footer magic ZTEN1001")
    at_open("v12_container_legacy_footer", good[:-8] + V01, "FORMAT", "footer magic ZTEN0001")
    at_open("v12_container_appended_garbage", good + b"\0" * 7, "FORMAT", "7 bytes after the footer")
    at_open("v12_container_prepended_garbage", b"\0" * 64 + good, "FORMAT", "64 zero bytes before the header")
    ok("v12_container_two_files", good + good,
       "control: two files concatenated form a valid file (the first one's bytes are unreferenced padding)")
    # Manifest size lies.
    n = len(good)
    msize = len(cbor(dense_m()))
    at_open("v12_size_zero", set_size(good, 0), "FORMAT", "manifest size 0")
    at_open("v12_size_one_too_small", set_size(good, msize - 1), "FORMAT",
            "manifest size one short: CBOR starts mid-item")
    at_open("v12_size_one_too_large", set_size(good, msize + 1), "FORMAT",
            "manifest size one over: a data byte before the manifest, trailing bytes")
    at_open("v12_size_past_file", set_size(good, n + 100), "FORMAT", "manifest size past the file")
    at_open("v12_size_overlaps_header", set_size(v1_file(root({})), len(cbor(root({}))) + 1), "FORMAT",
            "manifest size reaching into the header")
    at_open("v12_size_exactly_1gib", set_size(good, 1 << 30), "FORMAT",
            "1 GiB manifest size (at the limit) in a small file: past the file")
    at_open("v12_size_over_1gib", set_size(good, (1 << 30) + 1), "LIMIT",
            "manifest size just over the 1 GiB limit (limit checked before fit)")
    at_open("v12_size_u64_max", set_size(good, (1 << 64) - 1), "LIMIT", "manifest size 2^64-1")
    at_open("v12_size_2_pow_63", set_size(good, 1 << 63), "LIMIT", "manifest size 2^63")
    # Truncations of the multi-structure file at every structure.
    z_end = 128 + len(zraw(D16))
    m_start = 384 + 24
    m_len = len(cbor(mm))
    points = [
        (1, "inside the header magic"), (7, "one byte short of the header"), (8, "right after the header"),
        (9, "one byte into the padding"), (63, "end of the header padding"), (64, "at the first blob"),
        (72, "inside the first blob"), (80, "end of the first blob"), (128 + 6, "inside the zstd frame header"),
        (z_end - 1, "inside the zstd frame"), (300, "inside the CSR values"), (m_start, "at the manifest"),
        (m_start + 1, "one byte into the manifest"), (m_start + m_len // 2, "middle of the manifest"),
        (m_start + m_len - 1, "last manifest byte missing"), (m_start + m_len, "manifest complete, no size"),
        (m_start + m_len + 4, "inside the size field"), (m_start + m_len + 8, "size complete, no footer"),
        (m_start + m_len + 12, "inside the footer magic"), (len(full) - 1, "last footer byte missing"),
    ]
    assert len(full) == m_start + m_len + 16
    for cut, what in points:
        at_open("v12_trunc_%04d" % cut, full[:cut], "FORMAT", "multi file truncated to %d bytes: %s" % (cut, what))
    # A truncated file whose tail happens to look like a footer: cut inside the manifest and
    # append a size and footer for the shortened manifest.
    cut = m_start + m_len // 2
    at_open("v12_trunc_refootered", full[:cut] + struct.pack("<Q", cut - m_start) + V1, "FORMAT",
            "manifest cut in half, then a consistent size and footer appended: CBOR ends early")


def cbor_faults():
    good_m = cbor(dense_m())
    blobs = [(64, W4)]
    f = lambda mb: v1_file(None, blobs, mbytes=mb)  # noqa: E731
    ver = cbor("1.2.0")
    assert good_m.count(ver) == 1
    sub = lambda new: good_m.replace(ver, new)  # noqa: E731
    at_open("v12_cbor_stray_break", f(sub(b"\xff")), "FORMAT", "a break byte where a value belongs")
    at_open("v12_cbor_reserved_info", f(sub(b"\x7c\0\0\0\0")), "FORMAT", "additional information 28 (reserved)")
    at_open("v12_cbor_bytes_chunk_in_text", f(sub(b"\x7f\x41\x31\xff")), "FORMAT",
            "a byte-string chunk inside an indefinite text string")
    at_open("v12_cbor_nested_indefinite_chunk", f(sub(b"\x7f\x7f\x61\x31\xff\xff")), "FORMAT",
            "an indefinite chunk inside an indefinite text string")
    at_open("v12_cbor_indefinite_integer", f(sub(b"\x1f")), "FORMAT", "indefinite length on an integer")
    at_open("v12_cbor_indefinite_tag", f(sub(b"\xdf\x00")), "FORMAT", "indefinite length on a tag")
    at_open("v12_cbor_two_byte_simple", f(sub(b"\xf8\x10")), "FORMAT", "simple value 16 in the two-byte form")
    at_open("v12_cbor_only_break", f(b"\xff"), "FORMAT", "manifest is a lone break byte")
    at_open("v12_cbor_trailing_byte", f(good_m + b"\x00"), "FORMAT", "one byte after the manifest item")
    at_open("v12_cbor_trailing_item", f(good_m + good_m), "FORMAT", "two manifests back to back")
    at_open("v12_cbor_map_too_few_entries", f(b"\xa3" + good_m[1:]), "FORMAT", "root map declares 3 entries, has 2")
    at_open("v12_cbor_map_2_pow_64", f(b"\xbb" + b"\xff" * 8 + good_m[1:]), "FORMAT",
            "root map declares 2^64-1 entries")
    at_open("v12_cbor_text_2_pow_60", f(sub(b"\x7b\x10" + b"\0" * 7)), "FORMAT", "text of 2^60 bytes")
    at_open("v12_cbor_bytes_4gib", f(sub(b"\x5a\xff\xff\xff\xff")), "FORMAT", "byte string of 4 GiB")
    at_open("v12_cbor_array_2_pow_64", f(sub(b"\x9b" + b"\xff" * 8)), "FORMAT", "array of 2^64-1 items")
    at_open("v12_cbor_array_2_pow_31", f(sub(b"\x9a\x7f\xff\xff\xff")), "FORMAT", "array of 2^31-1 items")
    at_open("v12_cbor_indef_chunk_2_pow_64", f(sub(b"\x5f\x5b" + b"\xff" * 8 + b"\x00\xff")), "FORMAT",
            "chunk of 2^64-1 bytes inside an indefinite byte string")
    at_open("v12_cbor_missing_break", f(b"\xbf" + good_m[1:]), "FORMAT", "indefinite root map without its break")
    at_open("v12_cbor_indef_map_odd", f(b"\xbf" + good_m[1:] + b"\x61\x78\xff"), "FORMAT",
            "indefinite root map with a key and no value before the break")
    at_open("v12_cbor_break_in_definite_array", f(sub(b"\x82\x01\xff")), "FORMAT", "a break inside a definite array")
    at_open("v12_cbor_truncated_head", f(good_m[:-1] + b"\x19"), "FORMAT", "last item is a 2-byte head cut short")
    at_open("v12_cbor_invalid_utf8_value", f(sub(b"\x651.2.\xff")), "FORMAT", "0xff inside a text string")
    at_open("v12_cbor_overlong_utf8", f(sub(b"\x661.2.\xc0\x80")), "FORMAT", "overlong UTF-8 (C0 80)")
    at_open("v12_cbor_surrogate_utf8", f(sub(b"\x661.2\xed\xa0\x80")), "FORMAT", "UTF-8 encoded surrogate")
    at_open("v12_cbor_utf8_split_across_chunks", f(sub(b"\x7f\x621.\x61\xc3\x61\xbc\xff")), "FORMAT",
            "a code point split across two chunks of an indefinite text string")
    at_open("v12_cbor_garbage", f(lcg_bytes(1, 300)), "FORMAT", "300 pseudo-random bytes as the manifest")
    at_open("v12_cbor_garbage_large", f(lcg_bytes(2, 5000)), "FORMAT", "5000 pseudo-random bytes as the manifest")
    # Depth bombs.
    at_open("v12_depth_array_bomb", f(b"\x81" * 100000 + b"\x00"), "LIMIT", "100000 nested one-item arrays")
    at_open("v12_depth_indef_array_bomb", f(b"\x9f" * 100000 + b"\x00" + b"\xff" * 100000), "LIMIT",
            "100000 nested indefinite arrays")
    at_open("v12_depth_map_bomb", f(b"\xa1\x00" * 50000 + b"\x00"), "LIMIT", "50000 nested one-entry maps")
    at_open("v12_depth_tag_bomb", f(b"\xc1" * 100000 + b"\x00"), "LIMIT", "100000 nested tags")
    at_open("v12_depth_unterminated", f(b"\x9f" * 200), "LIMIT",
            "200 nested indefinite arrays, no breaks: depth is hit before the end")

    def nested(levels):
        v = 0
        for _ in range(levels):
            v = [v]
        return v

    ok("v12_depth_128_ok", dense_file(edit(dense_m(), ("attributes",), {"deep": nested(126)})),
       "control: root map + attributes map + 126 arrays = depth 128, the default limit")
    at_open("v12_depth_129", dense_file(edit(dense_m(), ("attributes",), {"deep": nested(127)})), "LIMIT",
            "depth 129 in the attributes, one over the limit")
    # Length bombs: every level declares as many items as there are bytes left, nested
    # 120 deep. Each declaration alone is plausible; together they are not.
    bomb = bytearray()
    total = 8192
    for level in range(120):
        remaining = total - len(bomb) - 5
        bomb += b"\x9a" + remaining.to_bytes(4, "big")
    bomb += b"\x00" * (total - len(bomb))
    at_open("v12_length_bomb_nested_arrays", f(bytes(bomb)), "FORMAT",
            "120 nested arrays each declaring ~8000 items in an 8 KiB manifest: must fail without "
            "allocating 120 x 8000 items (see the allocation check in hostile_corpus.rs)")
    bomb = bytearray()
    for level in range(120):
        remaining = (total - len(bomb) - 6) // 2
        bomb += b"\xba" + remaining.to_bytes(4, "big") + b"\x00"
    bomb += b"\x00" * (total - len(bomb))
    at_open("v12_length_bomb_nested_maps", f(bytes(bomb)), "FORMAT",
            "120 nested maps each declaring ~4000 entries in an 8 KiB manifest")
    # Not a map.
    at_open("v12_root_array", f(cbor([dense_m()])), "FORMAT", "manifest is an array holding the map")
    at_open("v12_root_text", f(cbor("1.2.0")), "FORMAT", "manifest is a text string")
    at_open("v12_root_self_described_tag", f(cbor(Tag(55799, dense_m()))), "FORMAT",
            "manifest map wrapped in tag 55799: the spec asks for a map")
    at_open("v12_root_null", f(b"\xf6"), "FORMAT", "manifest is null")


def lenient_ok():
    """Valid files in unusual but legal encodings: must open and walk cleanly."""
    m = dense_m()

    def lenient(v):
        if isinstance(v, dict):
            return Map([(IText([k[:1], k[1:]]) if len(k) > 1 else k, lenient(x)) for k, x in v.items()], indef=True)
        if isinstance(v, list):
            return Arr([lenient(x) for x in v], indef=True)
        if isinstance(v, int) and not isinstance(v, bool):
            return U(v, 8)
        return v

    ok("v12_ok_indefinite_lengths", dense_file(mbytes=cbor(lenient(m))),
       "control: indefinite maps/arrays, chunked text keys, 8-byte integers everywhere")
    ok("v12_ok_canonical_order", dense_file(
        {"objects": {"w": {"components": {"data": {"length": 16, "offset": 64, "dtype": "f32"}},
                           "format": "dense", "shape": [2, 2]}}, "version": "1.2.0"}),
       "control: keys in the opposite order")
    ok("v12_ok_unknown_keys", dense_file(Map([
        ("version", "1.2.0"), (1, "an integer key"), ("future", {"x": [1, 2]}),
        ("objects", {"w": {"shape": [2, 2], "format": "dense", "extra": Tag(1, 0),
                           "components": {"data": comp("f32", 64, 16, future=True)}}})])),
       "control: unknown keys (text and integer) at every level")
    ok("v12_ok_nulls", dense_file(edit(edit(edit(m, D("encoding"), None), D("digest"), None), D("type"), None)),
       "control: null encoding/digest/type mean the defaults")
    ok("v12_ok_attributes_zoo", dense_file(edit(edit(m, ("attributes",), Map([
        ("half", F(0.5, 2)), ("single", F(100000.0, 4)), ("double", 0.1), ("nan", F(float("nan"), 2)),
        ("inf", F(float("-inf"), 8)), ("neg", -5), ("most_negative", Neg((1 << 64) - 1)),
        ("big", (1 << 64) - 1), ("bytes", b"\x00\x01\xff"), ("ibytes", IBytes([b"\x01", b"\x02\x03"])),
        ("tag", Tag(1, 1700000000)), ("bignum", Tag(2, b"\x01\x00")), ("simple", Simple(16)),
        ("simple255", Simple(255)), ("undefined", UNDEFINED), ("null", None), ("bool", [True, False]),
        (7, "integer key"), (b"k", "bytes key"), ("nested", {"a": [{"b": {"c": []}}]}),
        ("ctrl", "quote\" backslash\\ nl\n nul-free \x01\x1f"), ("emoji", "\U0001F600"),
    ])), O("attributes"), {"bits": 4, "list": Arr([1, 2], indef=True)})),
       "control: every CBOR type in attributes")
    # A map key holding a map with a map key, 40 deep: its JSON text would be escaped again
    # at every level (2^40 bytes); keys in keys render as "$cbor:<hex>".
    key = Map([("a", 1)])
    for _ in range(40):
        key = Map([(key, 1)])
    ok("v12_ok_attributes_keys_in_keys", dense_file(edit(m, ("attributes",), Map([(key, "v")]))),
       "regression (found by fuzz/manifest): map keys nested 40 deep in map keys; rendering their JSON "
       "escaped each level again, doubling the output per level")
    ok("v12_ok_attributes_duplicate_keys", dense_file(edit(m, ("attributes",), Map([("dup", 1), ("dup", 2)]))),
       "control: attributes are user data, not manifest keys: a repeated attribute key is passed through")
    ok("v12_ok_aligned_manifest", dense_file(pad_to=128), "control: manifest padded to a 64-byte boundary")
    ok("v12_ok_unknown_format", v1_file(root({"q": obj([3], "my_format", {
        "a": comp("i16", 64, 6), "b": comp("u8", 128, 1)})}), [(64, i16s([1, -2, 3])), (128, b"\x07")]),
       "control: an unknown format string is read at the component level")
    ok("v12_ok_quantized_group", v1_file(root({"q": obj([8, 8], "quantized_group", {
        "packed_weight": comp("i32", 64, 32), "scales": comp("f16", 128, 4), "zeros": comp("f16", 192, 4)},
        attributes={"bits": 4, "group_size": 4, "packing": "8_per_i32"})}),
        [(64, i32s(list(range(8)))), (128, b"\x00\x3c\x00\x40"), (192, b"\0" * 4)]),
       "control: quantized_group as in the spec example")
    ok("v12_ok_scalar", v1_file(root({"s": obj([], "dense", {"data": comp("f64", 64, 8)})}), [(64, f64s([2.5]))]),
       "control: rank-0 shape [] with one element")
    ok("v12_ok_zero_size", v1_file(root({
        "e": obj([0, 4], "dense", {"data": comp("f32", 64, 0)}),
        "w": obj([2, 2], "dense", {"data": comp("f32", 64, 16)}),
        "z": obj([0], "dense", {"data": comp("f32", 128, 0)})}), [(64, W4)], pad_to=128),
       "control: empty components at a used offset and at the end of the data")
    ok("v12_ok_shared_blob", v1_file(root({"a": obj([2, 2], "dense", {"data": comp("f32", 64, 16)}),
                                           "b": obj([4], "dense", {"data": comp("f32", 64, 16)})}), [(64, W4)]),
       "control: two objects pointing at the same blob")
    ok("v12_ok_complex_fp8", v1_file(root({
        "c": obj([2], "dense", {"data": comp("f32", 64, 16, type="complex64")}),
        "f": obj([4], "dense", {"data": comp("u8", 128, 4, type="f8_e4m3fn")}),
        "g": obj([4], "dense", {"data": comp("u8", 192, 4, type="mx_unknown")})}),
        [(64, f32s([1, -1, 0.5, 2])), (128, b"\x38\x40\xb8\x00"), (192, b"\1\2\3\4")]),
       "control: complex64, fp8 and an unknown logical type")
    ok("v12_ok_rank_64", dense_file(edit(m, O("shape"), [2, 2] + [1] * 62)), "control: rank 64, the default limit")
    ok("v12_ok_version_1_9", dense_file(edit(m, ("version",), "1.9.0")), "control: a later 1.x minor version")
    ok("v12_ok_many_objects", v1_file(root({"o%04d" % i: obj([1], "dense", {"data": comp("u8", 64, 1)})
                                            for i in range(2000)}), [(64, b"\x2a")]),
       "control: 2000 objects sharing one blob")
    ok("v12_ok_unicode_names", v1_file(root({"\u00fc\U0001F600/x.y": obj([2, 2], "custom", {
        "d\u00e4ta": comp("f32", 64, 16)})}), [(64, W4)]), "control: non-ASCII object and role names")
    ok("v12_ok_zero_dim_first_huge_dims", dense_file(edit(edit(m, O("shape"), [0, 1 << 63, 1 << 63]), D("length"), 0)),
       "control: shape [0, 2^63, 2^63] has 0 elements")


def schema_faults(version="1.2.0", prefix="v12"):
    m = dense_m(version)
    g = lambda mm: dense_file(mm)  # noqa: E731
    p = lambda s: "%s_%s" % (prefix, s)  # noqa: E731
    for key in ("version", "objects"):
        at_open(p("missing_" + key), g(edit(m, (key,))), "FORMAT", "root lacks '%s'" % key)
    for key in ("shape", "format", "components"):
        at_open(p("missing_" + key), g(edit(m, O(key))), "FORMAT", "object lacks '%s'" % key)
    for key in ("dtype", "offset", "length"):
        at_open(p("missing_" + key), g(edit(m, D(key))), "FORMAT", "component lacks '%s'" % key)
    wrong = [
        (("version",), 1, "version is an integer"),
        (("version",), b"1.2.0", "version is a byte string"),
        (("objects",), [], "objects is an array"),
        (("objects",), None, "objects is null"),
        (O(), [2, 2], "an object is an array"),
        (O("shape"), "2x2", "shape is text"),
        (O("shape"), [2, -1], "shape has a negative dimension"),
        (O("shape"), [2, 2.0], "shape has a float dimension"),
        (O("shape"), [2, [2]], "shape has a nested array"),
        (O("shape"), {"0": 2}, "shape is a map"),
        (O("shape"), None, "shape is null"),
        (O("format"), 0, "format is an integer"),
        (O("format"), "", "format is empty"),
        (O("components"), [comp("f32", 64, 16)], "components is an array"),
        (D(), "f32", "a component is text"),
        (D("dtype"), 1, "dtype is an integer"),
        (D("offset"), "64", "offset is text"),
        (D("offset"), -64, "offset is negative"),
        (D("offset"), 64.0, "offset is a float"),
        (D("offset"), Tag(2, b"\x40"), "offset is a bignum tag"),
        (D("offset"), None, "offset is null"),
        (D("length"), 16.0, "length is a float"),
        (D("length"), True, "length is a bool"),
        (D("encoding"), 0, "encoding is an integer"),
        (D("uncompressed_length"), "16", "uncompressed_length is text"),
        (D("digest"), b"\0" * 32, "digest is a byte string"),
        (D("type"), 8, "type is an integer"),
        (D("type"), "", "type is empty"),
        (("attributes",), "MIT", "file attributes are text"),
        (O("attributes"), [], "object attributes are an array"),
    ]
    for i, (path, value, what) in enumerate(wrong):
        at_open(p("wrong_type_%02d" % i), g(edit(m, path, value)), "FORMAT", what)
    for name in ("f128", "float32", "F32", "", "complex32"):
        at_open(p("unknown_dtype_%s" % (name or "empty")), g(edit(m, D("dtype"), name)), "FORMAT",
                "unknown dtype %r" % name)
    at_open(p("unknown_encoding"), g(edit(m, D("encoding"), "lz4")), "UNSUPPORTED", "encoding lz4")
    for v in ("2.0.0", "0.1.0", "", "one") if prefix == "v12" else ():
        at_open(p("version_%s" % (v.replace(".", "_") or "empty")), g(edit(m, ("version",), v)), "UNSUPPORTED",
                "version %r is not 1.x" % v)
    at_open(p("raw_uncompressed_length_lie"), g(edit(m, D("uncompressed_length"), 20)), "FORMAT",
            "raw component whose uncompressed_length differs from length")
    at_open(p("fp8_on_f32"), v1_file(root({"f": obj([4], "dense", {"data": comp("f32", 64, 16, type="f8_e4m3fn")})},
                                          version), [(64, W4)]), "FORMAT", "type f8_e4m3fn on dtype f32")
    at_open(p("complex64_on_f64"), v1_file(root({"c": obj([1], "dense", {"data": comp("f64", 64, 16, type="complex64")})},
                                                version), [(64, W4)]), "FORMAT", "type complex64 on dtype f64")
    at_open(p("not_whole_elements"), v1_file(root({"q": obj([3], "custom", {"a": comp("f32", 64, 6)})}, version),
                                             [(64, b"\0" * 6)]), "FORMAT", "6 bytes of f32 in a custom format")
    at_open(p("complex_not_whole_pairs"), v1_file(root({"q": obj([3], "custom", {"a": comp("f32", 64, 12, type="complex64")})},
                                                       version), [(64, b"\0" * 12)]), "FORMAT",
            "12 bytes of complex64 (1.5 elements)")


def bounds_faults():
    m = dense_m()
    g = lambda mm, blobs=None, **kw: dense_file(mm, blobs, **kw)  # noqa: E731
    for off in (65, 72, 96, 127):
        at_open("v12_offset_unaligned_%d" % off, g(edit(m, D("offset"), off), [(off, W4)]), "FORMAT",
                "offset %d is not a multiple of 64" % off)
    at_open("v12_offset_zero", g(edit(m, D("offset"), 0)), "FORMAT", "offset 0 is the header")
    at_open("v12_offset_2_pow_40", g(edit(m, D("offset"), 1 << 40)), "FORMAT", "offset far past the end")
    at_open("v12_offset_u64_max_aligned", g(edit(m, D("offset"), ((1 << 64) - 1) & ~63)), "FORMAT",
            "offset 2^64-64 + 16 overflows u64")
    at_open("v12_length_u64_max", v1_file(root({"q": obj([1], "custom", {"a": comp("u8", 64, (1 << 64) - 1)})}),
                                          [(64, W4)]), "FORMAT", "length 2^64-1: offset + length overflows")
    at_open("v12_length_into_manifest", v1_file(root({"q": obj([17], "custom", {"a": comp("u8", 64, 17)})}), [(64, W4)]),
            "FORMAT",
            "blob ends one byte inside the manifest")
    at_open("v12_blob_covers_footer", v1_file(root({"q": obj([1], "custom", {"a": comp("u8", 64, 200)})}),
                                              [(64, W4)]), "FORMAT", "blob reaches past the manifest and footer")
    at_open("v12_empty_blob_past_end", v1_file(root({"z": obj([0], "dense", {"data": comp("f32", 192, 0)})}),
                                               [(64, W4)]), "FORMAT",
            "zero-length component at an offset past the data region")
    two = two_m()
    ok("v12_ok_two_blobs", v1_file(two, TWO_BLOBS), "control: two adjacent blobs")
    at_open("v12_overlap_partial", v1_file(edit(two, ("objects", "b", "components", "data", "offset"), 128), TWO_BLOBS),
            "FORMAT", "b starts inside a")
    at_open("v12_overlap_same_start", v1_file(edit(two, ("objects", "b", "components", "data", "offset"), 64), TWO_BLOBS),
            "FORMAT", "b starts where a starts, with a different length")
    at_open("v12_overlap_contained", v1_file(root({
        "a": obj([32], "dense", {"data": comp("f32", 64, 128)}),
        "b": obj([4], "dense", {"data": comp("f32", 128, 16)})}), TWO_BLOBS), "FORMAT", "b lies inside a")
    at_open("v12_overlap_within_object", v1_file(root({"q": obj([1], "custom", {
        "x": comp("u8", 64, 100), "y": comp("u8", 128, 8)})}), [(64, b"\1" * 100)]), "FORMAT",
        "two components of one object overlap")
    ok("v12_ok_empty_inside_blob", v1_file(root({
        "a": obj([32], "dense", {"data": comp("f32", 64, 128)}),
        "e": obj([0], "dense", {"data": comp("f32", 128, 0)})}), TWO_BLOBS[:1]),
       "control: a zero-length component inside another blob overlaps nothing")
    at_open("v12_shape_overflow", g(edit(m, O("shape"), [1 << 32, 1 << 32, 2])), "FORMAT",
            "element count 2^65 overflows u64")
    at_open("v12_shape_overflow_u64_max", g(edit(m, O("shape"), [(1 << 64) - 1, 2])), "FORMAT",
            "element count (2^64-1) x 2 overflows")
    at_open("v12_shape_bytes_overflow", g(edit(m, O("shape"), [1 << 62])), "FORMAT",
            "regression: dense f32 [2^62] with 16 bytes: numel x 4 overflows u64; the size check was skipped "
            "and the file opened (fixed in fabcf66)")
    ok("v12_ok_zero_dim_last_huge_dims", g(edit(edit(m, O("shape"), [1 << 63, 1 << 63, 0]), D("length"), 0)),
       "regression: shape [2^63, 2^63, 0] has 0 elements like [0, 2^63, 2^63]; it was refused because the "
       "element count was computed left to right with overflow checks (fixed in fabcf66)")
    at_open("v12_rank_65", g(edit(m, O("shape"), [2, 2] + [1] * 63)), "LIMIT", "rank 65, over the default limit 64")
    at_open("v12_rank_1000", g(edit(m, O("shape"), [1] * 1000)), "LIMIT", "rank 1000")
    at_open("v12_dense_length_short", g(edit(edit(m, D("length"), 12), O("shape"), [2, 2]), [(64, W4[:12])]), "FORMAT",
            "f32 [2,2] with 12 bytes")
    at_open("v12_dense_shape_mismatch", g(edit(m, O("shape"), [2, 3])), "FORMAT", "f32 [2,3] with 16 bytes")
    at_open("v12_dense_dtype_mismatch", g(edit(m, D("dtype"), "f64")), "FORMAT", "f64 [2,2] with 16 bytes")
    at_open("v12_dense_complex_ratio", v1_file(root({"c": obj([4], "dense", {"data": comp("f32", 64, 16, type="complex64")})}),
                                               [(64, W4)]), "FORMAT", "complex64 [4] needs 32 bytes, has 16")
    at_open("v12_dense_no_data", v1_file(root({"w": obj([2, 2], "dense", {"weights": comp("f32", 64, 16)})}), [(64, W4)]),
            "FORMAT", "dense object without a 'data' component")
    at_open("v12_dense_no_components", v1_file(root({"w": obj([2, 2], "dense", {})}), []), "FORMAT",
            "dense object with no components")
    ok("v12_ok_custom_no_components", v1_file(root({"w": obj([2, 2], "custom", {})}), []),
       "control: an unknown format may have no components")


def zstd_cases():
    ok("v12_ok_zstd_raw_blocks", zstd_file(zraw(D16), 64), "control: zstd frame of raw blocks")
    ok("v12_ok_zstd_rle", zstd_file(zrle(0x3F, 262144), 262144, (65536,)), "control: zstd RLE frame, 256 KiB decoded")
    two = zraw(D16[:32]) + zraw(D16[32:])
    ok("v12_ok_zstd_two_frames", zstd_file(two, 64), "control: two concatenated frames")
    ok("v12_ok_zstd_skippable", zstd_file(b"\x50\x2a\x4d\x18" + struct.pack("<I", 5) + b"skip!" + zraw(D16), 64),
       "control: a skippable frame, then the data")
    ok("v12_ok_zstd_fcs_checksum", zstd_file(zraw(D16, fcs=64, checksum_of=D16), 64),
       "control: frame with content size and XXH64 checksum")
    ok("v12_ok_zstd_single_segment", zstd_file(zraw(D16, fcs=64, single=True), 64),
       "control: single-segment frame")
    ok("v12_ok_zstd_empty", v1_file(root({"e": obj([0], "dense", {"data": zcomp("f32", 64, 0, 0)})}), [], pad_to=64),
       "control: zstd component of 0 stored and 0 decoded bytes")
    ok("v12_ok_zstd_empty_frame", zstd_file(zraw(b""), 0, (0,)), "control: a frame decoding to nothing")
    ok("v12_ok_zstd_digest", zstd_file(zraw(D16), 64, digest=sha256(zraw(D16))),
       "control: digest over the stored (compressed) bytes")
    # Bombs.
    bomb = zrle(0xAB, 1 << 30)
    at_walk("v12_zstd_bomb_1gib_declared_64", zstd_file(bomb, 64), "FORMAT",
            "RLE frame decoding to 1 GiB (32 KiB stored), declared 64 bytes: decoding must stop at 64")
    at_walk("v12_zstd_bomb_1gib_declared_1mib", zstd_file(bomb, 1 << 20, (1 << 18,)), "FORMAT",
            "RLE frame decoding to 1 GiB, declared 1 MiB")
    small = zrle(0xAB, 1 << 20)
    at_walk("v12_zstd_bomb_fcs_lies", zstd_file(frame(small[6:], fcs=64), 64), "FORMAT",
            "frame header says 64 bytes, RLE blocks decode 1 MiB")
    at_open("v12_zstd_declared_over_limit", zstd_file(zraw(D16), 1 << 40, (1 << 38,)), "LIMIT",
            "uncompressed_length 1 TiB, over the 64 GiB decode limit")
    z = zraw(D16)
    at_open("v12_zstd_declared_impossible", zstd_file(z, len(z) * 65536 + 65540, (len(z) * 16384 + 16385,)),
            "FORMAT", "uncompressed_length larger than any zstd frame of this length can produce")
    at_open("v12_zstd_zero_stored_nonzero_declared", v1_file(zstd_m(0, 64), [], pad_to=64), "FORMAT",
            "0 stored bytes cannot decode to 64")
    at_open("v12_zstd_missing_uncompressed_length", v1_file(edit(zstd_m(len(z), 64), D("uncompressed_length")), [(64, z)]),
            "FORMAT", "v1.2 zstd component without uncompressed_length")
    at_open("v12_zstd_declared_disagrees_with_shape", zstd_file(z, 60), "FORMAT",
            "uncompressed_length 60, shape needs 64")
    # Lies.
    at_walk("v12_zstd_decodes_short", zstd_file(zraw(D16[:48]), 64), "FORMAT", "frame decodes 48 bytes, declared 64")
    at_walk("v12_zstd_decodes_long", zstd_file(zraw(D16 + b"\0" * 16), 64), "FORMAT",
            "frame decodes 80 bytes, declared 64")
    at_walk("v12_zstd_decodes_one_long", zstd_file(zraw(D16 + b"\0"), 64), "FORMAT", "frame decodes 65 bytes, declared 64")
    # Corrupt frames.
    at_walk("v12_zstd_bad_magic", zstd_file(b"junk" + z[4:], 64), "FORMAT", "not a zstd magic number")
    at_walk("v12_zstd_reserved_block", zstd_file(frame(block(3, 64, D16, last=True)), 64), "FORMAT",
            "block type 3 (reserved)")
    at_walk("v12_zstd_garbage_compressed_block", zstd_file(frame(block(2, 60, lcg_bytes(3, 60), last=True)), 64),
            "FORMAT", "compressed block of pseudo-random bytes")
    at_walk("v12_zstd_no_last_block", zstd_file(frame(block(0, 64, D16, last=False)), 64), "FORMAT",
            "frame ends without a last block")
    at_walk("v12_zstd_block_size_past_end", zstd_file(frame(block(0, 100, D16, last=True)), 64), "FORMAT",
            "raw block declares 100 bytes, 64 present")
    ok("v12_zstd_block_over_window", zstd_file(frame(block(0, 2048, b"\0" * 2048, last=True), window_log=10), 2048, (512,)),
       "a 2 KiB raw block in a 1 KiB window (outside RFC 8878): libzstd's one-shot decoder, used by every "
       "read path, tolerates it; harmless, the output is still bounded by uncompressed_length. Must be "
       "the same for range reads, reads and views")
    at_walk("v12_zstd_reserved_header_bit", zstd_file(zraw(D16, reserved_bit=True), 64), "FORMAT",
            "reserved bit set in the frame header descriptor")
    at_walk("v12_zstd_dictionary_id", zstd_file(zraw(D16, dict_id=0x12345678), 64), "FORMAT",
            "frame needs dictionary 0x12345678")
    at_walk("v12_zstd_bad_checksum", zstd_file(zraw(D16, checksum_of=D16 + b"x"), 64), "FORMAT",
            "content checksum does not match")
    at_walk("v12_zstd_truncated", zstd_file(z[:-10], 64), "FORMAT", "frame cut 10 bytes short")
    at_walk("v12_zstd_header_only", zstd_file(z[:6], 64), "FORMAT", "frame header without blocks")
    at_walk("v12_zstd_window_log_41", zstd_file(zraw(D16, window_log=41), 64), "FORMAT",
            "window descriptor beyond the format's maximum")
    at_walk("v12_zstd_damaged_tail", zstd_file(z[:6] + bytes(b ^ 0x5A for b in z[6:]), 64), "FORMAT",
            "frame header, then noise")
    ok("v12_zstd_window_log_30", zstd_file(zraw(D16, window_log=30), 64),
       "regression: a valid frame whose header asks for a 1 GiB window (zstd --long=30 writes such "
       "frames) was refused by range reads only (streaming decoder, windowLogMax 27); fixed in fabcf66")
    # Independent frames recording their content sizes (what this library writes): indexed,
    # decoded in parallel when the component is over 4 MiB, range reads decode one frame.
    mib4 = 4 << 20
    f1, f2, f3 = zrle(0x11, mib4, fcs=mib4), zrle(0x22, mib4, fcs=mib4), zraw(D16 * 16, fcs=1024)
    total = 2 * mib4 + 1024
    ok("v12_ok_zstd_indexed_frames", zstd_file(f1 + f2 + f3, total, (total // 4,)),
       "control: three frames with content sizes (4 MiB, 4 MiB, 1 KiB): indexed, parallel decode")
    skip = b"\x5f\x2a\x4d\x18" + struct.pack("<I", 3) + b"abc"
    ok("v12_ok_zstd_indexed_with_skippable", zstd_file(f1 + skip + f2 + f3, total, (total // 4,)),
       "control: indexed frames with a skippable frame between them")
    short2 = frame(zrle(0x22, mib4 - 131072)[6:], fcs=mib4)
    at_walk("v12_zstd_indexed_fcs_lie", zstd_file(f1 + short2 + zrle(0x33, 131072 + 1024, fcs=1024), total, (total // 4,)),
            "FORMAT", "frame 2 records 4 MiB but decodes 128 KiB less; frame 3 records 1 KiB but decodes "
            "129 KiB: sizes add up, contents do not")
    at_walk("v12_zstd_indexed_sum_too_large", zstd_file(f1 + f2 + zraw(D16 * 16, fcs=1024) + zraw(D16, fcs=64),
                                                        total, (total // 4,)),
            "FORMAT", "recorded sizes add up to 64 bytes more than uncompressed_length")
    at_walk("v12_zstd_indexed_sum_too_small", zstd_file(f1 + f2, total, (total // 4,)), "FORMAT",
            "recorded sizes add up to 1 KiB less than uncompressed_length")
    at_walk("v12_zstd_indexed_corrupt_middle", zstd_file(f1 + frame(block(3, 16, D16, last=True), fcs=mib4) + f3,
                                                         total, (total // 4,)), "FORMAT",
            "indexed frames whose middle frame has a reserved block type")
    at_walk("v12_zstd_indexed_bad_checksum_last", zstd_file(f1 + f2 + zraw(D16 * 16, fcs=1024, checksum_of=b"x"),
                                                            total, (total // 4,)), "FORMAT",
            "indexed frames, the last one's content checksum is wrong")
    ok("v12_zstd_window_log_27", zstd_file(zraw(D16, window_log=27), 64),
       "regression: a 64-byte frame declaring a 128 MiB window made a 1-byte range read allocate the "
       "128 MiB window (streaming decoder); fixed in fabcf66")
    seek_table_cases()


def seek_table(sizes, checksums=None, count=None, descriptor=None, magic=0x184D2A5E):
    """zstd's seekable-format table (contrib/seekable_format): a skippable frame listing
    (compressed, decompressed) sizes, optional XXH64 checksums, frame count, descriptor,
    seekable magic. `count` and `descriptor` override what the entries imply."""
    entries = b"".join(struct.pack("<II", c, d) + (struct.pack("<I", checksums[i]) if checksums else b"")
                       for i, (c, d) in enumerate(sizes))
    if descriptor is None:
        descriptor = 0x80 if checksums else 0
    footer = struct.pack("<IBI", len(sizes) if count is None else count, descriptor, 0x8F92EAB1)
    return struct.pack("<II", magic, len(entries) + len(footer)) + entries + footer


def seek_table_cases():
    # What this library writes: frames with content sizes, then a seek table. Any zstd
    # decoder skips the table, so reads and views never depend on it; range reads use it,
    # and a table that lies makes them fail with FORMAT (the walk's first range read).
    parts = [D16 * 2048, D16[:32] * 1024, D16]  # 128 KiB, 32 KiB, 64 bytes
    frames = [zraw(parts[0], fcs=len(parts[0])), zrle(0x5A, len(parts[1]), fcs=len(parts[1])),
              zraw(parts[2], fcs=len(parts[2]))]
    data = parts[0] + b"\x5a" * len(parts[1]) + parts[2]
    sizes = [(len(f), len(p)) for f, p in zip(frames, parts)]
    total = len(data)
    body = b"".join(frames)

    def table_file(table):
        return zstd_file(body + table, total, (total // 4,))

    ok("v12_ok_zstd_seek_table", table_file(seek_table(sizes)),
       "control: three frames and a seek table (zstd seekable format), as this library writes them")
    sums = [xxh64(p) & 0xFFFFFFFF for p in (parts[0], b"\x5a" * len(parts[1]), parts[2])]
    ok("v12_ok_zstd_seek_table_checksums", table_file(seek_table(sizes, checksums=sums)),
       "control: a seek table with the checksum flag and each frame's XXH64")
    ok("v12_ok_zstd_seek_table_unused_bits", table_file(seek_table(sizes, descriptor=0x03)),
       "control: a seek table with the descriptor's unused bits set (to be ignored)")
    lie = lambda name, table, note: at_walk(name, table_file(table), "FORMAT", note)  # noqa: E731
    lie("v12_zstd_seek_table_count_huge", seek_table(sizes, count=0xFFFFFFFF),
        "seek table says 4294967295 frames: its table would start 34 GB before the component")
    lie("v12_zstd_seek_table_count_short", seek_table(sizes, count=2),
        "seek table counts 2 frames, its skippable frame holds 3")
    lie("v12_zstd_seek_table_decoded_sum", seek_table([sizes[0], sizes[1], (sizes[2][0], 65)]),
        "decompressed sizes add up to 1 byte more than uncompressed_length")
    lie("v12_zstd_seek_table_stored_sum", seek_table([sizes[0], (sizes[1][0] + 1, sizes[1][1]), sizes[2]]),
        "compressed sizes add up to 1 byte more than the frames before the table")
    lie("v12_zstd_seek_table_past_end", seek_table([sizes[0], (0xFFFFFFF0, sizes[1][1]), sizes[2]]),
        "a compressed size that runs far past the component")
    lie("v12_zstd_seek_table_zero_frame", seek_table([sizes[0], (0, 0), sizes[1], sizes[2]]),
        "a frame of 0 compressed bytes")
    lie("v12_zstd_seek_table_reserved_bits", seek_table(sizes, descriptor=0x40),
        "descriptor sets a reserved bit")
    lie("v12_zstd_seek_table_checksum_flag_8_byte_entries", seek_table(sizes, descriptor=0x80),
        "checksum flag set, but the entries have no checksums (the table frame's size disagrees)")
    lie("v12_zstd_seek_table_wrong_checksums", seek_table(sizes, checksums=[s ^ 1 for s in sums]),
        "every frame's XXH64 in the table is wrong")
    swapped = [(sizes[1][0], sizes[0][1]), (sizes[0][0], sizes[1][1]), sizes[2]]
    lie("v12_zstd_seek_table_misplaced", seek_table(swapped),
        "compressed sizes swapped between frames 0 and 1: sums agree, boundaries lie")
    lie("v12_zstd_seek_table_other_skippable_magic", seek_table(sizes, magic=0x184D2A50),
        "the table frame has another skippable magic than the seekable format's")
    # Issue 23: decoded sizes that add up but are not the frames' gave a range read another
    # frame's bytes with ZT_OK; each frame's header now says what it decodes to.
    lie("v12_zstd_seek_table_sizes_lie", seek_table([(sizes[0][0], 0), (sizes[1][0], 0), (sizes[2][0], total)]),
        "regression (issue 23): decoded sizes that add up but are not the frames' (0, 0, all)")
    lie("v12_zstd_seek_table_shifted", seek_table([sizes[0], (sizes[1][0], sizes[1][1] + 1),
                                                   (sizes[2][0], sizes[2][1] - 1)]),
        "regression (issue 23): frame 1 listed one byte longer, frame 2 one shorter: the sums agree")
    # Frames that state no decoded size: their entries can't be checked without decoding,
    # so from the first such frame a reader decodes the rest from its start: every byte
    # reads right, whatever the table says.
    unsized = [zraw(parts[0]), zrle(0x5A, len(parts[1])), zraw(parts[2])]
    usizes = [(len(f), len(p)) for f, p in zip(unsized, parts)]
    ubody = b"".join(unsized)
    ok("v12_ok_zstd_seek_table_unsized", zstd_file(ubody + seek_table(usizes), total, (total // 4,)),
       "control: frames without a stated size, then a seek table")
    ok("v12_ok_zstd_seek_table_unsized_lies",
       zstd_file(ubody + seek_table([(usizes[0][0], 0), (usizes[1][0], 0), (usizes[2][0], total)]), total,
                 (total // 4,)),
       "regression (issue 23): sizes that lie about frames stating none are not used: every byte reads right")
    # The legacy format's zstd components are read the same way (a seed for the ztensor_v01
    # fuzz target).
    stream = body + seek_table(sizes)
    ok("v01_ok_zstd_seek_table",
       legacy_file([legacy_tensor(size=len(stream), encoding="zstd", shape=(total // 4,))], [(64, stream)]),
       "control: legacy zstd component of three frames and a seek table")


def digest_cases():
    m = dense_m()
    g = lambda d: dense_file(edit(m, D("digest"), d))  # noqa: E731
    sha, crc = sha256(W4), crc_digest(W4)
    ok("v12_ok_digest_sha256", g(sha), "control: sha256 digest")
    ok("v12_ok_digest_sha256_upper", g("sha256:" + sha[7:].upper()), "control: upper-case sha256 hex")
    ok("v12_ok_digest_crc32c", g(crc), "control: crc32c digest")
    ok("v12_ok_digest_crc32c_lower", g(crc.lower()), "control: lower-case crc32c hex")
    at_walk("v12_digest_sha256_mismatch", g("sha256:" + "0" * 64), "CHECKSUM", "sha256 of other bytes")
    at_walk("v12_digest_crc32c_mismatch", g("crc32c:0x%08X" % (crc32c(W4) ^ 1)), "CHECKSUM", "crc32c off by one bit")
    at_walk("v12_digest_data_changed", dense_file(edit(m, D("digest"), sha), [(64, f32s([1, 2, 3, 5]))]), "CHECKSUM",
            "one stored byte differs from the digested bytes")
    z = zraw(D16)
    at_walk("v12_digest_over_decoded_bytes", zstd_file(z, 64, digest=sha256(D16)), "CHECKSUM",
            "zstd digest computed over the decoded bytes instead of the stored ones")
    at_walk("v12_digest_shared_blob_one_wrong", v1_file(root({
        "a": obj([2, 2], "dense", {"data": comp("f32", 64, 16, digest=sha)}),
        "b": obj([2, 2], "dense", {"data": comp("f32", 64, 16, digest=crc_digest(b"other"))})}), [(64, W4)]),
        "CHECKSUM", "two objects share a blob; the second's digest is wrong")
    at_walk("v12_digest_unknown_md5", g("md5:0123456789abcdef0123456789abcdef"), "UNSUPPORTED",
            "md5 is not an algorithm the library knows: reported, never treated as verified")
    at_walk("v12_digest_unknown_xxh3", g("xxh3:0x0123456789abcdef"), "UNSUPPORTED", "xxh3 digest")
    malformed = [
        (sha.replace(":", ""), "no colon"), (sha[:-1], "sha256 with 63 hex digits"), (sha + "0", "65 hex digits"),
        (sha[:-1] + "g", "a non-hex digit"), ("sha256:", "empty hex"), (":" + sha[7:], "empty algorithm"),
        ("md5:", "unknown algorithm, empty hex"), ("crc32c:%08X" % crc32c(W4), "crc32c without 0x"),
        (crc[:-1], "crc32c with 7 digits"), ("crc32c:0x%09X" % crc32c(W4), "crc32c with 9 digits"),
        ("sha256: " + sha[8:], "a space inside"), ("", "empty string"),
        ("md5:0123\x004567", "unknown algorithm with a NUL byte"), ("crc32c:0x+1234567", "a sign in the hex"),
        ("sha256:a" + "\u031e" * 31 + "a", "regression (found by fuzz/open_walk): 64 bytes of sha256 value "
         "whose two-byte characters straddle the hex pairs; slicing them panicked"),
        ("crc32c:0\u00e91234567", "regression: a crc32c value of 10 bytes whose 2nd byte is inside a "
         "character; slicing the 0x prefix panicked"),
    ]
    for i, (d, what) in enumerate(malformed):
        at_open("v12_digest_malformed_%02d" % i, g(d), "FORMAT", "malformed digest: " + what)


def sparse_cases():
    ok("v12_ok_csr", v1_file(csr_m(), csr_blobs()), "control: CSR [[1,0,2],[0,3,0]]")
    ok("v12_ok_csr_u32", v1_file(csr_m("u32"), csr_blobs(pack=u32s)), "control: CSR with u32 indices")
    ok("v12_ok_coo", v1_file(coo_m(), coo_blobs()), "control: COO in SoA order")
    ok("v12_ok_csr_zero_rows", v1_file(root({"s": obj([0, 5], "sparse_csr", {
        "values": comp("f32", 64, 0), "indices": comp("u64", 64, 0), "indptr": comp("u64", 64, 8)})}),
        [(64, u64s([0]))]), "control: CSR with no rows")
    z = zraw(u64s([0, 2, 1]))
    ok("v12_ok_csr_zstd_indices", v1_file(edit(csr_m(), S("indices"), zcomp("u64", 128, len(z), 24)),
                                          [(64, f32s([1, 2, 3])), (128, z), (192, u64s([0, 2, 3]))]),
       "control: CSR with zstd indices")
    m = csr_m()
    g = lambda mm, blobs=None: v1_file(mm, csr_blobs() if blobs is None else blobs)  # noqa: E731
    at_open("v12_csr_indptr_length", g(edit(m, S("indptr", "length"), 16)), "FORMAT", "indptr of 2 entries, rows+1 = 3")
    at_open("v12_csr_indices_count", g(edit(m, S("indices", "length"), 16)), "FORMAT", "2 indices, 3 values")
    at_open("v12_csr_shape_1d", g(edit(m, ("objects", "s", "shape"), [6])), "FORMAT", "CSR with a 1-d shape")
    at_open("v12_csr_shape_3d", g(edit(m, ("objects", "s", "shape"), [2, 3, 1])), "FORMAT", "CSR with a 3-d shape")
    for role in ("values", "indices", "indptr"):
        at_open("v12_csr_missing_" + role, g(edit(m, S(role))), "FORMAT", "CSR without '%s'" % role)
    at_open("v12_csr_indices_i32", v1_file(edit(edit(csr_m("u32"), S("indices", "dtype"), "i32"), S("indptr", "dtype"), "i32"),
                                           csr_blobs(pack=u32s)), "FORMAT", "i32 index components")
    at_open("v12_csr_indices_f64", g(edit(m, S("indices", "dtype"), "f64")), "FORMAT", "f64 indices")
    at_open("v12_csr_nnz_over_numel", v1_file(edit(edit(edit(m, ("objects", "s", "shape"), [1, 2]), S("indptr", "length"), 16),
                                                   S("indptr", "offset"), 192), csr_blobs(indptr=(0, 3))), "FORMAT",
            "3 values in a 1x2 matrix")
    at_walk("v12_csr_indptr_start", g(m, csr_blobs(indptr=(1, 2, 3))), "FORMAT", "indptr starts at 1")
    at_walk("v12_csr_indptr_decreasing", g(m, csr_blobs(indptr=(0, 4, 3))), "FORMAT", "indptr 0, 4, 3")
    at_walk("v12_csr_indptr_end", g(m, csr_blobs(indptr=(0, 1, 2))), "FORMAT", "indptr ends at 2, nnz is 3")
    at_walk("v12_csr_indptr_huge", g(m, csr_blobs(indptr=(0, 1 << 63, 3))), "FORMAT", "indptr 0, 2^63, 3")
    at_walk("v12_csr_column_out_of_range", g(m, csr_blobs(indices=(0, 3, 1))), "FORMAT", "column 3 of 3")
    at_walk("v12_csr_column_u64_max", g(m, csr_blobs(indices=(0, (1 << 64) - 1, 1))), "FORMAT", "column 2^64-1")
    at_walk("v12_csr_u32_column_out_of_range", v1_file(csr_m("u32"), csr_blobs(indices=(0, 7, 1), pack=u32s)), "FORMAT",
            "u32 column 7 of 3")
    at_walk("v12_csr_zstd_indptr_bad", v1_file(edit(csr_m(), S("indptr"), zcomp("u64", 192, len(zraw(u64s([0, 2, 5]))), 24)),
                                               [(64, f32s([1, 2, 3])), (128, u64s([0, 2, 1])), (192, zraw(u64s([0, 2, 5])))]),
            "FORMAT", "zstd indptr decoding to 0, 2, 5 (nnz 3)")
    c = coo_m()
    at_open("v12_coo_coords_length", v1_file(edit(c, S("coords", "length"), 24), coo_blobs()), "FORMAT",
            "3 coords for ndim 2 x nnz 2")
    at_open("v12_coo_missing_coords", v1_file(edit(c, S("coords")), coo_blobs()), "FORMAT", "COO without coords")
    at_open("v12_coo_missing_values", v1_file(edit(c, S("values")), coo_blobs()), "FORMAT", "COO without values")
    at_open("v12_coo_coords_i64", v1_file(edit(c, S("coords", "dtype"), "i64"), coo_blobs()), "FORMAT", "i64 coords")
    at_open("v12_coo_nnz_over_numel", v1_file(edit(c, ("objects", "s", "shape"), [1, 1]), coo_blobs()), "FORMAT",
            "2 values in a 1x1 tensor")
    at_walk("v12_coo_row_out_of_range", v1_file(c, coo_blobs((0, 2, 2, 0))), "FORMAT", "row 2 of 2")
    at_walk("v12_coo_col_out_of_range", v1_file(c, coo_blobs((0, 1, 2, 3))), "FORMAT", "column 3 of 3")
    at_walk("v12_coo_coord_u64_max", v1_file(c, coo_blobs((0, 1, (1 << 64) - 1, 0))), "FORMAT", "coordinate 2^64-1")
    # Bools.
    bm = root({"b": obj([4], "dense", {"data": comp("bool", 64, 4)})})
    ok("v12_ok_bool", v1_file(bm, [(64, b"\0\1\1\0")]), "control: bool bytes 0/1")
    at_walk("v12_bool_byte_2", v1_file(bm, [(64, b"\0\1\2\0")]), "FORMAT", "bool byte 2")
    at_walk("v12_bool_byte_ff", v1_file(bm, [(64, b"\xff\1\1\0")]), "FORMAT", "bool byte 0xff")
    zb = zraw(b"\0\1\x80\0")
    at_walk("v12_bool_zstd_byte_80", v1_file(root({"b": obj([4], "dense", {"data": zcomp("bool", 64, len(zb), 4)})}),
                                             [(64, zb)]), "FORMAT", "zstd bool data with byte 0x80")
    at_walk("v12_bool_sparse_values", v1_file(root({"s": obj([2, 3], "sparse_coo", {
        "values": comp("bool", 64, 2), "coords": comp("u64", 128, 32)})}), [(64, b"\1\3"), (128, u64s([0, 1, 2, 0]))]),
        "FORMAT", "bool values of a COO object with byte 3")


def name_cases():
    m = dense_m()

    def named(name):
        return root({name: m["objects"]["w"]})

    at_open("v12_name_empty", dense_file(named("")), "FORMAT", "empty object name")
    at_open("v12_name_nul", dense_file(named("w\0x")), "FORMAT", "object name with a NUL byte")
    at_open("v12_name_only_nul", dense_file(named("\0")), "FORMAT", "object name that is one NUL byte")
    at_open("v12_name_not_utf8", dense_file(mbytes=replace1(cbor(dense_m()), b"\xa1\x61w", b"\xa1\x62w\xfe")), "FORMAT",
            "object name with byte 0xfe")
    at_open("v12_name_bytes_key", dense_file(Map([("version", "1.2.0"), ("objects", Map([(b"w", m["objects"]["w"])]))])),
            "FORMAT", "object name is a byte string")
    at_open("v12_name_integer_key", dense_file(Map([("version", "1.2.0"), ("objects", Map([(1, m["objects"]["w"])]))])),
            "FORMAT", "object name is an integer")
    at_open("v12_name_duplicate", dense_file(Map([("version", "1.2.0"), ("objects", Map([
        ("w", m["objects"]["w"]), ("w", m["objects"]["w"])]))])), "FORMAT", "object name 'w' twice")
    at_open("v12_name_too_long", dense_file(named("n" * 65537)), "LIMIT", "object name of 65537 bytes")
    ok("v12_ok_name_65536", dense_file(named("n" * 65536)), "control: object name of 65536 bytes (the limit)")
    comps = m["objects"]["w"]["components"]["data"]

    def roled(pairs):
        return root({"w": {"shape": [2, 2], "format": "dense", "components": Map(pairs)}})

    at_open("v12_role_empty", dense_file(roled([("", comps)])), "FORMAT", "empty role")
    at_open("v12_role_nul", dense_file(roled([("da\0ta", comps)])), "FORMAT", "role with a NUL byte")
    at_open("v12_role_duplicate", dense_file(roled([("data", comps), ("data", comps)])), "FORMAT", "role 'data' twice")
    at_open("v12_role_too_long", v1_file(root({"q": obj([4], "custom", {"r" * 65537: comp("f32", 64, 16)})}), [(64, W4)]),
            "LIMIT", "role of 65537 bytes")
    at_open("v12_role_integer", dense_file(roled([(0, comps)])), "FORMAT", "role is an integer")
    at_open("v12_format_nul", dense_file(edit(m, O("format"), "dense\0")), "FORMAT", "format with a NUL byte")
    at_open("v12_type_nul", dense_file(edit(m, D("type"), "my\0type")), "FORMAT", "logical type with a NUL byte")
    at_open("v12_version_nul", dense_file(edit(m, ("version",), "1.2.0\0")), "FORMAT", "version with a NUL byte")
    # Duplicate keys in manifest maps.
    at_open("v12_dupkey_root_version", dense_file(Map([("version", "1.2.0"), ("version", "1.2.0"),
                                                      ("objects", m["objects"])])), "FORMAT", "root 'version' twice")
    at_open("v12_dupkey_root_objects", dense_file(Map([("version", "1.2.0"), ("objects", {}), ("objects", m["objects"])])),
            "FORMAT", "root 'objects' twice (first empty)")
    at_open("v12_dupkey_object_shape", dense_file(root({"w": Map([("shape", [2, 2]), ("shape", [4]), ("format", "dense"),
                                                                  ("components", {"data": comps})])})), "FORMAT",
            "object 'shape' twice")
    at_open("v12_dupkey_component_offset", dense_file(root({"w": obj([2, 2], "dense", {"data": Map([
        ("dtype", "f32"), ("offset", 64), ("offset", 128), ("length", 16)])})})), "FORMAT", "component 'offset' twice")
    at_open("v12_dupkey_component_digest", dense_file(root({"w": obj([2, 2], "dense", {"data": Map([
        ("dtype", "f32"), ("offset", 64), ("length", 16), ("digest", sha256(W4)), ("digest", "md5:00")])})})),
        "FORMAT", "component 'digest' twice")


def v11_cases():
    f8c = root({"f8": obj([4], "dense", {"data": comp("f8_e4m3", 64, 4)}),
                "c": obj([2], "dense", {"data": comp("complex64", 128, 16)})}, "1.1.0")
    blobs = [(64, b"\1\2\3\4"), (128, W4)]
    ok("v11_ok_dtype_spellings", v1_file(f8c, blobs), "control: v1.1 dtypes f8_e4m3 and complex64")
    ok("v11_ok_dense", dense_file(dense_m("1.1.0")), "control: v1.1 dense f32")
    z = zraw(D16)
    nolen = edit(zstd_m(len(z), 64, version="1.1.0"), D("uncompressed_length"))
    ok("v11_ok_zstd_without_uncompressed_length", v1_file(nolen, [(64, z)]),
       "control: v1.1 dense zstd sized from its shape")
    at_walk("v11_zstd_shape_sized_decodes_long", v1_file(edit(nolen, D("length"), len(zraw(D16 + b"\0" * 4))),
                                                         [(64, zraw(D16 + b"\0" * 4))]), "FORMAT",
            "v1.1 zstd sized by its shape (64) decodes 68 bytes")
    at_open("v11_zstd_shape_sized_over_limit", v1_file(edit(nolen, O("shape"), [1 << 40]), [(64, z)]), "LIMIT",
            "v1.1 zstd sized by its shape: 4 TiB, over the decode limit")
    at_open("v11_zstd_shape_overflows", v1_file(edit(nolen, O("shape"), [1 << 62, 8]), [(64, z)]), "FORMAT",
            "v1.1 zstd sized by a shape whose element count overflows")
    at_open("v11_zstd_non_dense_without_length", v1_file(root({"q": obj([4, 4], "quantized_group", {
        "scales": {"dtype": "f32", "offset": 64, "length": len(z), "encoding": "zstd"}})}, "1.1.0"), [(64, z)]),
        "FORMAT", "v1.1 zstd non-dense component without uncompressed_length has no size")
    at_open("v11_dtype_type_contradiction", v1_file(edit(f8c, ("objects", "f8", "components", "data", "type"), "f8_e5m2"),
                                                    blobs), "FORMAT", "dtype f8_e4m3 with type f8_e5m2")
    at_open("v11_complex64_wrong_length", v1_file(edit(f8c, ("objects", "c", "shape"), [4]), blobs), "FORMAT",
            "v1.1 complex64 [4] with 16 bytes")
    at_open("v11_f8_on_f32_length", v1_file(edit(f8c, ("objects", "f8", "shape"), [8]), blobs), "FORMAT",
            "v1.1 f8_e4m3 [8] with 4 bytes")


def legacy_cases():
    t = legacy_tensor()
    good = legacy_file([t], [(64, W4)])
    ok("v01_ok_dense", good, "control: legacy dense float32 [2,2]")
    ok("v01_ok_empty", V01 + b"\x80" + struct.pack("<Q", 1), "control: legacy file with no tensors (17 bytes)")
    ok("v01_ok_indefinite_maps", legacy_file([t], [(64, W4)], indef=True),
       "control: per-tensor maps with indefinite length, as the reference writer does")
    ok("v01_ok_big_endian_f32", legacy_file([legacy_tensor(data_endianness="big")], [(64, struct.pack(">4f", 1, 2, 3, 4))]),
       "control: big-endian float32, swapped on read")
    ok("v01_ok_big_endian_u8", legacy_file([legacy_tensor(dtype="uint8", size=4, data_endianness="big")], [(64, b"\1\2\3\4")]),
       "control: big-endian uint8 needs no swap")
    ok("v01_ok_all_dtypes", legacy_file([legacy_tensor(name=n, offset=64 * (i + 1), size=4 * sz, dtype=n, shape=[4])
                                         for i, (n, sz) in enumerate([
                                             ("float64", 8), ("float32", 4), ("float16", 2), ("bfloat16", 2),
                                             ("int64", 8), ("int32", 4), ("int16", 2), ("int8", 1), ("uint64", 8),
                                             ("uint32", 4), ("uint16", 2), ("uint8", 1), ("bool", 1)])],
                                        [(64 * (i + 1), (b"\1" if n == "bool" else b"\0") * 4 * sz) for i, (n, sz) in enumerate([
                                            ("float64", 8), ("float32", 4), ("float16", 2), ("bfloat16", 2),
                                            ("int64", 8), ("int32", 4), ("int16", 2), ("int8", 1), ("uint64", 8),
                                            ("uint32", 4), ("uint16", 2), ("uint8", 1), ("bool", 1)])]),
       "control: every long dtype name")
    ok("v01_ok_short_dtype_name", legacy_file([legacy_tensor(dtype="f32")], [(64, W4)]), "control: short dtype name f32")
    ok("v01_ok_checksum", legacy_file([legacy_tensor(checksum=crc_digest(W4))], [(64, W4)]), "control: crc32c checksum")
    ok("v01_ok_custom_keys", legacy_file([legacy_tensor(author="me", step=3)], [(64, W4)]),
       "control: custom keys become attributes")
    ok("v01_ok_minimal_keys", legacy_file([{"name": "w", "offset": 64, "size": 16, "dtype": "float32", "shape": [2, 2]}],
                                          [(64, W4)]), "control: encoding, layout, endianness omitted")
    z = zraw(W4)
    ok("v01_ok_zstd", legacy_file([legacy_tensor(size=len(z), encoding="zstd")], [(64, z)]), "control: legacy zstd dense")
    ok("v01_ok_zstd_big_endian", legacy_file([legacy_tensor(size=len(zraw(struct.pack(">4f", 1, 2, 3, 4))), encoding="zstd",
                                                            data_endianness="big")],
                                             [(64, zraw(struct.pack(">4f", 1, 2, 3, 4)))]),
       "control: legacy zstd big-endian float32")
    coo = u64s([0, 1]) + f32s([1.5]) + u64s([1, 2]) + f32s([-2.0])
    csr = u64s([0, 1, 2]) + u64s([2, 0]) + f32s([1.5, -2.0])
    sp = lambda layout, blob, **kw: legacy_file([legacy_tensor(layout=layout, shape=[2, 3], size=len(blob), **kw)],  # noqa: E731
                                                [(64, blob)])
    ok("v01_ok_sparsecoo", sp("sparsecoo", coo), "control: legacy COO records")
    ok("v01_ok_sparsecsr", sp("sparsecsr", csr), "control: legacy CSR blob")
    ok("v01_ok_sparse_format_coo", sp("sparse", coo, sparse_format="coo"), "control: layout sparse + sparse_format coo")
    ok("v01_ok_sparse_format_csr", sp("sparse", csr, sparse_format="csr"), "control: layout sparse + sparse_format csr")
    bcsr = struct.pack(">3Q", 0, 1, 2) + struct.pack(">2Q", 2, 0) + struct.pack(">2f", 1.5, -2.0)
    ok("v01_ok_sparsecsr_big_endian", sp("sparsecsr", bcsr, data_endianness="big"), "control: big-endian legacy CSR")
    bcoo = struct.pack(">2Q", 0, 1) + struct.pack(">f", 1.5) + struct.pack(">2Q", 1, 2) + struct.pack(">f", -2.0)
    ok("v01_ok_sparsecoo_big_endian", sp("sparsecoo", bcoo, data_endianness="big"), "control: big-endian legacy COO")
    ok("v01_ok_coo_scalar", legacy_file([legacy_tensor(layout="sparsecoo", shape=[], size=4)], [(64, f32s([7.0]))]),
       "control: legacy COO of a scalar: one record of no indices")
    # Container.
    at_open("v01_container_16_bytes", V01 + struct.pack("<Q", 0), "FORMAT", "header + size, no manifest")
    at_open("v01_container_size_zero", V01 + b"\x80" + struct.pack("<Q", 0), "FORMAT", "manifest size 0")
    at_open("v01_container_size_past_file", set_size(good, len(good) + 1, True), "FORMAT", "manifest size past the file")
    at_open("v01_container_size_over_1gib", set_size(good, (1 << 30) + 1, True), "LIMIT", "manifest size over 1 GiB")
    at_open("v01_container_size_overlaps_header", set_size(V01 + b"\x80" + struct.pack("<Q", 1), 2, True), "FORMAT",
            "manifest size reaching into the header")
    at_open("v01_container_bad_magic", b"ZTEN0002" + good[8:], "FORMAT", "header magic ZTEN0002")
    at_open("v01_container_v1_footer_appended", good + V1, "LIMIT",
            "a legacy file followed by 'ZTEN1000': its bytes read as a 3.5e18-byte manifest size")
    mlen = len(cbor([t]))
    for cut, what in [(8, "header only"), (40, "inside the blob"), (80, "blob complete, no manifest"),
                      (80 + mlen // 2, "middle of the manifest"), (80 + mlen, "manifest complete, no size"),
                      (80 + mlen + 4, "inside the size field"), (len(good) - 1, "last size byte missing")]:
        data = good[:cut]
        size = struct.unpack("<Q", data[-8:])[0] if len(data) >= 16 else None
        status = "FORMAT" if size is None or size <= 1 << 30 else "LIMIT"
        at_open("v01_trunc_%03d" % cut, data, status,
                "legacy file truncated to %d bytes (%s): the last 8 bytes read as size %s" % (cut, what, size))
    # Manifest.
    at_open("v01_manifest_map", legacy_file({"w": t}, [(64, W4)]), "FORMAT", "legacy manifest is a map")
    at_open("v01_manifest_text", legacy_file("tensors", [(64, W4)]), "FORMAT", "legacy manifest is text")
    at_open("v01_entry_integer", legacy_file([7], [(64, W4)]), "FORMAT", "legacy tensor entry is an integer")
    at_open("v01_depth_bomb", v01_file(None, [(64, W4)], mbytes=b"\x81" * 10000 + b"\x80"), "LIMIT", "10000 nested arrays")
    at_open("v01_cbor_garbage", v01_file(None, [(64, W4)], mbytes=lcg_bytes(4, 200)), "FORMAT", "pseudo-random manifest")
    for key in ("name", "offset", "size", "dtype", "shape"):
        tt = dict(t)
        del tt[key]
        at_open("v01_missing_" + key, legacy_file([tt], [(64, W4)]), "FORMAT", "legacy tensor lacks '%s'" % key)
    wrong = [("name", 5, "name is an integer"), ("offset", "64", "offset is text"), ("size", -16, "size is negative"),
             ("dtype", 1, "dtype is an integer"), ("shape", "2,2", "shape is text"), ("shape", [2, -2], "negative dim"),
             ("encoding", 0, "encoding is an integer"), ("layout", [], "layout is an array"),
             ("data_endianness", True, "endianness is a bool"), ("checksum", 1, "checksum is an integer")]
    for i, (key, value, what) in enumerate(wrong):
        at_open("v01_wrong_type_%02d" % i, legacy_file([dict(t, **{key: value})], [(64, W4)]), "FORMAT", what)
    at_open("v01_unknown_dtype", legacy_file([legacy_tensor(dtype="float128")], [(64, W4)]), "FORMAT", "dtype float128")
    at_open("v01_unknown_dtype_complex", legacy_file([legacy_tensor(dtype="complex64")], [(64, W4)]), "FORMAT",
            "dtype complex64 is not a v0.1 dtype")
    at_open("v01_bad_endianness", legacy_file([legacy_tensor(data_endianness="middle")], [(64, W4)]), "FORMAT",
            "data_endianness 'middle'")
    at_open("v01_unknown_layout", legacy_file([legacy_tensor(layout="blocked")], [(64, W4)]), "UNSUPPORTED", "layout 'blocked'")
    at_open("v01_sparse_without_format", sp("sparse", coo), "UNSUPPORTED", "layout sparse without sparse_format")
    at_open("v01_sparse_format_bsr", sp("sparse", coo, sparse_format="bsr"), "UNSUPPORTED", "sparse_format 'bsr'")
    at_open("v01_unknown_encoding", legacy_file([legacy_tensor(encoding="lz4")], [(64, W4)]), "UNSUPPORTED", "encoding lz4")
    zc = zraw(coo)
    at_open("v01_zstd_sparse", legacy_file([legacy_tensor(layout="sparsecoo", shape=[2, 3], size=len(zc), encoding="zstd")],
                                           [(64, zc)]), "UNSUPPORTED", "zstd COO: no recorded decoded size")
    at_open("v01_coo_partial_record", sp("sparsecoo", coo[:-1]), "FORMAT", "COO blob not a whole number of records")
    at_open("v01_csr_not_splitting", sp("sparsecsr", csr + b"\0"), "FORMAT", "CSR blob with one extra byte")
    at_open("v01_csr_too_short_for_indptr", sp("sparsecsr", u64s([0, 1])), "FORMAT", "CSR blob shorter than rows+1 pointers")
    at_open("v01_csr_1d", legacy_file([legacy_tensor(layout="sparsecsr", shape=[6], size=len(csr))], [(64, csr)]),
            "FORMAT", "legacy CSR with a 1-d shape")
    at_open("v01_csr_rows_u64_max", legacy_file([legacy_tensor(layout="sparsecsr", shape=[(1 << 64) - 1, 3], size=len(csr))],
                                                [(64, csr)]), "FORMAT", "legacy CSR with 2^64-1 rows")
    at_open("v01_coo_nnz_over_numel", legacy_file([legacy_tensor(layout="sparsecoo", shape=[1, 1], size=len(coo))],
                                                  [(64, coo)]), "FORMAT", "2 COO records in a 1x1 tensor")
    at_walk("v01_csr_indptr_bad", sp("sparsecsr", u64s([0, 2, 1]) + u64s([2, 0]) + f32s([1.5, -2.0])), "FORMAT",
            "legacy CSR indptr 0, 2, 1")
    at_walk("v01_csr_column_out_of_range", sp("sparsecsr", u64s([0, 1, 2]) + u64s([3, 0]) + f32s([1.5, -2.0])), "FORMAT",
            "legacy CSR column 3 of 3")
    at_walk("v01_coo_out_of_range", sp("sparsecoo", u64s([0, 1]) + f32s([1.5]) + u64s([2, 2]) + f32s([-2.0])), "FORMAT",
            "legacy COO row 2 of 2")
    at_walk("v01_csr_big_endian_indptr_bad", sp("sparsecsr", struct.pack(">3Q", 0, 1, 2) + struct.pack(">2Q", 2, 0) +
                                                struct.pack(">2f", 1.5, -2.0)), "FORMAT",
            "big-endian CSR read as little-endian: indptr 0, 2^56, 2^57")
    at_walk("v01_bool_byte_2", legacy_file([legacy_tensor(dtype="bool", size=4, shape=[4])], [(64, b"\0\1\2\1")]), "FORMAT",
            "legacy bool byte 2")
    # Placement.
    at_open("v01_offset_zero", legacy_file([legacy_tensor(offset=0)], [(64, W4)]), "FORMAT", "offset 0")
    at_open("v01_offset_unaligned", legacy_file([legacy_tensor(offset=72)], [(72, W4)]), "FORMAT", "offset 72")
    at_open("v01_offset_past_end", legacy_file([legacy_tensor(offset=1 << 20)], [(64, W4)]), "FORMAT", "offset past the end")
    at_open("v01_offset_overflow", legacy_file([legacy_tensor(offset=((1 << 64) - 1) & ~63)], [(64, W4)]), "FORMAT",
            "offset + size overflows")
    at_open("v01_size_into_manifest", legacy_file([legacy_tensor(size=20, shape=[5])], [(64, W4)]), "FORMAT",
            "blob reaches into the manifest")
    at_open("v01_overlap", legacy_file([legacy_tensor(), legacy_tensor(name="v", offset=64, size=8, shape=[2])], [(64, W4)]),
            "FORMAT", "two tensors overlapping partially")
    ok("v01_ok_shared_blob", legacy_file([legacy_tensor(), legacy_tensor(name="v", shape=[4])], [(64, W4)]),
       "control: two legacy tensors on the same blob")
    at_open("v01_dense_size_mismatch", legacy_file([legacy_tensor(shape=[2, 3])], [(64, W4)]), "FORMAT",
            "float32 [2,3] with 16 bytes")
    at_open("v01_shape_overflow", legacy_file([legacy_tensor(shape=[1 << 32, 1 << 32, 2])], [(64, W4)]), "FORMAT",
            "element count overflows")
    at_open("v01_zstd_shape_overflow", legacy_file([legacy_tensor(size=len(z), encoding="zstd", shape=[1 << 62, 8])],
                                                   [(64, z)]), "FORMAT",
            "regression: legacy zstd dense tensor whose element count overflows is a shape fault; it was "
            "reported as UNSUPPORTED 'no recorded decoded size' (fixed in fabcf66)")
    at_open("v01_shape_bytes_overflow", legacy_file([legacy_tensor(shape=[1 << 62])], [(64, W4)]), "FORMAT",
            "regression: legacy float32 [2^62] with 16 bytes: byte size overflows u64; the size check was "
            "skipped (fixed in fabcf66)")
    at_open("v01_zstd_over_limit", legacy_file([legacy_tensor(size=len(z), encoding="zstd", shape=[1 << 40])], [(64, z)]),
            "LIMIT", "legacy zstd dense sized by its shape: 4 TiB")
    at_walk("v01_zstd_decodes_long", legacy_file([legacy_tensor(size=len(zraw(W4 + b"\0")), encoding="zstd")],
                                                 [(64, zraw(W4 + b"\0"))]), "FORMAT", "legacy zstd decoding 17 bytes for 16")
    at_walk("v01_zstd_bomb", legacy_file([legacy_tensor(size=len(zrle(1, 1 << 28)), encoding="zstd")],
                                         [(64, zrle(1, 1 << 28))]), "FORMAT", "legacy zstd RLE bomb of 256 MiB for 16 bytes")
    at_open("v01_rank_65", legacy_file([legacy_tensor(shape=[2, 2] + [1] * 63)], [(64, W4)]), "LIMIT", "rank 65")
    # Digests and names.
    at_walk("v01_checksum_mismatch", legacy_file([legacy_tensor(checksum="crc32c:0x00000000")], [(64, W4)]), "CHECKSUM",
            "legacy crc32c mismatch")
    at_walk("v01_checksum_sha256_mismatch", legacy_file([legacy_tensor(checksum="sha256:" + "ab" * 32)], [(64, W4)]),
            "CHECKSUM", "legacy sha256 mismatch")
    at_open("v01_checksum_malformed", legacy_file([legacy_tensor(checksum="crc32c:1234")], [(64, W4)]), "FORMAT",
            "legacy checksum crc32c:1234")
    at_walk("v01_checksum_unknown", legacy_file([legacy_tensor(checksum="adler32:0x01020304")], [(64, W4)]), "UNSUPPORTED",
            "legacy checksum algorithm adler32")
    at_walk("v01_checksum_sparse_mismatch", sp("sparsecsr", csr, checksum="crc32c:0x00000000"), "CHECKSUM",
            "legacy CSR checksum mismatch (one blob behind three components)")
    at_open("v01_name_empty", legacy_file([legacy_tensor(name="")], [(64, W4)]), "FORMAT", "empty legacy name")
    at_open("v01_name_nul", legacy_file([legacy_tensor(name="a\0b")], [(64, W4)]), "FORMAT", "legacy name with NUL")
    at_open("v01_name_not_utf8", v01_file(None, [(64, W4)], mbytes=replace1(cbor([t]), b"\x64name\x61w", b"\x64name\x61\xff")), "FORMAT",
            "legacy name byte 0xff")
    at_open("v01_name_too_long", legacy_file([legacy_tensor(name="x" * 65537)], [(64, W4)]), "LIMIT", "legacy name of 65537 bytes")
    at_open("v01_name_duplicate", legacy_file([legacy_tensor(), legacy_tensor()], [(64, W4)]), "FORMAT",
            "two legacy tensors named 'w'")
    at_open("v01_dupkey_offset", legacy_file(Arr([Map(list(t.items()) + [("offset", 128)])]), [(64, W4), (128, W4)]),
            "FORMAT", "legacy tensor map with 'offset' twice")


# --------------------------------------------------------------------------------------
# Other formats read through the same API: safetensors (st_*) and GGUF (gguf_*). The files
# keep the .zt extension of the corpus; the reader recognises them by their bytes.
# --------------------------------------------------------------------------------------

def st_file(header, data=b"", pad=8):
    """A safetensors file: u64 LE header length, the JSON header padded with spaces, data."""
    h = header.encode("utf-8") if isinstance(header, str) else header
    h += b" " * (-len(h) % pad)
    return struct.pack("<Q", len(h)) + h + data


def st_entry(dtype, shape, begin, end):
    return '{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}' % (dtype, "[" + ",".join(map(str, shape)) + "]",
                                                                   begin, end)


def gstr(b):
    b = b.encode("utf-8") if isinstance(b, str) else b
    return struct.pack("<Q", len(b)) + b


def gguf_file(kvs=(), tensors=(), version=3, alignment=32, counts=None, data=b""):
    """A GGUF file: kvs are (key, type, value bytes); tensors (name, ne, type, offset)."""
    out = b"GGUF" + struct.pack("<I", version)
    nt, nk = counts if counts is not None else (len(tensors), len(kvs))
    out += struct.pack("<QQ", nt, nk)
    for key, ty, value in kvs:
        out += gstr(key) + struct.pack("<I", ty) + value
    for name, ne, ty, offset in tensors:
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", ty, offset)
    out += b"\0" * (-len(out) % alignment)
    return out + data


def garr(elem, count, items=b""):
    return struct.pack("<IQ", elem, count) + items


def foreign_cases():
    # safetensors
    good_header = '{"__metadata__":{"k":"v"},"w":%s,"b":%s}' % (st_entry("F32", [2, 2], 0, 16),
                                                               st_entry("BOOL", [4], 16, 20))
    good = st_file(good_header, W4 + b"\1\0\1\1")
    ok("st_ok_dense", good, "control: safetensors f32 [2,2] + bool [4] + __metadata__")
    ok("st_ok_fp8", st_file('{"f":%s}' % st_entry("F8_E4M3", [4], 0, 4), b"\1\2\3\4"),
       "control: safetensors F8_E4M3 as u8 + f8_e4m3fn")
    at_walk("st_bool_byte_2", st_file('{"b":%s}' % st_entry("BOOL", [4], 0, 4), b"\1\0\2\1"), "FORMAT",
            "safetensors bool byte 2")
    at_open("st_trunc_header", good[:24], "FORMAT", "safetensors cut inside the header: the length points past the end")
    at_open("st_trunc_data", good[:-1], "FORMAT", "safetensors missing the last data byte")
    at_open("st_header_len_huge", struct.pack("<Q", 1 << 62) + good[8:], "FORMAT",
            "safetensors header length 2^62: past the end of the file")
    at_open("st_json_garbage", st_file('{"w":{"dtype":"F32",,}}'), "FORMAT", "safetensors header with a syntax error")
    at_open("st_json_not_utf8", st_file(b'{"w\xff":1}'), "FORMAT", "safetensors header with byte 0xff")
    at_open("st_depth_bomb", st_file('{"w":' + "[" * 10000 + "]" * 10000 + "}"), "LIMIT",
            "safetensors header nesting 10000 arrays")
    at_open("st_duplicate_key", st_file('{"w":%s,"w":%s}' % (st_entry("F32", [4], 0, 16), st_entry("F32", [4], 0, 16)),
                                        W4), "FORMAT", "safetensors tensor 'w' twice")
    at_open("st_unknown_dtype", st_file('{"w":%s}' % st_entry("Q4", [4], 0, 16), W4), "UNSUPPORTED", "safetensors dtype Q4")
    ok("st_f8_e8m0", st_file('{"w":%s}' % st_entry("F8_E8M0", [16], 0, 16), W4),
       "safetensors F8_E8M0: u8 + f8_e8m0fnu")
    ok("st_f4", st_file('{"w":%s}' % st_entry("F4", [32], 0, 16), W4), "safetensors F4: 32 packed values")
    at_open("st_f4_odd", st_file('{"w":%s}' % st_entry("F4", [31], 0, 16), W4), "FORMAT",
            "safetensors F4 [31]: not a whole number of bytes")
    at_open("st_f6_size", st_file('{"w":%s}' % st_entry("F6_E3M2", [20], 0, 16), W4), "FORMAT",
            "safetensors F6_E3M2 [20] needs 15 bytes, not 16")
    at_open("st_size_mismatch", st_file('{"w":%s}' % st_entry("F32", [3], 0, 16), W4), "FORMAT",
            "safetensors F32 [3] in 16 bytes")
    at_open("st_offsets_reversed", st_file('{"w":%s}' % st_entry("F32", [0], 16, 0), W4), "FORMAT",
            "safetensors data_offsets [16, 0)")
    at_open("st_offsets_past_end", st_file('{"w":%s}' % st_entry("F32", [8], 0, 32), W4), "FORMAT",
            "safetensors data_offsets past the end of the file")
    at_open("st_offsets_not_integers", st_file('{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,1.6e1]}}', W4),
            "FORMAT", "safetensors data_offsets with a float")
    at_open("st_overlap", st_file('{"a":%s,"b":%s}' % (st_entry("F32", [3], 0, 12), st_entry("F32", [2], 8, 16)), W4),
            "FORMAT", "safetensors tensors overlapping")
    at_open("st_shape_overflow", st_file('{"w":%s}' % st_entry("F32", [1 << 32, 1 << 32, 2], 0, 16), W4), "FORMAT",
            "safetensors shape whose element count overflows")
    at_open("st_metadata_not_string", st_file('{"__metadata__":{"k":1}}'), "FORMAT",
            "safetensors __metadata__ value that is a number")
    at_open("st_name_empty", st_file('{"":%s}' % st_entry("F32", [4], 0, 16), W4), "FORMAT", "safetensors empty name")

    # GGUF
    F32, Q4_0 = 0, 2
    kvs = [("general.architecture", 8, gstr("llama")), ("general.alignment", 4, struct.pack("<I", 32)),
           ("tokens", 9, garr(8, 2, gstr("a") + gstr("b")))]
    q = lcg_bytes(7, 18)
    gdata = W4 + b"\0" * 16 + q + b"\0" * 14
    tensors = [("w", [2, 2], F32, 0), ("q", [32], Q4_0, 32)]
    gg = gguf_file(kvs, tensors, data=gdata)
    ok("gguf_ok_dense_and_q4_0", gg, "control: GGUF v3 f32 [2,2] + Q4_0 [32] + key/values")
    for cut, what in [(4, "magic only"), (20, "inside the counts"), (60, "inside the key/values"),
                      (len(gg) - 60, "inside the data"), (len(gg) - 15, "last tensor cut")]:
        at_open("gguf_trunc_%03d" % cut, gg[:cut], "FORMAT", "GGUF cut to %d bytes (%s)" % (cut, what))
    at_open("gguf_v1", b"GGUF" + struct.pack("<I", 1) + gg[8:], "UNSUPPORTED", "GGUF v1")
    at_open("gguf_big_endian", b"GGUF" + struct.pack(">I", 3) + gg[8:], "UNSUPPORTED", "GGUF v3 big-endian")
    at_open("gguf_tensor_count_huge", gguf_file(kvs, tensors, counts=(1 << 60, 3), data=gdata), "FORMAT",
            "GGUF tensor count 2^60")
    at_open("gguf_kv_count_huge", gguf_file(kvs, tensors, counts=(2, 1 << 60), data=gdata), "FORMAT",
            "GGUF key/value count 2^60")
    at_open("gguf_string_len_huge", gguf_file([("k", 8, struct.pack("<Q", 1 << 62))]), "FORMAT",
            "GGUF string length 2^62")
    at_open("gguf_array_count_huge", gguf_file([("k", 9, garr(10, 1 << 62))]), "FORMAT",
            "GGUF array of 2^62 u64")
    deep = garr(0, 0)
    for _ in range(5000):
        deep = garr(9, 1, deep)
    at_open("gguf_array_depth_bomb", gguf_file([("k", 9, deep)]), "LIMIT", "GGUF arrays nested 5000 deep")
    at_open("gguf_bool_2", gguf_file([("k", 7, b"\2")]), "FORMAT", "GGUF bool value 2")
    at_open("gguf_unknown_value_type", gguf_file([("k", 13, b"\0" * 8)]), "FORMAT", "GGUF value type 13")
    at_open("gguf_duplicate_key", gguf_file([("k", 0, b"\1"), ("k", 0, b"\2")]), "FORMAT", "GGUF key 'k' twice")
    at_open("gguf_alignment_48", gguf_file([("general.alignment", 4, struct.pack("<I", 48))], alignment=16), "FORMAT",
            "GGUF general.alignment 48")
    at_open("gguf_offset_unaligned", gguf_file(kvs, [("w", [2, 2], F32, 8)], data=gdata), "FORMAT",
            "GGUF tensor at data offset 8 (alignment 32)")
    at_open("gguf_offset_past_end", gguf_file(kvs, [("w", [2, 2], F32, 1 << 20)], data=gdata), "FORMAT",
            "GGUF tensor past the end of the file")
    at_open("gguf_offset_overflow", gguf_file(kvs, [("w", [2, 2], F32, (1 << 64) - 32)], data=gdata), "FORMAT",
            "GGUF tensor offset overflowing u64")
    at_open("gguf_overlap", gguf_file(kvs, [("w", [16], F32, 0), ("v", [4], F32, 32)], data=gdata + b"\0" * 64),
            "FORMAT", "GGUF tensors overlapping")
    at_open("gguf_quant_ne0", gguf_file(kvs, [("q", [16, 2], Q4_0, 0)], data=gdata), "FORMAT",
            "GGUF Q4_0 with ne[0] = 16, not a multiple of 32")
    at_walk("gguf_unknown_type", gguf_file(kvs, [("w", [4], 4, 0)], data=gdata), "UNSUPPORTED",
            "GGUF tensor of removed type 4 (Q4_2): the file opens, the tensor's reads are refused")
    at_walk("gguf_unknown_type_1000", gguf_file(kvs, [("w", [2, 2], F32, 0), ("u", [64, 3], 1000, 32)], data=gdata),
            "UNSUPPORTED", "GGUF f32 tensor + one of type 1000: the file opens, only the second is refused")
    ok("gguf_ok_q2_0", gguf_file(kvs, [("w", [2, 2], F32, 0), ("q", [64], 42, 32)], data=gdata),
       "control: GGUF f32 [2,2] + Q2_0 [64] (type 42, the newest ggml type)")
    at_open("gguf_dims_overflow", gguf_file(kvs, [("w", [1 << 32, 1 << 32, 2], F32, 0)], data=gdata), "FORMAT",
            "GGUF dims whose element count overflows")
    at_open("gguf_rank_65", gguf_file(kvs, [("w", [1] * 65, F32, 0)], data=gdata), "LIMIT", "GGUF tensor of 65 dims")
    at_open("gguf_name_duplicate", gguf_file(kvs, [("w", [4], F32, 0), ("w", [4], F32, 32)], data=gdata), "FORMAT",
            "GGUF tensor 'w' twice")


ALLOC_CASES = []


def alloc_case(name, data, call, acceptable, note):
    assert "\t" not in note
    ALLOC_CASES.append((name + ".zt", bytes(data), call, "|".join("ZT_" + a if a == "OK" else "ZT_ERR_" + a
                                                               for a in acceptable), note))


def alloc_cases():
    """Claims a reader cannot allocate: run by tests/hostile_corpus.rs in a child process
    with RLIMIT_AS = 2 GiB, so that allocating the claimed size fails on every machine.
    A correct reader returns a status (one of those listed); it never aborts."""
    n = 4 << 30
    one = zrle(0x02, n, fcs=n)
    f = v1_file(root({"w": obj([n // 4], "dense", {"data": zcomp("f32", 64, len(one), n)})}), [(64, one)])
    alloc_case("alloc_frame_4gib_view", f, "view", ["LIMIT"],
               "control: a view of 4 GiB that cannot be allocated is a LIMIT error")
    alloc_case("alloc_frame_4gib_range", f, "range0", ["OK", "LIMIT"],
               "regression: one zstd frame recording a 4 GiB content size (131 KiB stored): a 1-byte range "
               "read allocated the whole frame with vec! and aborted the process when that failed "
               "(fixed in 4a0c0dc)")
    stream = zrle(0x02, n)
    g = v1_file(root({"w": obj([n // 4], "dense", {"data": zcomp("f32", 64, len(stream), n)})}), [(64, stream)])
    alloc_case("alloc_stream_4gib_range", g, "range0", ["OK", "LIMIT"],
               "regression: a zstd stream without content sizes (as the reference writer makes them) said "
               "to decode to 4 GiB: a 1-byte range read decoded the whole stream into a vec! of 4 GiB and "
               "aborted when that could not be allocated (fixed in 4a0c0dc)")
    b = v1_file(root({"b": obj([n], "dense", {"data": zcomp("bool", 64, len(stream), n)})}), [(64, stream)])
    alloc_case("alloc_bool_4gib_validate", b, "validate", ["FORMAT", "LIMIT"],
               "regression: zt_object_validate on a 4 GiB zstd bool component (bytes 0x02): read_to_vec "
               "allocated with vec! and aborted the process when that failed (fixed in 4a0c0dc)")
    nnz = 1 << 29
    idx = zrle(0x00, nnz * 8)
    vals = zrle(0x00, nnz * 4)
    c = v1_file(root({"s": obj([1, nnz], "sparse_csr", {
        "values": zcomp("f32", 64, len(vals), nnz * 4),
        "indices": zcomp("u64", 64 * ((64 + len(vals)) // 64 + 1), len(idx), nnz * 8),
        "indptr": comp("u64", 64 * ((64 + len(vals)) // 64 + 1 + (len(idx) // 64 + 1)), 16)})}),
        [(64, vals), (64 * ((64 + len(vals)) // 64 + 1), idx),
         (64 * ((64 + len(vals)) // 64 + 1 + (len(idx) // 64 + 1)), u64s([0, nnz]))])
    alloc_case("alloc_csr_4gib_validate", c, "validate", ["OK", "LIMIT"],
               "regression: zt_object_validate on a CSR whose zstd indices claim 4 GiB: read_to_vec "
               "aborted the process when the allocation failed (fixed in 4a0c0dc)")

# --------------------------------------------------------------------------------------
# PyTorch checkpoints (pt_*), NumPy arrays (npy_*, npz_*) and ONNX models (onnx_*): hostile
# pickles must be refused with nothing executed; zip, .npy and protobuf structures bounded.
# --------------------------------------------------------------------------------------

def zip_file(entries, *, cd_edit=None):
    """A zip archive of (name, data, deflate) entries, as a fixed byte string (no dates)."""
    import zipfile
    import io
    import warnings
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as z:
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name, and writes it
        for name, data, deflate in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            z.writestr(info, data)
    out = buf.getvalue()
    return cd_edit(out) if cd_edit else out


def pstr(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def pint(x):
    """A pickle integer: BININT when it fits in 4 bytes, else LONG1 of 8 bytes."""
    if -2**31 <= x < 2**31:
        return b"J" + struct.pack("<i", x)
    return b"\x8a\x08" + struct.pack("<Q", x)


def pkl_tensor(key, storage="FloatStorage", offset=0, size=(2,), stride=(1,), numel=2):
    """A `_rebuild_tensor_v2` call on the storage `data/<key>` (protocol 2 opcodes)."""
    tup = lambda v: b"(" + b"".join(pint(x) for x in v) + b"t"  # noqa: E731
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" + b"(" + pstr("storage") + b"ctorch\n" + storage.encode()
            + b"\n" + pstr(key) + pstr("cpu") + pint(numel) + b"tQ"
            + pint(offset) + tup(size) + tup(stride) + b"\x89"
            + b"ccollections\nOrderedDict\n)RtR")


def pkl_dict(items):
    return b"\x80\x02}(" + b"".join(pstr(k) + v for k, v in items) + b"u."


def checkpoint(pickle, storages=((b"0", f32s([1.0, 2.0])),), **kw):
    entries = [("archive/data.pkl", pickle, False), ("archive/byteorder", b"little", False)]
    entries += [("archive/data/" + k.decode(), v, False) for k, v in storages]
    entries.append(("archive/version", b"3\n", False))
    return zip_file(entries, **kw)


def npy_bytes(header, data=b"", version=1):
    h = header.encode()
    pad = 64 - (len(h) + (10 if version == 1 else 12) + 1) % 64
    h += b" " * (pad % 64) + b"\n"
    ln = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + ln + h + data


def pb_varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def pb(field, value):
    """A protobuf field: an int is a varint, bytes are length-delimited."""
    if isinstance(value, int):
        return pb_varint(field << 3) + pb_varint(value)
    return pb_varint(field << 3 | 2) + pb_varint(len(value)) + value


def onnx_model(tensors, ir_version=10):
    graph = pb(2, b"g") + b"".join(pb(5, t) for t in tensors)
    return pb(1, ir_version) + pb(2, b"hostile") + pb(7, graph)


def onnx_tensor(name, dims, data_type=1, raw=None, extra=b""):
    t = b"".join(pb(1, d) for d in dims) + pb(2, data_type) + pb(8, name.encode())
    if raw is not None:
        t += pb(9, raw)
    return t + extra


def pickled_cases():
    good = pkl_dict([("w", pkl_tensor("0"))])
    ok("pt_ok_state_dict", checkpoint(good), "control: a torch.save zip with one f32 [2] tensor")
    at_open("pt_os_system", checkpoint(b"\x80\x02cos\nsystem\n(" + pstr("touch /tmp/zt_pwned") + b"tR."),
            "UNSUPPORTED", "pickle calls os.system through REDUCE: refused at the GLOBAL, nothing runs")
    at_open("pt_builtins_eval", checkpoint(b"\x80\x04" + b"\x8c\x08builtins\x8c\x04eval\x93" + pstr("1+1")
                                           + b"\x85R."),
            "UNSUPPORTED", "STACK_GLOBAL builtins.eval called: refused, nothing evaluated")
    at_open("pt_unknown_global", checkpoint(pkl_dict([("m", b"ctorch.nn\nLinear\n)R")])),
            "UNSUPPORTED", "a torch.nn.Linear instance: a global a state dict doesn't need")
    at_open("pt_memo_get_huge", checkpoint(b"\x80\x02j\xff\xff\xff\xff."),
            "FORMAT", "LONG_BINGET 0xffffffff of a memo entry never stored")
    ok("pt_memo_put_huge", checkpoint(b"\x80\x02}r\xff\xff\xff\xff(" + pstr("w") + pkl_tensor("0") + b"u."),
       "LONG_BINPUT at index 0xffffffff: a sparse memo, no allocation by index")
    deep = b"\x80\x02}(" + pstr("x") + b"]" * 5000 + b"a" * 4999 + b"u."
    at_open("pt_deep_lists", checkpoint(deep), "LIMIT", "5000 nested lists: the walk stops at depth 64")
    laugh = b"\x80\x02}(" + pstr("x") + b"]q\x000" + b"".join(
        b"(h%sh%sl" % (bytes([i]), bytes([i])) + b"q" + bytes([i + 1]) + b"0" for i in range(60)) + b"h<u."
    at_open("pt_billion_laughs", checkpoint(laugh), "LIMIT",
            "60 levels of a list holding the previous one twice (2^60 paths): visits bounded")
    cyc = b"\x80\x02}(" + pstr("x") + b"]q\x00h\x00au."
    at_open("pt_list_holds_itself", checkpoint(cyc), "LIMIT", "a list appended to itself: a cycle, bounded")
    at_open("pt_long_string", checkpoint(b"\x80\x04\x8d" + struct.pack("<Q", 1 << 62) + b"ab."),
            "FORMAT", "BINUNICODE8 of 2^62 bytes in a pickle of a few")
    at_open("pt_long_bytes", checkpoint(b"\x80\x03B\xff\xff\xff\xffab."), "FORMAT",
            "BINBYTES of 4 GiB in a pickle of a few")
    at_open("pt_marks_many", checkpoint(b"\x80\x02" + b"(" * 5000 + b"N."), "LIMIT", "5000 open marks")
    at_open("pt_stack_underflow", checkpoint(b"\x80\x02R."), "FORMAT", "REDUCE on an empty stack")
    at_open("pt_no_stop", checkpoint(good[:-1]), "FORMAT", "a pickle without its STOP opcode")
    at_open("pt_int_huge", checkpoint(b"\x80\x02\x8b\x64\x00\x00\x00" + b"\x01" * 100 + b"."),
            "UNSUPPORTED", "a 100-byte integer")
    at_open("pt_storage_missing", checkpoint(pkl_dict([("w", pkl_tensor("9"))])), "FORMAT",
            "a tensor whose storage data/9 is not in the archive")
    at_open("pt_storage_short", checkpoint(pkl_dict([("w", pkl_tensor("0", numel=100, size=(100,)))])),
            "FORMAT", "a storage of 100 floats held in 8 bytes")
    at_open("pt_view_past_storage", checkpoint(pkl_dict([("w", pkl_tensor("0", offset=1, size=(2,)))])),
            "FORMAT", "a view from element 1 of 2 elements of a 2-element storage")
    at_open("pt_stride_overflow", checkpoint(pkl_dict([("w", pkl_tensor("0", size=(2, 2), stride=(2**31 - 1, 2**31 - 1)))])),
            "FORMAT", "strides reaching far past the storage")
    # Issue 35: views whose arithmetic passes u64.
    s16 = ((b"0", f32s([float(i) for i in range(16)])),)
    at_open("pt_view_end_wraps", checkpoint(pkl_dict([("w", pkl_tensor("0", offset=2**63 - 1, size=(3,),
                                                                       stride=(2**62,), numel=16))]), s16),
            "FORMAT", "regression (issue 35): offset 2^63-1, size [3], stride [2^62] over a 16-element storage: "
            "the last element is 2^64-1, whose end wrapped to 0 and passed the storage check; its bytes were read "
            "from before the storage with ZT_OK")
    at_open("pt_len_wraps", checkpoint(pkl_dict([("w", pkl_tensor("0", size=(2**62 + 1,), stride=(0,),
                                                                  numel=16))]), s16),
            "FORMAT", "regression (issue 35): size [2^62+1] of f32 at stride 0 stays in its storage, but its "
            "byte size (count x 4) wraps u64")
    at_open("pt_stride_wraps_2d", checkpoint(pkl_dict([("w", pkl_tensor("0", offset=8, size=(2, 2),
                                                                        stride=(2**63, 2**63), numel=16))]), s16),
            "FORMAT", "issue 35: two strides of 2^63 whose sum wraps to 0 (the last element would look like "
            "element 8)")
    ok("pt_ok_view_at_storage_end", checkpoint(pkl_dict([("w", pkl_tensor("0", offset=13, size=(3,), numel=16))]),
                                               s16),
       "control: a view of the last 3 of 16 elements")
    at_open("pt_view_one_past_storage_end",
            checkpoint(pkl_dict([("w", pkl_tensor("0", offset=14, size=(3,), numel=16))]), s16),
            "FORMAT", "a view of 3 elements from element 14 of 16")
    at_open("pt_empty_key", checkpoint(pkl_dict([("", pkl_tensor("0"))])), "FORMAT",
            "issue 35: a dict key that is empty: its tensor was named 'tensor', which a real key may be too")
    dup = [("archive/data.pkl", good, False), ("archive/data.pkl", pkl_dict([("v", pkl_tensor("0"))]), False),
           ("archive/data/0", f32s([1.0, 2.0]), False)]
    at_open("pt_zip_duplicate_name", zip_file(dup), "FORMAT",
            "issue 35: two members named archive/data.pkl: this reader took the first, Python's zipfile the "
            "last; archives naming a member twice are refused")
    at_open("pt_legacy", b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", "UNSUPPORTED",
            "the legacy (pre-1.6) pickle format: refused with how to convert it")
    at_open("pt_zip_count_huge", checkpoint(good, cd_edit=lambda b: b[:-12] + struct.pack("<H", 0xFFFE)
                                            + b[-10:]), "FORMAT",
            "the end record counts 65534 entries in a central directory of a few")
    at_open("pt_zip_cd_past_end", checkpoint(good, cd_edit=lambda b: b[:-6] + struct.pack("<I", 1 << 30)
                                             + b[-2:]), "FORMAT",
            "the central directory starts past the end of the file")
    at_open("pt_zip_no_end", checkpoint(good)[:-22], "FORMAT", "a zip archive without its end record")
    # NumPy
    ok("npy_ok_f4", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", W4),
       "control: a .npy f32 [2,2]")
    at_open("npy_header_huge", b"\x93NUMPY\x02\x00\xff\xff\xff\xff{", "LIMIT", "a version 2 header of 4 GiB")
    at_open("npy_shape_huge", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"),
            "FORMAT", "a shape whose byte size overflows u64")
    at_open("npy_data_short", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1000,), }", W4),
            "FORMAT", "1000 f64 in a file of 16 data bytes")
    at_open("npy_object", npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", b"\x80\x02N."),
            "UNSUPPORTED", "an object array (a pickle): refused, nothing unpickled")
    at_open("npy_bad_literal", npy_bytes("{'descr': __import__('os'), 'shape': (2,), }", W4),
            "FORMAT", "a header that is not the literal numpy writes: nothing is evaluated")
    ok("npy_ok_fortran_be", npy_bytes("{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }",
                                      struct.pack(">6h", 1, 4, 2, 5, 3, 6)),
       "control: a big-endian Fortran-ordered i16 [2,3], read as a copy")
    header = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", W4)

    def corrupt_crc(b):
        i = b.index(b"PK\x01\x02")
        return b[:i + 16] + struct.pack("<I", 0xDEADBEEF) + b[i + 20:]
    at_walk("npz_crc_mismatch", zip_file([("w.npy", header, True)], cd_edit=corrupt_crc), "CHECKSUM",
            "a deflated member whose CRC-32 disagrees: found when it is inflated")

    def claim_huge(b):
        i = b.index(b"PK\x01\x02")
        return b[:i + 24] + struct.pack("<I", 0xFFFFFFF0) + b[i + 28:]
    at_open("npz_inflate_claim", zip_file([("w.npy", header, True)], cd_edit=claim_huge), "FORMAT",
            "a deflated member of a few bytes that claims to inflate to 4 GiB")
    at_open("npz_not_npy", zip_file([("readme.txt", b"hello", False)]), "UNSUPPORTED",
            "a zip archive that is neither a checkpoint nor an .npz")
    at_open("npz_duplicate_name", zip_file([("w.npy", header, False), ("w.npy", header, True)]), "FORMAT",
            "issue 35: two members named w.npy")
    at_open("npy_shape_wraps", npy_bytes("{'descr': '<f4', 'fortran_order': True, "
                                         "'shape': (4294967296, 4294967297), }"),
            "FORMAT", "issue 35: a Fortran-ordered shape whose element count wraps u64")
    # ONNX
    ok("onnx_ok_raw", onnx_model([onnx_tensor("w", [2, 2], raw=W4)]), "control: an f32 [2,2] initializer")
    at_open("onnx_raw_len", onnx_model([onnx_tensor("w", [2, 3], raw=W4)]), "FORMAT",
            "raw_data of 16 bytes for a [2,3] f32")
    at_open("onnx_len_past_end", onnx_model([onnx_tensor("w", [2, 2], raw=W4)])[:-4], "FORMAT",
            "a field whose length reaches past its message")
    at_open("onnx_rank_100", onnx_model([onnx_tensor("w", [1] * 100, raw=W4[:4])]), "LIMIT",
            "an initializer of 100 dimensions")
    at_open("onnx_group", onnx_model([onnx_tensor("w", [2, 2], raw=W4, extra=b"\x1b")]), "FORMAT",
            "a field of wire type 3 (a group)")
    ext = pb(13, pb(1, b"location") + pb(2, b"../../etc/passwd")) + pb(14, 1)
    at_open("onnx_external_traversal", onnx_model([onnx_tensor("w", [2], extra=ext)]), "FORMAT",
            "external data at ../../etc/passwd: outside the model's directory")
    typed = b"".join(pb_varint(4 << 3 | 5) + struct.pack("<f", v) for v in (1.0, 2.0, 3.0))
    at_open("onnx_typed_count", onnx_model([onnx_tensor("w", [4], extra=typed)]), "FORMAT",
            "float_data holds 3 values for a shape of 4: counted at open (issue 35; it was found when decoded)")
    at_open("onnx_typed_claim_huge", onnx_model([onnx_tensor("w", [2**28], data_type=3, extra=pb(5, 7))]),
            "FORMAT", "regression (issue 35): INT8 [2^28] with one value in int32_data (39 bytes): a 16-byte "
            "range read committed 256 MiB before failing; now refused at open")
    packed = pb(5, b"".join(pb_varint(v) for v in (1, 2, 3, 300)))
    at_open("onnx_typed_varints_short", onnx_model([onnx_tensor("w", [6], data_type=6, extra=packed)]), "FORMAT",
            "issue 35: 5 bytes of packed int32_data can hold at most 5 values, not the 6 of the shape")
    ok("onnx_ok_typed_varints", onnx_model([onnx_tensor("w", [4], data_type=6, extra=packed)]),
       "control: packed int32_data of 4 values (one of 2 bytes) for a shape of 4")
    at_walk("onnx_typed_varints_fewer", onnx_model([onnx_tensor("w", [5], data_type=6, extra=packed)]), "FORMAT",
            "5 bytes of packed varints that hold 4 values for a shape of 5: only decoding counts varints")


def run(outdir):
    container_v12()
    cbor_faults()
    lenient_ok()
    schema_faults()
    schema_faults("1.1.0", "v11")
    bounds_faults()
    zstd_cases()
    digest_cases()
    sparse_cases()
    name_cases()
    v11_cases()
    legacy_cases()
    foreign_cases()
    pickled_cases()
    alloc_cases()
    alloc_dir = os.path.join(outdir, "alloc")
    os.makedirs(alloc_dir, exist_ok=True)
    for d in (outdir, alloc_dir):
        for old in os.listdir(d):
            if old.endswith(".zt"):
                os.remove(os.path.join(d, old))
    for name, data, _, _, _ in CASES:
        with open(os.path.join(outdir, name), "wb") as fh:
            fh.write(data)
    with open(os.path.join(outdir, "expected.tsv"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write(TSV_HEADER)
        for name, _, open_status, walk_status, note in CASES:
            fh.write("%s\t%s\t%s\t%s\n" % (name, open_status, walk_status, note))
    for name, data, _, _, _ in ALLOC_CASES:
        with open(os.path.join(alloc_dir, name), "wb") as fh:
            fh.write(data)
    with open(os.path.join(alloc_dir, "expected.tsv"), "w", encoding="utf-8", newline="\n") as fh:
        fh.write(ALLOC_TSV_HEADER)
        for name, _, call, acceptable, note in ALLOC_CASES:
            fh.write("%s\t%s\t%s\t%s\n" % (name, call, acceptable, note))
    return len(CASES) + len(ALLOC_CASES)


TSV_HEADER = """\
# Hostile zTensor corpus: one line per file, generated by generate.py (do not edit by hand).
#
# Columns: file, open_status, walk_status, note.
# open_status: the zt_status name zt_open(path) must return (ZT_OK when the file opens).
#   The same status is expected from zt_open_with(ZT_OPEN_NO_MMAP) and from
#   zt_open_memory on the file's bytes (Rust: Reader::open with and without mmap, and
#   Reader::from_slice).
# walk_status: "-" when the open fails. Otherwise the FIRST non-OK status of this walk,
#   or ZT_OK when every call succeeds. Every call is made even after a failure:
#   for each object i in 0 .. zt_object_count() - 1:
#     zt_object_get_info(i)                          (on failure: skip to the next object)
#     for each component c in 0 .. component_count - 1:
#       zt_component_get_info(i, c)                  (on failure: skip to the next component)
#       if decoded_length > 0: zt_component_read_range(i, role) of byte 0, then of byte
#         decoded_length - 1 (1 byte each)
#       zt_component_read(i, role) into a malloc'd buffer of exactly decoded_length bytes
#       zt_component_view(i, role)                   (on success every byte is read)
#       zt_component_verify(i, role)                 (ZT_ERR_NOT_FOUND = "no digest": not a failure)
#     zt_object_validate(i)
#     zt_object_get_attributes_json(i)
#   zt_file_get_attributes_json()                    (the file's attributes)
#   zt_file_verify()
# Range reads and the read come before the view on purpose: a view caches the decoded
# bytes and later reads are served from that cache, which would hide faults of the
# streaming (range) and direct (read) decode paths.
# Bytes that several calls return (range reads, read, view) must agree; a disagreement is
# a failure of its own, whatever the statuses.
# A note starting with "BUG" marks a file where the library differed when the corpus was
# written: the expected status is the one it should give.
file\topen_status\twalk_status\tnote
"""

ALLOC_TSV_HEADER = """\
# Claims that cannot be allocated, generated by ../generate.py (do not edit by hand).
# tests/hostile_corpus.rs opens each file (mmap) in a child process limited to 2 GiB of
# address space (RLIMIT_AS), makes one call, and checks that the child exits normally
# with one of the acceptable statuses (never an abort).
# Calls: view = zt_component_view of component 0 of object 0; range0 = a 1-byte
# zt_component_read_range at offset 0 of that component; validate = zt_object_validate(0).
file\tcall\tacceptable\tnote
"""

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    print("%d files written to %s" % (run(out), out))
