#include "harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace kubesim_test {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

bool wait_until(double timeout_s, const std::function<bool()>& pred) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0; }

namespace {

std::string make_temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/kubesim-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  return buf.data();
}

std::vector<std::string> env_with(const std::map<std::string, std::string>& add) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    auto eq = s.find('=');
    if (add.count(s.substr(0, eq))) continue;
    out.push_back(s);
  }
  for (const auto& kv : add) out.push_back(kv.first + "=" + kv.second);
  return out;
}

pid_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& in_path, const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> envs = env_with(env);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    int in = open(in_path.empty() ? "/dev/null" : in_path.c_str(), O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  return pid;
}

int wait_for(pid_t pid, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

CmdResult run_cmd(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                  const std::string& input, double timeout_s) {
  std::string dir = make_temp_dir();
  std::string in = dir + "/in", out = dir + "/out", err = dir + "/err";
  write_text(in, input);
  pid_t pid = spawn(argv, env, in, out, err);
  CmdResult r;
  r.code = wait_for(pid, timeout_s);
  r.out = read_text(out);
  r.err = read_text(err);
  fs::remove_all(dir);
  return r;
}

Background::Background(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                       const std::string& out_path)
    : out_path_(out_path) {
  pid_ = spawn(argv, env, "", out_path, out_path + ".err");
}

Background::~Background() { stop(); }

void Background::stop() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string Background::output() const { return read_text(out_path_); }

json HttpResult::j() const {
  try {
    return json::parse(body);
  } catch (const std::exception&) {
    return nullptr;
  }
}

Kubesim::Kubesim(const std::vector<std::string>& extra_args) {
  dir_ = make_temp_dir();
  std::vector<std::string> argv = {KUBESIM_EXE, "--listen", "127.0.0.1:0", "--dir", dir_ + "/sim",
                                   "--bookmark-interval", "1", "--max-grace", "2"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  pid_ = spawn(argv, {}, "", dir_ + "/kubesim.out", dir_ + "/kubesim.err");
  bool ready = wait_until(15, [&] { return read_text(dir_ + "/kubesim.out").find('\n') != std::string::npos; });
  std::string line = read_text(dir_ + "/kubesim.out");
  if (!ready || line.rfind("kubesim ready ", 0) != 0) {
    throw std::runtime_error("kubesim did not start: " + line + read_text(dir_ + "/kubesim.err"));
  }
  url_ = line.substr(std::strlen("kubesim ready "));
  url_ = url_.substr(0, url_.find('\n'));
  dir_ += "/sim";
  token_ = read_text(dir_ + "/admin-token");
  token_ = token_.substr(0, token_.find('\n'));
  fs::create_directories(dir_ + "/../home");
}

Kubesim::~Kubesim() {
  stop();
  std::error_code ec;
  fs::remove_all(fs::path(dir_).parent_path(), ec);
}

int Kubesim::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int code = wait_for(pid_, 15);
  pid_ = -1;
  return code;
}

std::map<std::string, std::string> Kubesim::kubectl_env() const {
  std::string base = fs::path(dir_).parent_path().string();
  return {{"HOME", base + "/home"}, {"KUBECACHEDIR", base + "/kubecache"}, {"KUBECONFIG", kubeconfig()}};
}

CmdResult Kubesim::kubectl(const std::vector<std::string>& args, const std::string& input, double timeout_s) const {
  return kubectl_bin(KUBESIM_KUBECTL, args, input, timeout_s);
}

CmdResult Kubesim::kubectl_bin(const std::string& exe, const std::vector<std::string>& args, const std::string& input,
                               double timeout_s) const {
  std::vector<std::string> argv = {exe, "--kubeconfig", kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto env = kubectl_env();
  if (exe != KUBESIM_KUBECTL) env["KUBECACHEDIR"] += "-" + fs::path(exe).parent_path().filename().string();
  return run_cmd(argv, env, input, timeout_s);
}

CmdResult Kubesim::apply(const std::string& yaml, const std::vector<std::string>& extra) const {
  std::vector<std::string> args = {"apply", "-f", "-"};
  args.insert(args.end(), extra.begin(), extra.end());
  return kubectl(args, yaml);
}

json Kubesim::get_json(const std::vector<std::string>& args) const {
  std::vector<std::string> a = {"get"};
  a.insert(a.end(), args.begin(), args.end());
  a.push_back("-o");
  a.push_back("json");
  CmdResult r = kubectl(a);
  if (r.code != 0) return nullptr;
  try {
    return json::parse(r.out);
  } catch (const std::exception&) {
    return nullptr;
  }
}

HttpResult Kubesim::http(const std::string& method, const std::string& path, const std::string& body,
                         const std::string& token, const std::string& content_type) const {
  std::vector<std::string> argv = {KUBESIM_CURL, "-s", "-S", "--max-time", "20", "-X", method, "--cacert", ca(),
                                   "-w", "\n%{http_code}"};
  std::string tok = token == "<admin>" ? token_ : token;
  if (!tok.empty()) {
    argv.push_back("-H");
    argv.push_back("Authorization: Bearer " + tok);
  }
  if (!body.empty()) {
    argv.push_back("-H");
    argv.push_back("Content-Type: " + content_type);
    argv.push_back("--data-binary");
    argv.push_back("@-");
  }
  argv.push_back(url_ + path);
  CmdResult r = run_cmd(argv, {}, body, 30);
  HttpResult h;
  auto nl = r.out.rfind('\n');
  if (nl != std::string::npos) {
    h.body = r.out.substr(0, nl);
    h.code = std::atoi(r.out.substr(nl + 1).c_str());
  }
  return h;
}

std::vector<json> Kubesim::audit() const {
  std::vector<json> out;
  std::istringstream in(read_text(dir_ + "/audit.log"));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

std::string widget_crd_yaml() {
  return R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.dev
spec:
  group: example.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Phase, type: string, jsonPath: .status.phase}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
              mode: {type: string, enum: [fast, slow], default: fast}
          status:
            type: object
            properties:
              phase: {type: string}
              runs: {type: integer}
)";
}

}  // namespace kubesim_test
