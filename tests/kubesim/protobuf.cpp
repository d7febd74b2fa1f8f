#include "protobuf.hpp"

#include <cstdint>
#include <map>
#include <vector>

#include "status.hpp"

namespace kubesim {

namespace {

enum class T { String, Int, Bool, Bytes, Message, MapSS, MapSB, Time };

struct Field {
  int num;
  const char* name;
  T type;
  bool repeated;
  const char* msg;
};

const std::map<std::string, std::vector<Field>>& schema() {
  static const std::map<std::string, std::vector<Field>> s = {
      {"TypeMeta", {{1, "apiVersion", T::String, false, ""}, {2, "kind", T::String, false, ""}}},
      {"Unknown", {{1, "typeMeta", T::Message, false, "TypeMeta"}, {2, "raw", T::Bytes, false, ""},
                   {3, "contentEncoding", T::String, false, ""}, {4, "contentType", T::String, false, ""}}},
      {"ObjectMeta",
       {{1, "name", T::String, false, ""}, {2, "generateName", T::String, false, ""},
        {3, "namespace", T::String, false, ""}, {4, "selfLink", T::String, false, ""},
        {5, "uid", T::String, false, ""}, {6, "resourceVersion", T::String, false, ""},
        {7, "generation", T::Int, false, ""}, {8, "creationTimestamp", T::Time, false, ""},
        {9, "deletionTimestamp", T::Time, false, ""}, {10, "deletionGracePeriodSeconds", T::Int, false, ""},
        {11, "labels", T::MapSS, false, ""}, {12, "annotations", T::MapSS, false, ""},
        {13, "ownerReferences", T::Message, true, "OwnerReference"}, {14, "finalizers", T::String, true, ""}}},
      {"OwnerReference",
       {{1, "kind", T::String, false, ""}, {3, "name", T::String, false, ""}, {4, "uid", T::String, false, ""},
        {5, "apiVersion", T::String, false, ""}, {6, "controller", T::Bool, false, ""},
        {7, "blockOwnerDeletion", T::Bool, false, ""}}},
      {"ObjectReference",
       {{1, "kind", T::String, false, ""}, {2, "namespace", T::String, false, ""}, {3, "name", T::String, false, ""},
        {4, "uid", T::String, false, ""}, {5, "apiVersion", T::String, false, ""},
        {6, "resourceVersion", T::String, false, ""}, {7, "fieldPath", T::String, false, ""}}},
      {"LocalObjectReference", {{1, "name", T::String, false, ""}}},
      {"ConfigMap",
       {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "data", T::MapSS, false, ""},
        {3, "binaryData", T::MapSB, false, ""}, {4, "immutable", T::Bool, false, ""}}},
      {"Secret",
       {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "data", T::MapSB, false, ""},
        {3, "type", T::String, false, ""}, {4, "stringData", T::MapSS, false, ""}, {5, "immutable", T::Bool, false, ""}}},
      {"ServiceAccount",
       {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "secrets", T::Message, true, "ObjectReference"},
        {3, "imagePullSecrets", T::Message, true, "LocalObjectReference"},
        {4, "automountServiceAccountToken", T::Bool, false, ""}}},
      {"Namespace", {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "spec", T::Message, false, "NamespaceSpec"}}},
      {"NamespaceSpec", {{1, "finalizers", T::String, true, ""}}},
      {"DeleteOptions",
       {{1, "gracePeriodSeconds", T::Int, false, ""}, {2, "preconditions", T::Message, false, "Preconditions"},
        {3, "orphanDependents", T::Bool, false, ""}, {4, "propagationPolicy", T::String, false, ""},
        {5, "dryRun", T::String, true, ""}}},
      {"Preconditions", {{1, "uid", T::String, false, ""}, {2, "resourceVersion", T::String, false, ""}}},
      {"PolicyRule",
       {{1, "verbs", T::String, true, ""}, {2, "apiGroups", T::String, true, ""}, {3, "resources", T::String, true, ""},
        {4, "resourceNames", T::String, true, ""}, {5, "nonResourceURLs", T::String, true, ""}}},
      {"Role", {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "rules", T::Message, true, "PolicyRule"}}},
      {"ClusterRole",
       {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "rules", T::Message, true, "PolicyRule"},
        {3, "aggregationRule", T::Message, false, "AggregationRule"}}},
      {"AggregationRule", {{1, "clusterRoleSelectors", T::Message, true, "LabelSelector"}}},
      {"LabelSelector", {{1, "matchLabels", T::MapSS, false, ""}}},
      {"Subject",
       {{1, "kind", T::String, false, ""}, {2, "apiGroup", T::String, false, ""}, {3, "name", T::String, false, ""},
        {4, "namespace", T::String, false, ""}}},
      {"RoleRef", {{1, "apiGroup", T::String, false, ""}, {2, "kind", T::String, false, ""}, {3, "name", T::String, false, ""}}},
      {"RoleBinding",
       {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "subjects", T::Message, true, "Subject"},
        {3, "roleRef", T::Message, false, "RoleRef"}}},
      {"TokenRequest",
       {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "spec", T::Message, false, "TokenRequestSpec"}}},
      {"TokenRequestSpec",
       {{1, "audiences", T::String, true, ""}, {3, "boundObjectRef", T::Message, false, "BoundObjectReference"},
        {4, "expirationSeconds", T::Int, false, ""}}},
      {"BoundObjectReference",
       {{1, "kind", T::String, false, ""}, {2, "apiVersion", T::String, false, ""}, {3, "name", T::String, false, ""},
        {4, "uid", T::String, false, ""}}},
      {"TokenReview", {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "spec", T::Message, false, "TokenReviewSpec"}}},
      {"TokenReviewSpec", {{1, "token", T::String, false, ""}, {2, "audiences", T::String, true, ""}}},
      {"SelfSubjectReview", {{1, "metadata", T::Message, false, "ObjectMeta"}}},
      {"SelfSubjectAccessReview",
       {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "spec", T::Message, false, "SelfSubjectAccessReviewSpec"}}},
      {"SelfSubjectAccessReviewSpec",
       {{1, "resourceAttributes", T::Message, false, "ResourceAttributes"},
        {2, "nonResourceAttributes", T::Message, false, "NonResourceAttributes"}}},
      {"SubjectAccessReview",
       {{1, "metadata", T::Message, false, "ObjectMeta"}, {2, "spec", T::Message, false, "SubjectAccessReviewSpec"}}},
      {"SubjectAccessReviewSpec",
       {{1, "resourceAttributes", T::Message, false, "ResourceAttributes"},
        {2, "nonResourceAttributes", T::Message, false, "NonResourceAttributes"}, {3, "user", T::String, false, ""},
        {4, "groups", T::String, true, ""}, {6, "uid", T::String, false, ""}}},
      {"ResourceAttributes",
       {{1, "namespace", T::String, false, ""}, {2, "verb", T::String, false, ""}, {3, "group", T::String, false, ""},
        {4, "version", T::String, false, ""}, {5, "resource", T::String, false, ""},
        {6, "subresource", T::String, false, ""}, {7, "name", T::String, false, ""}}},
      {"NonResourceAttributes", {{1, "path", T::String, false, ""}, {2, "verb", T::String, false, ""}}},
  };
  return s;
}

const std::map<std::string, std::string>& top_level() {
  static const std::map<std::string, std::string> m = {
      {"v1/ConfigMap", "ConfigMap"},
      {"v1/Secret", "Secret"},
      {"v1/ServiceAccount", "ServiceAccount"},
      {"v1/Namespace", "Namespace"},
      {"v1/DeleteOptions", "DeleteOptions"},
      {"meta.k8s.io/v1/DeleteOptions", "DeleteOptions"},
      {"rbac.authorization.k8s.io/v1/Role", "Role"},
      {"rbac.authorization.k8s.io/v1/ClusterRole", "ClusterRole"},
      {"rbac.authorization.k8s.io/v1/RoleBinding", "RoleBinding"},
      {"rbac.authorization.k8s.io/v1/ClusterRoleBinding", "RoleBinding"},
      {"authentication.k8s.io/v1/TokenRequest", "TokenRequest"},
      {"authentication.k8s.io/v1/TokenReview", "TokenReview"},
      {"authentication.k8s.io/v1/SelfSubjectReview", "SelfSubjectReview"},
      {"authorization.k8s.io/v1/SelfSubjectAccessReview", "SelfSubjectAccessReview"},
      {"authorization.k8s.io/v1/SubjectAccessReview", "SubjectAccessReview"},
      {"authorization.k8s.io/v1/LocalSubjectAccessReview", "SubjectAccessReview"},
  };
  return m;
}

class Reader {
 public:
  Reader(const std::string& data) : d_(data) {}
  bool done() const { return pos_ >= d_.size(); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= d_.size()) throw bad_request("protobuf: truncated varint");
      auto b = static_cast<unsigned char>(d_[pos_++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw bad_request("protobuf: varint too long");
  }
  std::string bytes() {
    std::uint64_t n = varint();
    if (n > d_.size() - pos_) throw bad_request("protobuf: truncated field");
    std::string out = d_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  void skip(int wire) {
    if (wire == 0) varint();
    else if (wire == 1) pos_ += 8;
    else if (wire == 2) bytes();
    else if (wire == 5) pos_ += 4;
    else throw bad_request("protobuf: unsupported wire type");
  }

 private:
  const std::string& d_;
  std::size_t pos_ = 0;
};

json decode_message(const std::string& data, const std::string& type);

json decode_value(Reader& r, int wire, const Field& f) {
  switch (f.type) {
    case T::String:
      return r.bytes();
    case T::Bytes:
      return base64_encode(r.bytes());
    case T::Int:
      return static_cast<long long>(static_cast<std::int64_t>(r.varint()));
    case T::Bool:
      return r.varint() != 0;
    case T::Message:
      return decode_message(r.bytes(), f.msg);
    case T::Time: {
      json t = decode_message(r.bytes(), "Time");
      return rfc3339(Clock::from_time_t(static_cast<std::time_t>(t.value("seconds", 0LL))));
    }
    default:
      (void)wire;
      return nullptr;
  }
}

json decode_message(const std::string& data, const std::string& type) {
  json out = json::object();
  if (type == "Time") {
    Reader r(data);
    while (!r.done()) {
      std::uint64_t key = r.varint();
      int num = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
      if (num == 1 && wire == 0) out["seconds"] = static_cast<long long>(r.varint());
      else r.skip(wire);
    }
    return out;
  }
  auto it = schema().find(type);
  if (it == schema().end()) return out;
  Reader r(data);
  while (!r.done()) {
    std::uint64_t key = r.varint();
    int num = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    const Field* f = nullptr;
    for (const auto& x : it->second) {
      if (x.num == num) f = &x;
    }
    if (!f) {
      r.skip(wire);
      continue;
    }
    if (f->type == T::MapSS || f->type == T::MapSB) {
      std::string entry = r.bytes();
      Reader er(entry);
      std::string k, v;
      while (!er.done()) {
        std::uint64_t ek = er.varint();
        int en = static_cast<int>(ek >> 3), ew = static_cast<int>(ek & 7);
        if (en == 1 && ew == 2) k = er.bytes();
        else if (en == 2 && ew == 2) v = er.bytes();
        else er.skip(ew);
      }
      if (!out.contains(f->name)) out[f->name] = json::object();
      out[f->name][k] = f->type == T::MapSB ? base64_encode(v) : v;
      continue;
    }
    if (f->repeated && wire == 2 && (f->type == T::Int || f->type == T::Bool)) {
      // packed
      std::string packed = r.bytes();
      Reader pr(packed);
      while (!pr.done()) out[f->name].push_back(decode_value(pr, 0, *f));
      continue;
    }
    json v = decode_value(r, wire, *f);
    if (f->repeated) {
      out[f->name].push_back(v);
    } else {
      out[f->name] = v;
    }
  }
  return out;
}

}  // namespace

bool is_protobuf_content_type(const std::string& content_type) {
  return to_lower(content_type).find("application/vnd.kubernetes.protobuf") != std::string::npos;
}

json decode_k8s_protobuf(const std::string& body) {
  static const std::string magic("k8s\0", 4);
  if (body.compare(0, 4, magic) != 0) throw bad_request("protobuf: missing the k8s envelope");
  json unknown = decode_message(body.substr(4), "Unknown");
  std::string api_version = unknown.value("typeMeta", json::object()).value("apiVersion", "");
  std::string kind = unknown.value("typeMeta", json::object()).value("kind", "");
  auto it = top_level().find(api_version + "/" + kind);
  if (it == top_level().end()) {
    throw unsupported_media_type("application/vnd.kubernetes.protobuf",
                                 {"application/json", "application/yaml"});
  }
  json obj = decode_message(base64_decode(unknown.value("raw", "")), it->second);
  obj["apiVersion"] = api_version;
  obj["kind"] = kind;
  return obj;
}

}  // namespace kubesim
