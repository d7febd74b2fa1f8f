#pragma once

// What a failed process left to read (a pod's termination message, a log tail), made readable:
// the worker's own error line first, libtorch's and glog's noise dropped. libtorch logs through
// glog before anything initialises it, so a rank's stderr often starts with
//   WARNING: Logging before InitGoogleLogging() is written to STDERR
//   W20261124 16:32:01.185420 17553 socket.cpp:601] [c10d] The client socket has failed to connect ...
// and ends with the line that says what went wrong, which every worker prints as it exits
// (worker/main.cpp): "trainbench-worker rank 3: <what>".

#include <string>
#include <string_view>

namespace trainbench {

struct FailureText {
  /// "trainbench-worker rank 3: ..." from its marker to the end of its line (the last such line:
  /// a worker prints its error as it exits); "" when the text has none.
  std::string error_line;
  /// The other lines, library noise dropped, joined by "; ": what precedes the error line on its
  /// own line ("rank 3 exited with code 1", node-launch's summary) and any other line. With an
  /// error line, every glog/c10 line goes (they repeat it); without, only warnings and info.
  std::string context;
};

/// Reads at most the last 8 KiB of `text` (termination messages hold 4 KiB).
FailureText read_failure_text(std::string_view text);

/// A line that says nothing of why the process failed: glog's "Logging before InitGoogleLogging"
/// notice, a glog or c10 warning or info line ("W20261124 16:32:01.185 17553 socket.cpp:601] ...",
/// "[W socket.cpp:601] ..."), a C++ backtrace line ("Exception raised from ...", "frame #3: ...").
bool is_library_noise(std::string_view line);

/// A glog- or c10-formatted line of any severity ("E20261124 ... socket.cpp:860] ...").
bool is_library_log_line(std::string_view line);

}  // namespace trainbench
