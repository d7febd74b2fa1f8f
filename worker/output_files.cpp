#include "worker/output_files.hpp"

#include <cstring>

namespace trainbench::worker {

void write_float32_file(const std::string& path, const std::vector<float>& values) {
  static_assert(sizeof(float) == 4, "float must be 32 bits");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "TRAINBENCH_DUMP_PARAMS assumes a little-endian host"
#endif
  std::string bytes(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  write_file_atomically(path, bytes);
}

}  // namespace trainbench::worker
