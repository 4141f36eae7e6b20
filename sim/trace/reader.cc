#include "sim/trace/reader.h"

#include "sim/core/error.h"
#include "sim/core/utf8.h"
#include "sim/trace/varint.h"

#include <cerrno>
#include <cstring>
#include <zstd.h>

namespace faultline::trace {
namespace {

constexpr size_t kBufferSize = 1 << 18;
constexpr uint64_t kMaxHeaderBytes = 1 << 24;

} // namespace

void TraceReader::CloseFile::operator()(std::FILE* f) const {
  std::fclose(f);
}

void TraceReader::FreeDctx::operator()(ZSTD_DCtx* d) const {
  ZSTD_freeDCtx(d);
}

TraceReader::TraceReader(const std::string& path) : path_(path) {
  file_.reset(std::fopen(path.c_str(), "rb"));
  if (!file_) throw TraceError(path + ": cannot open trace: " + std::strerror(errno));
  dctx_.reset(ZSTD_createDCtx());
  in_.resize(ZSTD_DStreamInSize());
  buf_.resize(kBufferSize);
  read_header();
}

TraceReader::~TraceReader() = default;

std::string TraceReader::where() const {
  return path_ + ": record #" + std::to_string(record_index_) + " (" + record_kind_ + ") at byte " +
         std::to_string(record_start_);
}

void TraceReader::fail(const std::string& what) {
  throw TraceError(where() + ": " + what + compressed_damage());
}

// zstd verifies a frame's checksum only at its end, so damaged compressed data can first decode
// into nonsense records. When a record is rejected, the rest of the compressed stream (up to a
// bound, this is an error path) is checked, so that damage is reported as such.
std::string TraceReader::compressed_damage() {
  constexpr uint64_t kMaxScanBytes = uint64_t{64} << 20;
  if (!file_ || !dctx_) return "";
  std::vector<uint8_t> sink(ZSTD_DStreamOutSize());
  uint64_t scanned = 0;
  while (scanned < kMaxScanBytes) {
    if (in_pos_ == in_end_) {
      if (file_eof_) return "";
      in_end_ = std::fread(in_.data(), 1, in_.size(), file_.get());
      in_pos_ = 0;
      if (in_end_ == 0) {
        file_eof_ = true;
        return "";
      }
    }
    ZSTD_inBuffer in{in_.data(), in_end_, in_pos_};
    ZSTD_outBuffer out{sink.data(), sink.size(), 0};
    const size_t ret = ZSTD_decompressStream(dctx_.get(), &out, &in);
    if (ZSTD_isError(ret)) {
      return std::string(" (the compressed data is corrupt: zstd reports \"") +
             ZSTD_getErrorName(ret) + "\" between compressed bytes " +
             std::to_string(compressed_offset_) + " and " +
             std::to_string(compressed_offset_ + (in_end_ - in_pos_)) + ")";
    }
    scanned += in.pos - in_pos_;
    compressed_offset_ += in.pos - in_pos_;
    in_pos_ = in.pos;
  }
  return "";
}

// Makes at least `need` decoded bytes available at pos_; false if the stream ends first.
bool TraceReader::fill(size_t need) {
  if (end_ - pos_ >= need) return true;
  std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
  base_ += pos_;
  end_ -= pos_;
  pos_ = 0;
  if (buf_.size() < need) buf_.resize(need);
  while (end_ < need) {
    if (in_pos_ == in_end_) {
      if (file_eof_) return false;
      in_end_ = std::fread(in_.data(), 1, in_.size(), file_.get());
      in_pos_ = 0;
      if (in_end_ == 0) {
        file_eof_ = true;
        if (frame_remaining_ != 0) {
          throw TraceError(path_ + ": truncated: the compressed stream ends at byte " +
                           std::to_string(compressed_offset_) + " inside a zstd frame (" +
                           std::string(record_kind_) + " record #" + std::to_string(record_index_) +
                           ")");
        }
        return false;
      }
    }
    ZSTD_inBuffer in{in_.data(), in_end_, in_pos_};
    ZSTD_outBuffer out{buf_.data(), buf_.size(), end_};
    const size_t ret = ZSTD_decompressStream(dctx_.get(), &out, &in);
    if (ZSTD_isError(ret)) {
      // zstd does not say where in its input it failed: name the bytes it was given.
      throw TraceError(path_ + ": corrupt compressed data in compressed bytes " +
                       std::to_string(compressed_offset_) + " to " +
                       std::to_string(compressed_offset_ + (in_end_ - in_pos_)) + " (zstd: " +
                       ZSTD_getErrorName(ret) + "); expected a zstd-compressed faultline trace");
    }
    compressed_offset_ += in.pos - in_pos_;
    in_pos_ = in.pos;
    end_ = out.pos;
    frame_remaining_ = ret;
  }
  return true;
}

uint8_t TraceReader::byte() {
  if (pos_ == end_ && !fill(1)) fail("truncated: the trace ends inside this record");
  return buf_[pos_++];
}

uint64_t TraceReader::varint() {
  if (end_ - pos_ >= 10) { // fast path: no bounds checks per byte
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
      const uint8_t b = buf_[pos_++];
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("corrupt varint (more than 10 bytes) at byte " + std::to_string(base_ + pos_));
  }
  return varint_slow();
}

uint64_t TraceReader::varint_slow() {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    const uint8_t b = byte();
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("corrupt varint (more than 10 bytes) at byte " + std::to_string(base_ + pos_));
}

uint32_t TraceReader::u32() {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(byte()) << (8 * i);
  return v;
}

void TraceReader::read_header() {
  if (!fill(kMagic.size())) {
    throw TraceError(path_ + ": byte 0: not a faultline trace (shorter than the 8-byte magic)");
  }
  if (std::memcmp(buf_.data(), kMagic.data(), kMagic.size()) != 0) {
    throw TraceError(path_ + ": byte 0: not a faultline trace (bad magic)");
  }
  pos_ += kMagic.size();
  const uint32_t version = u32();
  if (version < kOldestVersion || version > kVersion) {
    throw TraceError(path_ + ": byte 8: trace format version " + std::to_string(version) +
                     ", this build reads versions " + std::to_string(kOldestVersion) + " to " +
                     std::to_string(kVersion));
  }
  version_ = version;
  const uint32_t length = u32();
  if (length > kMaxHeaderBytes || !fill(length)) {
    throw TraceError(path_ + ": byte 12: header of " + std::to_string(length) +
                     " bytes is larger than the trace or the 16 MiB limit");
  }
  const char* text = reinterpret_cast<const char*>(buf_.data() + pos_);
  metadata_ = nlohmann::json::parse(text, text + length, nullptr, false);
  if (metadata_.is_discarded() || !metadata_.is_object()) {
    throw TraceError(path_ + ": byte 16: header is not a JSON object");
  }
  pos_ += length;
  auto check = [&](const char* key, uint64_t expected) {
    if (!metadata_.contains(key) || metadata_[key] != expected) {
      throw TraceError(path_ + ": header: \"" + key + "\" must be " + std::to_string(expected));
    }
  };
  check("page_size", kPageSize);
  check("access_granularity", kBigPageSize);
  steps_ = parse_steps(metadata_, path_);
  steps_declared_ = metadata_.contains("steps");
  timeline_ = parse_timeline(metadata_, path_, version_);
  program_step_ns_ = parse_program_steps(metadata_, path_, steps_.size());
}

// The record about to be returned is its step's first: a declared start must not be later.
void TraceReader::enter_step(Time time) {
  Step& s = steps_[next_step_];
  if (!steps_declared_) {
    s.start_ns = time;
  } else if (time < s.start_ns) {
    throw TraceError(steps_error(path_, next_step_, "start_ns",
                                 "expected at most " + std::to_string(time) +
                                     " ns, the time of the step's first record (" + where() +
                                     "); got " + std::to_string(s.start_ns)));
  }
  step_ = static_cast<int64_t>(next_step_++);
}

bool TraceReader::next(Record& record) {
  while (!done_) {
    record_start_ = base_ + pos_;
    record_kind_ = "start";
    if (pos_ == end_ && !fill(1)) {
      fail("truncated: the trace ends without its end record (" + std::to_string(timed_records_) +
           " records read)");
    }
    const auto type = static_cast<RecordType>(buf_[pos_++]);
    record.type = type;
    record_kind_ = to_string(type);
    if (type == RecordType::kString) {
      read_string();
      ++record_index_;
      continue;
    }
    if (type == RecordType::kEnd) {
      read_end();
      return false;
    }
    if (type < RecordType::kAlloc || type > RecordType::kSync) {
      record_kind_ = "unknown";
      fail("unknown record type " + std::to_string(static_cast<int>(type)) +
           "; expected 1 to 6 or 127");
    }
    const uint64_t dt = varint();
    if (dt > (uint64_t{1} << 62)) fail("time step of " + std::to_string(dt) + " ns is implausible");
    if (dt > static_cast<uint64_t>(kMaxTraceTime - time_)) {
      fail("time step of " + std::to_string(dt) + " ns takes the trace past 2^62 ns (at " +
           std::to_string(time_) + " ns)");
    }
    time_ += static_cast<Time>(dt);
    switch (type) {
    case RecordType::kAlloc:
      read_alloc(record.alloc);
      break;
    case RecordType::kFree:
      read_free(record.free);
      break;
    case RecordType::kKernel:
      read_kernel(record.kernel);
      break;
    case RecordType::kHostAccess:
      read_host(record.host);
      break;
    default:
      read_sync(record.sync);
      break;
    }
    if (next_step_ < steps_.size() && steps_[next_step_].first_record == timed_records_)
      enter_step(time_);
    ++record_index_;
    ++timed_records_;
    return true;
  }
  return false;
}

void TraceReader::read_string() {
  const uint64_t id = varint();
  if (id != strings_.size()) {
    fail("string id " + std::to_string(id) + " out of sequence; expected " +
         std::to_string(strings_.size()));
  }
  const uint64_t length = varint();
  if (length > kMaxStringBytes) fail("string of " + std::to_string(length) + " bytes; max 65536");
  if (!fill(length)) fail("truncated: the trace ends inside this string");
  const std::string_view text(reinterpret_cast<const char*>(buf_.data() + pos_), length);
  // Names go into JSON (results, timelines, `trace dump`), which holds only UTF-8.
  const size_t bad = utf8_error_offset(text);
  if (bad != text.size()) {
    fail("string " + std::to_string(id) + " is not valid UTF-8 (at byte " +
         std::to_string(base_ + pos_ + bad) + ")");
  }
  strings_.emplace_back(text);
  pos_ += length;
}

void TraceReader::read_alloc(AllocRecord& r) {
  r.time = time_;
  r.id = varint();
  const uint8_t kind = byte();
  if (kind > static_cast<uint8_t>(MemoryKind::kAllocatorBlock)) {
    fail("memory kind " + std::to_string(kind) + "; expected 0 (managed), 1 (device) or 2 (block)");
  }
  r.kind = static_cast<MemoryKind>(kind);
  r.address = varint();
  r.size = varint();
  r.segment = varint();
  if (r.id == 0) fail("allocation id 0 is reserved");
  if (r.size == 0) fail("allocation " + std::to_string(r.id) + " has size 0");
  if (r.address + r.size < r.address) fail("allocation range wraps around the address space");
  if (r.address + r.size > kMaxAddress) {
    fail("allocation " + std::to_string(r.id) +
         " ends past 2^57, beyond any virtual address space");
  }
  if (r.kind == MemoryKind::kAllocatorBlock) {
    auto it = live_.find(r.segment);
    if (it == live_.end() || it->second.kind == MemoryKind::kAllocatorBlock) {
      fail("block " + std::to_string(r.id) + " names segment " + std::to_string(r.segment) +
           ", which is not a live segment");
    }
    // Not bounded by its segment's recorded size: an expandable segment grows under its blocks
    // (and a stitched block spans segments), but never past what any GPU holds.
    if (r.size > kMaxLiveBytes) {
      fail("block " + std::to_string(r.id) + " of " + std::to_string(r.size) +
           " bytes is larger than 1 TiB, more than any GPU holds");
    }
  } else if (r.segment != 0) {
    fail("segment " + std::to_string(r.id) + " names a parent segment; only blocks may");
  } else if (r.size > kMaxLiveBytes - live_bytes_) {
    fail("allocation " + std::to_string(r.id) + " of " + std::to_string(r.size) +
         " bytes takes the live allocations past 1 TiB (" + std::to_string(live_bytes_) +
         " bytes live), more than any GPU holds");
  }
  if (!live_.emplace(r.id, Live{r.kind, r.size}).second) {
    fail("allocation id " + std::to_string(r.id) + " is already live");
  }
  if (r.kind != MemoryKind::kAllocatorBlock) live_bytes_ += r.size;
}

void TraceReader::read_free(FreeRecord& r) {
  r.time = time_;
  r.id = varint();
  auto it = live_.find(r.id);
  if (it == live_.end()) fail("free of allocation " + std::to_string(r.id) + ", which is not live");
  if (it->second.kind != MemoryKind::kAllocatorBlock) live_bytes_ -= it->second.size;
  live_.erase(it);
}

const std::string& TraceReader::name(uint64_t id) {
  if (id >= strings_.size()) fail("kernel name string " + std::to_string(id) + " is not defined");
  return strings_[id];
}

void TraceReader::read_kernel(KernelRecord& r) {
  r.start = time_;
  r.name = name(varint());
  r.stream = static_cast<uint32_t>(varint());
  for (uint32_t* v : {&r.grid.x, &r.grid.y, &r.grid.z, &r.block.x, &r.block.y, &r.block.z}) {
    *v = static_cast<uint32_t>(varint());
  }
  r.duration = static_cast<Time>(varint());
  if (r.duration < 0) fail("kernel duration is negative");
  if (r.duration > kMaxTraceTime - r.start) {
    fail("kernel of " + std::to_string(r.duration) + " ns starting at " + std::to_string(r.start) +
         " ns ends past 2^62 ns");
  }
  r.queued = 0;
  if (version_ >= 2) {
    const uint64_t queued = varint();
    if (queued > static_cast<uint64_t>(kMaxTraceTime - r.start - r.duration))
      fail("kernel queued " + std::to_string(queued) + " ns after its issue at " +
           std::to_string(r.start) + " ns ends past 2^62 ns");
    r.queued = static_cast<Time>(queued);
  }
  const uint64_t nargs = varint();
  r.args.clear();
  for (uint64_t i = 0; i < nargs; ++i) {
    const uint64_t id = varint();
    if (!live_.count(id))
      fail("argument " + std::to_string(i) + " names allocation " + std::to_string(id) +
           ", which is not live");
    r.args.push_back(id);
  }
  const uint64_t count = varint();
  r.accesses.clear();
  uint64_t page = 0;
  Time offset = 0;
  // Most values of an access take one byte: read those here, the rest through varint().
  const auto next = [this] {
    if (pos_ < end_ && !(buf_[pos_] & 0x80)) return static_cast<uint64_t>(buf_[pos_++]);
    return varint();
  };
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t packed = next();
    page += static_cast<uint64_t>(unzigzag(packed >> 2));
    if (page >= kMaxAddress / kBigPageSize) {
      fail("access " + std::to_string(i) + " names big page " + std::to_string(page) +
           ", past 2^57, beyond any virtual address space");
    }
    const uint64_t delta = next();
    if (delta > static_cast<uint64_t>(r.duration - offset)) {
      const uint64_t at = static_cast<uint64_t>(offset) + delta;
      fail("access " + std::to_string(i) + " at offset " +
           (at < delta ? "past 2^64" : std::to_string(at)) +
           " ns lies beyond the kernel's duration of " + std::to_string(r.duration) + " ns");
    }
    offset += static_cast<Time>(delta);
    r.accesses.push_back(Access{page, offset, static_cast<AccessType>(packed & 3)});
  }
}

void TraceReader::read_host(HostAccessRecord& r) {
  r.time = time_;
  r.address = varint();
  r.size = varint();
  const uint8_t type = byte();
  if (type > static_cast<uint8_t>(AccessType::kAtomic)) {
    fail("host access type " + std::to_string(type) + "; expected 0 (read), 1 (write), 2 (atomic)");
  }
  r.type = static_cast<AccessType>(type);
  if (r.size == 0) fail("host access of size 0");
  if (r.size > kMaxLiveBytes)
    fail("host access of " + std::to_string(r.size) + " bytes, past 1 TiB");
  if (r.address > kMaxAddress - r.size)
    fail("host access ends past 2^57, beyond any virtual address space");
}

void TraceReader::read_sync(SyncRecord& r) {
  r.time = time_;
  const uint8_t kind = byte();
  if (kind > static_cast<uint8_t>(SyncKind::kEvent)) {
    fail("sync kind " + std::to_string(kind) + "; expected 0 (device), 1 (stream), 2 (event)");
  }
  r.kind = static_cast<SyncKind>(kind);
  r.stream = static_cast<uint32_t>(varint());
  r.wait = 0;
  if (version_ >= 2) {
    const uint64_t wait = varint();
    if (wait > static_cast<uint64_t>(kMaxTraceTime - r.time))
      fail("sync wait of " + std::to_string(wait) + " ns at " + std::to_string(r.time) +
           " ns ends past 2^62 ns");
    r.wait = static_cast<Time>(wait);
  }
}

void TraceReader::read_end() {
  const uint64_t count = varint();
  if (count != timed_records_) {
    fail("end record counts " + std::to_string(count) + " records but " +
         std::to_string(timed_records_) + " were read");
  }
  if (steps_declared_ && next_step_ < steps_.size()) {
    throw TraceError(steps_error(path_, next_step_, "first_record",
                                 "expected a timed record's index, below the trace's " +
                                     std::to_string(count) + " timed records; got " +
                                     std::to_string(steps_[next_step_].first_record)));
  }
  done_ = true;
  if (pos_ != end_ || fill(1)) fail("unexpected data after the end record");
}

} // namespace faultline::trace
