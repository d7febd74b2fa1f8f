#include "worker/master.hpp"

#include <algorithm>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/analysis/hang.hpp"
#include "core/report/report.hpp"
#include "core/results/program_record.hpp"
#include "core/results/run_result.hpp"
#include "worker/process_group.hpp"
#include "worker/progress_server.hpp"
#include "worker/worker_error.hpp"

namespace trainbench::worker {
namespace {

/// The ranks' progress records the store holds now (a rank not yet started has none).
std::vector<RankProgressRecord> progress_records(RunStore& store, int processes) {
  std::vector<RankProgressRecord> records;
  for (int r = 0; r < processes; ++r) {
    const auto text = store.try_get(kProgressKeyPrefix + std::to_string(r));
    if (!text) continue;
    try {
      records.push_back(rank_progress_from_json(nlohmann::json::parse(*text)));
    } catch (const std::exception& e) {
      std::cerr << "trainbench-worker master: rank " << r << "'s progress record is unreadable: " << e.what() << "\n";
    }
  }
  return records;
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Once a second: rank 0's record to the progress endpoint; every record to the hang watch
/// (HangError) when it is on. A program's rank that has published nothing `started` seconds
/// (wall clock) after the master began is silent (core/analysis/hang.hpp, detect_silent_ranks).
void watch(RunStore& store, const RunConfig& run, ProgressServer& progress, double started) {
  const bool hang_watch = run.hang_timeout_seconds > 0;
  const auto records = progress_records(store, hang_watch ? run.process_count() : 1);
  for (const auto& r : records) {
    if (r.rank == 0) progress.observe(r);
  }
  if (!hang_watch) return;
  const double now = wall_now();
  auto verdict = detect_hang(records, now, run.hang_timeout_seconds, HangRun{run.process_count(), run.world_size()});
  if (!verdict && run.program) {
    std::vector<int> silent;
    for (int r = 0; r < run.process_count(); ++r) {
      const bool seen = std::any_of(records.begin(), records.end(), [r](const RankProgressRecord& p) { return p.rank == r; });
      if (!seen) silent.push_back(r);
    }
    verdict = detect_silent_ranks(silent, now - started, run.hang_timeout_seconds);
  }
  if (verdict) throw HangError(verdict->message);
}

/// A program's ranks hand over a record each (core/results/program_record.hpp) instead of rank 0 a
/// result: waits for every one, reading each as it arrives, and assembles the run's result as
/// `trainbench run` does. Throws naming the rank whose record is bad.
RunResult await_program_result(RunStore& store, const RunConfig& run, std::chrono::milliseconds wait,
                               ProgressServer& progress) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + wait;
  const double started = wall_now();
  auto next_watch = Clock::now();
  std::vector<std::optional<ProgramRankRecord>> records(static_cast<std::size_t>(run.world_size()));
  std::size_t have = 0;
  while (have < records.size()) {
    for (std::size_t r = 0; r < records.size(); ++r) {
      if (records[r]) continue;
      const auto text = store.try_get(kRankRecordKeyPrefix + std::to_string(r));
      if (!text) continue;
      try {
        records[r] = parse_program_rank_record(*text, run, static_cast<int>(r));
      } catch (const std::exception& e) {
        throw std::runtime_error("rank " + std::to_string(r) + " wrote a bad rank record (store key " +
                                 kRankRecordKeyPrefix + std::to_string(r) + "): " + e.what());
      }
      ++have;
    }
    if (have == records.size()) break;
    if (Clock::now() >= until) {
      throw std::runtime_error("no rank record from " + std::to_string(records.size() - have) + " of " +
                               std::to_string(records.size()) + " ranks in time");
    }
    if (Clock::now() >= next_watch) {
      next_watch = Clock::now() + std::chrono::seconds(1);
      watch(store, run, progress, started);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::vector<ProgramRankRecord> all;
  for (auto& r : records) all.push_back(std::move(*r));
  return assemble_program_result(run, all);
}

/// Rank 0's result, waited for up to `wait`; meanwhile the progress and the hang watch.
std::string await_result(RunStore& store, const RunConfig& run, std::chrono::milliseconds wait,
                         ProgressServer& progress) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + wait;
  const double started = wall_now();
  auto next_watch = Clock::now();
  for (;;) {
    if (auto text = store.try_get(kResultKey)) return *text;
    if (Clock::now() >= until) return store.get(kResultKey, std::chrono::milliseconds(1));  // throws, naming the key
    if (Clock::now() >= next_watch) {
      next_watch = Clock::now() + std::chrono::seconds(1);
      watch(store, run, progress, started);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

/// Rank 0's RunResult (the built-in worker), read from its JSON.
RunResult await_worker_result(RunStore& store, const RunConfig& run, std::chrono::milliseconds wait,
                              ProgressServer& progress) {
  const std::string text = await_result(store, run, wait, progress);
  try {
    return run_result_from_json(nlohmann::json::parse(text));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("rank 0 sent an unreadable result: ") + e.what());
  }
}

}  // namespace

void run_master(const RunConfig& run, const MasterOptions& options, const ResultSink& sink) {
  auto store = RunStore::serve(options.port, options.wait_for_result);
  std::cerr << "trainbench-worker master: serving the store of run " << run.index << " (" << run.process_count()
            << " ranks) on port " << options.port << "\n";
  ProgressServer progress(run, options.attempt, options.progress_port);
  const RunResult result = run.program ? await_program_result(*store, run, options.wait_for_result, progress)
                                       : await_worker_result(*store, run, options.wait_for_result, progress);
  if (result.world_size != run.world_size() || result.run_index != run.index) {
    throw std::runtime_error("rank 0 sent the result of run " + std::to_string(result.run_index) + " with " +
                             std::to_string(result.world_size) + " ranks, expected run " + std::to_string(run.index) +
                             " with " + std::to_string(run.world_size()));
  }
  if (static_cast<int>(result.ranks.size()) != run.world_size() ||
      static_cast<int>(result.servers.size()) != run.parameter_servers) {
    throw std::runtime_error("rank 0 sent a result with " + std::to_string(result.ranks.size()) + " trainer(s) and " +
                             std::to_string(result.servers.size()) + " parameter server(s), expected " +
                             std::to_string(run.world_size()) + " and " + std::to_string(run.parameter_servers) +
                             " (paradigm " + to_string(run.paradigm) + ")");
  }
  const nlohmann::json payload = {{"attempt", options.attempt},
                                  {"run", to_json(summarize_run(run, result))},
                                  {"environment", to_json(result.environment)}};
  sink(payload);
  std::cerr << "trainbench-worker master: result of run " << run.index << " delivered\n";
  // Keep the store up until every rank has let go of it (process-group teardown uses it).
  const auto until = std::chrono::steady_clock::now() + options.wait_for_ranks;
  while (store->add(kFinishedKey, 0) < run.process_count() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace trainbench::worker
