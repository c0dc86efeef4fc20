"""The C declarations cffi compiles into ztensor_c/_native/ffi.py, made from ztensor.h.

cffi's C parser (pycparser) takes declarations only: no #include, no #if blocks, no
macros other than `#define NAME <integer>`. include/ztensor.h is written for C and C++
compilers, so this module reduces it to what cffi reads, without changing a declaration:

- conditional blocks are evaluated as a C (not C++) compiler on no particular platform
  sees them: `#ifdef __cplusplus` blocks go, the rest of each true branch stays;
- `#define NAME <integer literal>` stays (cffi turns it into an integer constant);
- every other macro the header defines (ZT_API, the version expression, attribute or
  deprecation markers) is removed, with its argument list where it takes one, from the
  text after it: they only decorate declarations;
- #include lines go (cffi knows stdint.h, stddef.h and stdbool.h types).

Then the DLPack structs ztensor_c._dlpack fills in are appended (written from the DLPack
specification, https://dmlc.github.io/dlpack/latest/c_api.html), so that they are compiled
into the same out-of-line module and need no C parser at import time.

Run as a script it prints the result: python cffi_header.py ../include/ztensor.h
"""

import re
import sys

# The DLPack 1.x ABI (dlpack.h): structs, in declaration order. Enums are given as their
# fixed-width integer fields, so no enum declaration is needed.
DLPACK_DECLARATIONS = """
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
"""

_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)\s*(.*?)\s*$")
_DEFINE = re.compile(r"([A-Za-z_]\w*)(\([^)]*\))?\s*(.*)$")
_INTEGER = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*")


def _strip_comments(text):
    """Removes /* */ and // comments (the header has no comment markers in strings)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _evaluate(expression, defined):
    """The value of an #if expression: defined(X), integers, ! && || and comparisons.
    Names not defined as integers are 0, as the C preprocessor has them."""
    expr = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in defined else "0", expression)
    expr = re.sub(r"(?<![\w.])(\d+)[uUlL]+", r"\1", expr)
    expr = re.sub(r"\b[A-Za-z_]\w*\b",
                  lambda m: str(defined.get(m.group(0), 0)) if isinstance(defined.get(m.group(0)), int)
                  else "0", expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    if not re.fullmatch(r"[\d\s()<>=!+\-*/%andort]*", expr):
        raise ValueError(f"cannot evaluate #if {expression}")
    return bool(eval(expr, {"__builtins__": {}}, {}))  # digits and operators only


def cdef_from_header(header):
    """cffi's cdef text for the declarations of `header` (the text of ztensor.h)."""
    defined = {}  # name -> int value, or None for a macro of another kind
    removed = {}  # macro name -> whether it takes arguments
    kept = []
    stack = []  # one entry per open conditional: [this branch taken, any branch taken, parent active]
    active = True
    for line in _strip_comments(header).splitlines():
        m = _DIRECTIVE.match(line)
        if not m:
            if active:
                kept.append(line)
            continue
        word, rest = m.group(1), m.group(2)
        if word in ("if", "ifdef", "ifndef"):
            if word == "if":
                taken = active and _evaluate(rest, defined)
            elif word == "ifdef":
                taken = active and rest.split()[0] in defined
            else:
                taken = active and rest.split()[0] not in defined
            stack.append([taken, taken, active])
            active = taken
        elif word in ("elif", "else"):
            if not stack:
                raise ValueError(f"#{word} without #if")
            entry = stack[-1]
            parent = entry[2]
            if word == "elif":
                taken = parent and not entry[1] and _evaluate(rest, defined)
            else:
                taken = parent and not entry[1]
            entry[0] = taken
            entry[1] = entry[1] or taken
            active = taken
        elif word == "endif":
            if not stack:
                raise ValueError("#endif without #if")
            active = stack.pop()[2]
        elif not active:
            continue
        elif word == "define":
            d = _DEFINE.match(rest)
            if d is None:
                raise ValueError(f"cannot read #define {rest}")
            name, params, value = d.group(1), d.group(2), d.group(3).strip()
            if params is None and _INTEGER.fullmatch(value):
                number = int(value.rstrip("uUlL"), 0)
                defined[name] = number
                kept.append(f"#define {name} {number}")
            else:
                defined[name] = None
                removed[name] = params is not None
        elif word == "undef":
            defined.pop(rest.split()[0], None)
        elif word in ("include", "pragma", "error", "warning", "line"):
            if word == "error":
                raise ValueError(f"#error {rest}")
        else:
            raise ValueError(f"unexpected directive #{word}")
    if stack:
        raise ValueError("unterminated #if")
    text = "\n".join(kept)
    for name, takes_arguments in sorted(removed.items(), key=lambda kv: -len(kv[0])):
        arguments = r"\s*\((?:[^()]|\([^()]*\))*\)" if takes_arguments else ""
        text = re.sub(r"\b%s\b%s" % (re.escape(name), arguments), " ", text)
    # Blank runs left by the removed comments and directives
    text = re.sub(r"\n\s*\n+", "\n", text)
    return text.strip() + "\n" + DLPACK_DECLARATIONS


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(cdef_from_header(f.read()))


if __name__ == "__main__":
    main()
