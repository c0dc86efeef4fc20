#!/usr/bin/env python3
"""Builds the package the way a user does, for the ctest tests (cmake/python.cmake).

    python wheel.py build DIST          # pip wheel ./python, then install it here
    python wheel.py sdist DIST BUILDPY  # BUILDPY -m build --sdist, then a wheel from it
    python wheel.py musl DIST           # the musllinux wheel (built and checked, not installed)

`build` runs `python -m pip wheel <repo>/python --no-deps -w DIST` with this
interpreter's pip (pip makes its own isolated build environment with the pinned maturin
and cffi of pyproject.toml), checks the wheel's tag, and installs it with --no-deps into
this interpreter's venv, which holds no build tools (this checks it). The environment
passes through: CMake sets CARGO_TARGET_DIR to its own cargo directory, so maturin's
cargo run reuses the dependencies the CMake build compiled and compiles only the library
itself, with the same profile settings.

`musl` builds the musllinux_1_2 wheel of the same package (maturin and zig cross-link it
against musl; Rust's x86_64-unknown-linux-musl target must be installed, else it exits
77, a skip), and checks its tag and that its library needs nothing but musl's libc (no
glibc symbol version): what auditwheel checks, which can't run on a glibc machine. It is
not installed here (this interpreter is glibc's).

`sdist` builds the sdist with pypa/build (the interpreter BUILDPY has it), checks it
holds what a build needs, builds a wheel from it with pip, and checks that the wheel
holds the same files as the one `build` made.
"""

import glob
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(REPO, "python")


def run(*args, **kwargs):
    print("+", " ".join(args), flush=True)
    subprocess.run(args, check=True, stdin=subprocess.DEVNULL, **kwargs)


def one(pattern):
    found = glob.glob(pattern)
    if len(found) != 1:
        sys.exit(f"expected one file {pattern}, found {found}")
    return found[0]


def wheel_files(path):
    with zipfile.ZipFile(path) as z:
        return sorted(n for n in z.namelist() if ".dist-info/" not in n)


def build(dist):
    shutil.rmtree(dist, ignore_errors=True)
    os.makedirs(dist)
    start = time.monotonic()
    run(sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-input",
        "--no-deps", "-w", dist, PACKAGE)
    print(f"pip wheel ./python: {time.monotonic() - start:.0f} s")
    wheel = one(os.path.join(dist, "ztensor_c-*.whl"))
    tag = os.path.basename(wheel)[:-4].split("-", 2)[2]
    if not tag.startswith("py3-none-"):
        sys.exit(f"{wheel}: the tag is {tag}, not py3-none-<platform>")
    if sys.platform.startswith("linux"):
        audit(wheel, tag)
    files = wheel_files(wheel)
    for needed in ("ztensor_c/__init__.py", "ztensor_c/_native/ffi.py", "ztensor_c/_native/__init__.py"):
        if needed not in files:
            sys.exit(f"{wheel} lacks {needed}: {files}")
    for tool in ("maturin", "setuptools_rust", "build"):
        try:
            __import__(tool)
        except ImportError:
            continue
        sys.exit(f"the test venv has the build tool {tool}: it must be a clean venv")
    run(sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
        "--no-deps", "--force-reinstall", wheel)
    print(f"installed {os.path.basename(wheel)}")


def audit(wheel, tag):
    """The wheel is what PyPI takes: tagged manylinux, and `auditwheel show` finds it
    consistent with that tag (no library outside the manylinux set, no symbol version past
    its glibc)."""
    if "-manylinux_" not in f"-{tag}":
        sys.exit(f"{wheel}: the tag is {tag}, not manylinux")
    out = subprocess.run([sys.executable, "-m", "auditwheel", "show", wheel], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL)
    print(out.stdout, out.stderr)
    platform = tag.split("-")[-1]
    text = " ".join(out.stdout.split())  # auditwheel wraps its lines
    if out.returncode != 0 or f'is consistent with the following platform tag: "{platform}"' not in text:
        sys.exit(f"auditwheel does not find {wheel} consistent with {platform}")


MUSL_TARGET = "x86_64-unknown-linux-musl"


def musl(dist):
    rustc = os.environ.get("RUSTC", "rustc")
    sysroot = subprocess.run([rustc, "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
    if not os.path.isdir(os.path.join(sysroot, "lib", "rustlib", MUSL_TARGET)):
        print(f"SKIP: Rust's {MUSL_TARGET} target is not installed (rustup target add {MUSL_TARGET})")
        sys.exit(77)
    out = os.path.join(dist, "musl")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ)
    env["MATURIN_PEP517_ARGS"] = f"--target {MUSL_TARGET} --compatibility musllinux_1_2 --zig"
    start = time.monotonic()
    run(sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-input",
        "--no-deps", "-w", out, PACKAGE, env=env)
    print(f"pip wheel ./python (musl): {time.monotonic() - start:.0f} s")
    wheel = one(os.path.join(out, "ztensor_c-*.whl"))
    tag = os.path.basename(wheel)[:-4].split("-", 2)[2]
    if tag != "py3-none-musllinux_1_2_x86_64":
        sys.exit(f"{wheel}: the tag is {tag}, not py3-none-musllinux_1_2_x86_64")
    with zipfile.ZipFile(wheel) as z:
        libs = [n for n in z.namelist() if n.endswith(".so")]
        if len(libs) != 1:
            sys.exit(f"{wheel}: expected one library, found {libs}")
        lib = os.path.join(out, "lib.so")
        with open(lib, "wb") as f:
            f.write(z.read(libs[0]))
    dynamic = subprocess.run(["readelf", "-d", "-W", lib], capture_output=True, text=True, check=True).stdout
    needed = sorted(line.split("[", 1)[1].split("]", 1)[0] for line in dynamic.splitlines() if "(NEEDED)" in line)
    if needed != ["libc.so"]:
        sys.exit(f"{libs[0]} needs {needed}, not only musl's libc.so")
    versions = subprocess.run(["readelf", "-V", "-W", lib], capture_output=True, text=True, check=True).stdout
    if "GLIBC_" in versions:
        sys.exit(f"{libs[0]} asks for glibc symbol versions:\n{versions}")
    print(f"{os.path.basename(wheel)}: {libs[0]} needs only {needed}, no glibc symbol version")


def sdist(dist, build_python):
    out = os.path.join(dist, "sdist")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    start = time.monotonic()
    run(build_python, "-m", "build", "--sdist", "--outdir", out, PACKAGE)
    archive = one(os.path.join(out, "ztensor_c-*.tar.gz"))
    with tarfile.open(archive) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    needed = ["pyproject.toml", "Cargo.toml", "Cargo.lock", "build.rs", "cbindgen.toml",
              "src/lib.rs", "src/ffi/mod.rs", "include/ztensor.h", "build_backend/ztensor_c_build.py",
              "build_backend/ztensor_cffi.h", "build_backend/dlpack_cdef.py", "ztensor_c/__init__.py", "ztensor_c/_lib.py"]
    missing = [n for n in needed if n not in names]
    if missing:
        sys.exit(f"{archive} lacks {missing}")
    print(f"sdist {os.path.basename(archive)}: {len(names)} files, {os.path.getsize(archive)} bytes")
    run(sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-input",
        "--no-deps", "-w", out, archive)
    print(f"sdist and its wheel: {time.monotonic() - start:.0f} s")
    ours = wheel_files(one(os.path.join(out, "ztensor_c-*.whl")))
    direct = glob.glob(os.path.join(dist, "ztensor_c-*.whl"))
    if direct and wheel_files(direct[0]) != ours:
        sys.exit(f"the sdist's wheel holds other files than pip wheel ./python's:\n{ours}\n{wheel_files(direct[0])}")
    print("the sdist's wheel holds the same files")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "build":
        build(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "musl":
        musl(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "sdist":
        sdist(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
