// Each kubesim instance owns its own loopback block 127.K.0.0/16 for pod and node IPs
// (netblock.hpp), so instances started side by side (ctest -j) never hand out the same address.

#include <signal.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "harness.hpp"
#include "runtime/netblock.hpp"

using namespace kubesim_test;

namespace {

std::string ip_prefix(const Kubesim& sim) {
  HttpResult r = sim.http("GET", "/kubesim/v1/stats");
  EXPECT_EQ(r.code, 200) << r.body;
  return r.j()["kubelet"].value("ipPrefix", "");
}

std::string pod_yaml(const std::string& name) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: busybox\n    command: [sleep, "
         "'30']\n";
}

std::string pod_ip(const Kubesim& sim, const std::string& name) {
  std::string ip;
  wait_until(20, [&] {
    json p = sim.get_json({"pod", name});
    ip = p.is_object() ? p["status"].value("podIP", "") : "";
    return !ip.empty();
  });
  return ip;
}

/// A kubesim on an explicit block from the top of the range, which automatic claims (lowest free
/// first) do not reach while fewer than ~200 instances run.
std::unique_ptr<Kubesim> start_on_high_block(int* block) {
  for (int k = noderuntime::NetBlock::kLast; k > noderuntime::NetBlock::kLast - 20; --k) {
    try {
      auto sim =
          std::make_unique<Kubesim>(std::vector<std::string>{"--kubelet", "fake", "--net-block", std::to_string(k)});
      *block = k;
      return sim;
    } catch (const std::exception&) {
      // held by another test run: try the next
    }
  }
  return nullptr;
}

}  // namespace

TEST(KubesimNetBlock, InstancesStartedAtOnceGetDisjointRanges) {
  constexpr int kInstances = 3;
  std::vector<std::unique_ptr<Kubesim>> sims(kInstances);
  std::vector<std::thread> starters;
  for (int i = 0; i < kInstances; ++i) {
    starters.emplace_back([&sims, i] {
      sims[i] = std::make_unique<Kubesim>(std::vector<std::string>{"--kubelet", "fake"});
    });
  }
  for (auto& t : starters) t.join();
  std::set<std::string> prefixes, pod_ips, node_ips;
  for (const auto& sim : sims) {
    ASSERT_TRUE(sim);
    const std::string prefix = ip_prefix(*sim);
    ASSERT_EQ(prefix.rfind("127.", 0), 0u) << prefix;
    EXPECT_NE(prefix, "127.0.") << "block 0 holds 127.0.0.1, this machine's own loopback address";
    prefixes.insert(prefix);
    ASSERT_EQ(sim->apply(pod_yaml("p")).code, 0);
    const std::string ip = pod_ip(*sim, "p");
    EXPECT_EQ(ip.rfind(prefix, 0), 0u) << ip << " outside " << prefix << "0.0/16";
    pod_ips.insert(ip);
    json node = sim->get_json({"node", "node-1"});
    const std::string node_ip = node["status"]["addresses"][0].value("address", "");
    EXPECT_EQ(node_ip, prefix + "0.10");
    node_ips.insert(node_ip);
  }
  EXPECT_EQ(prefixes.size(), static_cast<size_t>(kInstances));
  EXPECT_EQ(pod_ips.size(), static_cast<size_t>(kInstances));
  EXPECT_EQ(node_ips.size(), static_cast<size_t>(kInstances));
}

TEST(KubesimNetBlock, ExplicitBlockIsExclusiveAndFreedWhenTheHolderIsKilled) {
  int k = 0;
  std::unique_ptr<Kubesim> holder = start_on_high_block(&k);
  ASSERT_TRUE(holder) << "no free block among the top 20";
  EXPECT_EQ(ip_prefix(*holder), "127." + std::to_string(k) + ".");
  ASSERT_EQ(holder->apply(pod_yaml("p")).code, 0);
  EXPECT_EQ(pod_ip(*holder, "p"), "127." + std::to_string(k) + ".1.1");

  // A second instance asking for the same block is refused at once, naming it.
  CmdResult second = run_cmd({KUBESIM_EXE, "--listen", "127.0.0.1:0", "--dir", holder->dir() + "/../second",
                              "--kubelet", "fake", "--net-block", std::to_string(k)},
                             {}, "", 10);
  EXPECT_EQ(second.code, 1) << second.err;
  EXPECT_NE(second.err.find("net block " + std::to_string(k)), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("held by another kubesim"), std::string::npos) << second.err;

  // SIGKILL (no clean-up runs): the kernel releases the lock with the process.
  ::kill(holder->pid(), SIGKILL);
  holder->stop();  // reaps it
  Kubesim again({"--kubelet", "fake", "--net-block", std::to_string(k)});
  EXPECT_EQ(ip_prefix(again), "127." + std::to_string(k) + ".");
}

TEST(KubesimNetBlock, OutOfRangeBlockIsRefused) {
  for (const char* bad : {"0", "255", "-1", "x", "99999999999"}) {
    CmdResult r = run_cmd(
        {KUBESIM_EXE, "--listen", "127.0.0.1:0", "--dir", "/nonexistent/never-created",  // refused before it is made
         "--net-block", bad},
        {}, "", 10);
    EXPECT_NE(r.code, 0) << bad;
    EXPECT_NE(r.err.find("--net-block"), std::string::npos) << bad << ": " << r.err;
  }
}
