// Host touches of managed memory, in sanitize mode (recorded) and timing mode (the pages to send
// back to the GPU before the next launch, so that kernels run with their data resident). Managed
// allocations are protected (PROT_NONE) from the CPU; the first touch of a 64 KB big page faults
// into our SIGSEGV handler, which records a read and opens the page for reading; a write then
// faults again, is recorded as a write and opens it fully. Before every recorded API event the
// touches since the last one are written and their pages protected again, so each interval between
// GPU operations records the pages the host touched in it. The GPU's accesses do not depend on the
// CPU's protection, and soft-dirty bits do not work on managed memory (both probed on an H100: a
// kernel ran while the CPU side was PROT_NONE; no page was marked soft-dirty after the host wrote
// 2,048).
//
// The handler runs in signal context: it reads an immutable snapshot of the tracked ranges,
// changes one byte of per-page state and appends to a preallocated buffer; faults outside the
// tracked ranges, or on a page already open, go to the handler that was there before.
#include "tracer/inject/state.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <ctime>
#include <mutex>
#include <sys/mman.h>
#include <vector>

namespace faultline::inject {
namespace {

constexpr uint64_t kPage = 64 * 1024;
constexpr uint64_t kOsPage = 4096;
constexpr size_t kMaxTouches = 1 << 20;

enum PageState : uint8_t { kProtected = 0, kReadable = 1, kWritable = 2 };

struct Range {
  uint64_t begin = 0, end = 0;
  uint8_t* state = nullptr; // one per 64 KB big page of the range
};

struct Ranges {
  std::vector<Range> sorted;
};

struct Touch {
  uint64_t time, address;
  uint32_t type;
};

std::mutex g_mutex;                    // guards changes to the ranges (not the handler)
std::atomic<const Ranges*> g_ranges{}; // snapshots are never freed: the handler may hold one
std::vector<Range> g_current;
Touch* g_touches = nullptr;
std::atomic<size_t> g_count{0};
std::atomic<uint64_t> g_lost{0};
uint64_t g_reads = 0, g_writes = 0;
struct sigaction g_previous {};
bool g_installed = false;

uint64_t realtime_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

const Range* find(const Ranges* r, uint64_t address) {
  if (!r) return nullptr;
  size_t lo = 0, hi = r->sorted.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r->sorted[mid].end <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < r->sorted.size() && r->sorted[lo].begin <= address ? &r->sorted[lo] : nullptr;
}

// The OS pages of the 64 KB big page holding `address`, clipped to its range.
void span(const Range& r, uint64_t address, uint64_t& begin, uint64_t& length) {
  begin = std::max(address & ~(kPage - 1), r.begin & ~(kOsPage - 1));
  uint64_t end = std::min((address & ~(kPage - 1)) + kPage, (r.end + kOsPage - 1) & ~(kOsPage - 1));
  length = end - begin;
}

void chain(int signal, siginfo_t* info, void* context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) return g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    return g_previous.sa_handler(signal);
  }
  // The default action: restore it and return, so the access faults again and kills.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigaction(SIGSEGV, &fallback, nullptr);
}

void on_fault(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<uint64_t>(info->si_addr);
  const Range* r = find(g_ranges.load(std::memory_order_acquire), address);
  if (!r) return chain(signal, info, context);
  uint8_t& s = r->state[(address - r->begin) / kPage];
  if (s == kWritable) return chain(signal, info, context);
  uint64_t begin = 0, length = 0;
  span(*r, address, begin, length);
  const bool write = s == kReadable;
  if (mprotect(reinterpret_cast<void*>(begin), length, write ? PROT_READ | PROT_WRITE : PROT_READ))
    return chain(signal, info, context);
  s = write ? kWritable : kReadable;
  const size_t slot = g_count.fetch_add(1);
  if (slot < kMaxTouches)
    g_touches[slot] = {realtime_ns(), address & ~(kPage - 1),
                       write ? raw::kPageWrite : raw::kPageRead};
  else
    g_lost.fetch_add(1);
}

void install() {
  if (g_installed) return;
  g_touches = new Touch[kMaxTouches];
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSEGV, &action, &g_previous)) fatal("cannot install the SIGSEGV handler");
  g_installed = true;
}

void publish() {
  g_ranges.store(new Ranges{g_current}, std::memory_order_release);
}

bool enabled() {
  const Mode mode = state().options.mode;
  return (mode == Mode::kSanitize || mode == Mode::kTiming) && state().options.host_touches;
}

std::vector<uint64_t> g_touched; // timing mode: pages touched since take_host_touched()

} // namespace

void host_track(uint64_t address, uint64_t size) {
  if (!enabled() || size == 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  install();
  Range r{address, address + size, new uint8_t[(size + kPage - 1) / kPage]()};
  auto at = std::lower_bound(g_current.begin(), g_current.end(), r,
                             [](const Range& a, const Range& b) { return a.begin < b.begin; });
  g_current.insert(at, r);
  publish();
  const uint64_t begin = address & ~(kOsPage - 1);
  const uint64_t end = (address + size + kOsPage - 1) & ~(kOsPage - 1);
  if (mprotect(reinterpret_cast<void*>(begin), end - begin, PROT_NONE))
    fatal("cannot protect a managed allocation for host-touch recording: " +
          std::string(std::strerror(errno)));
}

void host_untrack(uint64_t address) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_current.begin(); it != g_current.end(); ++it) {
    if (it->begin != address) continue;
    mprotect(reinterpret_cast<void*>(it->begin & ~(kOsPage - 1)),
             ((it->end + kOsPage - 1) & ~(kOsPage - 1)) - (it->begin & ~(kOsPage - 1)),
             PROT_READ | PROT_WRITE);
    g_current.erase(it); // its state array stays: an old snapshot may still point at it
    publish();
    return;
  }
}

void at_api_boundary() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  const size_t n = std::min(g_count.load(), kMaxTouches);
  if (n == 0) return;
  const Ranges* ranges = g_ranges.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    const Touch& t = g_touches[i];
    if (state().options.mode == Mode::kSanitize) {
      raw::RawHostTouch record{t.time, t.address, t.type, 0};
      state().sink.write(raw::RawType::kHostTouch, record);
    } else {
      g_touched.push_back(t.address);
    }
    (t.type == raw::kPageWrite ? g_writes : g_reads) += 1;
    const Range* r = find(ranges, t.address);
    if (!r) continue; // freed since
    uint8_t& s = r->state[(std::max(t.address, r->begin) - r->begin) / kPage];
    if (s == kProtected) continue;
    uint64_t begin = 0, length = 0;
    span(*r, std::max(t.address, r->begin), begin, length);
    mprotect(reinterpret_cast<void*>(begin), length, PROT_NONE);
    s = kProtected;
  }
  g_count.store(0);
}

std::vector<uint64_t> take_host_touched() {
  if (!enabled()) return {};
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<uint64_t> out;
  out.swap(g_touched);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string host_touch_meta() {
  return "{\"host_touches\":" + std::string(enabled() ? "true" : "false") +
         ",\"host_touch_reads\":" + std::to_string(g_reads) +
         ",\"host_touch_writes\":" + std::to_string(g_writes) +
         ",\"host_touches_lost\":" + std::to_string(g_lost.load()) + "}";
}

} // namespace faultline::inject
