#include "tracer/inject/sanitizer_api.h"

#include "tracer/inject/state.h"

#include <cstdlib>
#include <dlfcn.h>
#include <vector>

namespace faultline::inject {
namespace {

void* open_library(std::string& tried) {
  std::vector<std::string> candidates;
  if (const char* given = std::getenv("FAULTLINE_SANITIZER_LIB")) candidates.push_back(given);
  candidates.push_back("libsanitizer-public.so");
  for (const char* home : {static_cast<const char*>(std::getenv("CUDA_HOME")), "/usr/local/cuda"})
    if (home) candidates.push_back(std::string(home) + "/compute-sanitizer/libsanitizer-public.so");
  for (const std::string& path : candidates) {
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return handle;
    tried += (tried.empty() ? "" : ", ") + path;
  }
  return nullptr;
}

template <typename F> void bind(void* handle, F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(handle, name));
  if (!slot) fatal(std::string("the Sanitizer API library has no ") + name);
}

SanitizerApi load() {
  std::string tried;
  void* h = open_library(tried);
  if (!h)
    fatal("sanitize mode needs libsanitizer-public.so (pip package nvidia-cuda-sanitizer-api, or "
          "the CUDA toolkit's compute-sanitizer); set FAULTLINE_SANITIZER_LIB. Tried: " +
          tried);
  SanitizerApi a;
  bind(h, a.subscribe, "sanitizerSubscribe");
  bind(h, a.enable_domain, "sanitizerEnableDomain");
  bind(h, a.add_patches_from_file, "sanitizerAddPatchesFromFile");
  bind(h, a.patch_instructions, "sanitizerPatchInstructions");
  bind(h, a.patch_module, "sanitizerPatchModule");
  bind(h, a.set_launch_callback_data, "sanitizerSetLaunchCallbackData");
  bind(h, a.alloc, "sanitizerAlloc");
  bind(h, a.memset, "sanitizerMemset");
  bind(h, a.memcpy_to_device, "sanitizerMemcpyHostToDeviceAsync");
  bind(h, a.memcpy_to_host, "sanitizerMemcpyDeviceToHost");
  bind(h, a.stream_synchronize, "sanitizerStreamSynchronize");
  bind(h, a.result_string, "sanitizerGetResultString");
  return a;
}

} // namespace

const SanitizerApi& sanitizer_api() {
  static const SanitizerApi api = load();
  return api;
}

std::string sanitizer_error(const char* what, SanitizerResult result) {
  const char* text = nullptr;
  if (sanitizer_api().result_string) sanitizer_api().result_string(result, &text);
  return std::string(what) + " failed: " + (text ? text : "error " + std::to_string(result));
}

} // namespace faultline::inject
