// The raw sink and the options read from the environment.
#include "tracer/inject/cupti_hooks.h"
#include "tracer/inject/state.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <unistd.h>

namespace faultline::inject {

State& state() {
  static State* s = new State(); // never destroyed: atexit handlers and CUPTI threads outlive it
  return *s;
}

void Sink::open(const std::string& path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) {
    std::fprintf(stderr, "faultline capture: cannot write %s\n", path.c_str());
    _exit(70);
  }
  std::setvbuf(file_, nullptr, _IOFBF, 8 << 20);
  raw::RawFileHeader header{};
  std::memcpy(header.magic, raw::kMagic, sizeof(header.magic));
  header.version = raw::kVersion;
  std::fwrite(&header, sizeof(header), 1, file_);
}

void Sink::write(raw::RawType type, const void* a, uint32_t a_size, const void* b, uint32_t b_size,
                 const void* c, uint32_t c_size) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!file_) return;
  raw::RawRecordHead head{static_cast<uint16_t>(type), 0, a_size + b_size + c_size};
  std::fwrite(&head, sizeof(head), 1, file_);
  std::fwrite(a, 1, a_size, file_);
  if (b_size) std::fwrite(b, 1, b_size, file_);
  if (c_size) std::fwrite(c, 1, c_size, file_);
  ++records_;
}

void Sink::add_dropped(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  dropped_ += n;
}

void Sink::finish() {
  uint64_t dropped = 0, records = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!file_) return;
    dropped = dropped_;
    records = records_;
  }
  raw::RawEnd end{dropped, records};
  write(raw::RawType::kEnd, end);
  std::lock_guard<std::mutex> lock(mutex_);
  std::fclose(file_);
  file_ = nullptr;
}

namespace {

std::string env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

Mode parse_mode(const std::string& text) {
  if (text == "observe") return Mode::kObserve;
  if (text == "timing") return Mode::kTiming;
  if (text == "access") return Mode::kAccess;
  if (text == "sanitize") return Mode::kSanitize;
  if (text == "program") return Mode::kProgram;
  if (text == "run") return Mode::kRun;
  std::fprintf(stderr,
               "faultline capture: FAULTLINE_MODE=%s; expected observe, timing, access, "
               "sanitize, program or run\n",
               text.c_str());
  _exit(70);
}

} // namespace

Options read_options() {
  Options o;
  o.out_path = env("FAULTLINE_RAW_OUT", "");
  if (o.out_path.empty()) {
    std::fprintf(stderr, "faultline capture: FAULTLINE_RAW_OUT is not set\n");
    _exit(70);
  }
  o.mode = parse_mode(env("FAULTLINE_MODE", "observe"));
  o.profiler_range = env("FAULTLINE_RANGE", "all") == "profiler";
  o.managed = env("FAULTLINE_MANAGED", "0") == "1";
  o.margin = std::strtoull(env("FAULTLINE_MARGIN", "2147483648").c_str(), nullptr, 10);
  o.drain_bytes = std::max(
      64ull << 20, std::strtoull(env("FAULTLINE_DRAIN_BYTES", "1073741824").c_str(), nullptr, 10));
  o.drain_every =
      std::max(1ul, std::strtoul(env("FAULTLINE_DRAIN_EVERY", "1").c_str(), nullptr, 10));
  o.flush_forced = env("FAULTLINE_FLUSH", "normal") == "forced";
  o.page_window = std::strtoull(env("FAULTLINE_PAGE_WINDOW", "2199023255552").c_str(), nullptr, 10);
  if (o.page_window < (1ull << 30) || o.page_window > (32ull << 40)) {
    std::fprintf(stderr,
                 "faultline capture: FAULTLINE_PAGE_WINDOW=%llu; expected 1 GiB to 32 TiB\n",
                 static_cast<unsigned long long>(o.page_window));
    _exit(70);
  }
  o.host_touches = env("FAULTLINE_HOST_TOUCHES", "1") == "1";
  o.run_per_kernel = env("FAULTLINE_RUN_PER_KERNEL", "0") == "1";
  o.um_counters = env("FAULTLINE_UM_COUNTERS", "1") == "1";
  o.patch_path = env("FAULTLINE_PATCH", "");
  o.probe = env("FAULTLINE_PROBE", "");
  static const char* const kParts[] = {"activity",        "callbacks",       "no-launches",
                                       "driver-launches", "no-flush-period", "no-sync-activity",
                                       "no-driver-api"};
  for (size_t at = 0; !o.probe.empty() && at <= o.probe.size();) {
    const size_t comma = std::min(o.probe.find(',', at), o.probe.size());
    const std::string part = o.probe.substr(at, comma - at);
    if (std::find(std::begin(kParts), std::end(kParts), part) == std::end(kParts)) {
      std::fprintf(stderr,
                   "faultline capture: FAULTLINE_PROBE=%s: unknown part '%s'; expected a "
                   "comma-separated list of activity, callbacks, no-launches, driver-launches, "
                   "no-flush-period, no-sync-activity, no-driver-api\n",
                   o.probe.c_str(), part.c_str());
      _exit(70);
    }
    at = comma + 1;
  }
  return o;
}

bool Options::probing(const char* part) const {
  for (size_t at = 0; at < probe.size();) {
    const size_t comma = std::min(probe.find(',', at), probe.size());
    if (probe.compare(at, comma - at, part) == 0) return true;
    at = comma + 1;
  }
  return false;
}

namespace {
thread_local bool t_in_tool = false;
} // namespace

bool in_tool() {
  return t_in_tool;
}
ToolScope::ToolScope() : was(t_in_tool) {
  t_in_tool = true;
}
ToolScope::~ToolScope() {
  t_in_tool = was;
}

uint64_t now() {
  if (state().options.mode == Mode::kSanitize) {
    timespec t{};
    clock_gettime(CLOCK_REALTIME, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
  }
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

std::string initial_meta(const Options& o, uint32_t cupti_version) {
  const char* mode = o.mode == Mode::kTiming     ? "timing"
                     : o.mode == Mode::kAccess   ? "access"
                     : o.mode == Mode::kSanitize ? "sanitize"
                     : o.mode == Mode::kProgram  ? "program"
                     : o.mode == Mode::kRun      ? "run"
                                                 : "observe";
  char text[512];
  std::snprintf(
      text, sizeof(text),
      "{\"mode\":\"%s\",\"range\":\"%s\",\"managed\":%s,\"margin\":%llu,"
      "\"drain_bytes\":%llu,\"drain_every\":%u,\"flush\":\"%s\",\"cupti_version\":%u,\"pid\":%d,"
      "\"um_counters\":%s,\"probe\":\"%s\"}",
      mode, o.profiler_range ? "profiler" : "all", o.managed ? "true" : "false",
      static_cast<unsigned long long>(o.margin), static_cast<unsigned long long>(o.drain_bytes),
      o.drain_every, o.flush_forced ? "forced" : "normal", cupti_version, getpid(),
      o.um_counters ? "true" : "false", o.probe.c_str());
  return text;
}

} // namespace faultline::inject
