// The cpp_abi_mix test: the four configurations of the wrapper in one program (see
// abi_mix_part.cpp). Exit 0 when every part got its own configuration and passed.
#include <cstdio>

extern "C" int zt_abi_exceptions_cxx17(const char* path, int* exceptions, int* std_span);
extern "C" int zt_abi_exceptions_cxx20(const char* path, int* exceptions, int* std_span);
extern "C" int zt_abi_results_cxx17(const char* path, int* exceptions, int* std_span);
extern "C" int zt_abi_results_cxx20(const char* path, int* exceptions, int* std_span);

int main() {
  struct part {
    const char* name;
    int (*run)(const char*, int*, int*);
    int exceptions, std_span;
  };
  const part parts[] = {
      {"exceptions, C++17", zt_abi_exceptions_cxx17, 1, 0},
      {"exceptions, C++20", zt_abi_exceptions_cxx20, 1, 1},
      {"results, C++17", zt_abi_results_cxx17, 0, 0},
      {"results, C++20", zt_abi_results_cxx20, 0, 1},
  };
  int failed = 0;
  for (const part& p : parts) {
    int exceptions = -1, std_span = -1;
    const int failures = p.run("abi_mix.zt", &exceptions, &std_span);
    const bool configured = exceptions == p.exceptions && std_span == p.std_span;
    std::printf("%-18s ZT_CPP_EXCEPTIONS=%d ZT_CPP_STD_SPAN=%d: %s\n", p.name, exceptions, std_span,
                failures == 0 && configured ? "ok" : "FAILED");
    if (failures != 0 || !configured) ++failed;
  }
  std::printf("abi_mix: %d of 4 configurations ok\n", 4 - failed);
  return failed == 0 ? 0 : 1;
}
