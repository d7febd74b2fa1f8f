// YAML to JSON (core::yaml_to_json, used by `trainbench submit` and the CRD tests). Only
// std::runtime_error may come out (not std::out_of_range or a yaml-cpp or nlohmann exception);
// what it returns must be JSON that can be written (valid UTF-8) and read back: JSON text is
// YAML, so yaml_to_json(dump(j)) == j, and json_to_yaml(j) must read back as j as well.

#include "core/spec/yaml_json.hpp"
#include "fuzz/fuzz_util.hpp"

#include <cmath>
#include <stdexcept>

namespace {

// .inf and .nan are YAML floats JSON cannot carry (dump() writes null): reported, see
// fuzz/README.md, and kept out of the round trip.
// YAML limits an implicit key to 1024 characters, so a longer key written as JSON or by
// json_to_yaml does not read back (no key the product reads is that long): out of the round trip.
bool has_long_key(const nlohmann::json& j) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if (nlohmann::json(key).dump().size() > 1000 || has_long_key(value)) return true;
    }
  } else if (j.is_array()) {
    for (const auto& item : j) {
      if (has_long_key(item)) return true;
    }
  }
  return false;
}

bool has_non_finite(const nlohmann::json& j) {
  if (j.is_number_float()) return !std::isfinite(j.get<double>());
  for (const auto& item : j) {
    if ((item.is_structured() || item.is_number_float()) && has_non_finite(item)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainbench;
  nlohmann::json j;
  try {
    j = yaml_to_json(fuzz::as_string(data, size));
  } catch (const std::runtime_error&) {
    return 0;
  }
  std::string text;
  try {
    text = j.dump();
  } catch (const nlohmann::json::exception& e) {
    fuzz::fail(__FILE__, __LINE__, std::string("yaml_to_json returned JSON that cannot be written: ") + e.what());
  }
  if (has_non_finite(j) || has_long_key(j)) return 0;
  try {
    FUZZ_CHECK(yaml_to_json(text) == j, "yaml_to_json(dump(j)) != j for " + text);
    const std::string yaml = json_to_yaml(j);
    FUZZ_CHECK(yaml_to_json(yaml) == j, "yaml_to_json(json_to_yaml(j)) != j for " + text + "\nYAML:\n" + yaml);
  } catch (const std::runtime_error& e) {
    fuzz::fail(__FILE__, __LINE__, "re-reading " + text + " failed: " + e.what());
  }
  return 0;
}
