#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

namespace trainbench::worker {

/// Writes a run's result payload into data.result of the ConfigMap `name` in `ns` (created empty
/// by the operator) with a merge patch, authenticated as the pod's ServiceAccount (in-cluster
/// config; TRAINBENCH_SERVICEACCOUNT_DIR overrides the credentials' directory). Retries
/// transport errors, 429 and 5xx with capped backoff for up to `give_up_after`; 401/403/404/422
/// fail at once with the API's message.
void write_result_configmap(const std::string& ns, const std::string& name, const nlohmann::json& payload,
                            std::chrono::seconds give_up_after = std::chrono::seconds(600));

}  // namespace trainbench::worker
