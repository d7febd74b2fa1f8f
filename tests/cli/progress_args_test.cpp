// Unit tests of the CLI's small pieces: the progress line and the argument parser.
#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>

#include "cli/args.hpp"
#include "cli/progress.hpp"

namespace trainbench {
namespace {

ProgressRun sample_run() {
  ProgressRun r;
  r.number = 2;
  r.count = 3;
  r.label = "1M/2G";
  r.model = "mlp";
  r.world_size = 2;
  r.warmup_steps = 20;
  return r;
}

TEST(ProgressLine, StartingWarmupAndMeasure) {
  EXPECT_EQ(format_progress_line(sample_run(), std::nullopt), "run 2/3 [1M/2G mlp] starting 2 ranks");
  ProgressUpdate w{"warmup", 1, 5, 3, 20, 0.5};
  EXPECT_EQ(format_progress_line(sample_run(), w), "run 2/3 [1M/2G mlp] warmup 3/20 | 0.5 s/iter");
  ProgressUpdate m{"measure", 2, 5, 17, 100, 0.123};
  EXPECT_EQ(format_progress_line(sample_run(), m),
            "run 2/3 [1M/2G mlp] warmup 20/20 | measure repeat 2/5 step 17/100 | 0.123 s/iter");
}

TEST(ProgressLine, ParsesTheWorkersProgressFile) {
  auto p = parse_progress(R"({"phase":"measure","repeat":2,"repeats":5,"step":17,"steps":100,"secPerIter":0.25})");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->phase, "measure");
  EXPECT_EQ(p->repeat, 2);
  EXPECT_EQ(p->repeats, 5);
  EXPECT_EQ(p->step, 17);
  EXPECT_EQ(p->steps, 100);
  EXPECT_DOUBLE_EQ(p->sec_per_iter, 0.25);
  EXPECT_FALSE(parse_progress(""));
  EXPECT_FALSE(parse_progress(R"({"phase":"measure","step":1)"));  // torn write
  EXPECT_FALSE(parse_progress("[1,2]"));
}

TEST(ProgressDisplay, TtyRewritesOneLineInPlace) {
  std::ostringstream out;
  ProgressDisplay d(out, /*tty=*/true, 5.0, [] { return 0.0; });
  d.begin(sample_run());
  d.update({"measure", 1, 5, 1, 100, 0.1});
  d.end("done");
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1) << s;
  EXPECT_EQ(s.back(), '\n');
  EXPECT_NE(s.find("\rrun 2/3 [1M/2G mlp] done"), std::string::npos) << s;
}

TEST(ProgressDisplay, TtyLinesNeverWrap) {
  std::ostringstream out;
  ProgressDisplay d(out, /*tty=*/true, 5.0, [] { return 0.0; });
  d.set_width(40);
  d.begin(sample_run());
  d.update({"measure", 2, 5, 17, 100, 0.123});
  std::string s = out.str();
  for (std::size_t start = 0, cr; (cr = s.find('\r', start + 1)) != std::string::npos || start < s.size();
       start = cr) {
    const std::string segment = s.substr(start, cr == std::string::npos ? std::string::npos : cr - start);
    EXPECT_LE(segment.size(), 40u) << segment;  // '\r' + at most 39 columns
    if (cr == std::string::npos) break;
  }
}

TEST(ProgressDisplay, ShowsTheRunsTimeLeftAtItsMeasuredRate) {
  std::ostringstream out;
  double now = 0;
  ProgressDisplay d(out, /*tty=*/true, 5.0, [&now] { return now; });
  ProgressRun run = sample_run();
  run.steps = RunSteps{20, 5, 100};  // 520 steps
  d.begin(run);
  d.update({"warmup", 0, 5, 1, 20, 0.5});  // the first observation: no rate yet
  EXPECT_EQ(out.str().find("ETA"), std::string::npos) << out.str();
  now = 10;  // 20 more steps in 10 s: 0.5 s a step
  d.update({"measure", 1, 5, 1, 100, 0.5});
  EXPECT_EQ(steps_done({"measure", 1, 5, 1, 100, 0.5}, run.steps), 21);
  EXPECT_EQ(steps_done({"measure", 3, 5, 7, 100, 0.5}, run.steps), 227);
  const std::string s = out.str();
  EXPECT_NE(s.find("| 0.5 s/iter | ETA 4m10s"), std::string::npos) << s;  // 499 steps x 0.5 s = 249.5 s
}

TEST(ProgressDisplay, PlainOutputIsThrottled) {
  std::ostringstream out;
  double now = 0;
  ProgressDisplay d(out, /*tty=*/false, 5.0, [&now] { return now; });
  d.begin(sample_run());  // printed
  for (int step = 1; step <= 100; ++step) {
    now = step * 0.1;  // 10 s in all: at most two more lines
    d.update({"measure", 1, 1, step, 100, 0.1});
  }
  d.end("done");
  const std::string s = out.str();
  EXPECT_EQ(s.find('\r'), std::string::npos);
  const auto lines = std::count(s.begin(), s.end(), '\n');
  EXPECT_GE(lines, 3);
  EXPECT_LE(lines, 4) << s;
  EXPECT_NE(s.find("run 2/3 [1M/2G mlp] done\n"), std::string::npos) << s;
}

TEST(Args, ValuesFlagsAndPositionals) {
  auto a = parse_args({"job.yaml", "--json", "out.json", "--keep-logs=logs"}, {"--json", "--keep-logs"});
  EXPECT_EQ(a.positional, std::vector<std::string>{"job.yaml"});
  EXPECT_EQ(a.value("--json"), "out.json");
  EXPECT_EQ(a.value("--keep-logs"), "logs");
  EXPECT_FALSE(a.help);
  auto b = parse_args({"--help"}, {});
  EXPECT_TRUE(b.help);
  auto c = parse_args({"--", "--json"}, {"--json"});
  EXPECT_EQ(c.positional, std::vector<std::string>{"--json"});
  auto d = parse_args({"-"}, {});
  EXPECT_EQ(d.positional, std::vector<std::string>{"-"});
}

TEST(Args, Mistakes) {
  EXPECT_THROW(parse_args({"--nope"}, {"--json"}), UsageError);
  EXPECT_THROW(parse_args({"--json"}, {"--json"}), UsageError);
  EXPECT_THROW(parse_args({"--json="}, {"--json"}), UsageError);
  EXPECT_THROW(parse_args({"--json", "a", "--json", "b"}, {"--json"}), UsageError);
  EXPECT_THROW(parse_args({"--quiet=1"}, {}, {"--quiet"}), UsageError);
  try {
    parse_args({"--bogus"}, {});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--bogus"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainbench
