#!/usr/bin/env bash
# The mechanical part of docs/naming-decisions.md (temporary: deleted with it once
# applied). Run from the repository root, on a clean tree, after every stream's changes
# have landed:
#
#   bash docs/naming-plan.sh          # rewrite the tracked files in place
#   bash docs/naming-plan.sh --dry    # only count what each rule would change
#
# Plain sed over the tracked sources, headers, docs and bindings; then it prints what is
# left to do by hand. Review the diff (git diff) before committing: prose that quotes an
# old signature may need rewording.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

dry=0
[[ ${1:-} == --dry ]] && dry=1

# Every tracked text file that may name a C function, but the record of the decisions,
# this script, the ABI baseline (regenerated afterwards) and the test vectors.
mapfile -t files < <(git ls-files -- '*.rs' '*.c' '*.h' '*.cpp' '*.hpp' '*.inc' '*.py' '*.go' '*.zig' \
  '*.jl' '*.md' '*.cmake' '*.txt' '*.toml' '*.sh' '*.supp' '*.dict' 'CMakeLists.txt' |
  grep -v -e '^docs/naming-decisions\.md$' -e '^docs/naming-plan\.sh$' -e '^abi/' -e '^tests/vectors/' \
    -e '^CHANGELOG\.md$')

# One rule per line: the decisions' numbers in docs/naming-decisions.md.
rules=(
  # 1. the file's JSON attributes: a literal NULL object
  's/\bzt_writer_set_attributes_json\(([^,()]+),[[:space:]]*NULL,[[:space:]]*/zt_writer_set_file_attributes_json(\1, /g'
  # 1. an object's: an object named by a string literal or a C++ string's c_str() (a
  #    variable may hold NULL at run time: those are left for a person to decide)
  's/\bzt_writer_set_attributes_json\(([^,()]+),[[:space:]]*("[^"]*"|[A-Za-z_][A-Za-z0-9_]*\.c_str\(\)),/zt_writer_set_object_attributes_json(\1, \2,/g'
  # 2. look-ups by key are _find
  's/\bzt_file_get_attribute\b/zt_file_find_attribute/g'
  's/\bzt_object_get_attribute\b/zt_object_find_attribute/g'
  # 4. device memory
  's/\bzt_cuda_alloc\b/zt_cuda_alloc_memory/g'
  's/\bzt_cuda_dealloc\b/zt_cuda_free_memory/g'
  # 7. pages out
  's/\bzt_object_release\b/zt_object_evict/g'
)

for rule in "${rules[@]}"; do
  pattern=$(sed -E 's/^s\/(.*)\/[^/]*\/g$/\1/' <<<"$rule")
  count=$(grep -E -o "$pattern" "${files[@]}" 2>/dev/null | wc -l || true)
  printf '%5d  %s\n' "$count" "$rule"
  if [[ $dry == 0 && $count != 0 ]]; then
    sed -E -i "$rule" "${files[@]}"
  fi
done

cat <<'EOF'

Left to do by hand (docs/naming-decisions.md, "What applying them takes"):
  - src/ffi: split zt_writer_set_attributes_json into zt_writer_set_file_attributes_json
    and zt_writer_set_object_attributes_json (the object one refuses NULL)
  - drop the 31 aliases: src/ffi/deprecated.rs, tests/c/test_deprecated_names.c,
    tests/cmake/check_deprecated.cmake and the deprecated_warns_* tests, test_api.c's
    TESTED_ELSEWHERE lines naming test_deprecated_names.c, docs/c-api.md's table (into
    CHANGELOG.md's 0.2.0 "Removed")
  - the rule's text (cbindgen.toml, docs/c-api.md): nouns cuda/loader/pool, the library
    clause, what _with means
  - C++ Reader::release -> Reader::evict; writer.hpp's set_attributes_json -> the two C calls
  - python/ztensor_c/_lib.py: the split setter
  - cmake --build build --target update_header; python3 tests/release/abi.py dump; .ci/run
EOF
echo
echo "Still naming zt_writer_set_attributes_json (decide each by hand):"
git grep -n -w zt_writer_set_attributes_json -- "${files[@]}" || echo "  none"
