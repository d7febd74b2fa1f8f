#include <gtest/gtest.h>

#include <string>

#include "core/spec/yaml_json.hpp"

namespace trainbench {
namespace {

using nlohmann::json;

TEST(YamlJson, TypesPlainScalarsLikeKubernetesClients) {
  const json j = yaml_to_json(
      "a: 1\nb: 1.5\nc: true\nd: ~\ne: eth0\nf: \"1\"\ng: '2'\nh: -3\ni: 1e3\nj: 500m\nk: [x, 2]\nl: {m: null}\n"
      "n: 99999999999\no: !!str 7\n");
  EXPECT_EQ(j.at("a"), 1);
  EXPECT_TRUE(j.at("a").is_number_integer());
  EXPECT_DOUBLE_EQ(j.at("b").get<double>(), 1.5);
  EXPECT_EQ(j.at("c"), true);
  EXPECT_TRUE(j.at("d").is_null());
  EXPECT_EQ(j.at("e"), "eth0");
  EXPECT_EQ(j.at("f"), "1");
  EXPECT_EQ(j.at("g"), "2");
  EXPECT_EQ(j.at("h"), -3);
  EXPECT_TRUE(j.at("i").is_number_float());
  EXPECT_EQ(j.at("j"), "500m");
  EXPECT_EQ(j.at("k"), json::array({"x", 2}));
  EXPECT_TRUE(j.at("l").at("m").is_null());
  EXPECT_EQ(j.at("n"), 99999999999LL);
  EXPECT_EQ(j.at("o"), "7");
}

TEST(YamlJson, RejectsBadYamlAndSeveralDocuments) {
  EXPECT_THROW(yaml_to_json("a: [unclosed\n"), std::runtime_error);
  EXPECT_THROW(yaml_to_json("a: 1\n---\nb: 2\n"), std::runtime_error);
}

TEST(YamlJson, EmitsYamlThatReadsBackTheSame) {
  const json j = {
      {"plain", "trainbench.dev/v1alpha1"},
      {"words", {"true", "False", "yes", "no", "on", "null", "~", "", "1", "1.5", "0x1F", ".inf", "-", "a: b", "# c",
                 "x #y", "'q'", "\"dq\"", "line\nbreak", "tab\there", "ünïcode", "[a]", "{b}", "*ref", "&anchor",
                 "!tag", "%pct", "@at", "`tick", ">fold", "|lit", " lead", "trail ", ".status.phase", "Best ex/s"}},
      {"numbers", {0, -7, 2147483647, 9007199254740993LL, 0.01, 25.0, 1e20, -2.5e-7}},
      {"bools", {true, false}},
      {"nothing", nullptr},
      {"empty object", json::object()},
      {"empty list", json::array()},
      {"nested", {{"list of objects", {{{"a", 1}, {"b", {{"c", json::array({1, 2})}}}}, {{"d", json::object()}}}},
                  {"list of lists", {json::array({1, 2}), json::array({json::array({"x"})}), json::array()}}}},
      {"x-kubernetes-preserve-unknown-fields", true},
  };
  const std::string yaml = json_to_yaml(j);
  EXPECT_EQ(yaml_to_json(yaml), j) << yaml;
  EXPECT_NE(yaml.find("plain: trainbench.dev/v1alpha1\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("- \"true\"\n"), std::string::npos) << yaml;
  EXPECT_EQ(json_to_yaml(json("x")), "x\n");
  EXPECT_EQ(json_to_yaml(json::object()), "{}\n");
}

}  // namespace
}  // namespace trainbench
