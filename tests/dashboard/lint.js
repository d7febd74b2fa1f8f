#!/usr/bin/env node
// Project rules for the Grafana dashboard that a JSON schema cannot express. No npm dependencies.
//
//   node lint.js [FILE...]      each FILE (default: the chart's dashboard) must have no problem
//   node lint.js --bad DIR      every fixture DIR/expected.json lists with "check": "lint" must
//                               have a problem containing its "error" text
//
// Rules:
//   layout     panel ids unique positive integers (rows' children included); gridPos integers with
//              x >= 0, y >= 0, w >= 1, h >= 1, x + w <= 24; no two panels overlap (top level, and
//              within each collapsed row's children)
//   panels     type one of row, timeseries, stat, bargauge, table (the plugins validate.js checks);
//              a title and a description; datasource {type: prometheus, uid: ${datasource}};
//              non-row panels: at least one target and fieldConfig.defaults.unit, a known Grafana
//              unit id (KNOWN_UNITS) or a custom one, as are units in overrides
//   targets    refId unique within the panel; expr a non-empty string; datasource (if set)
//              ${datasource}; balanced (), [], {} outside string literals; every $variable defined
//              (dashboard variable or Grafana built-in); every trainbench_* metric known (lib.js);
//              every worker-metric selector filters benchmark_job=~"$benchmark_job" and none uses
//              the label `job` (Prometheus's own target label); range queries (timeseries) do not
//              use [$__range] windows (each point would look back over the whole time range)
//   variables  names unique; `datasource` of type datasource with query "prometheus"; query
//              variables use ${datasource} and refer only to variables defined before them (Grafana
//              resolves chained variables in order); multi/includeAll variables have allValue
//   dashboard  uid (1-40 of [A-Za-z0-9_-]), title, tags, refresh, time
// Exit codes: 0 ok, 1 problems, 2 could not run.
'use strict';

const fs = require('fs');
const path = require('path');
const {
  DASHBOARD, BUILTIN_VARIABLES, readJson, allPanels, variableRefs, metricNames, KNOWN_WORKER_SERIES,
  KNOWN_OPERATOR_SERIES, isOperatorMetric, runMain,
} = require('./lib');

const PANEL_TYPES = new Set(['row', 'timeseries', 'stat', 'bargauge', 'table']);
// Grafana unit ids (packages/grafana-data/src/valueFormats/categories.ts) this project may use; add
// a real one when needed. Custom units (suffix:, prefix:, si:, count:, currency:, time:) pass.
const KNOWN_UNITS = new Set([
  'none', 'short', 'percent', 'percentunit', 'ns', 'µs', 'ms', 's', 'm', 'h', 'd', 'dtdurations', 'dthms',
  'bytes', 'decbytes', 'bits', 'decbits', 'kbytes', 'mbytes', 'gbytes', 'Bps', 'binBps', 'bps', 'binbps', 'KBs',
  'MBs', 'GBs', 'ops', 'reqps', 'rps', 'wps', 'iops', 'opm', 'rpm', 'hertz', 'watt', 'celsius', 'dateTimeAsIso',
  'dateTimeFromNow',
]);
const unitProblem = (u) => (typeof u !== 'string' || !u ? 'no unit' :
  (KNOWN_UNITS.has(u) || /^(suffix|prefix|si|count|currency|time):/.test(u) ? null : `unknown unit ${JSON.stringify(u)}`));
const GRID_COLUMNS = 24;
const DATASOURCE_UID = '${datasource}';

const isObj = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
const isInt = (x) => Number.isInteger(x);

function checkBrackets(expr) {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, 'S');
  if (/["'`]/.test(noStrings)) return 'unterminated string literal';
  const open = { '(': ')', '[': ']', '{': '}' };
  const stack = [];
  for (const c of noStrings) {
    if (open[c]) stack.push(open[c]);
    else if (c === ')' || c === ']' || c === '}') {
      if (stack.pop() !== c) return `unbalanced "${c}"`;
    }
  }
  return stack.length ? `unclosed "${Object.keys(open).find((k) => open[k] === stack[stack.length - 1])}"` : null;
}

function lint(dash) {
  const problems = [];
  const add = (msg) => problems.push(msg);
  if (!isObj(dash)) return ['the dashboard is not a JSON object'];

  // ---- dashboard
  if (typeof dash.uid !== 'string' || !/^[A-Za-z0-9_-]{1,40}$/.test(dash.uid)) add(`uid ${JSON.stringify(dash.uid)} is not 1-40 of [A-Za-z0-9_-]`);
  if (typeof dash.title !== 'string' || !dash.title) add('no title');
  if (!Array.isArray(dash.tags) || dash.tags.length === 0) add('no tags');
  if (typeof dash.refresh !== 'string' || !dash.refresh) add('no refresh interval');
  if (!isObj(dash.time) || !dash.time.from) add('no default time range');

  // ---- variables
  const vars = (isObj(dash.templating) && Array.isArray(dash.templating.list)) ? dash.templating.list : [];
  const defined = new Set();
  for (const [i, v] of vars.entries()) {
    const where = `variable ${i} ${JSON.stringify(v && v.name)}`;
    if (!isObj(v) || typeof v.name !== 'string' || !v.name) { add(`${where}: no name`); continue; }
    if (defined.has(v.name)) add(`${where}: duplicate variable name`);
    if (v.type === 'query') {
      if (!isObj(v.datasource) || v.datasource.uid !== DATASOURCE_UID) add(`${where}: datasource must be ${DATASOURCE_UID}`);
      const q = typeof v.query === 'string' ? v.query : (isObj(v.query) ? v.query.query : undefined);
      if (typeof q !== 'string' || !q) add(`${where}: no query`);
      for (const r of variableRefs(q || '')) {
        if (!defined.has(r) && !BUILTIN_VARIABLES.has(r)) add(`${where}: query uses $${r}, not defined before it`);
      }
    }
    if ((v.multi || v.includeAll) && v.includeAll && typeof v.allValue !== 'string') {
      add(`${where}: includeAll without allValue (use ".*" so that new values match)`);
    }
    defined.add(v.name);
  }
  const ds = vars.find((v) => isObj(v) && v.name === 'datasource');
  if (!ds) add('no variable "datasource"');
  else if (ds.type !== 'datasource' || ds.query !== 'prometheus') add('variable "datasource" must be of type datasource with query "prometheus"');

  // ---- panels
  const panels = allPanels(dash);
  if (panels.length === 0) add('no panels');
  const ids = new Map();
  for (const { panel: p, path: at } of panels) {
    if (!isObj(p)) { add(`${at}: not an object`); continue; }
    const name = `panel ${p.id} ${JSON.stringify(p.title)}`;
    if (!isInt(p.id) || p.id <= 0) add(`${at} ${name}: id must be a positive integer`);
    else if (ids.has(p.id)) add(`${at} ${name}: duplicate panel id ${p.id} (also ${ids.get(p.id)})`);
    else ids.set(p.id, at);
    if (!PANEL_TYPES.has(p.type)) add(`${name}: panel type ${JSON.stringify(p.type)} is not one of ${[...PANEL_TYPES].join(', ')}`);
    if (typeof p.title !== 'string' || !p.title.trim()) add(`${name}: no title`);
    if (p.type !== 'row' && (typeof p.description !== 'string' || !p.description.trim())) add(`${name}: no description`);
    if (!isObj(p.datasource) || p.datasource.uid !== DATASOURCE_UID || p.datasource.type !== 'prometheus') {
      add(`${name}: datasource must be {"type": "prometheus", "uid": "${DATASOURCE_UID}"}, is ${JSON.stringify(p.datasource)}`);
    }
    for (const r of variableRefs(`${p.title || ''} ${p.description || ''}`)) {
      if (!defined.has(r) && !BUILTIN_VARIABLES.has(r)) add(`${name}: title/description uses undefined variable $${r}`);
    }
    // gridPos
    const g = p.gridPos;
    if (!isObj(g) || ![g.x, g.y, g.w, g.h].every(isInt)) {
      add(`${name}: gridPos must have integer x, y, w, h`);
    } else {
      if (g.x < 0 || g.y < 0 || g.w < 1 || g.h < 1) add(`${name}: gridPos out of range ${JSON.stringify(g)}`);
      if (g.x + g.w > GRID_COLUMNS) add(`${name}: gridPos x + w = ${g.x + g.w} > ${GRID_COLUMNS} columns`);
    }
    if (p.type === 'row') continue;
    // unit
    const unit = isObj(p.fieldConfig) && isObj(p.fieldConfig.defaults) ? p.fieldConfig.defaults.unit : undefined;
    const up = unitProblem(unit);
    if (up) add(`${name}: ${up} (fieldConfig.defaults.unit)`);
    for (const o of (isObj(p.fieldConfig) && Array.isArray(p.fieldConfig.overrides) ? p.fieldConfig.overrides : [])) {
      for (const prop of (isObj(o) && Array.isArray(o.properties) ? o.properties : [])) {
        if (isObj(prop) && prop.id === 'unit' && unitProblem(prop.value)) {
          add(`${name}: override ${JSON.stringify(o.matcher)}: ${unitProblem(prop.value)}`);
        }
      }
    }
    // targets
    if (!Array.isArray(p.targets) || p.targets.length === 0) { add(`${name}: no targets`); continue; }
    const refIds = new Set();
    for (const [j, t] of p.targets.entries()) {
      const tw = `${name} target ${isObj(t) && t.refId ? t.refId : j}`;
      if (!isObj(t)) { add(`${tw}: not an object`); continue; }
      if (typeof t.refId !== 'string' || !t.refId) add(`${tw}: no refId`);
      else if (refIds.has(t.refId)) add(`${tw}: duplicate refId`);
      else refIds.add(t.refId);
      if (t.datasource !== undefined && (!isObj(t.datasource) || t.datasource.uid !== DATASOURCE_UID)) {
        add(`${tw}: datasource must be ${DATASOURCE_UID}`);
      }
      if (typeof t.expr !== 'string' || !t.expr.trim()) { add(`${tw}: no expr`); continue; }
      const e = t.expr;
      const b = checkBrackets(e);
      if (b) add(`${tw}: ${b} in expr`);
      for (const r of variableRefs(e)) {
        if (!defined.has(r) && !BUILTIN_VARIABLES.has(r)) add(`${tw}: expr uses undefined variable $${r}`);
      }
      for (const r of variableRefs(t.legendFormat || '')) {
        if (!defined.has(r) && !BUILTIN_VARIABLES.has(r)) add(`${tw}: legendFormat uses undefined variable $${r}`);
      }
      const metrics = metricNames(e);
      if (metrics.length === 0) add(`${tw}: expr queries no trainbench_* metric`);
      for (const m of metrics) {
        if (!KNOWN_WORKER_SERIES.has(m) && !KNOWN_OPERATOR_SERIES.has(m)) add(`${tw}: unknown metric ${m}`);
      }
      for (const sel of e.matchAll(/\b(trainbench_[a-zA-Z0-9_]+)\s*(\{[^}]*\})?/g)) {
        const [, metric, matchers] = sel;
        if (/\bjob\s*(=~|!~|!=|=)/.test(matchers || '')) {
          add(`${tw}: ${metric} selects on label "job" (Prometheus's target label; the workers' label is benchmark_job)`);
        }
        if (isOperatorMetric(metric)) continue;
        if (!matchers || !/\bbenchmark_job\s*=~\s*"\$benchmark_job"/.test(matchers)) {
          add(`${tw}: ${metric} must be filtered by benchmark_job=~"$benchmark_job"`);
        }
      }
      const instant = t.instant === true && t.range !== true;
      if (!instant && /\[\s*\$\{?__range\b/.test(e)) add(`${tw}: a range query with a [$__range] window (make the target instant)`);
    }
  }

  // ---- overlaps: top level, and each row's (collapsed) children among themselves
  const groups = [panels.filter((x) => !x.row)];
  for (const x of panels.filter((y) => !y.row && isObj(y.panel) && y.panel.type === 'row')) {
    groups.push(panels.filter((y) => y.row === x.panel));
  }
  for (const group of groups) {
    const boxes = group.map((x) => x.panel).filter((p) => isObj(p) && isObj(p.gridPos) &&
      [p.gridPos.x, p.gridPos.y, p.gridPos.w, p.gridPos.h].every(isInt));
    for (let a = 0; a < boxes.length; a++) {
      for (let b = a + 1; b < boxes.length; b++) {
        const A = boxes[a].gridPos;
        const B = boxes[b].gridPos;
        if (A.x < B.x + B.w && B.x < A.x + A.w && A.y < B.y + B.h && B.y < A.y + A.h) {
          add(`panels ${boxes[a].id} and ${boxes[b].id} overlap: ${JSON.stringify(A)} and ${JSON.stringify(B)}`);
        }
      }
    }
  }
  return problems;
}

function main() {
  const args = process.argv.slice(2);
  const files = [];
  let bad;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--bad') bad = args[++i];
    else if (args[i].startsWith('--')) throw Object.assign(new Error(`unknown option ${args[i]}`), { exitCode: 2 });
    else files.push(args[i]);
  }
  let failed = false;
  if (bad) {
    const dir = path.resolve(bad);
    const manifest = readJson(path.join(dir, 'expected.json'));
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json') && n !== 'expected.json').sort()) {
      if (!(f in manifest)) { console.log(`FAIL ${f}: not listed in expected.json`); failed = true; }
    }
    for (const [name, exp] of Object.entries(manifest)) {
      if (exp.check !== 'lint') continue;
      const problems = lint(readJson(path.join(dir, name)));
      const hit = problems.find((p) => p.includes(exp.error));
      if (problems.length === 0) { console.log(`FAIL ${name}: no lint problem, expected: ${exp.error}`); failed = true; }
      else if (!hit) { console.log(`FAIL ${name}: no problem contains "${exp.error}":\n    ${problems.join('\n    ')}`); failed = true; }
      else console.log(`ok   ${name} rejected: ${hit}${problems.length > 1 ? ` (+${problems.length - 1} more)` : ''}`);
    }
  }
  for (const f of (files.length > 0 || bad ? files : [DASHBOARD])) {
    const dash = readJson(f);
    const problems = lint(dash);
    if (problems.length === 0) {
      const n = allPanels(dash).length;
      const nt = allPanels(dash).reduce((s, x) => s + (Array.isArray(x.panel.targets) ? x.panel.targets.length : 0), 0);
      console.log(`OK ${f} (${n} panels, ${nt} targets)`);
    } else {
      console.log(`LINT ${f}: ${problems.length} problem(s)\n  ${problems.join('\n  ')}`);
      failed = true;
    }
  }
  return failed ? 1 : 0;
}

runMain(module, 'lint.js', main);

module.exports = { lint };
