#pragma once

// Where the value labels of a plot go (core/plot/scaling_plot): next to their point, on the first of
// a few sides where they cover no other label, point or line, so a reader can tell which number
// belongs to which point. Deterministic: the same obstacles give the same spots.

#include <optional>
#include <string>
#include <vector>

namespace trainbench {

struct PlotBox {
  double left = 0, top = 0, right = 0, bottom = 0;
  bool overlaps(const PlotBox& o) const { return left < o.right && o.left < right && top < o.bottom && o.top < bottom; }
};

/// A label's text position: SVG text x, y (baseline) and text-anchor.
struct LabelSpot {
  double x = 0, y = 0;
  std::string anchor;  ///< start | middle | end
};

class LabelPlacer {
 public:
  /// Labels stay inside `bounds` (the plot area).
  explicit LabelPlacer(const PlotBox& bounds) : bounds_(bounds) {}

  void avoid(const PlotBox& box) { boxes_.push_back(box); }
  /// A line from (x0, y0) to (x1, y1).
  void avoid_segment(double x0, double y0, double x1, double y1) { segments_.push_back({x0, y0, x1, y1}); }

  /// How a label may be placed.
  struct Placement {
    bool left_first = false;  ///< try the left side first (right, then left, by default)
    bool optional = false;    ///< nullopt rather than a spot covering another label or point
  };
  /// The spot for a label `width` x `height` pixels next to the point (x, y), `gap` pixels from
  /// it: right, above right, below right, left, above left, below left, above, below; the
  /// first that covers nothing, else the one covering least. The label is then an obstacle too.
  std::optional<LabelSpot> place(double x, double y, double width, double height, double gap, Placement how);

 private:
  struct Segment {
    double x0, y0, x1, y1;
  };
  int collisions(const PlotBox& box) const;
  PlotBox bounds_;
  std::vector<PlotBox> boxes_;
  std::vector<Segment> segments_;
};

}  // namespace trainbench
