#include "core/plot_labels.hpp"

#include <algorithm>

namespace trainbench {
namespace {

/// Whether the segment crosses the box (Liang-Barsky clipping: some part of it lies inside).
bool segment_hits(const PlotBox& b, double x0, double y0, double x1, double y1) {
  double t0 = 0, t1 = 1;
  const double dx = x1 - x0, dy = y1 - y0;
  const double p[4] = {-dx, dx, -dy, dy};
  const double q[4] = {x0 - b.left, b.right - x0, y0 - b.top, b.bottom - y0};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return false;
      continue;
    }
    const double t = q[i] / p[i];
    if (p[i] < 0) {
      t0 = std::max(t0, t);
    } else {
      t1 = std::min(t1, t);
    }
    if (t0 > t1) return false;
  }
  return true;
}

}  // namespace

int LabelPlacer::collisions(const PlotBox& box) const {
  int n = 0;
  if (box.left < bounds_.left || box.right > bounds_.right || box.top < bounds_.top || box.bottom > bounds_.bottom) {
    n += 100;  // outside the plot: worse than covering a line
  }
  for (const auto& b : boxes_) n += b.overlaps(box) ? 10 : 0;
  for (const auto& s : segments_) n += segment_hits(box, s.x0, s.y0, s.x1, s.y1) ? 3 : 0;
  return n;
}

LabelSpot LabelPlacer::place(double x, double y, double width, double height, double gap) {
  struct Candidate {
    double dx, dy;  ///< the box's offset from the point, in units of gap / its own size
    const char* anchor;
  };
  // Text baseline sits `height * 0.3` above the box's vertical centre.
  const Candidate candidates[] = {{1, 0, "start"},   {0.7, -1, "start"}, {0.7, 1, "start"},   {-1, 0, "end"},
                                  {-0.7, -1, "end"}, {-0.7, 1, "end"},   {0, -1.3, "middle"}, {0, 1.3, "middle"}};
  int best_cost = 0;
  PlotBox best_box;
  LabelSpot best;
  for (std::size_t i = 0; i < std::size(candidates); ++i) {
    const Candidate& c = candidates[i];
    const double tx = x + c.dx * gap, cy = y + c.dy * (gap + height / 2) * (c.dx == 0 ? 1 : 0.9);
    const double left = c.anchor[0] == 's' ? tx : c.anchor[0] == 'e' ? tx - width : tx - width / 2;
    const PlotBox box{left, cy - height / 2, left + width, cy + height / 2};
    const int cost = collisions(box);
    if (i == 0 || cost < best_cost) {
      best_cost = cost;
      best_box = box;
      best = {tx, cy + height * 0.35, c.anchor};
    }
    if (cost == 0) break;
  }
  boxes_.push_back(best_box);
  return best;
}

}  // namespace trainbench
