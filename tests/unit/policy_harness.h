// A policy under test: created by name through the registry, fed events by hand, its actions
// collected per event. Policies see only the event structs, so this is all they can observe.
#pragma once

#include "policies/registry.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fltest {

using namespace faultline::policies;

// The memory a policy under test sees: set by hand.
class FakeMemoryView : public MemoryView {
public:
  std::map<unsigned, faultline::Bytes> free;            // by GPU
  std::map<faultline::Addr, faultline::ProcessorId> at; // by 2 MB block base
  std::vector<faultline::Addr> oldest;                  // the job's blocks on its GPU

  faultline::Bytes free_bytes(unsigned gpu) const override {
    auto it = free.find(gpu);
    return it == free.end() ? 0 : it->second;
  }
  faultline::ProcessorId holder(faultline::Addr address) const override {
    auto it = at.find(address / faultline::kBlockSize * faultline::kBlockSize);
    return it == at.end() ? faultline::kNoProcessor : it->second;
  }
  std::vector<faultline::Addr> oldest_blocks(unsigned, size_t n) const override {
    return {oldest.begin(),
            oldest.begin() + static_cast<std::ptrdiff_t>(std::min(n, oldest.size()))};
  }
};

class PolicyHarness {
public:
  PolicyHarness(const std::string& name, const nlohmann::json& params)
      : policy_(Registry::instance().create(name, params, "test")) {}

  Actions start(faultline::Bytes capacity, const std::string& trace_path = "") {
    StartEvent e;
    e.gpu_capacity = capacity;
    e.trace_path = trace_path;
    e.memory = &view;
    return call([&](Actions& a) { policy_->on_start(e, a); });
  }
  // A two-GPU machine: the job on GPU 0, GPU 1 its NVLink neighbour.
  Actions start_two_gpus(faultline::Bytes capacity) {
    StartEvent e;
    e.gpu_capacity = capacity;
    e.gpus = 2;
    e.nvlink_peers = {1};
    e.memory = &view;
    return call([&](Actions& a) { policy_->on_start(e, a); });
  }
  Actions alloc(uint64_t id, faultline::Addr start, faultline::Bytes bytes, bool block = false) {
    return call([&](Actions& a) {
      policy_->on_alloc({now_, id, true, block, 0, {start, bytes}}, a);
    });
  }
  Actions launch(uint64_t kernel, const std::vector<Range>& args) {
    return call([&](Actions& a) { policy_->on_kernel_launch({now_, kernel, &name_, args}, a); });
  }
  Actions free(uint64_t id, faultline::Addr start, faultline::Bytes bytes, bool block = false) {
    return call([&](Actions& a) { policy_->on_free({now_, id, true, block, {start, bytes}}, a); });
  }
  Actions launch_named(uint64_t kernel, const std::string& name,
                       const std::vector<Range>& args = {}) {
    return call([&](Actions& a) { policy_->on_kernel_launch({now_, kernel, &name, args}, a); });
  }
  // A training step begins.
  Actions step(uint64_t step) {
    return call([&](Actions& a) { policy_->on_step_begin({now_, step}, a); });
  }
  Actions fault_batch(const std::vector<faultline::Addr>& pages) {
    return call([&](Actions& a) { policy_->on_fault_batch({now_, 0, pages}, a); });
  }
  // The driver had to evict `evictions` chunks during the last fault batch.
  Actions pressure(uint64_t evictions = 1) {
    return call([&](Actions& a) {
      policy_->on_memory_pressure({now_, 0, evictions, view.free_bytes(0)}, a);
    });
  }
  Actions end(uint64_t kernel) {
    return call([&](Actions& a) { policy_->on_kernel_end({now_, kernel}, a); });
  }
  void advance(faultline::Time dt) { now_ += dt; }
  bool observes_faults() const { return policy_->observes_faults(); }
  FakeMemoryView view;

private:
  template <class F> Actions call(F f) {
    Actions a;
    f(a);
    return a;
  }

  std::unique_ptr<IPolicy> policy_;
  faultline::Time now_ = 0;
  std::string name_ = "kernel";
};

} // namespace fltest
