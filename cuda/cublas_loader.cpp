#include "cuda/cublas_loader.hpp"

#include <string>

#include <dlfcn.h>

#include "actorgraph/error.hpp"

namespace ag::cublas {

namespace {

api load() {
  // The soname first (LD_LIBRARY_PATH, ld.so.cache), then the toolkit this build was made with.
  std::string why;
  void* lib = nullptr;
  for (const char* name : {"libcublas.so." AG_CUBLAS_SOVERSION, AG_CUBLAS_PATH}) {
    lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib)
      break;
    why += std::string{why.empty() ? "" : "; "} + ::dlerror();
  }
  if (!lib)
    throw error("cuBLAS cannot be loaded: " + why);
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
    if (!fn)
      throw error(std::string{"cuBLAS has no "} + name);
  };
  api a{};
  sym(a.create, "cublasCreate_v2");
  sym(a.destroy, "cublasDestroy_v2");
  sym(a.set_stream, "cublasSetStream_v2");
  sym(a.set_math_mode, "cublasSetMathMode");
  sym(a.sgemm, "cublasSgemm_v2");
  sym(a.gemm_ex, "cublasGemmEx");
  sym(a.gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
  sym(a.status_name, "cublasGetStatusName");
  sym(a.status_string, "cublasGetStatusString");
  return a; // the library stays loaded for the life of the process
}

} // namespace

const api& get() {
  static const api instance = load();
  return instance;
}

} // namespace ag::cublas
