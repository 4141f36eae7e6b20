#include "sim/trace/format.h"

namespace faultline {

const char* to_string(AccessType type) {
  switch (type) {
  case AccessType::kRead:
    return "read";
  case AccessType::kWrite:
    return "write";
  case AccessType::kAtomic:
    return "atomic";
  case AccessType::kPrefetch:
    return "prefetch";
  }
  return "?";
}

} // namespace faultline

namespace faultline::trace {

const char* to_string(RecordType type) {
  switch (type) {
  case RecordType::kString:
    return "string";
  case RecordType::kAlloc:
    return "alloc";
  case RecordType::kFree:
    return "free";
  case RecordType::kKernel:
    return "kernel";
  case RecordType::kHostAccess:
    return "host_access";
  case RecordType::kSync:
    return "sync";
  case RecordType::kEnd:
    return "end";
  }
  return "unknown";
}

const char* to_string(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::kManaged:
    return "managed";
  case MemoryKind::kDevice:
    return "device";
  case MemoryKind::kAllocatorBlock:
    return "block";
  }
  return "?";
}

const char* to_string(SyncKind kind) {
  switch (kind) {
  case SyncKind::kDevice:
    return "device";
  case SyncKind::kStream:
    return "stream";
  case SyncKind::kEvent:
    return "event";
  }
  return "?";
}

const char* to_string(Timeline timeline) {
  return timeline == Timeline::kIssue ? "issue" : "serial";
}

Time Record::time() const {
  switch (type) {
  case RecordType::kAlloc:
    return alloc.time;
  case RecordType::kFree:
    return free.time;
  case RecordType::kKernel:
    return kernel.start;
  case RecordType::kHostAccess:
    return host.time;
  case RecordType::kSync:
    return sync.time;
  default:
    return 0;
  }
}

nlohmann::json default_metadata() {
  return {
      {"format", "faultline-trace"}, {"page_size", kPageSize}, {"access_granularity", kBigPageSize},
      {"source", "unknown"},         {"gpu", "unknown"},       {"driver", "unknown"},
      {"cuda", "unknown"},           {"command", "unknown"}};
}

} // namespace faultline::trace
