#include "sim/trace/writer.h"

#include "sim/core/error.h"
#include "sim/core/utf8.h"
#include "sim/trace/varint.h"

#include <cstring>
#include <zstd.h>

namespace faultline::trace {
namespace {

constexpr size_t kFlushThreshold = 1 << 20;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

} // namespace

TraceWriter::TraceWriter(const std::string& path, const nlohmann::json& metadata, int zstd_level)
    : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) throw Error(path + ": cannot open for writing: " + std::strerror(errno));
  cctx_ = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, zstd_level);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
  nlohmann::json header = default_metadata();
  for (auto& [key, value] : metadata.items()) header[key] = value;
  const std::string text = header.dump();
  buf_.append(kMagic.data(), kMagic.size());
  put_u32(buf_, kVersion);
  put_u32(buf_, static_cast<uint32_t>(text.size()));
  buf_ += text;
}

TraceWriter::~TraceWriter() {
  if (file_) std::fclose(file_);
  ZSTD_freeCCtx(cctx_);
}

void TraceWriter::begin(RecordType type, Time time) {
  if (closed_) throw Error(path_ + ": write after close");
  if (time < last_time_) {
    throw Error(path_ + ": record " + std::to_string(records_) + " (" + to_string(type) +
                ") at time " + std::to_string(time) + " ns is earlier than its predecessor at " +
                std::to_string(last_time_) + " ns; records must be written in time order");
  }
  buf_.push_back(static_cast<char>(type));
  put_varint(buf_, static_cast<uint64_t>(time - last_time_));
  last_time_ = time;
  ++records_;
}

uint64_t TraceWriter::string_id(const std::string& s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  if (s.size() > kMaxStringBytes)
    throw TraceError(path_ + ": kernel name of " + std::to_string(s.size()) +
                     " bytes; a trace holds names of at most " + std::to_string(kMaxStringBytes));
  if (!valid_utf8(s))
    throw TraceError(path_ + ": kernel name \"" + s.substr(0, utf8_error_offset(s)) +
                     "...\" is not valid UTF-8 (a trace holds UTF-8 names)");
  const uint64_t id = strings_.size();
  strings_.emplace(s, id);
  buf_.push_back(static_cast<char>(RecordType::kString));
  put_varint(buf_, id);
  put_varint(buf_, s.size());
  buf_ += s;
  return id;
}

void TraceWriter::write(const AllocRecord& r) {
  if (r.id == 0) throw Error(path_ + ": allocation id 0 is reserved");
  if (r.size == 0) throw Error(path_ + ": allocation " + std::to_string(r.id) + " has size 0");
  begin(RecordType::kAlloc, r.time);
  put_varint(buf_, r.id);
  buf_.push_back(static_cast<char>(r.kind));
  put_varint(buf_, r.address);
  put_varint(buf_, r.size);
  put_varint(buf_, r.segment);
  flush(false);
}

void TraceWriter::write(const FreeRecord& r) {
  begin(RecordType::kFree, r.time);
  put_varint(buf_, r.id);
  flush(false);
}

void TraceWriter::write(const KernelRecord& r) {
  // Checked before anything is written, so that a refused kernel leaves the trace intact.
  if (r.duration < 0) throw Error(path_ + ": kernel " + r.name + ": negative duration");
  if (r.queued < 0) throw Error(path_ + ": kernel " + r.name + ": negative queue delay");
  Time prev_offset = 0;
  for (const Access& a : r.accesses) {
    if (a.offset < prev_offset || a.offset > r.duration) {
      throw Error(path_ + ": kernel " + r.name + ": access offsets must be non-decreasing and " +
                  "within the kernel's duration");
    }
    prev_offset = a.offset;
  }
  const uint64_t name = string_id(r.name);
  begin(RecordType::kKernel, r.start);
  put_varint(buf_, name);
  put_varint(buf_, r.stream);
  for (uint32_t v : {r.grid.x, r.grid.y, r.grid.z, r.block.x, r.block.y, r.block.z}) {
    put_varint(buf_, v);
  }
  put_varint(buf_, static_cast<uint64_t>(r.duration));
  put_varint(buf_, static_cast<uint64_t>(r.queued));
  put_varint(buf_, r.args.size());
  for (uint64_t a : r.args) put_varint(buf_, a);
  put_varint(buf_, r.accesses.size());
  uint64_t prev_page = 0;
  prev_offset = 0;
  for (const Access& a : r.accesses) {
    const int64_t delta = static_cast<int64_t>(a.big_page - prev_page);
    put_varint(buf_, (zigzag(delta) << 2) | static_cast<uint64_t>(a.type));
    put_varint(buf_, static_cast<uint64_t>(a.offset - prev_offset));
    prev_page = a.big_page;
    prev_offset = a.offset;
  }
  flush(false);
}

void TraceWriter::write(const HostAccessRecord& r) {
  if (r.size == 0 || r.type == AccessType::kPrefetch) {
    throw Error(path_ + ": a host access needs a size and a read, write or atomic type");
  }
  begin(RecordType::kHostAccess, r.time);
  put_varint(buf_, r.address);
  put_varint(buf_, r.size);
  buf_.push_back(static_cast<char>(r.type));
  flush(false);
}

void TraceWriter::write(const SyncRecord& r) {
  if (r.wait < 0) throw Error(path_ + ": sync: negative wait");
  begin(RecordType::kSync, r.time);
  buf_.push_back(static_cast<char>(r.kind));
  put_varint(buf_, r.stream);
  put_varint(buf_, static_cast<uint64_t>(r.wait));
  flush(false);
}

void TraceWriter::write(const Record& r) {
  switch (r.type) {
  case RecordType::kAlloc:
    return write(r.alloc);
  case RecordType::kFree:
    return write(r.free);
  case RecordType::kKernel:
    return write(r.kernel);
  case RecordType::kHostAccess:
    return write(r.host);
  case RecordType::kSync:
    return write(r.sync);
  default:
    throw Error(path_ + ": cannot write a record of type " + to_string(r.type));
  }
}

void TraceWriter::close() {
  if (closed_) return;
  buf_.push_back(static_cast<char>(RecordType::kEnd));
  put_varint(buf_, records_);
  closed_ = true;
  flush(true);
  if (std::fclose(file_) != 0) {
    file_ = nullptr;
    throw Error(path_ + ": write failed: " + std::strerror(errno));
  }
  file_ = nullptr;
}

void TraceWriter::flush(bool end) {
  if (!end && buf_.size() < kFlushThreshold) return;
  raw_bytes_ += buf_.size();
  ZSTD_inBuffer in{buf_.data(), buf_.size(), 0};
  out_.resize(ZSTD_CStreamOutSize());
  const ZSTD_EndDirective mode = end ? ZSTD_e_end : ZSTD_e_continue;
  size_t remaining = 0;
  do {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    remaining = ZSTD_compressStream2(cctx_, &out, &in, mode);
    if (ZSTD_isError(remaining)) throw Error(path_ + ": zstd: " + ZSTD_getErrorName(remaining));
    if (out.pos && std::fwrite(out_.data(), 1, out.pos, file_) != out.pos) {
      throw Error(path_ + ": write failed: " + std::strerror(errno));
    }
  } while (end ? remaining != 0 : in.pos < in.size);
  buf_.clear();
}

} // namespace faultline::trace
