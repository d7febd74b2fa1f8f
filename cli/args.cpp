#include "cli/args.hpp"

namespace trainbench {

ParsedArgs parse_args(const std::vector<std::string>& args, const std::set<std::string>& value_options,
                      const std::set<std::string>& flag_options) {
  ParsedArgs out;
  bool options_done = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      out.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    std::string name = a, value;
    bool inline_value = false;
    if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    if (value_options.count(name)) {
      if (!inline_value) {
        if (i + 1 >= args.size()) throw UsageError("option " + name + " needs a value");
        value = args[++i];
      }
      if (value.empty()) throw UsageError("option " + name + " needs a non-empty value");
      if (out.values.count(name)) throw UsageError("option " + name + " given more than once");
      out.values[name] = value;
    } else if (flag_options.count(name)) {
      if (inline_value) throw UsageError("option " + name + " takes no value");
      out.flags.insert(name);
    } else {
      throw UsageError("unknown option " + name);
    }
  }
  return out;
}

}  // namespace trainbench
