#include "cli/progress.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace trainbench {

std::optional<ProgressUpdate> parse_progress(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto get_int = [&](const char* key, int& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return false;
    out = it->get<int>();
    return true;
  };
  ProgressUpdate p;
  auto phase = j.find("phase");
  if (phase == j.end() || !phase->is_string()) return std::nullopt;
  p.phase = phase->get<std::string>();
  if (!get_int("step", p.step) || !get_int("steps", p.steps)) return std::nullopt;
  get_int("repeat", p.repeat);
  get_int("repeats", p.repeats);
  auto spi = j.find("secPerIter");
  if (spi != j.end() && spi->is_number()) p.sec_per_iter = spi->get<double>();
  return p;
}

std::int64_t steps_done(const ProgressUpdate& p, const RunSteps& steps) {
  if (p.phase != "measure") return p.step;
  return steps.warmup + static_cast<std::int64_t>(std::max(0, p.repeat - 1)) * p.steps + p.step;
}

std::string format_progress_line(const ProgressRun& run, const std::optional<ProgressUpdate>& p,
                                 std::optional<double> eta_seconds) {
  std::string line = "run " + std::to_string(run.number) + "/" + std::to_string(run.count) + " [" + run.label +
                     (run.model.empty() ? "" : " " + run.model) + "]";  // a program has no model name
  if (!p) {
    line += " starting " + std::to_string(run.world_size) + (run.world_size == 1 ? " rank" : " ranks");
    return line;
  }
  if (p->phase == "measure") {
    if (run.warmup_steps > 0) {
      line += " warmup " + std::to_string(run.warmup_steps) + "/" + std::to_string(run.warmup_steps) + " |";
    }
    line += " measure repeat " + std::to_string(p->repeat) + "/" + std::to_string(p->repeats) + " step " +
            std::to_string(p->step) + "/" + std::to_string(p->steps);
  } else {
    line += " " + p->phase + " " + std::to_string(p->step) + "/" + std::to_string(p->steps);
  }
  if (p->sec_per_iter > 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, " | %.4g s/iter", p->sec_per_iter);
    line += buf;
  }
  if (eta_seconds) line += " | ETA " + format_eta(*eta_seconds);
  return line;
}

ProgressDisplay::ProgressDisplay(std::ostream& out, bool tty, double plain_interval_s, Clock clock)
    : out_(out), tty_(tty), interval_(plain_interval_s), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  }
}

void ProgressDisplay::begin(const ProgressRun& run) {
  if (active_) end("");
  run_ = run;
  last_.reset();
  rate_.reset();
  active_ = true;
  printed_any_ = false;
  last_width_ = 0;
  emit(format_progress_line(run_, std::nullopt), false);
}

void ProgressDisplay::update(const ProgressUpdate& p) {
  if (!active_) return;
  last_ = p;
  const std::int64_t done = steps_done(p, run_.steps);
  rate_.observe(done, clock_());
  std::optional<double> eta;
  if (const auto rate = rate_.seconds_per_step()) eta = std::max<double>(0, run_.steps.total() - done) * *rate;
  emit(format_progress_line(run_, last_, eta), false);
}

void ProgressDisplay::end(const std::string& status) {
  if (!active_) return;
  std::string line = "run " + std::to_string(run_.number) + "/" + std::to_string(run_.count) + " [" + run_.label +
                     (run_.model.empty() ? "" : " " + run_.model) + "]";
  if (!status.empty()) line += " " + status;
  emit(line, true);
  active_ = false;
}

void ProgressDisplay::emit(const std::string& line, bool final_line) {
  const double now = clock_();
  if (tty_) {
    std::string padded = line;
    if (!final_line && columns_ > 1 && padded.size() > columns_ - 1) padded.resize(columns_ - 1);
    const std::size_t shown = padded.size();
    if (padded.size() < last_width_) padded.append(last_width_ - padded.size(), ' ');
    out_ << '\r' << padded;
    if (final_line) out_ << '\n';
    last_width_ = final_line ? 0 : shown;
    out_.flush();
    return;
  }
  if (!final_line && printed_any_ && now - last_print_ < interval_) return;
  out_ << line << '\n';
  out_.flush();
  printed_any_ = true;
  last_print_ = now;
}

}  // namespace trainbench
