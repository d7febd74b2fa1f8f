#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainbench {

/// A command-line mistake: the CLI prints it with the command's usage and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  ///< "--json" -> "out.json"
  std::set<std::string> flags;                ///< "--help"
  bool help = false;                          ///< -h / --help seen

  bool has(const std::string& opt) const { return values.count(opt) > 0 || flags.count(opt) > 0; }
  std::string value(const std::string& opt, const std::string& fallback = "") const {
    auto it = values.find(opt);
    return it == values.end() ? fallback : it->second;
  }
};

/// Parses `args` (the words after the subcommand). `value_options` take one argument, given as
/// `--opt VALUE` or `--opt=VALUE`; `flag_options` take none; `--` ends the options; -h and
/// --help are always accepted. Throws UsageError for unknown options, a missing value or an
/// option given twice.
ParsedArgs parse_args(const std::vector<std::string>& args, const std::set<std::string>& value_options,
                      const std::set<std::string>& flag_options = {});

}  // namespace trainbench
