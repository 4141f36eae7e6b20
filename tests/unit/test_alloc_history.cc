// Allocation histories (sim/alloc/history.h) from every source: a PyTorch memory snapshot as
// pickle, JSON and zstd-compressed pickle, the tracer's allocator history and a faultline trace;
// the pickle decoder on every opcode it takes; and the messages for each kind of bad input,
// which name the file and the byte offset, JSON path or record at fault. The fixtures in
// tests/data/alloc/ come from make_snapshots.py there.
#include "sim/alloc/history.h"
#include "sim/alloc/pickle.h"
#include "sim/core/error.h"
#include "sim/trace/writer.h"
#include "test_support.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace faultline;
using namespace faultline::alloc;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

constexpr Addr kSeg0 = 0x7F0000000000;
constexpr Addr kSeg1 = 0x7F0000200000;
constexpr Addr kEarly0 = 0x7F00000A0000;
constexpr Addr kEarly1 = 0x7F0000300000;

std::string data(const std::string& name) {
  return std::string(FAULTLINE_TEST_DATA) + "/alloc/" + name;
}

std::string read_error(const std::string& path, const ReadOptions& options = {}) {
  return fltest::trace_error_of([&] { read_history(path, options); });
}

std::string pickle_error(const std::string& bytes) {
  return fltest::trace_error_of([&] { decode_pickle(bytes, "p.pickle"); });
}

void check_event(const Event& e, bool alloc, Addr address, Bytes size, uint64_t stream, Time time) {
  INFO("event at " << e.address << " size " << e.size << " time " << e.time);
  CHECK(e.alloc == alloc);
  CHECK(e.address == address);
  CHECK(e.size == size);
  CHECK(e.stream == stream);
  CHECK(e.time == time);
}

// Device 0's trace in make_snapshots.py: two blocks freed that were allocated before
// recording began, free_completed taken over free_requested, oom and snapshot entries skipped.
void check_fixture_events(const History& h) {
  REQUIRE(h.events.size() == 9);
  check_event(h.events[0], true, kEarly0, 4096, 0, 0);
  check_event(h.events[1], true, kEarly1, 2048, 0, 0);
  check_event(h.events[2], true, kSeg0, 1000, 0, 0);
  check_event(h.events[3], true, kSeg0 + 1024, 512, 0, 1000);
  check_event(h.events[4], false, kSeg0, 1000, 0, 2000);
  check_event(h.events[5], false, kEarly0, 4096, 0, 4000);
  check_event(h.events[6], true, kSeg1, 3000000, 7, 9000);
  check_event(h.events[7], false, kSeg1, 3000000, 7, 11000);
  check_event(h.events[8], false, kEarly1, 2048, 0, 13000);
  CHECK(h.blocks_before_history == 2);
  CHECK(h.recorded.has_segments);
  // 2 MiB + 20 MiB live at once, plus the 2 MiB that the free of a 4 MiB segment reserved
  // before recording shows was there from the start.
  CHECK(h.recorded.peak_reserved == 25165824);
  CHECK(h.recorded.segment_allocs == 2);
  CHECK(h.recorded.segment_frees == 2);
  // At the alloc of 3000000 bytes (3000320 in blocks of 512): 512 and the early 2 KiB block.
  CHECK(h.recorded.peak_allocated == 512 + 2048 + 3000320);
}

bool same_events(const History& a, const History& b) {
  if (a.events.size() != b.events.size()) return false;
  for (size_t i = 0; i < a.events.size(); ++i) {
    const Event &x = a.events[i], &y = b.events[i];
    if (x.alloc != y.alloc || x.address != y.address || x.size != y.size || x.stream != y.stream ||
        x.time != y.time)
      return false;
  }
  return true;
}

bool same_recorded(const Recorded& a, const Recorded& b) {
  return a.has_segments == b.has_segments && a.peak_reserved == b.peak_reserved &&
         a.peak_allocated == b.peak_allocated && a.segment_allocs == b.segment_allocs &&
         a.segment_frees == b.segment_frees;
}

} // namespace

TEST_CASE("alloc history: a PyTorch snapshot pickle gives one device's allocs and frees",
          "[alloc-history]") {
  const History h = read_history(data("snapshot.pickle"));
  CHECK(h.source == "pytorch-snapshot");
  check_fixture_events(h);
  CHECK(h.metadata["device"] == 0);
  CHECK(h.metadata["entries"] == 15);
  CHECK(h.metadata["allocator_settings"]["max_split_size"] == -1);
  CHECK(h.metadata["capture"] == json{{"model", "mlp"}, {"technique", "baseline"}, {"batch", 8}});
}

TEST_CASE("alloc history: the snapshot's JSON, zstd and tracer-history forms read the same",
          "[alloc-history]") {
  const History pickled = read_history(data("snapshot.pickle"));
  SECTION("JSON") {
    const History h = read_history(data("snapshot.json"));
    CHECK(h.source == "pytorch-snapshot");
    CHECK(same_events(h, pickled));
    CHECK(same_recorded(h.recorded, pickled.recorded));
    CHECK(h.blocks_before_history == pickled.blocks_before_history);
    CHECK(h.metadata == pickled.metadata);
  }
  SECTION("the decoded pickle is the JSON document, shared frames lists included") {
    const std::string bytes = fltest::read_text(data("snapshot.pickle"));
    const json expected = json::parse(fltest::read_text(data("snapshot.json")));
    CHECK(decode_pickle(bytes, "snapshot.pickle") == expected);
    const json entry = decode_pickle(bytes, "snapshot.pickle")["device_traces"][0][8];
    CHECK(entry["frames"].size() == 2);
  }
  SECTION("zstd-compressed pickle (zstd command line)") {
    const History h = read_history(data("snapshot.pickle.zst"));
    CHECK(same_events(h, pickled));
    CHECK(h.metadata == pickled.metadata);
  }
  SECTION("zstd-compressed JSON (libzstd)") {
    fltest::TempDir dir;
    const std::string path = dir.file("snapshot.json.zst");
    fltest::write_zstd_file(path, fltest::read_text(data("snapshot.json")));
    const History h = read_history(path);
    CHECK(same_events(h, pickled));
    CHECK(same_recorded(h.recorded, pickled.recorded));
  }
  SECTION("the tracer's allocator history") {
    const History h = read_history(data("history.json"));
    CHECK(h.source == "torch-history");
    check_fixture_events(h);
    CHECK(h.metadata["torch"] == "2.11.0+cu130");
    CHECK(h.metadata["entries"] == 15);
  }
}

TEST_CASE("alloc history: free_requested stands in where a trace has no free_completed",
          "[alloc-history]") {
  fltest::TempDir dir;
  const std::string path = dir.file("h.json");
  fltest::write_json(path, {{"torch", "2.x"},
                            {"events",
                             {{"alloc", 4096, 512, 0, 7},
                              {"free_requested", 4096, 512, 0, 8},
                              {"free_requested", 8192, 100, 3, 9}}}});
  const History h = read_history(path);
  REQUIRE(h.events.size() == 4);
  check_event(h.events[0], true, 8192, 100, 3, 0);
  check_event(h.events[1], true, 4096, 512, 0, 0);
  check_event(h.events[2], false, 4096, 512, 0, 1000);
  check_event(h.events[3], false, 8192, 100, 3, 2000);
  CHECK(h.blocks_before_history == 1);
  CHECK(!h.recorded.has_segments);
  CHECK(h.recorded.peak_allocated == 1024);
}

TEST_CASE("alloc history: JSON \"frames\" values are left out wherever they are",
          "[alloc-history]") {
  fltest::TempDir dir;
  const std::string path = dir.file("s.json");
  fltest::write_text(path, R"({"device_traces": [[
      {"action": "alloc", "addr": 4096, "size": 10, "stream": 0, "time_us": 5, "frames": 7},
      {"frames": {"a": [1, {"frames": [2]}], "b": "x"}, "action": "free_completed",
       "addr": 4096, "size": 10, "stream": 0, "time_us": 6}]],
    "segments": [], "faultline": {"frames": [[]], "model": "gpt2"}})");
  const History h = read_history(path);
  REQUIRE(h.events.size() == 2);
  check_event(h.events[1], false, 4096, 10, 0, 1000);
  CHECK(h.metadata["capture"] == json{{"model", "gpt2"}});
}

TEST_CASE("alloc history: a faultline trace gives its allocator blocks", "[alloc-history]") {
  using namespace faultline::trace;
  fltest::TempDir dir;
  const std::string path = dir.file("blocks.fltrace");
  {
    TraceWriter w(path, {{"source", "unit-test"}, {"model", "mlp"}});
    w.write(AllocRecord{1, MemoryKind::kManaged, 0x10000000, 4 << 20, 0, 0});
    w.write(AllocRecord{2, MemoryKind::kDevice, 0x20000000, 2 << 20, 0, 0}); // holds no block
    w.write(AllocRecord{3, MemoryKind::kAllocatorBlock, 0x10000000, 1000, 100, 1});
    w.write(AllocRecord{4, MemoryKind::kAllocatorBlock, 0x10000400, 512, 200, 1});
    w.write(FreeRecord{3, 300});
    w.write(AllocRecord{5, MemoryKind::kDevice, 0x30000000, 8 << 20, 400, 0});
    w.write(AllocRecord{6, MemoryKind::kAllocatorBlock, 0x30000000, 3 << 20, 500, 5});
    w.write(FreeRecord{6, 600});
    w.write(FreeRecord{5, 700});
    w.write(FreeRecord{4, 800});
    w.close();
  }
  const History h = read_history(path);
  CHECK(h.source == "faultline-trace");
  CHECK(h.metadata["model"] == "mlp");
  REQUIRE(h.events.size() == 6);
  check_event(h.events[0], true, 0x10000000, 1000, 0, 0);
  check_event(h.events[1], true, 0x10000400, 512, 0, 100);
  check_event(h.events[2], false, 0x10000000, 1000, 0, 200);
  check_event(h.events[3], true, 0x30000000, 3 << 20, 0, 400);
  check_event(h.events[4], false, 0x30000000, 3 << 20, 0, 500);
  check_event(h.events[5], false, 0x10000400, 512, 0, 700);
  CHECK(h.blocks_before_history == 0);
  CHECK(h.recorded.has_segments);
  CHECK(h.recorded.peak_reserved == (4 << 20) + (8 << 20));
  CHECK(h.recorded.segment_allocs == 2);
  CHECK(h.recorded.segment_frees == 1);
  CHECK(h.recorded.peak_allocated == 512 + (3 << 20));
}

TEST_CASE("alloc history: several devices need a choice", "[alloc-history]") {
  const std::string path = data("two_devices.pickle");
  const std::string msg = read_error(path);
  CHECK_THAT(msg, Contains(path + ": /device_traces: devices 0, 1 all recorded"));
  ReadOptions options;
  options.device = 1;
  const History h = read_history(path, options);
  CHECK(h.metadata["device"] == 1);
  CHECK(h.events.size() == 9);
  options.device = 2;
  CHECK_THAT(read_error(path, options), Contains("device 2 was asked for"));
  options.device = 1;
  CHECK_THAT(read_error(data("snapshot.pickle"), options),
             Contains("/device_traces/1: device 1 recorded no allocator events"));
}

TEST_CASE("alloc history: bad input names the file and the place", "[alloc-history]") {
  fltest::TempDir dir;
  SECTION("missing file") {
    const std::string path = dir.file("absent.pickle");
    CHECK_THAT(read_error(path), Contains(path + ": cannot open"));
  }
  SECTION("truncated pickle") {
    // Protocol 4 frames the whole of a small pickle: the frame's length gives the cut away.
    const std::string framed = fltest::read_text(data("snapshot.pickle"));
    const std::string path = dir.file("cut.pickle");
    fltest::write_text(path, framed.substr(0, framed.size() - 1));
    CHECK_THAT(read_error(path), Contains(path + ": byte 2: the pickle ends inside the FRAME"));
    // Protocol 2 has no frames: the cut shows where an argument or the STOP is missing.
    const std::string whole = fltest::read_text(data("values-p2.pickle"));
    fltest::write_text(path, whole.substr(0, whole.size() - 1));
    CHECK_THAT(read_error(path), Contains(path + ": byte " + std::to_string(whole.size() - 1) +
                                          ": the pickle ends inside its data"));
    fltest::write_text(path, whole.substr(0, 11)); // inside a BINUNICODE's length (byte 8)
    CHECK_THAT(read_error(path), Contains(path + ": byte 8: the pickle ends inside the argument "
                                                 "of BINUNICODE: 4 bytes needed, 2 left"));
    for (size_t cut = 1; cut < whole.size(); cut += 37) {
      fltest::write_text(path, whole.substr(0, cut));
      CHECK_THAT(read_error(path), Contains(path + ": byte ") && Contains("the pickle ends"));
    }
  }
  SECTION("unsupported opcode") {
    const std::string path = data("global.pickle");
    CHECK_THAT(read_error(path),
               Contains(path + ": byte 2: pickle opcode 0x63 ('c' GLOBAL) is not supported: a "
                               "PyTorch memory snapshot holds only dicts"));
  }
  SECTION("unknown action") {
    const std::string path = data("unknown_action.pickle");
    CHECK_THAT(read_error(path),
               Contains(path + ": /device_traces/0/5/action: unknown action \"free_maybe\""));
  }
  SECTION("wrong type") {
    const std::string path = data("wrong_type.pickle");
    CHECK_THAT(read_error(path), Contains(path + ": /device_traces/0/8/addr: expected a "
                                                 "non-negative integer, got string"));
  }
  SECTION("missing field") {
    const std::string path = dir.file("h.json");
    fltest::write_text(path, R"({"device_traces": [[{"action": "alloc", "addr": 1}]],
                                  "segments": []})");
    CHECK_THAT(read_error(path),
               Contains(path + ": /device_traces/0/0/size: expected a non-negative integer"));
  }
  SECTION("double free") {
    const std::string path = data("double_free.pickle");
    CHECK_THAT(read_error(path), Contains(path + ": /device_traces/0/10: free of 0x7f0000000000, "
                                                 "which was freed already"));
  }
  SECTION("alloc of a live block") {
    const std::string path = data("alloc_live.pickle");
    CHECK_THAT(read_error(path), Contains(path + ": /device_traces/0/2: alloc at 0x7f0000000000, "
                                                 "which is already live"));
  }
  SECTION("more live at once than any GPU holds (found by fuzzing)") {
    // A size believed would have the models build a 2 MB chunk per 2 MB of it.
    const std::string path = dir.file("h.json");
    const uint64_t half = kMaxLiveBytes / 2;
    fltest::write_json(path, {{"torch", "2.x"},
                              {"events",
                               {{"alloc", 1 << 20, half, 0, 1},
                                {"alloc", 2 << 20, half, 0, 2},
                                {"alloc", 3 << 20, 1, 0, 3}}}});
    CHECK_THAT(read_error(path), Contains(path + ": /events/2: allocations live here add up to "
                                                 "more than 1 TiB") &&
                                     Contains("more than any GPU holds"));
    fltest::write_json(path, {{"torch", "2.x"},
                              {"events",
                               {{"free_completed", 1 << 20, kMaxLiveBytes, 0, 1},
                                {"free_completed", 2 << 20, 1, 0, 2}}}});
    CHECK_THAT(read_error(path), Contains(path + ": /events/1: blocks allocated before recording "
                                                 "began, up to here, add up to more than 1 TiB"));
  }
  SECTION("tracer history entry of the wrong shape") {
    const std::string path = dir.file("h.json");
    fltest::write_json(path, {{"torch", "2.x"}, {"events", {{"alloc", 1, 2, 3}}}});
    CHECK_THAT(read_error(path), Contains(path + ": /events/0: expected [action, address"));
    fltest::write_json(path, {{"torch", "2.x"}, {"events", {{"alloc", 1, -2, 0, 3}}}});
    CHECK_THAT(read_error(path), Contains(path + ": /events/0/2: expected a non-negative"));
  }
  SECTION("not a snapshot") {
    const std::string path = dir.file("notes.txt");
    fltest::write_text(path, "hello");
    CHECK_THAT(read_error(path), Contains(path + ": not a PyTorch memory snapshot (pickle or "
                                                 "JSON), allocator history or faultline trace"));
    fltest::write_text(path, "{\"a\": 1}");
    CHECK_THAT(read_error(path), Contains("found a dict with keys: a"));
    fltest::write_text(path, std::string("\x80\x04]\x94.", 5)); // a pickled empty list
    CHECK_THAT(read_error(path), Contains(path + ": not a PyTorch memory snapshot"));
    fltest::write_text(path, "");
    CHECK_THAT(read_error(path), Contains(path + ": not a PyTorch memory snapshot"));
  }
  SECTION("JSON syntax error") {
    const std::string path = dir.file("bad.json");
    fltest::write_text(path, "{\"device_traces\": [}");
    CHECK_THAT(read_error(path), Contains(path + ": byte 19: not valid JSON"));
  }
  SECTION("corrupt zstd") {
    const std::string path = dir.file("bad.zst");
    std::string z = fltest::zstd_compress(fltest::read_text(data("snapshot.pickle")));
    fltest::write_text(path, z.substr(0, z.size() / 2));
    CHECK_THAT(read_error(path), Contains(path + ": the zstd stream ends inside a frame"));
    z[z.size() / 2] ^= 0x5a;
    z[z.size() / 2 + 1] ^= 0x33;
    fltest::write_text(path, z);
    CHECK_THAT(read_error(path), Contains(path) && Contains("zstd"));
  }
  SECTION("pickle inside zstd: offsets in the decompressed bytes") {
    const std::string path = dir.file("global.pickle.zst");
    fltest::write_zstd_file(path, fltest::read_text(data("global.pickle")));
    CHECK_THAT(read_error(path), Contains(path + " (decompressed): byte 2: pickle opcode 0x63"));
  }
}

TEST_CASE("pickle: every supported opcode decodes as Python's pickle wrote it", "[alloc-history]") {
  json expected = json::parse(fltest::read_text(data("values.json")));
  for (int protocol = 5; protocol >= 2; --protocol) {
    INFO("protocol " << protocol);
    if (protocol == 2) expected.erase("bytes");
    const std::string name = "values-p" + std::to_string(protocol) + ".pickle";
    CHECK(decode_pickle(fltest::read_text(data(name)), name) == expected);
  }
  using namespace std::string_literals;
  CHECK(decode_pickle("\x80\x04\x8d\x02\0\0\0\0\0\0\0hi."s, "p") == "hi");       // BINUNICODE8
  CHECK(decode_pickle("\x80\x04\x8e\x01\0\0\0\0\0\0\0\xe9."s, "p") == "\u00e9"); // BINBYTES8
  CHECK(decode_pickle("\x80\x04\x8a\x00."s, "p") == 0);                          // LONG1, empty
  CHECK(decode_pickle("\x80\x04\x8a\x01\xff."s, "p") == -1);
}

TEST_CASE("pickle: skip_keys leaves values out", "[alloc-history]") {
  const std::string bytes = fltest::read_text(data("snapshot.pickle"));
  PickleOptions options;
  options.skip_keys = {"frames", "segments"};
  const json doc = decode_pickle(bytes, "snapshot.pickle", options);
  CHECK(!doc.contains("segments"));
  CHECK(!doc["device_traces"][0][1].contains("frames"));
  CHECK(doc["device_traces"][0][1]["addr"] == kSeg0);
}

TEST_CASE("pickle: defects name the byte", "[alloc-history]") {
  using namespace std::string_literals;
  CHECK_THAT(pickle_error("\x80\x04\x8c\x05"
                          "abc"s),
             Contains("p.pickle: byte 2: the pickle ends inside the argument of SHORT_BINUNICODE: "
                      "5 bytes needed, 3 left"));
  CHECK_THAT(pickle_error("\x80\x04\x95\x40\0\0\0\0\0\0\0]."s),
             Contains("byte 2: the pickle ends inside the FRAME"));
  CHECK_THAT(pickle_error("\x80\x01]."s), Contains("byte 0: pickle protocol 1 is not supported"));
  CHECK_THAT(pickle_error("\x80\x04h\x05."s),
             Contains("byte 2: BINGET of memo index 5, which is not defined"));
  CHECK_THAT(pickle_error("\x80\x04]a."s),
             Contains("byte 3: APPEND needs 2 value(s) on the stack, found 1"));
  CHECK_THAT(pickle_error("\x80\x04](]a."s),
             Contains("byte 5: APPEND needs 2 value(s) on the stack, found 1 above the last MARK"));
  CHECK_THAT(pickle_error("\x80\x04]K\x01"
                          "e."s),
             Contains("byte 5: APPENDS without a MARK before it"));
  CHECK_THAT(pickle_error("\x80\x04}(K\x01"
                          "u."s),
             Contains("byte 6: SETITEMS with 1 values"));
  CHECK_THAT(pickle_error("\x80\x04}]K\x01s."s),
             Contains("byte 6: SETITEM with a key that is a list; expected a string or integer"));
  CHECK_THAT(pickle_error("\x80\x04K\x01K\x02"
                          "a."s),
             Contains("byte 6: APPEND adds to a number"));
  CHECK_THAT(pickle_error("\x80\x04\x8a\x09\x01\x01\x01\x01\x01\x01\x01\x01\x01."s),
             Contains("byte 2: LONG1 integer of 9 bytes does not fit in 64 bits"));
  CHECK_THAT(pickle_error("\x80\x04\x8c\x01\xff."s),
             Contains("byte 2: SHORT_BINUNICODE string is not valid UTF-8"));
  CHECK_THAT(pickle_error("\x80\x04\x01"s), Contains("byte 2: 0x01 is not a pickle opcode"));
  CHECK_THAT(pickle_error("\x80\x04\x93."s),
             Contains("byte 2: STACK_GLOBAL needs 2 value(s) on the stack, found 0"));
  // Any class but a str subclass that snapshots carry (torch.__version__) is refused.
  CHECK_THAT(pickle_error("\x80\x04\x8c\x0b"
                          "collections\x8c\x0b"
                          "OrderedDict\x93."s),
             Contains("byte 28: pickle opcode 0x93 (STACK_GLOBAL) is not supported") &&
                 Contains("(it names collections.OrderedDict)"));
  CHECK_THAT(pickle_error("\x80\x04]]."s), Contains("byte 4: STOP with 2 value(s)"));
  CHECK_THAT(pickle_error("\x80\x04."s), Contains("byte 2: STOP with 0 value(s)"));
  CHECK_THAT(pickle_error("\x80\x04].x"s),
             Contains("byte 4: 1 bytes follow the pickle's STOP; expected the end of the data"));
  // A list that holds itself, and 40 levels of pairs of the level below (2^40 values).
  CHECK_THAT(pickle_error("\x80\x04]\x94h\x00"
                          "a."s),
             Contains("byte 2: the value made here is "
                      "nested more than 1000 deep"));
  std::string doubling = "\x80\x04]\x94"s;
  for (int i = 0; i < 40; ++i) doubling += "h"s + char(i) + "\x86\x94"s; // (top, memo i)
  CHECK_THAT(pickle_error(doubling + "."), Contains("shared references expand to more than"));
  // 2^64 - 1 and -2^63 fit; one beyond does not.
  CHECK(decode_pickle("\x80\x04\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00."s, "p") == UINT64_MAX);
  CHECK(decode_pickle("\x80\x04\x8a\x08\0\0\0\0\0\0\0\x80."s, "p") == INT64_MIN);
  CHECK_THAT(pickle_error("\x80\x04\x8a\x09\xff\xff\xff\xff\xff\xff\xff\x7f\xff."s),
             Contains("does not fit in 64 bits"));
}

TEST_CASE("pickle: random damage throws TraceError or decodes, never worse", "[alloc-history]") {
  const std::string valid = fltest::read_text(data("snapshot.pickle"));
  std::mt19937_64 rng(20240611);
  const auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int decoded = 0, refused = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string bytes = valid;
    const int damage = 1 + static_cast<int>(below(4));
    for (int k = 0; k < damage; ++k) {
      const size_t at = below(bytes.size());
      switch (below(4)) {
      case 0:
        bytes[at] = static_cast<char>(rng());
        break;
      case 1:
        bytes[at] ^= static_cast<char>(1 << below(8));
        break;
      case 2:
        bytes.insert(at, 1, static_cast<char>(rng()));
        break;
      default:
        bytes.erase(at, 1 + below(8));
        break;
      }
      if (bytes.empty()) bytes.push_back('\x80');
    }
    try {
      decode_pickle(bytes, "fuzz.pickle");
      ++decoded;
    } catch (const TraceError& e) {
      CHECK_THAT(e.what(), Contains("fuzz.pickle: byte "));
      ++refused;
    }
  }
  CHECK(refused > 0);
  CHECK(decoded + refused == 4000);
}

TEST_CASE("pickle: torch.__version__ (a TorchVersion, a str) reads as its string",
          "[alloc-history]") {
  using namespace std::string_literals;
  const std::string version = "\x80\x04\x8c\x13torch.torch_version\x8c\x0cTorchVersion\x93"
                              "\x8c\x0c"
                              "2.11.0+cu130\x85\x81."s;
  CHECK(faultline::alloc::decode_pickle(version, "v.pickle") == "2.11.0+cu130");
  CHECK_THAT(pickle_error("\x80\x04\x8c\x13torch.torch_version\x8c\x0cTorchVersion\x93"
                          "\x8c\x01"
                          "a\x8c\x01"
                          "b\x86\x81."s),
             Contains("byte 45: pickle opcode 0x81 (NEWOBJ) is not supported"));
}
