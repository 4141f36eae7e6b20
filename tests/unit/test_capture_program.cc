// The program pass: a run with CUPTI's activity records alone whose CPU clock the trace takes.
// The streams here are made from the recorded mlp timing pass with its CPU's gaps scaled, as a
// program pass of a program that the timing pass slowed would record them.
#include "capture_support.h"
#include "tracer/convert/program_pass.h"

namespace {

using namespace captest;

template <typename T> std::string record(raw::RawType type, const T& payload) {
  raw::RawRecordHead head{static_cast<uint16_t>(type), 0, static_cast<uint32_t>(sizeof(T))};
  return std::string(reinterpret_cast<const char*>(&head), sizeof(head)) +
         std::string(reinterpret_cast<const char*>(&payload), sizeof(T));
}

std::string stream_head(const std::string& meta) {
  raw::RawFileHeader header{};
  std::memcpy(header.magic, raw::kMagic, 8);
  header.version = raw::kVersion;
  raw::RawRecordHead mh{static_cast<uint16_t>(raw::RawType::kMeta), 0,
                        static_cast<uint32_t>(meta.size())};
  return std::string(reinterpret_cast<const char*>(&header), sizeof(header)) +
         std::string(reinterpret_cast<const char*>(&mh), sizeof(mh)) + meta;
}

raw::RawApiAct call(uint64_t start, uint64_t end, uint32_t corr, raw::ApiWhat what,
                    uint32_t thread = 7, raw::ApiDomain domain = raw::ApiDomain::kRuntime) {
  return {start, end, corr, static_cast<uint32_t>(what), static_cast<uint32_t>(domain), thread};
}

raw::RawKernelShape kernel(uint64_t start, uint32_t corr) {
  return {start, start + 100, corr, {1, 1, 1}, {32, 1, 1}, 0};
}

struct Made {
  std::string bytes;
  std::vector<uint64_t> op_times;   // each operation's call, on the program pass's clock
  std::vector<uint64_t> gpu_starts; // and its start on the GPU
};

// A program pass of the timing pass `raw`: every CPU time t becomes base + (t - base) * scale;
// `skip` leaves out that operation's kernel record.
Made program_stream(const RawStream& raw, const Pass& pass, double scale, size_t skip = SIZE_MAX) {
  const uint64_t base = pass.range_start;
  const auto at = [&](uint64_t t) {
    return base + static_cast<uint64_t>(static_cast<double>(t - base) * scale);
  };
  Made m;
  m.bytes = stream_head(R"({"mode":"program","range":"all"})");
  uint32_t corr = 1000;
  for (size_t i = 0; i < pass.ops.size(); ++i) {
    const Operation& op = pass.ops[i];
    const uint64_t t = at(op.cpu_time);
    m.op_times.push_back(t);
    const uint32_t what =
        static_cast<uint32_t>(op.kind == OpKind::kKernel   ? raw::ApiWhat::kLaunch
                              : op.kind == OpKind::kMemcpy ? raw::ApiWhat::kMemcpy
                                                           : raw::ApiWhat::kMemset);
    ++corr;
    m.bytes += record(raw::RawType::kApiAct, raw::RawApiAct{t, t + 2000, corr, what, 1, 7});
    const uint64_t gpu = std::max(t + 5000, at(op.gpu_start));
    m.gpu_starts.push_back(gpu);
    if (op.kind == OpKind::kKernel) {
      if (i == skip) continue;
      raw::RawKernelShape k{gpu, gpu + (op.gpu_end - op.gpu_start), corr, {}, {}, 0};
      std::copy(op.grid, op.grid + 3, k.grid);
      std::copy(op.block, op.block + 3, k.block);
      m.bytes += record(raw::RawType::kKernelShape, k);
    } else {
      m.bytes +=
          record(raw::RawType::kCopyAct, raw::RawCopyAct{gpu, gpu + 100, 4096, corr, 7,
                                                         op.kind == OpKind::kMemset ? 1u : 0u, 1});
    }
  }
  std::unordered_map<uint32_t, uint64_t> ends;
  for (const raw::RawSyncAct& s : raw.syncs) ends[s.corr] = std::max(ends[s.corr], s.end);
  for (const ApiEvent& e : raw.api)
    if (e.type == raw::RawType::kSync && e.cpu_time >= base)
      m.bytes += record(raw::RawType::kApiAct,
                        raw::RawApiAct{at(e.cpu_time), at(std::max(ends[e.sync.corr], e.cpu_time)),
                                       ++corr, static_cast<uint32_t>(raw::ApiWhat::kSync), 1, 7});
  m.bytes += record(raw::RawType::kEnd, raw::RawEnd{0, 0});
  return m;
}

} // namespace

TEST_CASE("capture: the program pass's clock becomes the trace's", "[capture]") {
  fltest::TempDir dir;
  const RawStream timing = read_raw(data("mlp-timing.raw"));
  const Pass pass = build_pass(timing);
  REQUIRE(pass.ops.size() > 10);
  const Made made = program_stream(timing, pass, 0.5);
  ConvertRequest request;
  request.timing_path = data("mlp-timing.raw");
  request.access_path = data("mlp-access.raw");
  request.history_path = data("mlp-timing.history.json");
  request.out_path = dir.file("program.fltrace");
  request.program_path = write_raw(dir, "program.raw", made.bytes);
  const json summary = convert_capture(request);
  CHECK(summary["cpu_clock"] == "program pass");
  CHECK(summary["program_pass"]["operations"] == pass.ops.size());
  CHECK(summary["program_pass"]["syncs_anchored"] == true);

  // Each kernel comes at its call on the program pass's clock: half the timing pass's distance.
  // The stream has no range, so the trace begins where the first operation's distance from the
  // timing pass's first event, unscaled, puts it.
  const Contents c = read_trace(request.out_path);
  REQUIRE(c.kernels.size() == pass.ops.size());
  const uint64_t begin = made.op_times[0] - (pass.ops[0].cpu_time - pass.range_start);
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    INFO("operation #" << i);
    CHECK(c.kernels[i].start == static_cast<Time>(made.op_times[i] - begin));
    // How long the GPU held it: the program pass's distance from the call to the GPU's start.
    CHECK(c.kernels[i].queued == static_cast<Time>(made.gpu_starts[i] - made.op_times[i]));
  }
  // The same inputs without the program pass keep the timing pass's clock.
  const std::string plain = dir.file("plain.fltrace");
  convert("mlp", plain, true);
  CHECK(trace::TraceReader(plain).metadata()["capture"]["cpu_clock"] == "timing pass");
  const Contents p = read_trace(plain);
  REQUIRE(p.kernels.size() == pass.ops.size());
  for (size_t i = 0; i < p.kernels.size(); ++i)
    CHECK(p.kernels[i].start == static_cast<Time>(pass.ops[i].cpu_time - pass.range_start));
}

TEST_CASE("capture: a CPU clock map is monotone, exact at its anchors, a shift beyond them",
          "[capture]") {
  fltest::TempDir dir;
  const RawStream timing = read_raw(data("mlp-timing.raw"));
  const Pass pass = build_pass(timing);
  const Made made = program_stream(timing, pass, 0.25);
  const std::string path = write_raw(dir, "program.raw", made.bytes);
  const RawStream program = read_raw(path);
  const ProgramPass ppass = build_program_pass(program);
  const CpuClock clock(timing, pass, program, ppass);
  CHECK_FALSE(clock.identity());
  uint64_t last = 0;
  for (size_t i = 0; i < pass.ops.size(); ++i) {
    CHECK(clock(pass.ops[i].cpu_time) == made.op_times[i]);
    // Half-way between two calls maps half-way between their program-pass times.
    if (i + 1 < pass.ops.size()) {
      const uint64_t mid = (pass.ops[i].cpu_time + pass.ops[i + 1].cpu_time) / 2;
      CHECK(clock(mid) >= made.op_times[i]);
      CHECK(clock(mid) <= made.op_times[i + 1]);
      CHECK(clock(mid) >= last);
      last = clock(mid);
    }
  }
  const uint64_t end = pass.ops.back().cpu_time + 10'000'000'000ull; // past every anchor
  CHECK(clock(end + 12345) - clock(end) == 12345);
  CHECK(CpuClock()(777) == 777);
  // Far past the last anchor the shift saturates rather than wrap around.
  CHECK(clock(UINT64_MAX - 1) >= clock(end));
}

TEST_CASE("capture: a program pass of another program is refused, naming both passes",
          "[capture]") {
  fltest::TempDir dir;
  const RawStream timing = read_raw(data("mlp-timing.raw"));
  const Pass pass = build_pass(timing);
  size_t kernel = 0;
  while (pass.ops[kernel].kind != OpKind::kKernel) ++kernel;
  ConvertRequest request;
  request.timing_path = data("mlp-timing.raw");
  request.access_path = data("mlp-access.raw");
  request.out_path = dir.file("t.fltrace");

  // One kernel fewer.
  request.program_path = write_raw(dir, "short.raw", program_stream(timing, pass, 1, kernel).bytes);
  std::string msg = fltest::trace_error_of([&] { convert_capture(request); });
  CHECK_THAT(msg, Contains("short.raw"));
  CHECK_THAT(msg, Contains("mlp-timing.raw"));
  CHECK_THAT(msg, Contains("operations inside its range, the timing pass " +
                           std::to_string(pass.ops.size())));
  CHECK_THAT(msg, Contains("--no-program-pass"));

  // A kernel of another grid: named by its number and both shapes.
  Made made = program_stream(timing, pass, 1);
  RawFile f = split_raw(write_raw(dir, "ok.raw", made.bytes));
  const size_t at = index_of_type(f, raw::RawType::kKernelShape);
  raw::RawKernelShape k;
  std::memcpy(&k, f.records[at].data() + sizeof(raw::RawRecordHead), sizeof(k));
  k.grid[0] += 1;
  std::memcpy(f.records[at].data() + sizeof(raw::RawRecordHead), &k, sizeof(k));
  request.program_path = write_raw(dir, "grid.raw", join(f));
  msg = fltest::trace_error_of([&] { convert_capture(request); });
  CHECK_THAT(msg,
             Contains("operation #" + std::to_string(kernel) + " is the timing pass's kernel"));
  CHECK_THAT(msg, Contains("grid " + std::to_string(k.grid[0]) + "x"));

  // A call record of an unknown kind: the reader names the record and byte.
  raw::RawApiAct call;
  const size_t c = index_of_type(f, raw::RawType::kApiAct);
  std::memcpy(&call, f.records[c].data() + sizeof(raw::RawRecordHead), sizeof(call));
  call.what = 9;
  std::memcpy(f.records[c].data() + sizeof(raw::RawRecordHead), &call, sizeof(call));
  const std::string bad = write_raw(dir, "bad.raw", join(f));
  msg = raw_error(bad);
  check_where(msg, bad, f, c);
  CHECK_THAT(msg, Contains("call activity: kind 9; expected 1 to 7"));

  // Another pass's stream in its place.
  request.program_path = data("mlp-timing.raw");
  msg = fltest::trace_error_of([&] { convert_capture(request); });
  CHECK_THAT(msg,
             Contains("mlp-timing.raw: the raw stream of a timing pass, not of a program pass"));
}

TEST_CASE("capture: the program pass's range is the timing pass's: every profiler interval",
          "[capture]") {
  fltest::TempDir dir;
  using W = raw::ApiWhat;
  // Two intervals, each start and stop recorded by the runtime and by the driver inside it, and a
  // launch between them that lies outside the range.
  std::string calls;
  for (const raw::RawApiAct& c : {call(100, 120, 1, W::kRangeStart),
                                  call(100, 110, 2, W::kRangeStart, 7, raw::ApiDomain::kDriver),
                                  call(150, 160, 10, W::kLaunch), call(200, 210, 3, W::kRangeStop),
                                  call(201, 205, 4, W::kRangeStop, 7, raw::ApiDomain::kDriver),
                                  call(250, 260, 11, W::kLaunch), call(300, 310, 5, W::kRangeStart),
                                  call(350, 360, 12, W::kLaunch), call(400, 410, 6, W::kRangeStop)})
    calls += record(raw::RawType::kApiAct, c);
  for (uint32_t corr : {10u, 11u, 12u})
    calls += record(raw::RawType::kKernelShape, kernel(1000 + corr, corr));
  const std::string end = record(raw::RawType::kEnd, raw::RawEnd{0, 0});

  const ProgramPass ranged = build_program_pass(read_raw(write_raw(
      dir, "ranged.raw", stream_head(R"({"mode":"program","range":"profiler"})") + calls + end)));
  CHECK(ranged.has_range);
  REQUIRE(ranged.ops.size() == 2);
  CHECK(ranged.ops[0].cpu_time == 150);
  CHECK(ranged.ops[1].cpu_time == 350);
  CHECK(ranged.range_start == 100);
  CHECK(ranged.range_end == 400);

  // --range all: every operation, whatever profiler calls the program makes.
  const ProgramPass all = build_program_pass(read_raw(
      write_raw(dir, "all.raw", stream_head(R"({"mode":"program","range":"all"})") + calls + end)));
  CHECK_FALSE(all.has_range);
  CHECK(all.ops.size() == 3);
}

TEST_CASE("capture: a program pass's syncs are the outermost calls of each thread", "[capture]") {
  fltest::TempDir dir;
  using W = raw::ApiWhat;
  const auto driver = raw::ApiDomain::kDriver;
  std::string calls;
  // Thread 1's runtime sync holds a driver sync inside it; thread 2 syncs meanwhile, and its own
  // driver call starts at the same nanosecond as its runtime call.
  for (const raw::RawApiAct& c :
       {call(10, 100, 1, W::kSync, 1), call(20, 50, 2, W::kSync, 2),
        call(20, 45, 3, W::kSync, 2, driver), call(30, 90, 4, W::kSync, 1, driver),
        call(120, 130, 5, W::kSync, 1, driver)})
    calls += record(raw::RawType::kApiAct, c);
  const ProgramPass p = build_program_pass(
      read_raw(write_raw(dir, "syncs.raw",
                         stream_head(R"({"mode":"program","range":"all"})") + calls +
                             record(raw::RawType::kEnd, raw::RawEnd{0, 0}))));
  REQUIRE(p.syncs.size() == 3);
  CHECK(p.syncs[0] == std::make_pair<uint64_t, uint64_t>(10, 100));
  CHECK(p.syncs[1] == std::make_pair<uint64_t, uint64_t>(20, 50));
  CHECK(p.syncs[2] == std::make_pair<uint64_t, uint64_t>(120, 130)); // a driver call of its own
}
