// Helpers shared by the unit tests: a temporary directory, self-contained GPU and link profiles
// (tests never read configs/, which holds measured data that changes), a valid run config,
// a small valid trace with known contents, and zstd compression of hand-built trace bytes.
//
// Typical use:
//   fltest::TempDir dir;
//   fltest::write_test_profiles(dir.path());   // gpus/testgpu.json, links/testlink.json
//   auto config = faultline::config::parse_run_config(fltest::test_run_config(), "test.json");
//   const std::string trace = fltest::write_small_trace(dir.file("small.fltrace"));
#pragma once

#include "sim/core/error.h"
#include "sim/core/types.h"
#include "sim/trace/writer.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <zstd.h>

namespace fltest {

namespace fs = std::filesystem;
using nlohmann::json;

// A fresh, uniquely named directory under the system temp dir; removed with everything in it
// when the object goes out of scope. Not copyable.
class TempDir {
public:
  TempDir() {
    static std::atomic<unsigned> counter{0};
    std::random_device rd;
    for (int attempt = 0;; ++attempt) {
      const fs::path candidate =
          fs::temp_directory_path() / ("faultline-test-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(counter++) + "-" + std::to_string(rd()));
      if (fs::create_directory(candidate)) {
        path_ = candidate;
        return;
      }
      if (attempt > 100) throw std::runtime_error("TempDir: cannot create a unique directory");
    }
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  // The path of `name` inside the directory (parent folders are not created).
  std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
  fs::path path_;
};

// Writes `text` to `path` as is, creating parent directories.
// The TraceError message of `f`, or "" when it throws none (which no expected message matches).
inline std::string trace_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const faultline::TraceError& e) {
    return e.what();
  }
  return "";
}

inline void write_text(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline void write_json(const fs::path& path, const json& doc) {
  write_text(path, doc.dump(2));
}

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The "testgpu" profile: round numbers, so expected times can be worked out by hand.
// A batch costs 10 us + 100 ns per fault + 2 us per VA block + 1 us page tables per block.
inline json test_gpu_profile() {
  return {{"name", "testgpu"},
          {"sources", {"unit-test profile with round numbers"}},
          {"memory_bytes", uint64_t{1} << 30},
          {"host_link", "testlink"},
          {"peer_link", "testlink"},
          {"batch_fixed_ns", 10000},
          {"per_vablock_ns", 2000},
          {"per_fault_ns", 100},
          {"page_table_update_ns", 1000},
          {"eviction_ns", 5000},
          {"host_fault_ns", 3000},
          {"fault_parallelism", 64}};
}

// The "testlink" profile (PCIe). Forward: 1 us overhead, 4 GB/s at 4 KB, 16 GB/s at 64 KB,
// 32 GB/s from 2 MB up, so transfer_ns(65536) = 1000 + 4096. Reverse: half those rates.
inline json test_link_profile() {
  return {
      {"name", "testlink"},
      {"sources", {"unit-test profile with round numbers"}},
      {"kind", "pcie"},
      {"forward",
       {{"overhead_ns", 1000}, {"bandwidth_gbps", {{4096, 4.0}, {65536, 16.0}, {2097152, 32.0}}}}},
      {"reverse",
       {{"overhead_ns", 1000}, {"bandwidth_gbps", {{4096, 2.0}, {65536, 8.0}, {2097152, 16.0}}}}}};
}

// Writes dir/gpus/testgpu.json and dir/links/testlink.json and points FAULTLINE_CONFIGS at
// `dir` (process-wide: every later profile lookup in this process reads from there).
inline void write_test_profiles(const fs::path& dir) {
  write_json(dir / "gpus" / "testgpu.json", test_gpu_profile());
  write_json(dir / "links" / "testlink.json", test_link_profile());
  ::setenv("FAULTLINE_CONFIGS", dir.c_str(), 1);
}

// A complete, valid run config using the test profiles (write_test_profiles first): the whole
// footprint fits, driver defaults, the ondemand policy.
inline json test_run_config() {
  return {{"description", "unit test"},
          {"gpu", "testgpu"},
          {"capacity", {{"fraction_of_footprint", 1.0}}},
          {"policy", {{"name", "ondemand"}}}};
}

// zstd-compresses `content` as one frame with a checksum, like the trace writer.
inline std::string zstd_compress(const std::string& content, int level = 3) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(content.size()), '\0');
  const size_t n = ZSTD_compress2(cctx, out.data(), out.size(), content.data(), content.size());
  ZSTD_freeCCtx(cctx);
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

// Writes `content` (hand-built decompressed trace bytes) zstd-compressed to `path`.
inline void write_zstd_file(const fs::path& path, const std::string& content) {
  write_text(path, zstd_compress(content));
}

// Writes a small valid trace to `path` and returns `path`. Its records, in order:
//   t=0     alloc id 1, managed, 0x10000000, 4 MB (VA blocks 0x80 and 0x81)
//   t=0     alloc id 2, device,  0x20000000, 2 MB
//   t=100   kernel "k0" stream 0, grid 2x1x1, block 128x1x1, duration 1000, args {1}:
//           reads big pages 0x1000..0x1003 (block 0x80) at offsets 0, 100, 200, 300
//   t=1200  host access: write of 64 KB at 0x10000000
//   t=1300  kernel "k1" stream 0, duration 2000, args {1, 2}: writes 0x1020 (block 0x81) at
//           offset 0, reads 0x1000 at offset 500
//   t=3400  sync (device)
//   t=3500  free id 2
//   t=3600  free id 1
// Metadata: {"source": "test_support"}. 8 records, 6 accesses, 2 kernels.
inline std::string write_small_trace(const std::string& path) {
  using namespace faultline;
  using namespace faultline::trace;
  constexpr Addr kManaged = 0x10000000;
  constexpr uint64_t kPage = kManaged / kBigPageSize; // 0x1000
  TraceWriter w(path, {{"source", "test_support"}});
  w.write(AllocRecord{1, MemoryKind::kManaged, kManaged, 2 * kBlockSize, 0, 0});
  w.write(AllocRecord{2, MemoryKind::kDevice, 0x20000000, kBlockSize, 0, 0});
  KernelRecord k0;
  k0.name = "k0";
  k0.start = 100;
  k0.grid = {2, 1, 1};
  k0.block = {128, 1, 1};
  k0.duration = 1000;
  k0.args = {1};
  for (uint64_t i = 0; i < 4; ++i) {
    k0.accesses.push_back({kPage + i, static_cast<Time>(100 * i), AccessType::kRead});
  }
  w.write(k0);
  w.write(HostAccessRecord{1200, kManaged, kBigPageSize, AccessType::kWrite});
  KernelRecord k1;
  k1.name = "k1";
  k1.start = 1300;
  k1.duration = 2000;
  k1.args = {1, 2};
  k1.accesses = {{kPage + kBigPagesPerBlock, 0, AccessType::kWrite},
                 {kPage, 500, AccessType::kRead}};
  w.write(k1);
  w.write(SyncRecord{3400, SyncKind::kDevice, 0});
  w.write(FreeRecord{2, 3500});
  w.write(FreeRecord{1, 3600});
  w.close();
  return path;
}

} // namespace fltest
