#include "core/results/run_progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "core/plan/run_config.hpp"
#include "core/spec/allreduce.hpp"
#include "core/spec/json_fields.hpp"

namespace trainbench {

namespace jf = json_fields;

RunSteps run_steps(const RunConfig& run) {
  if (run.paradigm == Paradigm::kAllreduce) {
    const auto sizes = allreduce_sizes(run.allreduce.min_bytes, run.allreduce.max_bytes);
    return RunSteps{0, 1, static_cast<int>(sizes.size())};
  }
  return RunSteps{run.warmup_steps, run.repeats, run.measure_steps};
}

LoopPosition loop_position(const RunSteps& steps, std::int64_t done) {
  LoopPosition p;
  if (done < 0) return p;
  if (done < steps.warmup) {
    p.stage = LoopStage::kWarmup;
    p.step = static_cast<int>(done);
    p.steps = steps.warmup;
    return p;
  }
  const std::int64_t measured = done - steps.warmup;
  p.steps = steps.measure;
  if (steps.measure <= 0 || measured >= static_cast<std::int64_t>(steps.repeats) * steps.measure) {
    p.stage = LoopStage::kFinishing;
    p.repeat = steps.repeats;
    p.step = steps.measure;
    return p;
  }
  p.stage = LoopStage::kMeasure;
  p.repeat = static_cast<int>(measured / steps.measure) + 1;
  p.step = static_cast<int>(measured % steps.measure);
  return p;
}

void StepRate::observe(std::int64_t done, double seconds) {
  if (done < 0) return;
  if (!anchor_done_ || done < last_done_) {  // the first step, or a new attempt's loop
    anchor_done_ = done;
    anchor_seconds_ = seconds;
  }
  last_done_ = done;
  last_seconds_ = seconds;
}

std::optional<double> StepRate::seconds_per_step() const {
  if (!anchor_done_ || last_done_ <= *anchor_done_ || last_seconds_ <= anchor_seconds_) return std::nullopt;
  return (last_seconds_ - anchor_seconds_) / static_cast<double>(last_done_ - *anchor_done_);
}

nlohmann::json to_json(const RunProgressSample& s) {
  nlohmann::json j = {{"run", s.run},
                      {"attempt", s.attempt},
                      {"stepsDone", s.steps_done},
                      {"stepsTotal", s.steps_total},
                      {"updated", s.updated}};
  if (s.seconds_per_step) j["secondsPerStep"] = *s.seconds_per_step;
  return j;
}

RunProgressSample run_progress_sample_from_json(const nlohmann::json& j) {
  const std::string p = "progress";
  jf::require_object(j, p);
  RunProgressSample s;
  s.run = jf::get_int32(j, "run", p);
  s.attempt = jf::get_int32(j, "attempt", p);
  s.steps_total = jf::get_int(j, "stepsTotal", p);
  s.steps_done = jf::get_int(j, "stepsDone", p);
  s.updated = jf::get_number(j, "updated", p);
  if (s.run < 0 || s.attempt < 0 || s.steps_total < 0) {
    throw std::runtime_error(p + ": run, attempt and stepsTotal must be >= 0");
  }
  if (s.steps_done < -1 || s.steps_done > s.steps_total) {
    throw std::runtime_error(p + ".stepsDone: must be in [-1, stepsTotal]");
  }
  if (jf::has(j, "secondsPerStep")) {
    const double v = jf::get_number(j, "secondsPerStep", p);
    if (!std::isfinite(v) || v < 0) throw std::runtime_error(p + ".secondsPerStep: must be a finite number >= 0");
    s.seconds_per_step = v;
  }
  return s;
}

JobEstimate estimate_job(const JobEstimateInput& in) {
  JobEstimate e;
  const int total = std::max(1, in.runs_total);
  double fraction = 0;
  if (in.current_done > 0 && in.current_total > 0) {
    fraction = std::min(1.0, static_cast<double>(in.current_done) / static_cast<double>(in.current_total));
    if (in.seconds_per_step) {
      e.run_remaining_seconds = static_cast<double>(in.current_total - in.current_done) * *in.seconds_per_step;
    }
  }
  const double done = std::min<double>(in.runs_done, total) + fraction;
  e.percent = static_cast<int>(std::floor(100.0 * done / total));
  if (in.runs_done < total) e.percent = std::min(e.percent, 99);
  const int after = std::max(0, total - in.runs_done - 1);  // runs after the current one
  std::optional<double> per_run;
  if (!in.ended_seconds.empty()) {
    per_run = std::accumulate(in.ended_seconds.begin(), in.ended_seconds.end(), 0.0) /
              static_cast<double>(in.ended_seconds.size());
  } else if (e.run_remaining_seconds) {
    per_run = in.current_elapsed + *e.run_remaining_seconds;
  }
  if (in.runs_done >= total) {
    e.remaining_seconds = 0;
  } else if (e.run_remaining_seconds && per_run) {
    e.remaining_seconds = *e.run_remaining_seconds + after * *per_run;
  } else if (per_run) {  // no rate yet: the current run as long as an average one
    e.remaining_seconds = std::max(0.0, *per_run - in.current_elapsed) + after * *per_run;
  }
  return e;
}

std::string format_eta(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%lds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

}  // namespace trainbench
