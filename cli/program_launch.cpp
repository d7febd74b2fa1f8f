#include "cli/program_launch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/results/program_record.hpp"

namespace trainbench {
namespace {

/// The file's text, or nullopt when it does not exist; at most `max` bytes plus one are read
/// (so that a larger file is seen to be larger).
std::optional<std::string> read_bounded(const std::string& path, std::size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(max + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

}  // namespace

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string rank_record_file(const std::string& run_dir, int rank) {
  return run_dir + "/rank-" + std::to_string(rank) + ".record.json";
}

std::string resolve_program_executable(const ProgramSpec& program) {
  const std::string& name = program.command.at(0);
  if (name.find('/') != std::string::npos) {
    const std::string path = name[0] == '/' || program.working_dir.empty() ? name : program.working_dir + "/" + name;
    if (!is_executable_file(path)) {
      throw std::runtime_error("program.command[0] " + name + ": " + path + " is not an executable file");
    }
    return path;
  }
  const char* path_env = std::getenv("PATH");
  const std::string search = path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::istringstream dirs(search);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
  }
  throw std::runtime_error("program.command[0] " + name + ": no executable of that name on PATH (" + search + ")");
}

std::vector<std::string> program_argv(const ProgramSpec& program) {
  std::vector<std::string> argv = program.command;
  argv.insert(argv.end(), program.args.begin(), program.args.end());
  return argv;
}

RunOutcome read_program_result(const RunConfig& run, const std::string& run_dir) {
  RunOutcome o;
  std::vector<ProgramRankRecord> records;
  for (int rank = 0; rank < run.world_size(); ++rank) {
    const std::string file = rank_record_file(run_dir, rank);
    const auto text = read_bounded(file, kMaxRankRecordBytes);
    if (!text) {
      o.error = "rank " + std::to_string(rank) + " exited 0 without its rank record (" + file +
                "): the program never finished its probe (trainbench_probe.Probe.finish, or leaving its `with` "
                "block) after its last measured step, or does not use the probe (docs/workloads.md)";
      return o;
    }
    try {
      records.push_back(parse_program_rank_record(*text, run, rank));
    } catch (const std::exception& e) {
      o.error = "rank " + std::to_string(rank) + " wrote a bad rank record (" + file + "): " + e.what();
      return o;
    }
  }
  o.result = assemble_program_result(run, records);
  return o;
}

long long cap_log(const std::string& path, long long max_bytes) {
  struct stat st {};
  if (max_bytes <= 0 || ::stat(path.c_str(), &st) != 0 || st.st_size <= max_bytes) return 0;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return 0;
  if (::ftruncate(fd, 0) != 0) {
    ::close(fd);
    return 0;
  }
  const std::string note = "[trainbench: " + std::to_string(static_cast<long long>(st.st_size)) +
                           " bytes of this rank's output dropped here: a rank's log keeps at most " +
                           std::to_string(max_bytes >> 20) + " MiB]\n";
  const ssize_t w = ::write(fd, note.data(), note.size());
  (void)w;
  ::close(fd);
  return static_cast<long long>(st.st_size);
}

}  // namespace trainbench
