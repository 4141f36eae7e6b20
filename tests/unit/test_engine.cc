#include "sim/core/engine.h"
#include "sim/core/error.h"

#include <catch2/catch.hpp>
#include <vector>

using namespace faultline;

namespace {

struct Recorder : EventHandler {
  std::vector<std::pair<Time, uint32_t>> seen;
  void handle(uint32_t kind, Time now) override { seen.emplace_back(now, kind); }
  std::string describe_in_flight() const override { return "recorder waiting for godot"; }
};

struct Spinner : EventHandler {
  Engine* engine = nullptr;
  void handle(uint32_t, Time now) override {
    engine->schedule(now + 1000, Priority::kHost, this, 0);
  }
  std::string describe_in_flight() const override { return "spinner: 1 retry pending"; }
};

} // namespace

TEST_CASE("events run in time, priority, then scheduling order", "[engine]") {
  Engine engine(1'000'000);
  Recorder r;
  engine.schedule(20, Priority::kHost, &r, 1);
  engine.schedule(10, Priority::kHost, &r, 2);
  engine.schedule(10, Priority::kTransfer, &r, 3);
  engine.schedule(10, Priority::kHost, &r, 4);
  engine.schedule(20, Priority::kDriver, &r, 5);
  engine.run();
  const std::vector<std::pair<Time, uint32_t>> expected = {
      {10, 3}, {10, 2}, {10, 4}, {20, 5}, {20, 1}};
  CHECK(r.seen == expected);
  CHECK(engine.now() == 20);
}

TEST_CASE("scheduling in the past is refused", "[engine]") {
  Engine engine(1'000'000);
  Recorder r;
  engine.schedule(50, Priority::kHost, &r, 0);
  engine.run();
  REQUIRE_THROWS_WITH(engine.schedule(49, Priority::kHost, &r, 0),
                      Catch::Contains("time must never go back"));
}

TEST_CASE("the watchdog stops a run without progress and names what is in flight", "[engine]") {
  Engine engine(50'000);
  Spinner s;
  s.engine = &engine;
  engine.add_component(&s);
  engine.schedule(0, Priority::kHost, &s, 0);
  REQUIRE_THROWS_WITH(engine.run(),
                      Catch::Contains("watchdog") && Catch::Contains("spinner: 1 retry pending"));
  CHECK(engine.now() > 50'000);
  CHECK(engine.now() <= 51'000);
}

TEST_CASE("progress keeps the watchdog quiet", "[engine]") {
  struct Worker : EventHandler {
    Engine* engine = nullptr;
    int left = 100;
    void handle(uint32_t, Time now) override {
      engine->progress();
      if (--left) engine->schedule(now + 40'000, Priority::kHost, this, 0);
    }
    std::string describe_in_flight() const override { return "worker"; }
  } w;
  Engine engine(50'000);
  w.engine = &engine;
  engine.schedule(0, Priority::kHost, &w, 0);
  REQUIRE_NOTHROW(engine.run());
  CHECK(engine.now() == 99 * 40'000);
}
