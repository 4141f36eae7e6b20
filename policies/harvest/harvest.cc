// harvest: HUVM's memHarvester (Choi et al., ATC'22; casys-kaist/HUVM). The job's GPU keeps a
// reserve of free chunks by pre-evicting its oldest blocks; victims go to the NVLink neighbour
// with the most spare memory, as an exclusive victim cache the backend writes back to the host
// in the background (so the neighbour drops them at once when its own job needs the room), or
// to the host when no neighbour has room above its reserve. On each fault batch a multi-path
// prefetch looks ahead in the faults' direction: blocks on a neighbour come back over NVLink
// while host blocks are staged on a neighbour over its own PCIe link. Another policy (pump or
// deepum) may run inside as the prefetcher. Source: the paper and casys-kaist/HUVM @ 4528f10.
#include "policies/registry.h"
#include "sim/config/schema.h"
#include "sim/core/error.h"

#include <algorithm>
#include <set>

namespace faultline::policies {
namespace {

struct Params {
  uint64_t reserve_chunks = 50;
  bool pre_evict = true, evict_to_peer = true, multi_path_prefetch = true;
  uint32_t prefetch_chunks = 16, prefetch_stride = 2;
  std::string prefetcher = "none";
  nlohmann::json prefetcher_params = nlohmann::json::object();
};

const config::Fields<Params>& fields() {
  static const config::Fields<Params> fields = {
      config::field(&Params::reserve_chunks, "reserve_chunks",
                    "R: pre-evict below R free chunks, up to 2R (HUVM `uvm_reserve_chunk_level` "
                    "5 × 10)")
          .unit("2 MB chunks"),
      config::field(&Params::pre_evict, "pre_evict", "the reserve thread (ablation +PE)"),
      config::field(&Params::evict_to_peer, "evict_to_peer",
                    "victims to a neighbour (HUVM's hierarchy); false: to the host"),
      config::field(&Params::multi_path_prefetch, "multi_path_prefetch",
                    "the look-ahead prefetch (+MPF)"),
      config::field(&Params::prefetch_chunks, "prefetch_chunks",
                    "window length (`uvm_prefetch_num_chunk`)")
          .unit("2 MB blocks")
          .at_most(64)
          .bound_note("HUVM's limit"),
      config::field(&Params::prefetch_stride, "prefetch_stride",
                    "step between window blocks (`uvm_prefetch_stride`)")
          .unit("2 MB blocks")
          .at_least(1),
      config::field(&Params::prefetcher, "prefetcher",
                    "an inner policy (`pump` or `deepum`), or \"none\""),
      config::raw_object(&Params::prefetcher_params, "prefetcher_params",
                         "the inner policy's parameters"),
  };
  return fields;
}
FAULTLINE_REGISTER_SCHEMA("policy.harvest", "`policy.params` of policy harvest", fields);

class Harvest : public IPolicy {
public:
  Harvest(const nlohmann::json& params, const std::string& where) {
    config::Reader r(params, where, "$.policy.params");
    Params p;
    config::read_fields(r, p, fields());
    r.finish();
    low_chunks_ = p.reserve_chunks;
    high_chunks_ = 2 * low_chunks_;
    pre_evict_ = p.pre_evict;
    to_peer_ = p.evict_to_peer;
    multi_path_ = p.multi_path_prefetch;
    prefetch_chunks_ = p.prefetch_chunks;
    stride_ = p.prefetch_stride;
    const std::string& inner = p.prefetcher;
    if (inner == "harvest") r.fail("prefetcher", "harvest cannot run inside itself");
    if (inner != "none") {
      if (!Registry::instance().has(inner)) {
        r.fail("prefetcher", "unknown policy \"" + inner + "\"; known policies: " +
                                 Registry::instance().known() + ", or none");
      }
      inner_ = Registry::instance().create(inner, p.prefetcher_params,
                                           where + " (harvest's prefetcher_params)");
    }
  }

  void on_start(const StartEvent& e, Actions& out) override {
    gpu_ = e.gpu;
    peers_ = e.nvlink_peers;
    memory_ = e.memory;
    if (!memory_) throw SimulationError("policy harvest needs the backend's memory view");
    if (inner_) inner_->on_start(e, out);
  }
  void on_alloc(const AllocEvent& e, Actions& out) override {
    if (inner_) inner_->on_alloc(e, out);
  }
  void on_free(const FreeEvent& e, Actions& out) override {
    if (inner_) inner_->on_free(e, out);
  }
  void on_kernel_launch(const LaunchEvent& e, Actions& out) override {
    if (inner_) inner_->on_kernel_launch(e, out);
    keep_reserve({}, out);
  }
  void on_kernel_end(const KernelEndEvent& e, Actions& out) override {
    if (inner_) inner_->on_kernel_end(e, out);
  }
  void on_memory_pressure(const MemoryPressureEvent& e, Actions& out) override {
    if (inner_) inner_->on_memory_pressure(e, out);
  }

  // Pre-eviction and the multi-path prefetch act on faults, besides the inner prefetcher.
  bool observes_faults() const override {
    return pre_evict_ || multi_path_ || (inner_ && inner_->observes_faults());
  }
  void on_fault_batch(const FaultBatchEvent& e, Actions& out) override {
    if (inner_) inner_->on_fault_batch(e, out);
    if (e.faults.empty()) return;
    std::set<Addr> faulted;
    for (Addr a : e.faults) faulted.insert(a / kBlockSize * kBlockSize);
    if (multi_path_) prefetch_ahead(faulted, out);
    keep_reserve(faulted, out);
  }

private:
  // HUVM's reserve thread: below R free chunks, pre-evict the oldest blocks until 2R are free.
  void keep_reserve(const std::set<Addr>& busy, Actions& out) {
    if (!pre_evict_) return;
    const uint64_t free = memory_->free_bytes(gpu_) / kBlockSize;
    if (free >= low_chunks_) return;
    const uint64_t wanted = high_chunks_ - free;
    uint64_t evicting = 0;
    for (Addr block : memory_->oldest_blocks(gpu_, wanted + busy.size())) {
      if (busy.count(block)) continue;
      out.push_back({ActionKind::kEvict, {block, kBlockSize}, victim_target()});
      if (++evicting == wanted) break;
    }
  }

  // The neighbour with the most free memory; the backend sends the block to the host instead
  // when that neighbour cannot keep its reserve.
  ProcessorId victim_target() const {
    if (!to_peer_ || peers_.empty()) return kHost;
    unsigned best = peers_[0];
    for (unsigned p : peers_)
      if (memory_->free_bytes(p) > memory_->free_bytes(best)) best = p;
    return gpu_processor(best);
  }

  // The window starts past the batch's last block in the direction the faults move.
  void prefetch_ahead(const std::set<Addr>& faulted, Actions& out) {
    const Addr first = *faulted.begin(), last = *faulted.rbegin();
    const bool down = have_last_ && first < last_window_;
    last_window_ = down ? first : last;
    have_last_ = true;
    const ProcessorId own = gpu_processor(gpu_);
    const ProcessorId stage = victim_target();
    for (uint32_t i = 0; i < prefetch_chunks_; ++i) {
      const Addr step = Addr{i + 1} * stride_ * kBlockSize;
      if (down && step > last_window_) break;
      const Addr block = down ? last_window_ - step : last_window_ + step;
      const ProcessorId at = memory_->holder(block);
      if (at == own || at == kNoProcessor || faulted.count(block)) continue;
      // From a neighbour over NVLink; from the host to a neighbour over its PCIe link, or
      // straight here when there is no neighbour to stage on.
      const ProcessorId target = at != kHost || stage == kHost ? own : stage;
      out.push_back({ActionKind::kPrefetch, {block, kBlockSize}, target});
    }
  }

  unsigned gpu_ = 0;
  std::vector<unsigned> peers_;
  const MemoryView* memory_ = nullptr;
  std::unique_ptr<IPolicy> inner_;
  uint64_t low_chunks_, high_chunks_;
  bool pre_evict_, to_peer_, multi_path_;
  uint32_t prefetch_chunks_, stride_;
  bool have_last_ = false;
  Addr last_window_ = 0;
};

} // namespace

FAULTLINE_REGISTER_POLICY(Harvest, "harvest");

} // namespace faultline::policies
