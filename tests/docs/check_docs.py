#!/usr/bin/env python3
"""Compiles or runs every code block of the documentation (the docs_examples ctest).

    python check_docs.py            # all settings come from the environment (see ENV)

Documents: README.md, docs/*.md, c_examples/*/README.md and cpp/README.md. Blocks are found with a
CommonMark parser (markdown-it-py), so fenced and indented blocks are both seen.

The rule: every code block is checked according to its language tag, and a block this
script can't check must say so. An indented block, a fenced block without a tag, a tag not
listed below, or an annotation that does not fit the tag is an error.

An annotation is an HTML comment on the line right before the fence:
    <!-- doc-test: KIND [OPTIONS] -->

  c       A complete program: compiled as C11 with -Wall -Wextra -Werror -pedantic against
          include/ and the build tree's library, then run; it must exit 0.
          `fragment`: statements, wrapped in main() after the usual includes, with
          `zt_reader *reader = NULL;` declared first and zt_close(reader) after; unused
          variables are not errors in fragments.
          `compile-only`: compiled and linked, not run.
  cpp     The same as C++17 with -Wall -Wextra -Werror against the C++ wrapper;
          `fragment` wraps in main() after <ztensor.hpp> and the usual standard headers;
          `no-exceptions` builds with -fno-exceptions -DZT_NO_EXCEPTIONS.
  go      A `package main` program, run with `go run` in a module that requires
          ztensor.example/ztensor (c_examples/go). `compile-only`: `go build`.
  python  Run with the test venv's Python; c_examples/python is on sys.path and
          ZTENSOR_LIBRARY points at the build tree's library.
  sh      Always syntax-checked (bash -n), and must be annotated:
          `run [prefix=P]`: run with bash -euo pipefail, with the build tree's bin/ (the
          `zt` tool) first on PATH; P is replaced by a fresh install prefix of the build
          tree (cmake --install);
          `not-run: REASON`: only syntax-checked.
  cmake   `consumer`: put in a CMakeLists.txt after cmake_minimum_required() and project(),
          configured against a fresh install prefix and built (an app.c is provided).
          `not-run: REASON` otherwise.
  json    Parsed.
  text    Not code (diagrams, output, file layouts): not checked.

Programs run in a fresh directory holding `model.zt` (the demo's model, written by the
build tree's write_model, c_examples/write_model.c) and `app.c` (a program printing the
library version), so documentation examples can open "model.zt" and use the names the
demo model really has.

The README's test commands must be the lines .ci/run runs: checked too.

ENV: ZT_SOURCE_DIR, ZT_BUILD_DIR, ZT_LIBRARY (the .so), ZT_INCLUDE_DIR, ZT_CPP_INCLUDE_DIR,
ZT_CC, ZT_CXX, ZT_CMAKE, ZT_GENERATOR, ZT_MAKE_PROGRAM, ZT_LIBDIR (relative install libdir),
ZT_GO (go executable; with the Go environment of the lang_go test), ZT_WRITE_MODEL (the
build tree's write_model), ZT_WORK_DIR. ZT_DOCS_ONLY (optional, by hand): a comma-separated
list of documents (paths from the source root) to check alone, e.g. after editing one.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

from markdown_it import MarkdownIt

ENV = {name: os.environ.get(name, "") for name in (
    "ZT_SOURCE_DIR", "ZT_BUILD_DIR", "ZT_LIBRARY", "ZT_INCLUDE_DIR", "ZT_CPP_INCLUDE_DIR", "ZT_CC",
    "ZT_CXX", "ZT_CMAKE", "ZT_GENERATOR", "ZT_MAKE_PROGRAM", "ZT_LIBDIR", "ZT_GO", "ZT_WRITE_MODEL",
    "ZT_WORK_DIR")}

ANNOTATION = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
KINDS = {
    "c": {"fragment", "compile-only"},
    "cpp": {"fragment", "compile-only", "no-exceptions"},
    "go": {"compile-only"},
    "python": set(),
    "sh": {"run", "not-run"},
    "cmake": {"consumer", "not-run"},
    "json": set(),
    "text": set(),
}

C_PRELUDE = """\
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ztensor.h"
"""

CPP_PRELUDE = """\
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <ztensor.hpp>
"""

APP_C = """\
#include <stdio.h>
#include "ztensor.h"
int main(void) { printf("ztensor %s\\n", zt_version()); return 0; }
"""

class Failure(Exception):
    pass


def run(command, cwd, env=None, what=None, stdin=subprocess.DEVNULL):
    """Runs a command, echoing it and its output; raises Failure on a non-zero exit."""
    print(f"    $ {' '.join(command)}", flush=True)
    proc = subprocess.run(command, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.stdout.strip():
        print(textwrap.indent(proc.stdout.rstrip(), "      "), flush=True)
    if proc.returncode != 0:
        raise Failure(f"{what or command[0]} exited with {proc.returncode}")
    return proc.stdout


def write_fixture(path):
    """The demo's model (c_examples/write_model.c, as `cmake --build build --target demo`
    writes it), so every name the documentation uses is one the demo model really has."""
    run([ENV["ZT_WRITE_MODEL"], path], os.path.dirname(path), what="write_model")


class Checker:
    def __init__(self):
        self.source = ENV["ZT_SOURCE_DIR"]
        self.work = ENV["ZT_WORK_DIR"]
        self.fixture = os.path.join(self.work, "fixture", "model.zt")
        self.prefix = None
        self.counter = 0
        self.checked = {}

    def fresh_dir(self, label):
        self.counter += 1
        path = os.path.join(self.work, f"{self.counter:03d}-{label}")
        os.makedirs(path)
        shutil.copy(self.fixture, os.path.join(path, "model.zt"))
        with open(os.path.join(path, "app.c"), "w") as f:
            f.write(APP_C)
        return path

    def install_prefix(self):
        if self.prefix is None:
            self.prefix = os.path.join(self.work, "prefix")
            run([ENV["ZT_CMAKE"], "--install", ENV["ZT_BUILD_DIR"], "--prefix", self.prefix],
                self.work, what="cmake --install")
        return self.prefix

    # --- one checker per language -------------------------------------------------------

    def check_c(self, code, options, label, cxx=False):
        d = self.fresh_dir(label)
        fragment = "fragment" in options
        if fragment:
            prelude = CPP_PRELUDE if cxx else C_PRELUDE
            code = (prelude + "\nint main(void) {\n  zt_reader *reader = NULL;\n  (void)reader;\n"
                    + textwrap.indent(code, "  ") + "  zt_close(reader);\n  return 0;\n}\n")
        source = os.path.join(d, "block.cpp" if cxx else "block.c")
        with open(source, "w") as f:
            f.write(code)
        libdir = os.path.dirname(ENV["ZT_LIBRARY"])
        flags = ["-Wall", "-Wextra", "-Werror", "-I", ENV["ZT_INCLUDE_DIR"]]
        if cxx:
            command = [ENV["ZT_CXX"], "-std=c++17"] + flags + ["-I", ENV["ZT_CPP_INCLUDE_DIR"]]
            if "no-exceptions" in options:
                command += ["-fno-exceptions", "-DZT_NO_EXCEPTIONS"]
        else:
            command = [ENV["ZT_CC"], "-std=c11", "-pedantic"] + flags
        if fragment:
            command += ["-Wno-unused-variable", "-Wno-unused-but-set-variable"]
        command += [source, "-o", os.path.join(d, "block"), "-L", libdir, "-lztensor", f"-Wl,-rpath,{libdir}"]
        run(command, d, what="the compiler")
        if "compile-only" not in options:
            run([os.path.join(d, "block")], d, what="the program")

    def check_cpp(self, code, options, label):
        self.check_c(code, options, label, cxx=True)

    def check_go(self, code, options, label):
        d = self.fresh_dir(label)
        module = os.path.join(d, "module")  # apart from app.c, which go would take for cgo
        os.makedirs(module)
        with open(os.path.join(module, "main.go"), "w") as f:
            f.write(code)
        with open(os.path.join(module, "go.mod"), "w") as f:
            f.write("module doctest\n\ngo 1.19\n\nrequire ztensor.example/ztensor v0.0.0\n\n"
                    f"replace ztensor.example/ztensor => {os.path.join(self.source, 'c_examples', 'go')}\n")
        run([ENV["ZT_GO"], "vet", "."], module, what="go vet")
        run([ENV["ZT_GO"], "build", "-o", os.path.join(d, "block"), "."], module, what="go build")
        if "compile-only" not in options:
            run([os.path.join(d, "block")], d, what="the program")

    def check_python(self, code, options, label):
        d = self.fresh_dir(label)
        with open(os.path.join(d, "block.py"), "w") as f:
            f.write(code)
        env = dict(os.environ, ZTENSOR_LIBRARY=ENV["ZT_LIBRARY"],
                   PYTHONPATH=os.path.join(self.source, "c_examples", "python"))
        # The build tree's `zt` first on PATH, as for sh blocks.
        env["PATH"] = os.path.join(ENV["ZT_BUILD_DIR"], "bin") + os.pathsep + env.get("PATH", "")
        run([sys.executable, "block.py"], d, env=env, what="python")

    def check_sh(self, code, options, label):
        d = self.fresh_dir(label)
        run(["bash", "-n", "-c", code], d, what="bash -n")
        if "run" not in options:
            return
        prefix = options["run"].get("prefix")
        if prefix:
            installed = self.install_prefix()
            code = code.replace(f"{prefix}/lib/", f"{installed}/{ENV['ZT_LIBDIR']}/").replace(prefix, installed)
        env = {k: v for k, v in os.environ.items()
               if k not in ("PKG_CONFIG_PATH", "LD_LIBRARY_PATH", "CMAKE_PREFIX_PATH")}
        # The build tree's `zt` tool, for blocks that use it.
        env["PATH"] = os.path.join(ENV["ZT_BUILD_DIR"], "bin") + os.pathsep + env.get("PATH", "")
        run(["bash", "-euo", "pipefail", "-c", code], d, env=env, what="the commands")

    def check_cmake(self, code, options, label):
        if "consumer" not in options:
            return
        d = self.fresh_dir(label)
        with open(os.path.join(d, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.16)\nproject(app C CXX)\n\n" + code)
        command = [ENV["ZT_CMAKE"], "-S", d, "-B", os.path.join(d, "build"), "-G", ENV["ZT_GENERATOR"],
                   f"-DCMAKE_PREFIX_PATH={self.install_prefix()}", f"-DCMAKE_C_COMPILER={ENV['ZT_CC']}",
                   f"-DCMAKE_CXX_COMPILER={ENV['ZT_CXX']}"]
        if ENV["ZT_MAKE_PROGRAM"]:
            command.append(f"-DCMAKE_MAKE_PROGRAM={ENV['ZT_MAKE_PROGRAM']}")
        run(command, d, what="cmake configure")
        run([ENV["ZT_CMAKE"], "--build", os.path.join(d, "build")], d, what="cmake --build")
        app = os.path.join(d, "build", "app")
        if os.path.exists(app):  # the README's consumer: it must run from its RPATH
            run([app], d, what="app")

    def check_json(self, code, options, label):
        try:
            json.loads(code)
        except ValueError as e:
            raise Failure(f"not JSON: {e}")

    def check_text(self, code, options, label):
        pass

    # --- documents --------------------------------------------------------------------

    def blocks(self, path):
        """(line, tag, code, options) of every code block; raises Failure for bad ones."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.split("\n")
        for token in MarkdownIt("commonmark").parse(text):
            if token.type not in ("fence", "code_block"):
                continue
            line = token.map[0] + 1
            where = f"{os.path.relpath(path, self.source)}:{line}"
            if token.type == "code_block":
                raise Failure(f"{where}: an indented code block; fence it with a language tag")
            info = token.info.strip()
            tag = info.split()[0] if info else ""
            if not tag:
                raise Failure(f"{where}: a code block without a language tag")
            if tag not in KINDS:
                raise Failure(f"{where}: unknown language tag '{tag}' (known: {', '.join(sorted(KINDS))})")
            options = {}
            previous = lines[token.map[0] - 1].strip() if token.map[0] > 0 else ""
            match = ANNOTATION.match(previous)
            if match:
                words = match.group(1)
                if words.startswith("not-run:"):
                    if not words[len("not-run:"):].strip():
                        raise Failure(f"{where}: not-run needs a reason")
                    options["not-run"] = {}
                else:
                    for word in words.split():
                        if "=" in word:
                            key, _, value = word.partition("=")
                            if not options:
                                raise Failure(f"{where}: '{word}' must follow a kind")
                            options[list(options)[-1]][key] = value
                        else:
                            options[word] = {}
            unknown = set(options) - KINDS[tag]
            if unknown:
                raise Failure(f"{where}: annotation {sorted(unknown)} does not apply to '{tag}' blocks")
            if tag in ("sh",) and not options:
                raise Failure(f"{where}: a sh block needs <!-- doc-test: run --> or <!-- doc-test: not-run: REASON -->")
            if tag == "cmake" and not options:
                raise Failure(f"{where}: a cmake block needs <!-- doc-test: consumer --> or not-run: REASON")
            yield where, tag, token.content, options

    def check_test_command(self, readme):
        """The README's test commands are the lines .ci/run runs verbatim."""
        with open(os.path.join(self.source, ".ci", "run")) as f:
            ci = f.read()
        match = re.search(r"# >>> README test command.*?\n(.*?)\n\s*# <<< README test command", ci, re.S)
        if not match:
            raise Failure(".ci/run: no '# >>> README test command' block")
        lines = [x.strip() for x in match.group(1).split("\n") if x.strip()]
        with open(readme, encoding="utf-8") as f:
            readme_lines = [x.strip() for x in f.read().split("\n")]
        for line in lines:
            if line not in readme_lines:
                raise Failure(f"README.md lacks the line .ci/run runs:\n  {line}")
            print(f"README test command matches .ci/run: {line}")

    def self_test(self):
        """The rule itself: blocks that must be refused are refused."""
        cases = [
            ("```\nuntagged\n```\n", "without a language tag"),
            ("```rust\nfn main() {}\n```\n", "unknown language tag 'rust'"),
            ("Text.\n\n    indented code\n", "an indented code block"),
            ("```sh\nls\n```\n", "a sh block needs"),
            ("<!-- doc-test: not-run: -->\n```sh\nls\n```\n", "not-run needs a reason"),
            ("<!-- doc-test: consumer -->\n```c\nint main(void) { return 0; }\n```\n", "does not apply"),
        ]
        path = os.path.join(self.work, "self-test.md")
        for text, expected in cases:
            with open(path, "w") as f:
                f.write(text)
            try:
                list(self.blocks(path))
            except Failure as e:
                if expected not in str(e):
                    raise Failure(f"self-test: {text!r} gave '{e}', expected '{expected}'")
            else:
                raise Failure(f"self-test: {text!r} was accepted")
        print("self-test: a C block with a warning must fail to compile:")
        try:
            self.check_c("int main(void) { int unused; return 0; }\n", {}, "self-test")
        except Failure:
            pass
        else:
            raise Failure("self-test: a C block with a warning compiled")
        os.remove(path)
        print("self-test: bad blocks are refused\n")

    def main(self):
        missing = [k for k, v in ENV.items() if not v and k not in ("ZT_MAKE_PROGRAM",)]
        if "ZT_WRITE_MODEL" in missing:
            sys.exit("check_docs.py: no write_model to write the demo model with (ZTENSOR_BUILD_EXAMPLES=ON)")
        if missing == ["ZT_GO"]:
            sys.exit("check_docs.py: go not found at configure time (apt-get install golang-go)")
        if missing:
            sys.exit(f"check_docs.py: not set: {', '.join(missing)} (run it through ctest)")
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(os.path.dirname(self.fixture))
        write_fixture(self.fixture)
        self.self_test()

        documents = [os.path.join(self.source, "README.md")]
        documents += sorted(glob.glob(os.path.join(self.source, "docs", "*.md")))
        documents += sorted(glob.glob(os.path.join(self.source, "c_examples", "*", "README.md")))
        documents.append(os.path.join(self.source, "cpp", "README.md"))
        only = [x.strip() for x in os.environ.get("ZT_DOCS_ONLY", "").split(",") if x.strip()]
        if only:
            wanted = {os.path.join(self.source, x) for x in only}
            unknown = wanted - set(documents)
            if unknown:
                sys.exit(f"check_docs.py: ZT_DOCS_ONLY names no document: {', '.join(sorted(unknown))}")
            documents = [documents[0]] + [d for d in documents[1:] if d in wanted]
            if documents[0] not in wanted:
                documents = documents[1:]
        failures = []
        try:
            self.check_test_command(os.path.join(self.source, "README.md"))
        except Failure as e:
            failures.append(str(e))
        for document in documents:
            try:
                blocks = list(self.blocks(document))
            except Failure as e:
                failures.append(str(e))
                continue
            for where, tag, code, options in blocks:
                label = re.sub(r"[^A-Za-z0-9]+", "-", where).strip("-")
                shown = ", ".join(options) or "default"
                print(f"--- {where}: {tag} ({shown})", flush=True)
                try:
                    getattr(self, f"check_{tag}")(code, options, label)
                    self.checked[tag] = self.checked.get(tag, 0) + 1
                except Failure as e:
                    print(f"    FAILED: {e}", flush=True)
                    failures.append(f"{where}: {tag} block: {e}")
        counts = ", ".join(f"{n} {tag}" for tag, n in sorted(self.checked.items()))
        print(f"\nchecked {sum(self.checked.values())} blocks in {len(documents)} documents ({counts})")
        if failures:
            print(f"\n{len(failures)} failed:")
            for f in failures:
                print(f"  {f}")
            return 1
        return 0


if __name__ == "__main__":
    sys.exit(Checker().main())
