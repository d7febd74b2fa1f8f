#pragma once

// GET /metrics for a prometheus-cpp registry, in the Prometheus text format (0.0.4).

#include <functional>
#include <memory>
#include <vector>

#include "telemetry/http_endpoint.hpp"

namespace prometheus {
class Registry;
}

namespace trainbench::telemetry {

/// Histogram buckets for durations, 1 ms to 60 s, about three per decade: training steps,
/// exposed communication, reconciles and API requests all fall in this range.
std::vector<double> duration_buckets_seconds();

/// `before_scrape` (optional) runs first on every scrape, to refresh values read at scrape
/// time (cache sizes, counts of objects, /proc samples).
HttpHandler prometheus_handler(std::shared_ptr<prometheus::Registry> registry,
                               std::function<void()> before_scrape = {});

}  // namespace trainbench::telemetry
