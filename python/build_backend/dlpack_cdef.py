"""The DLPack structs ztensor_c._dlpack fills in, as cffi declarations.

Written from the DLPack specification (https://dmlc.github.io/dlpack/latest/c_api.html):
the DLPack 1.x ABI (dlpack.h), structs in declaration order, enums given as their
fixed-width integer fields so that no enum declaration is needed. The build compiles them
into the same out-of-line cffi module as the C API's declarations, so no C parser runs at
import time.
"""

DECLARATIONS = """
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
