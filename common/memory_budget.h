// Refusing, before anything runs, a plan whose buffers cannot fit in this
// machine's memory: a size of "1TB" or a model of 10^18 parameters is bad
// input (exit 2, naming the field), not a std::bad_alloc halfway through a
// run. `gradex validate` and every command that runs call the same checks,
// so they refuse exactly the same plans.
#pragma once

#include <string>

namespace gradex {

// This machine's physical memory in bytes (0 when it cannot be read).
double machine_memory_bytes();

// Throws ConfigError(field) when `needed` bytes exceed the machine's
// memory; `how` says where the estimate comes from ("2 buffers of 1 TB for
// each of 4 workers"), so a user can see what to shrink.
void check_memory_fits(double needed, const std::string& field, const std::string& how);

}  // namespace gradex
