// `faultline run --per-kernel`: each operation's row from CUPTI's records in the run's raw
// stream (sim/program/kernel_rows.h), on streams written by hand.
#include "sim/program/kernel_rows.h"

#include <catch2/catch.hpp>

using namespace faultline;
using nlohmann::json;

namespace {

capture::ApiEvent launch(const std::string& name, uint32_t driver, uint32_t runtime) {
  capture::ApiEvent e;
  e.type = raw::RawType::kLaunch;
  e.name = name;
  e.launch.corr_driver = driver;
  e.launch.corr_runtime = runtime;
  return e;
}

capture::ApiEvent copy(uint32_t corr, uint64_t bytes, uint32_t op, uint32_t kind) {
  capture::ApiEvent e;
  e.type = raw::RawType::kCopy;
  e.copy.corr = corr;
  e.copy.bytes = bytes;
  e.copy.op = op;
  e.copy.kind = kind;
  return e;
}

raw::RawUm um(raw::UmCounter counter, uint64_t start, uint64_t value) {
  return {start, start + 10, 0x1000, value, static_cast<uint32_t>(counter), 0, 0, 0};
}

} // namespace

TEST_CASE("run --per-kernel: rows in launch order, times and unified-memory records inside each",
          "[program]") {
  capture::RawStream raw;
  raw.api.push_back(launch("gemm", 11, 0));    // matched by its driver call
  raw.api.push_back(copy(12, 0, 0, 1));        // no bytes: not an operation the run counts
  raw.api.push_back(copy(13, 4096, 0, 1));     // a copy to the GPU
  raw.api.push_back(launch("relu", 20, 14));   // matched by the runtime call around it
  raw.api.push_back(launch("graphed", 30, 0)); // CUPTI has no record of it
  capture::ApiEvent sync;
  sync.type = raw::RawType::kSync;
  raw.api.push_back(sync); // not an operation
  raw.kernels.push_back({1000, 1500, 11, 7, 0, 0});
  raw.kernels.push_back({2000, 2600, 14, 7, 0, 0});
  raw.copies.push_back({1600, 1700, 4096, 13, 7, 0, 1});
  raw.um.push_back(um(raw::UmCounter::kGpuFault, 1100, 5));
  raw.um.push_back(um(raw::UmCounter::kGpuFault, 1500, 2)); // at the end: inside
  raw.um.push_back(um(raw::UmCounter::kHtoD, 1200, 65536));
  raw.um.push_back(um(raw::UmCounter::kGpuFault, 1550, 9)); // between operations: no one's
  raw.um.push_back(um(raw::UmCounter::kDtoH, 2100, 2 << 20));
  raw.um.push_back(um(raw::UmCounter::kGpuFault, 2000, 1));

  const json rows = program::kernel_rows(raw);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0] == json{{"index", 0},
                        {"name", "gemm"},
                        {"start_ns", 0},
                        {"end_ns", 500},
                        {"gpu_ns", 500},
                        {"gpu_faults", 7},
                        {"fault_records", 2},
                        {"bytes_host_to_gpu", 65536},
                        {"bytes_gpu_to_host", 0}});
  CHECK(rows[1]["name"] == "[memcpy HtoD]");
  CHECK(rows[1]["gpu_ns"] == 100);
  CHECK(rows[1]["gpu_faults"] == 0);
  CHECK(rows[2]["name"] == "relu");
  CHECK(rows[2]["start_ns"] == 1000);
  CHECK(rows[2]["gpu_faults"] == 1);
  CHECK(rows[2]["bytes_gpu_to_host"] == 2 << 20);
  CHECK(rows[3] == json{{"index", 3}, {"name", "graphed"}, {"gpu_ns", nullptr}});

  // Without the counters the rows keep their times and leave the counts out, not zero.
  const json times = program::kernel_rows(raw, false);
  REQUIRE(times.size() == 4);
  CHECK(times[0] ==
        json{{"index", 0}, {"name", "gemm"}, {"start_ns", 0}, {"end_ns", 500}, {"gpu_ns", 500}});
  CHECK_FALSE(times[2].contains("gpu_faults"));
  CHECK(times[3] == rows[3]);
}

TEST_CASE("run --per-kernel: a stream with no CUPTI records gives rows without times",
          "[program]") {
  capture::RawStream raw;
  raw.api.push_back(launch("k", 1, 0));
  const json rows = program::kernel_rows(raw);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["gpu_ns"].is_null());
  CHECK(program::kernel_rows(capture::RawStream{}).empty());
}
