#include "sim/run/timeline.h"

#include "sim/core/error.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace faultline {
namespace {

constexpr int kGpuPid = 1;
constexpr int kLinkPid = 2;

// Trace-event time is in microseconds; print ns exactly so output never depends on rounding.
std::string micros(Time ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  return buf;
}

} // namespace

Timeline::Timeline(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw Error(path + ": cannot open for writing: " + std::strerror(errno));
  std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", file_);
  for (auto [pid, name] : {std::pair{kGpuPid, "GPU 0"}, std::pair{kLinkPid, "links"}}) {
    std::fprintf(file_,
                 "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"%s\"}}",
                 first_ ? "" : ",\n", pid, name);
    first_ = false;
  }
}

Timeline::~Timeline() {
  if (file_) std::fclose(file_);
}

void Timeline::close() {
  if (!file_) return;
  std::fputs("\n]}\n", file_);
  const bool ok = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok) throw Error(path_ + ": write failed");
}

int Timeline::thread(int pid, const std::string& name) {
  auto [it, fresh] = threads_.emplace(std::pair{pid, name}, static_cast<int>(threads_.size()) + 1);
  if (fresh) {
    std::fprintf(
        file_,
        ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":%s}}",
        pid, it->second, nlohmann::json(name).dump().c_str());
  }
  return it->second;
}

void Timeline::event(const std::string& name, int pid, int tid, Time start, Time end,
                     const std::string& args) {
  std::fprintf(
      file_, ",\n{\"ph\":\"X\",\"name\":%s,\"pid\":%d,\"tid\":%d,\"ts\":%s,\"dur\":%s,\"args\":%s}",
      nlohmann::json(name).dump().c_str(), pid, tid, micros(start).c_str(),
      micros(end - start).c_str(), args.c_str());
}

void Timeline::on_transfer(const std::string& link, Bytes bytes, Transfer t, const char* cause) {
  event(cause, kLinkPid, thread(kLinkPid, link), t.start, t.end,
        "{\"bytes\":" + std::to_string(bytes) + "}");
}

void Timeline::on_fault_batch(unsigned, Time start, Time end, uint64_t faults, uint64_t blocks) {
  event("fault batch", kGpuPid, thread(kGpuPid, "fault batches"), start, end,
        "{\"faults\":" + std::to_string(faults) + ",\"va_blocks\":" + std::to_string(blocks) + "}");
}

void Timeline::on_kernel(unsigned, const KernelRow& row) {
  event(row.name, kGpuPid, thread(kGpuPid, "kernels"), row.start, row.end,
        "{\"index\":" + std::to_string(row.index) + ",\"stall_ns\":" +
            std::to_string(row.stall_ns) + ",\"faults\":" + std::to_string(row.faults) + "}");
}

} // namespace faultline
