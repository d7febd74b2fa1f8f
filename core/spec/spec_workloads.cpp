// Checks of spec.workloads (core/spec/spec_workloads.hpp).

#include "core/spec/spec_workloads.hpp"

#include <algorithm>
#include <set>

#include "core/spec/image_reference.hpp"
#include "core/spec/spec_messages.hpp"

namespace trainbench {
namespace {

using spec_messages::fmt_number;
using spec_messages::matches;
using spec_messages::quote;

void check_program(const ProgramSpec& p, const std::string& path, std::vector<FieldError>& errors) {
  if (const std::string message = image_reference_message(p.image); !p.image.empty() && !message.empty()) {
    errors.push_back({path + ".image", message});
  }
  if (p.command.empty()) {
    errors.push_back({path + ".command", "is required: the program's executable and its first arguments"});
  } else if (p.command.front().empty()) {
    errors.push_back({path + ".command[0]", "must name the executable, got \"\""});
  }
  if (p.command.size() + p.args.size() > static_cast<std::size_t>(kMaxProgramArgs)) {
    errors.push_back({path + ".args", "command and args must have at most " + std::to_string(kMaxProgramArgs) +
                                          " items together, got " + std::to_string(p.command.size() + p.args.size())});
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < p.env.size(); ++i) {
    const std::string ep = path + ".env[" + std::to_string(i) + "].name";
    const std::string& name = p.env[i].name;
    if (!matches(name, kEnvNamePattern, kMaxEnvNameLength)) {
      errors.push_back({ep, "must be an environment variable name (letters, digits, '_'), got " + quote(name)});
    } else if (is_executor_variable(name)) {
      errors.push_back({ep, quote(name) + " is set for every rank by trainbench (the torchrun environment and "
                                          "TRAINBENCH_*, docs/workloads.md): a program may not override it"});
    } else if (!seen.insert(name).second) {
      errors.push_back({ep, "is given twice: " + quote(name)});
    }
  }
  if (!p.working_dir.empty() && p.working_dir.front() != '/') {
    errors.push_back({path + ".workingDir", "must be an absolute path, got " + quote(p.working_dir)});
  }
  if (p.flops_per_example && !(*p.flops_per_example > 0)) {
    errors.push_back({path + ".flopsPerExample", "must be > 0, got " + fmt_number(*p.flops_per_example)});
  }
}

/// A job of programs only: each built-in-only field set to anything but its default.
void check_builtin_fields_unset(const BenchmarkJob& job, std::vector<FieldError>& errors) {
  const nlohmann::json mine = to_json(job)["spec"]["benchmark"];
  const nlohmann::json dflt = to_json(BenchmarkJob{})["spec"]["benchmark"];
  const std::string why = ": applies to the built-in worker only, and every workload of this job is a program "
                          "(which brings its own model and paradigm); remove it";
  for (const std::string& field : builtin_only_benchmark_fields()) {
    const bool differs = mine.contains(field) != dflt.contains(field) || (mine.contains(field) && mine[field] != dflt[field]);
    if (differs) errors.push_back({"spec.benchmark." + field, "is set" + why});
  }
  for (std::size_t i = 0; i < job.sweep.size(); ++i) {
    const SweepEntry& e = job.sweep[i];
    const std::string p = "spec.sweep[" + std::to_string(i) + "]";
    if (e.paradigm) errors.push_back({p + ".paradigm", "is set" + why});
    if (e.bucket_cap_mb) errors.push_back({p + ".bucketCapMB", "is set" + why});
    if (e.parameter_servers) errors.push_back({p + ".parameterServers", "is set" + why});
  }
}

}  // namespace

const std::vector<std::string>& builtin_only_benchmark_fields() {
  static const std::vector<std::string> fields{"model",     "paradigm",       "imageSize", "mlp",
                                               "ddp",       "optimizer",      "pipeline",  "sequenceLength",
                                               "transformer", "mlstm",        "hybridEmbedding", "allreduce",
                                               "hybridPs"};
  return fields;
}

const std::vector<std::string>& executor_variable_names() {
  static const std::vector<std::string> names{"MASTER_ADDR",      "MASTER_PORT",     "WORLD_SIZE",
                                              "RANK",             "LOCAL_RANK",      "LOCAL_WORLD_SIZE",
                                              "NODE_RANK",        "GROUP_RANK",      "OMP_NUM_THREADS",
                                              "OPENBLAS_NUM_THREADS", "TORCHELASTIC_USE_AGENT_STORE",
                                              "TORCHELASTIC_RESTART_COUNT"};
  return names;
}

bool is_executor_variable(const std::string& name) {
  if (name.rfind("TRAINBENCH_", 0) == 0) return true;
  const auto& names = executor_variable_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool has_builtin_workload(const BenchmarkJob& job) {
  return job.workloads.empty() ||
         std::any_of(job.workloads.begin(), job.workloads.end(), [](const WorkloadSpec& w) { return !w.program; });
}

std::vector<FieldError> validate_workloads(const BenchmarkJob& job) {
  std::vector<FieldError> errors;
  std::set<std::string> names;
  int builtin = -1;
  for (std::size_t i = 0; i < job.workloads.size(); ++i) {
    const WorkloadSpec& w = job.workloads[i];
    const std::string path = "spec.workloads[" + std::to_string(i) + "]";
    if (w.name.empty()) {
      errors.push_back({path + ".name", "is required (it names the workload's rows in the report)"});
    } else if (!matches(w.name, kWorkloadNamePattern, kMaxWorkloadNameLength)) {
      errors.push_back({path + ".name", "must be a lowercase RFC 1123 label (a-z, 0-9, '-') of at most " +
                                            std::to_string(kMaxWorkloadNameLength) + " characters, got " +
                                            quote(w.name)});
    } else if (!names.insert(w.name).second) {
      errors.push_back({path + ".name", "must be unique, " + quote(w.name) + " is given twice"});
    }
    if (w.program) {
      check_program(*w.program, path + ".program", errors);
    } else if (builtin >= 0) {
      errors.push_back({path, "is a second built-in workload (no program) after spec.workloads[" +
                                  std::to_string(builtin) + "]: the built-in worker runs once per sweep entry"});
    } else {
      builtin = static_cast<int>(i);
    }
  }
  const std::size_t runs = std::max<std::size_t>(job.workloads.size(), 1) * job.sweep.size();
  if (runs > static_cast<std::size_t>(kMaxRuns)) {
    errors.push_back({"spec.workloads", "workloads x sweep entries must be at most " + std::to_string(kMaxRuns) +
                                            " runs, got " + std::to_string(job.workloads.size()) + " x " +
                                            std::to_string(job.sweep.size())});
  }
  if (!has_builtin_workload(job)) check_builtin_fields_unset(job, errors);
  return errors;
}

}  // namespace trainbench
