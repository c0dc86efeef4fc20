# ztensor.jl: read zTensor (.zt) files from Julia through the C API, with ccall.
#
#   ZTENSOR_LIBRARY=/opt/ztensor/lib/libztensor.so.0.2 julia ztensor.jl model.zt NAME
#
# NOT TESTED: no Julia runs on this project's test machines. It is kept small, and each
# struct below mirrors include/ztensor.h field by field (Julia lays out immutable structs
# of plain fields exactly as C does).

module ZTensor

const libztensor = get(ENV, "ZTENSOR_LIBRARY", "libztensor.so.0.2")

# typedef struct zt_object_info
struct ObjectInfo
    name::Ptr{UInt8}            # const char *
    format::Ptr{UInt8}          # const char *
    shape::Ptr{UInt64}          # const uint64_t *, ndim entries
    ndim::Csize_t               # size_t
    component_count::Csize_t    # size_t
end

# typedef struct zt_component_info
struct ComponentInfo
    role::Ptr{UInt8}            # const char *
    dtype::UInt32               # uint32_t (zt_dtype)
    logical_type::Ptr{UInt8}    # const char *type, may be NULL
    encoding::UInt32            # uint32_t (zt_encoding)
    offset::UInt64              # uint64_t
    length::UInt64              # uint64_t
    decoded_length::UInt64      # uint64_t
    digest::Ptr{UInt8}          # const char *, may be NULL
end

# typedef struct zt_view
struct View
    data::Ptr{Cvoid}            # const void *
    size::UInt64                # uint64_t
    dtype::UInt32               # uint32_t (zt_dtype)
    zero_copy::Bool             # bool
end

# zt_dtype values 0..12 -> Julia element types (bf16 has none: its bits as UInt16)
const ELTYPES = (Float64, Float32, Float16, UInt16, Int64, Int32, Int16, Int8,
                 UInt64, UInt32, UInt16, UInt8, Bool)
# "f32", "bf16" ...: the library's names, "unknown" for a value outside zt_dtype
dtype_name(dtype::UInt32) = unsafe_string(ccall((:zt_dtype_name, libztensor), Ptr{UInt8}, (UInt32,), dtype))

struct ZtError <: Exception
    status::Int
    name::String
    message::String
end
Base.showerror(io::IO, e::ZtError) = print(io, e.message, " (", e.name, ")")

cstring(p::Ptr{UInt8}) = p == C_NULL ? nothing : unsafe_string(p)

# zt_last_error() is per OS thread. A task only moves to another thread when it yields,
# and nothing between the failing ccall and these ccalls yields.
function check(status::Cint)
    status == 0 && return nothing
    message = unsafe_string(ccall((:zt_last_error, libztensor), Ptr{UInt8}, ()))
    name = unsafe_string(ccall((:zt_status_name, libztensor), Ptr{UInt8}, (UInt32,), status))
    throw(ZtError(status, name, message))
end

"An open file. Arrays from `view` point into it: keep the Reader alive while using them."
mutable struct Reader
    ptr::Ptr{Cvoid}             # zt_reader *
    function Reader(path::AbstractString)
        out = Ref{Ptr{Cvoid}}(C_NULL)
        check(ccall((:zt_open, libztensor), Cint, (Cstring, Ref{Ptr{Cvoid}}), path, out))
        return finalizer(close, new(out[]))
    end
end

function Base.close(r::Reader)
    if r.ptr != C_NULL
        ccall((:zt_close, libztensor), Cvoid, (Ptr{Cvoid},), r.ptr)
        r.ptr = C_NULL
    end
    return nothing
end

handle(r::Reader) = r.ptr == C_NULL ? throw(ZtError(9, "ZT_ERR_STATE", "the reader is closed")) : r.ptr

"(name, format, shape, [(role, dtype), ...]) of every object; shapes in the file's row-major order."
function objects(r::Reader)
    count = ccall((:zt_object_count, libztensor), Csize_t, (Ptr{Cvoid},), handle(r))
    map(0:Int(count)-1) do i
        info = Ref{ObjectInfo}()
        check(ccall((:zt_object_get_info, libztensor), Cint,
                    (Ptr{Cvoid}, Csize_t, Ref{ObjectInfo}), handle(r), i, info))
        shape = [unsafe_load(info[].shape, d) for d in 1:Int(info[].ndim)]
        components = map(0:Int(info[].component_count)-1) do c
            comp = Ref{ComponentInfo}()
            check(ccall((:zt_component_get_info, libztensor), Cint,
                        (Ptr{Cvoid}, Csize_t, Csize_t, Ref{ComponentInfo}), handle(r), i, c, comp))
            (cstring(comp[].role), dtype_name(comp[].dtype))
        end
        (unsafe_string(info[].name), unsafe_string(info[].format), shape, components)
    end
end

"""
    view(r, name; role="data") -> Array

The component's data without copying: an Array wrapped around the pointer the library
returns (the file's mapping for raw data). Julia is column-major, so a row-major
`[rows, cols]` tensor appears as a `cols × rows` array; `PermutedDimsArray(A, (2, 1))`
indexes it as `[row, col]`, still without copying. Valid while `r` is open and alive:
use it inside `GC.@preserve r begin ... end` or keep `r` referenced. Read-only.
"""
function view(r::Reader, name::AbstractString; role::AbstractString = "data")
    index = Ref{Csize_t}(0)
    check(ccall((:zt_object_find, libztensor), Cint,
                (Ptr{Cvoid}, Cstring, Ref{Csize_t}), handle(r), name, index))
    v = Ref{View}()
    check(ccall((:zt_component_view, libztensor), Cint,
                (Ptr{Cvoid}, Csize_t, Cstring, Ref{View}), handle(r), index[], role, v))
    T = ELTYPES[v[].dtype + 1]
    shape = objects(r)[index[] + 1][3]
    dims = role == "data" ? Tuple(Int.(reverse(shape))) : (Int(v[].size ÷ sizeof(T)),)
    v[].size == 0 && return zeros(T, dims)
    return unsafe_wrap(Array, Ptr{T}(v[].data), dims; own = false)
end

end # module

if abspath(PROGRAM_FILE) == @__FILE__
    r = ZTensor.Reader(ARGS[1])
    for (name, format, shape, components) in ZTensor.objects(r)
        println(name, " ", format, " ", Int.(shape), " ", components)
    end
    if length(ARGS) >= 2
        GC.@preserve r begin
            a = ZTensor.view(r, ARGS[2])
            println(ARGS[2], " (", eltype(a), ", row-major ", reverse(size(a)), "):")
            display(ndims(a) == 2 ? PermutedDimsArray(a, (2, 1)) : a)
            println()
        end
    end
    close(r)
end
