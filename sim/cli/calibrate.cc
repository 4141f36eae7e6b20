// `faultline calibrate`: measure a GPU and fit a profile (sim/live/command.h and
// sim/live/calibrate.h do the work).
#include "sim/cli/app.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/core/error.h"
#include "sim/live/command.h"

#include <algorithm>
#include <memory>

namespace faultline::cli {

void add_calibrate(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "calibrate", "measure a GPU's fault, migration and eviction costs and fit a profile",
      "Runs microbenchmarks on the GPU (fault batches against blocks and pages per block, first\n"
      "touch and host-to-GPU faults, prefetch bandwidth each way against size, eviction, CPU\n"
      "faults, peer copies where there is a second GPU; each the median of --repeats runs,\n"
      "default 5), fits a GPU profile to them and writes\n"
      "DIR/calibration/NAME.json (measurements, command, fit report), DIR/gpus/NAME.json and\n"
      "DIR/links/NAME-host.json (and NAME-peer.json). DIR defaults to configs. The memory size\n"
      "(and the peer link without a second GPU) come from --base (default h200). --refit fits\n"
      "committed measurements again without a GPU, with their name and base unless given.\n"
      "It measures with CUPTI's unified-memory counters off, as programs run (--cupti-counters:\n"
      "on, for the runs that count bytes with them).\n"
      "--from PROFILE calibrates one machine in about a minute: the warm-up, eviction, swap,\n"
      "prefetch and replay-rhythm benchmarks, one large transfer each way and the fault path at\n"
      "twelve points of each kind (first touch and from the host; 1 to 1024 blocks, 1 to 32\n"
      "pages a block, two in rounds over the blocks), fitted from PROFILE's values (a full\n"
      "calibration of the same GPU model); PROFILE is also the base, whose memory size and peer\n"
      "link stand. It measures everything twice in a row (--moments, default 2 with --from,\n"
      "else 1) and keeps the moment whose fault benchmarks took least: the lent hosts switch\n"
      "between two states that price the fault path 1.5-1.9x apart, and programs run in the\n"
      "faster. --keep-fault-path keeps PROFILE's fault path instead of fitting one. With\n"
      "--refit, --from derives such a calibration from a full one's measurements (the same\n"
      "benchmarks, fewer points), or refits a per-machine one from PROFILE's fault path instead\n"
      "of the one it recorded.\n"
      "--pool FULL.json (with --refit, repeatable) adds other instances' fault benchmarks to the\n"
      "fit, so a shipped fault path is not one instance's. --combine M.json (with --refit,\n"
      "repeatable) fits the median of one instance's calibrations made at several moments (a\n"
      "campaign's before and after its runs): its costs move with time; --combine-by fastest\n"
      "keeps the fastest moment's instead. --eviction-ns N (with --refit) prices the eviction\n"
      "benchmark and the copies back to the host at N ns a 2 MB chunk with its copy (e.g. what\n"
      "one replay's call log shows its evictions paid, experiments/live/call_log.py) instead of\n"
      "the calibration's own level, after any --combine: that run re-simulated at the price it\n"
      "met.");
  auto c = std::make_shared<live::CalibrateRequest>();
  auto repeats = std::make_shared<std::optional<uint64_t>>();
  CLI::Option* name = sub->add_option("--name", c->settings.name,
                                      "the profile's name (required "
                                      "unless --refit)")
                          ->type_name("NAME");
  CLI::Option* base = sub->add_option("--base", c->settings.base,
                                      "the profile whose memory size and peer link stand "
                                      "(default h200)")
                          ->type_name("PROFILE");
  add_count(*sub, "--repeats", *repeats, "runs per point, their median kept (default 5)");
  add_bytes(*sub, "--margin", c->settings.margin, "GPU memory to leave free (default 2G)");
  add_device(*sub, c->device);
  sub->add_flag("--quick", c->settings.quick, "fewer and smaller points, for tests and smoke runs");
  CLI::Option* from = sub->add_option("--from", c->settings.from,
                                      "per-machine calibration over this profile (see above)")
                          ->type_name("PROFILE");
  sub->add_flag("--keep-fault-path", c->settings.keep_fault_path,
                "with --from: keep the profile's fault path rather than fit this machine's")
      ->needs(from);
  sub->add_flag("--cupti-counters", c->settings.cupti_counters,
                "measure with CUPTI's unified-memory counters on, as `replay --counters` runs: "
                "they slow the fault path, which programs run without");
  sub->add_option("--out-dir", c->out_dir, "where the profile goes (default configs)")
      ->type_name("DIR");
  CLI::Option* refit =
      sub->add_option("--refit", c->refit, "fit these measurements again, without a GPU")
          ->type_name("MEASUREMENTS.json");
  auto moments = std::make_shared<std::optional<uint64_t>>();
  add_count(*sub, "--moments", *moments,
            "measure everything this many times in a row, the fastest moment kept (default 2 "
            "with --from, else 1)")
      ->excludes(refit);
  auto combine_by = std::make_shared<std::string>("median");
  CLI::Option* by =
      sub->add_option("--combine-by", *combine_by,
                      "with --combine: median (each time over the moments, default) or fastest "
                      "(the moment whose fault benchmarks took least)")
          ->type_name("HOW")
          ->check(CLI::IsMember({"median", "fastest"}));
  sub->add_option("--pool", c->pool,
                  "with --refit: fit the fault path to these full calibrations' fault "
                  "benchmarks too (repeatable)")
      ->type_name("FULL.json")
      ->needs(refit);
  sub->add_option("--combine", c->combine,
                  "with --refit: the same instance's calibrations at other moments; each "
                  "measured time becomes the median over them all (repeatable)")
      ->type_name("MEASUREMENTS.json")
      ->needs(refit)
      ->excludes("--pool");
  sub->add_option_function<std::string>(
         "--eviction-ns",
         [c](const std::string& text) {
           // Digits only: parse_number's K, M and G are powers of 1024, not thousands of ns.
           const uint64_t ns = parse_number(text, "--eviction-ns");
           if (ns == 0 || text.find_first_not_of("0123456789") != std::string::npos)
             throw UsageError("--eviction-ns " + text +
                              ": expected the ns a 2 MB chunk's eviction costs with its copy, a "
                              "whole number above 0");
           c->eviction_ns = ns;
         },
         "with --refit: price the eviction benchmark and the copies back to the host at N ns a "
         "2 MB chunk with its copy (see above)")
      ->type_name("N")
      ->needs(refit);
  from->excludes(sub->get_option("--quick"));
  by->needs("--combine");
  sub->callback([c, repeats, moments, combine_by, name, base] {
    c->named = name->count() > 0;
    c->based = base->count() > 0;
    if (!c->based && !c->settings.from.empty()) { // PROFILE is the base, a refit's too
      c->settings.base = c->settings.from;
      c->based = true;
    }
    if (!c->named && c->refit.empty()) throw UsageError("--name is required");
    c->combine_by = *combine_by == "fastest" ? live::CombineBy::kFastest : live::CombineBy::kMedian;
    c->moments = c->settings.from.empty() ? 1 : 2;
    if (*moments) {
      if (**moments == 0 || **moments > 8)
        throw UsageError("--moments " + std::to_string(**moments) + ": expected 1 to 8");
      c->moments = static_cast<uint32_t>(**moments);
    }
    if (*repeats) c->settings.repeats = static_cast<uint32_t>(std::max<uint64_t>(1, **repeats));
    live::run_calibrate(*c, command_line());
  });
}

} // namespace faultline::cli
