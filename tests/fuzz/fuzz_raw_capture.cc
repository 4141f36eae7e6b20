// A raw capture stream (tracer/raw/raw_format.h) as `faultline capture convert` reads it: the
// stream's framing, then the whole conversion with the stream as both the timing and the access
// pass, into a trace in a scratch folder; and the stream as a program pass, its clock against
// itself as the timing pass.
#include "fuzz_support.h"
#include "tracer/convert/assemble.h"
#include "tracer/convert/program_pass.h"
#include "tracer/convert/raw_reader.h"

#include <algorithm>
#include <filesystem>
#include <unistd.h>
#include <vector>

namespace {

// The converter writes its trace by name and renames a rewritten header into place, so it needs
// a real folder; removed when the fuzzer exits.
struct Scratch {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("faultline-fuzz-raw-" + std::to_string(::getpid()));
  Scratch() { std::filesystem::create_directories(dir); }
  ~Scratch() { std::filesystem::remove_all(dir); }
  std::string trace() const { return (dir / "out.fltrace").string(); }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::InputFile file("capture.raw");
  static const Scratch scratch;
  const std::string& path = file.write(fuzz::view(data, size));
  bool framed = false;
  bool huge = false;
  fuzz::accept_errors([&] {
    const faultline::capture::RawStream raw = faultline::capture::read_raw(path);
    framed = true;
    // The converter lists every page of an allocation a kernel's arguments name: an allocation
    // of terabytes, which the reader takes (below 2^57), asks for that many pages, so only
    // streams whose allocations stay below 64 GiB are converted (as fuzz_alloc_history).
    for (const auto& e : raw.api)
      huge |= e.type == faultline::raw::RawType::kAlloc && e.alloc.bytes > (1ull << 36);
  });
  if (!framed || huge) return 0;
  faultline::capture::ConvertRequest request;
  request.timing_path = path;
  request.access_path = path;
  request.out_path = scratch.trace();
  fuzz::accept_errors([&] { faultline::capture::convert_capture(request); });
  fuzz::accept_errors([&] {
    using namespace faultline::capture;
    const RawStream raw = read_raw(path);
    const ProgramPass program = build_program_pass(raw);
    const Pass timing = build_pass(raw);
    const CpuClock clock(raw, timing, raw, program);
    std::vector<uint64_t> times;
    for (const Operation& op : timing.ops) times.push_back(op.cpu_time);
    std::sort(times.begin(), times.end());
    uint64_t last = 0;
    for (uint64_t time : times) {
      const uint64_t t = clock(time);
      if (t < last) __builtin_trap(); // the map never runs backwards
      last = t;
    }
  });
  return 0;
}
