// Every field a result document holds is declared in sim/run/result_fields.cc, for both backends:
// a simulation with per-kernel rows and repeated steps, and the live replay on the fake device.
#include "fake_device.h"
#include "sim/live/replay.h"
#include "sim/run/result_fields.h"
#include "sim/run/results.h"
#include "sim/synth/synth.h"
#include "sim_fixture.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace faultline;
using nlohmann::json;

namespace {

// Leaf paths of `doc`, arrays written as "[]"; objects declared free-form are not entered.
void leaves(const json& doc, const std::string& path, std::set<std::string>& out) {
  if (!path.empty() && result_field_declared(path + ".*")) return out.insert(path + ".*"), void();
  if (doc.is_object() && !doc.empty()) {
    for (const auto& [key, value] : doc.items())
      leaves(value, path.empty() ? key : path + "." + key, out);
  } else if (doc.is_array() && !doc.empty() && doc[0].is_object()) {
    for (const json& element : doc) leaves(element, path + "[]", out);
  } else {
    out.insert(path);
  }
}

void check_declared(const json& result) {
  std::set<std::string> paths;
  leaves(result, "", paths);
  REQUIRE(paths.size() > 40);
  for (const std::string& p : paths) {
    INFO(p);
    CHECK(result_field_declared(p));
  }
}

std::string dnn_trace(const simtest::Scratch& s) {
  synth::Params p;
  p.footprint = 64 << 20;
  p.iterations = 2;
  p.layers = 4;
  synth::write_trace(p, s.file("dnn.fltrace"), "test");
  return s.file("dnn.fltrace");
}

} // namespace

TEST_CASE("results: every field the simulator writes is declared", "[results]") {
  simtest::Scratch s;
  json config = simtest::Scratch::run_config();
  config["per_kernel"] = true;
  SimRequest request;
  request.config_path = "test config";
  request.config_doc = config;
  request.trace_path = dnn_trace(s);
  request.iterations = 4;
  check_declared(run_sim(request));
}

TEST_CASE("results: every field the live replay writes is declared", "[results]") {
  simtest::Scratch s;
  fltest::FakeDevice device;
  live::ReplayRequest request;
  request.trace_path = dnn_trace(s);
  request.budget_fraction = 0.5;
  request.margin = 0;
  request.per_kernel = true;
  request.iterations = 3;
  check_declared(live::run_replay(request, device));
}

TEST_CASE("results: every field the one writer can write is declared", "[results]") {
  for (const std::string& path : written_paths()) {
    INFO(path);
    CHECK(result_field_declared(path));
  }
}

TEST_CASE("results: declared fields are unique and say who writes them", "[results]") {
  std::set<std::string> seen;
  for (const ResultField& f : result_fields()) {
    INFO(f.path);
    CHECK(seen.insert(f.path).second);
    CHECK((f.backends == "sim" || f.backends == "live" || f.backends == "both" ||
           f.backends == "program" || f.backends == "all"));
    CHECK(!f.unit.empty());
    CHECK(!f.meaning.empty());
  }
  CHECK_FALSE(result_field_declared("results.no_such_field"));
  CHECK(result_field_declared("trace.metadata.capture.access_pages"));
}
