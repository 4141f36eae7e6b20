// Config keys declared once (sim/config/schema.h): one table gives the default, the typed read,
// the bounds check and the documentation of each key.
#include "sim/config/schema.h"
#include "sim/core/error.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace faultline;
using namespace faultline::config;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

enum class Colour { kRed, kBlue };

struct Knobs {
  uint32_t count = 3;
  int64_t cost_ns = 10;
  int64_t other_ns = 0;
  double share = 0.5;
  bool on = true;
  std::string name;
  Colour colour = Colour::kBlue;
  uint64_t steps = 0;
  json extra = json::object();
};

const Fields<Knobs>& knobs() {
  static const Fields<Knobs> fields = {
      field(&Knobs::count, "count", "how many").range(1, 8),
      field(&Knobs::cost_ns, "cost_ns", "a cost").unit("ns").at_least(0),
      field(&Knobs::other_ns, "other_ns", "another cost").default_from(&Knobs::cost_ns, "cost_ns"),
      field(&Knobs::share, "share", "a fraction").at_least(0).below(1),
      field(&Knobs::on, "on", "a switch"),
      field(&Knobs::name, "name", "a name").required(),
      choice(&Knobs::colour, "colour", {{"red", Colour::kRed}, {"blue", Colour::kBlue}}, "hue"),
      field(&Knobs::steps, "steps", "optional").optional("the trace's").at_least(1),
      raw_object(&Knobs::extra, "extra", "kept as given"),
  };
  return fields;
}

std::string error_of(const json& doc) {
  try {
    read_object(doc, "k.json", "$", knobs());
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("reading " << doc.dump() << " did not throw");
  return "";
}

} // namespace

TEST_CASE("schema: defaults come from the struct, values from the JSON", "[config][schema]") {
  const json doc = {{"name", "x"}, {"cost_ns", 7}, {"colour", "red"}};
  Reader r(doc, "k.json");
  Knobs k;
  read_fields(r, k, knobs());
  r.finish();
  CHECK(k.count == 3);
  CHECK(k.cost_ns == 7);
  CHECK(k.other_ns == 7); // default_from: the other key's value as read
  CHECK(k.colour == Colour::kRed);
  CHECK(k.steps == 0);
  // Every value read is recorded, defaults included; an absent optional key is not.
  CHECK(r.resolved() == json{{"count", 3},
                             {"cost_ns", 7},
                             {"other_ns", 7},
                             {"share", 0.5},
                             {"on", true},
                             {"name", "x"},
                             {"colour", "red"},
                             {"extra", json::object()}});
}

TEST_CASE("schema: errors name the key, the rule and the value", "[config][schema]") {
  CHECK_THAT(error_of({{"count", 1}}), Contains("k.json: $.name: required value is missing"));
  CHECK_THAT(error_of({{"name", "x"}, {"count", 9}}),
             Contains("k.json: $.count: expected 1 to 8, got 9"));
  CHECK_THAT(error_of({{"name", "x"}, {"cost_ns", -1}}),
             Contains("$.cost_ns: expected at least 0, got -1"));
  CHECK_THAT(error_of({{"name", "x"}, {"share", 1}}),
             Contains("$.share: expected at least 0 and less than 1, got 1.0"));
  CHECK_THAT(error_of({{"name", "x"}, {"colour", "green"}}),
             Contains("$.colour: expected \"red\" or \"blue\", got \"green\""));
  CHECK_THAT(error_of({{"name", "x"}, {"steps", 0}}), Contains("$.steps: expected at least 1"));
  CHECK_THAT(error_of({{"name", "x"}, {"count", "3"}}),
             Contains("$.count: expected unsigned 32-bit integer, got string"));
  CHECK_THAT(error_of({{"name", "x"}, {"extra", 5}}), Contains("$.extra: expected object"));
  CHECK_THAT(error_of({{"name", "x"}, {"cuont", 5}}),
             Contains("$.cuont: unknown key") && Contains("count"));
}

TEST_CASE("schema: the documentation comes from the same table", "[config][schema]") {
  const std::vector<Field> d = docs(knobs());
  REQUIRE(d.size() == 9);
  CHECK(d[0].type == "unsigned 32-bit integer");
  CHECK(d[0].default_value == "3");
  CHECK(d[0].allowed == "1 to 8");
  CHECK(d[1].unit == "ns");
  CHECK(d[1].allowed == "at least 0");
  CHECK(d[2].default_note == "`cost_ns`'s value");
  CHECK(d[3].allowed == "at least 0 and less than 1");
  CHECK(d[5].default_note == "required");
  CHECK(d[6].default_value == "\"blue\"");
  CHECK(d[6].allowed == "\"red\" or \"blue\"");
  CHECK(d[7].default_note == "the trace's");
  const std::string table = schema_markdown({"knobs", "a test", d});
  CHECK_THAT(table, Contains("| `count` | unsigned 32-bit integer | `3` | 1 to 8 | how many |"));
  CHECK_THAT(table, Contains("| `name` | string | **required** |"));
}

TEST_CASE("schema: every registered section is documented", "[config][schema]") {
  std::set<std::string> names;
  for (const Section& s : schema_sections()) {
    INFO(s.name);
    CHECK(names.insert(s.name).second);
    CHECK_FALSE(s.where.empty());
    std::set<std::string> keys;
    for (const Field& f : s.fields) {
      INFO(f.name);
      CHECK(keys.insert(f.name).second);
      CHECK_FALSE(f.type.empty());
      CHECK_FALSE(f.description.empty());
      CHECK((f.default_value.empty() != f.default_note.empty()));
    }
  }
  for (const char* want :
       {"run", "run.driver", "run.capacity", "run.policy", "gpu", "link", "link.curve",
        "policy.ondemand", "policy.deepum", "policy.pump", "policy.harvest", "policy.oracle",
        "policy.schedule",
        "alloc", "alloc.options", "synth", "sweep"})
    CHECK(names.count(want));
}
