/*
 * ztensor.hpp: a header-only C++17 wrapper over the ztensor C API (ztensor.h).
 *
 *   zt::Reader       an open tensor file: zTensor (.zt), safetensors, GGUF or Tensogram,
 *                    recognised by its bytes. Move-only; closes itself. Iterate it for
 *                    objects, look them up with find() (std::optional) or operator[]
 *                    (not_found).
 *   zt::Object       one object: name, format, shape, components. A small handle that
 *                    borrows from its Reader.
 *   zt::Component    one component: role, dtype, logical type, encoding, digest. View it,
 *                    copy it into your memory, read it converted, read a byte range.
 *   zt::tensor_view  a component's decoded bytes (zero-copy when the file is mapped);
 *                    as<T>() is a typed span after checking dtype, size and alignment.
 *   zt::value        a typed attribute value (reader.attributes()["llama.block_count"]
 *                    .as<std::uint32_t>()): scalars with the file's widths, strings,
 *                    arrays (contiguous numbers as spans, elements()), maps (entries()).
 *   zt::Writer       writes a file. Move-only; nothing appears at the path unless
 *                    finish() succeeds. add() dense tensors, begin_object() for any format.
 *   zt::Loader       the staged loader: many requests (whole, row or column slices,
 *                    converted) into host memory or, through pinned staging, into device
 *                    memory (zt::Cuda, or your zt::device_callbacks), pipelined.
 *
 * Usage (exceptions on, the default):
 *
 *   std::vector<float> w = {1, 2, 3, 4, 5, 6};
 *   zt::Writer out = zt::Writer::create("model.zt");
 *   out.add("layer0.weight", w, {2, 3}, zt::write_options::zstd(3, zt::digest::sha256));
 *   out.finish();
 *
 *   zt::Reader in = zt::Reader::open("model.zt");
 *   for (const auto& obj : in)                          // objects, in file order
 *     std::cout << obj.name() << ": " << obj.format() << ", " << obj.ndim() << "-d\n";
 *   zt::tensor_view v = in["layer0.weight"].view();     // throws zt::not_found if absent
 *   zt::span<const float> f = v.as<float>();            // throws unless the data is f32
 *   std::vector<double> d = in["layer0.weight"].read_as<double>();   // converted copy
 *
 * Errors. With exceptions, a fallible call returns its value and throws a subclass of
 * zt::error (status(), what() = the library's message) on failure. With ZT_NO_EXCEPTIONS
 * defined, or exceptions disabled (-fno-exceptions), the same calls return
 * zt::result<T> instead ([[nodiscard]]; ok(), status(), message(), value()) and nothing
 * throws. zt::ret<T> names "T or zt::result<T>" for code that builds both ways, and
 * zt::result<T> exists in both modes. Calls that can't fail (names, shapes, sizes,
 * find()) return plain values in both modes. Allocation failure is std::bad_alloc as usual.
 *
 *   zt::result<zt::Reader> r = zt::Reader::open("model.zt");     // no-exceptions mode
 *   if (!r) { std::fprintf(stderr, "%s\n", r.message().c_str()); return 1; }
 *   zt::Reader in = std::move(r).value();
 *
 * Lifetimes. Objects, Components, tensor_views, and the names, shapes, spans and JSON they
 * return borrow from the Reader's handle: valid until the Reader is closed or destroyed
 * (moving a Reader keeps them valid). Reader::open_memory borrows the caller's bytes.
 * A Reader may be used from many threads at once; a Writer by one thread at a time.
 *
 * Builders. Writer::begin_object() returns a scoped object_builder, and
 * object_builder::begin_component() a scoped component_builder for streaming; end() them.
 * Destroying one that is still open (e.g. while an exception unwinds) ends it, the
 * component first. The C API has no way to abandon an object, so the library then keeps
 * the object if its components fit its format and drops it otherwise (dense data shorter
 * than the shape, a missing sparse component ...); either way the writer is never left
 * with an open object. Call end() yourself to see errors. A Writer and its builders share
 * one small state on the heap (which builder is open), never pointers to each other, so
 * either may be moved, and destroyed in any order: a Writer destroyed first ends its
 * open builders' work, and their calls then report state_error.
 *
 * Types. zt::dtype_of<T> maps double, float, bool and the integer types (by size and
 * signedness; not char) to their dtype, and as<T>(), read<T>(), read_as<T>() and the
 * typed add() use it. Half types have no standard C++17 type: read them as uint16_t with
 * the dtype spelled out (view.as<uint16_t>(zt::dtype::f16), read<uint16_t>(zt::dtype::bf16),
 * writer.add(name, zt::dtype::f16, halves, shape)); plain as<uint16_t>() accepts u16 data
 * only. Or specialize zt::dtype_of for your half type (std::float16_t and std::bfloat16_t
 * are mapped when the compiler has them). zt::span is std::span under C++20, else a
 * small equivalent.
 *
 * Each configuration (exceptions or not, std::span or not) lives in its own inline
 * namespace, so translation units built differently can share a program (see
 * ztensor/config.hpp for why both settings need one).
 *
 * This header is the one to include; it includes its parts, by job:
 *   ztensor/config.hpp     the C header, standard headers, ZT_CPP_* configuration macros
 *   ztensor/dtype.hpp      dtype / encoding / digest enums, names, sizes, dtype_of<T>
 *   ztensor/span.hpp       zt::span
 *   ztensor/result.hpp     zt::failure, zt::result<T>, zt::ret<T>, the zt::error hierarchy
 *   ztensor/arguments.hpp  string_arg, shape_ref, open_options, write_options
 *   ztensor/view.hpp       zt::tensor_view
 *   ztensor/value.hpp      zt::value, zt::value_type: typed attributes
 *   ztensor/owned_value.hpp  zt::owned_value, make_value(), make_array() ...: attributes to write
 *   ztensor/pool.hpp       zt::pool::set_threads, zt::pool::thread_count
 *   ztensor/reader.hpp     zt::Reader, zt::Object, zt::Component, iterators
 *   ztensor/writer.hpp     zt::Writer, zt::object_builder, zt::component_builder
 *   ztensor/loader.hpp     zt::Loader, zt::load_request, zt::device_callbacks, zt::Cuda
 */

#ifndef ZTENSOR_HPP
#define ZTENSOR_HPP

#include "ztensor/config.hpp"
#include "ztensor/dtype.hpp"
#include "ztensor/span.hpp"
#include "ztensor/result.hpp"
#include "ztensor/arguments.hpp"
#include "ztensor/view.hpp"
#include "ztensor/value.hpp"
#include "ztensor/owned_value.hpp"
#include "ztensor/pool.hpp"
#include "ztensor/reader.hpp"
#include "ztensor/writer.hpp"
#include "ztensor/loader.hpp"

#endif  // ZTENSOR_HPP
