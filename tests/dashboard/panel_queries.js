#!/usr/bin/env node
// Prints every panel target's PromQL, with the dashboard's variables substituted, as JSON lines:
//
//   {"panel": 7, "title": "Throughput per rank", "refId": "A", "expr": "...", "instant": false,
//    "format": "time_series", "legendFormat": "...", "gpu": false, "operator": false,
//    "metrics": ["trainbench_examples_total"]}
//
// for a Prometheus end-to-end test to run each query and check it returns data:
//   instant: true   the panel asks for one instant query at the end of the time range (evaluate
//                   with /api/v1/query at "now"; these look back over $__range);
//   instant: false  a range query over the time range (/api/v1/query_range);
//   gpu: true       the expr reads a trainbench_gpu_* metric: empty without a GPU;
//   operator: true  the expr reads trainbench_operator_* metrics: empty unless the operator is scraped.
//
// Usage: node panel_queries.js [--dashboard FILE] [--var NAME=VALUE]... [--range 5m]
//                              [--rate-interval 1m] [--interval 15s] [--variables]
//   --var NAME=VALUE  a single value is used as is (a regex: --var run=.* matches every run);
//                     several values (--var run=0 --var run=1, or --var run=0,1) become a regex
//                     alternative (0|1), each value regex-escaped, as Grafana does for multi-value
//                     variables. A variable not given takes its allValue (".*") when it has an
//                     "All" option; otherwise it is an error.
//   --range           $__range (and $__range_s, $__range_ms): the dashboard time range
//   --rate-interval   $__rate_interval (Grafana: max(4 x scrape interval, $__interval + scrape interval))
//   --interval        $__interval (and $__interval_ms)
//   --variables       also print the query variables' label_values() queries, substituted, as
//                     {"variable", "query", "label", "match"} lines (match: the series selector to
//                     pass as match[] to /api/v1/label/<label>/values)
// Exit codes: 0 ok, 2 bad arguments or a variable left unresolved.
'use strict';

const { DASHBOARD, readJson, allPanels, durationSeconds, substitute, metricNames, isGpuMetric, isOperatorMetric, runMain } =
  require('./lib');

function usage(msg) {
  const e = new Error(`${msg}\nusage: node panel_queries.js [--dashboard FILE] [--var NAME=VALUE]... [--range 5m] ` +
                      '[--rate-interval 1m] [--interval 15s] [--variables]');
  e.exitCode = 2;
  return e;
}

function parseArgs(argv) {
  const o = { dashboard: DASHBOARD, vars: new Map(), range: '5m', rateInterval: '1m', interval: '15s', variables: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--dashboard') o.dashboard = value();
    else if (a === '--var') {
      const kv = value();
      const eq = kv.indexOf('=');
      if (eq <= 0) throw usage(`--var wants NAME=VALUE, got ${JSON.stringify(kv)}`);
      const name = kv.slice(0, eq);
      const vals = kv.slice(eq + 1).split(',');
      o.vars.set(name, [...(o.vars.get(name) || []), ...vals]);
    } else if (a === '--range') o.range = value();
    else if (a === '--rate-interval') o.rateInterval = value();
    else if (a === '--interval') o.interval = value();
    else if (a === '--variables') o.variables = true;
    else throw usage(`unknown argument ${a}`);
  }
  for (const d of [o.range, o.rateInterval, o.interval]) {
    try { durationSeconds(d); } catch (e) { throw usage(e.message); }
  }
  return o;
}

// A regex-escaped value, written for a PromQL double-quoted string (backslashes doubled).
function regexLiteral(v) {
  return v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\/g, '\\\\').replace(/"/g, '\\"');
}

// The JSON-line objects for parsed options `o` (see parseArgs).
function collect(o) {
  const dash = readJson(o.dashboard);
  const defs = new Map(((dash.templating || {}).list || []).map((v) => [v.name, v]));
  for (const name of o.vars.keys()) {
    if (!defs.has(name)) throw usage(`--var ${name}: the dashboard has no variable ${name} (it has ${[...defs.keys()].join(', ')})`);
  }
  const secs = (d) => durationSeconds(d);
  const builtins = {
    __range: o.range, __range_s: String(Math.round(secs(o.range))), __range_ms: String(Math.round(secs(o.range) * 1000)),
    __rate_interval: o.rateInterval, __rate_interval_ms: String(Math.round(secs(o.rateInterval) * 1000)),
    __interval: o.interval, __interval_ms: String(Math.round(secs(o.interval) * 1000)),
  };
  const lookup = (name) => {
    if (Object.prototype.hasOwnProperty.call(builtins, name)) return builtins[name];
    if (name === 'datasource') return undefined;  // not used in exprs
    const def = defs.get(name);
    if (!def) return undefined;
    const given = o.vars.get(name);
    if (given === undefined) {
      if (def.includeAll && typeof def.allValue === 'string') return def.allValue;
      throw usage(`variable ${name} has no "All" value: give it with --var ${name}=VALUE`);
    }
    if (given.length === 1) return given[0];
    return `(${given.map(regexLiteral).join('|')})`;
  };
  const resolve = (text, what) => {
    const out = substitute(text, lookup);
    const left = /\$\{?\w+|\[\[\w+/.exec(out);
    if (left) throw Object.assign(new Error(`${what}: ${left[0]} is not a dashboard or built-in variable`), { exitCode: 2 });
    return out;
  };

  const lines = [];
  if (o.variables) {
    for (const v of defs.values()) {
      if (v.type !== 'query') continue;
      const q = resolve(typeof v.query === 'string' ? v.query : v.query.query, `variable ${v.name}`);
      const m = /^\s*label_values\(\s*(?:(.*),\s*)?(\w+)\s*\)\s*$/.exec(q);
      lines.push({ variable: v.name, query: q, label: m ? m[2] : null, match: m ? (m[1] || null) : null });
    }
  }
  for (const { panel } of allPanels(dash)) {
    if (!panel || panel.type === 'row' || !Array.isArray(panel.targets)) continue;
    for (const t of panel.targets) {
      if (typeof t.expr !== 'string') continue;
      const metrics = metricNames(t.expr);
      lines.push({
        panel: panel.id,
        title: panel.title,
        refId: t.refId,
        expr: resolve(t.expr, `panel ${panel.id} target ${t.refId}`),
        instant: t.instant === true && t.range !== true,
        format: t.format || 'time_series',
        legendFormat: t.legendFormat || '',
        gpu: metrics.some(isGpuMetric),
        operator: metrics.some(isOperatorMetric),
        metrics,
      });
    }
  }
  return lines;
}

function main() {
  const lines = collect(parseArgs(process.argv.slice(2)));
  process.stdout.write(lines.map((l) => JSON.stringify(l)).join('\n') + (lines.length ? '\n' : ''));
  return 0;
}

module.exports = { parseArgs, collect };

runMain(module, 'panel_queries.js', main);
