// trainbench-worker: one rank of one trainbench run (a DDP benchmark step loop on libtorch).
//
// Usage:
//   trainbench-worker                        run one rank (environment below)
//   trainbench-worker --describe-model NAME  print {"model","parameters","buffers","headParameters"} as JSON
//                                            (default RunConfig; element counts) and exit
//   trainbench-worker --version              this worker's version and its PyTorch, CUDA, cuDNN,
//                                            NCCL (none on a CPU build), gloo and BLAS
//
// Environment:
//   TRAINBENCH_RUN_CONFIG     the RunConfig as JSON (core/plan/run_config.hpp), required
//   MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE,
//   NODE_RANK (alias GROUP_RANK)   torchrun-style placement; or Slurm's SLURM_PROCID,
//                             SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID (see rank_env.hpp)
//   TRAINBENCH_RESULT_FILE    rank 0 writes the RunResult JSON there atomically (tmp +
//                             rename); unset: printed to stdout
//   TRAINBENCH_PROGRESS_FILE  rank 0 rewrites it atomically after every step with
//                             {"phase":"warmup"|"measure","repeat":r,"repeats":R,"step":k,
//                              "steps":N,"secPerIter":s}; k is 1-based; r is 0 during warmup
//                             and 1..R while measuring
//
//   TRAINBENCH_RANK_PROGRESS_FILE  with hangTimeoutSeconds > 0 and no external store, every
//                             rank's heartbeat rewrites it atomically about once a second with
//                             its progress record (core/results/rank_progress.hpp); with an external
//                             store the record goes to its key trainbench/progress/<rank>
//   POD_NAME, NODE_NAME       the pod and node a progress record names (the downward API)
//   TRAINBENCH_PROGRESS_PORT  (--master) serve the run's progress at GET /progress on this
//                             port (worker/progress_server.hpp); with an external store rank 0
//                             always publishes its progress record, hang watch or not
//
//   TRAINBENCH_MALLOC=system   keep glibc's default of returning large freed blocks to the
//                             kernel (by default the worker keeps them: see system_probe.hpp)
//
//   TRAINBENCH_EXTERNAL_STORE=1 the run's store is served by the master pod (trainbench-worker
//                             --master); rank 0 hands the result to it instead of a file
//   POD_IP                    the address gloo listens on (the pod's IP)
//   TRAINBENCH_LOG_STEPS=1    every step's loss and seconds (and loss scale under amp-fp16)
//                             on stderr, each rank (a user-facing diagnostic, not a test hook)
//
// Test hooks:
//   TRAINBENCH_DUMP_PARAMS=PREFIX        every rank writes its final parameters, flattened in
//                                        registration order, as raw little-endian float32 to
//                                        PREFIX.rank<R>.bin
//   TRAINBENCH_REFERENCE_WORLD_SIZE=W    paradigm none, world size 1 only: train on the
//                                        concatenation of the batches ranks 0..W-1 would
//                                        generate (the global batch DDP must be equivalent to)
//                                        (paradigm hybrid-ps: one process holding the whole
//                                        model, tables with plain SGD, worker/hybrid_ps.hpp)
//   Other test-only behaviour (a forced loss scaler, no dropout, a rank killing itself at its
//   first measured step, a wrong all-reduce contribution) comes from the RunConfig's
//   "testOptions" (core/plan/run_config.hpp RunTestOptions), never from the environment.
//   (hybrid-ps dumps: a trainer writes its dense parameters, a server its rows of every table,
//    table after table, [numTables * its rows, embeddingDim])
//
// Exit status: 0 success; 2 bad environment or config; 3 (--master) the run hung (the message,
// core/analysis/hang.hpp's, also goes to /dev/termination-log); 1 any other error. Errors are printed
// to stderr as "trainbench-worker rank R: <message>", and that line is also the termination
// message, so a pod's status leads with it rather than with libtorch's log (core/util/failure_text.hpp;
// in a trainer pod, node-launch rewrites it once its ranks have exited).

#include <climits>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <ATen/Version.h>
#include <torch/version.h>

#include "core/plan/run_config.hpp"
#include "core/util/version.hpp"
#include "worker/master.hpp"
#include "worker/model_summary.hpp"
#include "worker/output_files.hpp"
#include "worker/result_configmap.hpp"
#include "worker/rank_env.hpp"
#include "worker/system_probe.hpp"
#include "worker/torch_compat.hpp"
#include "worker/train_loop.hpp"
#include "worker/worker_error.hpp"

namespace {

using trainbench::worker::ConfigError;

constexpr int kExitError = 1;
constexpr int kExitConfig = 2;
constexpr int kExitHang = 3;  ///< the master saw the run hang (the operator's condition reason Hang)

/// The pod's termination message (Kubernetes reads /dev/termination-log when it exists).
void write_termination_message(const std::string& message) {
  std::ofstream probe("/dev/termination-log", std::ios::in);
  if (!probe) return;
  std::ofstream out("/dev/termination-log", std::ios::trunc);
  out << message.substr(0, 4000) << "\n";
}

/// "trainbench-worker rank R: <what>" on stderr and as the termination message.
void report_error(const std::string& rank_label, const std::string& what) {
  const std::string line = "trainbench-worker rank " + rank_label + ": " + what;
  std::cerr << line << std::endl;
  write_termination_message(line);
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

trainbench::RunConfig config_from_env() {
  const char* text = std::getenv("TRAINBENCH_RUN_CONFIG");
  if (text == nullptr) throw ConfigError("environment variable TRAINBENCH_RUN_CONFIG is not set");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(std::string("TRAINBENCH_RUN_CONFIG is not valid JSON: ") + e.what());
  }
  try {
    return trainbench::run_config_from_json(j);
  } catch (const std::exception& e) {
    throw ConfigError(std::string("TRAINBENCH_RUN_CONFIG: ") + e.what());
  }
}

/// The integer in environment variable `name` (nullopt when unset); it must lie in [lo, hi].
std::optional<int> bounded_int_env(const char* name, int lo, int hi, const char* what) {
  const std::string v = env_or_empty(name);
  if (v.empty()) return std::nullopt;
  const auto n = trainbench::worker::parse_int(v);
  if (!n || *n < lo || *n > hi) throw ConfigError(std::string(name) + " must be " + what + ", got '" + v + "'");
  return n;
}

trainbench::worker::WorkerOptions options_from_env() {
  trainbench::worker::WorkerOptions o;
  o.result_file = env_or_empty("TRAINBENCH_RESULT_FILE");
  o.progress_file = env_or_empty("TRAINBENCH_PROGRESS_FILE");
  o.rank_progress_file = env_or_empty("TRAINBENCH_RANK_PROGRESS_FILE");
  o.dump_params_prefix = env_or_empty("TRAINBENCH_DUMP_PARAMS");
  o.external_store = env_or_empty("TRAINBENCH_EXTERNAL_STORE") == "1";
  o.bind_address = env_or_empty("POD_IP");
  if (auto p = bounded_int_env("TRAINBENCH_METRICS_PORT", 0, 65535, "a port number (0: any free port)")) {
    o.metrics_port = *p;
  }
  if (const std::string h = env_or_empty("TRAINBENCH_METRICS_HOST"); !h.empty()) o.metrics_host = h;
  if (auto l = bounded_int_env("TRAINBENCH_METRICS_LINGER_SECONDS", 0, INT_MAX, "an integer >= 0")) {
    o.metrics_linger_seconds = *l;
  }
  if (auto a = bounded_int_env("TRAINBENCH_METRICS_AWAIT_SCRAPE_SECONDS", 0, INT_MAX, "an integer >= 0")) {
    o.metrics_await_scrape_seconds = *a;
  }
  if (auto w = bounded_int_env("TRAINBENCH_REFERENCE_WORLD_SIZE", 1, INT_MAX, "an integer >= 1")) {
    o.reference_world_size = *w;
  }
  return o;
}

int int_from_env(const char* name, int fallback) {
  const std::string v = env_or_empty(name);
  if (v.empty()) return fallback;
  const auto parsed = trainbench::worker::parse_int(v);
  if (!parsed) throw ConfigError(std::string(name) + " must be an integer, got '" + v + "'");
  return *parsed;
}

/// trainbench-worker --master: the run's master (see worker/master.hpp). The result goes to the
/// ConfigMap named by TRAINBENCH_RESULT_CONFIGMAP (in POD_NAMESPACE) when set, else to
/// TRAINBENCH_RESULT_FILE, else to stdout.
int run_master_from_env() {
  const auto config = config_from_env();
  trainbench::worker::MasterOptions mo;
  mo.port = int_from_env("MASTER_PORT", 0);
  if (mo.port <= 0 || mo.port > 65535) throw ConfigError("MASTER_PORT must be a port number");
  mo.attempt = int_from_env("TRAINBENCH_ATTEMPT", 0);
  if (auto p = bounded_int_env("TRAINBENCH_PROGRESS_PORT", 0, 65535, "a port number (0: none)")) mo.progress_port = *p;
  const std::string file = env_or_empty("TRAINBENCH_RESULT_FILE");
  const std::string configmap = env_or_empty("TRAINBENCH_RESULT_CONFIGMAP");
  std::string ns = env_or_empty("POD_NAMESPACE");
  if (ns.empty()) ns = config.job_namespace;
  trainbench::worker::run_master(config, mo, [&](const nlohmann::json& payload) {
    if (!configmap.empty()) {
      trainbench::worker::write_result_configmap(ns, configmap, payload);
    } else if (file.empty()) {
      std::cout << payload.dump() << std::endl;
    } else {
      trainbench::write_file_atomically(file, payload.dump() + "\n");
    }
  });
  return 0;
}

int describe_model(const std::string& name) {
  const auto s = trainbench::worker::summarize_model(name, trainbench::RunConfig{});
  std::cout << nlohmann::json{{"model", s.model},
                               {"parameters", s.parameters},
                               {"buffers", s.buffers},
                               {"headParameters", s.head_parameters}}
                   .dump()
            << "\n";
  return 0;
}

/// --version: this worker's and its PyTorch stack's versions, as a run's report header names them.
void print_version() {
  namespace compat = trainbench::worker::compat;
  const auto or_none = [](const std::string& v) { return v.empty() ? std::string("none") : v; };
  std::cout << "trainbench-worker " << trainbench::kVersion << "\n"
            << "PyTorch (libtorch): " << TORCH_VERSION << "\n"
            << "CUDA: " << or_none(compat::cuda_version()) << "\n"
            << "cuDNN: " << or_none(compat::cudnn_version()) << "\n"
            << "NCCL: " << or_none(compat::nccl_version()) << "\n"
#ifdef TRAINBENCH_WITH_GLOO
            << "gloo: yes\n"
#else
            << "gloo: no\n"
#endif
            << "BLAS: "
            << trainbench::worker::blas_description(trainbench::worker::loaded_blas_library(), at::show_config())
            << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  trainbench::worker::retain_freed_memory();
  // A peer that died leaves sockets whose next write raises SIGPIPE, which would kill the rank
  // without a word (libtorch 2.15's transports do not all send with MSG_NOSIGNAL: CI saw ranks of
  // HybridPsFaults.DeadServer... die silently). Python, which PyTorch's own launchers run, ignores
  // SIGPIPE from its start; so does the worker: the write fails with EPIPE and the rank says so.
  std::signal(SIGPIPE, SIG_IGN);
  // Before the rank is known, errors name the raw RANK (or "?").
  std::string rank_label = env_or_empty("RANK");
  if (rank_label.empty()) rank_label = env_or_empty("SLURM_PROCID");
  if (rank_label.empty()) rank_label = "?";
  try {
    const std::string arg1 = argc > 1 ? argv[1] : "";
    if (arg1 == "--describe-model") {
      if (argc != 3) throw ConfigError("usage: trainbench-worker --describe-model NAME");
      return describe_model(argv[2]);
    }
    if (arg1 == "--master") {
      if (argc != 2) throw ConfigError("usage: trainbench-worker --master");
      rank_label = "master";
      return run_master_from_env();
    }
    if (arg1 == "--version") {
      print_version();
      return 0;
    }
    if (arg1 == "--help" || arg1 == "-h") {
      std::cout << "usage: trainbench-worker [--describe-model NAME | --master | --version]\n"
                   "Runs one rank of a trainbench run; configured through TRAINBENCH_RUN_CONFIG\n"
                   "and torchrun/Slurm environment variables.\n";
      return 0;
    }
    if (argc > 1) throw ConfigError("unexpected argument '" + arg1 + "' (see --help)");

    const auto env = trainbench::worker::rank_env_from_process();
    rank_label = std::to_string(env.rank);
    const auto config = config_from_env();
    const auto options = options_from_env();
    trainbench::worker::run_worker(env, config, options);
    return 0;
  } catch (const ConfigError& e) {
    report_error(rank_label, e.what());
    return kExitConfig;
  } catch (const trainbench::worker::HangError& e) {
    std::cerr << "trainbench-worker " << rank_label << ": " << e.what() << std::endl;
    write_termination_message(e.what());
    return kExitHang;
  } catch (const std::exception& e) {
    report_error(rank_label, e.what());
    return kExitError;
  } catch (...) {
    report_error(rank_label, "unknown error");
    return kExitError;
  }
}
