#include "worker/result_configmap.hpp"

#include <algorithm>
#include <iostream>
#include <thread>

#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/errors.hpp"

namespace trainbench::worker {

void write_result_configmap(const std::string& ns, const std::string& name, const nlohmann::json& payload,
                            std::chrono::seconds give_up_after) {
  const kube::Client client(kube::load_in_cluster_config());
  const nlohmann::json patch = {{"data", {{"result", payload.dump()}}}};
  const auto deadline = std::chrono::steady_clock::now() + give_up_after;
  auto delay = std::chrono::milliseconds(250);
  for (;;) {
    try {
      client.merge_patch(kube::resources::config_maps(), ns, name, patch);
      return;
    } catch (const kube::ApiError& e) {
      const bool retryable = e.code() == 429 || e.code() >= 500;
      if (!retryable || std::chrono::steady_clock::now() >= deadline) {
        throw std::runtime_error("writing the result to ConfigMap " + ns + "/" + name + ": " + e.what());
      }
    } catch (const kube::TransportError& e) {
      if (std::chrono::steady_clock::now() >= deadline) {
        throw std::runtime_error("writing the result to ConfigMap " + ns + "/" + name + ": " + e.what());
      }
    }
    std::cerr << "trainbench-worker master: result not written yet, retrying in " << delay.count() << " ms\n";
    std::this_thread::sleep_for(delay);
    delay = std::min<std::chrono::milliseconds>(delay * 2, std::chrono::seconds(10));
  }
}

}  // namespace trainbench::worker
