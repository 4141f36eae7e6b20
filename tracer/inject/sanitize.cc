// Sanitize mode: the Sanitizer API front-end. Its driver and runtime callbacks feed the same
// recording code as CUPTI's (callbacks.cc); every module is patched so that each global access,
// cp.async and warpgroup MMA of every kernel calls the device functions of patch/pages.cu, which
// note the touched 64 KB big pages in the page table of page_table.h. Around each launch inside the
// capture range: a new epoch before, and after it the list of touched pages, read back and
// written as a pages record. Kernels outside the range run patched but with no table, so their
// patches return at once.
#include "tracer/inject/page_table.h"
#include "tracer/inject/sanitizer_api.h"
#include "tracer/inject/state.h"

#include <algorithm>
#include <cstddef>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>
#include <set>
#include <vector>

namespace faultline::inject {
namespace {

constexpr uint32_t kListCapacity = 16u << 20; // entries: 16 M (64 MB), 1 TB of pages touched
constexpr uint32_t kLastEpoch = (1u << (32 - kEpochShift)) - 1;

struct Sanitizer {
  Sanitizer_SubscriberHandle subscriber = nullptr;
  std::mutex patch_mutex; // the patching API must be serialized
  std::set<CUcontext> patched_contexts;
  bool patching = false; // adding our own patches loads a module too

  std::mutex table_mutex;
  PageTable host{};            // the host's copy of the table's head
  PageTable* device = nullptr; // the table's head in device memory
  std::vector<uint32_t> list;
  uint32_t launches = 0; // numbers launches: corr_driver of the launch record

  uint64_t outside_allocations = 0; // allocations (partly) outside the window
  uint64_t kernels_recorded = 0, overflows = 0, warpgroup_kernels = 0, modules = 0;
  uint64_t patch_failures = 0;
};

Sanitizer& san() {
  static Sanitizer* s = new Sanitizer();
  return *s;
}

// Per host thread: the launch call's arguments, and the launch in flight between the launch
// callbacks' begin and end.
thread_local LaunchArgs t_stash;
thread_local bool t_stashed = false;
struct InFlight {
  bool active = false;
  uint32_t corr = 0;
  Sanitizer_StreamHandle stream = nullptr;
};
thread_local InFlight t_launch;

void require(SanitizerResult r, const char* what) {
  if (r != SANITIZER_SUCCESS) fatal(sanitizer_error(what, r));
}

std::string patch_path() {
  if (!state().options.patch_path.empty()) return state().options.patch_path;
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&patch_path), &info);
  return (std::filesystem::path(info.dli_fname ? info.dli_fname : ".").parent_path() /
          "faultline_pages.fatbin")
      .string();
}

void on_module_loaded(const Sanitizer_ResourceModuleData& m) {
  Sanitizer& s = san();
  std::lock_guard<std::mutex> lock(s.patch_mutex);
  if (s.patching) return;
  const SanitizerApi& api = sanitizer_api();
  if (!s.patched_contexts.count(m.context)) {
    s.patching = true;
    const std::string path = patch_path();
    SanitizerResult r = api.add_patches_from_file(path.c_str(), m.context);
    s.patching = false;
    if (r != SANITIZER_SUCCESS) fatal(sanitizer_error(("loading the patch " + path).c_str(), r));
    s.patched_contexts.insert(m.context);
  }
  require(api.patch_instructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, m.module,
                                 "faultline_global_access"),
          "patching global memory accesses");
  // Not every module has these instructions' patch points; a failure leaves the others patched.
  s.patch_failures += api.patch_instructions(SANITIZER_INSTRUCTION_MEMCPY_ASYNC, m.module,
                                             "faultline_memcpy_async") != SANITIZER_SUCCESS;
  s.patch_failures += api.patch_instructions(SANITIZER_INSTRUCTION_WARPGROUP_MMA_ASYNC, m.module,
                                             "faultline_wgmma") != SANITIZER_SUCCESS;
  require(api.patch_module(m.module), "patching a module");
  ++s.modules;
}

// The window starts below the lowest live allocation, so allocations made later below it still
// fit; its size is FAULTLINE_PAGE_WINDOW.
void allocate_table(CUcontext context, Sanitizer_StreamHandle stream) {
  Sanitizer& s = san();
  State& st = state();
  uint64_t lowest = 0;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (!st.live.empty()) lowest = st.live.begin()->first;
  }
  const uint64_t slack = st.options.page_window / 16;
  const uint64_t base = (lowest > slack ? lowest - slack : 0) & ~((uint64_t(1) << 21) - 1);
  s.host.base = base;
  s.host.pages = st.options.page_window >> kPageShift;
  s.host.capacity = kListCapacity;
  const SanitizerApi& api = sanitizer_api();
  void* stamps = nullptr;
  void* list = nullptr;
  void* head = nullptr;
  require(api.alloc(context, &stamps, s.host.pages * 4), "allocating the page stamps");
  require(api.alloc(context, &list, size_t(kListCapacity) * 4), "allocating the page list");
  require(api.alloc(context, &head, sizeof(PageTable)), "allocating the page table");
  require(api.memset(stamps, 0, s.host.pages * 4, stream), "clearing the page stamps");
  s.host.stamps = static_cast<uint32_t*>(stamps);
  s.host.list = static_cast<uint32_t*>(list);
  s.device = static_cast<PageTable*>(head);
  s.list.resize(kListCapacity);
  require(api.memcpy_to_device(head, &s.host, sizeof(PageTable), stream), "writing the table");
  require(api.stream_synchronize(stream), "synchronizing after writing the table");
  // Allocations made before the window existed are checked now.
  std::lock_guard<std::mutex> lock(st.mutex);
  for (const auto& [address, a] : st.live)
    if (address < base || address + a.size > base + st.options.page_window) ++s.outside_allocations;
}

bool in_range() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  return st.in_range;
}

// A new epoch, the list emptied, the table handed to this launch.
void arm(const Sanitizer_LaunchData& l) {
  Sanitizer& s = san();
  const SanitizerApi& api = sanitizer_api();
  if (!s.device) allocate_table(l.context, l.hStream);
  if (++s.host.epoch > kLastEpoch) { // stamps of old epochs could look current: clear them
    require(api.memset(s.host.stamps, 0, s.host.pages * 4, l.hStream), "clearing the stamps");
    s.host.epoch = 1;
  }
  s.host.count = s.host.outside = s.host.wgmma = 0;
  const size_t from = offsetof(PageTable, epoch);
  require(api.memcpy_to_device(reinterpret_cast<char*>(s.device) + from,
                               reinterpret_cast<char*>(&s.host) + from, sizeof(PageTable) - from,
                               l.hStream),
          "starting a kernel's page list");
  require(api.set_launch_callback_data(l.hLaunch, l.function, l.hStream, s.device),
          "handing the page table to a launch");
}

void on_launch_begin(const Sanitizer_LaunchData& l) {
  const bool stashed = t_stashed;
  LaunchArgs a = stashed ? t_stash : LaunchArgs{};
  t_stashed = false;
  if (!stashed) a.stream = l.apiStream;
  a.f = l.function; // the context's function, which cuFuncGetName answers for
  a.grid[0] = l.gridDim_x, a.grid[1] = l.gridDim_y, a.grid[2] = l.gridDim_z;
  a.block[0] = l.blockDim_x, a.block[1] = l.blockDim_y, a.block[2] = l.blockDim_z;
  Sanitizer& s = san();
  std::lock_guard<std::mutex> lock(s.table_mutex);
  const uint32_t corr = ++s.launches;
  record_launch(a, corr, 0);
  t_launch = {false, corr, l.hStream};
  if (!in_range()) return;
  arm(l);
  t_launch.active = true;
}

void on_launch_end(const Sanitizer_LaunchData&) {
  if (!t_launch.active) return;
  t_launch.active = false;
  Sanitizer& s = san();
  const SanitizerApi& api = sanitizer_api();
  std::lock_guard<std::mutex> lock(s.table_mutex);
  require(api.stream_synchronize(t_launch.stream), "waiting for a patched kernel");
  const size_t from = offsetof(PageTable, epoch);
  require(api.memcpy_to_host(reinterpret_cast<char*>(&s.host) + from,
                             reinterpret_cast<char*>(s.device) + from, sizeof(PageTable) - from,
                             t_launch.stream),
          "reading a kernel's page count");
  const uint32_t n = std::min(s.host.count, s.host.capacity);
  if (n)
    require(api.memcpy_to_host(s.list.data(), s.host.list, size_t(n) * 4, t_launch.stream),
            "reading a kernel's page list");
  uint32_t flags = 0;
  if (s.host.wgmma) flags |= raw::kPagesWarpgroupMma, ++s.warpgroup_kernels;
  if (s.host.count > s.host.capacity) flags |= raw::kPagesOverflow, ++s.overflows;
  raw::RawPages head{s.host.base, t_launch.corr, n, flags, s.host.outside};
  state().sink.write(raw::RawType::kPages, &head, sizeof(head), s.list.data(), n * 4);
  ++s.kernels_recorded;
}

void SANITIZERAPI dispatch(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId id,
                           const void* data) {
  if (in_tool()) return;
  switch (domain) {
  case SANITIZER_CB_DOMAIN_DRIVER_API:
  case SANITIZER_CB_DOMAIN_RUNTIME_API: {
    auto* cb = static_cast<const Sanitizer_CallbackData*>(data);
    ApiCall call{cb->callbackSite == SANITIZER_API_ENTER, cb->functionParams,
                 cb->functionReturnValue, 0};
    return on_api_call(domain == SANITIZER_CB_DOMAIN_RUNTIME_API, id, call);
  }
  case SANITIZER_CB_DOMAIN_RESOURCE:
    if (id == SANITIZER_CBID_RESOURCE_MODULE_LOADED)
      on_module_loaded(*static_cast<const Sanitizer_ResourceModuleData*>(data));
    return;
  case SANITIZER_CB_DOMAIN_LAUNCH: {
    ToolScope scope; // our own driver calls (names, parameter layouts) are not the program's
    auto* l = static_cast<const Sanitizer_LaunchData*>(data);
    if (id == SANITIZER_CBID_LAUNCH_BEGIN) on_launch_begin(*l);
    if (id == SANITIZER_CBID_LAUNCH_END) on_launch_end(*l);
    return;
  }
  default:
    return;
  }
}

} // namespace

void start_sanitizer() {
  const SanitizerApi& api = sanitizer_api();
  Sanitizer& s = san();
  require(api.subscribe(&s.subscriber, dispatch, nullptr), "subscribing to the Sanitizer API");
  for (Sanitizer_CallbackDomain d :
       {SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CB_DOMAIN_RUNTIME_API,
        SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CB_DOMAIN_LAUNCH})
    require(api.enable_domain(1, s.subscriber, d), "enabling a Sanitizer callback domain");
}

void stash_launch(const LaunchArgs& a) {
  t_stash = a;
  t_stashed = true;
}

void note_allocation(uint64_t address, uint64_t size, raw::AllocKind kind) {
  Sanitizer& s = san();
  {
    std::lock_guard<std::mutex> lock(s.table_mutex);
    const uint64_t end = s.host.base + (s.host.pages << kPageShift);
    if (s.device && (address < s.host.base || address + size > end)) {
      ++s.outside_allocations;
      std::fprintf(stderr,
                   "faultline capture: an allocation at 0x%llx lies outside the page window; "
                   "its accesses are not recorded (raise FAULTLINE_PAGE_WINDOW)\n",
                   static_cast<unsigned long long>(address));
    }
  }
  if (kind == raw::AllocKind::kManaged) host_track(address, size);
}

std::string sanitize_meta() {
  Sanitizer& s = san();
  std::lock_guard<std::mutex> lock(s.table_mutex);
  return "{\"page_window_base\":" + std::to_string(s.host.base) +
         ",\"page_window_bytes\":" + std::to_string(s.host.pages << kPageShift) +
         ",\"allocations_outside_window\":" + std::to_string(s.outside_allocations) +
         ",\"kernels_recorded\":" + std::to_string(s.kernels_recorded) +
         ",\"kernels_overflowed\":" + std::to_string(s.overflows) +
         ",\"warpgroup_mma_kernels\":" + std::to_string(s.warpgroup_kernels) +
         ",\"modules_patched\":" + std::to_string(s.modules) +
         ",\"optional_patch_failures\":" + std::to_string(s.patch_failures) + "}";
}

} // namespace faultline::inject
