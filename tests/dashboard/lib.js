// Helpers shared by validate.js, lint.js and panel_queries.js (no npm dependencies).
'use strict';

const fs = require('fs');
const path = require('path');

const DASHBOARD = path.resolve(__dirname, '..', '..', 'helm', 'trainbench', 'dashboards', 'trainbench.json');

// Grafana's built-in variables the dashboard may use in queries.
const BUILTIN_VARIABLES = new Set([
  '__interval', '__interval_ms', '__rate_interval', '__rate_interval_ms', '__range', '__range_s', '__range_ms',
  '__dashboard', '__from', '__to', '__name', '__org', '__user', '__timeFilter',
]);

// Fails with a clear message (exit code 2) when tests/dashboard/node_modules was not installed:
// the schema tests must never pass by skipping.
function requireDeps() {
  const pins = JSON.parse(fs.readFileSync(path.join(__dirname, 'package.json'), 'utf8')).devDependencies;
  const missing = [];
  const stale = [];
  for (const [name, pinned] of Object.entries(pins)) {
    let file;
    try {
      file = require.resolve(`${name}/package.json`, { paths: [__dirname] });
    } catch (e) {
      missing.push(name);
      continue;
    }
    const installed = JSON.parse(fs.readFileSync(file, 'utf8')).version;
    if (installed !== pinned) stale.push(`${name} ${installed} (pinned ${pinned})`);
  }
  const fail = (msg) => {
    const err = new Error(`${msg}: run tests/dashboard/setup.sh (npm ci from package-lock.json) first`);
    err.exitCode = 2;
    throw err;
  };
  if (missing.length > 0) fail(`missing npm packages ${missing.join(', ')} in ${path.join(__dirname, 'node_modules')}`);
  if (stale.length > 0) fail(`stale npm packages in ${path.join(__dirname, 'node_modules')}: ${stale.join(', ')}`);
}

function readJson(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${file}: ${e.message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: invalid JSON: ${e.message}`);
  }
}

// Every panel, rows' collapsed children included, with a JSON-pointer-like path.
function allPanels(dashboard) {
  const out = [];
  if (!dashboard || !Array.isArray(dashboard.panels)) return out;
  dashboard.panels.forEach((p, i) => {
    out.push({ panel: p, path: `/panels/${i}` });
    if (p && p.type === 'row' && Array.isArray(p.panels)) {
      p.panels.forEach((c, j) => out.push({ panel: c, path: `/panels/${i}/panels/${j}`, row: p }));
    }
  });
  return out;
}

// "90s", "5m", "1h", "250ms", "1d" -> seconds.
function durationSeconds(s) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/.exec(String(s));
  if (!m) throw new Error(`bad duration ${JSON.stringify(s)} (want e.g. 30s, 5m, 1h)`);
  const mult = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2]];
  return Number(m[1]) * mult;
}

// Variable references in a string: $name, ${name}, ${name:format}, [[name]].
const VARIABLE_RE = /\$\{(\w+)(?::([^}]*))?\}|\$(\w+)|\[\[(\w+)(?::([^\]]*))?\]\]/g;

function variableRefs(text) {
  const names = [];
  for (const m of String(text).matchAll(VARIABLE_RE)) names.push(m[1] || m[3] || m[4]);
  return names;
}

function substitute(text, lookup) {
  return String(text).replace(VARIABLE_RE, (whole, a, fa, b, c, fc) => {
    const v = lookup(a || b || c, fa || fc);
    return v === undefined ? whole : v;
  });
}

// Metric names in a PromQL expression (identifiers starting with trainbench_ outside strings).
function metricNames(expr) {
  const noStrings = String(expr).replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  return [...new Set(noStrings.match(/\btrainbench_[a-zA-Z0-9_]+/g) || [])];
}

module.exports = {
  DASHBOARD, BUILTIN_VARIABLES, requireDeps, readJson, allPanels, durationSeconds, variableRefs, substitute,
  metricNames,
};

// Every metric the dashboard may query (docs/observability.md; issue 4). A name not here is a typo
// or a metric that does not exist yet: lint.js rejects it. Histograms add _bucket, _sum, _count.
const WORKER_METRICS = [
  'trainbench_info', 'trainbench_step_duration_seconds', 'trainbench_communication_duration_seconds',
  'trainbench_compute_seconds_total', 'trainbench_communication_seconds_total', 'trainbench_examples_total',
  'trainbench_examples_per_second', 'trainbench_allreduce_bytes_total', 'trainbench_steps_total',
  'trainbench_steps_planned', 'trainbench_memory_rss_bytes', 'trainbench_memory_peak_rss_bytes',
  'trainbench_gpu_memory_allocated_bytes', 'trainbench_gpu_memory_peak_allocated_bytes',
  'trainbench_gpu_utilization_ratio', 'trainbench_gpu_memory_used_bytes', 'trainbench_process_cpu_seconds_total',
  'trainbench_network_receive_bytes_total', 'trainbench_network_transmit_bytes_total', 'trainbench_world_size',
  'trainbench_achieved_flops', 'trainbench_model_flops_utilization_ratio',
  'trainbench_collective_sent_bytes_total',
];
const OPERATOR_METRICS = [
  'trainbench_operator_info', 'trainbench_operator_reconcile_total', 'trainbench_operator_reconcile_errors_total',
  'trainbench_operator_reconcile_duration_seconds', 'trainbench_operator_workqueue_depth',
  'trainbench_operator_api_requests_total', 'trainbench_operator_api_request_duration_seconds',
  'trainbench_operator_watch_restarts_total', 'trainbench_operator_watch_relists_total',
  'trainbench_operator_cached_objects', 'trainbench_operator_benchmarkjobs', 'trainbench_operator_runs_started_total',
  'trainbench_operator_runs_succeeded_total', 'trainbench_operator_runs_failed_total',
  'trainbench_operator_runs_restarted_total', 'trainbench_operator_leader', 'trainbench_operator_informers_synced',
];
const HISTOGRAMS = new Set(['trainbench_step_duration_seconds', 'trainbench_communication_duration_seconds',
                            'trainbench_operator_reconcile_duration_seconds',
                            'trainbench_operator_api_request_duration_seconds']);

function expandHistograms(names) {
  const out = [];
  for (const n of names) {
    if (HISTOGRAMS.has(n)) out.push(`${n}_bucket`, `${n}_sum`, `${n}_count`);
    else out.push(n);
  }
  return out;
}
const KNOWN_WORKER_SERIES = new Set(expandHistograms(WORKER_METRICS));
const KNOWN_OPERATOR_SERIES = new Set(expandHistograms(OPERATOR_METRICS));

const isGpuMetric = (name) => name.startsWith('trainbench_gpu_');
const isOperatorMetric = (name) => name.startsWith('trainbench_operator_');

Object.assign(module.exports, { KNOWN_WORKER_SERIES, KNOWN_OPERATOR_SERIES, isGpuMetric, isOperatorMetric });

/** Runs a script's main() when it is the program: its return value is the exit code; an error
 *  prints "<name>: message" and exits with its exitCode (2 by default). */
function runMain(mod, name, main) {
  if (require.main !== mod) return;
  try {
    process.exitCode = main();
  } catch (e) {
    console.error(`${name}: ${e.message}`);
    process.exitCode = e.exitCode || 2;
  }
}
Object.assign(module.exports, { runMain });
