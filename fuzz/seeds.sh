#!/usr/bin/env bash
# seeds.sh <target> <dir>: writes the seeds of a fuzz target into <dir>, made from the
# committed vectors (tests/vectors/): every file of the target's format, in the form the
# target takes its input (see each fuzz_targets/<target>.rs):
#   open_walk    every vector as it is
#   safetensors  the JSON header, a 0 byte, the data section
#   gguf         the file without "GGUF"
#   tensogram    the file without the first "TENSOGRM"
#   ztensor_v01  the file without "ZTEN0001"
#   manifest     4-byte data length, the data from offset 64, the manifest (v1 files)
#   ztensor_v2   4-byte data length, the data from offset 4096 to the manifest, the
#                manifest (v2 files; an empty data region when it is over 64 KiB)
#   writer       a few fixed call sequences (bytes the target reads as calls)
#   pytorch      the data.pkl of every PyTorch checkpoint (a zip with <dir>/data.pkl)
#   npy          a .npy file's header text, a 0 byte, its data (version 1 and 2 files)
#   zip          every zip archive (.npz, checkpoints) as it is
#   onnx         every ONNX model as it is
# ZTENSOR_V2_CORPUS, when set, names the zTensor v2 conformance corpus (not committed
# here): its files are seeds too.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
vectors="$here/../tests/vectors"
target=$1
out=$2
mkdir -p "$out"
# Every vector file (a format's own extension, or .zt for the hostile corpus and the
# reference vectors), one per line.
all() {
  {
    find "$vectors" -type f \( -name '*.zt' -o -name '*.gguf' -o -name '*.safetensors' -o -name '*.tgm' \
      -o -name '*.npy' -o -name '*.npz' -o -name '*.onnx' -o -name '*.pt' -o -name '*.bin' \) \
      ! -path '*/alloc/*'
    if [ -n "${ZTENSOR_V2_CORPUS:-}" ] && [ -d "$ZTENSOR_V2_CORPUS" ]; then
      find "$ZTENSOR_V2_CORPUS" -type f -name '*.zt'
    fi
  } | sort
}
v2magic="$(printf '\x89ZT2\r\n\x1a\n' | od -An -tx1 | tr -d ' \n')"
magic() { head -c 8 "$1"; }
u64le() { od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }
n=0
while IFS= read -r f; do
  base="$(basename "$f")"
  m="$(magic "$f" | tr -d '\0')"
  size=$(stat -c %s "$f")
  case "$target" in
    open_walk) cp "$f" "$out/$base" ;;
    gguf) [[ $m == GGUF* ]] && tail -c +5 "$f" > "$out/$base" ;;
    tensogram) [[ $m == TENSOGRM ]] && tail -c +9 "$f" > "$out/$base" ;;
    ztensor_v01) [[ $m == ZTEN0001 ]] && tail -c +9 "$f" > "$out/$base" ;;
    safetensors)
      if [[ $f == *.safetensors || $base == st_* ]] && [ "$size" -ge 9 ]; then
        len=$(u64le "$f" 0)
        if [ ${#len} -le 18 ] && [ "$len" -le $((size - 8)) ]; then
          { tail -c +9 "$f" | head -c "$len"; printf '\0'; tail -c +$((9 + len)) "$f"; } > "$out/$base"
        fi
      fi ;;
    manifest)
      if [[ $m == ZTEN1000 ]] && [ "$size" -ge 80 ] && [ "$(tail -c 8 "$f" | tr -d '\0')" = ZTEN1000 ]; then
        msize=$(u64le "$f" $((size - 16)))
        if [ ${#msize} -le 18 ] && [ "$msize" -le $((size - 80)) ]; then
          dlen=$((size - 16 - msize - 64))
          { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((dlen & 255)) $((dlen >> 8 & 255)) \
              $((dlen >> 16 & 255)) $((dlen >> 24 & 255)))"
            tail -c +65 "$f" | head -c $((size - 80)); } > "$out/$base"
        fi
      fi ;;
    ztensor_v2)
      if [ "$size" -ge 48 ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = "$v2magic" ]; then
        at=$(u64le "$f" $((size - 40)))
        len=$(u64le "$f" $((size - 32)))
        if [ ${#at} -le 18 ] && [ ${#len} -le 18 ] && [ "$len" -gt 0 ] && [ "$at" -ge 4096 ] \
          && [ $((at + len)) -le $((size - 40)) ]; then
          dlen=$((at - 4096))
          if [ "$dlen" -gt 65536 ]; then dlen=0; fi
          { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x00' $((dlen & 255)) $((dlen >> 8 & 255)) \
              $((dlen >> 16 & 255)))"
            # head stops reading early: tail's SIGPIPE is not a failure.
            tail -c +4097 "$f" | head -c "$dlen" || true
            tail -c +$((at + 1)) "$f" | head -c "$len" || true; } > "$out/$(basename "$(dirname "$f")")-$base"
          base="$(basename "$(dirname "$f")")-$base"
        fi
      fi ;;
    writer) ;;
    pytorch|npy)
      # Only archives (pytorch) and .npy files (npy) are worth starting python for.
      { [[ $target == pytorch && $m == PK* ]] || [[ $target == npy && $m == *NUMPY* ]]; } || continue
      python3 - "$target" "$f" "$out/$base" <<'PY' || true
import sys, zipfile
target, src, dst = sys.argv[1:]
data = open(src, "rb").read()
if target == "pytorch" and data[:4] == b"PK\x03\x04":
    try:
        z = zipfile.ZipFile(src)
        pkl = [n for n in z.namelist() if n.endswith("data.pkl")]
        if pkl:
            open(dst, "wb").write(z.read(pkl[0]))
    except Exception:
        pass
elif target == "npy" and data[:6] == b"\x93NUMPY":
    n, at = (int.from_bytes(data[8:10], "little"), 10) if data[6] == 1 else (int.from_bytes(data[8:12], "little"), 12)
    open(dst, "wb").write(data[at:at + n] + b"\0" + data[at + n:])
PY
      ;;
    zip) [[ $m == PK* ]] && cp "$f" "$out/$base" ;;
    onnx) { [[ $f == *.onnx ]] || [[ $base == onnx_* ]]; } && cp "$f" "$out/$base" ;;
    *) echo "seeds.sh: unknown target $target" >&2; exit 2 ;;
  esac
  [ -e "$out/$base" ] && n=$((n + 1))
done < <(all)
if [ "$target" = writer ]; then
  # Arbitrary-looking bytes are calls too; a few to start from, each written twice: after
  # a first byte 0 (the file is zTensor v2) and 1 (v1.2).
  calls() {
    printf '\x00'"$2" > "$out/v2-$1"
    printf '\x01'"$2" > "$out/v12-$1"
    n=$((n + 2))
  }
  # Plain, zstd, streamed.
  calls add '\x00\x01\x00\x00\x02\x04\x00\x00\x00\x01\x02\x03\x04\x05\x06\x07'
  calls stream '\x01\x02\x01\x00\x03\x00\x05\x01\x04\x10\x00\x01\x02\x03\x05\x06\x06'
  calls attributes '\x07\x02\x03\x61\x0a\x20\x00\x00\x00\x00\x00\x00\x00\x08\x00\x01'
  # The file attribute with an empty key that v2's writer once wrote and its reader refused.
  calls empty-key '\x07\xba\x02\x03\x61\xff\xff\xff\x0a\x20\xff\xff\xff\x01'
  # File attributes whose keys v2 stores sorted ("b" given before "a").
  calls unsorted-keys '\x07\xba\x02\x03\x61\xff\x03\xff\xff\x0a\x20\xff\xff\xff\x01'
  # Objects added out of name order ("layer.0" before "a"): v2 reads them back sorted.
  calls name-order '\x6c\xff\xff\xff\xff\xff\xff\xff\x6c\x67\x6c\x67\x00\xba\x00\x00\x02'
  # "xé" and "layer.0": bytewise name order, not the order of their CBOR encodings.
  calls name-bytes '\x00\xff\xff\xba\x07\xba\xff\x0a\xdc\x61\x61\x61\x00\xff\x11\x20\x67'
  # An f8_e8m0fnu part, which v2 names f8_e8m0.
  # A shape whose product overflows before a dimension of 0 (v2 refuses it, §3.3).
  calls product-overflow '\x6c\xff\xfd\xff\x3b\x00\x00\x00\xff\xff\x6c\x67\x6c\x67\x6c\x67\x07\xba\xff\xff\xff'
  calls e8m0-name '\x3f\x07\x01\x3f\x00\x07\x61\xff\x6d\x0a\x62\x20\xff\xff'
fi
echo "seeds.sh: $n seeds for $target in $out" >&2
