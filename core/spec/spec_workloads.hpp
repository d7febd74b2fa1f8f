#pragma once
// spec.workloads: what each of the sweep's runs trains, the built-in worker or a user's program
// (docs/workloads.md). Its semantic checks, called by validate() (core/spec/spec_validate.cpp).

#include <vector>

#include "core/spec/spec.hpp"

namespace trainbench {

/// The built-in worker's own fields of spec.benchmark and spec.sweep[] (its model, paradigm and
/// their settings), which a program brings for itself: a job whose every workload is a program
/// refuses them, each named, when they are set to anything but their default.
const std::vector<std::string>& builtin_only_benchmark_fields();

/// spec.workloads: names (an RFC 1123 label, unique), at most one built-in workload, each
/// program's command, env, workingDir and flopsPerExample, the number of runs (workloads x
/// sweep <= kMaxRuns), and the built-in-only fields of a job of programs only.
std::vector<FieldError> validate_workloads(const BenchmarkJob& job);

/// The names every rank's executor sets besides those starting with TRAINBENCH_ (torchrun's,
/// the thread counts, torchelastic's store flags): core's check and the CRD's CEL rule both use it.
const std::vector<std::string>& executor_variable_names();

/// True for the variables every rank gets from its executor (torchrun's, OMP/OPENBLAS threads,
/// TRAINBENCH_*): a program's env may not set them.
bool is_executor_variable(const std::string& name);

}  // namespace trainbench
