// Launch records: the kernel's name and argument layout (cached per function), and every
// argument word that points into a live allocation, as both front-ends record them.
#include "tracer/inject/cupti_hooks.h"
#include "tracer/inject/state.h"

#include <cstring>
#include <cuda_runtime_api.h>

namespace faultline::inject {
namespace {

const FunctionInfo& function_info(CUfunction handle) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.functions.find(handle);
  if (it != s.functions.end()) return it->second;
  CUfunction f = handle;
  ToolScope scope;
  FunctionInfo info;
  const char* name = nullptr;
  // The runtime launches context-independent CUkernel handles cast to CUfunction; the function
  // queries need the context's CUfunction behind them.
  CUfunction in_context = nullptr;
  if (cuFuncGetName(&name, f) != CUDA_SUCCESS &&
      cuKernelGetFunction(&in_context, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS) {
    f = in_context;
    cuFuncGetName(&name, f);
  }
  info.name = name ? name : "unknown";
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    if (cuFuncGetParamInfo(f, i, &offset, &size) != CUDA_SUCCESS) break;
    info.params.emplace_back(static_cast<uint32_t>(offset), static_cast<uint32_t>(size));
  }
  return s.functions.emplace(handle, std::move(info)).first->second;
}

// Every 8-byte word of the arguments that falls inside the span of live allocations: pointer
// arguments, and pointers packed in structures passed by value.
void scan_words(const char* bytes, size_t size, uint64_t low, uint64_t high,
                std::vector<uint64_t>& words) {
  for (size_t offset = 0; offset + 8 <= size; offset += 8) {
    uint64_t word = 0;
    std::memcpy(&word, bytes + offset, 8);
    if (word >= low && word < high) words.push_back(word);
  }
}

std::vector<uint64_t> pointer_words(const FunctionInfo& info, void** params, void** extra) {
  uint64_t low = 0, high = 0;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.live.empty()) return {};
    low = s.live.begin()->first;
    high = s.live.rbegin()->first + s.live.rbegin()->second.size;
  }
  std::vector<uint64_t> words;
  if (params) {
    for (size_t i = 0; i < info.params.size(); ++i)
      scan_words(static_cast<const char*>(params[i]), info.params[i].second, low, high, words);
    return words;
  }
  const char* buffer = nullptr;
  size_t buffer_size = 0;
  for (size_t i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buffer = static_cast<const char*>(extra[i + 1]);
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
      buffer_size = *static_cast<const size_t*>(extra[i + 1]);
  }
  if (buffer) scan_words(buffer, buffer_size, low, high, words);
  return words;
}

} // namespace

LaunchArgs launch_args(uint32_t id, const void* p) {
  LaunchArgs a;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    auto* q = static_cast<const cuLaunchKernelEx_params*>(p);
    const CUlaunchConfig* c = q->config;
    a = {q->f,
         {c->gridDimX, c->gridDimY, c->gridDimZ},
         {c->blockDimX, c->blockDimY, c->blockDimZ},
         c->hStream,
         q->kernelParams,
         q->extra};
    return a;
  }
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz) {
    auto* q = static_cast<const cuLaunchCooperativeKernel_params*>(p);
    a = {q->f,
         {q->gridDimX, q->gridDimY, q->gridDimZ},
         {q->blockDimX, q->blockDimY, q->blockDimZ},
         q->hStream,
         q->kernelParams,
         nullptr};
    return a;
  }
  auto* q = static_cast<const cuLaunchKernel_params*>(p);
  a = {q->f,
       {q->gridDimX, q->gridDimY, q->gridDimZ},
       {q->blockDimX, q->blockDimY, q->blockDimZ},
       q->hStream,
       q->kernelParams,
       q->extra};
  return a;
}

std::vector<uint64_t> record_launch(const LaunchArgs& a, uint32_t corr, uint32_t runtime_corr) {
  at_api_boundary();
  const FunctionInfo& info = function_info(a.f);
  std::vector<uint64_t> words = pointer_words(info, a.params, a.extra);
  raw::RawLaunch record{now(),
                        reinterpret_cast<uint64_t>(a.stream),
                        corr,
                        runtime_corr,
                        {a.grid[0], a.grid[1], a.grid[2]},
                        {a.block[0], a.block[1], a.block[2]},
                        static_cast<uint32_t>(info.name.size()),
                        static_cast<uint32_t>(words.size())};
  state().sink.write(raw::RawType::kLaunch, &record, sizeof(record), info.name.data(),
                     info.name.size(), words.data(), words.size() * 8);
  return words;
}

const std::string& function_name(CUfunction f) {
  return function_info(f).name;
}

LaunchArgs runtime_launch_args(uint32_t id, const void* p) {
  LaunchArgs a;
  if (id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
      id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060) {
    auto* q = static_cast<const cudaLaunchKernelExC_v11060_params*>(p);
    a.stream = q->config ? q->config->stream : nullptr;
    a.params = q->args;
    return a;
  }
  auto* q = static_cast<const cudaLaunchKernel_v7000_params*>(p);
  a.stream = q->stream;
  a.params = q->args;
  return a;
}

} // namespace faultline::inject
