// The spec's typed fields without YAML in the way: a valid BenchmarkJob whose names, label and
// annotation keys and values, quantities, node selector, image, env names, NCCL settings and
// integers are taken from the input, then core::validate() (which the operator runs on every
// custom resource, whatever wrote it). validate() must not throw; a job it accepts must survive
// the trip to the operator (fuzz/spec_round_trip.hpp).

#include <fuzzer/FuzzedDataProvider.h>

#include <map>
#include <string>

#include "core/spec/spec.hpp"
#include "fuzz/spec_round_trip.hpp"

namespace {

using namespace trainbench;

// Valid UTF-8, as every reader hands validate() its strings (the YAML reader refuses invalid
// UTF-8, the operator's JSON cannot hold it): invalid bytes become U+FFFD.
std::string text(FuzzedDataProvider& in) {
  const nlohmann::json s = in.ConsumeRandomLengthString(512);
  return nlohmann::json::parse(s.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)).get<std::string>();
}

void fill_map(FuzzedDataProvider& in, std::map<std::string, std::string>& m) {
  const int n = in.ConsumeIntegralInRange(0, 3);
  for (int i = 0; i < n; ++i) {
    std::string key = text(in);
    m[std::move(key)] = text(in);
  }
}

void fill_template(FuzzedDataProvider& in, PodTemplate& t) {
  if (in.ConsumeBool()) t.image = text(in);
  if (in.ConsumeBool()) t.image_pull_policy = text(in);
  if (in.ConsumeBool()) t.service_account_name = text(in);
  fill_map(in, t.resource_limits);
  fill_map(in, t.resource_requests);
  fill_map(in, t.node_selector);
  fill_map(in, t.labels);
  fill_map(in, t.annotations);
  if (in.ConsumeBool()) {
    nlohmann::json env = {{"name", text(in)}, {"value", text(in)}};
    t.env.push_back(std::move(env));
  }
}

void fill_numbers(FuzzedDataProvider& in, BenchmarkJob& job) {
  BenchmarkSpec& b = job.benchmark;
  b.model = in.PickValueInArray({"mlp", "resnet18", "resnet50", "bert-base", "gpt2-small", "mlstm"});
  b.paradigm = in.PickValueInArray({Paradigm::kNone, Paradigm::kDdp, Paradigm::kPipeline, Paradigm::kModelParallel,
                                    Paradigm::kZero, Paradigm::kHybridPs});
  b.batch_size_per_device = in.ConsumeIntegral<int>();
  b.repeats = in.ConsumeIntegral<int>();
  b.measure_steps = in.ConsumeIntegral<int>();
  b.learning_rate = in.ConsumeFloatingPoint<double>();
  b.ddp.bucket_cap_mb = in.ConsumeFloatingPoint<double>();
  b.pipeline.micro_batches = in.ConsumeIntegral<int>();
  const int n = in.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < n; ++i) b.pipeline.boundaries.push_back(in.ConsumeIntegral<int>());
  SweepEntry e;
  e.nodes = in.ConsumeIntegral<int>();
  e.devices_per_node = in.ConsumeIntegral<int>();
  job.sweep = {e};
  job.master_port = in.ConsumeIntegral<int>();
  job.run_policy.active_deadline_seconds = in.ConsumeIntegral<int>();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  BenchmarkJob job;
  job.metadata.name = "job-a";
  job.benchmark.model = "mlp";
  job.sweep = {SweepEntry{}};
  job.backend = Backend::kGloo;
  if (in.ConsumeBool()) fill_numbers(in, job);
  if (in.ConsumeBool()) job.metadata.name = text(in);
  if (in.ConsumeBool()) job.metadata.namespace_ = text(in);
  fill_map(in, job.metadata.labels);
  fill_map(in, job.metadata.annotations);
  fill_template(in, job.pod_template);
  if (in.ConsumeBool()) job.nccl.socket_ifname = text(in);
  if (in.ConsumeBool()) job.nccl.debug = text(in);
  fill_map(in, job.nccl.extra_env);
  if (validate(job).empty()) fuzz::check_valid_job_round_trip(job);
  return 0;
}
