#include "worker/progress_server.hpp"

#include <algorithm>
#include <iostream>

#include "telemetry/http_endpoint.hpp"

namespace trainbench::worker {

std::int64_t steps_done(const RankProgressRecord& r, std::int64_t total) {
  if (r.phase == ProgressPhase::kGather || r.phase == ProgressPhase::kDone) return total;
  // While loop step k (0-based) runs, k steps are done.
  return std::min(std::max<std::int64_t>(r.step, -1), total);
}

ProgressServer::ProgressServer(const RunConfig& run, int attempt, int port) {
  sample_.run = run.index;
  sample_.attempt = attempt;
  sample_.steps_total = run_steps(run).total();
  if (port <= 0) return;
  try {
    endpoint_ = std::make_unique<telemetry::HttpEndpoint>(
        ":" + std::to_string(port),
        std::map<std::string, telemetry::HttpHandler>{
            {"/progress", [this] {
               return telemetry::HttpReply{200, "application/json", to_json(sample()).dump() + "\n"};
             }}});
  } catch (const std::exception& e) {
    std::cerr << "trainbench-worker master: no progress endpoint: " << e.what() << "\n";
  }
}

ProgressServer::~ProgressServer() = default;

void ProgressServer::observe(const RankProgressRecord& rank0) {
  std::lock_guard<std::mutex> lock(mutex_);
  sample_.steps_done = steps_done(rank0, sample_.steps_total);
  sample_.updated = rank0.published;
  rate_.observe(sample_.steps_done, rank0.published);
  sample_.seconds_per_step = rate_.seconds_per_step();
}

RunProgressSample ProgressServer::sample() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sample_;
}

}  // namespace trainbench::worker
