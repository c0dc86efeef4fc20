# cmake -DLOADER=<loader> -DCONVERT=<convert> -DVECTORS=<tests/vectors> -P run_examples.cmake
# The cpp_examples test: runs cpp/examples/loader and convert (built with -Werror) in the
# current directory on a demo model and on vectors of every format, and checks their
# exit codes and summary lines.

# run(<expected exit code> <stdout regex> <command...>)
function(run code regex)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " line "${ARGN}")
  message(STATUS "${line}: exit ${rc}\n${out}${err}")
  if(NOT rc STREQUAL "${code}")
    message(FATAL_ERROR "${line}: exit ${rc}, expected ${code}")
  endif()
  if(NOT "${out}${err}" MATCHES "${regex}")
    message(FATAL_ERROR "${line}: output does not match '${regex}'")
  endif()
endfunction()

file(REMOVE demo.zt tensogram.zt safetensors.zt refused.zt)

# The demo model: written with every builder, zstd + sha256, verified on reopening.
run(0 "demo.zt: 7 objects, 9 components, 171748 bytes -> [0-9]+ stored \\(zstd level 3, sha256\\), verified"
    "${CONVERT}" demo.zt)
run(0 "demo.zt: zt 1.2.0, 7 objects, 9 tensors, file attributes [{]\"model\":\"zt-demo\",\"layers\":2,\"dim\":64[}].*\n  layers.0.mlp.weight +bf16  \\[128, 64\\] +16384 bytes  decoded   \\[0.100098, .*total 171748 bytes, 0 zero-copy, 171748 decoded, every digest verified"
    "${LOADER}" --no-mmap --verify demo.zt)

# Other formats: read in place, then rewritten as zTensor 1.2 and compared value by value.
run(0 "small.safetensors: safetensors 1, 2 objects, 2 tensors.*\n  w +f32   \\[3, 4\\] +48 bytes  zero-copy \\[0, 1, 2, 3, ...\\].*total 54 bytes, 54 zero-copy, 0 decoded"
    "${LOADER}" "${VECTORS}/safetensors/small.safetensors")
run(0 "safetensors.zt: 2 objects, 2 components, 54 bytes -> [0-9]+ stored \\(zstd level 9, crc32c\\), verified"
    "${CONVERT}" "${VECTORS}/safetensors/small.safetensors" safetensors.zt --level 9 --crc32c)
run(0 "simple_packing.tgm: tensogram 3, 10 objects, 10 tensors.*\n  sp0 +f64   \\[37\\] +296 bytes  decoded   \\[250, 250, 250, 250, ...\\].*total 2960 bytes, 0 zero-copy, 2960 decoded"
    "${LOADER}" "${VECTORS}/tensogram/simple_packing.tgm")
run(0 "tensogram.zt: 10 objects, 10 components, 2960 bytes -> [0-9]+ stored \\(zstd level 3, sha256\\), verified"
    "${CONVERT}" "${VECTORS}/tensogram/simple_packing.tgm" tensogram.zt)
run(0 "tensogram.zt: zt 1.2.0, 10 objects.*total 2960 bytes, 0 zero-copy, 2960 decoded"
    "${LOADER}" tensogram.zt)

# A file the reader refuses: a clear status, and nothing written.
run(1 "convert: ZT_ERR_UNSUPPORTED: .*big_endian.gguf: big-endian GGUF v3 is not supported"
    "${CONVERT}" "${VECTORS}/gguf/big_endian.gguf" refused.zt)
if(EXISTS refused.zt)
  message(FATAL_ERROR "convert left refused.zt behind")
endif()
run(2 "usage: loader" "${LOADER}")
