// Shutdown: SIGTERM ends kubesim promptly whatever is in flight (issue 12: once in CI a kubesim
// logged "shutting down" and never exited, holding its test until ctest's timeout). A hang check,
// not a speed assertion: the bound is generous, a normal shutdown takes a few seconds at most.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "harness.hpp"

using namespace kubesim_test;

namespace {

std::string pod(const std::string& name, const std::string& command, const std::string& restart = "Never") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  restartPolicy: " + restart +
         "\n  terminationGracePeriodSeconds: 30\n  containers:\n  - name: main\n    image: busybox\n"
         "    command: [sh, -c, " +
         json(command).dump() + "]\n";
}

/// Processes whose working directory is one of this kubesim's pod directories.
int pod_processes(const std::string& sim_dir) {
  int n = 0;
  for (const auto& p : std::filesystem::directory_iterator("/proc")) {
    std::error_code ec;
    const auto cwd = std::filesystem::read_symlink(p.path() / "cwd", ec).string();
    if (!ec && cwd.rfind(sim_dir + "/pods/", 0) == 0) ++n;
  }
  return n;
}

}  // namespace

TEST(KubesimShutdown, SigtermWithWatchesOpenAndPodsRunningAndTerminatingExits) {
  Kubesim sim;
  const std::string dir = sim.dir();
  ASSERT_EQ(sim.apply(pod("sleeper", "sleep 300") + "---\n" + pod("stubborn", "trap '' TERM; sleep 300 & wait") +
                      "---\n" + pod("crasher", "sleep 0.3; exit 1", "Always") + "---\n" + pod("leaving", "sleep 300"))
                .code,
            0);
  auto running = [&](const std::string& name) {
    const json p = sim.get_json({"pod", name});
    return p.is_object() && p["status"].value("phase", "") == "Running";
  };
  ASSERT_TRUE(wait_until(30, [&] { return running("sleeper") && running("stubborn") && running("leaving"); }));
  const auto env = sim.kubectl_env();
  const std::vector<std::string> kc = {KUBESIM_KUBECTL, "--kubeconfig", sim.kubeconfig()};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), kc.begin(), kc.end());
    return args;
  };
  Background pods_watch(with({"get", "pods", "-w"}), env, dir + "/../w1.out");
  Background events_watch(with({"get", "events", "-w"}), env, dir + "/../w2.out");
  Background logs(with({"logs", "-f", "sleeper"}), env, dir + "/../w3.out");
  ASSERT_EQ(sim.kubectl({"delete", "pod", "leaving", "--wait=false"}).code, 0);  // terminating during shutdown
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_GT(pod_processes(dir), 0);

  const auto t0 = std::chrono::steady_clock::now();
  const int code = sim.stop();  // SIGTERM, then up to 15 s for the exit (-1: still running, SIGKILLed)
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(code, 0) << "after " << took << " s: " << read_text(dir + "/../kubesim.err");
  EXPECT_NE(read_text(dir + "/../kubesim.err").find("kubesim: stopped"), std::string::npos);
  EXPECT_TRUE(wait_until(5, [&] { return pod_processes(dir) == 0; })) << "pod processes outlived kubesim";
}
