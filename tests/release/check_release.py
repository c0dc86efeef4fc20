#!/usr/bin/env python3
"""The checks of RELEASING.md: a tree (and, with --tag, a tagged commit) a packager can take.

    python3 tests/release/check_release.py                      # the tree, fast checks
    python3 tests/release/check_release.py --build-dir build    # + what a CMake build made
    python3 tests/release/check_release.py --cargo-package      # + cargo package, publish --dry-run
    python3 tests/release/check_release.py --tag v0.2.0         # at the release: the tag too

The version is written once, in Cargo.toml's [package]; everything else takes it from
there or must agree with it:
  versions    Cargo.lock (and bench/'s, fuzz/'s) name ztensor-c at that version; the
              header's ZT_VERSION_* macros (build.rs writes them); CHANGELOG.md has its
              section; the Python package reads it (dynamic, no version of its own); the
              CMake project takes it from Cargo.toml; every mention of the SONAME or of
              `find_package(ztensor X.Y)` in the documentation and examples is this one's.
  build       (--build-dir) the library's SONAME and real name by the soname policy;
              ztensorConfigVersion.cmake accepts X.Y and refuses the neighbouring minors
              (SameMinorVersion while 0.x); `zt --version` prints the version.
  abi         abi/ holds a baseline (abi.py dump): ztensor.abi, ztensor.macros, ztensor.h and
              VERSION; a baseline of another SONAME is stale (an error with --tag).
  tag         (--tag) vMAJOR.MINOR.PATCH, the version, on HEAD, annotated; the CHANGELOG
              section dated; the baseline of this SONAME. Without --tag, every v* tag of
              the repository must be well formed.
  package     (--cargo-package) `cargo package --locked` (which builds the packaged crate)
              and `cargo publish --dry-run --locked --no-verify`; nothing is uploaded.

Prints each check and exits 1 when one fails.
"""

import argparse
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abi  # noqa: E402  (the soname policy and the Cargo.toml reader)

ROOT = abi.ROOT
PACKAGE = "ztensor-c"
TAG = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
# Where the documentation and examples may name a SONAME or a CMake version request.
MENTION_GLOBS = ["README.md", "docs/*.md", "cpp/README.md", "python/README.md", "c_examples/*/*",
                 "c_examples/*.c", "tests/install/*"]


class Checks:
    def __init__(self):
        self.failures = []

    def ok(self, what):
        print(f"ok    {what}")

    def fail(self, what):
        print(f"FAIL  {what}")
        self.failures.append(what)

    def expect(self, condition, what, why=""):
        if condition:
            self.ok(what)
        else:
            self.fail(f"{what}{': ' + why if why else ''}")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def lock_version(path):
    """The version Cargo.lock `path` records for this package, or None."""
    text = read(path)
    m = re.search(r'\[\[package\]\]\nname = "' + re.escape(PACKAGE) + r'"\nversion = "([^"]+)"', text)
    return m.group(1) if m else None


def header_version(text):
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"^#define ZT_VERSION_{part} (\d+)$", text, flags=re.M)
        parts.append(m.group(1) if m else "?")
    return ".".join(parts)


def changelog_section(version):
    """The heading of CHANGELOG.md's section for `version`, or None."""
    m = re.search(rf"^## \[{re.escape(version)}\]( - .*)?$", read("CHANGELOG.md"), flags=re.M)
    return m.group(0) if m else None


def check_versions(c, version, soname):
    c.ok(f"Cargo.toml: {PACKAGE} {version}")
    for lock in ("Cargo.lock", "bench/Cargo.lock", "fuzz/Cargo.lock"):
        got = lock_version(lock)
        c.expect(got == version, f"{lock}: {PACKAGE} {got}", f"expected {version} (cargo update -p {PACKAGE})")
    got = header_version(read("include/ztensor.h"))
    c.expect(got == version, f"include/ztensor.h: ZT_VERSION {got}",
             f"expected {version} (cmake --build build --target update_header)")
    heading = changelog_section(version)
    c.expect(heading is not None, f"CHANGELOG.md: {heading or 'no section for ' + version}",
             f"add '## [{version}] - Unreleased' (dated at the release)")
    pyproject = read("python/pyproject.toml")
    dynamic = re.search(r'^dynamic = \[[^\]]*"version"', pyproject, flags=re.M)
    static = re.search(r'^version\s*=', pyproject, flags=re.M)
    c.expect(dynamic and not static, "python/pyproject.toml: the version is dynamic (maturin takes Cargo.toml's)")
    cmake = read("CMakeLists.txt")
    c.expect("ztensor_cargo_package_version(" in cmake and "VERSION ${_ztensor_cargo_version}" in cmake,
             "CMakeLists.txt: the project version is read from Cargo.toml")
    c.expect("@PROJECT_VERSION@" in read("cmake/ztensor.pc.in"), "cmake/ztensor.pc.in: Version is the project's")

    # Mentions of a SONAME, a real name or a find_package request in prose and examples.
    major, minor, _ = version.split(".")
    request = f"{major}.{minor}"
    stale = []
    files = sorted({p for g in MENTION_GLOBS for p in glob.glob(os.path.join(ROOT, g)) if os.path.isfile(p)})
    for path in files:
        rel = os.path.relpath(path, ROOT)
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        for m in re.finditer(r"libztensor\.so\.(\d+(?:\.\d+){0,2})", text):
            named = m.group(1)
            # While 0.x, `libztensor.so.1` states the policy from 1.0 on, not a stale name.
            future = major == "0" and re.fullmatch(r"[1-9]\d*", named)
            ok = named == soname[len("libztensor.so."):] or named == version or future
            if not ok:
                line = text.count("\n", 0, m.start()) + 1
                stale.append(f"{rel}:{line}: {m.group(0)}")
        for m in re.finditer(r"find_package\(ztensor (\d+\.\d+)", text):
            if m.group(1) != request:
                line = text.count("\n", 0, m.start()) + 1
                stale.append(f"{rel}:{line}: {m.group(0)}")
    c.expect(not stale, f"documentation and examples name {soname} / find_package(ztensor {request}) "
             f"({len(files)} files)", "stale: " + "; ".join(stale))


def check_build(c, build_dir, version, soname, zt):
    lib = os.path.join(build_dir, "lib")
    real = os.path.join(lib, f"libztensor.so.{version}")
    c.expect(os.path.isfile(real), f"{os.path.relpath(real, build_dir)} exists")
    if os.path.isfile(real):
        out = subprocess.run(["readelf", "-d", real], stdout=subprocess.PIPE, text=True).stdout
        m = re.search(r"\(SONAME\).*\[([^\]]+)\]", out)
        got = m.group(1) if m else None
        c.expect(got == soname, f"its SONAME is {got}", f"the policy says {soname}")
        link = os.path.join(lib, soname)
        c.expect(os.path.islink(link) and os.readlink(link) == os.path.basename(real),
                 f"{soname} -> {os.path.basename(real)}")
    config = os.path.join(build_dir, "cmake", "ztensorConfigVersion.cmake")
    if not os.path.isfile(config):
        c.fail(f"{config} missing (ZTENSOR_INSTALL off?)")
    else:
        major, minor, patch = (int(x) for x in version.split("."))
        cases = [(f"{major}.{minor}", True), (version, True), (f"{major}.{minor}.{patch + 1}", False)]
        if major == 0:
            cases += [(f"0.{minor + 1}", False)] + ([(f"0.{minor - 1}", False)] if minor else [])
        else:
            cases += [(f"{major + 1}.0", False), (f"{major}.{minor + 1}", False)]
        wrong = []
        for request, accepted in cases:
            script = (f'set(PACKAGE_FIND_VERSION "{request}")\n'
                      + "".join(f'set(PACKAGE_FIND_VERSION_{n} {v})\n' for n, v in
                                zip(("MAJOR", "MINOR", "PATCH"), (request.split(".") + ["0", "0"])[:3]))
                      + f'set(PACKAGE_FIND_VERSION_COUNT {len(request.split("."))})\n'
                      + f'include("{config}")\n'
                      + 'message("${PACKAGE_VERSION} ${PACKAGE_VERSION_COMPATIBLE}")\n')
            probe = os.path.join(build_dir, "release-check-version.cmake")
            with open(probe, "w") as f:
                f.write(script)
            out = subprocess.run(["cmake", "-P", probe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True).stdout.split()
            os.remove(probe)
            got_version, compatible = (out + ["", ""])[:2]
            if got_version != version or (compatible == "TRUE") != accepted:
                wrong.append(f"find_package(ztensor {request}): {compatible or '?'} (version {got_version})")
        c.expect(not wrong, "ztensorConfigVersion.cmake: accepts " + ", ".join(r for r, a in cases if a)
                 + "; refuses " + ", ".join(r for r, a in cases if not a), "; ".join(wrong))
    if zt:
        out = subprocess.run([zt, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first = out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
        c.expect(out.returncode == 0 and re.match(rf"^zt {re.escape(version)}\b", first),
                 f"zt --version: {first}", f"expected 'zt {version} ...'")


def check_abi_baseline(c, version, soname, tagging):
    base = os.path.join(ROOT, "abi")
    names = ["ztensor.abi", "ztensor.macros", "ztensor.h", "VERSION"]
    missing = [n for n in names if not os.path.isfile(os.path.join(base, n))]
    if missing:
        c.fail(f"abi/: missing {', '.join(missing)} (python3 tests/release/abi.py dump)")
        return
    baseline = read("abi/VERSION").strip()
    old = abi.soname_for(baseline)
    m = re.search(r"<abi-corpus[^>]*\bsoname='([^']*)'", read("abi/ztensor.abi"))
    c.expect(m and m.group(1) == old, f"abi/: the baseline of {baseline} ({old})")
    c.expect(header_version(read("abi/ztensor.h")) == baseline, f"abi/ztensor.h is {baseline}'s header")
    if os.path.exists(os.path.join(base, "PROVISIONAL")):
        if tagging:
            c.fail("abi/ holds a provisional baseline: python3 tests/release/abi.py dump writes the release's")
        else:
            c.ok("abi/ holds a provisional baseline (PROVISIONAL): the release writes the final one")
    if old == soname:
        c.ok(f"the baseline's SONAME is this version's ({soname}): the ABI check compares against it")
    elif tagging:
        c.fail(f"the baseline is {baseline}'s ({old}), but {version} is a new ABI ({soname}): "
               "python3 tests/release/abi.py dump")
    else:
        c.ok(f"the baseline is {baseline}'s ({old}); {version} is a new ABI ({soname}), whose baseline "
             "is written at its release")


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def check_tags(c, version, tag):
    listed = git("tag", "--list", "v*")
    if listed.returncode != 0:
        c.ok("not a git checkout: no tags to check")
    else:
        bad = [t for t in listed.stdout.split() if not TAG.match(t)]
        c.expect(not bad, f"every v* tag is vMAJOR.MINOR.PATCH ({len(listed.stdout.split())} tags)",
                 "malformed: " + ", ".join(bad))
    if not tag:
        return
    m = TAG.match(tag)
    c.expect(m is not None, f"tag {tag} is vMAJOR.MINOR.PATCH")
    c.expect(m is not None and tag[1:] == version, f"tag {tag} is the version {version}")
    target = git("rev-parse", f"{tag}^{{commit}}")
    head = git("rev-parse", "HEAD")
    c.expect(target.returncode == 0 and target.stdout == head.stdout, f"tag {tag} is on HEAD",
             target.stderr.strip() or "it names another commit")
    kind = git("cat-file", "-t", tag).stdout.strip()
    c.expect(kind == "tag", f"tag {tag} is annotated", f"it is a {kind or 'missing'} object (git tag -a)")
    heading = changelog_section(version) or ""
    c.expect(re.search(r" - \d{4}-\d{2}-\d{2}$", heading), f"CHANGELOG.md: '{heading}' is dated",
             "write the release date: ## [X.Y.Z] - YYYY-MM-DD")


def check_package(c):
    env = dict(os.environ)
    dirty = ["--allow-dirty"] if os.environ.get("ZT_RELEASE_ALLOW_DIRTY") else []
    for command in (["cargo", "package", "--locked"] + dirty,
                    ["cargo", "publish", "--dry-run", "--locked", "--no-verify"] + dirty):
        proc = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        print(tail)
        c.expect(proc.returncode == 0, " ".join(command))
    listed = subprocess.run(["cargo", "package", "--list", "--locked"] + dirty, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    files = listed.stdout.split()
    needed = {"Cargo.toml", "build.rs", "cbindgen.toml", "include/ztensor.h", "src/lib.rs", "LICENSE-MIT",
              "LICENSE-APACHE", "README.md", "CHANGELOG.md"}
    c.expect(listed.returncode == 0 and needed <= set(files) and not any(f.startswith("tests/vectors") for f in files),
             f"the package holds {len(files)} files: the sources, header, licenses; no test vectors",
             "missing " + ", ".join(sorted(needed - set(files))))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", help="a CMake build tree to check (lib/, cmake/, bin/zt)")
    p.add_argument("--soname", help="CMake's ZTENSOR_SONAME, checked against the policy")
    p.add_argument("--tag", help="the release tag, at the release")
    p.add_argument("--cargo-package", action="store_true", help="run cargo package and publish --dry-run")
    args = p.parse_args()
    c = Checks()
    version = abi.cargo_version()
    soname = abi.soname_for(version)
    if args.soname:
        c.expect(args.soname == soname, f"CMake's SONAME {args.soname} is the policy's", f"expected {soname}")
    check_versions(c, version, soname)
    if args.build_dir:
        zt = os.path.join(args.build_dir, "bin", "zt")
        check_build(c, os.path.abspath(args.build_dir), version, soname, zt if os.path.exists(zt) else None)
    check_abi_baseline(c, version, soname, bool(args.tag))
    check_tags(c, version, args.tag)
    if args.cargo_package:
        check_package(c)
    if c.failures:
        print(f"\n{len(c.failures)} check(s) failed (RELEASING.md says what each step needs)")
        return 1
    print("\nall release checks passed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except abi.Failure as e:
        print(f"check_release.py: {e}", file=sys.stderr)
        sys.exit(1)
