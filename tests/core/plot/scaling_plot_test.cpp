// core/plot/scaling_plot: the SVG parsed by a real XML parser (libxml2) and read back as a reader
// would: every plotted point mapped back through its axis's ticks must be the report's devices,
// examples/s and efficiency; the legend has one entry per paradigm; the target line sits at the
// target; failed runs are marked and have no point.
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include "core/plot/plot_axis.hpp"
#include "core/plot/scaling_plot.hpp"
#include "core/plot/svg_writer.hpp"

namespace trainbench {
namespace {

/// A parsed SVG and XPath queries on it (prefix s: for SVG's namespace).
class Svg {
 public:
  explicit Svg(const std::string& text)
      : doc_(xmlReadMemory(text.data(), static_cast<int>(text.size()), "plot.svg", "UTF-8", XML_PARSE_NONET),
             xmlFreeDoc) {
    if (!doc_) throw std::runtime_error("not well-formed XML");
    ctx_.reset(xmlXPathNewContext(doc_.get()));
    xmlXPathRegisterNs(ctx_.get(), BAD_CAST "s", BAD_CAST "http://www.w3.org/2000/svg");
  }
  std::vector<xmlNodePtr> all(const std::string& xpath) const {
    std::unique_ptr<xmlXPathObject, void (*)(xmlXPathObjectPtr)> r(
        xmlXPathEvalExpression(BAD_CAST xpath.c_str(), ctx_.get()), xmlXPathFreeObject);
    if (!r) throw std::runtime_error("bad XPath " + xpath);
    std::vector<xmlNodePtr> nodes;
    for (int i = 0; r->nodesetval && i < r->nodesetval->nodeNr; ++i) nodes.push_back(r->nodesetval->nodeTab[i]);
    return nodes;
  }
  xmlNodePtr one(const std::string& xpath) const {
    const auto n = all(xpath);
    if (n.size() != 1) throw std::runtime_error(xpath + ": " + std::to_string(n.size()) + " nodes, expected 1");
    return n[0];
  }

 private:
  std::unique_ptr<xmlDoc, void (*)(xmlDocPtr)> doc_;
  std::unique_ptr<xmlXPathContext, void (*)(xmlXPathContextPtr)> ctx_{nullptr, xmlXPathFreeContext};
};

std::string attr(xmlNodePtr n, const char* name) {
  xmlChar* v = xmlGetProp(n, BAD_CAST name);
  if (!v) return "";
  std::string s(reinterpret_cast<const char*>(v));
  xmlFree(v);
  return s;
}
double num(xmlNodePtr n, const char* name) { return std::stod(attr(n, name)); }
std::string text_of(xmlNodePtr n) {
  xmlChar* v = xmlNodeGetContent(n);
  std::string s(reinterpret_cast<const char*>(v));
  xmlFree(v);
  return s;
}

/// An axis as a reader sees it: pixel -> value through its first and last tick.
struct Axis {
  double pos0 = 0, val0 = 0, pos1 = 1, val1 = 1;
  bool log = false;
  double value(double pos) const {
    const double a = log ? std::log2(val0) : val0, b = log ? std::log2(val1) : val1;
    const double v = a + (pos - pos0) * (b - a) / (pos1 - pos0);
    return log ? std::exp2(v) : v;
  }
};

Axis read_axis(const Svg& svg, const std::string& panel, char xy) {
  const std::string base = "//s:g[@id='" + panel + "']/s:g[@class='axis " + xy + "']/s:g[@class='tick']";
  const auto ticks = svg.all(base);
  if (ticks.size() < 2) throw std::runtime_error(panel + ": fewer than 2 ticks on " + xy);
  const char* coord = xy == 'x' ? "x1" : "y1";
  auto tick_line = [&](xmlNodePtr t) { return svg.one(base + "[@data-value='" + attr(t, "data-value") + "']/s:line"); };
  Axis a;
  a.pos0 = num(tick_line(ticks.front()), coord);
  a.val0 = num(ticks.front(), "data-value");
  a.pos1 = num(tick_line(ticks.back()), coord);
  a.val1 = num(ticks.back(), "data-value");
  a.log = attr(svg.one("//s:g[@id='" + panel + "']"), (std::string("data-") + xy + "-scale").c_str()) == "log";
  return a;
}

/// A pixel is rounded to 0.01: the value read back is exact to within that, in the axis's units.
double pixel_tolerance(const Axis& a, double v) {
  const double per_px = std::abs(a.value(a.pos0 + 1) - a.value(a.pos0));
  return (a.log ? v * 0.01 : 0.0) + per_px * 0.02;
}

RunReport run(Paradigm p, int world, double ex_per_sec, const std::string& label) {
  RunReport r;
  r.paradigm = p;
  r.world_size = world;
  r.label = label;
  r.devices_label = std::to_string(world) + " CPUs";
  r.sec_per_iter = {32.0 * world / ex_per_sec, 0, 0, 0};
  r.examples_per_sec = {ex_per_sec, 0, 0, 0};
  r.repeats = {r.sec_per_iter, r.sec_per_iter};
  return r;
}

/// Speedup and efficiency against run `base`, as core/report/report's assemble_report fills them.
Report finish(std::vector<RunReport> runs, std::optional<int> base, std::optional<double> target) {
  Report rep;
  rep.job_name = "plot-test";
  rep.model = "mlp";
  rep.batch_size_per_device = 32;
  rep.precision = "fp32";
  rep.repeats = 2;
  rep.measure_steps = 10;
  rep.efficiency_target = target;
  rep.baseline_run = base;
  for (auto& r : runs) {
    if (r.phase != "Succeeded" || !base) continue;
    r.speedup = r.examples_per_sec.p50 / runs[static_cast<std::size_t>(*base)].examples_per_sec.p50;
    r.efficiency = *r.speedup / r.world_size;
  }
  rep.runs = std::move(runs);
  return rep;
}

RunReport failed(Paradigm p, int world, const std::string& label, const std::string& error) {
  RunReport r = run(p, world, 1, label);
  r.phase = "Failed";
  r.error = error;
  r.examples_per_sec = {};
  r.sec_per_iter = {};
  r.repeats.clear();
  return r;
}

Report mixed_report() {
  return finish({run(Paradigm::kNone, 1, 400, "no ddp"), run(Paradigm::kDdp, 1, 380, "1M/1G"),
                 run(Paradigm::kDdp, 2, 700, "1M/2G"), run(Paradigm::kDdp, 4, 1200, "1M/4G"),
                 run(Paradigm::kZero, 2, 600, "1M/2G zero"), run(Paradigm::kZero, 4, 1000, "1M/4G zero"),
                 run(Paradigm::kPipeline, 2, 300, "1M/2G pipeline"),
                 failed(Paradigm::kDdp, 4, "2M/2G", "rank 3 was killed by signal 9 (SIGKILL)"),
                 run(Paradigm::kDdp, 2, 650, "2M/1G")},
                0, 0.8);
}

/// Every succeeded run has one point per panel, and it reads back as the report's numbers.
void expect_points_equal_report(const Svg& svg, const Report& rep) {
  for (const std::string panel : {"throughput", "efficiency"}) {
    const Axis x = read_axis(svg, panel, 'x'), y = read_axis(svg, panel, 'y');
    for (std::size_t i = 0; i < rep.runs.size(); ++i) {
      const RunReport& r = rep.runs[i];
      const auto points =
          svg.all("//s:g[@id='" + panel + "']//s:circle[@class='point'][@data-run='" + std::to_string(i) + "']");
      const bool plotted = r.phase == "Succeeded" && (panel == "throughput" || r.efficiency);
      ASSERT_EQ(points.size(), plotted ? 1u : 0u) << panel << " run " << i;
      if (!plotted) continue;
      EXPECT_EQ(attr(points[0], "data-paradigm"), to_string(r.paradigm));
      EXPECT_NEAR(x.value(num(points[0], "cx")), r.world_size, pixel_tolerance(x, r.world_size)) << panel << " " << i;
      const double want = panel == "throughput" ? r.examples_per_sec.p50 : *r.efficiency;
      EXPECT_NEAR(y.value(num(points[0], "cy")), want, pixel_tolerance(y, want)) << panel << " run " << i;
    }
  }
}

TEST(ScalingPlot, MixedParadigmsPointsLegendTargetBaselineAndFailedRun) {
  const Report rep = mixed_report();
  const Svg svg(scaling_plot_svg(rep));
  expect_points_equal_report(svg, rep);

  // One legend entry per paradigm, in the paradigm table's order, coloured as its series.
  std::vector<std::string> legend;
  for (auto* e : svg.all("//s:g[@class='legend-entry'][@data-kind='series']"))
    legend.push_back(attr(e, "data-paradigm"));
  EXPECT_EQ(legend, (std::vector<std::string>{"none", "ddp", "zero", "pipeline"}));
  for (const auto& p : legend) {
    const auto series = svg.one("//s:g[@id='throughput']//s:g[@class='series'][@data-paradigm='" + p + "']");
    const auto sample = svg.one("//s:g[@class='legend-entry'][@data-paradigm='" + p + "']/s:circle");
    EXPECT_EQ(attr(series, "fill"), attr(sample, "fill")) << p;
  }
  std::set<std::string> colors;
  for (const auto& p : legend)
    colors.insert(attr(svg.one("//s:g[@id='efficiency']//s:g[@data-paradigm='" + p + "']"), "fill"));
  EXPECT_EQ(colors.size(), legend.size());
  // Lines join a paradigm's points in order of devices, through the fastest run at each count:
  // ddp's passes 1, 2 (1M/2G at 700 ex/s, not 2M/1G at 650), 4 devices.
  const auto ddp_line = svg.one("//s:g[@id='throughput']//s:g[@data-paradigm='ddp']/s:polyline");
  std::istringstream pts(attr(ddp_line, "points"));
  const Axis x = read_axis(svg, "throughput", 'x'), ty = read_axis(svg, "throughput", 'y');
  std::vector<std::pair<long, long>> line;
  for (std::string xy; pts >> xy;) {
    line.emplace_back(std::lround(x.value(std::stod(xy.substr(0, xy.find(','))))),
                      std::lround(ty.value(std::stod(xy.substr(xy.find(',') + 1)))));
  }
  EXPECT_EQ(line, (std::vector<std::pair<long, long>>{{1, 380}, {2, 700}, {4, 1200}}));
  // Hovering a point names the run and its numbers.
  EXPECT_EQ(text_of(svg.one("//s:g[@id='efficiency']//s:circle[@data-run='2']/s:title")),
            "2 CPUs -- 1M/2G (ddp): p50 700/s; speedup 1.75x, efficiency 87.5%");
  // The two ddp runs on 2 devices say which is which.
  std::set<std::string> values;
  for (auto* t : svg.all("//s:g[@id='throughput']/s:g[@class='values']/s:text")) values.insert(text_of(t));
  EXPECT_TRUE(values.count("700/s 1M/2G") && values.count("650/s 2M/1G") && values.count("1200/s")) << values.size();

  // The target line is at 80% on the efficiency axis; ideal at 100%.
  const Axis eff = read_axis(svg, "efficiency", 'y');
  const auto target = svg.one("//s:g[@id='efficiency']/s:g[@class='target']");
  EXPECT_EQ(attr(target, "data-value"), "0.8");
  EXPECT_NEAR(eff.value(num(svg.one("//s:g[@class='target']/s:line"), "y1")), 0.8, 1e-3);
  EXPECT_NEAR(eff.value(num(svg.one("//s:g[@id='efficiency']/s:g[@class='ideal']/s:line"), "y1")), 1.0, 1e-3);
  EXPECT_EQ(svg.all("//s:g[@class='legend-entry'][@data-kind='target']").size(), 1u);

  // The baseline ring sits on run 0's point in both panels.
  for (const std::string panel : {"throughput", "efficiency"}) {
    const auto ring = svg.one("//s:g[@id='" + panel + "']/s:g[@class='baseline'][@data-run='0']/s:circle");
    const auto point = svg.one("//s:g[@id='" + panel + "']//s:circle[@class='point'][@data-run='0']");
    EXPECT_EQ(attr(ring, "cx"), attr(point, "cx"));
    EXPECT_EQ(attr(ring, "cy"), attr(point, "cy"));
  }
  // The ideal throughput line: the baseline's 400 ex/s times the devices.
  std::istringstream ideal(attr(svg.one("//s:g[@id='throughput']/s:g[@class='ideal']/s:polyline"), "points"));
  for (std::string xy; ideal >> xy;) {
    const double d = x.value(std::stod(xy.substr(0, xy.find(',')))),
                 v = ty.value(std::stod(xy.substr(xy.find(',') + 1)));
    EXPECT_NEAR(v, 400 * d, pixel_tolerance(ty, 400 * d) + 400 * pixel_tolerance(x, d));
  }

  // The failed run: a cross at 4 devices in each panel, its error in the tooltip, no point.
  for (const std::string panel : {"throughput", "efficiency"}) {
    const auto mark = svg.one("//s:g[@id='" + panel + "']/s:g[@class='failed'][@data-run='7']");
    EXPECT_NE(text_of(svg.one("//s:g[@id='" + panel + "']/s:g[@class='failed']/s:title")).find("SIGKILL"),
              std::string::npos);
    (void)mark;
  }
  EXPECT_EQ(svg.all("//s:g[@class='legend-entry'][@data-kind='failed']").size(), 1u);
}

TEST(ScalingPlot, OneRunIsItsOwnBaseline) {
  const Report rep = finish({run(Paradigm::kNone, 1, 250, "no ddp")}, 0, 0.8);
  const Svg svg(scaling_plot_svg(rep));
  expect_points_equal_report(svg, rep);
  EXPECT_EQ(svg.all("//s:circle[@class='point']").size(), 2u);  // one per panel
  EXPECT_EQ(svg.all("//s:g[@class='baseline'][@data-run='0']").size(), 2u);
  EXPECT_EQ(svg.all("//s:polyline[@class='series-line']").size(), 0u);  // one point: no line
  EXPECT_EQ(svg.all("//s:g[@class='failed']").size(), 0u);
  EXPECT_EQ(svg.all("//s:g[@class='legend-entry'][@data-kind='series']").size(), 1u);
}

TEST(ScalingPlot, NoBaselineNoEfficiencyPanelPointsButThroughputStays) {
  // Every one-device run failed: no speedup, so no efficiency, no ideal, no target.
  const Report rep =
      finish({failed(Paradigm::kNone, 1, "no ddp", "worker exited 1"), run(Paradigm::kDdp, 2, 500, "1M/2G")},
             std::nullopt, 0.8);
  const Svg svg(scaling_plot_svg(rep));
  expect_points_equal_report(svg, rep);
  EXPECT_EQ(svg.all("//s:g[@id='efficiency']//s:circle[@class='point']").size(), 0u);
  EXPECT_EQ(svg.all("//s:g[@class='target'] | //s:g[@class='ideal'] | //s:g[@class='baseline']").size(), 0u);
  EXPECT_NE(text_of(svg.one("//s:g[@id='efficiency']/s:text[@class='message']")).find("no one-device run"),
            std::string::npos);
  EXPECT_EQ(svg.all("//s:g[@class='failed'][@data-run='0']").size(), 2u);
}

TEST(ScalingPlot, NoTrainingRunsStillAValidPlotSayingSo) {
  const Svg svg(scaling_plot_svg(finish({}, std::nullopt, 0.8), {1200, 600, "my title"}));
  EXPECT_EQ(attr(svg.one("/s:svg"), "width"), "1200");
  EXPECT_EQ(text_of(svg.one("//s:text[@class='title']")), "my title");
  EXPECT_EQ(text_of(svg.one("//s:g[@id='throughput']/s:text[@class='message']")), "no training runs in this report");
  EXPECT_EQ(svg.all("//s:circle[@class='point'] | //s:g[@class='legend-entry']").size(), 0u);
}

TEST(ScalingPlot, ManyDevicesUseLogAxesAndStillReadBack) {
  std::vector<RunReport> runs;
  for (int d = 1; d <= 64; d *= 2)
    runs.push_back(run(Paradigm::kDdp, d, 100.0 * d * std::pow(0.97, std::log2(d)), "x"));
  const Report rep = finish(std::move(runs), 0, 0.8);
  const Svg svg(scaling_plot_svg(rep));
  EXPECT_EQ(attr(svg.one("//s:g[@id='throughput']"), "data-x-scale"), "log");
  EXPECT_EQ(attr(svg.one("//s:g[@id='throughput']"), "data-y-scale"), "log");  // ideal is a straight line
  EXPECT_EQ(attr(svg.one("//s:g[@id='efficiency']"), "data-y-scale"), "linear");
  std::vector<std::string> ticks;
  for (auto* t : svg.all("//s:g[@id='throughput']/s:g[@class='axis x']/s:g[@class='tick']"))
    ticks.push_back(attr(t, "data-value"));
  EXPECT_EQ(ticks, (std::vector<std::string>{"1", "2", "4", "8", "16", "32", "64"}));
  expect_points_equal_report(svg, rep);
}

TEST(ScalingPlot, DeterministicAndTheSameThroughJson) {
  const Report rep = mixed_report();
  const std::string a = scaling_plot_svg(rep);
  EXPECT_EQ(a, scaling_plot_svg(rep));
  EXPECT_EQ(a, scaling_plot_svg(report_from_json(to_json(rep))));
}

TEST(ScalingPlot, LabelsAreEscaped) {
  Report rep = mixed_report();
  rep.job_name = "a<b & \"c\" 'd'";
  rep.runs[7].error = std::string("bad \x01 byte \xff </title><script>");
  const std::string text = scaling_plot_svg(rep);
  const Svg svg(text);  // throws if not well-formed
  EXPECT_NE(text_of(svg.one("//s:text[@class='subtitle']")).find("job a<b & \"c\" 'd'"), std::string::npos);
  EXPECT_NE(text_of(svg.all("//s:g[@class='failed']/s:title")[0]).find("bad   byte ? </title><script>"),
            std::string::npos);
  EXPECT_EQ(svg.all("//s:script").size(), 0u);
  EXPECT_EQ(xml_escape("\xe2\x9c\x93 \xed\xa0\x80"), "\xe2\x9c\x93 ???");  // a check mark stays; a surrogate does not
}

TEST(ScalingPlot, NiceTicks) {
  EXPECT_EQ(nice_ticks(0, 1.08, 7), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2}));
  EXPECT_EQ(nice_ticks(0, 2, 6, 1), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(nice_ticks(0, 7300, 6), (std::vector<double>{0, 2000, 4000, 6000, 8000}));
  EXPECT_EQ(power_of_two_ticks(1, 100), (std::vector<double>{1, 2, 4, 8, 16, 32, 64, 128}));
  EXPECT_EQ(log_ticks(90, 6400), (std::vector<double>{50, 100, 200, 500, 1000, 2000, 5000, 10000}));
  EXPECT_EQ(log_ticks(3, 2e6), (std::vector<double>{1, 10, 100, 1000, 1e4, 1e5, 1e6, 1e7}));
  const PlotScale s{1, 16, 0, 400, true};
  EXPECT_DOUBLE_EQ(s.map(4), 200);
}

}  // namespace
}  // namespace trainbench
