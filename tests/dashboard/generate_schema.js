#!/usr/bin/env node
// Turns @grafana/schema's TypeScript types into JSON schemas (ts-json-schema-generator), cached.
//
//   - `Dashboard` from dist/types/raw/dashboard/x/types.gen.d.ts: the classic dashboard JSON
//     (schemaVersion 4x) that Grafana provisions from files and ConfigMaps;
//   - for each panel plugin the dashboard may use, its `Options` (the panel's `options`) and, when
//     the plugin declares one, its `FieldConfig` (the panel's `fieldConfig.defaults.custom`) from
//     dist/types/raw/composable/<plugin>/panelcfg/x/types.gen.d.ts. The Dashboard type leaves both
//     as Record<string, unknown>; these are the types Grafana generates from the plugins' own
//     CUE models, so checking them too catches misspelt or mistyped panel options.
//
// Nothing generated is committed: generation takes about 3 s, the result depends only on the pinned
// package versions, and a cached copy could drift from them. The bundle is cached in
// `<cache dir>/schemas-<key>.json`, key = hash of the three packages' versions and this file;
// cache dir = --cache-dir, else $TRAINBENCH_DASHBOARD_SCHEMA_CACHE, else
// tests/dashboard/node_modules/.cache/trainbench-dashboard (removed by `npm ci` with the rest).
//
// CLI: node generate_schema.js [--cache-dir DIR] [--out FILE]   (prints the bundle's path, or
//      writes the bundle to FILE)
'use strict';

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { requireDeps } = require('./lib');

// Panel plugins the dashboard may use (lint.js rejects other panel types, so that every panel's
// options are checked against its plugin's schema).
const PANEL_PLUGINS = ['timeseries', 'stat', 'bargauge', 'table'];

const DEFAULT_CACHE_DIR = path.join(__dirname, 'node_modules', '.cache', 'trainbench-dashboard');

function packageDir(name) {
  return path.dirname(require.resolve(`${name}/package.json`, { paths: [__dirname] }));
}

function versionOf(name) {
  return JSON.parse(fs.readFileSync(path.join(packageDir(name), 'package.json'), 'utf8')).version;
}

function sourcePaths() {
  const root = packageDir('@grafana/schema');
  const dashboard = path.join(root, 'dist/types/raw/dashboard/x/types.gen.d.ts');
  if (!fs.existsSync(dashboard)) {
    throw new Error(`${dashboard} is missing: @grafana/schema ${versionOf('@grafana/schema')} moved its ` +
                    'Dashboard type; update generate_schema.js');
  }
  const panels = {};
  for (const p of PANEL_PLUGINS) {
    const f = path.join(root, `dist/types/raw/composable/${p}/panelcfg/x/types.gen.d.ts`);
    if (!fs.existsSync(f)) throw new Error(`${f} is missing: no panel config types for plugin ${p}`);
    panels[p] = f;
  }
  return { root, dashboard, panels };
}

// The defaultDashboard.schemaVersion of the installed @grafana/schema (what Grafana of that
// release writes), read from its CommonJS build (the package's exports map hides the file).
function currentSchemaVersion() {
  const f = path.join(packageDir('@grafana/schema'), 'dist/cjs/raw/dashboard/x/types.gen.cjs');
  const m = /schemaVersion:\s*(\d+)/.exec(fs.readFileSync(f, 'utf8'));
  if (!m) throw new Error(`no schemaVersion default in ${f}`);
  return Number(m[1]);
}

function generate() {
  const tsj = require('ts-json-schema-generator');
  const src = sourcePaths();
  const make = (file, type) => {
    // skipTypeCheck: the .d.ts files are generated and published by Grafana; type-checking them
    // adds seconds and no constraint. additionalProperties stays false (the generator's default,
    // and what TypeScript's excess-property check means for an object literal of these types).
    const config = { path: file, type, skipTypeCheck: true, topRef: true, expose: 'export', jsDoc: 'extended',
                     additionalProperties: false };
    return tsj.createGenerator(config).createSchema(type);
  };
  const bundle = {
    generatedBy: `ts-json-schema-generator ${versionOf('ts-json-schema-generator')}, typescript ${versionOf('typescript')}`,
    grafanaSchemaVersion: versionOf('@grafana/schema'),
    currentDashboardSchemaVersion: currentSchemaVersion(),
    sources: { dashboard: path.relative(src.root, src.dashboard), panels: {} },
    dashboard: make(src.dashboard, 'Dashboard'),
    panels: {},
  };
  for (const [p, f] of Object.entries(src.panels)) {
    bundle.sources.panels[p] = path.relative(src.root, f);
    const declaresFieldConfig = /export interface FieldConfig\b/.test(fs.readFileSync(f, 'utf8'));
    bundle.panels[p] = { options: make(f, 'Options'), fieldConfig: declaresFieldConfig ? make(f, 'FieldConfig') : null };
  }
  return bundle;
}

function cacheKey() {
  const h = crypto.createHash('sha256');
  for (const n of ['@grafana/schema', 'ts-json-schema-generator', 'typescript']) h.update(`${n}@${versionOf(n)}\n`);
  h.update(fs.readFileSync(__filename));
  return h.digest('hex').slice(0, 16);
}

// Returns { bundle, file, cached }.
function loadSchemas({ cacheDir } = {}) {
  requireDeps();
  const dir = path.resolve(cacheDir || process.env.TRAINBENCH_DASHBOARD_SCHEMA_CACHE || DEFAULT_CACHE_DIR);
  const file = path.join(dir, `schemas-${cacheKey()}.json`);
  if (fs.existsSync(file)) {
    try {
      return { bundle: JSON.parse(fs.readFileSync(file, 'utf8')), file, cached: true };
    } catch (e) { /* torn or corrupt: regenerate */ }
  }
  const bundle = generate();
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;  // tests may run in parallel: write, then rename
  fs.writeFileSync(tmp, JSON.stringify(bundle));
  fs.renameSync(tmp, file);
  return { bundle, file, cached: false };
}

module.exports = { loadSchemas, PANEL_PLUGINS };

if (require.main === module) {
  const args = process.argv.slice(2);
  let cacheDir;
  let out;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--cache-dir') cacheDir = args[++i];
    else if (args[i] === '--out') out = args[++i];
    else { console.error(`generate_schema.js: unknown argument ${args[i]}`); process.exit(2); }
  }
  try {
    const { bundle, file, cached } = loadSchemas({ cacheDir });
    if (out) fs.writeFileSync(out, JSON.stringify(bundle, null, 1) + '\n');
    console.log(`${out || file} (${cached ? 'cached' : 'generated'}; @grafana/schema ${bundle.grafanaSchemaVersion}, ` +
                `${bundle.generatedBy})`);
  } catch (e) {
    console.error(`generate_schema.js: ${e.message}`);
    process.exit(e.exitCode || 1);
  }
}
