#include "sim/synth/synth.h"

#include "sim/config/schema.h"
#include "sim/core/error.h"
#include "sim/trace/steps.h"
#include "sim/trace/writer.h"

#include <random>

namespace faultline::synth {
namespace {

constexpr Addr kBase = Addr{0x7f00} << 32;

Bytes round_up(Bytes v, Bytes unit) {
  return (v + unit - 1) / unit * unit;
}

struct Tensor {
  uint64_t id;
  Addr address;
  Bytes size;
  uint64_t pages() const { return size / kBigPageSize; }
};

// Emits records in time order; every kernel runs back to back after the previous one. Without
// a writer it only counts, so that a dry run finds where the steps begin for the header.
class Builder {
public:
  Builder(const Params& p, trace::TraceWriter* w) : p_(p), w_(w), rng_(p.seed) {}

  // The next record begins a training step (an iteration). An issue-time trace's CPU first waits
  // for the step before.
  void begin_step() {
    if (p_.launch_gap_ns > 0 && !steps_.empty()) sync();
    steps_.push_back({records_, now_});
  }
  // The end of the last step (an issue-time trace's last sync).
  void finish() {
    if (p_.launch_gap_ns > 0 && !steps_.empty()) sync();
    end_ = now_;
  }
  const std::vector<trace::Step>& steps() const { return steps_; }
  // Each step's time, from its start to the next's (the last: to finish()).
  std::vector<Time> step_times() const {
    std::vector<Time> out;
    for (size_t i = 0; i < steps_.size(); ++i)
      out.push_back((i + 1 < steps_.size() ? steps_[i + 1].start_ns : end_) - steps_[i].start_ns);
    return out;
  }

  Tensor alloc(Bytes size) {
    Tensor t{next_id_++, next_addr_, round_up(std::max(size, kBigPageSize), kBigPageSize)};
    next_addr_ += round_up(t.size, kBlockSize); // cudaMallocManaged aligns to 2 MB
    write(trace::AllocRecord{t.id, trace::MemoryKind::kManaged, t.address, t.size, now_, 0});
    return t;
  }
  void free(const Tensor& t) { write(trace::FreeRecord{t.id, now_}); }

  // A kernel that sweeps `reads` then `writes`, each page `touches` times.
  void kernel(const std::string& name, const std::vector<Tensor>& reads,
              const std::vector<Tensor>& writes) {
    trace::KernelRecord k;
    k.name = name;
    k.start = now_;
    k.grid = {1024, 1, 1};
    k.block = {256, 1, 1};
    auto sweep = [&](const Tensor& t, AccessType type) {
      k.args.push_back(t.id);
      for (uint64_t i = 0; i < t.pages(); ++i) {
        for (uint32_t r = 0; r < p_.touches; ++r) add(k, t.address / kBigPageSize + i, type);
      }
    };
    for (const Tensor& t : reads) sweep(t, AccessType::kRead);
    for (const Tensor& t : writes) sweep(t, AccessType::kWrite);
    emit(k);
  }

  // A kernel that reads `pages` big pages of `t` from `first` on.
  void range_kernel(const std::string& name, const Tensor& t, uint64_t first, uint64_t pages) {
    trace::KernelRecord k;
    k.name = name;
    k.start = now_;
    k.args.push_back(t.id);
    for (uint64_t i = first; i < first + pages; ++i)
      for (uint32_t r = 0; r < p_.touches; ++r)
        add(k, t.address / kBigPageSize + i, AccessType::kRead);
    emit(k);
  }

  // A kernel that reads, in every 2 MB block of `t`, the big pages `picked` says, block by block.
  template <class Pick> void block_kernel(const std::string& name, const Tensor& t, Pick picked) {
    trace::KernelRecord k;
    k.name = name;
    k.start = now_;
    k.args.push_back(t.id);
    for (uint64_t i = 0; i < t.pages(); ++i)
      if (picked(static_cast<uint32_t>(i % kBigPagesPerBlock)))
        add(k, t.address / kBigPageSize + i, AccessType::kRead);
    emit(k);
  }

  // The host writes all of `t` (its pages start on the host, CPU-mapped).
  void host_write(const Tensor& t) {
    write(trace::HostAccessRecord{now_, t.address, t.size, AccessType::kWrite});
  }

  void random_kernel(const std::string& name, const Tensor& t, uint64_t count) {
    trace::KernelRecord k;
    k.name = name;
    k.start = now_;
    k.args.push_back(t.id);
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t page = rng_() % t.pages();
      add(k, t.address / kBigPageSize + page,
          (rng_() & 3) == 0 ? AccessType::kWrite : AccessType::kRead);
    }
    emit(k);
  }
  uint64_t accesses() const { return accesses_; }

private:
  template <class R> void write(const R& r) {
    ++records_;
    if (w_) w_->write(r);
  }
  void add(trace::KernelRecord& k, uint64_t page, AccessType type) {
    k.accesses.push_back({page, static_cast<Time>(k.accesses.size()) * p_.ns_per_access, type});
  }
  void emit(trace::KernelRecord& k) {
    k.duration = static_cast<Time>(k.accesses.size()) * p_.ns_per_access + p_.ns_per_access;
    accesses_ += k.accesses.size();
    if (p_.launch_gap_ns == 0) {
      write(k);
      now_ += k.duration;
      return;
    }
    const Time start = std::max(now_, gpu_end_);
    k.queued = start - now_;
    gpu_end_ = start + k.duration;
    write(k);
    now_ += p_.launch_gap_ns;
  }
  // The CPU waits for the GPU's work.
  void sync() {
    write(trace::SyncRecord{now_, trace::SyncKind::kDevice, 0, std::max<Time>(0, gpu_end_ - now_)});
    now_ = std::max(now_, gpu_end_);
  }

  const Params& p_;
  trace::TraceWriter* w_;
  uint64_t records_ = 0;
  std::vector<trace::Step> steps_;
  std::mt19937_64 rng_;
  uint64_t next_id_ = 1;
  Addr next_addr_ = kBase;
  Time now_ = 0;     // the CPU's time: every record's
  Time gpu_end_ = 0; // issue-time traces: when the GPU finishes what was issued
  Time end_ = 0;
  uint64_t accesses_ = 0;
};

void stream(const Params& p, Builder& b) {
  const uint32_t k = p.kernels_per_iteration;
  std::vector<Tensor> slices;
  for (uint32_t i = 0; i < k; ++i) slices.push_back(b.alloc(p.footprint / k));
  for (uint32_t it = 0; it < p.iterations; ++it) {
    b.begin_step();
    for (uint32_t i = 0; i < k; ++i) b.kernel("stream_" + std::to_string(i), {slices[i]}, {});
  }
  for (const Tensor& t : slices) b.free(t);
}

// One kernel, launched K times with the same arguments (one execution ID), reads a window of
// two slices that moves one slice on per launch over K + 1 slices of one array.
void window(const Params& p, Builder& b) {
  const uint32_t k = p.kernels_per_iteration;
  const Tensor t = b.alloc(p.footprint);
  const uint64_t slice = std::max<uint64_t>(1, t.pages() / (k + 1));
  for (uint32_t it = 0; it < p.iterations; ++it) {
    b.begin_step();
    for (uint32_t i = 0; i < k; ++i) b.range_kernel("window_stencil", t, i * slice, 2 * slice);
  }
  b.free(t);
}

// One host-written allocation; a kernel brings the held pages of each block to the GPU, then
// the measured kernel touches its pages beside them: the fault path's copies against what the
// GPU already holds (experiments/live/probes/fault_shape.cc, fill mode, does the same live).
void pages(const Params& p, Builder& b) {
  const Tensor t = b.alloc(p.footprint);
  b.host_write(t);
  b.begin_step();
  auto pick = [](uint32_t first, uint32_t step, uint32_t width) {
    return [=](uint32_t page) { return page >= first && (page - first) % step < width; };
  };
  if (p.held_step > 0) b.block_kernel("held", t, pick(p.held_first, p.held_step, 1));
  b.block_kernel("touch", t, pick(p.touch_first, p.touch_step, p.touch_width));
  b.free(t);
}

void random(const Params& p, Builder& b) {
  const Tensor t = b.alloc(p.footprint);
  const uint64_t per_kernel =
      std::max<uint64_t>(1, t.pages() * p.touches / p.kernels_per_iteration);
  for (uint32_t it = 0; it < p.iterations; ++it) {
    b.begin_step();
    for (uint32_t i = 0; i < p.kernels_per_iteration; ++i) {
      b.random_kernel("random_" + std::to_string(i), t, per_kernel);
    }
  }
  b.free(t);
}

// Layers forward then backward: weights and their gradients live throughout and are reused
// every iteration; activations are allocated in the forward pass and freed in reverse order.
void dnn(const Params& p, Builder& b) {
  const Bytes weight = p.footprint / 5 / p.layers;         // 20% weights, 20% gradients
  const Bytes activation = p.footprint * 3 / 5 / p.layers; // 60% activations at peak
  std::vector<Tensor> w, g;
  for (uint32_t l = 0; l < p.layers; ++l) {
    w.push_back(b.alloc(weight));
    g.push_back(b.alloc(weight));
  }
  for (uint32_t it = 0; it < p.iterations; ++it) {
    b.begin_step();
    std::vector<Tensor> a;
    for (uint32_t l = 0; l < p.layers; ++l) {
      a.push_back(b.alloc(activation));
      std::vector<Tensor> in = {w[l]};
      if (l > 0) in.push_back(a[l - 1]);
      b.kernel("forward_" + std::to_string(l), in, {a[l]});
    }
    for (uint32_t l = p.layers; l-- > 0;) {
      b.kernel("backward_" + std::to_string(l), {a[l], w[l]}, {g[l]});
      b.free(a[l]);
    }
    for (uint32_t l = 0; l < p.layers; ++l) b.kernel("optimizer_step", {g[l]}, {w[l]});
  }
  for (uint32_t l = 0; l < p.layers; ++l) {
    b.free(w[l]);
    b.free(g[l]);
  }
}

} // namespace

namespace {

const config::Fields<Params>& fields() {
  static const config::Fields<Params> fields = {
      config::one_of(&Params::pattern, "pattern", {"stream", "random", "dnn", "window", "pages"},
                     "stream: kernels sweep slices in turn; random: kernels touch random 64 KB big "
                     "pages; dnn: layers forward, backward, then an optimizer step; window: one "
                     "kernel reads a two-slice window that moves a slice per launch; pages: a "
                     "host-written array, some pages of each block brought to the GPU, then a "
                     "kernel touching others"),
      config::field(&Params::footprint, "footprint", "managed memory the workload spans")
          .unit("bytes")
          .at_least(kBlockSize)
          .bound_note("2 MB"),
      config::field(&Params::iterations, "iterations", "training steps").at_least(1),
      config::field(&Params::seed, "seed", "random seed (pattern random)"),
      config::field(&Params::kernels_per_iteration, "kernels_per_iteration",
                    "kernels per step (patterns stream, random and window)")
          .at_least(1),
      config::field(&Params::layers, "layers", "layers (pattern dnn)").at_least(1),
      config::field(&Params::touches, "touches",
                    "times each 64 KB big page is read within a kernel")
          .at_least(1),
      config::field(&Params::ns_per_access, "ns_per_access",
                    "compute time per 64 KB access when resident")
          .unit("ns")
          .at_least(1),
      config::field(&Params::touch_first, "touch_first",
                    "pattern pages: the first 64 KB page of each block the kernel touches")
          .at_most(kBigPagesPerBlock - 1),
      config::field(&Params::touch_step, "touch_step",
                    "pattern pages: touched pages repeat every touch_step pages")
          .at_least(1)
          .at_most(kBigPagesPerBlock),
      config::field(&Params::touch_width, "touch_width",
                    "pattern pages: pages touched in a row at each step")
          .at_least(1)
          .at_most(kBigPagesPerBlock),
      config::field(&Params::held_first, "held_first",
                    "pattern pages: the first page of each block the GPU holds before")
          .at_most(kBigPagesPerBlock - 1),
      config::field(&Params::held_step, "held_step",
                    "pattern pages: held pages repeat every held_step pages (0: none held)")
          .at_most(kBigPagesPerBlock),
      config::field(&Params::launch_gap_ns, "launch_gap_ns",
                    "0: a serial trace; otherwise an issue-time trace whose CPU issues a record "
                    "every launch_gap_ns ahead of the GPU, each step ending in a device sync")
          .unit("ns"),
  };
  return fields;
}
FAULTLINE_REGISTER_SCHEMA("synth",
                          "`faultline synth` options, as JSON keys (options: --footprint, "
                          "--kernels for kernels_per_iteration, --ns-per-access...)",
                          fields);

} // namespace

Params params_from_json(const nlohmann::json& j, const std::string& where) {
  return config::read_object(j, where, "$", fields());
}

nlohmann::json to_json(const Params& p) {
  return {{"pattern", p.pattern},
          {"footprint", p.footprint},
          {"iterations", p.iterations},
          {"seed", p.seed},
          {"kernels_per_iteration", p.kernels_per_iteration},
          {"layers", p.layers},
          {"touches", p.touches},
          {"ns_per_access", p.ns_per_access},
          {"touch_first", p.touch_first},
          {"touch_step", p.touch_step},
          {"touch_width", p.touch_width},
          {"held_first", p.held_first},
          {"held_step", p.held_step},
          {"launch_gap_ns", p.launch_gap_ns}};
}

namespace {

void build(const Params& p, Builder& b) {
  if (p.pattern == "stream")
    stream(p, b);
  else if (p.pattern == "random")
    random(p, b);
  else if (p.pattern == "window")
    window(p, b);
  else if (p.pattern == "pages")
    pages(p, b);
  else
    dnn(p, b);
}

} // namespace

uint64_t write_trace(const Params& p, const std::string& path, const std::string& command) {
  nlohmann::json meta = {{"source", "synthetic"}, {"gpu", "none (synthetic)"},
                         {"driver", "none"},      {"cuda", "none"},
                         {"command", command},    {"workload", to_json(p)}};
  Builder dry(p, nullptr); // the header comes first: where the steps begin, from a dry run
  build(p, dry);
  dry.finish();
  meta["steps"] = trace::steps_json(dry.steps());
  if (p.launch_gap_ns > 0) {
    meta["timeline"] = "issue";
    meta["program_step_ns"] = dry.step_times();
  }
  trace::TraceWriter writer(path, meta);
  Builder builder(p, &writer);
  build(p, builder);
  builder.finish();
  writer.close();
  return builder.accesses();
}

} // namespace faultline::synth
