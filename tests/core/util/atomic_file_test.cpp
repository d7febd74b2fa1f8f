// core/util/atomic_file: the one atomic file write of the CLI and the worker.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/util/atomic_file.hpp"

namespace trainbench {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AtomicFile, ReplacesTheFileAndLeavesNoTemporary) {
  std::string dir_template = (fs::temp_directory_path() / "tb-atomic-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir_template.data()), nullptr);
  const fs::path dir = dir_template;
  const fs::path file = dir / "report.json";
  write_file_atomically(file.string(), "first\n");
  write_file_atomically(file.string(), std::string("second\0binary", 13));
  EXPECT_EQ(read(file), std::string("second\0binary", 13));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "a temporary file was left";

  // A directory that does not exist: the error names the file, and nothing is created.
  try {
    write_file_atomically((dir / "missing" / "x.svg").string(), "x");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cannot write " + (dir / "missing" / "x.svg").string(), 0), 0U) << e.what();
  }
  // The target is a directory: the rename fails, and the temporary file is removed.
  fs::create_directory(dir / "taken");
  EXPECT_THROW(write_file_atomically((dir / "taken").string(), "x"), std::runtime_error);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainbench
