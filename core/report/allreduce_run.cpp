#include "core/report/allreduce_run.hpp"

#include <sstream>
#include <stdexcept>

namespace trainbench {

namespace {

std::string run_title(const RunReport& r) { return r.devices_label + " -- " + r.label; }

Percentiles all_at(double v) { return {v, v, v, v}; }

}  // namespace

void summarize_allreduce_run(const RunConfig& cfg, const RunResult& result, RunReport& run) {
  if (!result.allreduce) return;
  std::vector<std::vector<std::vector<double>>> rank_seconds;
  for (const auto& rk : result.ranks) rank_seconds.push_back(rk.step_seconds);
  try {
    run.allreduce = summarize_allreduce(*result.allreduce, rank_seconds, cfg.world_size());
  } catch (const std::exception& e) {
    throw std::runtime_error("run " + std::to_string(cfg.index) + ": " + e.what());
  }
  // The common fields: seconds per all-reduce of the largest size (the last one).
  const std::size_t last = result.allreduce->sizes_bytes.size() - 1;
  const std::size_t repeats = rank_seconds.front().size();
  run.repeats.clear();
  for (std::size_t r = 0; r < repeats; ++r) {
    double sum = 0;
    for (const auto& rank : rank_seconds) sum += rank[r][last];
    run.repeats.push_back(all_at(sum / static_cast<double>(rank_seconds.size())));
  }
  run.sec_per_iter = median_of(run.repeats);
  run.examples_per_sec = {};
  run.loss_start.reset();
  run.loss_end.reset();
  for (std::size_t k = 0; k < run.ranks.size() && k < rank_seconds.size(); ++k) {
    std::vector<Percentiles> per_repeat;
    for (const auto& rep : rank_seconds[k]) per_repeat.push_back(all_at(rep[last]));
    run.ranks[k].sec_per_iter = median_of(per_repeat);
  }
}

std::string format_allreduce_runs(const Report& report) {
  std::ostringstream os;
  for (const auto& r : report.runs) {
    if (r.phase != "Succeeded" || !r.allreduce) continue;
    os << "\n" << format_allreduce_table(*r.allreduce, run_title(r));
  }
  return os.str();
}

std::string format_allreduce_diffs(const Report& base, const Report& test) {
  std::ostringstream os;
  auto find = [](const Report& rep, const std::string& title) -> const RunReport* {
    for (const auto& r : rep.runs) {
      if (run_title(r) == title) return &r;
    }
    return nullptr;
  };
  for (const auto& b : base.runs) {
    const RunReport* t = find(test, run_title(b));
    const bool b_ar = b.allreduce.has_value();
    const bool t_ar = t && t->allreduce.has_value();
    if (!b_ar && !t_ar) continue;
    if (b_ar && t_ar) {
      os << "\n" << format_allreduce_diff(*b.allreduce, *t->allreduce, run_title(b));
    } else if (b_ar && t && t->phase == "Succeeded") {
      os << "\n" << run_title(b) << ": all-reduce in baseline only; not compared\n";
    }
  }
  for (const auto& t : test.runs) {
    if (t.allreduce && !find(base, run_title(t))) {
      os << "\n" << run_title(t) << ": all-reduce in test only; not compared\n";
    }
  }
  return os.str();
}

}  // namespace trainbench
