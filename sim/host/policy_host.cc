#include "sim/host/policy_host.h"

#include "policies/registry.h"
#include "sim/core/error.h"

namespace faultline::host {
namespace {

policies::AllocEvent alloc_event(const trace::AllocRecord& r, Time now) {
  return {now,
          r.id,
          r.kind != trace::MemoryKind::kDevice,
          r.kind == trace::MemoryKind::kAllocatorBlock,
          r.segment,
          {r.address, r.size}};
}

} // namespace

PolicyHost::PolicyHost(Backend& backend, std::string policy, nlohmann::json params,
                       std::string where)
    : backend_(backend), name_(std::move(policy)), where_(std::move(where)),
      params_(std::move(params)) {
  restart();
}

PolicyHost::~PolicyHost() = default;

void PolicyHost::restart() {
  policy_ = policies::Registry::instance().create(name_, params_, where_);
}

// The policy decides (the backend told), then its actions run in order.
template <class F> void PolicyHost::call(F&& f, Time now) {
  actions_.clear();
  backend_.deciding(true);
  f(*policy_);
  backend_.deciding(false);
  execute(now);
}

void PolicyHost::start(policies::StartEvent event) {
  event.memory = &backend_;
  gpu_ = event.gpu;
  gpus_ = event.gpus;
  call([&](policies::IPolicy& p) { p.on_start(event, actions_); }, event.now);
}

void PolicyHost::step_begin(uint64_t step, Time now) {
  call([&](policies::IPolicy& p) { p.on_step_begin({now, step}, actions_); }, now);
}

void PolicyHost::alloc(const trace::AllocRecord& record, Time now) {
  live_[record.id] = record;
  call([&](policies::IPolicy& p) { p.on_alloc(alloc_event(record, now), actions_); }, now);
}

trace::AllocRecord PolicyHost::free(uint64_t id, Time now) {
  auto it = live_.find(id);
  if (it == live_.end())
    throw SimulationError("policy host: allocation #" + std::to_string(id) + " freed but not live");
  const trace::AllocRecord a = it->second;
  live_.erase(it);
  const policies::FreeEvent event{now,
                                  id,
                                  a.kind != trace::MemoryKind::kDevice,
                                  a.kind == trace::MemoryKind::kAllocatorBlock,
                                  {a.address, a.size}};
  call([&](policies::IPolicy& p) { p.on_free(event, actions_); }, now);
  return a;
}

void PolicyHost::launch(uint64_t kernel, const std::string& name, const std::vector<uint64_t>& args,
                        Time now) {
  policies::LaunchEvent event{now, kernel, &name, {}};
  event.args.reserve(args.size());
  for (uint64_t id : args) {
    auto it = live_.find(id);
    if (it != live_.end()) event.args.push_back({it->second.address, it->second.size});
  }
  call([&](policies::IPolicy& p) { p.on_kernel_launch(event, actions_); }, now);
}

void PolicyHost::kernel_end(uint64_t kernel, Time now) {
  call([&](policies::IPolicy& p) { p.on_kernel_end({now, kernel}, actions_); }, now);
}

void PolicyHost::fault_batch(const policies::FaultBatchEvent& batch,
                             const policies::MemoryPressureEvent* pressure) {
  call(
      [&](policies::IPolicy& p) {
        if (!batch.faults.empty()) p.on_fault_batch(batch, actions_);
        if (pressure) p.on_memory_pressure(*pressure, actions_);
      },
      batch.now);
}

void PolicyHost::kernel_faults(unsigned gpu, const std::vector<Addr>& faults, Time now) {
  for (const policies::FaultBatchEvent& event : policies::driver_batches(now, gpu, faults))
    call([&](policies::IPolicy& p) { p.on_fault_batch(event, actions_); }, now);
}

void PolicyHost::refuse(const char* verb, ProcessorId target) const {
  throw SimulationError("policy " + name_ + " " + verb + " processor " + std::to_string(target) +
                        "; GPU " + std::to_string(gpu_) + " is processor " +
                        std::to_string(gpu_processor(gpu_)) + " and this machine's GPUs are " +
                        "processors 1 to " + std::to_string(gpus_) + " (the host is 0)");
}

// Targets are checked here, once for both backends: a prefetch goes to a GPU (the job's own, or
// a neighbour to stage on), an eviction to the host or a neighbour.
void PolicyHost::execute(Time now) {
  for (const policies::Action& a : actions_) {
    switch (a.kind) {
    case policies::ActionKind::kPrefetch:
      if (a.target == kHost || a.target > gpus_) refuse("asked to prefetch to", a.target);
      if (a.target == gpu_processor(gpu_))
        backend_.prefetch(a.range, now);
      else
        backend_.stage(a.range, a.target - 1, now);
      break;
    case policies::ActionKind::kEvict:
      if (a.target != kHost && (a.target > gpus_ || a.target == gpu_processor(gpu_)))
        refuse("asked to evict to", a.target);
      backend_.evict(a.range, a.target, now);
      break;
    case policies::ActionKind::kDiscard:
      backend_.discard(a.range, now);
      break;
    case policies::ActionKind::kAdvise:
      backend_.advise(a.range, a.advice, now);
      break;
    }
  }
  actions_.clear();
}

} // namespace faultline::host
