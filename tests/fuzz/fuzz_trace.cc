// The trace reader (sim/trace/reader.h) as `faultline trace stats` and `trace dump` drive it.
// An input that starts with zstd's magic is the file as is; any other input is the decompressed
// stream, compressed here, so that mutations reach the record decoder instead of stopping at
// zstd's checksum.
#include "fuzz_support.h"
#include "sim/trace/inspect.h"

#include <ostream>
#include <streambuf>
#include <zstd.h>

namespace {

std::string as_trace_file(std::string_view input) {
  static constexpr char kZstdMagic[] = "\x28\xb5\x2f\xfd";
  if (input.substr(0, 4) == std::string_view(kZstdMagic, 4)) return std::string(input);
  std::string out(ZSTD_compressBound(input.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), input.data(), input.size(), 1);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::InputFile file("trace.fltrace");
  const std::string& path = file.write(as_trace_file(fuzz::view(data, size)));
  fuzz::accept_errors([&] { faultline::trace::compute_stats(path); });
  NullBuffer null;
  std::ostream out(&null);
  fuzz::accept_errors([&] { faultline::trace::dump(path, out); });
  return 0;
}
