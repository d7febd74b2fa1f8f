#include "worker/rank_progress.hpp"

#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <iostream>

namespace trainbench::worker {
namespace {

double wall_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);  // NOLINT: read once at rank setup
  return v == nullptr ? std::string() : std::string(v);
}

}  // namespace

RankProgress::RankProgress(RankProgressRecord identity) : record_(std::move(identity)), entered_(Clock::now()) {
  record_.step = -1;
  record_.phase = ProgressPhase::kStarting;
}

void RankProgress::set(std::int64_t step, ProgressPhase phase, std::uint64_t seq, int peer, int bucket, int buckets) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (step != kSameStep) record_.step = step;
  record_.phase = phase;
  record_.collective = seq;
  record_.peer = peer;
  record_.bucket = bucket;
  record_.buckets = buckets;
  entered_ = now;
}

void RankProgress::begin_step(std::int64_t step, ProgressPhase first) {
  set(step, first, collectives_.load(std::memory_order_relaxed), -1, -1, 0);
}

void RankProgress::enter(ProgressPhase phase, int peer) {
  set(kSameStep, phase, collectives_.load(std::memory_order_relaxed), peer, -1, 0);
}

void RankProgress::enter_collective(ProgressPhase phase, std::uint64_t seq, int bucket, int buckets) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  // The collectives of the rank setup and of the final gather keep saying where they are.
  if (record_.phase != ProgressPhase::kStarting && record_.phase != ProgressPhase::kGather) record_.phase = phase;
  record_.collective = seq;
  record_.peer = -1;
  record_.bucket = bucket;
  record_.buckets = buckets;
  entered_ = now;
}

RankProgressRecord RankProgress::snapshot() const {
  RankProgressRecord r;
  Clock::time_point entered;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    r = record_;
    entered = entered_;
  }
  const double wall = wall_now();
  r.phase_seconds = std::chrono::duration<double>(Clock::now() - entered).count();
  r.since = wall - r.phase_seconds;
  r.published = wall;
  return r;
}

RankProgressRecord progress_identity(const RankEnv& env, Role role) {
  RankProgressRecord r;
  r.rank = env.rank;
  r.role = role;
  r.node_rank = env.node_rank;
  r.local_rank = env.local_rank;
  r.pod = env_or_empty("POD_NAME");
  r.node = env_or_empty("NODE_NAME");
  r.pid = static_cast<int>(::getpid());
  return r;
}

ProgressHeartbeat::ProgressHeartbeat(const RankProgress& progress, Publish publish, std::chrono::milliseconds interval)
    : progress_(progress), publish_(std::move(publish)), interval_(interval) {
  beat();  // the watcher knows the rank from its setup on
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
      lock.unlock();
      beat();
      lock.lock();
    }
  });
}

ProgressHeartbeat::~ProgressHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  beat();
}

void ProgressHeartbeat::beat() {
  std::lock_guard<std::mutex> lock(publish_mutex_);
  try {
    publish_(to_json(progress_.snapshot()).dump());
  } catch (const std::exception& e) {
    if (!warned_) std::cerr << "trainbench-worker: cannot publish this rank's progress: " << e.what() << std::endl;
    warned_ = true;
  }
}

}  // namespace trainbench::worker
