// Helpers of the capture converter's tests: converting recorded raw streams, reading traces back,
// comparing access sets with a microbenchmark's declared ones, and taking raw streams apart to
// damage them.
#pragma once

#include "sim/core/error.h"
#include "sim/trace/format.h"
#include "sim/trace/reader.h"
#include "test_support.h"
#include "tracer/convert/assemble.h"
#include "tracer/convert/raw_reader.h"
#include "tracer/raw/raw_format.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace captest {

using namespace faultline;
using namespace faultline::capture;
using Catch::Matchers::Contains;
using nlohmann::json;

inline constexpr uint64_t kBigPage = 64 * 1024;

inline std::string data(const std::string& name) {
  return std::string(FAULTLINE_TEST_DATA) + "/capture/" + name;
}

// Converts tests/data/capture/<prog>-timing.raw and -<access_pass>.raw (and the history, if
// asked) to `out`.
inline json convert(const std::string& prog, const std::string& out, bool history = false,
                    const std::string& access_pass = "access") {
  ConvertRequest request;
  request.timing_path = data(prog + "-timing.raw");
  request.access_path = data(prog + "-" + access_pass + ".raw");
  if (history) request.history_path = data(prog + "-timing.history.json");
  request.out_path = out;
  return convert_capture(request);
}

// A whole trace read back: every alloc record (in order) and every kernel record.
struct Contents {
  std::vector<trace::AllocRecord> allocs;
  std::vector<trace::KernelRecord> kernels;
  std::vector<bool> segment_live_at_block; // per kAllocatorBlock alloc, in order
};

inline Contents read_trace(const std::string& path) {
  trace::TraceReader reader(path);
  trace::Record r;
  Contents c;
  std::map<uint64_t, trace::MemoryKind> live;
  while (reader.next(r)) {
    if (r.type == trace::RecordType::kAlloc) {
      c.allocs.push_back(r.alloc);
      live[r.alloc.id] = r.alloc.kind;
      if (r.alloc.kind == trace::MemoryKind::kAllocatorBlock) {
        auto seg = live.find(r.alloc.segment);
        c.segment_live_at_block.push_back(seg != live.end() &&
                                          seg->second != trace::MemoryKind::kAllocatorBlock);
      }
    } else if (r.type == trace::RecordType::kFree) {
      live.erase(r.free.id);
    } else if (r.type == trace::RecordType::kKernel) {
      c.kernels.push_back(r.kernel);
    }
  }
  return c;
}

inline std::vector<trace::AllocRecord> managed(const Contents& c) {
  std::vector<trace::AllocRecord> out;
  for (const auto& a : c.allocs)
    if (a.kind == trace::MemoryKind::kManaged) out.push_back(a);
  return out;
}

using PageSet = std::vector<std::pair<int64_t, uint64_t>>; // (managed index, page offset)

// A kernel's accesses as (managed allocation index, 64 KB big page from its base), sorted;
// a page outside every managed allocation becomes (-1, big page).
inline PageSet pages_of(const trace::KernelRecord& k, const std::vector<trace::AllocRecord>& m) {
  PageSet out;
  for (const auto& a : k.accesses) {
    const uint64_t addr = a.big_page * kBigPage;
    std::pair<int64_t, uint64_t> p{-1, a.big_page};
    for (size_t i = 0; i < m.size(); ++i)
      if (addr >= m[i].address && addr < m[i].address + m[i].size)
        p = {static_cast<int64_t>(i), (addr - m[i].address) / kBigPage};
    out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The expectation's [alloc_index, first_page, last_page, step] ranges as a sorted PageSet.
inline PageSet expected_pages(const json& ranges) {
  PageSet out;
  for (const auto& r : ranges)
    for (uint64_t p = r[1].get<uint64_t>(); p <= r[2].get<uint64_t>(); p += r[3].get<uint64_t>())
      out.emplace_back(r[0].get<int64_t>(), p);
  std::sort(out.begin(), out.end());
  return out;
}

// Checks a converted microbenchmark trace against <prog>.expect.json.
inline void check_against_expectation(const std::string& prog,
                                      const std::string& access_pass = "access") {
  fltest::TempDir dir;
  const std::string out = dir.file("expectation.fltrace");
  const json summary = convert(prog, out, false, access_pass);
  const json expect = json::parse(fltest::read_text(data(prog + ".expect.json")));
  const Contents c = read_trace(out);
  const auto m = managed(c);
  REQUIRE(m.size() == expect["allocations"].size());
  for (size_t i = 0; i < m.size(); ++i)
    CHECK(m[i].size == expect["allocations"][i].get<uint64_t>());
  const json& ops = expect["operations"];
  REQUIRE(c.kernels.size() == ops.size());
  CHECK(summary["operations"] == ops.size());
  CHECK(summary["untranslated_pages"] == 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    INFO(prog << " operation #" << i << ": " << c.kernels[i].name);
    const std::string name = ops[i]["name"].get<std::string>();
    if (name.front() == '[')
      CHECK(c.kernels[i].name == name);
    else
      CHECK_THAT(c.kernels[i].name, Contains(name + "("));
    CHECK(pages_of(c.kernels[i], m) == expected_pages(ops[i]["pages"]));
  }
}

// A raw stream split into its file header and records (each head + payload, as in the file).
struct RawFile {
  std::string header;
  std::vector<std::string> records;
};

inline uint16_t type_of(const std::string& record) {
  uint16_t t;
  std::memcpy(&t, record.data(), 2);
  return t;
}

inline RawFile split_raw(const std::string& path) {
  const std::string b = fltest::read_text(path);
  RawFile f{b.substr(0, sizeof(raw::RawFileHeader)), {}};
  for (size_t off = f.header.size(); off < b.size();) {
    uint32_t size;
    std::memcpy(&size, b.data() + off + 4, 4);
    f.records.push_back(b.substr(off, sizeof(raw::RawRecordHead) + size));
    off += f.records.back().size();
  }
  return f;
}

inline std::string join(const RawFile& f) {
  std::string out = f.header;
  for (const auto& r : f.records) out += r;
  return out;
}

// Byte offset of record #i in the joined file.
inline size_t offset_of(const RawFile& f, size_t i) {
  size_t off = f.header.size();
  for (size_t k = 0; k < i; ++k) off += f.records[k].size();
  return off;
}

inline size_t index_of_type(const RawFile& f, raw::RawType type, size_t nth = 0) {
  for (size_t i = 0; i < f.records.size(); ++i)
    if (type_of(f.records[i]) == static_cast<uint16_t>(type) && nth-- == 0) return i;
  FAIL("no such record");
  return 0;
}

inline std::string write_raw(const fltest::TempDir& dir, const std::string& name,
                             const std::string& b) {
  const std::string path = dir.file(name);
  fltest::write_text(path, b);
  return path;
}

inline std::string raw_error(const std::string& path) {
  return fltest::trace_error_of([&] { read_raw(path); });
}

// The message names the file and record #i of `f` at its byte offset.
inline void check_where(const std::string& msg, const std::string& path, const RawFile& f,
                        size_t i) {
  CHECK_THAT(msg, Contains(path));
  CHECK_THAT(msg, Contains("record #" + std::to_string(i) + " "));
  CHECK_THAT(msg, Contains("byte " + std::to_string(offset_of(f, i)) + ":"));
}

} // namespace captest
