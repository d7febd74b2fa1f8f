#include "worker/result_configmap.hpp"

#include <iostream>
#include <stdexcept>

#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/retry.hpp"

namespace trainbench::worker {

void write_result_configmap(const std::string& ns, const std::string& name, const nlohmann::json& payload,
                            std::chrono::seconds give_up_after) {
  const kube::Client client(kube::load_in_cluster_config());
  const nlohmann::json patch = {{"data", {{"result", payload.dump()}}}};
  kube::RetryOptions retry;
  retry.give_up_after = give_up_after;
  retry.on_retry = [](const std::exception&, std::chrono::milliseconds delay) {
    std::cerr << "trainbench-worker master: result not written yet, retrying in " << delay.count() << " ms\n";
  };
  try {
    kube::call_with_retries([&] { client.merge_patch(kube::resources::config_maps(), ns, name, patch); }, retry);
  } catch (const std::exception& e) {
    throw std::runtime_error("writing the result to ConfigMap " + ns + "/" + name + ": " + e.what());
  }
}

}  // namespace trainbench::worker
