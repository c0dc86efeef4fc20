"""What the 1.x package's tests import from its native module: `_Reader`, the object at
the end of the base chain of every array that views a file's mapping (it keeps the
reader, and so the mapping, alive; arrays of their own never reach it)."""

from .._handle import ReaderMemory as _Reader  # noqa: F401
