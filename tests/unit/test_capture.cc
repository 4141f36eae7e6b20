// The capture converter (tracer/convert/): raw streams recorded on an H200 turned into traces
// whose access sets match what the microbenchmarks are known to touch, argument matching,
// determinism, and the diagnostics for broken raw streams, mismatched passes and bad PyTorch
// allocator histories.
#include "capture_support.h"
#include "sim/core/error.h"
#include "sim/trace/format.h"
#include "sim/trace/reader.h"
#include "test_support.h"
#include "tracer/capture/observe.h"
#include "tracer/convert/access_sets.h"
#include "tracer/convert/assemble.h"
#include "tracer/convert/passes.h"
#include "tracer/convert/raw_reader.h"
#include "tracer/convert/torch_history.h"
#include "tracer/raw/managed_budget.h"
#include "tracer/raw/raw_format.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace captest;

TEST_CASE("capture: strided microbenchmark pages match the expectation", "[capture]") {
  check_against_expectation("strided");
}

TEST_CASE("capture: stream microbenchmark pages match the expectation", "[capture]") {
  check_against_expectation("stream");
}

TEST_CASE("capture: strided kernels name the managed allocation through interior pointers",
          "[capture]") {
  fltest::TempDir dir;
  const std::string out = dir.file("strided.fltrace");
  convert("strided", out);
  const Contents c = read_trace(out);
  const auto m = managed(c);
  REQUIRE(m.size() == 1);
  REQUIRE(c.kernels.size() == 6);
  for (const auto& k : c.kernels) {
    INFO(k.name);
    CHECK(std::find(k.args.begin(), k.args.end(), m[0].id) != k.args.end());
  }
}

TEST_CASE("capture: mlp with PyTorch history has blocks in live segments and named arguments",
          "[capture]") {
  fltest::TempDir dir;
  const std::string out = dir.file("mlp.fltrace");
  const json summary = convert("mlp", out, true);
  const Contents c = read_trace(out);
  std::set<uint64_t> block_ids;
  for (const auto& a : c.allocs)
    if (a.kind == trace::MemoryKind::kAllocatorBlock) block_ids.insert(a.id);
  REQUIRE(!block_ids.empty());
  CHECK(summary["blocks"] == block_ids.size());
  CHECK(summary["unplaced_block_events"] == 0);
  REQUIRE(c.segment_live_at_block.size() == block_ids.size());
  for (size_t i = 0; i < c.segment_live_at_block.size(); ++i) {
    INFO("block #" << i);
    CHECK(c.segment_live_at_block[i]);
  }
  REQUIRE(!c.kernels.empty());
  size_t named = 0, naming_blocks = 0;
  for (const auto& k : c.kernels) {
    named += !k.args.empty();
    naming_blocks += std::any_of(k.args.begin(), k.args.end(),
                                 [&](uint64_t id) { return block_ids.count(id) > 0; });
  }
  INFO(named << " of " << c.kernels.size() << " operations name an argument, " << naming_blocks
             << " name a block");
  CHECK(named * 4 >= c.kernels.size() * 3);
  CHECK(naming_blocks * 2 >= c.kernels.size());
}

TEST_CASE("capture: converting the same inputs twice gives identical files", "[capture]") {
  fltest::TempDir dir;
  for (auto [prog, history] : {std::pair{"stream", false}, std::pair{"mlp", true}}) {
    INFO(prog);
    const std::string a = dir.file(std::string(prog) + "-a.fltrace");
    const std::string b = dir.file(std::string(prog) + "-b.fltrace");
    convert(prog, a, history);
    convert(prog, b, history);
    CHECK(fltest::read_text(a) == fltest::read_text(b));
  }
}

TEST_CASE("capture: raw reader reports where and what is wrong", "[capture]") {
  fltest::TempDir dir;
  const std::string good = data("strided-access.raw");
  const RawFile f = split_raw(good);
  REQUIRE(f.records.size() > 10);
  REQUIRE(type_of(f.records.back()) == static_cast<uint16_t>(raw::RawType::kEnd));
  REQUIRE_NOTHROW(read_raw(good));

  SECTION("missing file") {
    const std::string path = dir.file("absent.raw");
    const std::string msg = raw_error(path);
    CHECK_THAT(msg, Contains(path));
    CHECK_THAT(msg, Contains("cannot open"));
  }
  SECTION("bad magic") {
    std::string b = join(f);
    b[0] = 'X';
    const std::string path = write_raw(dir, "magic.raw", b);
    const std::string msg = raw_error(path);
    CHECK_THAT(msg, Contains(path + ": byte 0:"));
    CHECK_THAT(msg, Contains("bad magic"));
  }
  SECTION("wrong version") {
    std::string b = join(f);
    const uint32_t version = raw::kVersion + 1;
    std::memcpy(b.data() + 8, &version, 4);
    const std::string path = write_raw(dir, "version.raw", b);
    const std::string msg = raw_error(path);
    CHECK_THAT(msg, Contains(path + ": byte 8:"));
    CHECK_THAT(msg, Contains("version " + std::to_string(version)));
  }
  SECTION("truncated inside a payload") {
    const size_t i = index_of_type(f, raw::RawType::kLaunch, 2);
    const std::string b = join(f).substr(0, offset_of(f, i) + sizeof(raw::RawRecordHead) + 10);
    const std::string path = write_raw(dir, "cut-payload.raw", b);
    const std::string msg = raw_error(path);
    check_where(msg, path, f, i);
    CHECK_THAT(msg, Contains("truncated"));
    CHECK_THAT(msg, Contains("runs past the end"));
  }
  SECTION("truncated inside a record head") {
    const size_t i = index_of_type(f, raw::RawType::kUm, 100);
    const std::string path = write_raw(dir, "cut-head.raw", join(f).substr(0, offset_of(f, i) + 5));
    const std::string msg = raw_error(path);
    check_where(msg, path, f, i);
    CHECK_THAT(msg, Contains("ends inside a record head"));
  }
  SECTION("payload of the wrong size") {
    RawFile broken = f;
    const size_t i = index_of_type(f, raw::RawType::kAlloc);
    std::string& rec = broken.records[i];
    rec.resize(rec.size() - 8); // drop the last field and say so in the head
    const uint32_t size = static_cast<uint32_t>(rec.size() - sizeof(raw::RawRecordHead));
    std::memcpy(rec.data() + 4, &size, 4);
    const std::string path = write_raw(dir, "size.raw", join(broken));
    const std::string msg = raw_error(path);
    check_where(msg, path, f, i);
    CHECK_THAT(msg, Contains("alloc payload of " + std::to_string(size) + " bytes"));
    CHECK_THAT(msg, Contains("expected " + std::to_string(sizeof(raw::RawAlloc))));
  }
  SECTION("launch payload whose name and words do not fit") {
    RawFile broken = f;
    const size_t i = index_of_type(f, raw::RawType::kLaunch, 1);
    broken.records[i] += std::string(8, '\0'); // one word more than n_words says
    const uint32_t size = static_cast<uint32_t>(broken.records[i].size() - 8);
    std::memcpy(broken.records[i].data() + 4, &size, 4);
    const std::string path = write_raw(dir, "launch.raw", join(broken));
    const std::string msg = raw_error(path);
    check_where(msg, path, f, i);
    CHECK_THAT(msg, Contains("launch payload of " + std::to_string(size) + " bytes"));
  }
  SECTION("unknown record type") {
    RawFile broken = f;
    const size_t i = index_of_type(f, raw::RawType::kKernelAct, 3);
    const uint16_t type = 9;
    std::memcpy(broken.records[i].data(), &type, 2);
    const std::string path = write_raw(dir, "type.raw", join(broken));
    const std::string msg = raw_error(path);
    check_where(msg, path, f, i);
    CHECK_THAT(msg, Contains("unknown record type 9"));
  }
  SECTION("an allocation past 2^57, or of more than 1 TiB") {
    // Found by fuzzing: the converter listed every page of one a kernel's arguments named.
    const size_t i = index_of_type(f, raw::RawType::kAlloc);
    raw::RawAlloc a;
    std::memcpy(&a, f.records[i].data() + sizeof(raw::RawRecordHead), sizeof(a));
    const auto error_with = [&](uint64_t bytes) {
      RawFile broken = f;
      raw::RawAlloc big = a;
      big.bytes = bytes;
      std::memcpy(broken.records[i].data() + sizeof(raw::RawRecordHead), &big, sizeof(big));
      const std::string path = write_raw(dir, "huge-alloc.raw", join(broken));
      const std::string msg = raw_error(path);
      check_where(msg, path, f, i);
      return msg;
    };
    CHECK_THAT(error_with((uint64_t{1} << 57) + 1),
               Contains("allocation of 144115188075855873 bytes at address " +
                        std::to_string(a.address) + " ends past 2^57"));
    REQUIRE(a.address < (uint64_t{1} << 50));
    CHECK_THAT(error_with(uint64_t{1} << 41),
               Contains("allocation of 2199023255552 bytes is larger than 1 TiB"));
  }
  SECTION("a migration record past its 2 MB block") { // found by fuzzing: a walk of terabytes
    RawFile broken = f;
    size_t i = 0;
    raw::RawUm u{};
    for (size_t nth = 0;; ++nth) { // the first migration record
      i = index_of_type(f, raw::RawType::kUm, nth);
      std::memcpy(&u, f.records[i].data() + sizeof(raw::RawRecordHead), sizeof(u));
      if (u.counter == static_cast<uint32_t>(raw::UmCounter::kHtoD) ||
          u.counter == static_cast<uint32_t>(raw::UmCounter::kDtoH))
        break;
    }
    u.value = uint64_t{1} << 40;
    std::memcpy(broken.records[i].data() + sizeof(raw::RawRecordHead), &u, sizeof(u));
    const std::string path = write_raw(dir, "huge-migration.raw", join(broken));
    const std::string msg = raw_error(path);
    check_where(msg, path, f, i);
    CHECK_THAT(msg, Contains("a migration of 1099511627776 bytes at address " +
                             std::to_string(u.address) + " crosses its 2 MB block"));
  }
  SECTION("record after the end record") {
    RawFile broken = f;
    broken.records.push_back(f.records[0]); // a meta record
    const std::string path = write_raw(dir, "after-end.raw", join(broken));
    const std::string msg = raw_error(path);
    check_where(msg, path, broken, broken.records.size() - 1);
    CHECK_THAT(msg, Contains("after the end record"));
  }
  SECTION("no end record") {
    RawFile broken = f;
    broken.records.pop_back(); // a cut exactly at a record boundary
    const std::string path = write_raw(dir, "no-end.raw", join(broken));
    const std::string msg = raw_error(path);
    check_where(msg, path, broken, broken.records.size()); // where the end record should be
    CHECK_THAT(msg, Contains("no end record"));
  }
}

TEST_CASE("capture: passes of different programs do not align", "[capture]") {
  fltest::TempDir dir;
  ConvertRequest request;
  request.timing_path = data("strided-timing.raw");
  request.access_path = data("stream-access.raw");
  request.out_path = dir.file("mixed.fltrace");
  const std::string msg = fltest::trace_error_of([&] { convert_capture(request); });
  CHECK_THAT(msg, Contains(request.timing_path + " and " + request.access_path));
  CHECK_THAT(msg, Contains("allocations"));
  CHECK_THAT(msg, Contains("timing pass made 1 allocations, the access pass 2"));
}

TEST_CASE("capture: an operation launched differently in the two passes is named", "[capture]") {
  fltest::TempDir dir;
  RawFile f = split_raw(data("strided-access.raw"));
  std::string& launch = f.records[index_of_type(f, raw::RawType::kLaunch, 3)];
  const size_t grid_x = sizeof(raw::RawRecordHead) + offsetof(raw::RawLaunch, grid);
  uint32_t grid;
  std::memcpy(&grid, launch.data() + grid_x, 4);
  grid += 1;
  std::memcpy(launch.data() + grid_x, &grid, 4);
  const RawStream timing = read_raw(data("strided-timing.raw"));
  const RawStream access = read_raw(write_raw(dir, "grid.raw", join(f)));
  const std::string msg = fltest::trace_error_of(
      [&] { align_passes(timing, build_pass(timing), access, build_pass(access)); });
  CHECK_THAT(msg, Contains("disagree at operation #3"));
  CHECK_THAT(msg, Contains("grid (" + std::to_string(grid) + ","));
}

TEST_CASE("capture: an operation without its activity record is reported", "[capture]") {
  fltest::TempDir dir;
  RawFile f = split_raw(data("strided-access.raw"));
  raw::RawLaunch launch;
  std::memcpy(&launch, f.records[index_of_type(f, raw::RawType::kLaunch, 2)].data() + 8,
              sizeof(launch));
  const auto this_launch = [&](const std::string& rec) {
    // Only a kernel activity record holds a RawKernelAct: read none from a shorter record.
    if (type_of(rec) != static_cast<uint16_t>(raw::RawType::kKernelAct)) return false;
    raw::RawKernelAct act;
    std::memcpy(&act, rec.data() + 8, sizeof(act));
    return act.corr == launch.corr_driver || act.corr == launch.corr_runtime;
  };
  const size_t before = f.records.size();
  f.records.erase(std::remove_if(f.records.begin(), f.records.end(), this_launch), f.records.end());
  REQUIRE(f.records.size() == before - 1);
  ConvertRequest request;
  request.timing_path = data("strided-timing.raw");
  request.access_path = write_raw(dir, "no-act.raw", join(f));
  request.out_path = dir.file("out.fltrace");
  const std::string msg = fltest::trace_error_of([&] { convert_capture(request); });
  CHECK_THAT(msg, Contains(request.access_path + ": operation #2 ("));
  CHECK_THAT(msg, Contains("touch_strided("));
  CHECK_THAT(msg, Contains("has no activity record"));
}

TEST_CASE("capture: access sets need an access-mode pass", "[capture]") {
  const RawStream timing = read_raw(data("strided-timing.raw"));
  const Pass pass = build_pass(timing);
  REQUIRE(!pass.ops.empty());
  const std::string msg = fltest::trace_error_of([&] { assemble_access_sets(timing, pass); });
  CHECK_THAT(msg, Contains(timing.path + ": operation #0"));
  CHECK_THAT(msg, Contains("no eviction"));
}

TEST_CASE("capture: PyTorch allocator history is read with placement bounds", "[capture]") {
  fltest::TempDir dir;
  const std::string path = dir.file("h.json");
  fltest::write_json(path, {{"torch", "2.x"},
                            {"events",
                             {{"segment_alloc", 4096, 8192, 0, 5},
                              {"alloc", 4096, 512, 0, 7},
                              {"free_requested", 4096, 512, 0, 8},
                              {"free_completed", 4096, 512, 0, 9}}}});
  const TorchHistory h = read_torch_history(path);
  CHECK(h.torch_version == "2.x");
  REQUIRE(h.events.size() == 2);
  CHECK((h.events[0].alloc && h.events[0].address == 4096 && h.events[0].size == 512));
  CHECK(h.events[0].time == 7000);
  CHECK(!h.events[1].alloc);
  CHECK(h.events[1].time == 9999);
}

TEST_CASE("capture: PyTorch allocator history errors name the file and JSON path", "[capture]") {
  fltest::TempDir dir;
  const auto history_error = [](const std::string& path) {
    return fltest::trace_error_of([&] { read_torch_history(path); });
  };
  SECTION("missing file") {
    const std::string path = dir.file("absent.json");
    const std::string msg = history_error(path);
    CHECK_THAT(msg, Contains(path));
    CHECK_THAT(msg, Contains("cannot open"));
  }
  SECTION("not JSON") {
    const std::string path = dir.file("garbage.json");
    fltest::write_text(path, "{\"torch\": \"2\", \"events\": [");
    const std::string msg = history_error(path);
    CHECK_THAT(msg, Contains(path));
    CHECK_THAT(msg, Contains("not a JSON object"));
  }
  SECTION("no events") {
    const std::string path = dir.file("no-events.json");
    fltest::write_json(path, {{"torch", "2"}});
    const std::string msg = history_error(path);
    CHECK_THAT(msg, Contains(path + ": /events:"));
    CHECK_THAT(msg, Contains("expected an array"));
  }
  SECTION("an address that is not an integer") {
    json doc = json::parse(fltest::read_text(data("mlp-timing.history.json")));
    REQUIRE(doc["events"].size() > 3);
    doc["events"][3][1] = "0x7f0000000000";
    const std::string path = dir.file("bad-address.json");
    fltest::write_json(path, doc);
    const std::string msg = history_error(path);
    CHECK_THAT(msg, Contains(path + ": /events/3/1:"));
    CHECK_THAT(msg, Contains("non-negative integer"));
  }
}

TEST_CASE("capture: observe summary of the stream access pass", "[capture]") {
  const json s = observe_summary(read_raw(data("stream-access.raw")));
  CHECK(s["launches"] == 6);
  CHECK(s["copies_and_memsets"] == 4);
  CHECK(s["allocations"] == 2);
  CHECK(s["dropped_records"] == 0);
  CHECK(s["gpu"] == "NVIDIA H200");
}

TEST_CASE("the managed-memory guard refuses what would exceed free memory minus the margin",
          "[capture]") {
  using faultline::raw::managed_refusal;
  const uint64_t GiB = 1ull << 30;
  CHECK(managed_refusal(0, 0, 10 * GiB, 100 * GiB, 2 * GiB).empty());
  CHECK(managed_refusal(50 * GiB, 40 * GiB, 8 * GiB, 100 * GiB, 2 * GiB).empty()); // exactly at
  const std::string refusal = managed_refusal(50 * GiB, 40 * GiB, 8 * GiB + 1, 100 * GiB, 2 * GiB);
  CHECK_THAT(refusal, Contains("refusing a managed allocation of 8589934593 bytes"));
  CHECK_THAT(refusal, Contains("would reach 105226698753 bytes"));
  CHECK_THAT(refusal, Contains("minus the margin of 2147483648 bytes"));
  CHECK_FALSE(managed_refusal(0, 0, 1, 1 * GiB, 2 * GiB).empty());      // margin above free memory
  CHECK_FALSE(managed_refusal(0, 0, UINT64_MAX, 100 * GiB, 0).empty()); // no wrap-around
}

TEST_CASE("capture: a block whose segment the tracer never saw does not hold back the others",
          "[capture]") {
  fltest::TempDir dir;
  json history = json::parse(fltest::read_text(data("mlp-timing.history.json")));
  // An allocation at an address no recorded segment holds, early in the history.
  history["events"].insert(history["events"].begin() + 2,
                           json::array({"alloc", 16, 4096, 0, history["events"][1][4]}));
  const std::string history_path = dir.file("history.json");
  fltest::write_text(history_path, history.dump());
  ConvertRequest request;
  request.timing_path = data("mlp-timing.raw");
  request.access_path = data("mlp-access.raw");
  request.history_path = history_path;
  request.out_path = dir.file("mlp.fltrace");
  const json summary = convert_capture(request);
  CHECK(summary["unplaced_block_events"] == 1);
  CHECK(summary["blocks"] == 44); // every other block is still placed
  size_t naming = 0;
  const Contents c = read_trace(request.out_path);
  std::set<uint64_t> blocks;
  for (const auto& a : c.allocs)
    if (a.kind == trace::MemoryKind::kAllocatorBlock) blocks.insert(a.id);
  for (const auto& k : c.kernels)
    naming +=
        std::any_of(k.args.begin(), k.args.end(), [&](uint64_t id) { return blocks.count(id); });
  CHECK(naming * 2 >= c.kernels.size());
}

TEST_CASE("capture: kernel names are cut below the trace's limit, keeping them distinct",
          "[capture]") {
  const std::string a(10000, 'a'), b = std::string(9999, 'a') + "b";
  const std::string short_name = "_Z4fillPfmf";
  CHECK(demangle(short_name) == "fill(float*, unsigned long, float)");
  CHECK(demangle(a).size() == 4096);
  CHECK(demangle(a) != demangle(b));
  CHECK(demangle(a).substr(0, 100) == a.substr(0, 100));
}

TEST_CASE("capture: the timing pass's report of its own cost reaches the trace's header",
          "[capture]") {
  fltest::TempDir dir;
  // The recorded stream with one more meta record before its end record, as a timing pass that
  // measured itself and ran under a cost probe writes it.
  std::string raw = fltest::read_text(data("mlp-timing.raw"));
  const size_t end_at = raw.size() - sizeof(raw::RawRecordHead) - sizeof(raw::RawEnd);
  raw::RawRecordHead end_head{};
  std::memcpy(&end_head, raw.data() + end_at, sizeof(end_head));
  REQUIRE(end_head.type == static_cast<uint16_t>(raw::RawType::kEnd));
  const std::string text = R"({"timing_launches":7,"timing_launch_cost_median_ns":900,)"
                           R"("timing_launch_cost_p90_ns":2500,"probe":"no-flush-period"})";
  raw::RawRecordHead head{static_cast<uint16_t>(raw::RawType::kMeta), 0,
                          static_cast<uint32_t>(text.size())};
  raw.insert(end_at, std::string(reinterpret_cast<const char*>(&head), sizeof(head)) + text);
  const std::string timing = dir.file("mlp-timing.raw");
  fltest::write_text(timing, raw);

  ConvertRequest request;
  request.timing_path = timing;
  request.access_path = data("mlp-access.raw");
  request.history_path = data("mlp-timing.history.json");
  request.out_path = dir.file("probed.fltrace");
  convert_capture(request);
  const json probed = trace::TraceReader(request.out_path).metadata()["capture"]["timing"];
  CHECK(probed == json{{"timing_launches", 7},
                       {"timing_launch_cost_median_ns", 900},
                       {"timing_launch_cost_p90_ns", 2500},
                       {"probe", "no-flush-period"}});

  // A stream recorded before the pass reported itself: an empty report, never a guess.
  const std::string plain = dir.file("plain.fltrace");
  convert("mlp", plain, true);
  CHECK(trace::TraceReader(plain).metadata()["capture"]["timing"] == json::object());
}
