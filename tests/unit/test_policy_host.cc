// The policy host (sim/host): events built from records, actions dispatched to a backend in
// order, targets checked once for both backends, faults handed over as the driver does; and the
// budget's rules (sim/host/budget.h) that the live replay and the simulator's budget mode share.
#include "policies/registry.h"
#include "sim/core/error.h"
#include "sim/host/budget.h"
#include "sim/host/policy_host.h"

#include <catch2/catch.hpp>
#include <map>

using namespace faultline;

namespace {

// A policy that answers every event with the actions a test put in `script`, and notes what
// it heard.
struct Script {
  policies::Actions next;
  std::vector<std::string> heard;
  std::vector<std::vector<policies::Range>> launch_args;
  std::vector<std::vector<Addr>> batches;
};
Script* g_script = nullptr;

class ScriptedPolicy : public policies::IPolicy {
public:
  ScriptedPolicy(const nlohmann::json&, const std::string&) {}
  void on_start(const policies::StartEvent&, policies::Actions& a) override { act("start", a); }
  void on_alloc(const policies::AllocEvent&, policies::Actions& a) override { act("alloc", a); }
  void on_free(const policies::FreeEvent&, policies::Actions& a) override { act("free", a); }
  void on_kernel_launch(const policies::LaunchEvent& e, policies::Actions& a) override {
    g_script->launch_args.push_back(e.args);
    act("launch " + *e.name, a);
  }
  void on_fault_batch(const policies::FaultBatchEvent& e, policies::Actions& a) override {
    g_script->batches.push_back(e.faults);
    act("faults", a);
  }
  void on_kernel_end(const policies::KernelEndEvent&, policies::Actions& a) override {
    act("end", a);
  }
  void on_step_begin(const policies::StepEvent& e, policies::Actions& a) override {
    act("step " + std::to_string(e.step), a);
  }
  bool observes_faults() const override { return true; }

private:
  void act(const std::string& what, policies::Actions& a) {
    g_script->heard.push_back(what);
    a.insert(a.end(), g_script->next.begin(), g_script->next.end());
    g_script->next.clear();
  }
};

const bool registered = policies::Registry::instance().add(
    "test_scripted", [](const nlohmann::json& p, const std::string& w) {
      return std::unique_ptr<policies::IPolicy>(new ScriptedPolicy(p, w));
    });

// A backend that records the calls it gets.
class RecordingBackend : public host::Backend {
public:
  std::vector<std::string> calls;
  int decisions = 0, open_decisions = 0;

  void prefetch(const policies::Range& r, Time) override { note("prefetch", r); }
  void stage(const policies::Range& r, unsigned peer, Time) override {
    note("stage" + std::to_string(peer), r);
  }
  void evict(const policies::Range& r, ProcessorId target, Time) override {
    note("evict" + std::to_string(target), r);
  }
  void discard(const policies::Range& r, Time) override { note("discard", r); }
  void advise(const policies::Range& r, policies::Advice, Time) override { note("advise", r); }
  void deciding(bool started) override {
    open_decisions += started ? 1 : -1;
    decisions += started;
  }
  Bytes free_bytes(unsigned) const override { return 0; }
  ProcessorId holder(Addr) const override { return kNoProcessor; }
  std::vector<Addr> oldest_blocks(unsigned, size_t) const override { return {}; }

private:
  void note(const std::string& what, const policies::Range& r) {
    CHECK(open_decisions == 0); // actions run after the policy has decided
    calls.push_back(what + "@" + std::to_string(r.start));
  }
};

struct Fixture {
  Script script;
  RecordingBackend backend;
  host::PolicyHost host{backend, "test_scripted", nlohmann::json::object(), "test"};
  Fixture() {
    REQUIRE(registered);
    g_script = &script;
    policies::StartEvent start;
    start.gpus = 2; // the job on GPU 0 (processor 1), a neighbour GPU 1 (processor 2)
    host.start(start);
  }
  ~Fixture() { g_script = nullptr; }
};

trace::AllocRecord managed(uint64_t id, Addr address, Bytes size) {
  trace::AllocRecord r;
  r.id = id;
  r.address = address;
  r.size = size;
  r.kind = trace::MemoryKind::kManaged;
  return r;
}

} // namespace

TEST_CASE("policy host: a launch names the live allocations among its arguments", "[host]") {
  Fixture f;
  f.host.alloc(managed(1, 0x1000000, 4096), 0);
  f.host.alloc(managed(2, 0x2000000, 8192), 0);
  f.host.free(1, 1);
  f.host.launch(0, "gemm", {1, 2, 7}, 2); // 1 freed, 7 never allocated
  REQUIRE(f.script.launch_args.size() == 1);
  REQUIRE(f.script.launch_args[0].size() == 1);
  CHECK(f.script.launch_args[0][0].start == 0x2000000);
  CHECK(f.script.launch_args[0][0].bytes == 8192);
  CHECK(f.script.heard ==
        std::vector<std::string>{"start", "alloc", "alloc", "free", "launch gemm"});
  CHECK(f.backend.decisions == 5);
  CHECK(f.backend.open_decisions == 0);
}

TEST_CASE("policy host: actions reach the backend in the policy's order", "[host]") {
  Fixture f;
  using policies::ActionKind;
  f.script.next = {{ActionKind::kPrefetch, {10, 1}, gpu_processor(0)},
                   {ActionKind::kPrefetch, {20, 1}, gpu_processor(1)},
                   {ActionKind::kEvict, {30, 1}, kHost},
                   {ActionKind::kEvict, {40, 1}, gpu_processor(1)},
                   {ActionKind::kDiscard, {50, 1}},
                   {ActionKind::kAdvise, {60, 1}, kHost, policies::Advice::kAccessRemotely}};
  f.host.kernel_end(0, 5);
  CHECK(f.backend.calls == std::vector<std::string>{"prefetch@10", "stage1@20", "evict0@30",
                                                    "evict2@40", "discard@50", "advise@60"});
}

TEST_CASE("policy host: a target outside the machine is refused, naming it", "[host]") {
  using policies::ActionKind;
  SECTION("a prefetch to the host") {
    Fixture f;
    f.script.next = {{ActionKind::kPrefetch, {0, 1}, kHost}};
    CHECK_THROWS_WITH(f.host.step_begin(0, 0),
                      Catch::Contains("asked to prefetch to processor 0") &&
                          Catch::Contains("processors 1 to 2"));
  }
  SECTION("an eviction to a third GPU") {
    Fixture f;
    f.script.next = {{ActionKind::kEvict, {0, 1}, gpu_processor(2)}};
    CHECK_THROWS_WITH(f.host.step_begin(0, 0), Catch::Contains("asked to evict to processor 3"));
  }
  SECTION("an eviction to the job's own GPU") {
    Fixture f;
    f.script.next = {{ActionKind::kEvict, {0, 1}, gpu_processor(0)}};
    CHECK_THROWS_WITH(f.host.step_begin(0, 0), Catch::Contains("asked to evict to processor 1"));
  }
  CHECK(g_script == nullptr);
}

TEST_CASE("policy host: a kernel's faults come in the driver's batches", "[host]") {
  Fixture f;
  std::vector<Addr> faults;
  for (Addr p = 600; p-- > 0;) faults.push_back(p * kBigPageSize); // descending
  faults.push_back(0);                                             // a repeat, in the last batch
  f.host.kernel_faults(0, faults, 9);
  REQUIRE(f.script.batches.size() == 3);
  CHECK(f.script.batches[0].size() == 256);
  CHECK(f.script.batches[0].front() == 344 * kBigPageSize); // each batch sorted
  CHECK(f.script.batches[2].size() == 88);                  // 89 less the repeat
  CHECK(f.script.batches[2].front() == 0);
}

TEST_CASE("policy host: freeing what is not live is an error", "[host]") {
  Fixture f;
  CHECK_THROWS_AS(f.host.free(3, 0), SimulationError);
  f.host.alloc(managed(3, 0x200000, 100), 0);
  CHECK(f.host.free(3, 0).size == 100);
  CHECK(f.host.live().empty());
}

namespace {

// Residency books set by hand: chunk -> pages, in first-residency order.
class FakeBooks : public host::ChunkBooks {
public:
  std::vector<std::pair<uint64_t, uint32_t>> chunks;
  uint64_t room = 0;
  uint32_t resident_pages(uint64_t chunk) const override {
    for (const auto& [c, p] : chunks)
      if (c == chunk) return p;
    return 0;
  }
  bool holds(uint64_t chunk) const override {
    for (const auto& [c, p] : chunks)
      if (c == chunk) return true;
    return false;
  }
  uint64_t resident_chunks() const override { return chunks.size(); }
  uint64_t room_chunks() const override { return room; }
  void for_each_victim(const std::function<bool(uint64_t)>& f) const override {
    for (const auto& [c, p] : chunks)
      if (!f(c)) return;
  }
};

} // namespace

namespace {

// Evicts through the fake books, as a backend would, and lists the victims.
std::vector<uint64_t> make_room(FakeBooks books, const std::vector<host::ChunkPages>& needed,
                                const std::string& what = "k") {
  std::vector<uint64_t> out;
  host::budget::make_room(
      needed, books, [&] { return what; },
      [&](uint64_t chunk) {
        out.push_back(chunk);
        std::erase_if(books.chunks,
                      [&](const auto& c) { return c.first == chunk && c.second != 0; });
      });
  return out;
}

} // namespace

TEST_CASE("budget rules: oldest victims first, never a needed chunk, refusal names it",
          "[host][budget]") {
  FakeBooks books;
  books.chunks = {{5, 1}, {6, 1}, {7, 1}};
  books.room = 3;
  // Chunk 5 is needed and resident; 9 is new: one chunk must go, the oldest other (6).
  CHECK(make_room(books, {{9, 1}, {5, 2}}) == std::vector<uint64_t>{6});
  // Two new chunks: 6 and 7 go (5 is kept).
  CHECK(make_room(books, {{9, 1}, {10, 1}, {5, 1}}) == std::vector<uint64_t>{6, 7});
  CHECK(make_room(books, {{5, 1}}).empty());
  CHECK_THROWS_WITH(make_room(books, {{1, 1}, {2, 1}, {3, 1}, {4, 1}}, "kernel #4 (x)"),
                    "kernel #4 (x) needs 4 chunks of 2 MB at once, more than the budget leaves "
                    "(3 chunks)");
}

TEST_CASE("budget rules: a victim that frees no chunk does not count", "[host][budget]") {
  FakeBooks books;
  books.chunks = {{5, 0}, {6, 1}, {7, 1}}; // 5 takes memory but holds no page: it stays
  books.room = 3;
  CHECK(make_room(books, {{9, 1}}) == std::vector<uint64_t>{5, 6});
}

TEST_CASE("budget rules: a kernel's faults are its pages off the GPU, first touch first",
          "[host][budget]") {
  FakeBooks books;
  books.chunks = {{2, 0b0101}};
  const auto absent = host::budget::absent({{2, 0b0111}, {1, 0b1000}, {3, 0}}, books);
  REQUIRE(absent.size() == 2);
  CHECK(absent[0].chunk == 2);
  CHECK(absent[0].pages == 0b0010);
  CHECK(absent[1].chunk == 1);
  CHECK(absent[1].pages == 0b1000);
}

TEST_CASE("budget rules: a kernel larger than the room is cut into parts of at most the room, "
          "in touch order",
          "[host][budget]") {
  const auto what = [] { return std::string("kernel #2 (big)"); };
  // Fits: one part.
  CHECK(host::budget::parts({1, 2, 1, 2}, 2, what) == std::vector<size_t>{0});
  // Chunks 1 2 | 3 1 | 4: a chunk seen in an earlier part counts again (it may have gone).
  CHECK(host::budget::parts({1, 2, 2, 3, 1, 1, 4}, 2, what) == std::vector<size_t>{0, 3, 6});
  CHECK(host::budget::parts({7, 8, 9}, 1, what) == std::vector<size_t>{0, 1, 2});
  CHECK(host::budget::parts({}, 1, what) == std::vector<size_t>{0});
  CHECK_THROWS_WITH(host::budget::parts({1}, 0, what),
                    Catch::Matchers::Contains("kernel #2 (big) has no room at all"));
  // The parts' compute times add up to the kernel's.
  Time sum = 0;
  for (auto [a, b] : {std::pair<size_t, size_t>{0, 3}, {3, 6}, {6, 7}})
    sum += host::budget::part_duration(1001, a, b, 7);
  CHECK(sum == 1001);
  CHECK(host::budget::part_duration(700, 0, 3, 7) == 300);
}
