// The faultline command line: one binary, one subcommand per job.
#include "sim/alloc/relayout.h"
#include "source_dir.h"
#include "sim/config/reader.h"
#include "sim/config/schema.h"
#include "sim/core/error.h"
#include "sim/core/values.h"
#include "sim/live/command.h"
#include "sim/run/result_fields.h"
#include "sim/run/results.h"
#include "sim/sweep/sweep.h"
#include "sim/synth/synth.h"
#include "sim/topology/topology.h"
#include "sim/trace/inspect.h"
#include "tracer/capture/capture.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

namespace faultline {
namespace {

const char* kUsage =
    "faultline: a trace-driven simulator of GPU unified memory\n"
    "\n"
    "usage: faultline <command> [options]\n"
    "  sim         simulate a trace under a run config\n"
    "  sweep       run a grid of simulations in parallel into one results table\n"
    "  synth       write a synthetic trace (tests and benchmarks only)\n"
    "  trace dump  print a trace as JSON lines\n"
    "  trace stats print a trace's footprint, kernels, accesses, blocks and reuse\n"
    "  capture     record a trace of a CUDA program or PyTorch training run (needs a GPU)\n"
    "  replay      re-execute a trace on a real GPU under a policy and a budget (needs a GPU)\n"
    "  calibrate   measure a GPU's fault, migration and eviction costs and fit a profile\n"
    "  topology    print the routes of a machine topology (a preset name or a JSON file)\n"
    "  alloc       replay an allocation history through allocator models (caching, expandable\n"
    "              segments, GMLake stitching), or re-place a trace's blocks as one would\n"
    "  results     'results fields': every field a result document holds, its unit and meaning\n"
    "  config      'config schema': every config key, its type, default, bounds and meaning\n"
    "\n"
    "'faultline <command> --help' describes a command.\n";

const char* kSimUsage =
    "usage: faultline sim --config C --trace T [--out results.json] [--timeline t.json]\n"
    "                     [--iterations N] [--progress | --no-progress] [--check-invariants]\n"
    "Replays trace T under run config C and writes the results as JSON (stdout by default),\n"
    "with the resolved config, the git revision and a row per training step. --iterations N\n"
    "runs N steps (overrides the config's \"iterations\"): the trace's first N, or all of them\n"
    "and then its last step again until N have run. --timeline writes Chrome trace-event JSON\n"
    "(open it in the Perfetto UI). A progress line goes to stderr when it is a terminal.\n"
    "--check-invariants verifies the memory model after every record (slow).\n";

const char* kSynthUsage =
    "usage: faultline synth --pattern stream|random|dnn --out T [--footprint SIZE]\n"
    "                       [--iterations N] [--seed S] [--kernels K] [--layers L]\n"
    "                       [--touches N] [--ns-per-access NS]\n"
    "Writes a synthetic trace. stream: K kernels sweep K slices in turn; random: K kernels\n"
    "touch random 64 KB pages; dnn: L layers forward then backward then an optimizer step,\n"
    "weights reused every iteration, activations freed in reverse order. Each iteration is a\n"
    "training step in the header (\"steps\"). SIZE takes K, M, G (powers of 1024). Defaults:\n"
    "footprint 1G, iterations 2, seed 1, kernels 16, layers 12, touches 1, ns-per-access 100.\n";

const char* kSweepUsage =
    "usage: faultline sweep SWEEP.json [--jobs N] [--progress | --no-progress]\n"
    "Expands the sweep's grid (traces x policies x capacity fractions x varied config values),\n"
    "runs the points not already finished on N threads (default: all cores) and writes\n"
    "OUT/points/NNNN.json per point and OUT/results.csv and OUT/results.json for all.\n"
    "An interrupted sweep resumes where it stopped. The sweep file format is in\n"
    "experiments/README.md.\n";

const char* kTopologyUsage =
    "usage: faultline topology NAME|FILE\n"
    "Reads a topology (configs/topologies/NAME.json or FILE) and prints, for every pair of\n"
    "processors, the route the simulator uses (widest path, no third GPU) and its bandwidth.\n";

const char* kAllocUsage =
    "usage: faultline alloc run --history H [--config C] [--allocators a,b] [--out R.json]\n"
    "                           [--check-invariants]\n"
    "       faultline alloc relayout --trace T --allocator NAME [--config C] --out T2\n"
    "                                [--stats S.json]\n"
    "run: replays allocation history H (a PyTorch memory snapshot, pickle or JSON, optionally\n"
    "zstd-compressed; the tracer's allocator history; or a faultline trace's blocks) through\n"
    "each allocator of config C (default configs/alloc/default.json) and writes peak allocated,\n"
    "requested and reserved bytes, fragmentation, driver calls and usage over time as JSON.\n"
    "relayout: writes trace T with its blocks placed by allocator NAME, for 'faultline sim'.\n";

const char* kTraceUsage =
    "usage: faultline trace dump T     one JSON object per line: the header, then each record\n"
    "       faultline trace stats T    footprint, kernels, accesses, distinct 2 MB blocks, reuse,\n"
    "                                  training steps and each step's records\n";

// Options as --name value pairs and --flag switches; anything else is a usage error.
class Args {
public:
  Args(int argc, char** argv, int first, const std::vector<std::string>& flags) {
    for (int i = first; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        help = true;
      } else if (a.rfind("--", 0) == 0 && std::count(flags.begin(), flags.end(), a.substr(2))) {
        values_[a.substr(2)] = "";
      } else if (a.rfind("--", 0) == 0) {
        if (i + 1 >= argc) throw UsageError(a + " needs a value");
        values_[a.substr(2)] = argv[++i];
      } else {
        positional.push_back(a);
      }
    }
  }
  std::string take(const std::string& name, const std::string& fallback = "") {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    std::string v = it->second;
    values_.erase(it);
    return v;
  }
  std::string need(const std::string& name) {
    if (!values_.count(name)) throw UsageError("--" + name + " is required");
    return take(name);
  }
  bool flag(const std::string& name) { return values_.count(name) && (take(name), true); }
  void done() {
    if (!values_.empty()) throw UsageError("unknown option --" + values_.begin()->first);
  }
  bool help = false;
  std::vector<std::string> positional;

private:
  std::map<std::string, std::string> values_;
};

void write_output(const nlohmann::json& doc, const std::string& path) {
  const std::string text = doc.dump(2) + "\n";
  if (path.empty()) {
    std::cout << text;
    return;
  }
  std::ofstream out(path);
  if (!out || !(out << text)) throw Error(path + ": cannot write results");
}

std::string command_line(int argc, char** argv) {
  std::string s = "faultline";
  for (int i = 1; i < argc; ++i) s += std::string(" ") + argv[i];
  return s;
}

int cmd_sim(int argc, char** argv) {
  Args args(argc, argv, 2, {"progress", "no-progress", "check-invariants"});
  if (args.help) return std::cout << kSimUsage, 0;
  SimJob job;
  job.config_path = args.need("config");
  job.trace_path = args.need("trace");
  const std::string out = args.take("out");
  job.timeline_path = args.take("timeline");
  job.iterations = parse_iterations(args.take("iterations"));
  job.progress = isatty(STDERR_FILENO) != 0;
  if (args.flag("progress")) job.progress = true;
  if (args.flag("no-progress")) job.progress = false;
  job.check_invariants = args.flag("check-invariants");
  args.done();
  if (!args.positional.empty()) throw UsageError("unexpected argument " + args.positional[0]);
  write_output(run_job(job), out);
  return 0;
}

int cmd_synth(int argc, char** argv) {
  Args args(argc, argv, 2, {});
  if (args.help) return std::cout << kSynthUsage, 0;
  nlohmann::json p = {{"pattern", args.need("pattern")}};
  const std::string out = args.need("out");
  const std::map<std::string, std::string> numeric = {
      {"footprint", "footprint"},           {"iterations", "iterations"}, {"seed", "seed"},
      {"kernels", "kernels_per_iteration"}, {"layers", "layers"},         {"touches", "touches"},
      {"ns-per-access", "ns_per_access"}};
  for (const auto& [option, key] : numeric) {
    const std::string v = args.take(option);
    if (!v.empty()) p[key] = parse_number(v, "--" + option);
  }
  args.done();
  const synth::Params params = synth::params_from_json(p, "synth options");
  const uint64_t n = synth::write_trace(params, out, command_line(argc, argv));
  std::cerr << "wrote " << out << ": " << n << " accesses\n";
  return 0;
}

int cmd_sweep(int argc, char** argv) {
  Args args(argc, argv, 2, {"progress", "no-progress"});
  if (args.help) return std::cout << kSweepUsage, 0;
  if (args.positional.size() != 1) return std::cerr << kSweepUsage, 2;
  sweep::RunOptions options;
  const std::string jobs = args.take("jobs");
  if (!jobs.empty()) options.jobs = static_cast<unsigned>(parse_number(jobs, "--jobs"));
  options.progress = isatty(STDERR_FILENO) != 0;
  if (args.flag("progress")) options.progress = true;
  if (args.flag("no-progress")) options.progress = false;
  args.done();
  const sweep::Sweep s = sweep::load_sweep(args.positional[0]);
  const sweep::Outcome o = sweep::run_sweep(s, options);
  std::cerr << "sweep " << s.name << ": " << s.points.size() << " points (" << o.ran << " run, "
            << o.reused << " already done); tables in " << s.out_dir << "\n";
  return 0;
}

int cmd_trace(int argc, char** argv) {
  Args args(argc, argv, 2, {});
  if (args.help) return std::cout << kTraceUsage, 0;
  if (args.positional.size() != 2) return std::cerr << kTraceUsage, 2;
  args.done();
  if (args.positional[0] == "dump") {
    trace::dump(args.positional[1], std::cout);
  } else if (args.positional[0] == "stats") {
    nlohmann::json doc = trace::compute_stats(args.positional[1]).to_json();
    std::cout << doc.dump(2) << "\n";
  } else {
    throw UsageError("unknown trace command \"" + args.positional[0] + "\"; known: dump, stats");
  }
  return 0;
}

// `faultline results fields`: the declared result fields as the Markdown table of sim/README.md.
int cmd_results(int argc, char** argv) {
  if (argc != 3 || std::string(argv[2]) != "fields")
    throw UsageError("usage: faultline results fields");
  std::cout << result_fields_markdown();
  return 0;
}

// `faultline config schema [--format markdown|json] [SECTION]`: sim/config/schema.h.
int cmd_config(int argc, char** argv) {
  if (argc < 3 || std::string(argv[2]) != "schema")
    throw UsageError("usage: faultline config schema [--format markdown|json] [SECTION]");
  return config::schema_command(std::vector<std::string>(argv + 3, argv + argc));
}

int cmd_topology(int argc, char** argv) {
  Args args(argc, argv, 2, {});
  if (args.help) return std::cout << kTopologyUsage, 0;
  if (args.positional.size() != 1) return std::cerr << kTopologyUsage, 2;
  args.done();
  const nlohmann::json doc = {{"topology", args.positional[0]},
                              {"capacity", {{"fraction_of_footprint", 1.0}}},
                              {"policy", {{"name", "ondemand"}}}};
  const config::RunConfig c = config::parse_run_config(doc, "faultline topology");
  std::cout << Topology(config::machine_topology(c)).describe();
  return 0;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int cmd_alloc(int argc, char** argv) {
  Args args(argc, argv, 2, {"check-invariants"});
  if (args.help) return std::cout << kAllocUsage, 0;
  if (args.positional.size() != 1) return std::cerr << kAllocUsage, 2;
  const std::string config =
      args.take("config", std::string(FAULTLINE_SOURCE_CONFIGS) + "/alloc/default.json");
  const std::string out = args.take("out");
  if (args.positional[0] == "run") {
    const std::string history = args.need("history");
    const auto allocators = split_list(args.take("allocators"));
    const bool check = args.flag("check-invariants");
    args.done();
    write_output(alloc::run_alloc(history, config, allocators, check), out);
    return 0;
  }
  if (args.positional[0] != "relayout")
    throw UsageError("unknown alloc command \"" + args.positional[0] + "\"; known: run, relayout");
  const std::string trace = args.need("trace");
  const std::string allocator = args.need("allocator");
  const std::string stats_path = args.take("stats");
  if (out.empty()) throw UsageError("--out is required");
  args.done();
  nlohmann::json resolved;
  const alloc::ReplayConfig c =
      alloc::read_replay_config(config::load_json_file(config), config, resolved);
  alloc::require_allocator(allocator);
  nlohmann::json doc = {{"faultline", {{"git_revision", git_revision()}}},
                        {"config", resolved},
                        {"trace", trace},
                        {"out", out},
                        {"allocator", allocator}};
  doc["relayout"] = alloc::to_json(alloc::relayout(trace, out, allocator, c));
  doc["relayout"]["model"].erase("timeline");
  if (!stats_path.empty()) write_output(doc, stats_path);
  std::cerr << "wrote " << out << "\n";
  return 0;
}

int dispatch(int argc, char** argv) {
  if (argc < 2) return std::cerr << kUsage, 2;
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) return std::cout << kUsage, 0;
  const std::string cmd = argv[1];
  if (cmd == "sim") return cmd_sim(argc, argv);
  if (cmd == "synth") return cmd_synth(argc, argv);
  if (cmd == "sweep") return cmd_sweep(argc, argv);
  if (cmd == "trace") return cmd_trace(argc, argv);
  if (cmd == "capture") return capture::capture_command(argc, argv);
  if (cmd == "replay") return live::replay_command(argc, argv);
  if (cmd == "calibrate") return live::calibrate_command(argc, argv);
  if (cmd == "topology") return cmd_topology(argc, argv);
  if (cmd == "results") return cmd_results(argc, argv);
  if (cmd == "alloc") return cmd_alloc(argc, argv);
  if (cmd == "config") return cmd_config(argc, argv);
  throw UsageError("unknown command \"" + cmd + "\"; known: sim, sweep, synth, trace, capture, " +
                   "replay, calibrate, topology, alloc, results, config");
}

} // namespace
} // namespace faultline

int main(int argc, char** argv) {
  try {
    return faultline::dispatch(argc, argv);
  } catch (const faultline::UsageError& e) {
    std::cerr << "faultline: " << e.what() << "\n(see 'faultline --help')\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "faultline: error: " << e.what() << "\n";
    return 1;
  }
}
