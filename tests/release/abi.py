#!/usr/bin/env python3
"""The C ABI of include/ztensor.h, as libabigail sees it: a baseline per release, and the
check that a build keeps it.

    python3 tests/release/abi.py dump          # writes the baseline: abi/ztensor.{abi,macros,h}, VERSION
    python3 tests/release/abi.py check         # the current header against that baseline
    python3 tests/release/abi.py self-test     # the check refuses what it must refuse
    python3 tests/release/abi.py ci            # check, then self-test (ctest release_abi)

What is compared. The library is Rust; its C interface is the header, which cbindgen
generates from the #[repr(C)] types (the header_up_to_date test), and whose functions are
exactly the library's exports (the header_names test). libabigail reads an interface from
the DWARF of a shared object, and the Rust library's DWARF describes Rust types (a
RelWithDebInfo build has line tables only). So the ABI is taken from the header itself: a
stub shared object is compiled from it with full debug information (every declared
function defined, returning zeros; every type the header defines kept), with the SONAME
of the soname policy, and `abidw` describes that; `abidiff` compares two descriptions.
The header's #define values (flags, limits) are not in DWARF: they are compared as text.

A baseline written with `dump --provisional` (abi/PROVISIONAL), before the release's API
is final, is compared and its differences printed, but `check` doesn't fail on them; the
release writes the final one (plain `dump`), and check_release.py --tag refuses a
provisional baseline.

The rules (the header's "ABI and struct growth" paragraph states them):
- Removing or changing a function, a struct's layout, or an enumerator's value is an
  incompatible change; so is a changed or removed ZT_ macro value.
- Adding functions, enumerators, macros or structs is compatible.
- A struct whose first member is `struct_size` (zt_cuda_options, zt_device,
  zt_loader_options) may grow at its end: an old program passes its smaller size.
- An incompatible change is accepted only when the SONAME changes with it: the version
  says the ABI is new (0.x: a new minor version; from 1.0: a new major version). The
  baseline is then regenerated when that version is released (RELEASING.md).

Options: --header (default include/ztensor.h), --version (default Cargo.toml's), --soname
(default: from the version by the soname policy; the ctest passes CMake's), --baseline-dir
(default abi/), --cc (default $CC or cc). Needs abidw/abidiff (Debian: abigail-tools) and
a C compiler; `check` exits 77 (skip) when libabigail is missing and ZT_ABI_REQUIRED is
unset.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUPPRESSIONS = os.path.join(ROOT, "tests", "release", "abi.suppr")
# Macros that change with every release by design (and ZT_API, the compiler's attribute).
VERSION_MACROS = {"ZT_VERSION_MAJOR", "ZT_VERSION_MINOR", "ZT_VERSION_PATCH", "ZT_VERSION_NUMBER", "ZT_API"}

DECLARATION = re.compile(
    r"ZT_API\s+(?:ZT_DEPRECATED\(\"(?:[^\"\\]|\\.)*\"\)\s+)?"
    r"(?P<ret>[^;{}()]*?)\b(?P<name>zt_\w+)\s*\((?P<params>[^;{}]*?)\)\s*;")


class Failure(Exception):
    pass


def cargo_version(root=ROOT):
    """The [package] version of Cargo.toml (the one place it is written)."""
    section = None
    with open(os.path.join(root, "Cargo.toml"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\s*\[([^\]]+)\]", line)
            if m:
                section = m.group(1).strip()
                continue
            m = re.match(r'\s*version\s*=\s*"([^"]+)"', line)
            if section == "package" and m:
                return m.group(1)
    raise Failure("Cargo.toml: no version in [package]")


def soname_for(version):
    """The soname policy (CMakeLists.txt): major.minor while 0.x, the major from 1.0."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    if not m:
        raise Failure(f"version {version!r} is not MAJOR.MINOR.PATCH")
    major, minor = int(m.group(1)), int(m.group(2))
    return f"libztensor.so.0.{minor}" if major == 0 else f"libztensor.so.{major}"


def run(command, ok=(0,), **kwargs):
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
    if proc.returncode not in ok:
        raise Failure(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stdout}")
    return proc


def functions(header_text):
    """(return type, name, parameters) of every function the header declares."""
    text = re.sub(r"/\*.*?\*/", " ", header_text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    found = [(m.group("ret").strip(), m.group("name"), " ".join(m.group("params").split()))
             for m in DECLARATION.finditer(text)]
    declared = len(re.findall(r"^\s*ZT_API\b", text, flags=re.M))
    if len(found) != declared:
        raise Failure(f"parsed {len(found)} function declarations of {declared} ZT_API ones")
    return found


def stub_source(header):
    """A C file defining every function of `header` (zeros returned) and keeping every type."""
    with open(header, encoding="utf-8") as f:
        text = f.read()
    lines = ['#define ZT_API __attribute__((visibility("default")))',
             "#define ZT_DEPRECATED(msg)",
             f'#include "{os.path.abspath(header)}"',
             "#include <string.h>", ""]
    for ret, name, params in functions(text):
        if ret == "void":
            lines.append(f"{ret} {name}({params}) {{ }}")
        else:
            lines.append(f"{ret} {name}({params}) {{ {ret} r; memset(&r, 0, sizeof r); return r; }}")
    return "\n".join(lines) + "\n"


def macros(header, cc):
    """NAME value of every ZT_ macro the header defines (but the version's)."""
    out = run([cc, "-dM", "-E", "-x", "c", header]).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"#define\s+(ZT_\w+)(\([^)]*\))?\s*(.*)$", line)
        if m and m.group(1) not in VERSION_MACROS and not m.group(2):
            found[m.group(1)] = " ".join(m.group(3).split())
    return found


def describe(header, soname, cc, work):
    """abidw's description of the header's ABI (a stub built from it), as text."""
    os.makedirs(work, exist_ok=True)
    source = os.path.join(work, "abi_stub.c")
    with open(source, "w") as f:
        f.write(stub_source(header))
    library = os.path.join(work, soname)
    run([cc, "-shared", "-fPIC", "-g", "-O0", "-fvisibility=hidden", "-fno-eliminate-unused-debug-types",
         "-w", f"-Wl,-soname,{soname}", source, "-o", library])
    out = os.path.join(work, "ztensor.abi")
    run(["abidw", "--load-all-types", "--no-corpus-path", "--no-show-locs", "--type-id-style", "hash",
         "--out-file", out, library])
    with open(out, encoding="utf-8") as f:
        return f.read()


def abi_soname(abi_text):
    m = re.search(r"<abi-corpus[^>]*\bsoname='([^']*)'", abi_text)
    return m.group(1) if m else ""


def write_macros(path, found):
    with open(path, "w") as f:
        f.write("# ZT_ macros of include/ztensor.h at the release (tests/release/abi.py dump)\n")
        for name in sorted(found):
            f.write(f"{name} {found[name]}\n".rstrip() + "\n")


def read_macros(path):
    found = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, _, value = line.rstrip("\n").partition(" ")
            found[name] = value
    return found


def growable_structs(header_text):
    """Names of the structs whose first member is struct_size."""
    text = re.sub(r"/\*.*?\*/", " ", header_text, flags=re.S)
    return sorted(m.group(1) for m in re.finditer(
        r"typedef struct (zt_\w+) \{\s*uint32_t struct_size;", text))


def check_suppressions(header):
    """abi.suppr allows growth for exactly the structs with a struct_size member."""
    with open(header, encoding="utf-8") as f:
        want = growable_structs(f.read())
    with open(SUPPRESSIONS, encoding="utf-8") as f:
        m = re.search(r"name_regexp = \^\(([^)]*)\)\$", f.read())
    listed = sorted(m.group(1).split("|")) if m else []
    if listed != want:
        raise Failure(f"{SUPPRESSIONS} lets {listed} grow, but the structs with struct_size are {want}")


def dump(args):
    os.makedirs(args.baseline_dir, exist_ok=True)
    provisional = os.path.join(args.baseline_dir, "PROVISIONAL")
    if args.provisional:
        with open(provisional, "w") as f:
            f.write("This baseline was written before its release's API was final: the ABI check\n"
                    "reports differences from it but doesn't fail on them. The release writes the\n"
                    "final one (python3 tests/release/abi.py dump), which removes this file.\n")
    elif os.path.exists(provisional):
        os.remove(provisional)
    with tempfile.TemporaryDirectory() as work:
        text = describe(args.header, args.soname, args.cc, work)
    with open(os.path.join(args.baseline_dir, "ztensor.abi"), "w", encoding="utf-8") as f:
        f.write(text)
    write_macros(os.path.join(args.baseline_dir, "ztensor.macros"), macros(args.header, args.cc))
    # The release's header itself: the struct growth test builds a program against it.
    shutil.copyfile(args.header, os.path.join(args.baseline_dir, "ztensor.h"))
    with open(os.path.join(args.baseline_dir, "VERSION"), "w") as f:
        f.write(f"{args.version}\n")
    kind = "a provisional ABI baseline" if args.provisional else "the ABI baseline"
    print(f"wrote {kind} of {args.version} ({args.soname}) to {args.baseline_dir}/")


def compare(baseline_dir, header, soname, cc, work, quiet=False):
    """Why the header's ABI breaks the baseline's without a new SONAME; [] when it doesn't."""
    abi_path = os.path.join(baseline_dir, "ztensor.abi")
    if not os.path.exists(abi_path):
        raise Failure(f"no ABI baseline at {abi_path} (python3 tests/release/abi.py dump writes it)")
    with open(abi_path, encoding="utf-8") as f:
        old_soname = abi_soname(f.read())
    current = os.path.join(work, "current.abi")
    with open(current, "w", encoding="utf-8") as f:
        f.write(describe(header, soname, cc, work))
    problems = []
    proc = run(["abidiff", "--no-added-syms", "--non-reachable-types", "--suppressions", SUPPRESSIONS,
                abi_path, current], ok=range(0, 256))
    if proc.returncode & 3:
        raise Failure(f"abidiff failed ({proc.returncode}):\n{proc.stdout}")
    if proc.returncode:
        problems.append(f"abidiff ({proc.returncode}):\n{proc.stdout}")
    old = read_macros(os.path.join(baseline_dir, "ztensor.macros"))
    new = macros(header, cc)
    for name in sorted(old):
        if name not in new:
            problems.append(f"macro {name} removed (was {old[name]})")
        elif new[name] != old[name]:
            problems.append(f"macro {name} changed: {old[name]} -> {new[name]}")
    if not problems:
        if not quiet:
            print(f"ABI compatible with the baseline ({old_soname})")
        return []
    if old_soname != soname:
        if not quiet:
            print(f"ABI changed, and so did the SONAME ({old_soname} -> {soname}): a new ABI, as the version "
                  f"says; regenerate the baseline when it is released (RELEASING.md). The changes:")
            print("\n".join(problems))
        return []
    return problems


def check(args):
    if not shutil.which("abidiff") or not shutil.which("abidw"):
        message = "abidw/abidiff not found (Debian: apt-get install abigail-tools)"
        if os.environ.get("ZT_ABI_REQUIRED"):
            raise Failure(message)
        print(f"skipped: {message}")
        return 77
    check_suppressions(args.header)
    with tempfile.TemporaryDirectory() as work:
        problems = compare(args.baseline_dir, args.header, args.soname, args.cc, work)
    if problems and os.path.exists(os.path.join(args.baseline_dir, "PROVISIONAL")):
        print("\n".join(problems))
        print(f"the baseline is provisional (abi/PROVISIONAL): these changes are reported, not refused; the "
              f"release writes the final baseline (RELEASING.md, step 4)")
        return 0
    if problems:
        print("\n".join(problems))
        raise Failure(f"an incompatible ABI change under the same SONAME {args.soname}: keep the ABI, or "
                      f"make the version say so (0.x: a new minor version, which changes the SONAME)")
    return 0


def self_test(args):
    """Variants of the real header against a baseline of it: each must be judged right."""
    with open(args.header, encoding="utf-8") as f:
        header = f.read()
    check_suppressions(args.header)

    def edit(old, new):
        if old not in header:
            raise Failure(f"self-test: the header lacks {old!r}")
        return header.replace(old, new, 1)

    cases = [
        ("unchanged", header, None, True),
        ("a function added", header + "\nZT_API int zt_self_test_added(int x);\n", None, True),
        ("zt_loader_options grown at its end (it has struct_size)",
         edit("\n} zt_loader_options;", "\n  uint64_t added_by_the_self_test;\n} zt_loader_options;"), None, True),
        ("zt_loader_options with a member inserted before its end",
         edit("  uint32_t readers;\n", "  uint32_t readers;\n  uint32_t added_by_the_self_test;\n"), None, False),
        ("a function removed", re.sub(r"ZT_API size_t zt_pool_thread_count\(void\);", "", header), None, False),
        ("zt_object_info grown (it has no struct_size)",
         edit("} zt_object_info;", "  uint64_t added_by_the_self_test;\n} zt_object_info;"), None, False),
        ("a parameter's type changed",
         edit("ZT_API size_t zt_pool_thread_count(void);", "ZT_API uint32_t zt_pool_thread_count(void);"),
         None, False),
        ("a flag's value changed", edit("#define ZT_OPEN_NO_MMAP 1", "#define ZT_OPEN_NO_MMAP 64"), None, False),
        ("zt_object_info grown with a new SONAME",
         edit("} zt_object_info;", "  uint64_t added_by_the_self_test;\n} zt_object_info;"), "next", True),
    ]
    with tempfile.TemporaryDirectory() as work:
        base = os.path.join(work, "baseline")
        os.makedirs(base)
        with open(os.path.join(base, "ztensor.abi"), "w", encoding="utf-8") as f:
            f.write(describe(args.header, args.soname, args.cc, os.path.join(work, "base")))
        write_macros(os.path.join(base, "ztensor.macros"), macros(args.header, args.cc))
        failures = []
        for i, (what, text, soname, compatible) in enumerate(cases):
            d = os.path.join(work, f"case{i}")
            os.makedirs(d)
            variant = os.path.join(d, "ztensor.h")
            with open(variant, "w", encoding="utf-8") as f:
                f.write(text)
            use = args.soname + ".99" if soname == "next" else args.soname
            problems = compare(base, variant, use, args.cc, d, quiet=True)
            verdict = "accepted" if not problems else "refused"
            ok = (not problems) == compatible
            print(f"self-test: {what}: {verdict}{'' if ok else '  <-- WRONG'}")
            if not ok:
                failures.append(what)
    if failures:
        raise Failure(f"self-test: judged wrongly: {', '.join(failures)}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["dump", "check", "self-test", "ci"])
    p.add_argument("--header", default=os.path.join(ROOT, "include", "ztensor.h"))
    p.add_argument("--version", default=None)
    p.add_argument("--soname", default=None)
    p.add_argument("--baseline-dir", default=os.path.join(ROOT, "abi"))
    p.add_argument("--cc", default=os.environ.get("CC") or "cc")
    p.add_argument("--provisional", action="store_true",
                   help="dump: a baseline written before the release's API is final (abi/PROVISIONAL)")
    args = p.parse_args()
    args.version = args.version or cargo_version()
    policy = soname_for(args.version)
    if args.soname and args.soname != policy:
        raise Failure(f"SONAME {args.soname} given, but the policy makes {policy} of version {args.version}")
    args.soname = policy
    if args.command != "check" and not (shutil.which("abidw") and shutil.which("abidiff")):
        raise Failure("abidw/abidiff not found (Debian: apt-get install abigail-tools)")
    if args.command == "ci":
        # ctest release_abi: the checker's self-test, then the tree against the baseline.
        rc = check(args)
        return rc if rc else self_test(args)
    return {"dump": dump, "check": check, "self-test": self_test}[args.command](args) or 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"abi.py: {e}", file=sys.stderr)
        sys.exit(1)
