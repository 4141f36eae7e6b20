// The simulator in capacity mode "budget" against the live replay on the fake device: the same
// faults handed to a policy, the same actions taken, on real traces.
#include "fake_device.h"
#include "policies/registry.h"
#include "replay_support.h"
#include "sim/core/error.h"
#include "sim/live/replay.h"
#include "sim/run/simulator.h"
#include "sim_fixture.h"
#include "source_dir.h"
#include "test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

using faultline::kBigPageSize;
using faultline::kBlockSize;
namespace live = faultline::live;
using fltest::FakeDevice;
using fltest::fault_log;

TEST_CASE("budget mode: the simulator hands a policy the faults the replay hands it",
          "[live][sim]") {
  // The same experiment on both sides: with the driver's density prefetch off, the pages each
  // kernel finds off the GPU are the same in the simulator's memory and the replay's books, and
  // both hand them over grouped by 2 MB block. A real trace: its kernels touch blocks
  // interleaved, so the order the faults are raised in is not that.
  simtest::Scratch scratch;
  for (const char* name : {"resnet50", "pagerank"}) {
    const std::string trace =
        std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/" + name + ".fltrace";
    std::vector<std::vector<faultline::Addr>> live_log, sim_log;
    FakeDevice device;
    live::ReplayRequest request;
    request.trace_path = trace;
    request.policy = "test-fault-log";
    request.budget_fraction = 0.75;
    request.margin = 0;
    fault_log = &live_log;
    const auto result = live::run_replay(request, device);
    const uint64_t chunks =
        result["config"]["budget"]["resolved_bytes"].get<uint64_t>() / kBlockSize;

    nlohmann::json cfg = simtest::Scratch::run_config({{"prefetch", false}}, "test-fault-log");
    cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
    cfg["per_kernel"] = false;
    fault_log = &sim_log;
    faultline::Simulator sim(simtest::parse(cfg), trace, chunks);
    sim.run();
    fault_log = nullptr;

    INFO(name);
    REQUIRE(sim_log.size() == live_log.size());
    size_t faulting = 0, reordered = 0;
    for (size_t k = 0; k < sim_log.size(); ++k) {
      INFO("kernel " << k);
      CHECK(std::multiset<faultline::Addr>(sim_log[k].begin(), sim_log[k].end()) ==
            std::multiset<faultline::Addr>(live_log[k].begin(), live_log[k].end()));
      faulting += !sim_log[k].empty();
      reordered += sim_log[k] != live_log[k];
    }
    CHECK(faulting > 0);
    // The order differs only where the trace's allocations share a 2 MB block, which the
    // replay's own allocations (each on a 2 MB boundary) do not: 8 of 483 faulting kernels of
    // ResNet-50 here, against 183 when the simulator handed over the faults as raised.
    CHECK(reordered * 50 <= faulting);
  }
}

namespace {

std::vector<std::string>* action_log = nullptr;

// A policy logging each action it takes as "kind start bytes", and where asked each fault it
// hears as "fault address".
class Logged : public faultline::policies::IPolicy {
public:
  Logged(const std::string& inner, bool log_faults, const nlohmann::json& params,
         const std::string& where)
      : inner_(faultline::policies::Registry::instance().create(inner, params, where)),
        log_faults_(log_faults) {}
  using Actions = faultline::policies::Actions;
  void on_start(const faultline::policies::StartEvent& e, Actions& o) override {
    logged(o, [&] { inner_->on_start(e, o); });
  }
  void on_alloc(const faultline::policies::AllocEvent& e, Actions& o) override {
    logged(o, [&] { inner_->on_alloc(e, o); });
  }
  void on_free(const faultline::policies::FreeEvent& e, Actions& o) override {
    logged(o, [&] { inner_->on_free(e, o); });
  }
  void on_kernel_launch(const faultline::policies::LaunchEvent& e, Actions& o) override {
    logged(o, [&] { inner_->on_kernel_launch(e, o); });
  }
  void on_fault_batch(const faultline::policies::FaultBatchEvent& e, Actions& o) override {
    if (log_faults_)
      for (const faultline::Addr a : e.faults) action_log->push_back("fault " + std::to_string(a));
    logged(o, [&] { inner_->on_fault_batch(e, o); });
  }
  void on_kernel_end(const faultline::policies::KernelEndEvent& e, Actions& o) override {
    logged(o, [&] { inner_->on_kernel_end(e, o); });
  }
  void on_step_begin(const faultline::policies::StepEvent& e, Actions& o) override {
    logged(o, [&] { inner_->on_step_begin(e, o); });
  }
  bool observes_faults() const override { return true; }
  bool prefetches_behind_faults() const override { return true; }

private:
  template <typename F> void logged(Actions& o, const F& f) {
    const size_t from = o.size();
    f();
    for (size_t i = from; i < o.size(); ++i)
      action_log->push_back(std::to_string(static_cast<int>(o[i].kind)) + " " +
                            std::to_string(o[i].range.start) + " " +
                            std::to_string(o[i].range.bytes));
  }
  std::unique_ptr<faultline::policies::IPolicy> inner_;
  bool log_faults_;
};

struct LoggedDeepUM : Logged {
  LoggedDeepUM(const nlohmann::json& params, const std::string& where)
      : Logged("deepum", false, params, where) {}
};
FAULTLINE_REGISTER_POLICY(LoggedDeepUM, "test-logged-deepum");

// After each fault batch, prefetches the 64 KB page after each fault: often one the driver's
// density prefetch brought in beside it, already on the GPU but not in the replay's books.
class NextPages : public faultline::policies::IPolicy {
public:
  NextPages(const nlohmann::json&, const std::string&) {}
  void on_start(const faultline::policies::StartEvent& e, faultline::policies::Actions&) override {
    gpu_ = faultline::gpu_processor(e.gpu);
  }
  void on_fault_batch(const faultline::policies::FaultBatchEvent& e,
                      faultline::policies::Actions& o) override {
    for (const faultline::Addr a : e.faults)
      o.push_back(
          {faultline::policies::ActionKind::kPrefetch, {a + kBigPageSize, kBigPageSize}, gpu_});
  }
  bool observes_faults() const override { return true; }

private:
  faultline::ProcessorId gpu_ = 0;
};
FAULTLINE_REGISTER_POLICY(NextPages, "test-next-pages");

struct LoggedNextPages : Logged {
  LoggedNextPages(const nlohmann::json& params, const std::string& where)
      : Logged("test-next-pages", true, params, where) {}
};
FAULTLINE_REGISTER_POLICY(LoggedNextPages, "test-logged-next-pages");

// Where two logs first differ ("" if they do not): the index and the lines there, short enough
// for a failure message (whole logs hold hundreds of thousands of lines).
std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (ia == a.end() && ib == b.end()) return "";
  const auto line = [](const auto& it, const auto& end) { return it == end ? "(end)" : *it; };
  return "line " + std::to_string(ia - a.begin()) + " of " + std::to_string(a.size()) + "/" +
         std::to_string(b.size()) + ": " + line(ia, a.end()) + " | " + line(ib, b.end());
}

// The policy's log on ResNet-50 at 75%, from the replay (on a FakeDevice) and from the
// simulator's budget mode with the driver's density prefetch on.
std::pair<std::vector<std::string>, std::vector<std::string>>
logs_live_and_sim(const std::string& policy) {
  simtest::Scratch scratch;
  const std::string trace = std::string(FAULTLINE_SOURCE_DIR) + "/traces/real/resnet50.fltrace";
  std::vector<std::string> live_log, sim_log;
  FakeDevice device;
  live::ReplayRequest request;
  request.trace_path = trace;
  request.policy = policy;
  request.budget_fraction = 0.75;
  request.margin = 0;
  action_log = &live_log;
  const auto result = live::run_replay(request, device);
  const uint64_t chunks = result["config"]["budget"]["resolved_bytes"].get<uint64_t>() / kBlockSize;

  nlohmann::json cfg = simtest::Scratch::run_config(nlohmann::json::object(), policy);
  cfg["capacity"] = {{"fraction_of_footprint", 1.0}, {"mode", "budget"}};
  cfg["per_kernel"] = false;
  REQUIRE(simtest::parse(cfg).driver.prefetch);
  action_log = &sim_log;
  faultline::Simulator sim(simtest::parse(cfg), trace, chunks);
  sim.run();
  action_log = nullptr;
  return {live_log, sim_log};
}

} // namespace

TEST_CASE("budget mode: DeepUM takes the same actions in the simulator as in the replay, "
          "the driver's density prefetch on",
          "[live][sim]") {
  // Both tell DeepUM a kernel's faults from books that hold what kernels touched and prefetches
  // brought: not the pages the driver's density prefetch brought beside them, which the replay
  // cannot see. Counting those as present, the simulator once reported other faults, and
  // DeepUM took other actions (8,493 evictions against the replay's 8,515 on ResNet-50).
  const auto [live_log, sim_log] = logs_live_and_sim("test-logged-deepum");
  REQUIRE(live_log.size() > 10000); // prefetches, evictions and discards
  CHECK(first_difference(sim_log, live_log) == "");
}

TEST_CASE("budget mode: a policy hears the same faults in the simulator as in the replay after "
          "prefetching pages already on the GPU",
          "[live][sim]") {
  // The replay's books take in a prefetch's pages whether or not they were there; the
  // simulator once skipped those, and reported their next touch as a fault.
  auto [live_log, sim_log] = logs_live_and_sim("test-logged-next-pages");
  const auto faults = [](const std::vector<std::string>& log) {
    return std::count_if(log.begin(), log.end(), [](const std::string& l) { return l[0] == 'f'; });
  };
  REQUIRE(faults(live_log) > 100);
  CHECK(faults(sim_log) == faults(live_log));
  // The same faults and prefetches; their order differs where the trace's allocations share a
  // 2 MB block, which the replay's own allocations do not.
  std::sort(live_log.begin(), live_log.end());
  std::sort(sim_log.begin(), sim_log.end());
  CHECK(first_difference(sim_log, live_log) == "");
}
