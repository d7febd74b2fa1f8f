#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainbench {

/// The BenchmarkJob CustomResourceDefinition, built from core's own allowed values, limits and
/// defaults (core/spec/spec.hpp, core/spec/spec_bounds.hpp), so the API server and `trainbench validate` agree. docs/crd.md.
inline constexpr const char* kCrdGroup = "trainbench.dev";
inline constexpr const char* kCrdVersion = "v1alpha1";
inline constexpr const char* kCrdPlural = "benchmarkjobs";
inline constexpr const char* kCrdSingular = "benchmarkjob";
inline constexpr const char* kCrdShortName = "bj";
inline constexpr const char* kCrdCategory = "trainbench";
inline constexpr const char* kCrdName = "benchmarkjobs.trainbench.dev";
/// Where the generated CRD is committed, relative to the repository root.
inline constexpr const char* kCrdFile = "crds/trainbench.dev_benchmarkjobs.yaml";
inline constexpr const char* kCrdRegenerate = "./build/cli/trainbench crd > crds/trainbench.dev_benchmarkjobs.yaml";

/// A status condition's message: metav1.Condition's maxLength (the operator cuts to it).
inline constexpr int kMaxConditionMessageLength = 32768;

/// Status vocabulary in the CRD's enums: the texts of core/api/job_status.hpp's enums.
const std::vector<std::string>& known_job_phases();       ///< Pending, Running, Succeeded, Failed, Invalid
const std::vector<std::string>& known_run_phases();       ///< Pending, Starting, Running, Restarting, Succeeded, Failed
const std::vector<std::string>& known_condition_types();  ///< Invalid, Running, Succeeded, Failed

/// The CRD's openAPIV3Schema (the whole BenchmarkJob object: spec and status).
nlohmann::json benchmarkjob_schema();

/// The apiextensions.k8s.io/v1 CustomResourceDefinition object.
nlohmann::json benchmarkjob_crd();

/// benchmarkjob_crd() as YAML with a "generated, do not edit" header: what `trainbench crd` prints
/// and kCrdFile holds.
std::string benchmarkjob_crd_yaml();

}  // namespace trainbench
