// Golden results: small configs whose full results are committed in tests/golden/<name>/.
// The trace is synthesised from synth.json, or named (relative to the source tree) by
// trace.json for a shipped real trace.
// A change to the model shows here first; if it is intended, regenerate with
//   FAULTLINE_UPDATE_GOLDEN=1 build/tests/faultline_tests "[golden]"
// and explain the difference in the commit.
#include "sim/config/reader.h"
#include "sim/run/results.h"
#include "sim/synth/synth.h"
#include "source_dir.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace faultline;
namespace fs = std::filesystem;

namespace {

void check_golden(const std::string& name) {
  unsetenv("FAULTLINE_CONFIGS"); // the shipped profiles
  const fs::path dir = fs::path(FAULTLINE_GOLDEN_DIR) / name;
  const bool real = fs::exists(dir / "trace.json");
  const fs::path trace =
      real ? fs::path(FAULTLINE_SOURCE_DIR) /
                 config::load_json_file((dir / "trace.json").string())["trace"].get<std::string>()
           : fs::temp_directory_path() / ("faultline-golden-" + name + ".fltrace");
  if (!real) {
    const synth::Params params =
        synth::params_from_json(config::load_json_file((dir / "synth.json").string()), name);
    synth::write_trace(params, trace.string(), "golden " + name);
  }
  const nlohmann::json out = run_sim({(dir / "config.json").string(), trace.string(), ""});
  if (!real) fs::remove(trace);
  nlohmann::json got = {{"results", out["results"]}, {"config", out["config"]}};
  if (out.contains("kernels")) got["kernels"] = out["kernels"];
  const fs::path expected_path = dir / "expected.json";
  if (std::getenv("FAULTLINE_UPDATE_GOLDEN")) {
    std::ofstream(expected_path) << got.dump(2) << "\n";
  }
  const nlohmann::json expected = config::load_json_file(expected_path.string());
  // Paths to the profiles differ between checkouts; everything else must match exactly.
  got["config"].erase("gpu");
  got["config"].erase("host_link");
  got["config"].erase("peer_link");
  nlohmann::json want = expected;
  want["config"].erase("gpu");
  want["config"].erase("host_link");
  want["config"].erase("peer_link");
  INFO("diff (expected -> got): " << nlohmann::json::diff(want, got).dump());
  CHECK(got == want);
}

} // namespace

TEST_CASE("golden: DNN-like trace at 2x oversubscription", "[golden]") {
  check_golden("dnn-half-fifo");
}

TEST_CASE("golden: streaming trace with LRU and small batches", "[golden]") {
  check_golden("stream-lru-small-batches");
}

TEST_CASE("golden: real ResNet-50 trace under the default config", "[golden]") {
  check_golden("real-resnet50-default");
}

TEST_CASE("golden: DNN-like issue-time trace (the CPU runs ahead) at 2x oversubscription",
          "[golden]") {
  check_golden("dnn-issue-half");
}
