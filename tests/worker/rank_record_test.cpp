// The per-rank record codec (worker/rank_record.hpp): the one row layout every paradigm
// gathers through. In-process, no libtorch.
#include "worker/rank_record.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace trainbench::worker {
namespace {

RankRecord trainer() {
  RankRecord r;
  r.rank = 3;
  r.node_rank = 1;
  r.local_rank = 1;
  r.peak_memory_bytes = 123456789012LL;
  r.initial_loss = 2.5;
  r.final_loss = 0.125;
  r.optimizer_state_bytes = 4096;
  r.parameter_count = 1000;
  r.stage = 2;
  r.bubble_fraction = 0.25;
  r.step_seconds = {{0.1, 0.2, 0.3}, {0.4, 0.5, 0.6}};
  r.compute_seconds = {{0.07, 0.15, 0.2}, {0.3, 0.25, 0.5}};
  r.communication_seconds = {{0.03, 0.05, 0.1}, {0.1, 0.25, 0.1}};
  return r;
}

TEST(RankRecord, ATrainerRoundTrips) {
  const RecordShape shape{2, 3, 0};
  const std::vector<double> row = encode_record(trainer(), shape);
  ASSERT_EQ(row.size(), shape.width());
  const RankRecord back = decode_record(row.data(), shape);
  const RankRecord want = trainer();
  EXPECT_EQ(back.role, RankRecord::Role::Trainer);
  EXPECT_EQ(back.rank, want.rank);
  EXPECT_EQ(back.node_rank, want.node_rank);
  EXPECT_EQ(back.local_rank, want.local_rank);
  EXPECT_EQ(back.peak_memory_bytes, want.peak_memory_bytes);
  EXPECT_EQ(back.initial_loss, want.initial_loss);
  EXPECT_EQ(back.final_loss, want.final_loss);
  EXPECT_EQ(back.optimizer_state_bytes, want.optimizer_state_bytes);
  EXPECT_EQ(back.parameter_count, want.parameter_count);
  EXPECT_EQ(back.stage, want.stage);
  EXPECT_EQ(back.bubble_fraction, want.bubble_fraction);
  EXPECT_EQ(back.step_seconds, want.step_seconds);
  EXPECT_EQ(back.compute_seconds, want.compute_seconds);
  EXPECT_EQ(back.communication_seconds, want.communication_seconds);
  EXPECT_TRUE(back.service_seconds.empty());
}

// Paradigm allreduce is pure communication: its rows carry no split, and a split in such a
// shape is a bug.
TEST(RankRecord, AShapeWithoutASplitCarriesNone) {
  RecordShape shape{2, 3, 0, false};
  EXPECT_EQ(shape.width() + 2 * 2 * 3, (RecordShape{2, 3, 0}.width()));
  RankRecord r = trainer();
  EXPECT_THROW(encode_record(r, shape), std::logic_error);
  r.compute_seconds.clear();
  r.communication_seconds.clear();
  const RankRecord back = decode_record(encode_record(r, shape).data(), shape);
  EXPECT_EQ(back.step_seconds, r.step_seconds);
  EXPECT_TRUE(back.compute_seconds.empty());
  EXPECT_TRUE(to_rank_result(back).compute_seconds.empty());
}

TEST(RankRecord, AServerRoundTripsAndATrainerOfTheSameRunIsPadded) {
  const RecordShape shape{2, 1, 2};  // one step per repeat, two trainers' requests each
  RankRecord server;
  server.role = RankRecord::Role::ParameterServer;
  server.rank = 3;
  server.rows = 40;
  server.lookups = 4;
  server.step_seconds = {{0.01}, {0.02}};
  server.service_seconds = {{1, 2}, {3, 4}};
  server.queue_seconds = {{5, 6}, {7, 8}};
  const RankRecord back = decode_record(encode_record(server, shape).data(), shape);
  EXPECT_EQ(back.role, RankRecord::Role::ParameterServer);
  EXPECT_EQ(back.rows, 40);
  EXPECT_EQ(back.lookups, 4);
  EXPECT_EQ(back.step_seconds, server.step_seconds);
  EXPECT_EQ(back.service_seconds, server.service_seconds);
  EXPECT_EQ(back.queue_seconds, server.queue_seconds);

  RankRecord t;
  t.step_seconds = {{0.5}, {0.6}};
  const std::vector<double> row = encode_record(t, shape);
  EXPECT_EQ(row.size(), encode_record(server, shape).size());
  EXPECT_EQ(decode_record(row.data(), shape).service_seconds, (std::vector<std::vector<double>>{{0, 0}, {0, 0}}));
}

TEST(RankRecord, ListsLongerThanTheShapeThrow) {
  EXPECT_THROW(encode_record(trainer(), RecordShape{2, 2, 0}), std::logic_error);
  EXPECT_THROW(encode_record(trainer(), RecordShape{1, 3, 0}), std::logic_error);
}

TEST(RankRecord, RecordsBecomeRanksAndServersInOrder) {
  RankRecord t0 = trainer();
  t0.rank = 0;
  RankRecord t1 = trainer();
  t1.rank = 1;
  RankRecord s;
  s.role = RankRecord::Role::ParameterServer;
  s.rank = 2;
  s.rows = 7;
  s.peak_memory_bytes = 99;
  s.step_seconds = {{0.3}};
  RunResult result;
  add_records(result, {t0, t1, s}, 2);
  ASSERT_EQ(result.ranks.size(), 2u);
  EXPECT_EQ(result.ranks[0].rank, 0);
  EXPECT_EQ(result.ranks[1].rank, 1);
  EXPECT_EQ(result.ranks[1].stage, 2);
  EXPECT_EQ(result.ranks[1].step_seconds, t1.step_seconds);
  EXPECT_EQ(result.ranks[1].compute_seconds, t1.compute_seconds);
  EXPECT_EQ(result.ranks[1].communication_seconds, t1.communication_seconds);
  ASSERT_EQ(result.servers.size(), 1u);
  EXPECT_EQ(result.servers[0].rank, 2);
  EXPECT_EQ(result.servers[0].server, 0);
  EXPECT_EQ(result.servers[0].rows, 7);
  EXPECT_EQ(result.servers[0].peak_memory_bytes, 99);
  EXPECT_EQ(result.servers[0].update_seconds, s.step_seconds);
}

// The utilization crosses the gather whole: a CPU rank's without GPU fields, a GPU rank's with
// them, none from a rank that measured none; and it reaches the result's ranks and servers.
TEST(RankRecord, UtilizationRoundTripsWithAndWithoutGpuFields) {
  const RecordShape shape{2, 3, 0};
  RankRecord r = trainer();
  EXPECT_FALSE(decode_record(encode_record(r, shape).data(), shape).utilization.has_value());
  RankUtilization u;
  u.cpu_cores = 1.25;
  u.peak_rss_bytes = 123456789012LL;
  u.network_bytes_per_step = 38440;
  r.utilization = u;
  RankRecord back = decode_record(encode_record(r, shape).data(), shape);
  ASSERT_TRUE(back.utilization.has_value());
  EXPECT_EQ(to_json(*back.utilization), to_json(u));
  EXPECT_FALSE(back.utilization->gpu_utilization.has_value());
  u.gpu_utilization = 0.875;
  u.gpu_memory_used_bytes = 7LL << 30;
  u.gpu_peak_allocated_bytes = 5LL << 30;
  r.utilization = u;
  back = decode_record(encode_record(r, shape).data(), shape);
  EXPECT_EQ(to_json(*back.utilization), to_json(u));
  EXPECT_EQ(to_json(*to_rank_result(back).utilization), to_json(u));
  back.role = RankRecord::Role::ParameterServer;
  EXPECT_EQ(to_json(*to_server_result(back, 2).utilization), to_json(u));
}

}  // namespace
}  // namespace trainbench::worker
