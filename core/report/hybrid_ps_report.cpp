#include "core/report/hybrid_ps_report.hpp"

#include <sstream>
#include <stdexcept>

#include "core/spec/json_fields.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {

namespace jf = json_fields;

namespace {

/// median_of_repeats, its error naming the list (`what`).
Percentiles summarize(const std::vector<std::vector<double>>& per_repeat, const std::string& what) {
  try {
    return median_of_repeats(per_repeat);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(what + e.what());
  }
}

/// Service-scale times: milliseconds with three decimals.
std::string fmt_ms(double seconds) { return printf_str("%.3f ms", seconds * 1e3); }

/// "  p50:  0.012s  2667/s  p75: ..." for a sec/iter and the examples per step behind it.
std::string seed_cells(const Percentiles& sec, double examples_per_step) {
  const double s[4] = {sec.p50, sec.p75, sec.p90, sec.p95};
  const char* names[4] = {"p50:", "p75:", "p90:", "p95:"};
  std::string out;
  for (int i = 0; i < 4; ++i) {
    out += "  " + std::string(names[i]) + pad_left(fmt_sec(s[i]), 9) +
           pad_left(s[i] > 0 ? fmt_rate(examples_per_step / s[i]) : "-", 9);
  }
  return out;
}

std::string p50_p95(const Percentiles& p) { return "p50 " + fmt_ms(p.p50) + ", p95 " + fmt_ms(p.p95); }

}  // namespace

void summarize_hybrid_ps_run(const RunConfig& cfg, const RunResult& result, RunReport& run) {
  const std::string where = "run " + std::to_string(cfg.index) + ": ";
  if (static_cast<int>(result.servers.size()) != cfg.parameter_servers) {
    throw std::runtime_error(where + "hybrid-ps result has " + std::to_string(result.servers.size()) +
                             " parameter servers, the run has " + std::to_string(cfg.parameter_servers));
  }
  const std::size_t repeats = result.ranks.empty() ? 0 : result.ranks.front().step_seconds.size();
  HybridPsReport hr;
  hr.trainers = cfg.world_size();
  hr.parameter_servers = cfg.parameter_servers;
  for (std::size_t i = 0; i < result.servers.size(); ++i) {
    const ServerResult& s = result.servers[i];
    const std::string sp = where + "servers[" + std::to_string(i) + "].";
    for (const auto* list : {&s.lookup_service_seconds, &s.lookup_queue_seconds, &s.update_seconds}) {
      if (list->size() != repeats) {
        throw std::runtime_error(sp + "timings cover " + std::to_string(list->size()) + " repeats, the trainers " +
                                 std::to_string(repeats));
      }
    }
    ServerReport r;
    r.rank = s.rank;
    r.server = s.server;
    r.rows = s.rows;
    r.lookups = s.lookups;
    r.lookup_service_seconds = summarize(s.lookup_service_seconds, sp + "lookupServiceSeconds");
    r.lookup_queue_seconds = summarize(s.lookup_queue_seconds, sp + "lookupQueueSeconds");
    r.update_seconds = summarize(s.update_seconds, sp + "updateSeconds");
    r.peak_memory_bytes = s.peak_memory_bytes;
    r.utilization = s.utilization;
    hr.servers.push_back(r);
  }
  run.hybrid_ps = hr;
}

nlohmann::json to_json(const HybridPsReport& r) {
  nlohmann::json servers = nlohmann::json::array();
  for (const auto& s : r.servers) {
    nlohmann::json sj = {{"rank", s.rank},
                         {"server", s.server},
                         {"rows", s.rows},
                         {"lookups", s.lookups},
                         {"lookupServiceSeconds", percentiles_json(s.lookup_service_seconds)},
                         {"lookupQueueSeconds", percentiles_json(s.lookup_queue_seconds)},
                         {"updateSeconds", percentiles_json(s.update_seconds)},
                         {"peakMemoryBytes", s.peak_memory_bytes}};
    if (s.utilization) sj["utilization"] = to_json(*s.utilization);
    servers.push_back(sj);
  }
  return {{"trainers", r.trainers}, {"parameterServers", r.parameter_servers}, {"servers", servers}};
}

HybridPsReport hybrid_ps_report_from_json(const nlohmann::json& j, const std::string& path) {
  jf::require_object(j, path);
  HybridPsReport r;
  r.trainers = jf::get_int32(j, "trainers", path);
  r.parameter_servers = jf::get_int32(j, "parameterServers", path);
  if (r.trainers < 1) throw std::runtime_error(path + ".trainers: must be >= 1");
  if (r.parameter_servers < 1) throw std::runtime_error(path + ".parameterServers: must be >= 1");
  const auto& servers = jf::get_array(j, "servers", path);
  if (static_cast<int>(servers.size()) != r.parameter_servers) {
    throw std::runtime_error(path + ".servers: " + std::to_string(servers.size()) + " entries for " +
                             std::to_string(r.parameter_servers) + " parameter servers");
  }
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const std::string sp = path + ".servers[" + std::to_string(i) + "]";
    jf::require_object(servers[i], sp);
    ServerReport s;
    s.rank = jf::get_int32(servers[i], "rank", sp);
    s.server = jf::get_int32(servers[i], "server", sp);
    s.rows = jf::get_int(servers[i], "rows", sp);
    s.lookups = jf::get_int(servers[i], "lookups", sp);
    s.lookup_service_seconds =
        percentiles_from_json(jf::member(servers[i], "lookupServiceSeconds", sp), sp + ".lookupServiceSeconds");
    s.lookup_queue_seconds =
        percentiles_from_json(jf::member(servers[i], "lookupQueueSeconds", sp), sp + ".lookupQueueSeconds");
    s.update_seconds = percentiles_from_json(jf::member(servers[i], "updateSeconds", sp), sp + ".updateSeconds");
    s.peak_memory_bytes = jf::get_int(servers[i], "peakMemoryBytes", sp);
    if (jf::has(servers[i], "utilization")) {
      s.utilization = rank_utilization_from_json(servers[i]["utilization"], sp + ".utilization");
    }
    r.servers.push_back(s);
  }
  return r;
}

std::string format_hybrid_ps_runs(const Report& report) {
  std::ostringstream os;
  const double batch = static_cast<double>(report.batch_size_per_device);
  for (const auto& r : report.runs) {
    if (r.phase != "Succeeded" || !r.hybrid_ps) continue;
    const HybridPsReport& h = *r.hybrid_ps;
    os << "\nDDP + parameter servers, " << r.devices_label << " -- " << r.label << ": " << h.trainers << " trainer"
       << (h.trainers == 1 ? "" : "s") << ", " << h.parameter_servers << " parameter server"
       << (h.parameter_servers == 1 ? "" : "s") << "\n(per trainer: sec/iter and examples/sec, median of repeats; "
       << "All: every trainer's steps pooled,\nexamples/sec of all trainers together)\n\n";
    os << pad_left("", 10);
    for (int i = 0; i < 4; ++i) os << "  " << pad_left("sec/iter", 13) << pad_left("ex/sec", 9);
    os << "\n";
    for (std::size_t t = 0; t < r.ranks.size(); ++t) {
      os << pad_right("Trainer" + std::to_string(r.ranks[t].rank) + ":", 10)
         << seed_cells(r.ranks[t].sec_per_iter, batch) << "\n";
    }
    os << pad_right("All:", 10) << seed_cells(r.sec_per_iter, batch * static_cast<double>(h.trainers)) << "\n\n";
    os << "Parameter servers (per lookup request: service = ids in hand -> partial sums sent, queue = arrival ->\n"
       << "start of service; per step: update = applying every trainer's gradients to its rows):\n\n";
    for (const auto& s : h.servers) {
      os << pad_right("Server" + std::to_string(s.server) + ":", 10) << "rank " << s.rank << ", " << s.rows << " rows, "
         << s.lookups << " lookups;  service " << p50_p95(s.lookup_service_seconds) << ";  queue "
         << p50_p95(s.lookup_queue_seconds) << ";  update " << p50_p95(s.update_seconds) << ";  peak "
         << fmt_bytes(s.peak_memory_bytes) << "\n";
    }
  }
  return os.str();
}

}  // namespace trainbench
