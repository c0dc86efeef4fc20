#!/usr/bin/env python3
"""The header_names test: what include/ztensor.h puts into a program's namespace.

    check_header_names.py --header=H --cc=CC [--cxx=CXX] [--nm=NM --library=SO]

1. Macros: every macro the header defines (`CC -dM -E`, compared with the standard headers
   it includes) starts with ZT_, ZTENSOR_ or zt_; as C and, with --cxx, as C++.
2. Declarations: every name the header declares at file scope (typedef names, struct and
   enum tags, enumerators, functions) starts with one of those prefixes. Read from the
   preprocessed header, so nothing hidden behind a macro escapes.
3. ZT_API: every function declaration starts with ZT_API. With ZT_API predefined (to a
   marker) every declaration carries the marker, so the user's definition wins; without,
   every declaration carries __attribute__((visibility("default"))) on GCC and Clang.
4. With --nm and --library: the shared library exports exactly the functions the header
   declares, and nothing else outside zt_ (besides the C runtime's and linker's own symbols).

A self-test first feeds the checker small headers that break each rule and requires that
each is refused, so the test can't pass by checking nothing. Prints what it checked and
exits 1 on any problem.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

PREFIXES = ("ZT_", "ZTENSOR_", "zt_")
STANDARD_INCLUDES = "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n"
MARKER = "ZT_API_MARKER_FOR_TEST"
DEFAULT_API = ["__attribute__", "(", "(", "visibility", "(", '"default"', ")", ")", ")"]

C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool", "bool",
    "__attribute__", "__declspec",
}
# Names the standard headers declare, which the header may use.
STANDARD_NAMES = {"size_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "int8_t",
                  "int16_t", "int32_t", "int64_t", "uintptr_t", "intptr_t", "ptrdiff_t"}

TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[A-Za-z_][A-Za-z0-9_]*|[0-9][A-Za-z0-9_.]*|\S')


class Problems(list):
    def add(self, text):
        self.append(text)


def ours(name):
    return name.startswith(PREFIXES)


def run(command, stdin=None):
    proc = subprocess.run(command, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def macros(compiler, language, include_dir, source):
    """Names of the macros defined after preprocessing `source`."""
    out = run([compiler, "-x", language, "-dM", "-E", "-I", include_dir, "-"], stdin=source)
    return {line.split()[1].split("(")[0] for line in out.splitlines() if line.startswith("#define ")}


def check_macros(header, compiler, language, problems):
    include_dir, name = os.path.split(os.path.abspath(header))
    baseline = macros(compiler, language, include_dir, STANDARD_INCLUDES)
    defined = macros(compiler, language, include_dir, f'#include "{name}"\n') - baseline
    for macro in sorted(defined):
        if not ours(macro):
            problems.add(f"{language}: the header defines the macro {macro}")
    return defined


def header_tokens(header, compiler, defines=()):
    """The tokens of the preprocessed header itself (C), without those of the headers it
    includes: the line markers tell which file each line came from."""
    include_dir, name = os.path.split(os.path.abspath(header))
    out = run([compiler, "-x", "c", "-std=c11", "-E", "-I", include_dir, *defines, "-"],
              stdin=f'#include "{name}"\n')
    tokens, current = [], None
    for line in out.splitlines():
        marker = re.match(r'#\s*(?:line\s+)?\d+\s+"([^"]*)"', line)
        if marker:
            current = os.path.basename(marker.group(1))
            continue
        if current == name:
            tokens += TOKEN.findall(line)
    return tokens


def statements(tokens):
    """File-scope declarations: token lists ended by a ';' outside braces and parentheses."""
    depth, statement = 0, []
    for token in tokens:
        statement.append(token)
        if token in "({":
            depth += 1
        elif token in ")}":
            depth -= 1
        elif token == ";" and depth == 0:
            yield statement
            statement = []
    if statement:
        yield statement


def declared_names(statement):
    """(names, function name or None) that a file-scope statement declares: identifiers
    outside any parentheses and struct body, enumerators, and the function's name."""
    names, depth, body, function = [], 0, None, None
    for i, token in enumerate(statement):
        if token == "(":
            if depth == 0 and body is None and i > 0 and statement[i - 1] not in C_KEYWORDS \
                    and re.match(r"[A-Za-z_]", statement[i - 1]) and statement[i - 1] != "__attribute__":
                function = function or statement[i - 1]
            depth += 1
        elif token == ")":
            depth -= 1
        elif token == "{" and depth == 0:
            body = "enum" if "enum" in statement[:i] else "struct"
        elif token == "}" and depth == 0:
            body = None
        elif depth == 0 and re.match(r"[A-Za-z_]", token) and token not in C_KEYWORDS \
                and token not in STANDARD_NAMES:
            if body is None:
                names.append(token)
            elif body == "enum" and statement[i - 1] in ("{", ","):
                names.append(token)  # an enumerator
    return names, function


def check_declarations(header, compiler, problems):
    functions = []
    for statement in statements(header_tokens(header, compiler)):
        names, function = declared_names(statement)
        for name in names:
            if not ours(name):
                problems.add(f"the header declares {name} (in: {' '.join(statement)[:100]})")
        if function:
            functions.append(function)
            if statement[:len(DEFAULT_API)] != DEFAULT_API:
                problems.add(f"{function} is not declared with __attribute__((visibility(\"default\"))) "
                             f"(ZT_API's default on GCC and Clang): {' '.join(statement)[:100]}")
    # The user's ZT_API wins.
    marked = 0
    for statement in statements(header_tokens(header, compiler, [f"-DZT_API={MARKER}"])):
        names, function = declared_names(statement)
        if function:
            if statement[0] == MARKER:
                marked += 1
            else:
                problems.add(f"{function} does not start with ZT_API")
    if marked != len(functions):
        problems.add(f"with ZT_API predefined {marked} declarations carry it, expected {len(functions)}")
    if not functions:
        problems.add("the header declares no function")
    return functions


# Symbols the linker itself may define in a shared library.
LINKER_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start"}


def check_exports(nm, library, functions, problems):
    out = run([nm, "-D", "--defined-only", library])
    exported = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "TtWiDdBbRrVv":
            exported.add(fields[2].split("@")[0])
    zt = {s for s in exported if ours(s)}
    for name in sorted(set(functions) - zt):
        problems.add(f"the header declares {name}, which {os.path.basename(library)} does not export")
    for name in sorted(zt - set(functions)):
        problems.add(f"{os.path.basename(library)} exports {name}, which the header does not declare")
    for name in sorted(exported - zt):
        if name not in LINKER_SYMBOLS:
            problems.add(f"{os.path.basename(library)} exports {name}, outside the zt_ namespace")
    return zt


def check(header, cc, cxx):
    problems = Problems()
    defined = check_macros(header, cc, "c", problems)
    if cxx:
        defined |= check_macros(header, cxx, "c++", problems)
    functions = check_declarations(header, cc, problems)
    return problems, defined, functions


BAD_HEADERS = [
    ("#define ZSTD_FRAME_SIZE 1\n", "defines the macro ZSTD_FRAME_SIZE"),
    ("typedef int frame_size;\n", "declares frame_size"),
    ("typedef struct buf { int zt_len; } zt_buf;\n", "declares buf"),
    ("enum zt_kind { ZT_A = 0, OTHER = 1 };\n", "declares OTHER"),
    ("ZT_API int helper(int zt_x);\n", "declares helper"),
    ("int zt_plain(void);\n", "zt_plain does not start with ZT_API"),
    ("#define zt_fn(x) (x)\nextern int errno_like;\n", "declares errno_like"),
]
GOOD_HEADER = ("typedef enum zt_e { ZT_E0 = 0, ZT_E1 = 1 } zt_e;\n"
               "typedef struct zt_s { const char *name; uint32_t size; } zt_s;\n"
               "ZT_API enum zt_e zt_f(const struct zt_s *in, size_t n);\n")


def self_test(cc, cxx, nm):
    """Each rule must catch a header that breaks it; a clean one must pass."""
    prelude = ("#ifndef ZT_API\n#define ZT_API __attribute__((visibility(\"default\")))\n#endif\n"
               + STANDARD_INCLUDES)
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "bad.h")
        for body, expected in BAD_HEADERS + [(GOOD_HEADER, None)]:
            with open(path, "w") as f:
                f.write(prelude + body)
            problems, _, _ = check(path, cc, cxx)
            if expected is None and problems:
                raise SystemExit(f"self-test: a clean header was refused: {problems}")
            if expected is not None and not any(expected in p for p in problems):
                raise SystemExit(f"self-test: {body!r} was not refused for '{expected}' (got {problems})")
        # The export check: a missing function, an undeclared zt_ one, one outside zt_.
        library = os.path.join(scratch, "libfake.so")
        source = os.path.join(scratch, "fake.c")
        with open(source, "w") as f:
            f.write("int zt_f(void) { return 0; }\nint zt_extra(void) { return 1; }\n"
                    "int other(void) { return 2; }\n")
        run([cc, "-shared", "-fPIC", "-o", library, source])
        if nm:
            problems = Problems()
            check_exports(nm, library, ["zt_f", "zt_g"], problems)
            for expected in ("declares zt_g, which libfake.so does not export",
                             "exports zt_extra, which the header does not declare",
                             "exports other, outside the zt_ namespace"):
                if not any(expected in p for p in problems):
                    raise SystemExit(f"self-test: the export check missed '{expected}' (got {problems})")
            if len(problems) != 3:
                raise SystemExit(f"self-test: the export check found {problems}")
    print(f"self-test: {len(BAD_HEADERS)} bad headers refused, a clean one accepted, bad exports found")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--header", required=True)
    parser.add_argument("--cc", required=True)
    parser.add_argument("--cxx", default="")
    parser.add_argument("--nm", default="")
    parser.add_argument("--library", default="")
    args = parser.parse_args()

    self_test(args.cc, args.cxx, args.nm)
    problems, defined, functions = check(args.header, args.cc, args.cxx)
    print(f"macros: {', '.join(sorted(defined))}")
    print(f"functions declared: {len(functions)}")
    if args.nm and args.library:
        exported = check_exports(args.nm, args.library, functions, problems)
        print(f"exported by {os.path.basename(args.library)}: {len(exported)} zt_ functions")
    if problems:
        print(f"\n{len(problems)} problems:")
        for p in problems:
            print(f"  {p}")
        return 1
    print("ok: every name is ZT_/ZTENSOR_/zt_, every function has ZT_API")
    return 0


if __name__ == "__main__":
    sys.exit(main())
