// The end of a followed stream (pods/log -f, watches): when the reader sees the end, no work of
// the stream may be left blocking a thread of the pplx pool. The pool's threads are joined at
// exit after the pool is stopped with whatever is still queued: a continuation of ours that waits
// for queued pool work then never ends, and the process hangs after its stream has ended (seen
// as `kubectl trainbench logs -f` not exiting after printing the container's last line, once in
// about 7 runs). Here the pool is one thread, so such a wait is a certain deadlock, not a race:
// after the stream has ended, that thread must still run the next task. (Before the fix both
// tests failed every time: either so, or the follow itself never ended, its wake-up being queued
// behind the blocked thread.)

#include <gtest/gtest.h>
#include <pplx/pplxtasks.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "fake_api_server.hpp"
#include "kube/client.hpp"
#include "kube/errors.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using namespace std::chrono_literals;

namespace {

// pplx's ambient scheduler, installed once per process (pplx allows no other): pplx's own (the
// cpprestsdk thread pool) unless a test has switched to a pool of one thread of its own.
// (pplx's interface has no virtual destructor; this one is never destroyed through it.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class SwitchableScheduler final : public pplx::scheduler_interface {
 public:
  static SwitchableScheduler& installed() {
    static const std::shared_ptr<SwitchableScheduler> instance = [] {
      auto s = std::make_shared<SwitchableScheduler>();
      pplx::set_ambient_scheduler(s);  // throws if some pplx work ran in this process before
      return s;
    }();
    return *instance;
  }

  void schedule(pplx::TaskProc_t proc, void* param) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (one_thread_) {
        queue_.emplace_back(proc, param);
        cv_.notify_all();
        return;
      }
    }
    pool_.schedule(proc, param);
  }

  void use_one_thread() {
    std::lock_guard<std::mutex> lock(mutex_);
    one_thread_ = true;
    thread_ = std::thread([this] { run(); });
  }

  /// Back to the pool: what is queued for the thread goes there, then the thread is joined (a
  /// task blocked there waiting for queued work then ends too).
  void use_pool() {
    std::deque<std::pair<pplx::TaskProc_t, void*>> left;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      one_thread_ = false;
      left.swap(queue_);
      cv_.notify_all();
    }
    for (const auto& [proc, param] : left) pool_.schedule(proc, param);
    thread_.join();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [this] { return !one_thread_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto [proc, param] = queue_.front();
      queue_.pop_front();
      lock.unlock();
      proc(param);
      lock.lock();
    }
  }

  pplx::default_scheduler_t pool_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::pair<pplx::TaskProc_t, void*>> queue_;
  bool one_thread_ = false;
  std::thread thread_;
};
#pragma GCC diagnostic pop

// pplx's tasks run on one thread for the lifetime of the object.
class OneThreadPool {
 public:
  OneThreadPool() : scheduler_(SwitchableScheduler::installed()) { scheduler_.use_one_thread(); }
  ~OneThreadPool() { release(); }
  OneThreadPool(const OneThreadPool&) = delete;
  OneThreadPool& operator=(const OneThreadPool&) = delete;

  /// Back to the pool (once): a task blocked on the thread is let go, a test can end.
  void release() {
    if (released_) return;
    released_ = true;
    scheduler_.use_pool();
  }

  /// Whether the thread runs a task posted now within `limit` (it is idle unless something
  /// blocks it); if not, the pool is released.
  bool runs_a_task_within(std::chrono::seconds limit) {
    auto ran = std::make_shared<std::promise<void>>();
    auto future = ran->get_future();
    // Kept until it runs: use_pool() hands it to the pool if it never did here.
    auto* keep = new std::shared_ptr<std::promise<void>>(ran);
    scheduler_.schedule(
        [](void* p) {
          auto* held = static_cast<std::shared_ptr<std::promise<void>>*>(p);
          (*held)->set_value();
          delete held;
        },
        keep);
    if (future.wait_for(limit) == std::future_status::ready) return true;
    release();
    return false;
  }

 private:
  SwitchableScheduler& scheduler_;
  bool released_ = false;
};

// Whether `f` is ready within `limit`; if not, the pool is released so that it can end (its
// destructor would wait for it).
template <typename T>
bool ends_within(std::future<T>& f, std::chrono::seconds limit, OneThreadPool& pool) {
  if (f.wait_for(limit) == std::future_status::ready) return true;
  pool.release();
  f.wait();
  return false;
}

// Follows the pod's log to its end; the text received.
std::string follow(const kube::Client& client) {
  kube::LogOptions o;
  o.follow = true;
  std::string text;
  client.pod_log("default", "p", o, [&text](const std::string& t) { text += t; });
  return text;
}

}  // namespace

// The stream's last data chunk is followed at once by the terminating chunk, as a container's
// last line is when it exits: the follow ends with all the text, and the completion of the
// response left no pool thread waiting (before the fix, the close of the body buffer waited there
// for its own continuation, queued behind it).
TEST(StreamEnd, ALogFollowToItsEndLeavesNoPoolThreadBlocked) {
  kubetest::FakeApiServer server([](const kubetest::FakeRequest& req, kubetest::FakeConnection& c) {
    EXPECT_EQ(req.param("follow"), "true");
    c.start_chunked(200, "text/plain");
    c.chunk("first line\n");
    c.chunk("last line\n");
    c.end_chunked();
  });
  OneThreadPool pool;
  {
    const kube::Client client(kubetest::fake_config(server.url()));
    auto followed = std::async(std::launch::async, [&client] { return follow(client); });
    ASSERT_TRUE(ends_within(followed, 30s, pool)) << "the follow did not end";
    EXPECT_EQ(followed.get(), "first line\nlast line\n");
    ASSERT_TRUE(pool.runs_a_task_within(10s))
        << "the pool's thread is still blocked by the ended stream: an exit now would hang joining it";
    // The connection is still usable afterwards (the stream was read to its end).
    auto again = std::async(std::launch::async, [&client] { return follow(client); });
    ASSERT_TRUE(ends_within(again, 30s, pool)) << "the second follow did not end";
    EXPECT_EQ(again.get(), "first line\nlast line\n");
  }
}

// A stream that fails mid-way (the connection drops without the terminating chunk) ends the
// same way: the reader gets the error, and the pool is not left blocked.
TEST(StreamEnd, ACutStreamFailsAndLeavesNoPoolThreadBlocked) {
  kubetest::FakeApiServer server([](const kubetest::FakeRequest&, kubetest::FakeConnection& c) {
    c.start_chunked(200, "text/plain");
    c.chunk("first line\n");
    c.close_after();
  });
  OneThreadPool pool;
  {
    const kube::Client client(kubetest::fake_config(server.url()));
    auto followed = std::async(std::launch::async, [&client] {
      std::string text;
      kube::LogOptions o;
      o.follow = true;
      try {
        client.pod_log("default", "p", o, [&text](const std::string& t) { text += t; });
      } catch (const kube::TransportError&) {
        return text + "<error>";
      }
      return text + "<end>";
    });
    ASSERT_TRUE(ends_within(followed, 30s, pool)) << "the follow did not end";
    EXPECT_EQ(followed.get(), "first line\n<error>");
    ASSERT_TRUE(pool.runs_a_task_within(10s)) << "the pool's thread is still blocked by the failed stream";
  }
}
