// kubesim: an API-server emulator with a kubelet simulator, for testing without a cluster.
//
//   kubesim --listen 127.0.0.1:0 --dir DIR [--kubelet process|fake|none] [--node NAME[:k=v,...]]...
//           [--bookmark-interval SECONDS] [--max-grace SECONDS] [--dns-wait SECONDS] [--podnet-lib PATH]
//           [--prometheus-sd FILE]
//           [--watch-history EVENTS] [--no-aggregated-discovery] [--net-block K] [--faults JSON|@FILE]
//           [--node-monitor-grace SECONDS]
//           [--images buildah [--image-storage-root DIR] [--image-run-root DIR] [--image-storage-driver NAME]]
//
// Writes DIR/{ca.crt,ca.key,server.crt,server.key,kubeconfig,admin-token,audit.log}, prints
// "kubesim ready https://127.0.0.1:PORT" and serves until SIGTERM/SIGINT.

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <chrono>
#include <thread>
#include <atomic>
#include <iostream>
#include <memory>

#include "api.hpp"
#include "audit.hpp"
#include "auth.hpp"
#include "deployment_controller.hpp"
#include "gc.hpp"
#include "http.hpp"
#include "kubelet.hpp"
#include "runtime/netblock.hpp"
#include "replicaset_controller.hpp"
#include "server.hpp"
#include "runtime/tls.hpp"

using namespace kubesim;
using noderuntime::generate_test_pki;
using noderuntime::ImageStoreOptions;
using noderuntime::NetBlock;
using noderuntime::TlsFiles;

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "kubesim: %s\n"
               "usage: kubesim --listen HOST:PORT --dir DIR [--kubelet process|fake|none] [--node NAME[:k=v,...]]...\n"
               "               [--bookmark-interval SECONDS] [--max-grace SECONDS] [--dns-wait SECONDS]\n"
               "               [--podnet-lib PATH] [--prometheus-sd FILE]\n"
               "               [--watch-history EVENTS] [--no-aggregated-discovery] [--net-block K]\n"
               "               [--faults JSON|@FILE] [--node-monitor-grace SECONDS]\n"
               "               [--images buildah [--image-storage-root DIR] [--image-run-root DIR]\n"
               "                                 [--image-storage-driver NAME]]\n",
               why.c_str());
  std::exit(2);
}

NodeSpec parse_node(const std::string& arg) {
  NodeSpec n;
  auto colon = arg.find(':');
  n.name = arg.substr(0, colon);
  if (colon != std::string::npos) {
    for (const auto& kv : split(arg.substr(colon + 1), ',')) {
      if (kv.empty()) continue;
      auto eq = kv.find('=');
      n.labels[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
  }
  if (n.name.empty()) usage("empty node name in --node " + arg);
  return n;
}

std::string kubeconfig(const std::string& url, const std::string& ca_pem, const std::string& token) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: kubesim\n"
         "  cluster:\n"
         "    server: " + url + "\n"
         "    certificate-authority-data: " + base64_encode(ca_pem) + "\n"
         "users:\n"
         "- name: kubesim-admin\n"
         "  user:\n"
         "    token: " + token + "\n"
         "contexts:\n"
         "- name: kubesim\n"
         "  context:\n"
         "    cluster: kubesim\n"
         "    user: kubesim-admin\n"
         "    namespace: default\n"
         "current-context: kubesim\n"
         "preferences: {}\n";
}

/// --faults JSON|@FILE: the fault injection rules (README.md, "Fault injection").
void configure_faults(ApiServer& server, const std::string& arg) {
  const std::string text = arg[0] == '@' ? read_file(arg.substr(1)) : arg;
  json spec = json::parse(text, nullptr, false);
  if (spec.is_discarded()) usage("--faults: not valid JSON");
  try {
    server.faults().configure(spec);
  } catch (const ApiError& e) {
    usage("--faults: " + e.message());
  }
}

/// --images buildah: containers run from images in buildah's storage, which needs root.
void check_image_mode(const KubeletOptions& kopts) {
  if (!kopts.images) return;
  if (kopts.mode != KubeletMode::Process) usage("--images buildah needs --kubelet process");
  if (geteuid() != 0) {
    std::fprintf(stderr,
                 "kubesim: --images buildah runs containers in their images' root filesystems (mount namespaces, "
                 "overlayfs, pivot_root, setuid): it must run as root\n");
    std::exit(1);
  }
}

/// Shutdown is bounded (issue 12: once in CI a kubesim logged "shutting down" and never exited,
/// holding its test until ctest's timeout). Each step names itself; a step still running after
/// the bound makes a thread say which one on stderr, with every thread's kernel wait channel and
/// system call (/proc/self/task), and end the process with exit code 3. Malloc-free: whatever
/// holds the process up may hold the allocator.
constexpr int kShutdownBound = 10;  // seconds; a normal shutdown takes at most ~3 s (--max-grace)
/// More for image mode's buildah calls (`buildah umount`, `rm`): seconds, or as long as another
/// buildah holds the storage lock; what is not removed by then the next kubesim removes.
constexpr int kImageReleaseBound = 15;

class ShutdownWatchdog {
 public:
  explicit ShutdownWatchdog(int seconds) {
    std::thread([seconds] {
      int waited = 0;
      for (int more = seconds; more > 0; more = extra_.exchange(0)) {  // extend() adds to the bound
        std::this_thread::sleep_for(std::chrono::seconds(more));
        waited += more;
      }
      char line[256];
      std::snprintf(line, sizeof line, "kubesim: shutdown stuck for %d s %s; threads (tid comm wchan syscall):\n",
                    waited, step_.load());
      say(line);
      say_threads();
      _exit(3);
    }).detach();
  }
  void step(const char* what) { step_.store(what); }
  /// A step that may take longer (buildah waiting for its storage lock) moves the bound on.
  void extend(int seconds) { extra_ += seconds; }
  static void say(const char* text) {
    if (::write(2, text, std::strlen(text)) < 0) {
      // nowhere else to say it
    }
  }

 private:
  static void say_file(const char* path) {
    char buf[128];
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return;
    buf[n] = '\0';
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') buf[i] = ' ';
    }
    say(buf);
    say(" ");
  }
  static void say_threads() {
    const int dir = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    char ents[4096];
    for (long n; (n = ::syscall(SYS_getdents64, dir, ents, sizeof ents)) > 0;) {
      for (long off = 0; off < n;) {
        const auto* e = reinterpret_cast<const dirent64*>(ents + off);
        off += e->d_reclen;
        if (e->d_name[0] == '.') continue;
        char path[96];
        say("  ");
        say(e->d_name);
        say(" ");
        for (const char* f : {"comm", "wchan", "syscall"}) {
          std::snprintf(path, sizeof path, "/proc/self/task/%s/%s", e->d_name, f);
          say_file(path);
        }
        say("\n");
      }
    }
    ::close(dir);
  }
  static inline std::atomic<const char*> step_{"before its first step"};  // static: outlives main's frame
  static inline std::atomic<int> extra_{0};
};

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0", dir;
  KubeletOptions kopts;
  ServerOptions sopts;
  std::size_t history = 20000;
  std::optional<std::string> podnet;
  std::string prometheus_sd;
  int net_block = 0;   // 0: the first free one
  std::string faults;  // JSON, or @FILE
  ImageStoreOptions image_store;
  std::string images = "none";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + a);
      return argv[++i];
    };
    try {
      if (a == "--listen") listen = value();
      else if (a == "--dir") dir = value();
      else if (a == "--kubelet") {
        std::string m = value();
        if (m == "process") kopts.mode = KubeletMode::Process;
        else if (m == "fake") kopts.mode = KubeletMode::Fake;
        else if (m == "none") kopts.mode = KubeletMode::None;
        else usage("--kubelet must be process, fake or none");
      } else if (a == "--node") kopts.nodes.push_back(parse_node(value()));
      else if (a == "--node-monitor-grace") kopts.node_grace_s = std::stod(value());
      else if (a == "--bookmark-interval") sopts.bookmark_interval_s = std::stod(value());
      else if (a == "--max-grace") kopts.max_grace_s = std::stod(value());
      else if (a == "--dns-wait") kopts.dns_wait_s = std::stod(value());
      else if (a == "--watch-history") history = std::stoul(value());
      else if (a == "--no-aggregated-discovery") sopts.aggregated_discovery = false;
      else if (a == "--podnet-lib") podnet = value();
      else if (a == "--prometheus-sd") prometheus_sd = value();
      else if (a == "--faults")
        faults = value();
      else if (a == "--images") {
        images = value();
        if (images != "buildah" && images != "none") usage("--images must be buildah or none");
      } else if (a == "--image-storage-root")
        image_store.root = value();
      else if (a == "--image-run-root")
        image_store.run_root = value();
      else if (a == "--image-storage-driver")
        image_store.driver = value();
      else if (a == "--net-block") {
        net_block = std::stoi(value());
        if (net_block < NetBlock::kFirst || net_block > NetBlock::kLast) usage("--net-block must be 1..254");
      } else if (a == "--help" || a == "-h")
        usage("help");
      else usage("unknown argument " + a);
    } catch (const std::logic_error&) {  // std::stoi's invalid_argument and out_of_range
      usage("bad value for " + a);
    }
  }
  if (dir.empty()) usage("--dir is required");
  if (kopts.nodes.empty()) kopts.nodes.push_back({"node-1", {}});
  if (images == "buildah") kopts.images = image_store;
  check_image_mode(kopts);
  // The pod network shim: next to this binary, else where the node runtime builds it;
  // --podnet-lib "" turns it off.
  if (podnet) {
    kopts.podnet_library = *podnet;
  } else {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const auto shim = self.parent_path() / "libnodeagent_podnet.so";
    if (!ec && std::filesystem::exists(shim, ec)) kopts.podnet_library = shim.string();
    else if (std::filesystem::exists(KUBESIM_PODNET_LIB, ec)) kopts.podnet_library = KUBESIM_PODNET_LIB;
  }

  // Signals: SIGTERM/SIGINT are taken by sigwait below; every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  try {
    std::filesystem::create_directories(dir);
    dir = std::filesystem::absolute(dir).string();
    TlsFiles tls = generate_test_pki(dir);
    std::string ca_pem = read_file(tls.ca_cert);
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) usage("--listen must be HOST:PORT");
    std::string host = listen.substr(0, colon);
    unsigned short port = static_cast<unsigned short>(std::stoi(listen.substr(colon + 1)));

    // This instance's own pod and node IPs (127.K.0.0/16), held until the process ends.
    NetBlock block = NetBlock::claim(net_block);
    kopts.ip_prefix = block.prefix();
    std::fprintf(stderr, "kubesim: pod and node IPs from %s\n", block.cidr().c_str());

    TokenAuthority tokens;
    write_file_atomic(dir + "/admin-token", tokens.admin_token() + "\n", 0600);
    Store store(history);
    TypeRegistry types;
    Authorizer authz(store);
    AuditLog audit(dir + "/audit.log");
    ApiConfig config;
    config.ca_pem = ca_pem;
    Api api(store, types, authz, config);

    std::unique_ptr<ApiServer> handler;
    HttpsServer http(host, port, tls.server_cert, tls.server_key,
                     [&handler](const HttpRequest& req, HttpResponder& res) { handler->handle(req, res); });
    config.server_host = host == "0.0.0.0" ? "127.0.0.1" : host;
    config.server_port = http.port();
    api.set_config(config);
    std::string address = config.server_host + ":" + std::to_string(http.port());
    std::string url = "https://" + address;
    sopts.address = address;
    kopts.dir = dir;

    api.bootstrap();
    write_file_atomic(dir + "/kubeconfig", kubeconfig(url, ca_pem, tokens.admin_token()), 0600);

    GarbageCollector gc(api);
    gc.start();
    DeploymentController deployments(api);
    deployments.start();
    ReplicaSetController replicasets(api);
    replicasets.start();
    Kubelet kubelet(api, tokens, kopts);
    kubelet.start();
    handler = std::make_unique<ApiServer>(api, tokens, audit, &kubelet, sopts);
    if (!faults.empty()) configure_faults(*handler, faults);
    http.start();

    // Prometheus file-based service discovery: the running pods' ports, rewritten (atomically)
    // whenever they change; Prometheus re-reads the file on change (inotify).
    std::atomic<bool> sd_stop{false};
    std::thread sd_writer;
    if (!prometheus_sd.empty()) {
      write_file_atomic(prometheus_sd, "[]\n", 0644);
      sd_writer = std::thread([&] {
        std::string last = "[]\n";
        while (!sd_stop) {
          const std::string now = kubelet.scrape_targets().dump(1) + "\n";
          if (now != last) {
            write_file_atomic(prometheus_sd, now, 0644);
            last = now;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
      });
    }

    std::printf("kubesim ready %s\n", url.c_str());
    std::fflush(stdout);

    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "kubesim: %s, shutting down\n", strsignal(sig));
    ShutdownWatchdog watchdog(kShutdownBound);
    watchdog.step("stopping the Prometheus SD writer");
    sd_stop = true;
    if (sd_writer.joinable()) sd_writer.join();
    watchdog.step("closing the listener");
    http.stop();
    watchdog.step("stopping the replicaset and deployment controllers");
    replicasets.stop();  // no new pods while the kubelet stops
    deployments.stop();
    watchdog.step("stopping the kubelet");
    kubelet.stop();
    watchdog.step("removing the images' root filesystems (buildah)");
    watchdog.extend(kImageReleaseBound);
    kubelet.release_images();
    watchdog.step("stopping the garbage collector");
    gc.stop();
    watchdog.step("flushing stdio");
    std::fflush(nullptr);
    watchdog.say("kubesim: stopped\n");
    _exit(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kubesim: %s\n", e.what());
    return 1;
  }
}
