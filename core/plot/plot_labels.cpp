#include "core/plot/plot_labels.hpp"

#include <algorithm>

namespace trainbench {
namespace {

// What a candidate spot costs: leaving the plot, covering a label or point, crossing a line.
constexpr int kOutside = 100;
constexpr int kCoversABox = 10;
constexpr int kCrossesALine = 3;

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
    n += kOutside;
  }
  for (const auto& b : boxes_) n += b.overlaps(box) ? kCoversABox : 0;
  for (const auto& s : segments_) n += segment_hits(box, s.x0, s.y0, s.x1, s.y1) ? kCrossesALine : 0;
  return n;
}

std::optional<LabelSpot> LabelPlacer::place(double x, double y, double width, double height, double gap,
                                            Placement how) {
  struct Candidate {
    double dx, dy;  ///< the box's offset from the point, in units of gap / its own size
    const char* anchor;
  };
  const Candidate right[] = {{1, 0, "start"}, {0.7, -1, "start"}, {0.7, 1, "start"}};
  const Candidate left[] = {{-1, 0, "end"}, {-0.7, -1, "end"}, {-0.7, 1, "end"}};
  const Candidate middle[] = {{0, -1.3, "middle"}, {0, 1.3, "middle"}};
  std::vector<Candidate> order;
  for (const auto* side : {how.left_first ? left : right, how.left_first ? right : left, middle}) {
    order.insert(order.end(), side, side + (side == middle ? 2 : 3));
  }
  int best_cost = -1;
  PlotBox best_box;
  LabelSpot best;
  for (const Candidate& c : order) {
    const double tx = x + c.dx * gap, cy = y + c.dy * (gap + height / 2) * (c.dx == 0 ? 1 : 0.9);
    const double box_left = c.anchor[0] == 's' ? tx : c.anchor[0] == 'e' ? tx - width : tx - width / 2;
    const PlotBox box{box_left, cy - height / 2, box_left + width, cy + height / 2};
    const int cost = collisions(box);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_box = box;
      best = {tx, cy + height * 0.35, c.anchor};  // the text's baseline, below the box's centre
    }
    if (cost == 0) break;
  }
  if (how.optional && best_cost >= kCoversABox) return std::nullopt;
  boxes_.push_back(best_box);
  return best;
}

}  // namespace trainbench
