// A policy under test: created by name through the registry, fed events by hand, its actions
// collected per event. Policies see only the event structs, so this is all they can observe.
#pragma once

#include "policies/registry.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fltest {

using namespace faultline::policies;

class PolicyHarness {
public:
  PolicyHarness(const std::string& name, const nlohmann::json& params)
      : policy_(Registry::instance().create(name, params, "test")) {}

  Actions start(faultline::Bytes capacity, const std::string& trace_path = "") {
    return call([&](Actions& a) { policy_->on_start({0, capacity, 1, trace_path}, a); });
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
  Actions launch_named(uint64_t kernel, const std::string& name) {
    return call([&](Actions& a) { policy_->on_kernel_launch({now_, kernel, &name, {}}, a); });
  }
  Actions fault_batch(const std::vector<faultline::Addr>& pages) {
    return call([&](Actions& a) { policy_->on_fault_batch({now_, 0, pages}, a); });
  }
  Actions end(uint64_t kernel) {
    return call([&](Actions& a) { policy_->on_kernel_end({now_, kernel}, a); });
  }
  void advance(faultline::Time dt) { now_ += dt; }

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
