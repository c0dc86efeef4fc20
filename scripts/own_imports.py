#!/usr/bin/env python3
"""Inside the library, import a thing from the module that owns it, not through the crate
root's re-exports: `crate::cbor::Value` becomes `crate::value::cbor::Value`, `crate::Error`
`crate::error::Error`, `use crate::{Error, dtype::DType}` `use crate::{dtype::DType,
error::Error}`. src/lib.rs re-exports the public API for users; code inside the crate that
named those re-exports made every low layer "import" the root (issue 36).

Idempotent: a second run changes nothing. Comments and string literals are left alone.
Changed files are passed through rustfmt (from stdin, so no other file is touched), which
puts the rewritten `use` lines back in order. tests/architecture.rs
(`no_import_through_the_crate_root`) fails while any such import is left and names this
script.

    python3 scripts/own_imports.py          # rewrite src/
    python3 scripts/own_imports.py --check  # list what it would change, exit 1 if any
"""

import argparse
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What starts a line that is one `use` statement: indentation, a visibility, `use`.
USE_LEAD = re.compile(r"[ \t]*(?:pub(?:\([^)]*\))?\s+)?use\s+")


def is_ident(c):
    return c.isalnum() or c == "_"


def code_only(text):
    """`text` with comments, string and character literals blanked (newlines kept), so
    that positions in it are positions in `text`."""
    out = []
    i, n = 0, len(text)

    def blank(s):
        out.append("".join("\n" if c == "\n" else " " for c in s))

    while i < n:
        rest = text[i : i + 3]
        after_ident = i > 0 and is_ident(text[i - 1])
        end = None
        if rest.startswith("//"):
            j = text.find("\n", i)
            end = n if j < 0 else j
        elif rest.startswith("/*"):
            depth, j = 0, i
            while j < n:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                    if depth == 0:
                        break
                else:
                    j += 1
            end = j
        elif not after_ident and (m := re.match(r'b?r(#*)"', text[i:])):
            close = '"' + m.group(1)
            end = text.index(close, i + m.end()) + len(close)
        elif text[i] == '"' or (text[i] == "b" and not after_ident and text[i + 1 : i + 2] == '"'):
            j = i + (2 if text[i] == "b" else 1)
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            end = j + 1
        elif text[i] == "'":
            if text[i + 1 : i + 2] == "\\":
                end = text.index("'", i + 3) + 1
            elif text[i + 2 : i + 3] == "'":
                end = i + 3
        if end is None:
            out.append(text[i])
            i += 1
        else:
            blank(text[i:end])
            i = end
    return "".join(out)


def split_top(s):
    """`s` split at the commas outside braces, each part stripped, empty ones dropped."""
    parts, depth, start = [], 0, 0
    for k, c in enumerate(s):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(s[start:k])
            start = k + 1
    parts.append(s[start:])
    return [p.strip() for p in parts if p.strip()]


def matching_brace(code, open_at):
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    raise ValueError("unbalanced braces")


def use_leaves(tree, prefix, out):
    """Every leaf of a use tree: (path segments, the name it binds)."""
    tree = tree.strip()
    head, sep, rest = tree.partition("::")
    if tree.startswith("{"):
        for part in split_top(tree[1:-1]):
            use_leaves(part, prefix, out)
    elif sep:
        use_leaves(rest, prefix + [head.strip()], out)
    else:
        name, _, alias = tree.partition(" as ")
        name = name.strip()
        if name == "self":
            out.append((prefix, prefix[-1]))
        elif name != "*":
            out.append((prefix + [name], (alias or name).strip()))


def root_reexports(lib):
    """What src/lib.rs re-exports: each name to the path of the module item it names,
    followed through re-exports of re-exports (`typed::X` when `typed` is `value::typed`)."""
    code = code_only(lib)
    modules = set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code, re.M))
    names = {}
    for m in re.finditer(r"\bpub\s+use\s+([^;]*);", code):
        leaves = []
        use_leaves(m.group(1), [], leaves)
        for path, name in leaves:
            names[name] = path
    for _ in range(8):
        changed = False
        for name, path in names.items():
            if path[0] not in modules and path[0] in names and path[0] != name:
                names[name] = names[path[0]] + path[1:]
                changed = True
        if not changed:
            break
    return {n: p for n, p in names.items() if p[0] in modules}


def rewrite_group(body, reexports):
    """The items of a `crate::{...}` group with every head that names a root re-export
    replaced by its owner's path, items sharing a module merged; None if none did."""
    items = split_top(body)
    touched = False
    new = []
    for item in items:
        head = IDENT.match(item)
        if head and head.group(0) in reexports and item[head.end() :][:2] in ("", "::", " a"):
            item = "::".join(reexports[head.group(0)]) + item[head.end() :]
            touched = True
        new.append(item)
    if not touched:
        return None
    # Merge `a::b::X` and `a::b::{Y, Z}` into `a::b::{X, Y, Z}`, in first-seen order.
    buckets = {}
    order = []
    for item in new:
        if item.endswith("}") and "::{" in item:
            prefix, _, tail = item.partition("::{")
            tails = split_top(tail[:-1])
        elif "::" in item and "{" not in item:
            prefix, _, last = item.rpartition("::")
            tails = [last]
        else:
            prefix, tails = None, [item]
        key = prefix if prefix is not None else ("", item)
        if key not in buckets:
            buckets[key] = (prefix, [])
            order.append(key)
        for t in tails:
            if t not in buckets[key][1]:
                buckets[key][1].append(t)
    merged = []
    for key in order:
        prefix, tails = buckets[key]
        if prefix is None:
            merged.append(tails[0])
        elif len(tails) == 1:
            merged.append(f"{prefix}::{tails[0]}")
        else:
            merged.append(f"{prefix}::{{{', '.join(tails)}}}")
    return merged


def rewrite(text, reexports):
    """`text` with every `crate::<re-export>` in its code named through the owner."""
    code = code_only(text)
    edits = []  # (start, end, replacement), in order
    for m in re.finditer(r"(?<![A-Za-z0-9_])crate::", code):
        at = m.end()
        if code.startswith("{", at):
            close = matching_brace(code, at)
            items = rewrite_group(code[at + 1 : close], reexports)
            if items is None:
                continue
            # A whole `use crate::{...};` becomes one `use` per module, as the crate
            # writes its imports; a group inside a longer path stays one group.
            line_start = code.rfind("\n", 0, m.start()) + 1
            lead = USE_LEAD.fullmatch(code[line_start : m.start()])
            if lead and code.startswith(";", close + 1) and len(items) > 1:
                uses = [f"{lead.group(0)}crate::{item};" for item in items]
                edits.append((line_start, close + 2, "\n".join(uses)))
            elif len(items) == 1:
                edits.append((at, close + 1, items[0]))
            else:
                edits.append((at, close + 1, "{" + ", ".join(items) + "}"))
        else:
            name = IDENT.match(code, at)
            if not name or name.group(0) not in reexports:
                continue
            if code.startswith("!", name.end()):
                continue  # a macro
            edits.append((at, name.end(), "::".join(reexports[name.group(0)])))
    if not edits:
        return text
    out, last = [], 0
    for start, end, new in edits:
        out.append(text[last:start])
        out.append(new)
        last = end
    out.append(text[last:])
    return "".join(out)


def rustfmt(text, path):
    result = subprocess.run(
        ["rustfmt", "--edition", "2024", "--emit", "stdout"],
        input=text,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        sys.exit(f"rustfmt failed on the rewritten {path}:\n{result.stderr}")
    return result.stdout


def library_files():
    """The library's sources: src/ without the crate root and the `zt` tool (its own crate,
    on the public API)."""
    for path in sorted(SRC.rglob("*.rs")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "bin" or rel == pathlib.Path("lib.rs"):
            continue
        yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = parser.parse_args()
    reexports = root_reexports((SRC / "lib.rs").read_text())
    changed = []
    for path in library_files():
        text = path.read_text()
        new = rewrite(text, reexports)
        if new == text:
            continue
        changed.append(path.relative_to(ROOT))
        if not args.check:
            path.write_text(rustfmt(new, path))
    for path in changed:
        print(f"{'would rewrite' if args.check else 'rewrote'} {path}")
    if args.check and changed:
        sys.exit(1)


if __name__ == "__main__":
    main()
