// The allocator models (sim/alloc/) as a whole: replaying histories, random sequences replayed
// with every invariant checked, the model registry and the strict alloc config reader. The
// models' own rules: test_alloc_caching.cc and test_alloc_gmlake.cc.
#include "alloc_support.h"
#include "sim/alloc/replay.h"
#include "sim/core/error.h"

#include <catch2/catch.hpp>

using namespace faultline;
using namespace faultline::alloc;
using namespace faultline::alloc::testing;
using Catch::Matchers::Contains;
using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Replay

TEST_CASE("alloc replay: the sliver history reserves 66, 60 and 40 MiB", "[alloc]") {
  HistoryBuilder hb;
  const uint64_t big = hb.alloc(40 * MiB);
  hb.free(big);
  const uint64_t a = hb.alloc(12 * MiB);
  const uint64_t b = hb.alloc(12 * MiB);
  const uint64_t c = hb.alloc(16 * MiB);
  hb.free(a);
  hb.free(c);
  hb.alloc(26 * MiB); // left live: replay frees it at the end
  (void)b;
  ReplayConfig config;
  config.options = stitching_options();
  config.check_invariants = true;
  const std::map<std::string, Bytes> expected = {
      {"caching", 66 * MiB}, {"expandable", 60 * MiB}, {"gmlake", 40 * MiB}};
  for (const auto& [name, peak_reserved] : expected) {
    INFO(name);
    const ModelResult r = replay(hb.history(), name, config);
    CHECK(r.completed);
    CHECK(r.usage.peak_allocated == 40 * MiB);
    CHECK(r.usage.peak_requested == 40 * MiB);
    CHECK(r.usage.peak_reserved == peak_reserved);
    CHECK(r.usage.mallocs == 5);
    CHECK(r.usage.frees == 3);
    CHECK(r.reserved_after_empty_cache == 0);
  }
}

TEST_CASE("alloc replay: an out-of-memory stops the replay at its event", "[alloc]") {
  HistoryBuilder hb;
  hb.alloc(30 * MiB);
  hb.alloc(30 * MiB);
  hb.alloc(1 * MiB);
  ReplayConfig config;
  config.capacity = 40 * MiB;
  config.check_invariants = true;
  for (const std::string name : {"caching", "expandable", "gmlake"}) {
    INFO(name);
    const ModelResult r = replay(hb.history(), name, config);
    CHECK_FALSE(r.completed);
    CHECK(r.oom_at_event == 1);
    CHECK(r.usage.ooms == 1);
    CHECK(r.reserved_after_empty_cache == 0);
  }
}

TEST_CASE("alloc replay: random sequences keep every invariant", "[alloc]") {
  struct Variant {
    std::string allocator;
    std::string label;
    Options options;
  };
  std::vector<Variant> variants = {{"caching", "defaults", {}}, {"gmlake", "defaults", {}}};
  {
    // check() visits every page of a segment: 8 GiB of VA instead of 160 keeps it quick; 1 GiB
    // makes streams need several segments.
    Options o;
    o.segment_va = Bytes{8} << 30;
    variants.push_back({"expandable", "segment_va 8 GiB", o});
    o.segment_va = Bytes{1} << 30;
    variants.push_back({"expandable", "segment_va 1 GiB", o});
    o = {};
    o.max_split_size = 64 * MiB;
    variants.push_back({"caching", "max_split_size 64 MiB", o});
    o.segment_va = Bytes{8} << 30;
    variants.push_back({"expandable", "max_split_size 64 MiB", o});
  }
  {
    Options o;
    o.frag_limit = 4 * MiB;
    o.auto_gc = 256 * MiB;
    variants.push_back({"gmlake", "frag_limit 4 MiB, auto_gc 256 MiB", o});
    o.reuse_limit = 1;
    o.realloc_missing = true;
    variants.push_back({"gmlake", "reuse_limit 1, realloc_missing", o});
    o.reuse_limit = 10;
    o.realloc_missing = false;
    o.defrag_level = 1;
    variants.push_back({"gmlake", "defrag_level 1", o});
  }
  struct Load {
    Bytes capacity;
    Bytes live_cap;
  };
  // Unlimited, and 1 GiB with up to about 760 MiB requested live: some runs complete, others end
  // in an out-of-memory after releasing their cache several times.
  for (const Load load : {Load{0, 4096 * MiB}, Load{1024 * MiB, 560 * MiB}}) {
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      const History history = random_history(seed, 2000, load.live_cap);
      for (const Variant& v : variants) {
        INFO(v.allocator << " (" << v.label << "), seed " << seed << ", capacity "
                         << load.capacity);
        ReplayConfig config;
        config.capacity = load.capacity;
        config.options = v.options;
        config.check_invariants = true;
        ModelResult r;
        REQUIRE_NOTHROW(r = replay(history, v.allocator, config));
        CHECK(r.reserved_after_empty_cache == 0);
        if (load.capacity == 0) CHECK(r.completed);
        if (load.capacity != 0) CHECK(r.usage.peak_reserved <= load.capacity);
        if (r.completed) {
          CHECK(r.usage.mallocs + r.usage.frees == history.events.size());
          CHECK(r.usage.peak_reserved >= r.usage.peak_allocated);
        } else {
          CHECK(r.usage.ooms == 1);
        }
        CHECK(r.usage.peak_allocated >= r.usage.peak_requested);
        if (v.label.rfind("frag_limit", 0) == 0 && load.capacity == 0)
          CHECK(counter_of(r.counters, "stitches") > 0);
        if (v.label == "segment_va 1 GiB" && load.capacity == 0) // 3 streams, 2 pools: 6 at least
          CHECK(counter_of(r.counters, "segments_created") > 6);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Registry and config

TEST_CASE("alloc registry: the three models, and unknown names listed", "[alloc]") {
  CHECK(allocator_names() == std::vector<std::string>{"caching", "expandable", "gmlake"});
  SimDriver driver(0);
  for (const auto& name : allocator_names()) CHECK(make_allocator(name, {}, driver) != nullptr);
  CHECK_THROWS_AS(make_allocator("buddy", {}, driver), ConfigError);
  CHECK_THROWS_WITH(make_allocator("buddy", {}, driver),
                    Contains("'buddy'") && Contains("caching, expandable, gmlake"));
  CHECK_THROWS_AS(require_allocator("Caching"), ConfigError);
  CHECK_NOTHROW(require_allocator("gmlake"));
}

TEST_CASE("alloc config: defaults and values are read and resolved", "[alloc]") {
  json resolved;
  const ReplayConfig d = read_replay_config(json::object(), "alloc.json", resolved);
  CHECK(d.allocators == std::vector<std::string>{"caching", "expandable", "gmlake"});
  CHECK(d.capacity == 0);
  CHECK(d.options.max_split_size == kNoLimit);
  CHECK(d.options.frag_limit == 512 * MiB);
  CHECK(resolved["allocators"] == json{"caching", "expandable", "gmlake"});

  const json doc = {{"allocators", json::array({"gmlake"})},
                    {"capacity_bytes", 1024 * MiB},
                    {"options",
                     {{"max_split_size_mb", 64},
                      {"gmlake_frag_limit", 8 * MiB},
                      {"gmlake_reuse_limit", 3},
                      {"gmlake_defrag_level", 1},
                      {"gmlake_realloc_missing", true}}}};
  const ReplayConfig c = read_replay_config(doc, "alloc.json", resolved);
  CHECK(c.allocators == std::vector<std::string>{"gmlake"});
  CHECK(c.capacity == 1024 * MiB);
  CHECK(c.options.max_split_size == 64 * MiB);
  CHECK(c.options.frag_limit == 8 * MiB);
  CHECK(c.options.reuse_limit == 3);
  CHECK(c.options.defrag_level == 1);
  CHECK(c.options.realloc_missing);
  CHECK(resolved["options"]["gmlake_auto_gc"] == Options{}.auto_gc);
}

TEST_CASE("alloc config: errors name the file and the JSON path", "[alloc]") {
  auto error_of = [](const json& doc) -> std::string {
    json resolved;
    try {
      read_replay_config(doc, "alloc.json", resolved);
    } catch (const ConfigError& e) {
      return e.what();
    }
    FAIL("reading " << doc.dump() << " did not throw ConfigError");
    return "";
  };
  CHECK_THAT(error_of({{"options", {{"bogus", 1}}}}),
             Contains("alloc.json") && Contains("$.options.bogus") && Contains("unknown key"));
  CHECK_THAT(error_of({{"bogus", 1}}), Contains("$.bogus") && Contains("unknown key"));
  CHECK_THAT(error_of({{"capacity_bytes", "lots"}}),
             Contains("alloc.json") && Contains("$.capacity_bytes") && Contains("lots"));
  CHECK_THAT(error_of({{"allocators", {"caching", "buddy"}}}),
             Contains("$.allocators[1]") && Contains("buddy") &&
                 Contains("caching, expandable, gmlake"));
  CHECK_THAT(error_of({{"allocators", json::array()}}), Contains("$.allocators"));
  CHECK_THAT(error_of({{"allocators", {"caching", 3}}}), Contains("$.allocators[1]"));
  CHECK_THAT(error_of({{"options", {{"gmlake_reuse_limit", 0}}}}),
             Contains("$.options.gmlake_reuse_limit"));
  CHECK_THAT(error_of({{"options", {{"gmlake_defrag_level", 3}}}}),
             Contains("$.options.gmlake_defrag_level"));
  CHECK_THAT(error_of({{"options", {{"expandable_large_page", 3 * MiB}}}}),
             Contains("$.options.expandable_large_page"));
  CHECK_THAT(error_of({{"options", {{"max_split_size_mb", 16}}}}),
             Contains("$.options.max_split_size_mb") && Contains("more than 20"));
}
