// `faultline alloc run|relayout`: allocator models (sim/alloc/replay.h, sim/alloc/relayout.h).
#include "sim/alloc/relayout.h"
#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/config/reader.h"
#include "sim/run/results.h"
#include "source_dir.h"

#include <iostream>
#include <memory>

namespace faultline::cli {
namespace {

struct Options {
  std::string config = std::string(FAULTLINE_SOURCE_CONFIGS) + "/alloc/default.json";
  std::string out, history, allocators, trace, allocator, stats;
  bool check = false;
};

void add_alloc_config(CLI::App& sub, Options& o) {
  sub.add_option("--config", o.config, "the allocator config (default configs/alloc/default.json)")
      ->type_name("C");
}

void add_run(CLI::App& alloc, const std::shared_ptr<Options>& o) {
  CLI::App* run =
      add_command(alloc, "run", "replay an allocation history through allocator models", "");
  run->add_option("--history", o->history, "the allocation history")->required()->type_name("H");
  add_alloc_config(*run, *o);
  run->add_option("--allocators", o->allocators, "the allocators to run (default: the config's)")
      ->type_name("a,b");
  add_output(*run, o->out, "where the results go (default: stdout)")->type_name("R.json");
  run->add_flag("--check-invariants", o->check, "check each model's invariants after every event");
  run->callback([o] {
    write_result(alloc::run_alloc(o->history, o->config, split_list(o->allocators), o->check),
                 o->out);
  });
}

void relayout(const Options& o) {
  nlohmann::json resolved;
  const alloc::ReplayConfig c =
      alloc::read_replay_config(config::load_json_file(o.config), o.config, resolved);
  alloc::require_allocator(o.allocator);
  nlohmann::json doc = {{"faultline", {{"git_revision", git_revision()}}},
                        {"config", resolved},
                        {"trace", o.trace},
                        {"out", o.out},
                        {"allocator", o.allocator}};
  doc["relayout"] = alloc::to_json(alloc::relayout(o.trace, o.out, o.allocator, c));
  doc["relayout"]["model"].erase("timeline");
  if (!o.stats.empty()) write_result(doc, o.stats);
  std::cerr << "wrote " << o.out << "\n";
}

void add_relayout(CLI::App& alloc, const std::shared_ptr<Options>& o) {
  CLI::App* sub = add_command(alloc, "relayout",
                              "write a trace with its blocks placed by an allocator model", "");
  sub->add_option("--trace", o->trace, "the trace")->required()->type_name("T");
  sub->add_option("--allocator", o->allocator, "caching, expandable or gmlake")
      ->required()
      ->type_name("NAME");
  add_alloc_config(*sub, *o);
  add_output(*sub, o->out, "the trace to write")->required()->type_name("T2");
  add_output(*sub, o->stats, "write the relayout's statistics as JSON", "--stats")
      ->type_name("S.json");
  sub->callback([o] { relayout(*o); });
}

} // namespace

void add_alloc(CLI::App& app) {
  CLI::App* alloc = add_command(
      app, "alloc",
      "allocator models (caching, expandable segments, GMLake stitching) over an "
      "allocation history (run) or a trace's blocks (relayout)",
      "run: replays allocation history H (a PyTorch memory snapshot, pickle or JSON, optionally\n"
      "zstd-compressed; the tracer's allocator history; or a faultline trace's blocks) through\n"
      "each allocator of config C (default configs/alloc/default.json) and writes peak allocated,\n"
      "requested and reserved bytes, fragmentation, driver calls and usage over time as JSON.\n"
      "relayout: writes trace T with its blocks placed by allocator NAME, for 'faultline sim'.");
  alloc->require_subcommand(1);
  auto o = std::make_shared<Options>();
  add_run(*alloc, o);
  add_relayout(*alloc, o);
}

} // namespace faultline::cli
