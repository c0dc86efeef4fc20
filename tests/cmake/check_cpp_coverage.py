#!/usr/bin/env python3
"""The cpp_wrapper_covers_c_api test: the C++ wrapper (cpp/include) reaches every function
the C header declares, so that nothing a C program can do needs r.handle() and C in C++.

    check_cpp_coverage.py --header=include/ztensor.h --wrapper=cpp/include

Lists the header's functions (those declared ZT_DEPRECATED are the old names of renamed
ones, which the wrapper never calls), then every identifier the wrapper's code uses
(comments left out), and fails naming each function the wrapper doesn't reach and isn't
in ALLOWED below with its reason. An ALLOWED entry that the header doesn't declare, or that
the wrapper does reach, fails too, so the list can't go stale. A self-test first checks
that a missing function is reported.
"""

import argparse
import os
import re
import sys

# Functions the wrapper doesn't call, and why.
ALLOWED = {
    "zt_open": "the wrapper calls zt_open_with, which is zt_open with options",
    "zt_open_memory": "the wrapper calls zt_open_memory_with",
    "zt_writer_create": "the wrapper calls zt_writer_create_with",
    "zt_cuda_create": "zt::Cuda calls zt_cuda_create_with, which is zt_cuda_create with options",
    "zt_loader_create": "zt::Loader calls zt_loader_create_with, which is zt_loader_create with options",
    "zt_dtype_get_size": "zt::dtype_size is a constexpr copy (usable in constant expressions); "
                         "test_cxx20_loader compares it with the C call for every dtype",
    "zt_dtype_name": "zt::dtype_name is a constexpr copy; test_cxx20_loader compares it with the C call",
}


def header_functions(text):
    """(name, deprecated) of every function declaration, in order."""
    out, deprecated = [], False
    for line in text.splitlines():
        if line.startswith("ZT_DEPRECATED("):
            deprecated = True
        if line.startswith("ZT_API ") or line.startswith("enum zt_status zt_"):
            head = line.split("(", 1)[0]
            name = re.split(r"[ *]", head)[-1]
            if name.startswith("zt_") and "(" in line:
                out.append((name, deprecated))
                deprecated = False
    return out


def without_comments(code):
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    return re.sub(r"//[^\n]*", " ", code)


def wrapper_identifiers(root):
    names = set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".hpp"):
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    names |= set(re.findall(r"\bzt_[a-z0-9_]+\b", without_comments(fh.read())))
    return names


def problems(functions, used, allowed):
    out = []
    declared = {n for n, _ in functions}
    for name, deprecated in functions:
        if deprecated or name in used or name in allowed:
            continue
        out.append(f"{name} is declared in the header but the C++ wrapper never calls it")
    for name in sorted(allowed):
        if name not in declared:
            out.append(f"ALLOWED lists {name}, which the header doesn't declare")
        elif name in used:
            out.append(f"ALLOWED lists {name}, which the wrapper does call: remove it from the list")
    return out


def self_test():
    header = "ZT_API enum zt_status zt_a(void);\nZT_API\nenum zt_status zt_b(int x,\n    int y);\n" \
             "ZT_API\nZT_DEPRECATED(\"renamed zt_a\")\nenum zt_status zt_old(void);\n"
    functions = header_functions(header)
    assert functions == [("zt_a", False), ("zt_b", False), ("zt_old", True)], functions
    assert problems(functions, {"zt_a", "zt_b"}, {}) == []
    assert len(problems(functions, {"zt_a"}, {})) == 1
    assert len(problems(functions, {"zt_a", "zt_b"}, {"zt_b": "x"})) == 1
    assert len(problems(functions, {"zt_a", "zt_b"}, {"zt_gone": "x"})) == 1
    assert "zt_c" not in wrapper_identifiers_from("// zt_c(\n/* zt_c */ zt_d();")
    assert "zt_d" in wrapper_identifiers_from("zt_d();")


def wrapper_identifiers_from(code):
    return set(re.findall(r"\bzt_[a-z0-9_]+\b", without_comments(code)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--header", required=True)
    parser.add_argument("--wrapper", required=True)
    args = parser.parse_args()
    self_test()
    with open(args.header, encoding="utf-8") as fh:
        functions = header_functions(fh.read())
    used = wrapper_identifiers(args.wrapper)
    current = [n for n, d in functions if not d]
    found = problems(functions, used, ALLOWED)
    reached = [n for n in current if n in used]
    print(f"{len(functions)} functions declared, {len(current)} current, "
          f"{len(reached)} reached by the wrapper, {len(ALLOWED)} allowed not to be:")
    for name, why in sorted(ALLOWED.items()):
        print(f"  {name}: {why}")
    for p in found:
        print(f"PROBLEM: {p}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
