#pragma once
// The BenchmarkJob corpus of tests/data (malformed-specs.yaml, valid-specs.yaml), shared by
// tests/core (core's parser), tests/crd (the CRD's schema) and tests/cli (the built
// `trainbench validate` against the schema). Header-only: each test binary includes it.

#include <cstdlib>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/spec/yaml_json.hpp"

namespace trainbench::testing_corpus {

struct SpecCase {
  std::string name;
  std::string yaml;      ///< the document, with `raw` notations decoded
  std::string field;     ///< malformed: the path core's message must name
  std::string fragment;  ///< malformed: and a fragment of the explanation
  std::string schema;    ///< malformed: rejects | semantic-only | not-a-document
  std::string reason;    ///< semantic-only / not-a-document: who refuses it
  std::string cel;       ///< a fragment of the CRD's CEL rule that refuses it
  std::string rule;      ///< semantic-only without cel: its row in docs/crd.md's core-only table
  std::string server;    ///< with `rule`: "refuses" when the API server itself refuses it (ObjectMeta,
                         ///< routing), else "" (the server accepts it, core refuses it)
  std::string problem;   ///< set when the table itself could not be read
};

inline void PrintTo(const SpecCase& c, std::ostream* os) { *os << c.name; }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A case with `raw: true` writes what a YAML table cannot hold: \xNN is the byte NN (invalid
/// UTF-8 for instance) and {{N*TEXT}} is TEXT repeated N times (a 100,000-digit number).
inline std::string decode_raw(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "\\x") == 0 && i + 4 <= s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 2, 2).c_str(), nullptr, 16));
      i += 4;
    } else if (s.compare(i, 2, "{{") == 0 && s.find("}}", i) != std::string::npos && s.find('*', i) < s.find("}}", i)) {
      const std::size_t star = s.find('*', i);
      const std::size_t end = s.find("}}", i);
      const long n = std::strtol(s.substr(i + 2, star - i - 2).c_str(), nullptr, 10);
      for (long k = 0; k < n; ++k) out += s.substr(star + 1, end - star - 1);
      i = end + 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

/// The cases of `file` under tests/data (`dir`); a table that cannot be read is one case whose
/// `problem` says why, so the tests fail instead of silently running nothing.
inline std::vector<SpecCase> load_cases(const std::string& dir, const std::string& file) {
  const std::string path = dir + "/" + file;
  std::vector<SpecCase> out;
  try {
    const nlohmann::json table = yaml_to_json(read_file(path));  // not a temporary: the loop keeps a reference
    for (const auto& c : table.at("cases")) {
      const auto str = [&c](const char* key) { return c.value(key, std::string()); };
      SpecCase sc{str("name"), str("yaml"), str("field"), str("fragment"), str("schema"), str("reason"), str("cel"),
                  str("rule"), str("server"), ""};
      if (c.value("raw", false)) sc.yaml = decode_raw(sc.yaml);
      out.push_back(std::move(sc));
    }
  } catch (const std::exception& e) {
    out.push_back({"table_unreadable", "", "", "", "", "", "", "", "", path + ": " + e.what()});
  }
  return out;
}

inline std::vector<SpecCase> malformed_cases(const std::string& dir) { return load_cases(dir, "malformed-specs.yaml"); }
inline std::vector<SpecCase> valid_cases(const std::string& dir) { return load_cases(dir, "valid-specs.yaml"); }

}  // namespace trainbench::testing_corpus
