#include "telemetry/prometheus_handler.hpp"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace trainbench::telemetry {

std::vector<double> duration_buckets_seconds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

HttpHandler prometheus_handler(std::shared_ptr<prometheus::Registry> registry, std::function<void()> before_scrape) {
  return [registry = std::move(registry), before = std::move(before_scrape)] {
    if (before) before();
    return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8",
                     prometheus::TextSerializer().Serialize(registry->Collect())};
  };
}

}  // namespace trainbench::telemetry
