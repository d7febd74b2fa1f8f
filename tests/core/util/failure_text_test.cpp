// core/util/failure_text: the worker's own error line picked out of termination messages and log
// tails as pods leave them, libtorch's glog noise dropped (the texts are real ones, trimmed).
#include "core/util/failure_text.hpp"

#include <gtest/gtest.h>

namespace trainbench {
namespace {

// A rank that could not reach the store: glog's notice and c10d's error before the worker's line.
constexpr const char* kRankLog =
    "WARNING: Logging before InitGoogleLogging() is written to STDERR\n"
    "W20261124 16:32:01.185420 17553 socket.cpp:601] [c10d] The client socket has failed to connect to "
    "[trainer-1]:29500 (errno: 111 - Connection refused).\n"
    "E20261124 16:32:06.185420 17553 socket.cpp:860] [c10d] The client socket has timed out after 5s while "
    "trying to connect to (127.0.0.1, 9).\n"
    "trainbench-worker rank 1: The client socket has timed out after 5s while trying to connect to (127.0.0.1, 9).\n";

/// read_failure_text(text) gives this error line and context.
void expect_read(const std::string& text, const std::string& error_line, const std::string& context) {
  const FailureText f = read_failure_text(text);
  EXPECT_EQ(f.error_line, error_line) << text;
  EXPECT_EQ(f.context, context) << text;
}

TEST(FailureText, TheWorkersLineFromALogTailWithoutGlogNoise) {
  // The notice, the warning and the error that repeats the worker's line all go.
  expect_read(kRankLog,
              "trainbench-worker rank 1: The client socket has timed out after 5s while trying to connect to "
              "(127.0.0.1, 9).",
              "");
}

TEST(FailureText, NodeLaunchsTerminationMessageKeepsItsPrefixAsContext) {
  expect_read("rank 0 exited with code 2: trainbench-worker rank 0: allreduce.dtype bf16 is not supported\n",
              "trainbench-worker rank 0: allreduce.dtype bf16 is not supported", "rank 0 exited with code 2");
}

TEST(FailureText, NodeLaunchsLogEchoesTheLineOnce) {
  expect_read(
      "trainbench node-launch: node 0 of 2, ranks 0..1 of 4, master 127.1.1.1:29500\n"
      "trainbench node-launch: rank 0 exited with code 1: trainbench-worker rank 0: boom\n"
      "WARNING: Logging before InitGoogleLogging() is written to STDERR\n"
      "[W socket.cpp:601] [c10d] The client socket has failed to connect to [::ffff:127.1.1.1]:29500.\n"
      "trainbench-worker rank 0: boom\n",
      "trainbench-worker rank 0: boom",
      "trainbench node-launch: node 0 of 2, ranks 0..1 of 4, master 127.1.1.1:29500; "
      "trainbench node-launch: rank 0 exited with code 1");
}

TEST(FailureText, TheLastWorkerLineIsTheError) {
  // The master names itself "rank master"; an earlier line of the same shape is context.
  expect_read(
      "trainbench-worker rank master: first\nstore: lost a client\n"
      "trainbench-worker rank master: reading store key trainbench/result: timed out\n",
      "trainbench-worker rank master: reading store key trainbench/result: timed out",
      "trainbench-worker rank master: first; store: lost a client");
}

TEST(FailureText, WithoutAWorkerLineOnlyWarningsAndBacktracesGo) {
  expect_read(
      "WARNING: Logging before InitGoogleLogging() is written to STDERR\n"
      "I1124 16:32:01.185420 17553 ProcessGroupGloo.cpp:12] using gloo\n"
      "E1124 16:32:06.185420 17553 socket.cpp:860] [c10d] connect timed out\n"
      "Exception raised from connect at ../torch/csrc/distributed/c10d/socket.cpp:860 (most recent call "
      "first):\n"
      "frame #0: c10::Error::Error() + 0x1\n"
      "terminate called after throwing an instance of 'c10::Error'\n",
      "",
      "E1124 16:32:06.185420 17553 socket.cpp:860] [c10d] connect timed out; "
      "terminate called after throwing an instance of 'c10::Error'");
}

TEST(FailureText, NoiseIsRecognisedByItsShapeOnly) {
  EXPECT_TRUE(is_library_noise("WARNING: Logging before InitGoogleLogging() is written to STDERR"));
  EXPECT_TRUE(is_library_noise("W1124 16:32:01.185420 17553 socket.cpp:601] [c10d] failed to connect"));
  EXPECT_TRUE(is_library_noise("[W ProcessGroupGloo.cpp:694] Warning: Unable to resolve hostname"));
  EXPECT_FALSE(is_library_noise("E1124 16:32:01.185420 17553 socket.cpp:860] timed out"));
  EXPECT_FALSE(is_library_noise("Warning: the run is noisy"));
  EXPECT_FALSE(is_library_noise("W rank 3 is slow"));
  EXPECT_FALSE(is_library_noise("[Worker 3] started"));
  EXPECT_TRUE(is_library_log_line("E20261124 16:32:06.185420 17553 socket.cpp:860] [c10d] timed out"));
  EXPECT_FALSE(is_library_log_line("trainbench-worker rank 1: E1124"));
}

TEST(FailureText, ReadsOnlyTheLast8KiB) {
  std::string text(20000, 'x');
  text += "\ntrainbench-worker rank 2: out of memory\n";
  const FailureText f = read_failure_text(text);
  EXPECT_EQ(f.error_line, "trainbench-worker rank 2: out of memory");
  EXPECT_EQ(f.context, std::string(8 * 1024 - 41, 'x')) << "the first 20000 - 8151 x's are not read";
}

TEST(FailureText, EmptyTextGivesNothing) { expect_read("", "", ""); }

}  // namespace
}  // namespace trainbench
