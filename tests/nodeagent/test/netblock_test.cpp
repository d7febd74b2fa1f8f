// The net-block allocator (runtime/netblock.hpp): each node agent on a machine owns one loopback
// block 127.K.0.0/16 for its node and pods, claimed with flock() so that processes started side
// by side (ctest -j) never share one and a killed holder's block is free again. Between real
// processes (fork), and through trainbench-nodeagent's --net-block (claimed first thing, before
// the agent talks to any API server, so no control plane is needed here).
// Ported from kubesim's KubesimNetBlock.* (tests/kubesim/test/netblock_test.cpp).

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/netblock.hpp"

using noderuntime::NetBlock;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/netblock-test.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

/// A child process that claims block `k` (0: the first free) in `lock_dir` once `go` is readable,
/// writes the block it got (or 0) to `report` and then holds it until killed or `release` closes.
struct Holder {
  pid_t pid = -1;
  int report = -1;   // parent reads the block here
  int release = -1;  // parent closes this to let the child exit
};

Holder spawn_holder(int k, const std::string& lock_dir, int go_fd) {
  int rep[2], rel[2];
  if (::pipe2(rep, O_CLOEXEC) != 0 || ::pipe2(rel, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Only our own ends stay open: the other children's pipes and the write end of `go` would
    // otherwise keep them from ever reading EOF.
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != go_fd && fd != rep[1] && fd != rel[0]) ::close(fd);
    }
    char c;
    if (go_fd >= 0 && ::read(go_fd, &c, 1) < 0) ::_exit(3);  // EOF when the parent closes its end
    int got = 0;
    std::optional<NetBlock> block;
    try {
      block.emplace(NetBlock::claim(k, lock_dir));
      got = block->block();
    } catch (const std::exception&) {
      got = 0;
    }
    if (::write(rep[1], &got, sizeof got) != static_cast<ssize_t>(sizeof got)) ::_exit(4);
    while (::read(rel[0], &c, 1) > 0) {
    }
    ::_exit(0);
  }
  ::close(rep[1]);
  ::close(rel[0]);
  return {pid, rep[0], rel[1]};
}

int read_block(const Holder& h) {
  int got = -1;
  if (::read(h.report, &got, sizeof got) != static_cast<ssize_t>(sizeof got)) return -1;
  return got;
}

int reap(Holder& h) {
  if (h.release >= 0) ::close(h.release);
  if (h.report >= 0) ::close(h.report);
  h.release = h.report = -1;
  int status = 0;
  ::waitpid(h.pid, &status, 0);
  return status;
}

std::string claim_error(int k, const std::string& lock_dir) {
  try {
    NetBlock b = NetBlock::claim(k, lock_dir);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

struct CmdResult {
  int code = -1;
  std::string out;  // stdout and stderr
};

CmdResult run_agent(const std::vector<std::string>& args) {
  std::string cmd = "'" NODEAGENT_EXE "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1";
  CmdResult r;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// Arguments that get the agent past option parsing to its net-block claim, and then fail at once
/// (no such control plane): nothing is created.
std::vector<std::string> agent_args(const std::string& block) {
  return {"--controlplane", "/nonexistent/netblock-test", "--node", "netblock-test", "--dir",
          "/nonexistent/netblock-test/dir", "--net-block", block};
}

}  // namespace

TEST(NetBlock, ProcessesClaimingAtOnceGetDisjointBlocks) {
  TempDir dir;
  constexpr int kProcesses = 6;
  int go[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  std::vector<Holder> holders;
  for (int i = 0; i < kProcesses; ++i) holders.push_back(spawn_holder(0, dir.path, go[0]));
  ::close(go[0]);
  ::close(go[1]);  // all start claiming now
  std::set<int> blocks;
  for (auto& h : holders) {
    const int b = read_block(h);
    EXPECT_GE(b, NetBlock::kFirst) << "a process got no block";
    EXPECT_LE(b, NetBlock::kLast);
    blocks.insert(b);
  }
  for (auto& h : holders) reap(h);
  EXPECT_EQ(blocks.size(), static_cast<size_t>(kProcesses)) << "two processes share a block";
  EXPECT_EQ(blocks.count(0), 0u) << "block 0 holds 127.0.0.1, this machine's own loopback address";

  // The addresses of a block: the node's 127.K.0.10+i, the pods' from 127.K.1.1.
  NetBlock b = NetBlock::claim(0, dir.path);
  const std::string k = std::to_string(b.block());
  EXPECT_EQ(b.prefix(), "127." + k + ".");
  EXPECT_EQ(b.cidr(), "127." + k + ".0.0/16");
  EXPECT_EQ(noderuntime::node_ip_in_block(b.prefix(), 0), "127." + k + ".0.10");
  EXPECT_EQ(noderuntime::pod_ip_in_block(b.prefix(), 0), "127." + k + ".1.1");
  EXPECT_EQ(noderuntime::pod_ip_in_block(b.prefix(), 254), "127." + k + ".2.1");
}

TEST(NetBlock, ExplicitBlockIsExclusiveAndFreedWhenTheHolderIsKilled) {
  TempDir dir;
  Holder holder = spawn_holder(NetBlock::kLast, dir.path, -1);
  ASSERT_EQ(read_block(holder), NetBlock::kLast);
  // Another process (this one) asking for the same block is refused at once, naming it.
  const std::string err = claim_error(NetBlock::kLast, dir.path);
  EXPECT_NE(err.find("net block " + std::to_string(NetBlock::kLast)), std::string::npos) << err;
  EXPECT_NE(err.find("held by another process"), std::string::npos) << err;
  {
    NetBlock other = NetBlock::claim(0, dir.path);  // the first free one is another
    EXPECT_NE(other.block(), NetBlock::kLast);
  }
  // SIGKILL (no clean-up runs): the kernel releases the lock with the process.
  ASSERT_EQ(::kill(holder.pid, SIGKILL), 0);
  const int status = reap(holder);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  NetBlock again = NetBlock::claim(NetBlock::kLast, dir.path);
  EXPECT_EQ(again.block(), NetBlock::kLast);
  EXPECT_EQ(again.prefix(), "127.254.");
}

TEST(NetBlock, TheAgentRefusesABlockHeldByAnotherAndTakesItOnceFree) {
  // The agent claims in the default lock directory, shared with every agent on this machine:
  // hold a block from the top of the range, which automatic claims (lowest free first) do not
  // reach while fewer than ~200 agents run.
  std::unique_ptr<NetBlock> held;
  for (int k = NetBlock::kLast; k > NetBlock::kLast - 20 && !held; --k) {
    try {
      held = std::make_unique<NetBlock>(NetBlock::claim(k));
    } catch (const std::exception&) {
      // held by another test run: try the next
    }
  }
  ASSERT_TRUE(held) << "no free block among the top 20";
  const std::string k = std::to_string(held->block());
  CmdResult r = run_agent(agent_args(k));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("net block " + k + " (127." + k + ".0.0/16) is held by another process"), std::string::npos)
      << r.out;
  held.reset();
  // Free: the agent gets past its claim (and then stops at the missing control plane).
  r = run_agent(agent_args(k));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out.find("net block"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot start"), std::string::npos) << r.out;
}

TEST(NetBlock, OutOfRangeBlockIsRefused) {
  TempDir dir;
  for (int bad : {-1, 255, 1000}) {
    const std::string err = claim_error(bad, dir.path);
    EXPECT_NE(err.find("out of range 1..254"), std::string::npos) << bad << ": " << err;
  }
  // The agent refuses them as usage errors, before anything is claimed or created.
  for (const char* bad : {"255", "-1", "x", "99999999999"}) {
    CmdResult r = run_agent(agent_args(bad));
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--net-block"), std::string::npos) << bad << ": " << r.out;
  }
}
