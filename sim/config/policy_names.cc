#include "sim/config/policy_names.h"

#include "sim/core/error.h"

namespace faultline::config {
namespace {
const PolicyNames* g_names = nullptr;
} // namespace

void set_policy_names(const PolicyNames* names) {
  g_names = names;
}

const PolicyNames& policy_names() {
  if (!g_names) throw Error("no policy registry was linked in, so no policy name can be checked");
  return *g_names;
}

} // namespace faultline::config
