// OperatorMetrics: what the controller and the kube client report becomes Prometheus series.
#include "operator/metrics/operator_metrics.hpp"

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <regex>

#include "scrape.hpp"

namespace {

using trainbench::op::ControllerMetrics;
using trainbench::op::ControllerSnapshot;
using trainbench::op::OperatorMetrics;
using trainbench::test::value;

std::string text_of(OperatorMetrics& m) {
  m.refresh();
  return prometheus::TextSerializer().Serialize(m.registry()->Collect());
}

TEST(OperatorMetrics, ReconcilesTransitionsAndRequests) {
  OperatorMetrics m("1.2.3");
  m.reconciled(ControllerMetrics::Outcome::kSuccess, 0.002);
  m.reconciled(ControllerMetrics::Outcome::kSuccess, 0.004);
  m.reconciled(ControllerMetrics::Outcome::kRequeue, 0.001);
  m.reconciled(ControllerMetrics::Outcome::kError, 0.5);
  for (const char* r : {"RunStarted", "RunStarted", "RunRestarted", "RunFailed", "RunSucceeded", "JobSucceeded"}) {
    m.transition(r);
  }
  auto observe = m.request_observer();
  observe({{"create", "pods"}, 201, 0.003});
  observe({{"create", "pods"}, 201, 0.004});
  observe({{"create", "pods"}, 409, 0.002});
  observe({{"get", ""}, 0, 30.0});  // no answer
  m.set_leader(true);

  const std::string t = text_of(m);
  EXPECT_EQ(value(t, "trainbench_operator_reconcile_total", "result=\"success\""), 2) << t;
  EXPECT_EQ(value(t, "trainbench_operator_reconcile_total", "result=\"requeue\""), 1);
  EXPECT_EQ(value(t, "trainbench_operator_reconcile_total", "result=\"error\""), 1);
  EXPECT_EQ(value(t, "trainbench_operator_reconcile_errors_total"), 1);
  EXPECT_EQ(value(t, "trainbench_operator_reconcile_duration_seconds_count"), 4);
  EXPECT_NEAR(value(t, "trainbench_operator_reconcile_duration_seconds_sum"), 0.507, 1e-9);
  EXPECT_EQ(value(t, "trainbench_operator_runs_started_total"), 2);
  EXPECT_EQ(value(t, "trainbench_operator_runs_restarted_total"), 1);
  EXPECT_EQ(value(t, "trainbench_operator_runs_failed_total"), 1);
  EXPECT_EQ(value(t, "trainbench_operator_runs_succeeded_total"), 1);
  EXPECT_EQ(value(t, "trainbench_operator_api_requests_total", "code=\"201\",resource=\"pods\",verb=\"create\""), 2);
  EXPECT_EQ(value(t, "trainbench_operator_api_requests_total", "code=\"409\",resource=\"pods\",verb=\"create\""), 1);
  EXPECT_EQ(value(t, "trainbench_operator_api_requests_total", "code=\"0\",resource=\"none\",verb=\"get\""), 1);
  EXPECT_EQ(value(t, "trainbench_operator_api_request_duration_seconds_count", "resource=\"pods\",verb=\"create\""), 3);
  EXPECT_EQ(value(t, "trainbench_operator_leader"), 1);
  EXPECT_EQ(value(t, "trainbench_operator_info", "version=\"1.2.3\""), 1);
  EXPECT_EQ(value(t, "trainbench_operator_informers_synced"), 0) << "no controller yet";
}

TEST(OperatorMetrics, ScrapeTimeValuesFromTheController) {
  OperatorMetrics m("x");
  ControllerSnapshot snap;
  snap.queue_depth = 3;
  snap.synced = true;
  snap.jobs_by_phase = {{"Running", 2}, {"Succeeded", 5}};
  snap.informers["pods"] = {1, 0, 7};
  m.set_snapshot_source([&] { return snap; });
  std::string t = text_of(m);
  EXPECT_EQ(value(t, "trainbench_operator_workqueue_depth"), 3);
  EXPECT_EQ(value(t, "trainbench_operator_benchmarkjobs", "phase=\"Running\""), 2);
  EXPECT_EQ(value(t, "trainbench_operator_benchmarkjobs", "phase=\"Succeeded\""), 5);
  EXPECT_EQ(value(t, "trainbench_operator_benchmarkjobs", "phase=\"Failed\""), 0) << "known phases are always there";
  EXPECT_EQ(value(t, "trainbench_operator_benchmarkjobs", "phase=\"Suspended\""), 0)
      << "the queue's jobs (spec.suspend)";
  EXPECT_EQ(value(t, "trainbench_operator_watch_restarts_total", "resource=\"pods\""), 0) << "the first watch";
  EXPECT_EQ(value(t, "trainbench_operator_cached_objects", "resource=\"pods\""), 7);
  EXPECT_EQ(value(t, "trainbench_operator_informers_synced"), 1);

  snap.informers["pods"] = {4, 1, 2};  // three re-opened watches, one after a 410
  snap.jobs_by_phase = {{"Succeeded", 7}};
  t = text_of(m);
  EXPECT_EQ(value(t, "trainbench_operator_watch_restarts_total", "resource=\"pods\""), 3);
  EXPECT_EQ(value(t, "trainbench_operator_watch_relists_total", "resource=\"pods\""), 1);
  EXPECT_EQ(value(t, "trainbench_operator_benchmarkjobs", "phase=\"Running\""), 0) << "an emptied phase drops to 0";
  t = text_of(m);  // a scrape with no change adds nothing
  EXPECT_EQ(value(t, "trainbench_operator_watch_restarts_total", "resource=\"pods\""), 3);
}

TEST(OperatorMetrics, NamesFollowPrometheusConventions) {
  OperatorMetrics m("x");
  m.request_observer()({{"list", "pods"}, 200, 0.01});
  m.reconciled(ControllerMetrics::Outcome::kSuccess, 0.01);
  ControllerSnapshot snap;
  snap.informers["pods"] = {2, 1, 1};
  m.set_snapshot_source([&] { return snap; });
  const std::string t = text_of(m);
  std::regex type_line("# TYPE (\\S+) (counter|gauge|histogram)");
  int families = 0;
  for (std::sregex_iterator it(t.begin(), t.end(), type_line), end; it != end; ++it) {
    const std::string name = (*it)[1], type = (*it)[2];
    ++families;
    EXPECT_EQ(name.rfind("trainbench_operator_", 0), 0u) << name;
    EXPECT_EQ(type == "counter", name.size() > 6 && name.substr(name.size() - 6) == "_total") << name;
    EXPECT_NE(t.find("# HELP " + name + " "), std::string::npos) << name;
    if (type == "histogram") {
      EXPECT_NE(name.find("_seconds"), std::string::npos) << name << ": base unit";
    }
  }
  EXPECT_GE(families, 17);
}

}  // namespace
