// faultline._faultline: the simulator, the trace reader and the policy registry for
// faultline/__init__.py, which gives them their Python shape. Documents cross as JSON text, so
// that a result has exactly the keys `faultline sim --out` writes (one writer:
// sim/run/results.cc). faultline's errors become the Python exceptions Error, ConfigError,
// TraceError and SimulationError with the same located messages. The GIL is released while a
// simulation or a sweep runs, so simulations run in parallel from Python threads.
#include "policies/registry.h"
#include "sim/core/error.h"
#include "sim/run/results.h"
#include "sim/sweep/sweep.h"
#include "sim/trace/inspect.h"
#include "sim/trace/reader.h"

#include <memory>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <string>

namespace nb = nanobind;
using namespace faultline;

namespace {

// The run config is a JSON document; `name` stands for it in error messages (its file, or
// "<dict>").
std::string simulate(const std::string& trace, const std::string& config, const std::string& name) {
  SimRequest request;
  request.trace_path = trace;
  request.config_path = name;
  request.config_doc = nlohmann::json::parse(config);
  std::string out;
  {
    nb::gil_scoped_release unlocked;
    out = run_sim(request).dump();
  }
  return out;
}

// Streams a trace's records, one JSON object each (`faultline trace dump`'s lines).
class Records {
public:
  explicit Records(const std::string& path) : reader_(std::make_unique<trace::TraceReader>(path)) {}
  std::string metadata() const { return reader_->metadata().dump(); }
  std::string next() {
    trace::Record r;
    if (!reader_->next(r)) throw nb::stop_iteration();
    return trace::record_json(r).dump();
  }

private:
  std::unique_ptr<trace::TraceReader> reader_;
};

} // namespace

NB_MODULE(_faultline, m) {
  // Translators are tried newest first: the base class goes first.
  static nb::exception<Error> error(m, "Error");
  static nb::exception<ConfigError> config_error(m, "ConfigError", error);
  static nb::exception<TraceError> trace_error(m, "TraceError", error);
  static nb::exception<SimulationError> simulation_error(m, "SimulationError", error);
  static nb::exception<UsageError> usage_error(m, "UsageError", error);
  m.def("simulate", &simulate, nb::arg("trace"), nb::arg("config"), nb::arg("name"));
  m.def("policies", [] { return policies::Registry::instance().names(); });
  // Runs a sweep file as `faultline sweep` does (its points and tables under its "out"); returns
  // where they are and how many points ran or were reused.
  m.def(
      "sweep",
      [](const std::string& path, unsigned jobs) {
        nlohmann::json out;
        {
          nb::gil_scoped_release unlocked;
          const sweep::Sweep s = sweep::load_sweep(path);
          const sweep::Outcome o = sweep::run_sweep(s, {jobs, false, {}});
          out = {{"out", s.out_dir}, {"ran", o.ran}, {"reused", o.reused}};
        }
        return out.dump();
      },
      nb::arg("path"), nb::arg("jobs"));
  m.def("trace_stats", [](const std::string& path) {
    std::string out;
    {
      nb::gil_scoped_release unlocked;
      out = trace::compute_stats(path).to_json().dump();
    }
    return out;
  });
  nb::class_<Records>(m, "Records")
      .def(nb::init<const std::string&>())
      .def("metadata", &Records::metadata)
      .def("__iter__", [](nb::handle self) { return self; })
      .def("__next__", &Records::next);
}
