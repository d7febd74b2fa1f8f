#include "core/plot/scaling_plot.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "core/plot/plot_axis.hpp"
#include "core/plot/plot_labels.hpp"
#include "core/plot/svg_writer.hpp"
#include "core/spec/model_sizes.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {
namespace {

/// Beyond this many devices the x axis is log2 (1, 2, 4, ... 1024 stay apart).
constexpr double kLinearDevicesMax = 16;
/// Up to this many points a panel labels every value; beyond, only where a label covers no other
/// (the rest are in the tooltips).
constexpr std::size_t kMaxValueLabels = 12;
constexpr const char* kIdealColor = "#808080";
constexpr const char* kTargetColor = "#D62728";
constexpr const char* kFailedColor = "#D62728";
constexpr const char* kInkColor = "#222222";

/// A successful training run as plotted; `run` indexes report.runs (as baselineRun does).
struct PlotPoint {
  int run = 0;
  Paradigm paradigm = Paradigm::kDdp;
  std::string workload;  ///< the run's workload ("" in a job without workloads)
  int series = 0;        ///< index into PlotData::series
  double devices = 1;
  double throughput = 0;  ///< p50 examples/s
  double slowest = 0;     ///< the slowest and the fastest repeat's p50 examples/s
  double fastest = 0;
  std::optional<double> efficiency;
  std::optional<double> speedup;
  std::string name;             ///< "2 CPUs -- 1M/2G"
  std::string label;            ///< "1M/2G"
  bool shares_devices = false;  ///< another point of its series has as many devices
  /// Spread bars of points on as many devices stand side by side: this one's offset, pixels.
  double bar_offset = 0;
};

struct FailedRun {
  int run = 0;
  double devices = 1;
  std::string name;
  std::string error;
};

/// One line of the plot: a paradigm's runs, or in a job with workloads a workload's runs (its
/// "no ddp" one-device run and its DDP runs on one line, as its speedups are).
struct Series {
  Paradigm paradigm = Paradigm::kDdp;
  std::string workload;
  std::string color;
  std::string legend;
};

struct PlotData {
  std::vector<PlotPoint> points;  ///< by series, devices, index
  std::vector<Series> series;     ///< the lines: paradigms in the paradigm table's order, or
                                  ///< workloads in the report's order
  std::vector<FailedRun> failed;
  std::optional<PlotPoint> baseline;
  double max_devices = 1;
};

/// Okabe and Ito's colour-blind-safe palette, one colour per paradigm whatever the sweep holds.
const char* paradigm_color(Paradigm p) {
  switch (p) {
    case Paradigm::kNone:
      return "#000000";
    case Paradigm::kDdp:
      return "#0072B2";
    case Paradigm::kZero:
      return "#E69F00";
    case Paradigm::kPipeline:
      return "#009E73";
    case Paradigm::kModelParallel:
      return "#CC79A7";
    case Paradigm::kHybridPs:
      return "#6A3D9A";
    case Paradigm::kAllreduce:
      break;
  }
  return "#56B4E9";
}

std::string paradigm_legend(Paradigm p) { return p == Paradigm::kNone ? "none (no ddp)" : std::string(to_string(p)); }

/// Okabe and Ito's palette by a series' position, for the lines of a job with workloads.
const char* series_color(std::size_t i) {
  static const char* const kColors[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#6A3D9A", "#D55E00", "#56B4E9"};
  return kColors[i % (sizeof kColors / sizeof kColors[0])];
}


PlotPoint plot_point(const RunReport& r, int index) {
  PlotPoint p;
  p.run = index;
  p.paradigm = r.paradigm;
  p.workload = r.workload;
  p.devices = r.world_size;
  p.throughput = p.slowest = p.fastest = r.examples_per_sec.p50;
  p.efficiency = r.efficiency;
  p.speedup = r.speedup;
  p.name = r.devices_label + " -- " + r.label;
  p.label = r.label;
  // examples/s is inversely proportional to sec/iter: each repeat's p50 gives its throughput.
  for (const auto& rep : r.repeats) {
    if (!(rep.p50 > 0) || r.repeats.size() < 2) continue;
    const double t = r.examples_per_sec.p50 * r.sec_per_iter.p50 / rep.p50;
    p.slowest = std::min(p.slowest, t);
    p.fastest = std::max(p.fastest, t);
  }
  return p;
}

PlotData collect(const Report& report) {
  PlotData d;
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const RunReport& r = report.runs[i];
    if (r.allreduce || !trains_model(r.paradigm)) continue;
    const int index = static_cast<int>(i);
    d.max_devices = std::max(d.max_devices, static_cast<double>(r.world_size));
    if (r.phase != "Succeeded") {
      d.failed.push_back({index, static_cast<double>(r.world_size), r.devices_label + " -- " + r.label, r.error});
      continue;
    }
    d.points.push_back(plot_point(r, index));
    if (report.baseline_run == index) d.baseline = d.points.back();
  }
  // Workloads in the report's order (none: one), each by paradigm, then by devices.
  std::vector<std::string> workloads;
  for (const auto& r : report.runs) {
    if (std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end()) workloads.push_back(r.workload);
  }
  const auto workload_rank = [&workloads](const std::string& w) {
    return std::find(workloads.begin(), workloads.end(), w) - workloads.begin();
  };
  std::stable_sort(d.points.begin(), d.points.end(), [&](const PlotPoint& a, const PlotPoint& b) {
    if (a.workload != b.workload) return workload_rank(a.workload) < workload_rank(b.workload);
    if (!a.workload.empty()) return a.devices < b.devices;  // a workload is one line, its paradigms joined
    return a.paradigm != b.paradigm ? a.paradigm < b.paradigm : a.devices < b.devices;
  });
  for (std::size_t i = 0; i < d.points.size(); ++i) {
    PlotPoint& p = d.points[i];
    const bool same_series = !d.series.empty() && d.series.back().workload == p.workload &&
                             (!p.workload.empty() || d.series.back().paradigm == p.paradigm);
    if (!same_series) {
      d.series.push_back({p.paradigm, p.workload,
                          p.workload.empty() ? paradigm_color(p.paradigm) : series_color(d.series.size()),
                          p.workload.empty() ? paradigm_legend(p.paradigm) : p.workload});
    }
    p.series = static_cast<int>(d.series.size()) - 1;
  }
  for (std::size_t i = 0; i < d.points.size(); ++i) {
    PlotPoint& p = d.points[i];
    int same = 0, before = 0;
    for (std::size_t j = 0; j < d.points.size(); ++j) {
      p.shares_devices |= j != i && d.points[j].series == p.series && d.points[j].devices == p.devices;
      same += d.points[j].devices == p.devices ? 1 : 0;
      before += j < i && d.points[j].devices == p.devices ? 1 : 0;
    }
    p.bar_offset = (before - (same - 1) / 2.0) * 7;
  }
  return d;
}

struct Rect {
  double left = 0, top = 0, right = 0, bottom = 0;
};

/// One panel: its plot area, scales and ticks.
struct Panel {
  std::string id;  ///< "throughput" | "efficiency"
  Rect area;
  PlotScale x, y;
  std::vector<double> x_ticks, y_ticks;
};

/// The devices axis of both panels: linear up to kLinearDevicesMax devices, log2 beyond.
void devices_axis(const PlotData& d, Panel& p) {
  if (d.max_devices > kLinearDevicesMax) {
    p.x_ticks = power_of_two_ticks(1, d.max_devices);
    p.x = {p.x_ticks.front() / 1.3, p.x_ticks.back() * 1.3, p.area.left, p.area.right, true};
  } else {
    p.x_ticks = nice_ticks(0, d.max_devices, 6, 1);
    const double step = p.x_ticks.size() > 1 ? p.x_ticks[1] - p.x_ticks[0] : 1;
    p.x = {0, p.x_ticks.back() + step * 0.3, p.area.left, p.area.right, false};
  }
}

/// Ideal throughput at `devices`: the baseline's, times the devices over the baseline's.
double ideal_throughput(const PlotPoint& base, double devices) {
  return base.throughput * devices / std::max(1.0, base.devices);
}

/// Throughput on a linear axis from 0, or a logarithmic one where the devices' axis is (ideal
/// scaling is then a straight line and 1 device's rate is not squashed against 1000 devices').
Panel throughput_panel(const PlotData& d, const Rect& area) {
  Panel p{"throughput", area, {}, {}, {}, {}};
  devices_axis(d, p);
  double top = 0, bottom = 0;
  for (const auto& pt : d.points) {
    top = std::max(top, pt.fastest);
    bottom = bottom > 0 ? std::min(bottom, pt.slowest) : pt.slowest;
  }
  if (d.baseline) top = std::max(top, ideal_throughput(*d.baseline, p.x_ticks.back()));
  if (p.x.logarithmic && bottom > 0) {
    p.y_ticks = log_ticks(bottom, top);
    p.y = {p.y_ticks.front(), p.y_ticks.back(), area.bottom, area.top, true};
    return p;
  }
  p.y_ticks = nice_ticks(0, top > 0 ? top * 1.05 : 1, 6);
  p.y = {0, p.y_ticks.back(), area.bottom, area.top, false};
  return p;
}

Panel efficiency_panel(const PlotData& d, const Rect& area, std::optional<double> target) {
  Panel p{"efficiency", area, {}, {}, {}, {}};
  devices_axis(d, p);
  double top = std::max(1.0, target.value_or(0));
  for (const auto& pt : d.points) top = std::max(top, pt.efficiency.value_or(0));
  p.y_ticks = nice_ticks(0, top * 1.08, 7);
  p.y = {0, p.y_ticks.back(), area.bottom, area.top, false};
  return p;
}

std::string rate_tick(double v) {
  if (v >= 1e6) return printf_str("%gM", v / 1e6);
  if (v >= 1e4) return printf_str("%gk", v / 1e3);
  return printf_str("%g", v);
}

/// A rate next to its point: fmt_rate's, shortened to 3 digits from 10000 ("192k/s").
std::string rate_value(double v) {
  if (v >= 1e6) return printf_str("%.3gM/s", v / 1e6);
  if (v >= 1e4) return printf_str("%.3gk/s", v / 1e3);
  return fmt_rate(v);
}

std::string percent(double fraction) { return printf_str("%.0f%%", fraction * 100); }

/// Grid, axis lines, ticks with their labels, and the axes' titles.
void draw_axes(SvgWriter& w, const Panel& p, const std::string& x_title, const std::string& y_title,
               const std::function<std::string(double)>& y_label) {
  const Rect& a = p.area;
  w.open("g", {{"class", "grid"}, {"stroke", "#E6E6E6"}, {"stroke-width", 1.0}});
  for (const double t : p.y_ticks)
    w.leaf("line", {{"x1", a.left}, {"y1", p.y.map(t)}, {"x2", a.right}, {"y2", p.y.map(t)}});
  for (const double t : p.x_ticks)
    w.leaf("line", {{"x1", p.x.map(t)}, {"y1", a.top}, {"x2", p.x.map(t)}, {"y2", a.bottom}});
  w.close();
  w.open("g", {{"class", "axis x"}, {"font-size", 12.0}, {"fill", kInkColor}});
  for (const double t : p.x_ticks) {
    const double x = p.x.map(t);
    w.open("g", {{"class", "tick"}, {"data-value", printf_str("%g", t)}});
    w.leaf("line", {{"x1", x}, {"y1", a.bottom}, {"x2", x}, {"y2", a.bottom + 5}, {"stroke", kInkColor}});
    w.text_element("text", {{"x", x}, {"y", a.bottom + 19}, {"text-anchor", "middle"}}, printf_str("%g", t));
    w.close();
  }
  w.leaf("line", {{"x1", a.left}, {"y1", a.bottom}, {"x2", a.right}, {"y2", a.bottom}, {"stroke", kInkColor}});
  w.text_element("text",
                 {{"class", "axis-title"},
                  {"x", (a.left + a.right) / 2},
                  {"y", a.bottom + 40},
                  {"text-anchor", "middle"},
                  {"font-size", 13.0}},
                 x_title);
  w.close();
  w.open("g", {{"class", "axis y"}, {"font-size", 12.0}, {"fill", kInkColor}});
  for (const double t : p.y_ticks) {
    const double y = p.y.map(t);
    w.open("g", {{"class", "tick"}, {"data-value", printf_str("%g", t)}});
    w.leaf("line", {{"x1", a.left - 5}, {"y1", y}, {"x2", a.left}, {"y2", y}, {"stroke", kInkColor}});
    w.text_element("text", {{"x", a.left - 8}, {"y", y + 4}, {"text-anchor", "end"}}, y_label(t));
    w.close();
  }
  w.leaf("line", {{"x1", a.left}, {"y1", a.top}, {"x2", a.left}, {"y2", a.bottom}, {"stroke", kInkColor}});
  const double yc = (a.top + a.bottom) / 2, xc = a.left - 58;
  w.text_element("text",
                 {{"class", "axis-title"},
                  {"x", xc},
                  {"y", yc},
                  {"text-anchor", "middle"},
                  {"font-size", 13.0},
                  {"transform", "rotate(-90 " + svg_number(xc) + " " + svg_number(yc) + ")"}},
                 y_title);
  w.close();
}

/// A value to print next to its point, once every mark of the panel is known.
struct ValueLabel {
  double x = 0, y = 0;  ///< the point
  std::string text;
  std::string color;
};

void draw_value_labels(SvgWriter& w, LabelPlacer& placer, std::vector<ValueLabel> labels) {
  const bool all = labels.size() <= kMaxValueLabels;
  // The right end (most devices) first: those are the numbers a scaling plot is read for.
  std::stable_sort(labels.begin(), labels.end(), [](const ValueLabel& a, const ValueLabel& b) { return a.x > b.x; });
  w.open("g", {{"class", "values"}, {"font-size", 11.0}});
  for (const auto& l : labels) {
    const auto at = placer.place(l.x, l.y, 6.3 * static_cast<double>(l.text.size()), 12, 12, {false, !all});
    if (at)
      w.text_element("text", {{"x", at->x}, {"y", at->y}, {"text-anchor", at->anchor}, {"fill", l.color}}, l.text);
  }
  w.close();
}

/// A point's marker as an obstacle for the labels.
PlotBox around(double x, double y, double r) { return {x - r, y - r, x + r, y + r}; }

/// What hovering a point says: the run and all its numbers the plot shows.
std::string tooltip(const PlotPoint& pt) {
  std::string t = pt.name + " (" + std::string(to_string(pt.paradigm)) + "): p50 " + fmt_rate(pt.throughput);
  if (!pt.workload.empty()) t = pt.name + ": p50 " + fmt_rate(pt.throughput);  // the name says the workload
  if (pt.fastest > pt.slowest) t += ", repeats " + fmt_rate(pt.slowest) + " to " + fmt_rate(pt.fastest);
  if (pt.speedup) t += "; speedup " + printf_str("%.2fx", *pt.speedup);
  if (pt.efficiency) t += ", efficiency " + printf_str("%.1f%%", *pt.efficiency * 100);
  return t;
}

using ValueOf = std::function<std::optional<double>(const PlotPoint&)>;

/// A point of a series where it is drawn.
struct Placed {
  const PlotPoint* point;
  double x, y;
};

std::vector<Placed> place_series(const Panel& p, const PlotData& d, int series, const ValueOf& value) {
  std::vector<Placed> placed;
  for (const auto& pt : d.points) {
    if (pt.series == series && value(pt)) placed.push_back({&pt, p.x.map(pt.devices), p.y.map(*value(pt))});
  }
  return placed;
}

/// The line of a series follows its fastest run at each device count (1M/2G or 2M/1G, whichever
/// is faster); the others are points off the line, labelled with their shape.
std::vector<Placed> fastest_per_device_count(const std::vector<Placed>& series) {
  std::vector<Placed> line;
  for (const auto& at : series) {
    if (!line.empty() && line.back().point->devices == at.point->devices) {
      if (at.point->throughput > line.back().point->throughput) line.back() = at;
    } else {
      line.push_back(at);
    }
  }
  return line;
}

/// The slowest to the fastest repeat's throughput, a bar with caps.
void draw_spread(SvgWriter& w, const Panel& p, const PlotPoint& pt, double x, const std::string& color) {
  const double lo = p.y.map(pt.slowest), hi = p.y.map(pt.fastest);
  w.leaf("path", {{"class", "spread"},
                  {"d", "M" + svg_number(x) + " " + svg_number(lo) + "V" + svg_number(hi) + "M" + svg_number(x - 4) +
                            " " + svg_number(lo) + "h8M" + svg_number(x - 4) + " " + svg_number(hi) + "h8"},
                  {"stroke", color},
                  {"stroke-width", 1.5},
                  {"stroke-opacity", 0.7},
                  {"fill", "none"}});
}

/// Each series' points joined in order of devices; `value` is nullopt where a point has none.
/// Returns the values to label.
std::vector<ValueLabel> draw_series(SvgWriter& w, const Panel& p, const PlotData& d, const ValueOf& value,
                                    const std::function<std::string(double)>& value_text, bool spread,
                                    LabelPlacer& placer) {
  std::vector<ValueLabel> labels;
  for (std::size_t s = 0; s < d.series.size(); ++s) {
    const std::string color = d.series[s].color, name(to_string(d.series[s].paradigm));
    const std::vector<Placed> series = place_series(p, d, static_cast<int>(s), value);
    SvgAttrs group{{"class", "series"}, {"data-paradigm", name}, {"fill", color}};
    if (!d.series[s].workload.empty()) group.emplace_back("data-workload", d.series[s].workload);
    w.open("g", group);
    const std::vector<Placed> fastest = fastest_per_device_count(series);
    if (fastest.size() > 1) {
      std::string line;
      for (std::size_t i = 0; i < fastest.size(); ++i) {
        line += (i ? " " : "") + svg_number(fastest[i].x) + "," + svg_number(fastest[i].y);
        if (i) placer.avoid_segment(fastest[i - 1].x, fastest[i - 1].y, fastest[i].x, fastest[i].y);
      }
      w.leaf("polyline",
             {{"class", "series-line"}, {"points", line}, {"fill", "none"}, {"stroke", color}, {"stroke-width", 2.5}});
    }
    for (std::size_t i = 0; i < series.size(); ++i) {
      const PlotPoint& pt = *series[i].point;
      if (spread && pt.fastest > pt.slowest) {
        const double x = series[i].x + pt.bar_offset;
        draw_spread(w, p, pt, x, color);
        placer.avoid_segment(x, p.y.map(pt.slowest), x, p.y.map(pt.fastest));
      }
      w.open("circle", {{"class", "point"},
                        {"data-run", pt.run},
                        {"data-paradigm", name},
                        {"cx", series[i].x},
                        {"cy", series[i].y},
                        {"r", 5.0},
                        {"stroke", "#FFFFFF"},
                        {"stroke-width", 1.5}});
      w.text_element("title", {}, tooltip(pt));
      w.close();
      // Two runs of a series on as many devices (1M/2G, 2M/1G): the label says which is which.
      labels.push_back(
          {series[i].x, series[i].y, value_text(*value(pt)) + (pt.shares_devices ? " " + pt.label : ""), color});
      placer.avoid(around(series[i].x, series[i].y, 6));
    }
    w.close();
  }
  return labels;
}

/// A ring around the baseline run's point, labelled: the run every speedup is measured against.
void draw_baseline(SvgWriter& w, const Panel& p, const PlotPoint& base, double value, LabelPlacer& placer) {
  const double x = p.x.map(base.devices), y = p.y.map(value);
  placer.avoid(around(x, y, 10));
  const auto at = placer.place(x, y, 50, 12, 14, {true, false});
  w.open("g", {{"class", "baseline"}, {"data-run", base.run}});
  w.leaf("circle", {{"cx", x}, {"cy", y}, {"r", 9.0}, {"fill", "none"}, {"stroke", kInkColor}, {"stroke-width", 2.0}});
  w.text_element("text",
                 {{"x", at->x}, {"y", at->y}, {"text-anchor", at->anchor}, {"font-size", 11.0}, {"fill", kInkColor}},
                 "baseline");
  w.close();
}

/// A cross on the x axis at a failed run's devices: it has no numbers to plot.
void draw_failed(SvgWriter& w, const Panel& p, const PlotData& d, LabelPlacer& placer) {
  for (const auto& f : d.failed) {
    const double x = p.x.map(f.devices), y = p.area.bottom;
    placer.avoid({x - 20, y - 22, x + 20, y + 7});
    w.open("g", {{"class", "failed"}, {"data-run", f.run}});
    w.text_element("title", {}, f.name + ": failed" + (f.error.empty() ? "" : ": " + f.error));
    w.leaf("path", {{"d", "M" + svg_number(x - 6) + " " + svg_number(y - 6) + "L" + svg_number(x + 6) + " " +
                              svg_number(y + 6) + "M" + svg_number(x - 6) + " " + svg_number(y + 6) + "L" +
                              svg_number(x + 6) + " " + svg_number(y - 6)},
                    {"stroke", kFailedColor},
                    {"stroke-width", 3.0}});
    w.text_element("text",
                   {{"x", x}, {"y", y - 10}, {"text-anchor", "middle"}, {"font-size", 11.0}, {"fill", kFailedColor}},
                   "failed");
    w.close();
  }
}

/// A horizontal reference line across the panel at `value`, labelled at its right end.
void draw_reference(SvgWriter& w, const Panel& p, const std::string& cls, double value, const char* color,
                    const char* dash, const std::string& label, LabelPlacer& placer) {
  const double y = p.y.map(value);
  placer.avoid_segment(p.area.left, y, p.area.right, y);
  placer.avoid({p.area.right - 4 - 6.3 * static_cast<double>(label.size()), y - 16, p.area.right, y - 2});
  w.open("g", {{"class", cls}, {"data-value", printf_str("%g", value)}});
  w.leaf("line", {{"x1", p.area.left},
                  {"y1", y},
                  {"x2", p.area.right},
                  {"y2", y},
                  {"stroke", color},
                  {"stroke-width", 1.5},
                  {"stroke-dasharray", dash}});
  w.text_element("text",
                 {{"x", p.area.right - 4}, {"y", y - 5}, {"text-anchor", "end"}, {"font-size", 11.0}, {"fill", color}},
                 label);
  w.close();
}

/// The baseline's throughput times the devices, from the baseline to the last x tick.
void draw_ideal_throughput(SvgWriter& w, const Panel& p, const PlotPoint& base, LabelPlacer& placer) {
  const double from = base.devices, to = p.x_ticks.back();
  const int samples = p.x.logarithmic && !p.y.logarithmic ? 48 : 1;  // a curve on log x, linear y
  std::string points;
  for (int k = 0; k <= samples; ++k) {
    const double dev = from + (to - from) * k / samples;
    points += (k ? " " : "") + svg_number(p.x.map(dev)) + "," + svg_number(p.y.map(ideal_throughput(base, dev)));
    if (k) {
      const double prev = from + (to - from) * (k - 1) / samples;
      placer.avoid_segment(p.x.map(prev), p.y.map(ideal_throughput(base, prev)), p.x.map(dev),
                           p.y.map(ideal_throughput(base, dev)));
    }
  }
  placer.avoid(
      {p.x.map(to) - 40, p.y.map(ideal_throughput(base, to)), p.x.map(to), p.y.map(ideal_throughput(base, to)) + 16});
  w.open("g", {{"class", "ideal"}});
  w.leaf("polyline", {{"points", points},
                      {"fill", "none"},
                      {"stroke", kIdealColor},
                      {"stroke-width", 1.5},
                      {"stroke-dasharray", "5 4"}});
  w.text_element("text",
                 {{"x", p.x.map(to) - 4},
                  {"y", p.y.map(ideal_throughput(base, to)) + 14},
                  {"text-anchor", "end"},
                  {"font-size", 11.0},
                  {"fill", kIdealColor}},
                 "ideal");
  w.close();
}

void draw_panel_frame(SvgWriter& w, const Panel& p, const std::string& title) {
  w.open("g", {{"class", "panel"},
               {"id", p.id},
               {"data-x-scale", p.x.logarithmic ? "log" : "linear"},
               {"data-y-scale", p.y.logarithmic ? "log" : "linear"}});
  w.text_element("text",
                 {{"class", "panel-title"},
                  {"x", p.area.left},
                  {"y", p.area.top - 12},
                  {"font-size", 14.0},
                  {"font-weight", "bold"},
                  {"fill", kInkColor}},
                 title);
}

void draw_message(SvgWriter& w, const Panel& p, const std::string& message) {
  w.text_element("text",
                 {{"class", "message"},
                  {"x", (p.area.left + p.area.right) / 2},
                  {"y", (p.area.top + p.area.bottom) / 2},
                  {"text-anchor", "middle"},
                  {"font-size", 13.0},
                  {"fill", "#555555"}},
                 message);
}

/// One entry of the legend: what a mark means.
struct LegendEntry {
  std::string kind;  ///< series | baseline | ideal | target | spread | failed
  const Series* series = nullptr;  ///< kind series: the line
  std::string text;
};

std::vector<LegendEntry> legend_entries(const Report& r, const PlotData& d) {
  std::vector<LegendEntry> entries;
  for (const Series& s : d.series) entries.push_back({"series", &s, s.legend});
  if (d.baseline) {
    entries.push_back({"baseline", nullptr, "baseline run (" + d.baseline->name + ")"});
    entries.push_back({"ideal", nullptr, "ideal: linear from the baseline"});
    if (r.efficiency_target) {
      entries.push_back({"target", nullptr, "efficiency target " + percent(*r.efficiency_target)});
    }
  }
  if (std::any_of(d.points.begin(), d.points.end(), [](const PlotPoint& p) { return p.fastest > p.slowest; })) {
    entries.push_back({"spread", nullptr, "bar: slowest to fastest repeat"});
  }
  if (!d.failed.empty()) entries.push_back({"failed", nullptr, "failed run (no numbers)"});
  return entries;
}

/// Text width in pixels at font-size 12, near enough for laying out the legend.
double text_width(const std::string& s) { return 6.8 * static_cast<double>(s.size()); }

/// Each entry's left x and its row (0, 1, ...), rows centred in `width`.
std::vector<std::pair<double, int>> legend_layout(const std::vector<LegendEntry>& entries, double width) {
  std::vector<std::pair<double, int>> at(entries.size());
  std::vector<double> row_width{0};
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double w = 30 + text_width(entries[i].text) + 24;
    if (row_width.back() > 0 && row_width.back() + w > width - 40) row_width.push_back(0);
    at[i] = {row_width.back(), static_cast<int>(row_width.size()) - 1};
    row_width.back() += w;
  }
  for (auto& [x, row] : at) x += (width - row_width[static_cast<std::size_t>(row)]) / 2;
  return at;
}

void draw_legend_sample(SvgWriter& w, const LegendEntry& e, double x, double y) {
  if (e.kind == "series") {
    const std::string c = e.series->color;
    w.leaf("line", {{"x1", x}, {"y1", y}, {"x2", x + 24}, {"y2", y}, {"stroke", c}, {"stroke-width", 2.5}});
    w.leaf("circle",
           {{"cx", x + 12}, {"cy", y}, {"r", 5.0}, {"fill", c}, {"stroke", "#FFFFFF"}, {"stroke-width", 1.5}});
  } else if (e.kind == "baseline") {
    w.leaf("circle",
           {{"cx", x + 12}, {"cy", y}, {"r", 8.0}, {"fill", "none"}, {"stroke", kInkColor}, {"stroke-width", 2.0}});
  } else if (e.kind == "spread") {
    w.leaf("path", {{"d", "M" + svg_number(x + 12) + " " + svg_number(y - 7) + "v14m-4 -14h8m-8 14h8"},
                    {"stroke", kInkColor},
                    {"stroke-width", 1.5},
                    {"fill", "none"}});
  } else if (e.kind == "failed") {
    w.leaf("path", {{"d", "M" + svg_number(x + 7) + " " + svg_number(y - 5) + "l10 10m-10 0l10 -10"},
                    {"stroke", kFailedColor},
                    {"stroke-width", 3.0}});
  } else {
    const bool target = e.kind == "target";
    w.leaf("line", {{"x1", x},
                    {"y1", y},
                    {"x2", x + 24},
                    {"y2", y},
                    {"stroke", target ? kTargetColor : kIdealColor},
                    {"stroke-width", 1.5},
                    {"stroke-dasharray", target ? "7 4" : "5 4"}});
  }
}

void draw_legend(SvgWriter& w, const std::vector<LegendEntry>& entries, double width, double top) {
  const auto at = legend_layout(entries, width);
  w.open("g", {{"class", "legend"}, {"font-size", 12.0}, {"fill", kInkColor}});
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const LegendEntry& e = entries[i];
    const double x = at[i].first, y = top + 20.0 * at[i].second;
    SvgAttrs attrs{{"class", "legend-entry"}, {"data-kind", e.kind}};
    if (e.kind == "series") {
      attrs.emplace_back("data-paradigm", std::string(to_string(e.series->paradigm)));
      if (!e.series->workload.empty()) attrs.emplace_back("data-workload", e.series->workload);
    }
    w.open("g", attrs);
    draw_legend_sample(w, e, x, y);
    w.text_element("text", {{"x", x + 30}, {"y", y + 4}}, e.text);
    w.close();
  }
  w.close();
}

std::string devices_title(const Report& r, const Panel& p) {
  return (r.environment.device == "cuda" ? "GPUs (all nodes" : "devices: CPU processes (all nodes") +
         std::string(p.x.logarithmic ? ", log scale)" : ")");
}

std::string throughput_unit(const Report& r) { return is_language_model(r.model) ? "sequences/s" : "examples/s"; }

void throughput_section(SvgWriter& w, const Report& r, const PlotData& d, const Rect& area) {
  const Panel p = throughput_panel(d, area);
  LabelPlacer placer({area.left, area.top, area.right, area.bottom});
  draw_panel_frame(w, p, "Throughput: " + throughput_unit(r) + ", all devices, p50");
  draw_axes(w, p, devices_title(r, p), throughput_unit(r) + (p.y.logarithmic ? " (log scale)" : ""), rate_tick);
  if (d.baseline) draw_ideal_throughput(w, p, *d.baseline, placer);
  draw_failed(w, p, d, placer);
  const auto labels = draw_series(
      w, p, d, [](const PlotPoint& pt) { return std::optional<double>(pt.throughput); }, rate_value, true, placer);
  if (d.baseline) draw_baseline(w, p, *d.baseline, d.baseline->throughput, placer);
  draw_value_labels(w, placer, labels);
  if (d.points.empty() && d.failed.empty()) draw_message(w, p, "no training runs in this report");
  w.close();
}

void efficiency_section(SvgWriter& w, const Report& r, const PlotData& d, const Rect& area) {
  const Panel p = efficiency_panel(d, area, r.efficiency_target);
  LabelPlacer placer({area.left, area.top, area.right, area.bottom});
  draw_panel_frame(w, p, "Scaling efficiency: speedup / devices");
  draw_axes(w, p, devices_title(r, p), "scaling efficiency", percent);
  draw_failed(w, p, d, placer);
  if (!d.baseline) {
    draw_message(w, p, "no speedup: no one-device run succeeded");
    w.close();
    return;
  }
  draw_reference(w, p, "ideal", 1.0, kIdealColor, "5 4", "ideal 100%", placer);
  if (r.efficiency_target) {
    const double t = *r.efficiency_target;
    draw_reference(w, p, "target", t, kTargetColor, "7 4", "target " + percent(t), placer);
  }
  const auto labels = draw_series(
      w, p, d, [](const PlotPoint& pt) { return pt.efficiency; }, percent, false, placer);
  draw_baseline(w, p, *d.baseline, d.baseline->efficiency.value_or(1.0), placer);
  draw_value_labels(w, placer, labels);
  w.close();
}

std::string default_title(const Report& r) {
  return (r.model.empty() ? std::string("all-reduce") : r.model) + ", batch " +
         std::to_string(r.batch_size_per_device) + " per device: throughput and scaling efficiency";
}

/// "job quickstart · fp32 · cpu: <name> · p50 of 3 repeats x 30 measured steps · trainbench 0.1.0"
std::string subtitle(const Report& r) {
  std::string s = "job " + r.job_name;
  if (!r.precision.empty()) s += " \u00b7 " + r.precision;
  if (!r.environment.device.empty()) {
    s +=
        " \u00b7 " + r.environment.device + (r.environment.device_name.empty() ? "" : ": " + r.environment.device_name);
  }
  s += " \u00b7 p50 sec/iter, median of " + std::to_string(r.repeats) + " repeats x " +
       std::to_string(r.measure_steps) + " measured steps";
  if (!r.environment.trainbench_version.empty()) s += " \u00b7 trainbench " + r.environment.trainbench_version;
  return s;
}

}  // namespace

std::string scaling_plot_svg(const Report& report, const ScalingPlotOptions& options) {
  const PlotData d = collect(report);
  const std::vector<LegendEntry> legend = legend_entries(report, d);
  // Below this the panels' labels would overlap: a smaller plot is scaled by its viewer instead.
  const double width = std::max(options.width, 720.0), height = std::max(options.height, 400.0);
  int rows = 0;
  for (const auto& at : legend_layout(legend, width)) rows = std::max(rows, at.second + 1);
  const std::string title = options.title.empty() ? default_title(report) : options.title;

  SvgWriter w(width, height);
  w.text_element("title", {}, title);
  w.leaf("rect", {{"class", "background"}, {"width", width}, {"height", height}, {"fill", "#FFFFFF"}});
  w.text_element(
      "text",
      {{"class", "title"}, {"x", 20.0}, {"y", 30.0}, {"font-size", 18.0}, {"font-weight", "bold"}, {"fill", kInkColor}},
      title);
  w.text_element("text", {{"class", "subtitle"}, {"x", 20.0}, {"y", 52.0}, {"font-size", 12.0}, {"fill", "#555555"}},
                 subtitle(report));
  const double bottom = height - 62 - 20.0 * rows;
  throughput_section(w, report, d, {85, 96, width / 2 - 30, bottom});
  efficiency_section(w, report, d, {width / 2 + 85, 96, width - 30, bottom});
  draw_legend(w, legend, width, bottom + 66);
  return w.finish();
}

}  // namespace trainbench
