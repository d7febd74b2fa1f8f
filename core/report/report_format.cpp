#include "core/report/report_format.hpp"

#include <algorithm>
#include <functional>
#include <sstream>

#include "core/report/allreduce_run.hpp"
#include "core/report/compare.hpp"
#include "core/report/hybrid_ps_report.hpp"
#include "core/report/report_notes.hpp"
#include "core/report/report_workloads.hpp"
#include "core/report/straggler.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {
namespace {

std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

std::string row_name(const RunReport& r) { return r.devices_label + " -- " + r.label + ":"; }

std::size_t name_width(const std::vector<const RunReport*>& runs) {
  std::size_t w = 0;
  for (const auto* r : runs) w = std::max(w, row_name(*r).size());
  return w;
}

std::string dash_line(std::size_t n) { return std::string(n, '-'); }

/// Stragglers named under a run's row; the JSON lists them all.
constexpr std::size_t kStragglersNamedInText = 8;

/// "a / b" for up to 4 ranks, else "max a".
std::string per_rank(const RunReport& r, const std::function<std::string(const RankReport&)>& cell,
                     const std::function<double(const RankReport&)>& value) {
  if (r.ranks.empty()) return "-";
  if (r.ranks.size() > 4) {
    const auto it = std::max_element(r.ranks.begin(), r.ranks.end(),
                                     [&](const RankReport& a, const RankReport& b) { return value(a) < value(b); });
    return "max " + cell(*it);
  }
  std::string out;
  for (const auto& rk : r.ranks) out += (out.empty() ? "" : " / ") + cell(rk);
  return out;
}

/// The DistributedTest table: one row per run with its paradigm, optimizer, throughput, memory
/// per device, optimizer state per device, loss and (pipelines) the bubble. Shown when the sweep
/// mixes paradigms or uses zero / pipeline / model-parallel.
void paradigm_table(std::ostringstream& os, const std::vector<const RunReport*>& runs) {
  std::vector<const RunReport*> ok;
  std::vector<Paradigm> paradigms;
  bool special = false;
  for (const auto* r : runs) {
    if (r->phase != "Succeeded" || r->allreduce) continue;
    ok.push_back(r);
    if (std::find(paradigms.begin(), paradigms.end(), r->paradigm) == paradigms.end()) paradigms.push_back(r->paradigm);
    special = special || r->paradigm == Paradigm::kZero || r->pipeline.has_value();
  }
  if (ok.empty() || (paradigms.size() < 2 && !special)) return;
  const std::vector<std::string> head = {"",
                                         "paradigm",
                                         "optimizer",
                                         "ex/sec p50",
                                         "memory per device",
                                         "optimizer state per device",
                                         "loss first -> last",
                                         "bubble per stage (GPipe)"};
  std::vector<std::vector<std::string>> rows{head};
  for (const auto* r : ok) {
    std::string bubble = "-";
    if (r->pipeline) {
      bubble = per_rank(
                   *r, [](const RankReport& k) { return printf_str("%.0f%%", k.bubble_fraction.value_or(0) * 100); },
                   [](const RankReport& k) { return k.bubble_fraction.value_or(0); }) +
               printf_str(" (%.0f%%)", r->pipeline->theoretical_bubble * 100);
    }
    rows.push_back(
        {row_name(*r),
         r->program ? std::string("program")
                    : to_string(r->paradigm) + (r->pipeline ? " x" + std::to_string(r->pipeline->micro_batches) : ""),
         r->optimizer.empty() ? "-" : r->optimizer, fmt_rate(r->examples_per_sec.p50),
         per_rank(
             *r, [](const RankReport& k) { return fmt_bytes(k.peak_memory_bytes); },
             [](const RankReport& k) { return static_cast<double>(k.peak_memory_bytes); }),
         per_rank(
             *r, [](const RankReport& k) { return fmt_bytes(k.optimizer_state_bytes); },
             [](const RankReport& k) { return static_cast<double>(k.optimizer_state_bytes); }),
         r->loss_start && r->loss_end ? printf_str("%.4f", *r->loss_start) + " -> " + printf_str("%.4f", *r->loss_end)
                                      : "-",
         bubble});
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  os << "\nParadigms side by side (memory per device: peak RSS of each rank on CPU, allocator peak on GPU;\n"
        "pipeline x M: M micro-batches; bubble: share of the step a stage waited on its neighbours, GPipe's\n"
        "(S-1)/(M+S-1) in brackets):\n\n";
  for (const auto& row : rows) {
    os << pad_left(row[0], width[0]);
    for (std::size_t c = 1; c < row.size(); ++c) {
      os << "  " << (c + 1 < row.size() ? pad_right(row[c], width[c]) : row[c]);
    }
    os << "\n";
  }
}

void benchmark_title(std::ostringstream& os, const Report& r) {
  if (r.model.empty()) {  // every run is paradigm allreduce
    os << "Benchmark: all-reduce (communication only)\n";
    return;
  }
  os << "Benchmark: " << r.model << " with batch size " << r.batch_size_per_device << "\n";
}

/// A rank's compute / communication split and score, where measured ("" otherwise).
std::string split_cells(const RankReport& rk) {
  std::string out;
  if (rk.compute_seconds) out += "  compute " + fmt_sec(*rk.compute_seconds);
  if (rk.communication_seconds) out += "  comm " + fmt_sec(*rk.communication_seconds);
  if (rk.straggler_score) out += "  score " + printf_str("%.2f", *rk.straggler_score);
  return out;
}

/// The per-rank block: every rank's own percentiles and peak memory; for a run copied from a
/// job's status with a rank summary (core/report/rank_summary.hpp), the spread and the slowest ranks.
void per_rank_block(std::ostream& os, const std::vector<const RunReport*>& runs, std::size_t w) {
  os << "\nPer rank (sec/iter, median of repeats; peak memory; compute and exposed communication per step, p50,\n"
        "median of repeats; straggler score = fastest rank's compute / the rank's):\n\n";
  for (const auto* r : runs) {
    if (r->phase != "Succeeded") continue;
    const bool summarized = r->ranks.empty() && r->rank_summary;
    if (summarized) {
      const RankSummary& s = *r->rank_summary;
      os << pad_left(row_name(*r), w) << "  " << s.count << " ranks, p50 " << fmt_sec(s.sec_per_iter_p50_min) << " .. "
         << fmt_sec(s.sec_per_iter_p50_max) << " (median " << fmt_sec(s.sec_per_iter_p50_median) << "); the "
         << s.slowest.size()
         << " slowest:" << (s.detail_config_map.empty() ? "" : " (every rank: ConfigMap " + s.detail_config_map + ")")
         << "\n";
    }
    for (const auto& rk : summarized ? r->rank_summary->slowest : r->ranks) {
      os << pad_left(row_name(*r), w) << "  rank " << pad_left(std::to_string(rk.rank), 3) << " (node " << rk.node_rank
         << ", local " << rk.local_rank << "):";
      os << "  p50: " << fmt_sec(rk.sec_per_iter.p50) << "  p75: " << fmt_sec(rk.sec_per_iter.p75)
         << "  p90: " << fmt_sec(rk.sec_per_iter.p90) << "  p95: " << fmt_sec(rk.sec_per_iter.p95) << "  peak "
         << fmt_bytes(rk.peak_memory_bytes) << split_cells(rk) << "\n";
    }
  }
}

/// The report's words for spec.benchmark.ddp.implementation as a result names it.
std::string ddp_description(const std::string& implementation) {
  if (implementation == "pytorch") return "pytorch (PyTorch's c10d::Reducer, as DistributedDataParallel drives it)";
  if (implementation == "trainbench") return "trainbench (trainbench's bucketed reducer)";
  return implementation;
}

/// The title block and the "* name: value" lines of the environment the runs were measured in.
void environment_header(std::ostringstream& os, const EnvironmentInfo& e) {
  const std::string title = "trainbench distributed benchmark suite";
  os << dash_line(title.size()) << "\n" << title << "\n" << dash_line(title.size()) << "\n\n";
  os << "* trainbench version: " << (e.trainbench_version.empty() ? "unknown" : e.trainbench_version) << "\n";
  os << "* libtorch version: " << (e.libtorch_version.empty() ? "unknown" : e.libtorch_version) << "\n";
  os << "* CUDA version: " << (e.cuda_version.empty() ? "none" : e.cuda_version) << "\n";
  os << "* Distributed backend: " << (e.backend.empty() ? "unknown" : e.backend) << "\n";
  os << "* Device: " << (e.device.empty() ? "unknown" : e.device);
  if (!e.device_name.empty()) os << " (" << e.device_name << ")";
  os << "\n";
  os << "* Threads per process: " << e.threads_per_process << "\n";
  if (e.cpu_cores) os << "* CPU cores usable: " << *e.cpu_cores << "\n";
  os << "* BLAS: " << (e.blas.empty() ? "unknown" : e.blas) << "\n";
  if (!e.attention.empty()) os << "* Attention: " << e.attention << "\n";
  if (!e.ddp.empty()) os << "* DDP: " << ddp_description(e.ddp) << "\n";
  if (!e.framework.empty()) os << "* Program framework: " << e.framework << "\n";
  if (!e.hostname.empty()) os << "* Host: " << e.hostname << "\n";
  os << "\n";
}

/// Where the ranks of the largest run that recorded it ran (core/results/topology.hpp): its hosts'
/// NUMA nodes and GPU matrix, each rank's CPUs. Nothing when no run recorded it.
void topology_header(std::ostringstream& os, const Report& report) {
  const RunReport* largest = nullptr;
  for (const auto& r : report.runs) {
    if (r.topology && (!largest || r.topology->ranks.size() > largest->topology->ranks.size())) largest = &r;
  }
  if (!largest) return;
  const Topology& t = *largest->topology;
  os << "Topology (" << largest->devices_label << " -- " << largest->label << ", " << t.ranks.size()
     << (t.ranks.size() == 1 ? " rank" : " ranks") << " on " << t.hosts.size()
     << (t.hosts.size() == 1 ? " host" : " hosts") << "):\n"
     << format_topology(t) << "\n";
}

bool every_run_is_allreduce(const Report& report) {
  return !report.runs.empty() && std::all_of(report.runs.begin(), report.runs.end(),
                                             [](const RunReport& r) { return r.paradigm == Paradigm::kAllreduce; });
}

/// The body of a report whose runs are all paradigm allreduce: its failures, then the bus
/// bandwidth tables.
std::string allreduce_only_body(const Report& report) {
  std::ostringstream os;
  os << "Benchmark: all-reduce (communication only)\n";
  for (const auto& r : report.runs) {
    if (r.phase != "Succeeded") os << "\n" << row_name(r) << "  FAILED: " << first_line(r.error) << "\n";
  }
  return os.str() + format_allreduce_runs(report);
}

/// One row per run: p50/p75/p90/p95 sec/iter and ex/sec, speedup and efficiency, then the
/// run's marks (noisy, below target: core/report/report_notes.hpp).
void throughput_table(std::ostringstream& os, const std::vector<const RunReport*>& runs, std::size_t w,
                      const ReportNotes& notes) {
  const std::string cell_head = std::string(6, ' ') + pad_left("sec/iter", 10) + pad_left("ex/sec", 11);
  os << pad_right("", w) << cell_head << cell_head << cell_head << cell_head << pad_left("speedup", 10)
     << pad_left("efficiency", 12) << "\n";
  const std::string* workload = nullptr;
  for (const auto* r : runs) {
    if (!r->workload.empty() && (!workload || *workload != r->workload)) {
      workload = &r->workload;
      os << "workload " << r->workload << ":\n";
    }
    os << pad_left(row_name(*r), w);
    if (r->phase != "Succeeded") {
      os << "  FAILED: " << first_line(r->error) << "\n";
      continue;
    }
    if (r->allreduce) {
      os << "  all-reduce: its table follows the per-rank rows\n";
      continue;
    }
    const double sec[4] = {r->sec_per_iter.p50, r->sec_per_iter.p75, r->sec_per_iter.p90, r->sec_per_iter.p95};
    const double ex[4] = {r->examples_per_sec.p50, r->examples_per_sec.p75, r->examples_per_sec.p90,
                          r->examples_per_sec.p95};
    const char* names[4] = {"p50:", "p75:", "p90:", "p95:"};
    for (int i = 0; i < 4; ++i) {
      os << "  " << names[i] << pad_left(fmt_sec(sec[i]), 10) << pad_left(fmt_rate(ex[i]), 11);
    }
    os << pad_left(r->speedup ? printf_str("%.2fx", *r->speedup) : "-", 10)
       << pad_left(r->efficiency ? printf_str("%.1f%%", *r->efficiency * 100.0) : "-", 12) << notes.marks(r->index)
       << "\n";
    if (r->stragglers && r->stragglers->count > 0) {
      os << pad_left("", w) << "  " << straggler_line(*r->stragglers, kStragglersNamedInText) << "\n";
    }
  }
}

/// What speedup and efficiency are relative to, or why they are missing.
void speedup_note(std::ostringstream& os, const Report& report) {
  const bool per_workload = std::any_of(report.runs.begin(), report.runs.end(),
                                        [](const RunReport& r) { return r.speedup_baseline_run.has_value(); });
  if (per_workload) {
    os << "\nspeedup = p50 ex/sec / p50 ex/sec of the workload's own single-device run (its \"no ddp\" run, else its "
          "first); efficiency = speedup / devices\n";
    return;
  }
  if (report.baseline_run && static_cast<std::size_t>(*report.baseline_run) < report.runs.size()) {
    const auto& b = report.runs[static_cast<std::size_t>(*report.baseline_run)];
    os << "\nspeedup = p50 ex/sec / p50 ex/sec of \"" << b.devices_label << " -- " << b.label
       << "\"; efficiency = speedup / devices\n";
  } else {
    os << "\nno single-device run succeeded: speedup and efficiency are not computed\n";
  }
}

/// First -> last measured loss of every succeeded run that recorded one (nothing if none did).
void loss_block(std::ostringstream& os, const std::vector<const RunReport*>& runs, std::size_t w) {
  const bool any_loss = std::any_of(runs.begin(), runs.end(), [](const RunReport* r) {
    return r->phase == "Succeeded" && r->loss_start && r->loss_end;
  });
  if (!any_loss) return;
  os << "\nLoss (mean over ranks) at the first -> the last measured step:\n\n";
  for (const auto* r : runs) {
    if (r->phase != "Succeeded" || !r->loss_start || !r->loss_end) continue;
    os << pad_left(row_name(*r), w) << "  " << printf_str("%.4f", *r->loss_start) << " -> "
       << printf_str("%.4f", *r->loss_end) << "\n";
  }
}

/// Achieved FLOP/s and MFU of every succeeded run that has them (core/analysis/mfu.hpp).
void mfu_block(std::ostringstream& os, const std::vector<const RunReport*>& runs, std::size_t w) {
  const bool any = std::any_of(runs.begin(), runs.end(), [](const RunReport* r) { return r->mfu.has_value(); });
  if (!any) return;
  os << "\nModel FLOPs utilization (training FLOPs = 3 x forward, 2 per multiply-add of the linear,\n"
        "convolution and attention layers; TFLOP/s per device = FLOPs x p50 ex/sec / devices; MFU = that / peak):\n\n";
  for (const auto* r : runs) {
    if (r->phase == "Succeeded" && r->mfu) os << pad_left(row_name(*r), w) << "  " << format_mfu(*r->mfu) << "\n";
  }
}

/// Each succeeded run's hardware utilization over its measured steps (nothing if none has one).
void utilization_block(std::ostringstream& os, const std::vector<const RunReport*>& runs, std::size_t w) {
  const bool any = std::any_of(runs.begin(), runs.end(),
                               [](const RunReport* r) { return r->phase == "Succeeded" && r->utilization; });
  if (!any) return;
  os << "\nHardware utilization over the measured steps (CPU and bytes sent: mean over ranks; memory: the\n"
        "largest rank's peak; GPU: NVML's busy share, mean over ranks, and memory used; docs/report.md):\n\n";
  for (const auto* r : runs) {
    if (r->phase != "Succeeded" || !r->utilization) continue;
    os << pad_left(row_name(*r), w) << "  " << utilization_line(*r->utilization) << "\n";
  }
}

/// One line of the diff's settings table: name, baseline value, test value.
struct SettingRow {
  std::string name;
  std::string base;
  std::string test;
};

std::vector<SettingRow> setting_rows(const Report& base, const Report& test) {
  auto num = [](double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  };
  const EnvironmentInfo& be = base.environment;
  const EnvironmentInfo& te = test.environment;
  std::vector<SettingRow> rows = {
      {"attention", be.attention, te.attention},
      {"backend", be.backend, te.backend},
      {"batch_size_per_device", std::to_string(base.batch_size_per_device), std::to_string(test.batch_size_per_device)},
      {"blas", be.blas, te.blas},
      {"bucket_cap_mb", num(base.bucket_cap_mb), num(test.bucket_cap_mb)},
      {"cuda_version", be.cuda_version, te.cuda_version},
      {"ddp", be.ddp, te.ddp},
      {"device", be.device, te.device},
      {"framework", be.framework, te.framework},
      {"gradient_compression", base.gradient_compression, test.gradient_compression},
      {"libtorch_version", be.libtorch_version, te.libtorch_version},
      {"measure_steps", std::to_string(base.measure_steps), std::to_string(test.measure_steps)},
      {"model", base.model, test.model},
      {"precision", base.precision, test.precision},
      {"repeats", std::to_string(base.repeats), std::to_string(test.repeats)},
      {"threads_per_process", std::to_string(be.threads_per_process), std::to_string(te.threads_per_process)},
      {"trainbench_version", be.trainbench_version, te.trainbench_version},
  };
  const auto drop = [&rows](const std::string& name) {
    rows.erase(std::remove_if(rows.begin(), rows.end(), [&name](const SettingRow& r) { return r.name == name; }),
               rows.end());
  };
  if (be.attention.empty() && te.attention.empty()) drop("attention");  // not a transformer
  if (be.ddp.empty() && te.ddp.empty()) drop("ddp");                    // no DDP run, or older reports
  if (be.framework.empty() && te.framework.empty()) drop("framework");  // no program workload
  return rows;
}

/// The settings side by side ("name:  baseline vs test"), "-" for an empty value.
void settings_table(std::ostringstream& os, const std::vector<SettingRow>& rows) {
  std::size_t kw = 0, vw = std::string("baseline").size();
  for (const auto& r : rows) {
    kw = std::max(kw, r.name.size() + 1);
    vw = std::max(vw, r.base.empty() ? 1 : r.base.size());
  }
  auto show = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  os << pad_right("", kw) << "  " << pad_right("baseline", vw) << "    test\n";
  os << pad_right("", kw) << "  " << pad_right("--------", vw) << "    ----\n";
  for (const auto& r : rows) {
    os << pad_right(r.name + ":", kw) << "  " << pad_right(show(r.base), vw) << " vs " << show(r.test) << "\n";
  }
}

/// The significance cells of a row: the change of p50 ex/sec with its confidence interval and
/// the verdict with its p-value and sample counts (core/report/compare.hpp).
std::string verdict_cells(const RowComparison& r) {
  if (!r.verdict) return "";
  return "  " + pad_left(r.change ? format_change(*r.change) : "-", 26) + "  " + verdict_text(r);
}

/// The rest of one configuration's diff row (after its name): the test's p75 and p95 with the
/// change of ex/sec, the significance cells, or why there is nothing to compare.
void diff_cells(std::ostringstream& os, const RowComparison& row) {
  const RunReport* b = row.base;
  const RunReport* t = row.test;
  if (!b || !t) {
    os << (b ? "  only in baseline\n" : "  only in test\n");
    return;
  }
  if (b->phase != "Succeeded" || t->phase != "Succeeded") {
    os << "  " << (b->phase != "Succeeded" ? "failed in baseline" : "")
       << (b->phase != "Succeeded" && t->phase != "Succeeded" ? ", " : "")
       << (t->phase != "Succeeded" ? "failed in test" : "") << "\n";
    return;
  }
  if (b->allreduce || t->allreduce) {
    os << "  all-reduce: busbw compared below\n";
    return;
  }
  auto cell = [](const char* name, double sec, double ex, double base_ex) {
    std::string d = base_ex > 0 ? printf_str("%+.1f%%", (ex - base_ex) / base_ex * 100.0) : std::string("n/a");
    return std::string("  ") + name + pad_left(fmt_sec(sec), 10) + pad_left(fmt_rate(ex), 11) + pad_left(d, 9);
  };
  os << cell("p75:", t->sec_per_iter.p75, t->examples_per_sec.p75, b->examples_per_sec.p75)
     << cell("p95:", t->sec_per_iter.p95, t->examples_per_sec.p95, b->examples_per_sec.p95) << verdict_cells(row)
     << "\n";
}

void diff_table(std::ostringstream& os, const Comparison& c) {
  std::size_t w = 0;
  for (const auto& r : c.rows) w = std::max(w, r.name.size() + 1);
  const std::string cell_head =
      std::string(6, ' ') + pad_left("sec/iter", 10) + pad_left("ex/sec", 11) + pad_left("diff", 9);
  os << pad_right("", w) << cell_head << cell_head << "  " << pad_left("p50 ex/sec change [95% CI]", 26)
     << "  verdict\n";
  for (const auto& r : c.rows) {
    os << pad_left(r.name + ":", w);
    diff_cells(os, r);
  }
}

/// What the verdicts mean: the test, its level and the samples.
void significance_legend(std::ostringstream& os, const Comparison& c) {
  os << "p50 ex/sec change: Welch's t-test on log(p50 sec/iter) of each repeat, "
     << printf_str("%.0f", (1 - c.alpha) * 100) << "% confidence interval;\nfaster / slower: significant at alpha "
     << printf_str("%.2f", c.alpha) << "; ~: no significant change; cannot tell: fewer than " << kMinRepeatsToCompare
     << " repeats on a side;\nn=B+T: repeats of the baseline + the test (docs/report.md, \"Significance\")\n";
}

}  // namespace

std::string format_report(const Report& report) {
  std::ostringstream os;
  environment_header(os, report.environment);
  topology_header(os, report);
  if (every_run_is_allreduce(report)) return os.str() + allreduce_only_body(report);
  benchmark_title(os, report);
  os << "(" << report.precision << "; " << report.warmup_steps << " warm-up steps, then " << report.repeats << " x "
     << report.measure_steps << " measured steps, median of the repeats; ex/sec counts all devices)\n\n";

  std::vector<const RunReport*> runs;
  for (const auto& r : report.runs) runs.push_back(&r);
  const std::size_t w = name_width(runs);
  const ReportNotes notes(report);
  throughput_table(os, runs, w, notes);
  speedup_note(os, report);
  os << notes.text();
  os << format_workloads_table(report);
  loss_block(os, runs, w);
  mfu_block(os, runs, w);
  utilization_block(os, runs, w);
  paradigm_table(os, runs);
  per_rank_block(os, runs, w);
  os << format_hybrid_ps_runs(report);
  os << format_allreduce_runs(report);
  return os.str();
}

std::string format_diff(const Report& base, const Report& test) {
  std::ostringstream os;
  settings_table(os, setting_rows(base, test));
  os << "\n";
  benchmark_title(os, base);
  if (test.model != base.model || test.batch_size_per_device != base.batch_size_per_device) {
    os << "(test: " << test.model << " with batch size " << test.batch_size_per_device << ")\n";
  }
  os << "\n";
  const Comparison comparison = compare_reports(base, test);
  diff_table(os, comparison);
  os << "\nsec/iter and ex/sec are the test's; diff is the change of ex/sec from baseline to test\n";
  significance_legend(os, comparison);
  os << format_allreduce_diffs(base, test);
  return os.str();
}

}  // namespace trainbench
