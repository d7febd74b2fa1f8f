#pragma once

// The wording shared by the spec reader (core/spec/spec_parse.cpp) and the validator
// (core/spec/spec_validate.cpp), and by the JSON readers' enum errors: one phrase per kind of problem.

#include <string>
#include <vector>

namespace trainbench::spec_messages {

/// `s` in double quotes, made printable (core/spec/spec_error.hpp).
std::string quote(const std::string& s);
/// "a, b, c".
std::string join_list(const std::vector<std::string>& items);
/// "must be one of [a, b, c], got "x"": a value outside a closed set.
std::string one_of_message(const std::vector<std::string>& allowed, const std::string& value);
/// A double as an error message shows it ("0.5", "-1", "inf").
std::string fmt_number(double v);
/// "" when `s` is valid UTF-8 of at most `max_length` characters (code points, as the API
/// server's maxLength counts), else why not.
std::string text_problem(const std::string& s, int max_length);

/// `pattern` (a core constant) matches all of `s`, tried only when `s` is at most `max_length`
/// bytes (std::regex recurses per character); each pattern is compiled once.
bool matches(const std::string& s, const char* pattern, int max_length);

}  // namespace trainbench::spec_messages
