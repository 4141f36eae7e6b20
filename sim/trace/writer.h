// Streaming trace writer: encodes records and compresses them with zstd as they come.
#pragma once

#include "sim/trace/format.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

typedef struct ZSTD_CCtx_s ZSTD_CCtx;

namespace faultline::trace {

// Contract: records are written in time order (a record earlier than its predecessor is an
// error); close() must be called to write the trailer, else readers report a truncated trace.
class TraceWriter {
public:
  TraceWriter(const std::string& path, const nlohmann::json& metadata, int zstd_level = 9);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void write(const AllocRecord& r);
  void write(const FreeRecord& r);
  void write(const KernelRecord& r);
  void write(const HostAccessRecord& r);
  void write(const SyncRecord& r);
  void write(const Record& r);
  void close();

  uint64_t records() const { return records_; }
  uint64_t raw_bytes() const { return raw_bytes_; }

private:
  void begin(RecordType type, Time time);
  uint64_t string_id(const std::string& s);
  void flush(bool end);

  std::string path_;
  std::FILE* file_ = nullptr;
  ZSTD_CCtx* cctx_ = nullptr;
  std::string buf_;
  std::string out_;
  std::map<std::string, uint64_t> strings_;
  Time last_time_ = 0;
  uint64_t records_ = 0;
  uint64_t raw_bytes_ = 0;
  bool closed_ = false;
};

} // namespace faultline::trace
