#include "kube/config.hpp"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "kube/base64.hpp"
#include "kube/errors.hpp"
#include "kube/tls.hpp"

namespace trainbench::kube {
namespace {

constexpr const char* kDefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return base_dir + "/" + path;
}

// Reads a referenced file; `origin` is "<file>: <field>".
std::string read_file(const std::string& path, const std::string& origin) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError(origin + ": cannot read " + path + ": " + std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

// One kubeconfig file's entries of one section, by name.
struct Entry {
  YAML::Node body;   // the "cluster" / "user" / "context" map
  std::string file;  // the file it came from
  std::string field; // e.g. clusters["kind"].cluster
};

struct Merged {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context;
  std::string current_context_file;
  std::vector<std::string> files;
};

std::string scalar(const YAML::Node& map, const char* key, const std::string& file, const std::string& field) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return {};
  if (!v.IsScalar()) {
    throw ConfigError(file + ": " + (field.empty() ? std::string() : field + ".") + key + ": must be a string");
  }
  return v.Scalar();
}

bool boolean(const YAML::Node& map, const char* key, const std::string& file, const std::string& field) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return false;
  bool out = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) {
    throw ConfigError(file + ": " + field + "." + key + ": must be true or false");
  }
  return out;
}

void collect(const YAML::Node& root, const char* section, const char* body_key, const std::string& file,
             std::map<std::string, Entry>& into) {
  const YAML::Node list = root[section];
  if (!list || list.IsNull()) return;
  if (!list.IsSequence()) throw ConfigError(file + ": " + section + ": must be a list");
  std::size_t i = 0;
  for (const auto& item : list) {
    const std::string at = std::string(section) + "[" + std::to_string(i++) + "]";
    if (!item.IsMap()) throw ConfigError(file + ": " + at + ": must be a map with name and " + body_key);
    const std::string name = scalar(item, "name", file, at);
    if (name.empty()) throw ConfigError(file + ": " + at + ".name: is required");
    const std::string field = std::string(section) + "[" + in_quotes(name) + "]." + body_key;
    YAML::Node body = item[body_key];
    if (body && !body.IsNull() && !body.IsMap()) throw ConfigError(file + ": " + field + ": must be a map");
    if (!body || body.IsNull()) body = YAML::Node(YAML::NodeType::Map);
    into.emplace(name, Entry{body, file, field});  // first definition wins, as in kubectl
  }
}

void merge_file(const std::string& file, Merged& m) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    throw ConfigError(file + ": cannot read kubeconfig: " + std::strerror(errno ? errno : ENOENT));
  } catch (const YAML::Exception& e) {
    throw ConfigError(file + ": not valid YAML: " + e.what());
  }
  m.files.push_back(file);
  if (!root || root.IsNull()) return;
  if (!root.IsMap()) throw ConfigError(file + ": a kubeconfig must be a YAML map");
  const std::string kind = scalar(root, "kind", file, "");
  if (!kind.empty() && kind != "Config") throw ConfigError(file + ": kind: must be Config, got " + kind);
  collect(root, "clusters", "cluster", file, m.clusters);
  collect(root, "users", "user", file, m.users);
  collect(root, "contexts", "context", file, m.contexts);
  const std::string current = scalar(root, "current-context", file, "");
  if (m.current_context.empty() && !current.empty()) {
    m.current_context = current;
    m.current_context_file = file;
  }
}

// `<field>-data` (base64) or `<field>` (a file); both is an error, as in kubectl's validation.
std::string data_or_file(const Entry& e, const char* key, std::string* origin) {
  const std::string data_key = std::string(key) + "-data";
  const std::string data = scalar(e.body, data_key.c_str(), e.file, e.field);
  const std::string path = scalar(e.body, key, e.file, e.field);
  if (!data.empty() && !path.empty()) {
    throw ConfigError(e.file + ": " + e.field + ": both " + key + " and " + data_key + " are set; use one");
  }
  if (!data.empty()) {
    *origin = e.file + ": " + e.field + "." + data_key;
    std::string error;
    auto decoded = base64_decode(data, &error);
    if (!decoded) throw ConfigError(*origin + ": invalid base64: " + error);
    if (decoded->empty()) throw ConfigError(*origin + ": is empty");
    return *decoded;
  }
  if (!path.empty()) {
    const std::string resolved = resolve(dir_of(e.file), path);
    *origin = e.file + ": " + e.field + "." + key + " (" + resolved + ")";
    std::string content = read_file(resolved, e.file + ": " + e.field + "." + key);
    if (trim(content).empty()) throw ConfigError(*origin + ": the file is empty");
    return content;
  }
  return {};
}

void refuse(const Entry& e, const char* key, const std::string& why) {
  const YAML::Node v = e.body[key];
  if (v && !v.IsNull()) throw ConfigError(e.file + ": " + e.field + "." + key + ": " + why);
}

void apply_cluster(const Entry& e, ClientConfig& cfg) {
  if (boolean(e.body, "insecure-skip-tls-verify", e.file, e.field)) {
    throw ConfigError(e.file + ": " + e.field +
                      ".insecure-skip-tls-verify: true is refused: trainbench always verifies the API server's "
                      "certificate; set certificate-authority or certificate-authority-data instead");
  }
  refuse(e, "tls-server-name", "is not supported (the certificate must name the server's host)");
  refuse(e, "proxy-url", "is not supported");
  cfg.server = scalar(e.body, "server", e.file, e.field);
  if (cfg.server.empty()) throw ConfigError(e.file + ": " + e.field + ".server: is required");
  while (cfg.server.size() > 8 && cfg.server.back() == '/') cfg.server.pop_back();
  if (cfg.server.rfind("https://", 0) != 0) {
    throw ConfigError(e.file + ": " + e.field + ".server: " + cfg.server +
                      " is not an https:// URL (only verified TLS is supported)");
  }
  cfg.tls.ca_pem = data_or_file(e, "certificate-authority", &cfg.tls.ca_origin);
}

void apply_user(const Entry& e, ClientConfig& cfg) {
  refuse(e, "exec", "exec credential plugins are not supported; use a token, tokenFile or client certificate");
  refuse(e, "auth-provider", "auth providers are not supported; use a token, tokenFile or client certificate");
  refuse(e, "username", "basic authentication is not supported");
  refuse(e, "password", "basic authentication is not supported");
  refuse(e, "as", "impersonation is not supported");
  refuse(e, "as-groups", "impersonation is not supported");
  refuse(e, "as-uid", "impersonation is not supported");
  cfg.token = trim(scalar(e.body, "token", e.file, e.field));
  const std::string token_file = scalar(e.body, "tokenFile", e.file, e.field);
  if (cfg.token.empty() && !token_file.empty()) {
    // kubeconfig: `token` wins when both are set.
    cfg.token_file = resolve(dir_of(e.file), token_file);
    const std::string origin = e.file + ": " + e.field + ".tokenFile";
    if (trim(read_file(cfg.token_file, origin)).empty()) {
      throw ConfigError(origin + " (" + cfg.token_file + "): the token file is empty");
    }
  }
  cfg.tls.client_cert_pem = data_or_file(e, "client-certificate", &cfg.tls.client_cert_origin);
  cfg.tls.client_key_pem = data_or_file(e, "client-key", &cfg.tls.client_key_origin);
  if (cfg.tls.client_cert_pem.empty() != cfg.tls.client_key_pem.empty()) {
    throw ConfigError(e.file + ": " + e.field + ": client-certificate" +
                      (cfg.tls.client_cert_pem.empty() ? " is missing (client-key is set)"
                                                        : " is set but client-key is missing"));
  }
}

std::vector<std::string> split_paths(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : list) {
    if (c == ':') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

ClientConfig load_kubeconfig(const std::string& path, const std::string& context) {
  const auto paths = split_paths(path);
  if (paths.empty()) throw ConfigError("kubeconfig: no file given");
  Merged m;
  for (const auto& p : paths) {
    // As kubectl: in a list, files that do not exist are skipped; a single file must exist.
    if (paths.size() > 1 && !file_exists(p)) continue;
    merge_file(p, m);
  }
  if (m.files.empty()) throw ConfigError(path + ": none of these kubeconfig files exists");
  const std::string where = m.files.size() == 1 ? m.files.front() : path;

  std::string ctx_name = context;
  if (ctx_name.empty()) {
    if (m.current_context.empty()) {
      throw ConfigError(where + ": current-context: is not set; set it or name a context explicitly");
    }
    ctx_name = m.current_context;
  }
  auto ctx = m.contexts.find(ctx_name);
  if (ctx == m.contexts.end()) {
    const std::string field = context.empty() ? m.current_context_file + ": current-context" : where;
    throw ConfigError(field + ": no context named " + in_quotes(ctx_name));
  }
  const Entry& c = ctx->second;

  ClientConfig cfg;
  const std::string cluster_name = scalar(c.body, "cluster", c.file, c.field);
  if (cluster_name.empty()) throw ConfigError(c.file + ": " + c.field + ".cluster: is required");
  auto cluster = m.clusters.find(cluster_name);
  if (cluster == m.clusters.end()) {
    throw ConfigError(c.file + ": " + c.field + ".cluster: no cluster named " + in_quotes(cluster_name));
  }
  apply_cluster(cluster->second, cfg);

  const std::string user_name = scalar(c.body, "user", c.file, c.field);
  if (!user_name.empty()) {
    auto user = m.users.find(user_name);
    if (user == m.users.end()) {
      throw ConfigError(c.file + ": " + c.field + ".user: no user named " + in_quotes(user_name));
    }
    apply_user(user->second, cfg);
  }
  const std::string ns = scalar(c.body, "namespace", c.file, c.field);
  if (!ns.empty()) cfg.default_namespace = ns;
  cfg.source = "kubeconfig " + where + " (context " + ctx_name + ")";
  validate_config(cfg);
  return cfg;
}

ClientConfig load_in_cluster_config(const std::string& dir_arg) {
  std::string dir = dir_arg;
  if (dir.empty()) dir = env("TRAINBENCH_SERVICEACCOUNT_DIR");
  if (dir.empty()) dir = kDefaultServiceAccountDir;
  std::string host = env("KUBERNETES_SERVICE_HOST");
  const std::string port = env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    throw ConfigError("in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  ClientConfig cfg;
  cfg.server = "https://" + host + ":" + port;
  cfg.token_file = dir + "/token";
  if (trim(read_file(cfg.token_file, "in-cluster config: token")).empty()) {
    throw ConfigError("in-cluster config: token (" + cfg.token_file + "): the token file is empty");
  }
  cfg.tls.ca_origin = "in-cluster config: ca.crt (" + dir + "/ca.crt)";
  cfg.tls.ca_pem = read_file(dir + "/ca.crt", "in-cluster config: ca.crt");
  if (file_exists(dir + "/namespace")) {
    const std::string ns = trim(read_file(dir + "/namespace", "in-cluster config: namespace"));
    if (!ns.empty()) cfg.default_namespace = ns;
  }
  cfg.source = "in-cluster (" + dir + ")";
  validate_config(cfg);
  return cfg;
}

ClientConfig load_default_config(const std::string& context) {
  const std::string kubeconfig = env("KUBECONFIG");
  if (!kubeconfig.empty()) return load_kubeconfig(kubeconfig, context);
  if (context.empty() && !env("KUBERNETES_SERVICE_HOST").empty()) return load_in_cluster_config();
  const std::string home = env("HOME");
  if (home.empty()) throw ConfigError("no KUBECONFIG, not in a cluster, and HOME is not set");
  return load_kubeconfig(home + "/.kube/config", context);
}

void validate_config(const ClientConfig& config) {
  const std::string where = config.source.empty() ? "client config" : config.source;
  if (config.server.rfind("https://", 0) != 0 || config.server.size() <= 8) {
    throw ConfigError(where + ": server: " + (config.server.empty() ? "is required" : config.server) +
                      (config.server.empty() ? "" : " is not an https:// URL (only verified TLS is supported)"));
  }
  check_tls_material(config.tls);
}

}  // namespace trainbench::kube
