// The converter on sanitize-mode captures (tracer/convert/sanitized.cc, steps.cc): raw streams
// recorded on an H100 (tests/data/capture/sanitize/README.md) whose access sets, host touches
// and steps are known from the programs, and the diagnostics for broken sanitize streams.
#include "capture_support.h"
#include "tracer/convert/passes.h"
#include "tracer/convert/sanitized.h"
#include "tracer/convert/steps.h"

#include <map>
#include <set>

using namespace captest;

namespace {

constexpr uint64_t kArray = 33554432; // each of host_stencil's three arrays in the recorded run

struct Records {
  std::vector<trace::Record> all;
  nlohmann::json header;
};

Records read_all(const std::string& path) {
  trace::TraceReader reader(path);
  Records out{{}, reader.metadata()};
  trace::Record r;
  while (reader.next(r)) out.all.push_back(r);
  return out;
}

// Pages (64 KB, from the allocation's base) of `kind` host accesses inside [begin, end) records
// that fall in allocation `alloc`.
std::set<uint64_t> host_pages(const Records& t, size_t begin, size_t end,
                              const trace::AllocRecord& alloc, AccessType kind) {
  std::set<uint64_t> out;
  for (size_t i = begin; i < end; ++i) {
    const trace::Record& r = t.all[i];
    if (r.type != trace::RecordType::kHostAccess || r.host.type != kind) continue;
    for (uint64_t a = r.host.address; a < r.host.address + r.host.size; a += kBigPage)
      if (a >= alloc.address && a < alloc.address + alloc.size)
        out.insert((a - alloc.address) / kBigPage);
  }
  return out;
}

// The error converting the recorded stream microbenchmark with `access` as its sanitize pass.
std::string conversion_error(const fltest::TempDir& dir, const RawFile& access) {
  ConvertRequest request{data("sanitize/stream-timing.raw"),
                         write_raw(dir, "edited.raw", join(access)),
                         "",
                         dir.file("t.fltrace"),
                         nlohmann::json::object(),
                         ""};
  return fltest::trace_error_of([&] { convert_capture(request); });
}

std::string converted(const fltest::TempDir& dir, const std::string& prog, bool history = false) {
  const std::string out = dir.file(prog + ".fltrace");
  convert("sanitize/" + prog, out, history, "sanitize");
  return out;
}

} // namespace

TEST_CASE("sanitize capture: stream pages match the declared access sets", "[capture]") {
  check_against_expectation("sanitize/stream", "sanitize");
}

TEST_CASE("sanitize capture: strided pages match the declared access sets", "[capture]") {
  check_against_expectation("sanitize/strided", "sanitize");
}

TEST_CASE("sanitize capture: the host's initialisation, writes and reads reach the trace",
          "[capture]") {
  fltest::TempDir dir;
  const Records t = read_all(converted(dir, "stencil"));
  std::vector<trace::AllocRecord> allocs;
  for (const auto& r : t.all)
    if (r.type == trace::RecordType::kAlloc) allocs.push_back(r.alloc);
  REQUIRE(allocs.size() == 3); // u, v, f in allocation order
  const auto& steps = t.header.at("steps");
  REQUIRE(steps.size() == 3);
  const size_t step0 = steps[0]["first_record"], step1 = steps[1]["first_record"];
  const size_t step2 = steps[2]["first_record"];
  const std::set<uint64_t> none;
  std::set<uint64_t> every;
  for (uint64_t p = 0; p < kArray / kBigPage; ++p) every.insert(p);
  std::set<uint64_t> every_other; // every 8th row of 16 KB: one row in each pair of pages
  for (uint64_t p = 0; p < kArray / kBigPage; p += 2) every_other.insert(p);
  // Set-up, before step 0: the host filled u and f, and never touched v.
  CHECK(host_pages(t, 0, step0, allocs[0], AccessType::kWrite) == every);
  CHECK(host_pages(t, 0, step0, allocs[2], AccessType::kWrite) == every);
  CHECK(host_pages(t, 0, step0, allocs[1], AccessType::kWrite) == none);
  // Each step: f's first and last rows rewritten, u's every 8th row read after the sweeps.
  for (auto [begin, end] : {std::pair{step0, step1}, {step1, step2}, {step2, t.all.size()}}) {
    INFO("records " << begin << " to " << end);
    CHECK(host_pages(t, begin, end, allocs[2], AccessType::kWrite) ==
          std::set<uint64_t>{0, kArray / kBigPage - 1});
    CHECK(host_pages(t, begin, end, allocs[0], AccessType::kRead) == every_other);
    size_t kernels = 0;
    for (size_t i = begin; i < end; ++i) kernels += t.all[i].type == trace::RecordType::kKernel;
    CHECK(kernels == 6);
  }
}

TEST_CASE("sanitize capture: allocations of odd sizes keep every access inside them", "[capture]") {
  fltest::TempDir dir;
  const std::string out = dir.file("odd.fltrace");
  const json summary = convert("sanitize/stencil-odd", out, false, "sanitize");
  CHECK(summary["untranslated_pages"] == 0);
  CHECK(summary["pages_in_no_allocation"] == 0);
  CHECK(summary["steps"] == 3);
  const Contents c = read_trace(out);
  const auto m = managed(c);
  REQUIRE(m.size() == 3);
  for (const auto& a : m) CHECK(a.size % kBigPage != 0); // rows of 4097 floats
  REQUIRE(c.kernels.size() == 18);
  for (const auto& k : c.kernels) {
    INFO(k.name);
    CHECK(!k.accesses.empty());
    for (const auto& [alloc, page] : pages_of(k, m)) CHECK(alloc >= 0);
  }
}

TEST_CASE("sanitize capture: PyTorch steps are marked and blocks placed", "[capture]") {
  fltest::TempDir dir;
  const std::string out = dir.file("mlp.fltrace");
  const json summary = convert("sanitize/mlp", out, true, "sanitize");
  CHECK(summary["access_recorder"] == "sanitize");
  CHECK(summary["steps"] == 3);
  CHECK(summary["unplaced_block_events"] == 0);
  const Records t = read_all(out);
  const auto& steps = t.header.at("steps");
  REQUIRE(steps.size() == 3);
  // Every step runs the same kernels (the last adds the loss read back after it).
  std::vector<std::vector<std::string>> names(3);
  for (size_t s = 0, i = 0; i < t.all.size(); ++i) {
    while (s + 1 < steps.size() && i >= steps[s + 1]["first_record"].get<size_t>()) ++s;
    if (i >= steps[0]["first_record"].get<size_t>() && t.all[i].type == trace::RecordType::kKernel)
      names[s].push_back(t.all[i].kernel.name);
  }
  CHECK(names[0] == names[1]);
  REQUIRE(names[2].size() >= names[1].size());
  CHECK(std::vector<std::string>(names[2].begin(), names[2].begin() + names[1].size()) == names[1]);
}

TEST_CASE("sanitize capture: a kernel without its pages record is reported", "[capture]") {
  fltest::TempDir dir;
  RawFile f = split_raw(data("sanitize/stream-sanitize.raw"));
  f.records.erase(f.records.begin() + index_of_type(f, raw::RawType::kPages, 2));
  const std::string msg = conversion_error(dir, f);
  CHECK_THAT(msg, Contains("operation #2"));
  CHECK_THAT(msg, Contains("has no pages record"));
}

TEST_CASE("sanitize capture: an overflowed page list is refused, not cut", "[capture]") {
  fltest::TempDir dir;
  RawFile f = split_raw(data("sanitize/stream-sanitize.raw"));
  std::string& r = f.records[index_of_type(f, raw::RawType::kPages, 1)];
  raw::RawPages head;
  std::memcpy(&head, r.data() + sizeof(raw::RawRecordHead), sizeof(head));
  head.flags |= raw::kPagesOverflow;
  std::memcpy(r.data() + sizeof(raw::RawRecordHead), &head, sizeof(head));
  const std::string msg = conversion_error(dir, f);
  CHECK_THAT(msg, Contains("operation #1"));
  CHECK_THAT(msg, Contains("more pages than the device list holds"));
}

TEST_CASE("sanitize capture: a pages record whose entries disagree with its count", "[capture]") {
  fltest::TempDir dir;
  RawFile f = split_raw(data("sanitize/stream-sanitize.raw"));
  const size_t i = index_of_type(f, raw::RawType::kPages);
  f.records[i].resize(f.records[i].size() - 4); // one entry short
  uint32_t size = static_cast<uint32_t>(f.records[i].size() - sizeof(raw::RawRecordHead));
  std::memcpy(f.records[i].data() + 4, &size, 4);
  const std::string path = write_raw(dir, "short.raw", join(f));
  const std::string msg = raw_error(path);
  check_where(msg, path, f, i);
  CHECK_THAT(msg, Contains("entries need"));
}

TEST_CASE("sanitize capture: a copy that runs past its allocation is refused", "[capture]") {
  // Found by fuzzing: the converter walked such a copy's pages to its end, up to the whole
  // address space (tests/fuzz/regressions/raw_capture/copy-past-its-allocation.raw).
  fltest::TempDir dir;
  RawFile f = split_raw(data("sanitize/stream-sanitize.raw"));
  std::string& r = f.records[index_of_type(f, raw::RawType::kCopy)];
  raw::RawCopy copy;
  std::memcpy(&copy, r.data() + sizeof(raw::RawRecordHead), sizeof(copy));
  REQUIRE(copy.bytes < (uint64_t{1} << 30));
  copy.bytes = uint64_t{1} << 60;
  std::memcpy(r.data() + sizeof(raw::RawRecordHead), &copy, sizeof(copy));
  const std::string msg = conversion_error(dir, f);
  CHECK_THAT(msg, Contains("operation #"));
  CHECK_THAT(msg, Contains("a copy of 1152921504606846976 bytes at address " +
                           std::to_string(copy.dst) + " runs past the end of its allocation"));
}

TEST_CASE("steps: a boundary starts a step only when a kernel follows it", "[capture]") {
  RawStream raw;
  auto event = [&](raw::RawType type, bool on = true) {
    ApiEvent e;
    e.type = type;
    e.range.on = on ? 1 : 0;
    raw.api.push_back(e);
  };
  event(raw::RawType::kStep);         // 0: before the range: ignored
  event(raw::RawType::kRange);        // 1: range start, a kernel follows: step 0
  event(raw::RawType::kLaunch);       // 2
  event(raw::RawType::kStep);         // 3: a kernel follows: step 1
  event(raw::RawType::kRange);        // 4: a second mark before the same kernel: replaces 3
  event(raw::RawType::kLaunch);       // 5
  event(raw::RawType::kStep);         // 6: only a copy follows: no step
  event(raw::RawType::kCopy);         // 7
  event(raw::RawType::kRange, false); // 8: range end
  event(raw::RawType::kStep);         // 9: outside the range: ignored
  event(raw::RawType::kLaunch);       // 10
  Pass pass;
  pass.has_range = true;
  const std::vector<bool> starts = step_starts(raw, pass);
  std::vector<size_t> at;
  for (size_t i = 0; i < starts.size(); ++i)
    if (starts[i]) at.push_back(i);
  CHECK(at == std::vector<size_t>{1, 4});
}

TEST_CASE("capture: the CPU's timeline, its syncs and the program's step times",
          "[capture][timeline]") {
  // The committed mlp streams: the workload read its loss back with cudaStreamSynchronize
  // (recorded) and called torch.cuda.synchronize() (cudaDeviceSynchronize, whose call the
  // library did not record then: CUPTI's synchronisation record stands in for it).
  fltest::TempDir dir;
  const std::string out = dir.file("mlp.fltrace");
  const json summary = convert("sanitize/mlp", out, true, "sanitize");
  CHECK(summary["syncs_from_activity"] == 2);
  trace::TraceReader reader(out);
  CHECK(reader.version() == trace::kVersion);
  CHECK(reader.timeline() == trace::Timeline::kIssue);
  // Step boundaries on the CPU's clock (raw_dump.py): cudaProfilerStart at ...414786369,
  // ...418942958, ...421955693; cudaProfilerStop at ...425960204.
  CHECK(reader.program_step_ns() == std::vector<Time>{4156589, 3012735, 4004511});
  trace::Record r;
  std::vector<trace::SyncRecord> syncs;
  Time last_time = 0, queued_total = 0;
  while (reader.next(r)) {
    if (r.type == trace::RecordType::kSync) syncs.push_back(r.sync);
    if (r.type == trace::RecordType::kKernel) queued_total += r.kernel.queued;
    last_time = r.time();
  }
  // In the range: the loss's stream sync (called at ...425848145, CUPTI's record ends at
  // ...425856578) and the final device sync (CUPTI's record: 6744 ns).
  REQUIRE(syncs.size() == 2);
  CHECK(syncs[0].kind == trace::SyncKind::kStream);
  CHECK(syncs[0].wait == 8433);
  CHECK(syncs[1].kind == trace::SyncKind::kDevice);
  CHECK(syncs[1].wait == 6744);
  CHECK(queued_total > 0);
  // The tear-down after the range (the exit's frees) sits at the range's end.
  CHECK(last_time <= 1795517317425960204 - 1795517317414786369 + 1000);
}
