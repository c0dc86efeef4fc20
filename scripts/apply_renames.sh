#!/usr/bin/env bash
# Applies docs/naming-decisions.md to the tree: the C API's names for 0.2.0. Temporary:
# run once by the lead on merged main, after every stream's API changes have landed and
# before the ABI baseline is written; the script and the decisions file are deleted in
# the same commit.
#
#   bash scripts/apply_renames.sh --dry           # count what each step would change
#   bash scripts/apply_renames.sh                 # rewrite the tree (a clean one)
#   bash scripts/apply_renames.sh --keep-aliases  # the same, but keep the 31 deprecated
#                                                 # aliases (decision 8 not taken)
#
# Then, in this order (also printed at the end):
#   ZTENSOR_HEADER_OUT=$PWD/include/ztensor.h cargo check --lib --features remote
#   cargo test --features cli,remote --lib ffi      # the header's order/sections checks
#   cmake --build build --target quick && ctest --test-dir build -L quick
#   python3 tests/release/abi.py dump               # the final 0.2.0 baseline
#   .ci/run (or the full ctest)
#
# Steps: (8) drop the aliases: their Rust file, test program, warning test, coverage
# entries and documentation table; (1) split zt_writer_set_attributes_json into
# zt_writer_set_file_attributes_json / zt_writer_set_object_attributes_json: the Rust
# functions, the Go and Python bindings' one call each, and every call whose object
# argument is a literal NULL or a string (literal or .c_str()); (2, 4, 7) plain renames.
# Each structural edit looks for the exact text it replaces and, when that text has moved
# or changed, says so and leaves that part for a person (the script exits 1 at the end).
# What it can't decide (a call whose object is a variable that may be NULL) is listed.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

dry=0
keep_aliases=0
for arg in "$@"; do
  case $arg in
    --dry) dry=1 ;;
    --keep-aliases) keep_aliases=1 ;;
    *) echo "usage: $0 [--dry] [--keep-aliases]" >&2; exit 2 ;;
  esac
done
if [[ $dry == 0 && -n $(git status --porcelain --untracked-files=no) ]]; then
  echo "apply_renames.sh: the tree has uncommitted changes; commit or stash them first" >&2
  exit 2
fi
left_file=$(mktemp)
trap 'rm -f "$left_file"' EXIT
export ZT_RENAMES_DRY=$dry ZT_RENAMES_KEEP_ALIASES=$keep_aliases ZT_RENAMES_LEFT=$left_file

# --- Structural edits (decisions 8 and 1), in Python for exact multi-line matches ------
python3 - <<'PYTHON'
import os
import re
import subprocess
import sys

DRY = os.environ["ZT_RENAMES_DRY"] == "1"
KEEP = os.environ["ZT_RENAMES_KEEP_ALIASES"] == "1"
left = []


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(path, text):
    if not DRY:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def replace(path, old, new, what, count=1):
    """Replaces `old` (exactly `count` times) in path, or records that a person must."""
    if not os.path.exists(path):
        left.append(f"{what}: {path} is gone")
        return False
    text = read(path)
    n = text.count(old) if isinstance(old, str) else len(old.findall(text))
    if n != count:
        left.append(f"{what}: {path} has {n} match(es) of the text this step replaces, not {count}")
        return False
    text = text.replace(old, new) if isinstance(old, str) else old.sub(new, text)
    write(path, text)
    print(f"  edited  {path}: {what}")
    return True


def remove(path, what):
    if not os.path.exists(path):
        left.append(f"{what}: {path} is gone already")
        return
    if not DRY:
        subprocess.run(["git", "rm", "-q", path], check=True)
    print(f"  removed {path}: {what}")


# --- 8. the 31 deprecated aliases ---------------------------------------------------------
if not KEEP:
    print("8. dropping the deprecated aliases")
    aliases = re.findall(r'pub unsafe extern "C" fn (zt_\w+)', read("src/ffi/deprecated.rs"))
    print(f"  {len(aliases)} aliases: {' '.join(aliases)}")
    remove("src/ffi/deprecated.rs", "the aliases")
    remove("tests/c/test_deprecated_names.c", "the test calling each alias")
    remove("tests/cmake/check_deprecated.cmake", "the warning test's script")
    replace("src/ffi/mod.rs", "mod deprecated;\n", "", "the module")
    replace("src/ffi/mod.rs", "pub use deprecated::*;\n", "", "its re-export")
    replace("src/ffi/mod.rs",
            "        let first_old = functions.iter().position(|(_, d)| *d).unwrap();\n"
            "        assert!(\n"
            "            functions[first_old..].iter().all(|(_, d)| *d),\n"
            "            \"a current function among the deprecated ones\"\n"
            "        );\n"
            "        assert_eq!(functions[first_old - 1].0, \"zt_pool_thread_count\");\n",
            "        // Deprecated old names (none in 0.2.0) come after every current function.\n"
            "        let first_old = functions\n"
            "            .iter()\n"
            "            .position(|(_, d)| *d)\n"
            "            .unwrap_or(functions.len());\n"
            "        assert!(\n"
            "            functions[first_old..].iter().all(|(_, d)| *d),\n"
            "            \"a current function among the deprecated ones\"\n"
            "        );\n"
            "        assert_eq!(functions[first_old - 1].0, \"zt_pool_thread_count\");\n",
            "the header-order test without deprecated names")
    replace("CMakeLists.txt", re.compile(
        r"  # --- Calling an old \(deprecated\) name warns.*?\n  endif\(\)\n\n", re.S), "",
        "the deprecated_warns_* tests")
    replace("CMakeLists.txt", re.compile(
        r"    if\(stem STREQUAL \"test_deprecated_names\".*?\n    endif\(\)\n", re.S), "",
        "test_deprecated_names' warning flag")
    replace("cmake/labels.cmake", "|deprecated_warns_", "", "the quick label's pattern")
    replace("tests/c/test_api.c", re.compile(
        r"    /\* the deprecated old names of renamed functions, each called once: \*/\n"
        r"(    \"zt_\w+\", /\* test_deprecated_names\.c \*/\n)+"), "",
        "the coverage list's aliases")
    # docs/c-api.md: the table of renamed functions goes; the rule's text says why.
    replace("docs/c-api.md", re.compile(
        r"\*\*Renamed functions\.\*\*.*?calls every old name beside its new one\.\n\n", re.S),
        "**Renamed functions.** The names of the pre-release tree that did not follow the rule\n"
        "were renamed before 0.2.0, the first release; CHANGELOG.md lists each old name with\n"
        "its replacement. From 0.2.0 on, a renamed function keeps its old name as an exported\n"
        "alias, declared last in the header with `ZT_DEPRECATED` (a compiler warns where one\n"
        "is called and names the new one), until the SONAME changes.\n\n",
        "the table of renamed functions (CHANGELOG.md lists them)")
    replace("src/value/typed/mod.rs", "contiguously (zt_value_array_data, AttrValue::array_data)",
            "contiguously (zt_value_get_array_data, AttrValue::array_data)", "a comment's old name")
    replace("docs/reliability.md", "(`zt_open_url`)", "(`zt_open_url_with`)", "an old name")
    replace("docs/reliability.md", "(`zt_attributes`, `zt_value_*`)",
            "(`zt_file_get_attributes`, `zt_object_get_attributes`, `zt_value_*`)", "an old name")
else:
    print("8. keeping the deprecated aliases (--keep-aliases)")
    replace("src/ffi/deprecated.rs", 'renamed zt_file_get_attribute"', 'renamed zt_file_find_attribute"',
            "the alias's note follows decision 2")
    replace("src/ffi/deprecated.rs", 'renamed zt_object_get_attribute"', 'renamed zt_object_find_attribute"',
            "the alias's note follows decision 2")

# --- 1. zt_writer_set_attributes_json split -------------------------------------------
print("1. splitting zt_writer_set_attributes_json")
OLD_RUST = re.compile(
    r"/// Sets attributes from JSON text, which must be an object.*?\n"
    r"pub unsafe extern \"C\" fn zt_writer_set_attributes_json\(\n"
    r"    w: \*mut zt_writer,\n    object: \*const c_char,\n    json: \*const c_char,\n\) -> zt_status \{\n"
    r"    guard\(\|\| \{\n"
    r"        let w = writer\(w\)\?;\n"
    r"        let object = optional_str\(object, \"object\"\)\?;\n"
    r"        let text = need_str\(json, \"json\"\)\?;\n"
    r"        let value = (crate::json::from_json\(text, crate::limits::Limits::default\(\)\.max_cbor_depth\)\n"
    r"            \.map_err\(\|e\| err!\(InvalidArgument, \"attributes: \{e\}\"\)\)\?);\n"
    r"        match object \{\n"
    r"            None => w\.set_file_attributes\(value\),\n"
    r"            Some\(name\) => w\.set_object_attributes\(name, value\),\n"
    r"        \}\n"
    r"    \}\)\n"
    r"\}\n", re.S)
NEW_RUST = r'''/// Sets the file's attributes from JSON text, which must be an object ({"$bytes":"<hex>"}
/// becomes a CBOR byte string). Any time before finish; a second call replaces.
/// Attributes nested deeper than a reader with the default limits accepts (127 levels,
/// the attribute object itself counted) are `ZT_ERR_INVALID_ARGUMENT`, as is malformed
/// JSON.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_set_file_attributes_json(
    w: *mut zt_writer,
    json: *const c_char,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let text = need_str(json, "json")?;
        let value = \1;
        w.set_file_attributes(value)
    })
}

/// Sets the attributes of `object`, the name of an object already begun (open or ended),
/// from JSON text, as `zt_writer_set_file_attributes_json` does the file's (125 levels
/// of nesting for an object's). `object` NULL is `ZT_ERR_INVALID_ARGUMENT`; an object
/// not written (or refused) is `ZT_ERR_NOT_FOUND`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_set_object_attributes_json(
    w: *mut zt_writer,
    object: *const c_char,
    json: *const c_char,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let name = need_str(object, "object")?;
        let text = need_str(json, "json")?;
        let value = \1;
        w.set_object_attributes(name, value)
    })
}
'''
replace("src/ffi/write.rs", OLD_RUST, NEW_RUST, "the two C functions")
replace("c_examples/go/ztgo.h",
        "  return ztgo_status(zt_writer_set_attributes_json(w, object, json), msg);\n",
        "  return ztgo_status(object == NULL ? zt_writer_set_file_attributes_json(w, json)\n"
        "                                    : zt_writer_set_object_attributes_json(w, object, json),\n"
        "                     msg);\n",
        "the Go binding's call (NULL: the file)")
replace("python/ztensor_c/_lib.py",
        "writer_set_attributes_json = lib.zt_writer_set_attributes_json\n",
        "writer_set_file_attributes_json = lib.zt_writer_set_file_attributes_json\n"
        "writer_set_object_attributes_json = lib.zt_writer_set_object_attributes_json\n",
        "the Python package's functions")
replace("python/ztensor_c/_writer.py",
        "            _lib.check(_lib.writer_set_attributes_json(\n"
        "                self._writer(), ffi.NULL if name is None else name.encode(), text))\n",
        "            if name is None:\n"
        "                _lib.check(_lib.writer_set_file_attributes_json(self._writer(), text))\n"
        "            else:\n"
        "                _lib.check(_lib.writer_set_object_attributes_json(self._writer(), name.encode(), text))\n",
        "the Python writer's call")
replace("tests/c/test_api.c", '"zt_writer_set_attributes_json",',
        '"zt_writer_set_file_attributes_json", "zt_writer_set_object_attributes_json",',
        "the coverage list")
replace("tests/c/test_api.c",
        '    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_writer_set_attributes_json(w, "nope", "{}"));\n'
        '    CHECK_ERROR_MENTIONS("nope");\n',
        '    CHECK_STATUS(ZT_ERR_NOT_FOUND, zt_writer_set_attributes_json(w, "nope", "{}"));\n'
        '    CHECK_ERROR_MENTIONS("nope");\n'
        '    CHECK_STATUS(ZT_ERR_INVALID_ARGUMENT, zt_writer_set_object_attributes_json(w, NULL, "{}"));\n'
        '    CHECK_ERROR_MENTIONS("object is NULL");\n',
        "a test that the object variant refuses NULL")

with open(os.environ["ZT_RENAMES_LEFT"], "w") as f:
    for line in left:
        f.write(line + "\n")
if left:
    print("\nNot done (do by hand):")
    for line in left:
        print(f"  - {line}")
PYTHON

# --- Plain renames (sed) -----------------------------------------------------------------
# Every tracked text file (after the edits above) that may name a C function, but the record of the decisions,
# this script, the ABI baseline (regenerated afterwards), the test vectors and the
# changelog (its history keeps the names it had).
mapfile -t files < <(git ls-files -- '*.rs' '*.c' '*.h' '*.cpp' '*.hpp' '*.inc' '*.py' '*.go' '*.zig' \
  '*.jl' '*.md' '*.cmake' '*.txt' '*.toml' '*.sh' '*.supp' '*.dict' 'CMakeLists.txt' |
  grep -v -e '^docs/naming-decisions\.md$' -e '^scripts/apply_renames\.sh$' -e '^abi/' \
    -e '^tests/vectors/' -e '^CHANGELOG\.md$')

# The first argument of a call: a name, a member (a->b, a.b) or a call without arguments.
arg='([A-Za-z_][A-Za-z0-9_]*((->|\.)[A-Za-z_][A-Za-z0-9_]*)*(\(\))?)'
rules=(
  # 1. the file's JSON attributes: a literal NULL object
  "s/\\bzt_writer_set_attributes_json\\(${arg},[[:space:]]*NULL,[[:space:]]*/zt_writer_set_file_attributes_json(\\1, /g"
  # 1. an object's: an object named by a string literal or a C++ string's c_str()
  "s/\\bzt_writer_set_attributes_json\\(${arg},[[:space:]]*(\"[^\"]*\"|[A-Za-z_][A-Za-z0-9_]*\\.c_str\\(\\)),/zt_writer_set_object_attributes_json(\\1, \\5,/g"
  # 2. look-ups by key are _find
  's/\bzt_file_get_attribute\b/zt_file_find_attribute/g'
  's/\bzt_object_get_attribute\b/zt_object_find_attribute/g'
  # 4. device memory
  's/\bzt_cuda_alloc\b/zt_cuda_alloc_memory/g'
  's/\bzt_cuda_dealloc\b/zt_cuda_free_memory/g'
  # 7. pages out
  's/\bzt_object_release\b/zt_object_evict/g'
)
echo "2, 4, 7 and 1's call sites: sed over ${#files[@]} tracked files"
for rule in "${rules[@]}"; do
  pattern=$(sed -E 's/^s\/(.*)\/[^/]*\/g$/\1/' <<<"$rule")
  count=$(grep -E -o "$pattern" "${files[@]}" 2>/dev/null | wc -l || true)
  printf '%5d  %s\n' "$count" "$rule"
  if [[ $dry == 0 && $count != 0 ]]; then
    sed -E -i "$rule" "${files[@]}"
  fi
done

cat <<'EOF'

Left by hand (docs/naming-decisions.md, "What applying them takes"):
  - the rule's text (cbindgen.toml's header comment, docs/c-api.md "Names"): the nouns
    cuda, loader, pool (5); the library clause (3); what _with means (6)
  - C++ zt::Reader::release -> evict (cpp/include/ztensor/reader.hpp, its tests) (7)
  - CHANGELOG.md 0.2.0: "Removed" (the 31 aliases with their replacements, from
    docs/c-api.md's old table) and "Changed" (decisions 1, 2, 4, 7)
  - each call listed below: the object may be NULL at run time (file or object?)
Then: regenerate the header, build and test (the commands at the top of this script),
write the ABI baseline (python3 tests/release/abi.py dump), delete this script and
docs/naming-decisions.md.
EOF
echo
echo "Still naming zt_writer_set_attributes_json (decide each by hand):"
git grep -n -w zt_writer_set_attributes_json -- "${files[@]}" ':!include/ztensor.h' || echo "  none"
if [[ -s $left_file ]]; then
  echo
  echo "Some structural edits were not made (listed after step 1 above): do them by hand."
  exit 1
fi
