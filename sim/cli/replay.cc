// `faultline replay`: a trace on a real GPU under a policy and a budget (sim/live/command.h and
// sim/live/replay.h do the work).
#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/core/error.h"
#include "sim/live/command.h"

#include <memory>

namespace faultline::cli {
namespace {

const char* kExplanation =
    "Re-executes trace T on a real GPU under policy P (default ondemand; --params is its\n"
    "policy.params object) with a residency budget B: a fraction of the footprint (0.5 or 50%)\n"
    "or bytes (8G). Writes the same result fields as 'faultline sim', measured. Refuses when\n"
    "the trace's memory would come within --margin (default 2G) of the GPU's free memory.\n"
    "--peer-budget gives the policy the next GPU's spare memory as a victim cache (harvest\n"
    "evicts there with cudaMemPrefetchAsync to that GPU; faults fetch back over NVLink); it\n"
    "keeps --peer-reserve (default 100M) free, as the simulator's driver.peer_reserve_bytes.\n"
    "A policy that watches faults (deepum, oracle) gets each kernel's faults at its end: the\n"
    "pages it found off the GPU, from the replay's books (--faults books, the default), or\n"
    "CUPTI's fault records, drained after every --drain-every N kernels (--faults cupti;\n"
    "CUPTI loses most of them, and each drain slows the next kernel).\n"
    "CUPTI's unified-memory counters stay off, as in the program, unless --counters: they\n"
    "count the bytes each way and the GPU's fault records (results.bytes_host_to_gpu,\n"
    "bytes_gpu_to_host, faults, else left out) and slow the GPU's fault path.\n"
    "--config C takes the policy, its params, the capacity (as the budget) and the iterations\n"
    "from the run config 'faultline sim' takes, so one file drives both; options given here\n"
    "override it (--policy drops the config's params). The replay always keeps a residency\n"
    "budget, the simulator's capacity mode \"budget\"; the config's GPU profile and driver\n"
    "settings describe the simulated machine and are not used.\n"
    "--iterations N runs N training steps, as 'faultline sim --iterations': the trace's first\n"
    "N, or all of them and then its last step again; the result has a row per step.\n"
    "Needs libfaultline_live.so (built where the CUDA toolkit is) beside the binary or in\n"
    "$FAULTLINE_LIVE.";

// The options as given; request_of applies them over the run config, so that the order on the
// command line does not matter.
struct Options {
  std::string trace, config, policy, params, faults, out, call_log;
  std::optional<Budget> budget;
  std::optional<uint64_t> margin, peer_budget, peer_reserve, drain_every;
  uint64_t iterations = 0;
  bool per_kernel = false, eviction_bytes = false, drain_counters = false, counters = false;
  int device = 0;
};

void define(CLI::App& sub, Options& o) {
  sub.add_option("--trace", o.trace, "the trace to replay")->required()->type_name("T");
  sub.add_option("--config", o.config, "a run config of 'faultline sim' (see below)")
      ->type_name("C");
  sub.add_option("--policy", o.policy, "the policy (default ondemand)")->type_name("P");
  sub.add_option("--params", o.params, "the policy's params, a JSON object")->type_name("JSON");
  add_budget(sub, o.budget, "residency budget: a fraction (0.5), a percentage (50%) or bytes (8G)");
  add_bytes(sub, "--margin", o.margin, "GPU memory to leave free (default 2G)");
  sub.add_option("--faults", o.faults, "where a policy learns faults: books (default) or cupti")
      ->type_name("books|cupti");
  add_count(sub, "--drain-every", o.drain_every, "--faults cupti: kernels between drains");
  sub.add_flag("--per-kernel", o.per_kernel, "add a row per kernel to the result");
  sub.add_flag("--counters", o.counters,
               "CUPTI's unified-memory counters on: bytes each way and fault records in the "
               "result, a slower fault path than the program's (needed by --faults cupti, "
               "--eviction-bytes, --drain-counters)");
  sub.add_flag("--eviction-bytes", o.eviction_bytes,
               "diagnosis: measure each budget eviction's bytes alone (slow; not for timing)");
  sub.add_flag("--drain-counters", o.drain_counters,
               "drain CUPTI's records after every kernel: every byte counted (a run for bytes, "
               "not for timing)");
  sub.add_option("--call-log", o.call_log,
                 "diagnosis: a CSV row per migration call (kernel, kind, trace address, bytes, "
                 "start and CPU ns) into FILE")
      ->type_name("FILE");
  add_device(sub, o.device);
  add_iterations(sub, o.iterations, "training steps to run (overrides the config's)");
  add_bytes(sub, "--peer-budget", o.peer_budget, "the next GPU's memory the policy may use");
  add_bytes(sub, "--peer-reserve", o.peer_reserve, "peer memory kept free (default 100M)");
  add_output(sub, o.out, "where the results go (default: stdout)")->type_name("results.json");
}

void apply_faults(const Options& o, live::ReplayRequest& request) {
  using Source = live::ReplayRequest::FaultSource;
  if (o.faults == "cupti")
    request.fault_source = Source::kCupti;
  else if (!o.faults.empty() && o.faults != "books")
    throw UsageError("--faults " + o.faults + ": expected books or cupti");
  if (!o.drain_every) return;
  if (request.fault_source != Source::kCupti)
    throw UsageError("--drain-every applies only with --faults cupti");
  if (*o.drain_every == 0) throw UsageError("--drain-every 0: expected 1 or more");
  request.drain_every = static_cast<uint32_t>(*o.drain_every);
}

live::ReplayRequest request_of(const Options& o) {
  live::ReplayRequest request;
  if (!o.config.empty()) live::apply_run_config(o.config, request);
  request.trace_path = o.trace;
  if (!o.policy.empty()) {
    request.policy = o.policy;
    request.policy_params = nlohmann::json::object(); // the config's params were another's
  }
  if (!o.params.empty()) {
    request.policy_params = nlohmann::json::parse(o.params, nullptr, false);
    if (!request.policy_params.is_object())
      throw UsageError("--params " + o.params + ": expected a JSON object");
  }
  if (o.budget) { // replaces the run config's, bytes or fraction
    request.budget_bytes = o.budget->bytes;
    if (o.budget->fraction > 0) request.budget_fraction = o.budget->fraction;
  }
  if (o.margin) request.margin = *o.margin;
  if (o.peer_budget) request.peer_budget_bytes = *o.peer_budget;
  if (o.peer_reserve) request.peer_reserve_bytes = *o.peer_reserve;
  apply_faults(o, request);
  if (o.per_kernel) request.per_kernel = true;
  if (o.eviction_bytes) request.eviction_bytes = true;
  if (o.drain_counters) request.drain_counters = true;
  if (o.counters) request.counters = true;
  if (o.iterations) request.iterations = o.iterations;
  if (!o.call_log.empty()) request.call_log = o.call_log;
  return request;
}

} // namespace

void add_replay(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "replay", "re-execute a trace on a real GPU under a policy and a budget (needs a GPU)",
      kExplanation);
  auto o = std::make_shared<Options>();
  define(*sub, *o);
  sub->callback([o] { write_result(live::replay_on_gpu(request_of(*o), o->device), o->out); });
}

live::ReplayRequest replay_request(const std::vector<std::string>& args) {
  CLI::App app("replay", "replay");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  Options o;
  define(app, o);
  app.parse(std::vector<std::string>(args.rbegin(), args.rend())); // CLI11 takes them reversed
  return request_of(o);
}

} // namespace faultline::cli
