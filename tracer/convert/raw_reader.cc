#include "tracer/convert/raw_reader.h"

#include "sim/core/error.h"
#include "sim/core/types.h"
#include "sim/core/utf8.h"
#include "sim/trace/format.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unordered_set>

namespace faultline::capture {
namespace {

using raw::RawType;

class Cursor {
public:
  Cursor(const std::string& path, std::string bytes) : path_(path), bytes_(std::move(bytes)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(path_ + ": record #" + std::to_string(record_) + " at byte " +
                     std::to_string(record_offset_) + ": " + what);
  }
  bool done() const { return offset_ == bytes_.size(); }
  // A defect found after the last record: names the record that should have come next.
  [[noreturn]] void fail_at_end(const std::string& what) {
    ++record_;
    record_offset_ = offset_;
    fail(what);
  }

  // Returns the next record's type and payload; checks the payload fits in the file.
  std::pair<uint16_t, std::string_view> next() {
    ++record_;
    record_offset_ = offset_;
    if (bytes_.size() - offset_ < sizeof(raw::RawRecordHead))
      fail("truncated: the stream ends inside a record head");
    raw::RawRecordHead head;
    std::memcpy(&head, bytes_.data() + offset_, sizeof(head));
    offset_ += sizeof(head);
    if (bytes_.size() - offset_ < head.size)
      fail("truncated: a payload of " + std::to_string(head.size) + " bytes runs past the end");
    std::string_view payload(bytes_.data() + offset_, head.size);
    offset_ += head.size;
    return {head.type, payload};
  }

  template <typename T> T fixed(std::string_view payload, const char* what) const {
    if (payload.size() != sizeof(T))
      fail(std::string(what) + " payload of " + std::to_string(payload.size()) +
           " bytes; expected " + std::to_string(sizeof(T)));
    T value;
    std::memcpy(&value, payload.data(), sizeof(T));
    return value;
  }

  void begin() {
    raw::RawFileHeader header;
    if (bytes_.size() < sizeof(header))
      throw TraceError(path_ + ": byte 0: not a faultline raw stream (shorter than its header)");
    std::memcpy(&header, bytes_.data(), sizeof(header));
    if (std::memcmp(header.magic, raw::kMagic, sizeof(header.magic)) != 0)
      throw TraceError(path_ + ": byte 0: not a faultline raw stream (bad magic)");
    if (header.version != raw::kVersion)
      throw TraceError(path_ + ": byte 8: raw stream version " + std::to_string(header.version) +
                       ", this build reads version " + std::to_string(raw::kVersion));
    offset_ = sizeof(header);
  }

private:
  std::string path_;
  std::string bytes_;
  size_t offset_ = 0;
  size_t record_offset_ = 0;
  int64_t record_ = -1;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open raw stream: " + std::strerror(errno));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void read_launch(const Cursor& c, std::string_view p, ApiEvent& e) {
  if (p.size() < sizeof(raw::RawLaunch))
    c.fail("launch payload of " + std::to_string(p.size()) + " bytes is shorter than its head");
  std::memcpy(&e.launch, p.data(), sizeof(raw::RawLaunch));
  const size_t expected = sizeof(raw::RawLaunch) + e.launch.name_length + 8ull * e.launch.n_words;
  if (p.size() != expected)
    c.fail("launch payload of " + std::to_string(p.size()) + " bytes; its name and " +
           std::to_string(e.launch.n_words) + " words need " + std::to_string(expected));
  e.name.assign(p.data() + sizeof(raw::RawLaunch), e.launch.name_length);
  // The name becomes a trace's string, which is UTF-8 (traces/FORMAT.md).
  const size_t bad = utf8_error_offset(e.name);
  if (bad != e.name.size())
    c.fail("launch's kernel name is not valid UTF-8 (at byte " + std::to_string(bad) +
           " of the name)");
  e.words.resize(e.launch.n_words);
  if (e.launch.n_words > 0) // as for pages: no null pointer to memcpy
    std::memcpy(e.words.data(), p.data() + sizeof(raw::RawLaunch) + e.launch.name_length,
                8ull * e.launch.n_words);
  e.cpu_time = e.launch.cpu_time;
}

void read_pages(const Cursor& c, std::string_view p, ApiEvent& e) {
  if (p.size() < sizeof(raw::RawPages))
    c.fail("pages payload of " + std::to_string(p.size()) + " bytes is shorter than its head");
  std::memcpy(&e.pages, p.data(), sizeof(raw::RawPages));
  const size_t expected = sizeof(raw::RawPages) + 4ull * e.pages.n_entries;
  if (p.size() != expected)
    c.fail("pages payload of " + std::to_string(p.size()) + " bytes; its " +
           std::to_string(e.pages.n_entries) + " entries need " + std::to_string(expected));
  e.entries.resize(e.pages.n_entries);
  if (e.pages.n_entries > 0) // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(e.entries.data(), p.data() + sizeof(raw::RawPages), 4ull * e.pages.n_entries);
}

void read_meta(const Cursor& c, std::string_view p, nlohmann::json& meta) {
  nlohmann::json j = nlohmann::json::parse(p, nullptr, false);
  if (!j.is_object()) c.fail("meta record is not a JSON object");
  meta.update(j);
}

// The driver reports a migration per 2 MB VA block (the captures hold none larger), and the
// converter walks a record's 64 KB pages: a record past its block is corrupt (found by
// fuzzing: one of terabytes took the converter minutes and gigabytes).
raw::RawUm migration_in_one_block(const Cursor& c, const raw::RawUm& u) {
  const auto kind = static_cast<raw::UmCounter>(u.counter);
  if (kind != raw::UmCounter::kHtoD && kind != raw::UmCounter::kDtoH &&
      kind != raw::UmCounter::kDtoD)
    return u;
  if (u.value > kBlockSize || u.address % kBlockSize + u.value > kBlockSize)
    c.fail("unified-memory record: a migration of " + std::to_string(u.value) +
           " bytes at address " + std::to_string(u.address) +
           " crosses its 2 MB block; the driver reports one block a record");
  return u;
}

ApiEvent api_event(const Cursor& c, RawType type, std::string_view p) {
  ApiEvent e;
  e.type = type;
  switch (type) {
  case RawType::kLaunch:
    read_launch(c, p, e);
    break;
  case RawType::kCopy:
    e.copy = c.fixed<raw::RawCopy>(p, "copy");
    e.cpu_time = e.copy.cpu_time;
    break;
  case RawType::kAlloc:
    e.alloc = c.fixed<raw::RawAlloc>(p, "alloc");
    e.cpu_time = e.alloc.cpu_time;
    // As the trace reader: no allocation reaches past 2^57 or holds more than 1 TiB (found by
    // fuzzing: a kernel naming one of 4.4e18 bytes made the converter list its every page).
    if (e.alloc.bytes > trace::kMaxAddress || e.alloc.address > trace::kMaxAddress - e.alloc.bytes)
      c.fail("allocation of " + std::to_string(e.alloc.bytes) + " bytes at address " +
             std::to_string(e.alloc.address) + " ends past 2^57, beyond any virtual address space");
    if (e.alloc.bytes > trace::kMaxLiveBytes)
      c.fail("allocation of " + std::to_string(e.alloc.bytes) +
             " bytes is larger than 1 TiB, more than any GPU holds");
    break;
  case RawType::kFree:
    e.free = c.fixed<raw::RawFree>(p, "free");
    e.cpu_time = e.free.cpu_time;
    break;
  case RawType::kSync:
  case RawType::kGraphLaunch:
    e.sync = c.fixed<raw::RawSync>(p, "sync");
    e.cpu_time = e.sync.cpu_time;
    break;
  case RawType::kRange:
    e.range = c.fixed<raw::RawRange>(p, "range");
    e.cpu_time = e.range.cpu_time;
    break;
  case RawType::kPages:
    read_pages(c, p, e);
    break;
  case RawType::kHostTouch:
    e.touch = c.fixed<raw::RawHostTouch>(p, "host touch");
    e.cpu_time = e.touch.cpu_time;
    break;
  case RawType::kStep:
    e.cpu_time = c.fixed<raw::RawStep>(p, "step").cpu_time;
    break;
  default: // kEvict
    e.evict = c.fixed<raw::RawEvict>(p, "evict");
    e.cpu_time = e.evict.begin;
    break;
  }
  return e;
}

void read_record(Cursor& c, RawStream& s, uint16_t type, std::string_view p) {
  if (s.ended) c.fail("record after the end record");
  switch (static_cast<RawType>(type)) {
  case RawType::kMeta:
    return read_meta(c, p, s.meta);
  case RawType::kLaunch:
  case RawType::kCopy:
  case RawType::kAlloc:
  case RawType::kFree:
  case RawType::kSync:
  case RawType::kRange:
  case RawType::kGraphLaunch:
  case RawType::kEvict:
  case RawType::kPages:
  case RawType::kHostTouch:
  case RawType::kStep:
    return s.api.push_back(api_event(c, static_cast<RawType>(type), p));
  case RawType::kKernelAct:
    return s.kernels.push_back(c.fixed<raw::RawKernelAct>(p, "kernel activity"));
  case RawType::kCopyAct:
    return s.copies.push_back(c.fixed<raw::RawCopyAct>(p, "copy activity"));
  case RawType::kUm:
    return s.um.push_back(migration_in_one_block(c, c.fixed<raw::RawUm>(p, "unified-memory")));
  case RawType::kSyncAct:
    return s.syncs.push_back(c.fixed<raw::RawSyncAct>(p, "sync activity"));
  case RawType::kMemoryAct:
    return s.memory.push_back(c.fixed<raw::RawMemoryAct>(p, "memory activity"));
  case RawType::kApiAct: {
    const auto a = c.fixed<raw::RawApiAct>(p, "call activity");
    if (a.what < 1 || a.what > 7)
      c.fail("call activity: kind " + std::to_string(a.what) + "; expected 1 to 7");
    if (a.end < a.start) c.fail("call activity: ends before it starts");
    return s.calls.push_back(a);
  }
  case RawType::kKernelShape:
    return s.shaped.push_back(c.fixed<raw::RawKernelShape>(p, "kernel activity"));
  case RawType::kDropped:
    s.dropped += c.fixed<raw::RawDropped>(p, "dropped").count;
    return;
  case RawType::kError:
    s.error.assign(p.data(), p.size());
    return;
  case RawType::kEnd:
    c.fixed<raw::RawEnd>(p, "end");
    s.ended = true;
    return;
  }
  c.fail("unknown record type " + std::to_string(type) + "; expected 1 to 7 or 10 to 24");
}

// A synchronisation CUPTI saw whose call the injection library did not record (streams recorded
// before it watched the runtime's synchronisation calls: cudaDeviceSynchronize reaches the
// driver by no callback of its own) becomes an API event at the call's time, so the CPU's wait is
// in the trace all the same. A stream's wait on an event blocks no CPU and stays out.
void add_unrecorded_syncs(RawStream& s) {
  std::unordered_set<uint32_t> recorded;
  for (const ApiEvent& e : s.api)
    if (e.type == RawType::kSync) recorded.insert(e.sync.corr);
  for (const raw::RawSyncAct& a : s.syncs) {
    raw::SyncOp op;
    if (a.type == raw::kActivitySyncContext)
      op = raw::SyncOp::kDevice;
    else if (a.type == raw::kActivitySyncStream)
      op = raw::SyncOp::kStream;
    else if (a.type == raw::kActivitySyncEvent)
      op = raw::SyncOp::kEvent;
    else
      continue;
    if (recorded.count(a.corr)) continue;
    ApiEvent e;
    e.type = RawType::kSync;
    e.cpu_time = a.start;
    e.sync = {a.start, 0, static_cast<uint32_t>(op), a.corr};
    auto at = std::upper_bound(s.api.begin(), s.api.end(), a.start,
                               [](uint64_t t, const ApiEvent& x) { return t < x.cpu_time; });
    s.api.insert(at, std::move(e));
    ++s.synthesized_syncs;
  }
}

} // namespace

RawStream read_raw(const std::string& path) {
  Cursor c(path, slurp(path));
  c.begin();
  RawStream s;
  s.path = path;
  while (!c.done()) {
    auto [type, payload] = c.next();
    read_record(c, s, type, payload);
  }
  if (!s.ended && s.error.empty())
    c.fail_at_end("truncated: the raw stream has no end record (the program did not exit "
                  "normally, or the stream was cut)");
  add_unrecorded_syncs(s);
  return s;
}

} // namespace faultline::capture
