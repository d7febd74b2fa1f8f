#pragma once

// The images a node "has" (a node agent's, --images buildah): those in buildah's
// local storage.
// A container's `image:` is resolved as a container runtime resolves it against its own store
// (a name without a registry is looked up as localhost/NAME first, then as buildah resolves it;
// no tag means :latest), nothing is ever pulled. Each image used gets one read-only root
// filesystem, shared by every container that runs it: a buildah working container
// (`buildah from --pull=never` + `buildah mount`, named OWNER-rootfs-PID-N), made on first use
// and removed by close().

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace noderuntime {

struct ImageStoreOptions {
  std::string buildah = "buildah";
  std::string driver = "vfs";  ///< --storage-driver
  std::string root;            ///< --root ("": buildah's default, /var/lib/containers/storage)
  std::string run_root;        ///< --runroot ("": buildah's default)
  /// The program that owns the working containers: their names start with OWNER-rootfs-, and
  /// one whose PID no longer runs a program of this name (/proc/PID/comm) is stale.
  std::string owner = "trainbench-nodeagent";
};

/// What the runtime needs of an image: its resolved name and id, and its OCI config.
struct ImageConfig {
  std::string ref;     ///< the name found in the store, e.g. localhost/trainbench/worker:0.1.0
  std::string id;      ///< image id (hex)
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::vector<std::pair<std::string, std::string>> env;
  std::string working_dir;
  std::string user;
};

/// The image is not in the store (the message says which names were tried).
class ImageNotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ImageStore {
 public:
  explicit ImageStore(ImageStoreOptions opts);
  ~ImageStore();
  ImageStore(const ImageStore&) = delete;
  ImageStore& operator=(const ImageStore&) = delete;

  /// Throws std::runtime_error when buildah cannot be run. Starts removing, in the background,
  /// the working containers a killed owner left (OWNER-rootfs-PID-N, PID no OWNER now).
  void check();
  /// The image's config; throws ImageNotFound. An image found is remembered for the store's life
  /// (buildah waits for its storage lock while an image is being built: seconds, or minutes);
  /// one not found is looked for again on each call.
  ImageConfig inspect(const std::string& image);
  /// The image's shared read-only root filesystem (a directory), made on first use.
  std::string rootfs(const ImageConfig& image);
  /// Unmounts and removes every working container this store made.
  void close();

  /// The names tried for `image`, in order ("x" -> localhost/x:latest, x:latest).
  static std::vector<std::string> candidates(const std::string& image);

 private:
  struct Rootfs;
  std::vector<std::string> base_argv() const;
  std::string buildah_out(const std::vector<std::string>& args) const;
  void remove_stale_containers();
  std::string container_prefix() const { return opts_.owner + "-rootfs-"; }

  ImageStoreOptions opts_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Rootfs>> rootfs_;  // image id -> its working container
  std::map<std::string, ImageConfig> found_;               // image as named in pods -> its config
  int next_ = 0;
  std::thread stale_cleaner_;
};

}  // namespace noderuntime
