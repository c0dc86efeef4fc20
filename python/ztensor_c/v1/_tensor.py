"""Tensor: an object's components as arrays, with its shape, dtype and format (the 1.x
package's `ztensor.Tensor`, what `Writer.write` takes and `Reader.read_object` gives)."""


class Tensor:
    """An object as {role: array} with its shape, dtype (NumPy's name of the primary
    component's), format ("dense", "sparse_csr", "sparse_coo" ...), logical type and
    attributes. A dense tensor's shape and dtype come from its `data` array when not
    given; other formats need the shape."""

    __slots__ = ("shape", "dtype", "type", "format", "components", "attributes")

    def __init__(self, components, *, shape=None, dtype=None, format="dense", type=None, attributes=None):
        if not isinstance(components, dict):
            raise TypeError("components must be a dict of {role: array}")
        primary = {"dense": "data", "sparse_csr": "values", "sparse_coo": "values"}.get(
            format, next(iter(components), "data"))
        if shape is not None:
            self.shape = list(shape)
        elif format == "dense" and "data" in components:
            self.shape = list(components["data"].shape)
        elif format == "dense":
            raise ValueError("a dense tensor needs a 'data' component or a shape")
        else:
            raise ValueError(f"a {format} tensor needs its shape")
        if dtype is None:
            if primary not in components:
                raise ValueError(f"no dtype given and no '{primary}' component to take it from")
            dtype = components[primary].dtype
        self.dtype = str(dtype)
        self.type = type
        self.format = format
        self.components = dict(components)
        self.attributes = dict(attributes) if attributes is not None else None

    def numpy(self):
        """The `data` array of a dense tensor."""
        if self.format != "dense":
            raise RuntimeError(f"numpy() is for dense tensors; this one is {self.format}")
        if "data" not in self.components:
            raise RuntimeError("the dense tensor has no 'data' component")
        return self.components["data"]

    def torch(self, *, device="cpu"):
        """The dense tensor as a torch tensor (sharing the array's memory) on `device`."""
        import torch

        from .._torch import from_numpy

        t = from_numpy(self.numpy()) if not self.numpy().flags.writeable else torch.from_numpy(self.numpy())
        return t if device == "cpu" else t.to(device)

    def __repr__(self):
        return f"<ztensor.Tensor shape={self.shape} dtype='{self.dtype}' format='{self.format}'>"
