// Streaming trace reader: decompresses and decodes one record at a time, so a trace of any
// length is read in bounded memory (one kernel's accesses at most).
#pragma once

#include "sim/trace/format.h"
#include "sim/trace/steps.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

typedef struct ZSTD_DCtx_s ZSTD_DCtx;

namespace faultline::trace {

// Contract: next() returns records in file order and false once the trailer has been read and
// checked. Any defect (bad magic, wrong version, corrupt or truncated data, a record that
// refers to an unknown allocation) throws TraceError naming the file, the record number and
// the byte offset in the decompressed stream (or the compressed offset for zstd errors),
// and so does a header "steps" value that the records contradict (sim/trace/steps.h), and
// allocations that add up to more than kMaxLiveBytes live at once (sim/trace/format.h).
class TraceReader {
public:
  explicit TraceReader(const std::string& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const nlohmann::json& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }
  bool next(Record& record);
  // Number of records returned so far.
  uint64_t records() const { return timed_records_; }
  // Where the last returned record started, for messages from the record's consumer.
  std::string where() const;
  // The trace's steps (at least one; see parse_steps) and whether its header declares them.
  const std::vector<Step>& steps() const { return steps_; }
  bool steps_declared() const { return steps_declared_; }
  // The trace's format version, what its times mean, and the program's own step times (empty
  // when the header has none).
  uint32_t version() const { return version_; }
  Timeline timeline() const { return timeline_; }
  const std::vector<Time>& program_step_ns() const { return program_step_ns_; }
  // The step of the last returned record: -1 for set-up records before step 0.
  int64_t step() const { return step_; }

private:
  bool fill(size_t need);
  uint8_t byte();
  uint64_t varint();
  uint64_t varint_slow();
  uint32_t u32();
  void read_header();
  void read_string();
  void read_alloc(AllocRecord& r);
  void read_free(FreeRecord& r);
  void read_kernel(KernelRecord& r);
  void read_host(HostAccessRecord& r);
  void read_sync(SyncRecord& r);
  void read_end();
  void enter_step(Time time);
  const std::string& name(uint64_t id);
  [[noreturn]] void fail(const std::string& what);
  std::string compressed_damage();

  std::string path_;
  // Owned so that a constructor that throws (a bad header) leaks neither.
  struct CloseFile {
    void operator()(std::FILE* f) const;
  };
  struct FreeDctx {
    void operator()(ZSTD_DCtx* d) const;
  };
  std::unique_ptr<std::FILE, CloseFile> file_;
  std::unique_ptr<ZSTD_DCtx, FreeDctx> dctx_;
  std::vector<uint8_t> in_;
  size_t in_pos_ = 0, in_end_ = 0;
  uint64_t compressed_offset_ = 0;
  size_t frame_remaining_ = 1; // last ZSTD_decompressStream hint; 0 = frame complete
  bool file_eof_ = false;
  std::vector<uint8_t> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t base_ = 0; // decompressed offset of buf_[0]
  uint64_t record_start_ = 0;
  uint64_t record_index_ = 0; // all records, strings included
  uint64_t timed_records_ = 0;
  const char* record_kind_ = "header";
  Time time_ = 0;
  bool done_ = false;
  nlohmann::json metadata_;
  std::vector<std::string> strings_;
  struct Live {
    MemoryKind kind;
    Bytes size;
  };
  std::unordered_map<uint64_t, Live> live_;
  Bytes live_bytes_ = 0; // managed and device allocations (blocks lie inside segments)
  std::vector<Step> steps_;
  bool steps_declared_ = false;
  uint32_t version_ = kVersion;
  Timeline timeline_ = Timeline::kSerial;
  std::vector<Time> program_step_ns_;
  size_t next_step_ = 0; // the step whose first record comes next
  int64_t step_ = -1;
};

} // namespace faultline::trace
