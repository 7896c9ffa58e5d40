// A description of the machine and build that produced a result, embedded
// in every results file so numbers can be traced to where they came from.
#pragma once

#include <nlohmann/json.hpp>

namespace gradex {

nlohmann::json describe_machine();

}  // namespace gradex
