// Part of reconcile() (reconciler_internal.hpp): status.percentComplete and progressDetail, the
// estimate from the master's sample and the ended runs (docs/operator.md, "Progress").
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/results/run_progress.hpp"
#include "operator/controller/reconciler_internal.hpp"

namespace trainbench::op::reconcile_detail {

namespace {

/// `v` to four significant digits.
double four_digits(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::strtod(buf, nullptr);
}

}  // namespace

/// The estimate of now, from the master's sample of the current run (when it is of this
/// attempt) and the ended runs' durations; settle_progress decides whether it is written.
void Reconcile::estimate_progress(const RunConfig& run) {
  if (o_.progress_interval.count() <= 0) return;
  const RunStatus& rs = run_status(run.index);
  const RunSteps steps = run_steps(run);
  JobEstimateInput in{runs_total_, run.index, {}, 0, -1, steps.total(), std::nullopt};
  for (int i = 0; i < run.index; ++i) {
    const auto from = parse_time(run_status(i).start_time.value_or(""));
    const auto to = parse_time(run_status(i).completion_time.value_or(""));
    if (from && to) in.ended_seconds.push_back(std::chrono::duration<double>(*to - *from).count());
  }
  if (const auto since = parse_time(rs.attempt_start_time.value_or(""))) {
    in.current_elapsed = std::chrono::duration<double>(o_.now - *since).count();
  }
  CurrentRunProgress current{run.index, rs.label, rs.attempt, {}, steps.repeats, std::nullopt, std::nullopt};
  const auto& s = o_.progress;
  if (s && s->run == run.index && s->attempt == rs.attempt && s->steps_total == steps.total()) {
    in.current_done = s->steps_done;
    in.seconds_per_step = s->seconds_per_step;
    current.position = loop_position(steps, s->steps_done);
    // Four significant digits: the rate's jitter alone is no reason to write status.
    if (s->seconds_per_step) current.seconds_per_step = four_digits(*s->seconds_per_step);
  }
  const JobEstimate e = estimate_job(in);
  auto whole = [](std::optional<double> v) {
    return v ? std::optional<std::int64_t>(std::llround(*v)) : std::nullopt;
  };
  current.remaining_seconds = whole(e.run_remaining_seconds);
  next_progress_ = ProgressDetail{e.percent, whole(e.remaining_seconds), current, now_};
  requeue(o_.progress_interval);  // the next poll
}

/// Writes the new estimate when it says something new and either the last one is
/// progress_interval old or status is written anyway: at most one write of its own per interval.
void Reconcile::settle_progress() {
  const std::optional<ProgressDetail>& held = status_.progress_detail;
  if (!next_progress_ || (held && same_progress(*held, *next_progress_))) return;
  const auto last = held ? parse_time(held->last_update_time) : std::nullopt;
  if (last && o_.now - *last < o_.progress_interval && to_json(status_) == original_status_) {
    requeue(*last + o_.progress_interval - o_.now);
    return;
  }
  set_progress(*next_progress_);
}

void Reconcile::set_progress(ProgressDetail p) {
  status_.percent_complete = std::to_string(p.percent) + "%";
  status_.progress_detail = std::move(p);
}

}  // namespace trainbench::op::reconcile_detail
