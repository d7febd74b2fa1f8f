#pragma once

// The scaling plot of a report (SVG, drawn here: no plotting library at run time): two panels
// side by side, throughput (examples/s, all devices) and scaling efficiency (speedup / devices)
// against the devices of each run, one line per paradigm, the ideal (linear from the baseline
// run), the spec's efficiency target and the baseline run marked; failed runs are crosses on the
// x axis. `trainbench report FILE.json --plot OUT.svg` and `kubectl trainbench plot` write it.
//
// The SVG is meant to be read by people and checked by programs: every run's marker carries
// class="point" data-run=INDEX data-paradigm=NAME, every tick data-value, the target line
// data-value (docs/report.md, "Scaling plot"). Same report, same bytes.

#include <string>

#include "core/report/report.hpp"

namespace trainbench {

struct ScalingPlotOptions {
  double width = 960;   ///< pixels, at least 720; the panels share it
  double height = 500;  ///< pixels, at least 400
  std::string title;    ///< "" for "<model>, batch <N> per device: scaling over <devices>"
};

/// The plot of `report`'s training runs (all-reduce runs are left out). A report without any
/// training run still gives a valid SVG, saying so.
std::string scaling_plot_svg(const Report& report, const ScalingPlotOptions& options = {});

}  // namespace trainbench
