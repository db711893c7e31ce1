// A shared library opened on first use with dlopen, and its entry points looked up by name: how
// kernels/ reaches OpenBLAS (blas.cc) and cuBLAS (cuda/cublas_loader.cc) without linking them, so a
// pipelab process that runs no GEMM does not pay for loading them (docs/simulator.md, "Speed").
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <utility>

namespace pipelab::kernels::detail {

class SharedLibrary {
 public:
  /// Opens the first of `paths` that loads (left open for the life of the process); `name` is
  /// what error() calls the library.
  SharedLibrary(std::string name, std::initializer_list<const char*> paths) : name_(std::move(name)) {
    std::string tried;
    for (const char* path : paths) {
      handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) return;
      if (tried.find(path) != std::string::npos) continue;  // the same name twice (a configured path that is the soname)
      const char* why = dlerror();
      tried += (tried.empty() ? "" : "; ") + std::string(why ? why : path);
    }
    error_ = "cannot load " + name_ + ": " + tried;
  }

  /// Sets `fn` to the entry point `symbol` (null if absent); the first one missing becomes error().
  template <typename Fn>
  void resolve(const char* symbol, Fn& fn) {
    fn = handle_ != nullptr ? reinterpret_cast<Fn>(dlsym(handle_, symbol)) : nullptr;
    if (fn == nullptr && error_.empty()) error_ = name_ + " has no " + symbol;
  }

  /// Why the library or one of its entry points could not be loaded; empty when all could.
  const std::string& error() const { return error_; }

 private:
  std::string name_;
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace pipelab::kernels::detail
