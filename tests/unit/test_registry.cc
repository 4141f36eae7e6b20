// The policy registry: every folder under policies/ registers a policy of its name, unknown
// names are refused with the known ones listed, and policies read their params strictly.
#include "policies/registry.h"
#include "source_dir.h"
#include "sim/core/error.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

using namespace faultline;
using Catch::Matchers::Contains;
using nlohmann::json;

TEST_CASE("registry: every folder under policies/ is a registered policy", "[policy]") {
  const std::filesystem::path dir = std::filesystem::path(FAULTLINE_SOURCE_DIR) / "policies";
  REQUIRE(std::filesystem::is_directory(dir));
  std::vector<std::string> folders;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_directory()) folders.push_back(entry.path().filename().string());
  }
  REQUIRE_FALSE(folders.empty());
  const auto& registry = policies::Registry::instance();
  for (const std::string& name : folders) {
    INFO("policies/" << name << "/ must register itself as \"" << name
                     << "\" with FAULTLINE_REGISTER_POLICY; registered: " << registry.known());
    CHECK(registry.has(name));
  }
  CHECK(registry.has("ondemand"));
}

TEST_CASE("registry: an unknown policy name lists the known ones", "[policy]") {
  const auto& registry = policies::Registry::instance();
  CHECK_FALSE(registry.has("nope"));
  CHECK_THROWS_AS(registry.create("nope", json::object(), "run.json: $.policy"), ConfigError);
  CHECK_THROWS_WITH(registry.create("nope", json::object(), "run.json: $.policy"),
                    Contains("run.json: $.policy") && Contains("unknown policy \"nope\"") &&
                        Contains("known policies: ") && Contains("ondemand"));
  CHECK_THAT(registry.known(), Contains("ondemand"));
}

TEST_CASE("registry: a policy cannot be registered twice", "[policy]") {
  CHECK_THROWS_WITH(policies::Registry::instance().add("ondemand", nullptr),
                    Contains("\"ondemand\" is registered twice"));
}

TEST_CASE("registry: ondemand rejects unknown params with their JSON path", "[policy]") {
  const auto& registry = policies::Registry::instance();
  CHECK(registry.create("ondemand", json::object(), "run.json") != nullptr);
  CHECK_THROWS_AS(registry.create("ondemand", {{"window", 4}}, "run.json"), ConfigError);
  CHECK_THROWS_WITH(registry.create("ondemand", {{"window", 4}}, "run.json"),
                    Contains("run.json") && Contains("$.policy.params.window") &&
                        Contains("unknown key"));
  CHECK_THROWS_WITH(registry.create("ondemand", json::array(), "run.json"),
                    Contains("$.policy.params") && Contains("expected object"));
}
