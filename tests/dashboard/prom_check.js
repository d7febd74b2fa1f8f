#!/usr/bin/env node
// Runs every panel query of the dashboard (panel_queries.js) against a live Prometheus and reports
// which return data. No npm dependencies. For an end-to-end test after a benchmark ran while
// Prometheus scraped its workers:
//
//   node prom_check.js --prometheus http://127.0.0.1:9090 --start UNIX_S [--end UNIX_S] [--step 1]
//                      [--expect-operator] [--expect-gpu] [panel_queries.js options...]
//
//   instant targets   /api/v1/query at --end (default: now); their [$__range] windows span
//                     --start..--end unless --range is given
//   range targets     /api/v1/query_range over --start..--end with --step seconds
//   variables         /api/v1/label/<label>/values?match[]=... over --start..--end
// A query "returns data" when some series has a finite value (NaN alone does not count).
// Required to return data: every query except GPU ones (unless --expect-gpu) and operator ones
// (unless --expect-operator); an HTTP or PromQL error fails every query, required or not.
// Prints one line per query; exit 0 when all required queries returned data, 1 otherwise, 2 on
// bad arguments.
'use strict';

const http = require('http');
const https = require('https');
const { parseArgs, collect } = require('./panel_queries');

function get(url) {
  return new Promise((resolve, reject) => {
    const mod = url.startsWith('https:') ? https : http;
    const req = mod.get(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => {
        let json;
        try { json = JSON.parse(body); } catch (e) { return reject(new Error(`HTTP ${res.statusCode}: ${body.slice(0, 200)}`)); }
        if (json.status !== 'success') return reject(new Error(`${json.errorType || 'error'}: ${json.error || body.slice(0, 200)}`));
        resolve(json.data);
      });
    });
    req.setTimeout(30000, () => req.destroy(new Error('timeout after 30 s')));
    req.on('error', reject);
  });
}

const finite = (v) => Number.isFinite(Number(v));

function summarize(data) {
  // data: {resultType, result} from query / query_range
  const result = Array.isArray(data.result) ? data.result : [];
  let finiteSeries = 0;
  let example;
  for (const s of result) {
    const values = s.values || (s.value ? [s.value] : []);
    const good = values.filter((v) => finite(v[1]));
    if (good.length > 0) {
      finiteSeries++;
      if (!example) example = { metric: s.metric, value: Number(good[good.length - 1][1]) };
    }
  }
  return { series: result.length, finiteSeries, example };
}

async function main() {
  const argv = process.argv.slice(2);
  const rest = [];
  let prom;
  let start;
  let end = Math.floor(Date.now() / 1000);
  let step = 1;
  let expectOperator = false;
  let expectGpu = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw Object.assign(new Error(`${a} needs a value`), { exitCode: 2 });
      return argv[++i];
    };
    if (a === '--prometheus') prom = value().replace(/\/+$/, '');
    else if (a === '--start') start = Number(value());
    else if (a === '--end') end = Number(value());
    else if (a === '--step') step = Number(value());
    else if (a === '--expect-operator') expectOperator = true;
    else if (a === '--expect-gpu') expectGpu = true;
    else rest.push(a);
  }
  if (!prom || !Number.isFinite(start) || !Number.isFinite(end) || !(end > start) || !(step > 0)) {
    throw Object.assign(new Error('need --prometheus URL and --start UNIX_S (before --end)'), { exitCode: 2 });
  }
  if (!rest.includes('--range')) rest.push('--range', `${Math.ceil(end - start)}s`);
  if (!rest.includes('--variables')) rest.push('--variables');
  const lines = collect(parseArgs(rest));
  let failed = 0;
  let checked = 0;
  for (const q of lines) {
    let what;
    let required;
    let url;
    if (q.variable) {
      what = `variable ${q.variable}`;
      required = true;
      url = `${prom}/api/v1/label/${encodeURIComponent(q.label)}/values?start=${start}&end=${end}` +
            (q.match ? `&match[]=${encodeURIComponent(q.match)}` : '');
    } else {
      what = `panel ${q.panel} ${q.refId} ${JSON.stringify(q.title)}${q.gpu ? ' [gpu]' : ''}${q.operator ? ' [operator]' : ''}`;
      required = (!q.gpu || expectGpu) && (!q.operator || expectOperator);
      url = q.instant
        ? `${prom}/api/v1/query?query=${encodeURIComponent(q.expr)}&time=${end}`
        : `${prom}/api/v1/query_range?query=${encodeURIComponent(q.expr)}&start=${start}&end=${end}&step=${step}`;
    }
    checked++;
    try {
      const data = await get(url);
      if (q.variable) {
        const ok = Array.isArray(data) && data.length > 0;
        console.log(`${ok ? 'data ' : 'EMPTY'} ${what}: ${JSON.stringify(data)}`);
        if (!ok) failed++;
        continue;
      }
      const s = summarize(data);
      const ok = s.finiteSeries > 0;
      const tag = ok ? 'data ' : (required ? 'EMPTY' : 'empty');
      console.log(`${tag} ${what} (${q.instant ? 'instant' : 'range'}): ${s.series} series, ${s.finiteSeries} with finite values` +
                  (s.example ? `; e.g. ${JSON.stringify(s.example.metric)} = ${s.example.value}` : '') +
                  (!ok && !required ? ' (expected here)' : ''));
      if (!ok && required) failed++;
    } catch (e) {
      console.log(`ERROR ${what}: ${e.message}\n    ${q.expr || q.query}`);
      failed++;
    }
  }
  console.log(`${checked} queries, ${failed} failed`);
  return failed > 0 ? 1 : 0;
}

main().then((rc) => { process.exitCode = rc; }, (e) => {
  console.error(`prom_check.js: ${e.message}`);
  process.exitCode = e.exitCode || 2;
});
