// The Sanitizer API entry points sanitize mode uses, loaded with dlopen so the injection library
// runs in its CUPTI modes where libsanitizer-public.so is absent.
#pragma once

#include <sanitizer.h>
#include <string>

namespace faultline::inject {

struct SanitizerApi {
  decltype(&sanitizerSubscribe) subscribe = nullptr;
  decltype(&sanitizerEnableDomain) enable_domain = nullptr;
  decltype(&sanitizerAddPatchesFromFile) add_patches_from_file = nullptr;
  decltype(&sanitizerPatchInstructions) patch_instructions = nullptr;
  decltype(&sanitizerPatchModule) patch_module = nullptr;
  decltype(&sanitizerSetLaunchCallbackData) set_launch_callback_data = nullptr;
  decltype(&sanitizerAlloc) alloc = nullptr;
  decltype(&sanitizerMemset) memset = nullptr;
  decltype(&sanitizerMemcpyHostToDeviceAsync) memcpy_to_device = nullptr;
  decltype(&sanitizerMemcpyDeviceToHost) memcpy_to_host = nullptr;
  decltype(&sanitizerStreamSynchronize) stream_synchronize = nullptr;
  decltype(&sanitizerGetResultString) result_string = nullptr;
};

// Loads the library from $FAULTLINE_SANITIZER_LIB, the loader's search path, or the CUDA
// toolkit's compute-sanitizer folder; stops the program with a message naming the places tried.
const SanitizerApi& sanitizer_api();

// "what failed: the API's text" for a failed call.
std::string sanitizer_error(const char* what, SanitizerResult result);

} // namespace faultline::inject
