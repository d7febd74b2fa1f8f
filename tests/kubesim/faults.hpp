#pragma once

// API fault injection (README.md, "Fault injection"): rules chosen by verb, resource and
// User-Agent fail a seeded-random fraction of the requests they match, as a real API server or
// the network between it and a client can: 500 InternalError, 503 ServiceUnavailable, 429
// TooManyRequests with Retry-After (the real Status bodies), a connection reset before the
// request is applied or after it (the write happened, the client saw no answer), an answer
// slower than the client's timeout, and a watch stream cut in the middle of an event (half a
// JSON line, then the connection reset). Counters of what was injected are in /kubesim/v1/stats.

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "http.hpp"
#include "status.hpp"
#include "util.hpp"

namespace kubesim {

enum class FaultKind {
  kNone,
  kInternalError,
  kUnavailable,
  kTooManyRequests,
  kResetBefore,
  kResetAfter,
  kSlow,
  kWatchCut
};

struct FaultDecision {
  FaultKind kind = FaultKind::kNone;
  std::string name;          ///< the rule's "fault" value, for the audit log and counters
  double delay_s = 0;        ///< kSlow
  int retry_after_s = -1;    ///< the Retry-After header (429, 503, 500); -1: none
  int cut_after_events = 0;  ///< kWatchCut: whole events sent before the cut one
};

struct FaultRule {
  FaultKind kind = FaultKind::kNone;
  std::string name;
  std::set<std::string> verbs;      ///< empty: every verb
  std::set<std::string> resources;  ///< "pods" (any subresource) or "benchmarkjobs/status"; empty: all
  std::string user_agent;           ///< substring of the User-Agent; empty: every client
  double fraction = 1;
  double delay_s = 5;
  int retry_after_s = -1;
  int cut_after_events = 0;
  long long limit = -1;  ///< at most this many injections; -1: no limit
  long long injected = 0;
};

class FaultInjector {
 public:
  /// Replaces the rules and reseeds: {"seed": N, "rules": [{"fault": "500", "verbs": [...],
  /// "resources": [...], "userAgent": "...", "fraction": 0.3, ...}]}. Throws ApiError 400 naming
  /// the bad field (nothing changes then).
  void configure(const json& spec);
  void clear();
  /// The rules, seed and counters (for GET /kubesim/v1/faults and the stats).
  json describe() const;
  /// Whether (and how) this resource request fails. Every matching rule draws once, in order.
  FaultDecision pick(const std::string& verb, const std::string& resource, const std::string& subresource,
                     const std::string& user_agent);

 private:
  mutable std::mutex mu_;
  std::uint64_t seed_ = 1;
  std::mt19937_64 rng_{1};
  std::vector<FaultRule> rules_;
  std::map<std::string, long long> injected_;  ///< by fault name, since start (configure keeps them)
  long long considered_ = 0;                   ///< requests matched by some rule
};

/// The error a real API server sends for an error fault (500, 503 or 429 with details).
ApiError fault_error(const FaultDecision& d);

/// Passes everything through but swallows what the handler answers: with reset_connection()
/// afterwards, the request is applied and the client sees the connection reset.
class DiscardingResponder : public HttpResponder {
 public:
  void send(int, const std::string&, const std::string&, const HeaderList&) override { answered_ = true; }
  bool start_stream(int, const std::string&, const HeaderList&) override { return answered_ = true; }
  bool write_chunk(const std::string&) override { return false; }
  void end_stream() override {}
  bool peer_closed() override { return true; }
  bool answered() const override { return answered_; }
  void reset_connection() override {}

 private:
  bool answered_ = false;
};

/// Forwards a watch stream until `cut_after` events went out, then sends the first half of the
/// next event's line and resets the connection.
class WatchCutResponder : public HttpResponder {
 public:
  WatchCutResponder(HttpResponder& inner, int cut_after) : inner_(inner), left_(cut_after) {}
  void send(int status, const std::string& ct, const std::string& body, const HeaderList& h) override {
    inner_.send(status, ct, body, h);
  }
  bool start_stream(int status, const std::string& ct, const HeaderList& h) override {
    return inner_.start_stream(status, ct, h);
  }
  bool write_chunk(const std::string& data) override;
  void end_stream() override { inner_.end_stream(); }
  bool peer_closed() override { return inner_.peer_closed(); }
  bool answered() const override { return inner_.answered(); }
  void reset_connection() override { inner_.reset_connection(); }
  bool cut() const { return cut_; }

 private:
  HttpResponder& inner_;
  int left_;
  bool cut_ = false;
};

}  // namespace kubesim
