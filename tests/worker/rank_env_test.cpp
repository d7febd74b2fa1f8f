#include "worker/rank_env.hpp"

#include <gtest/gtest.h>

#include <map>

#include "worker/worker_error.hpp"

namespace {

using trainbench::worker::ConfigError;
using trainbench::worker::parse_rank_env;
using trainbench::worker::RankEnv;

using Vars = std::map<std::string, std::string>;

RankEnv parse(const Vars& vars) {
  return parse_rank_env([&vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

/// The message of the ConfigError parse() throws ("" when it does not throw).
std::string error_of(const Vars& vars) {
  try {
    parse(vars);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

Vars torchrun() {
  return {{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}, {"WORLD_SIZE", "8"},
          {"RANK", "5"},               {"LOCAL_RANK", "1"},      {"LOCAL_WORLD_SIZE", "4"},
          {"NODE_RANK", "1"}};
}

TEST(RankEnv, Torchrun) {
  const RankEnv r = parse(torchrun());
  EXPECT_EQ(r.source, "torchrun");
  EXPECT_EQ(r.master_addr, "10.0.0.1");
  EXPECT_EQ(r.master_port, 29500);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_world_size, 4);
  EXPECT_EQ(r.node_rank, 1);
}

TEST(RankEnv, GroupRankIsAnAliasOfNodeRank) {
  Vars v = torchrun();
  v.erase("NODE_RANK");
  v["GROUP_RANK"] = "1";
  EXPECT_EQ(parse(v).node_rank, 1);
  v["NODE_RANK"] = "0";
  EXPECT_NE(error_of(v).find("GROUP_RANK"), std::string::npos);
}

TEST(RankEnv, OptionalTorchrunVariablesDefault) {
  const RankEnv r = parse({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1234"}, {"WORLD_SIZE", "2"},
                           {"RANK", "1"}});
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_world_size, 2);
  EXPECT_EQ(r.node_rank, 0);
}

TEST(RankEnv, Slurm) {
  const RankEnv r = parse({{"MASTER_ADDR", "node1"}, {"MASTER_PORT", "29400"},
                           {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"},
                           {"SLURM_NODEID", "1"}, {"SLURM_NTASKS_PER_NODE", "2(x2)"}});
  EXPECT_EQ(r.source, "slurm");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.node_rank, 1);
  EXPECT_EQ(r.local_world_size, 2);
}

TEST(RankEnv, TorchrunWinsOverSlurm) {
  Vars v = torchrun();
  v["SLURM_PROCID"] = "0";
  v["SLURM_NTASKS"] = "1";
  EXPECT_EQ(parse(v).rank, 5);
}

TEST(RankEnv, MissingVariablesAreNamed) {
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"}) {
    Vars v = torchrun();
    v.erase(name);
    const std::string err = error_of(v);
    EXPECT_NE(err.find(name), std::string::npos) << name << ": " << err;
  }
  EXPECT_NE(error_of({}).find("RANK"), std::string::npos);
  const std::string slurm = error_of({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}, {"SLURM_PROCID", "0"}});
  EXPECT_NE(slurm.find("SLURM_NTASKS"), std::string::npos) << slurm;
}

TEST(RankEnv, GarbageValuesAreNamed) {
  for (const char* name : {"MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                           "NODE_RANK"}) {
    for (const char* bad : {"abc", "1.5", "", "3x", "99999999999999"}) {
      Vars v = torchrun();
      v[name] = bad;
      const std::string err = error_of(v);
      EXPECT_NE(err.find(name), std::string::npos) << name << "=" << bad << ": " << err;
    }
  }
  const std::string err = error_of({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"},
                                    {"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}});
  EXPECT_NE(err.find("SLURM_PROCID"), std::string::npos) << err;
}

TEST(RankEnv, OutOfRangeValuesAreNamed) {
  auto with = [](const char* name, const char* value) {
    Vars v = torchrun();
    v[name] = value;
    return error_of(v);
  };
  EXPECT_NE(with("RANK", "8").find("RANK"), std::string::npos);
  EXPECT_NE(with("RANK", "-1").find("RANK"), std::string::npos);
  EXPECT_NE(with("WORLD_SIZE", "0").find("WORLD_SIZE"), std::string::npos);
  EXPECT_NE(with("LOCAL_RANK", "4").find("LOCAL_RANK"), std::string::npos);
  EXPECT_NE(with("MASTER_PORT", "70000").find("MASTER_PORT"), std::string::npos);
  EXPECT_NE(with("MASTER_ADDR", "").find("MASTER_ADDR"), std::string::npos);
}

TEST(RankEnv, ParseInt) {
  using trainbench::worker::parse_int;
  EXPECT_EQ(parse_int(" 42 "), 42);
  EXPECT_EQ(parse_int("-3"), -3);
  EXPECT_FALSE(parse_int("4 2").has_value());
  EXPECT_FALSE(parse_int("").has_value());
  EXPECT_FALSE(parse_int("0x10").has_value());
}

}  // namespace
