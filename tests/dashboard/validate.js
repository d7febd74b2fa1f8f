#!/usr/bin/env node
// Validates Grafana dashboards against @grafana/schema (generated JSON schemas, see
// generate_schema.js) with ajv.
//
//   node validate.js [--cache-dir DIR] [FILE...]   each FILE (default: the chart's dashboard) must be
//                                                  valid; exit 1 otherwise, with every error
//   node validate.js [--cache-dir DIR] --bad DIR   every fixture DIR/expected.json lists with
//                                                  "check": "schema" must be INVALID with an error
//                                                  containing its "error" text; "check": "lint"
//                                                  fixtures must be schema-valid (they show what only
//                                                  lint.js catches); every DIR/*.json must be listed
//   node validate.js [--cache-dir DIR] --check-schema
//                                                  asserts the generated schema really constrains
//                                                  dashboards (panels, gridPos, variables, plugins) and
//                                                  that its only unconstrained spots are the known ones
//
// What "valid" means:
//   1. the whole file against `Dashboard` (dist/types/raw/dashboard/x/types.gen.d.ts): every field
//      typed, required fields present, enums (variable types, refresh, hide, sort, colour modes,
//      threshold modes, ...) closed, no property the type does not declare (additionalProperties
//      false, as TypeScript's excess-property check). `panels` items are `Panel | RowPanel`; errors
//      inside a panel are reported against the branch its `type` selects, not as an anyOf mess;
//   2. each panel's `options` against its plugin's `Options` and `fieldConfig.defaults.custom`
//      against its plugin's `FieldConfig` (raw/composable/<plugin>/panelcfg), for timeseries, stat,
//      bargauge and table (lint.js allows no other panel types);
//   3. schemaVersion between 39 and the installed @grafana/schema's current one (42 in 13.2.3).
// Exit codes: 0 ok, 1 validation failed, 2 could not run (missing node_modules, bad arguments).
'use strict';

const fs = require('fs');
const path = require('path');
const { DASHBOARD, readJson, allPanels, requireDeps, runMain } = require('./lib');

const MIN_SCHEMA_VERSION = 39;

function formatError(e, prefix = '') {
  let msg = `${prefix}${e.instancePath || ''}`;
  msg = `${msg || '/'} ${e.message}`;
  const p = e.params || {};
  if (p.additionalProperty !== undefined) msg += ` (${JSON.stringify(p.additionalProperty)})`;
  if (p.allowedValues !== undefined) msg += ` ${JSON.stringify(p.allowedValues)}`;
  if (p.allowedValue !== undefined) msg += ` ${JSON.stringify(p.allowedValue)}`;
  return msg;
}

class Validator {
  constructor(bundle) {
    const Ajv = require('ajv');
    // strict: the generated schemas use no unknown keywords or formats, so ajv's strict mode
    // (which rejects sloppy schemas, not data) stays on; union types ("type": ["number", "string"]
    // for `number | string`) are standard JSON schema that strict mode merely asks to opt into.
    this.ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
    this.bundle = bundle;
    this.ajv.addSchema(bundle.dashboard, 'dashboard');
    this.dashboard = this.ajv.getSchema('dashboard');
    this.panel = this.ajv.getSchema('dashboard#/definitions/Panel');
    this.row = this.ajv.getSchema('dashboard#/definitions/RowPanel');
    this.plugins = {};
    for (const [name, s] of Object.entries(bundle.panels)) {
      this.plugins[name] = {
        options: this.ajv.compile(s.options),
        fieldConfig: s.fieldConfig ? this.ajv.compile(s.fieldConfig) : null,
      };
    }
  }

  // Returns a list of error strings (empty: valid).
  validate(dash) {
    const errors = [];
    if (!this.dashboard(dash)) {
      const badPanels = new Set();
      for (const e of this.dashboard.errors) {
        const m = /^\/panels\/(\d+)(\/|$)/.exec(e.instancePath);
        // Everything under /panels/<i> comes from the Panel | RowPanel anyOf: re-validate below.
        if (m) badPanels.add(Number(m[1]));
        else errors.push(formatError(e));
      }
      for (const i of [...badPanels].sort((a, b) => a - b)) {
        const p = dash.panels[i];
        const branch = p && typeof p === 'object' && p.type === 'row' ? this.row : this.panel;
        if (branch(p)) continue;  // cannot happen: the anyOf failed
        for (const e of branch.errors) errors.push(formatError(e, `/panels/${i}`));
      }
    }
    if (dash && typeof dash === 'object' && typeof dash.schemaVersion === 'number') {
      const current = this.bundle.currentDashboardSchemaVersion;
      if (dash.schemaVersion > current) {
        errors.push(`/schemaVersion ${dash.schemaVersion} is newer than @grafana/schema ` +
                    `${this.bundle.grafanaSchemaVersion} knows (${current})`);
      } else if (dash.schemaVersion < MIN_SCHEMA_VERSION) {
        errors.push(`/schemaVersion ${dash.schemaVersion} is older than ${MIN_SCHEMA_VERSION}: Grafana migrates it on load`);
      }
    }
    // Panel plugins' own option types.
    for (const { panel, path: where } of allPanels(dash || {})) {
      if (!panel || typeof panel !== 'object') continue;
      const plugin = this.plugins[panel.type];
      if (!plugin) continue;
      if (panel.options !== undefined && !plugin.options(panel.options)) {
        for (const e of plugin.options.errors) errors.push(`${formatError(e, `${where}/options`)} [${panel.type} Options]`);
      }
      const custom = panel.fieldConfig && panel.fieldConfig.defaults && panel.fieldConfig.defaults.custom;
      if (custom !== undefined && plugin.fieldConfig && !plugin.fieldConfig(custom)) {
        for (const e of plugin.fieldConfig.errors) {
          errors.push(`${formatError(e, `${where}/fieldConfig/defaults/custom`)} [${panel.type} FieldConfig]`);
        }
      }
    }
    return errors;
  }
}

// --check-schema: the generated schema must constrain what matters; ts-json-schema-generator
// writes {} (anything) for a type it cannot resolve, so list every unconstrained spot and compare
// with the ones the TypeScript types declare as unknown / Record<string, unknown>.
const EXPECTED_UNCONSTRAINED = new Set([
  '#/definitions/DataTransformerConfig/properties/options',          // options: unknown
  '#/definitions/FieldConfig/properties/custom/additionalProperties', // Record<string, unknown>
  '#/definitions/FieldConfig/properties/links/items',                 // Array<unknown>
  '#/definitions/FieldConfigSource/properties/overrides/items/properties/properties/items/properties/value',
  '#/definitions/MatcherConfig/properties/options',                   // options?: unknown
  '#/definitions/Panel/properties/options/additionalProperties',      // Record<string, unknown>
  '#/definitions/Panel/properties/targets/items/additionalProperties', // Record<string, unknown>
  '#/definitions/VariableModel/properties/query/anyOf/1/additionalProperties',
]);

function unconstrained(schema, at = '#', out = []) {
  if (schema === true || (schema && typeof schema === 'object' && !Array.isArray(schema) &&
      Object.keys(schema).every((k) => ['description', 'title', 'deprecated', 'default'].includes(k)))) {
    out.push(at);
    return out;
  }
  if (!schema || typeof schema !== 'object') return out;
  for (const [k, v] of Object.entries(schema)) {
    if (['properties', 'definitions'].includes(k)) {
      for (const [n, s] of Object.entries(v)) unconstrained(s, `${at}/${k}/${n}`, out);
    } else if (['anyOf', 'oneOf', 'allOf'].includes(k)) {
      v.forEach((s, i) => unconstrained(s, `${at}/${k}/${i}`, out));
    } else if (['items', 'additionalProperties', 'not'].includes(k) && typeof v === 'object') {
      unconstrained(v, `${at}/${k}`, out);
    }
  }
  return out;
}

function checkSchema(bundle) {
  const problems = [];
  const expect = (cond, what) => { if (!cond) problems.push(what); };
  const d = bundle.dashboard.definitions || {};
  const ref = (name) => ({ $ref: `#/definitions/${name}` });
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  expect(bundle.dashboard.$ref === '#/definitions/Dashboard', 'the root is not #/definitions/Dashboard');
  const D = d.Dashboard || {};
  expect(D.additionalProperties === false, 'Dashboard allows unknown properties');
  expect((D.required || []).includes('schemaVersion'), 'Dashboard does not require schemaVersion');
  const items = ((D.properties || {}).panels || {}).items || {};
  expect(same(items.anyOf, [ref('Panel'), ref('RowPanel')]), `Dashboard.panels items are not Panel | RowPanel: ${JSON.stringify(items)}`);
  const P = d.Panel || {};
  expect(P.type === 'object' && P.additionalProperties === false, 'Panel is not a closed object');
  expect((P.required || []).includes('type'), 'Panel does not require type');
  expect(same((P.properties || {}).gridPos, { $ref: '#/definitions/GridPos', description: 'Grid position.' }) ||
         ((P.properties || {}).gridPos || {}).$ref === '#/definitions/GridPos', 'Panel.gridPos is not a GridPos');
  expect(((P.properties || {}).datasource || {}).$ref === '#/definitions/DataSourceRef', 'Panel.datasource is not a DataSourceRef');
  expect((((P.properties || {}).targets || {}).items || {}).type === 'object', 'Panel.targets items are not objects');
  const R = d.RowPanel || {};
  expect(same(((R.properties || {}).type || {}).const, 'row'), 'RowPanel.type is not the constant "row"');
  expect(((((R.properties || {}).panels || {}).items) || {}).$ref === '#/definitions/Panel', 'RowPanel.panels items are not Panels');
  const G = d.GridPos || {};
  for (const k of ['h', 'w', 'x', 'y']) {
    expect(((G.properties || {})[k] || {}).type === 'number', `GridPos.${k} is not a number`);
    expect((G.required || []).includes(k), `GridPos does not require ${k}`);
  }
  const V = d.VariableModel || {};
  expect(['name', 'type'].every((k) => (V.required || []).includes(k)), 'VariableModel does not require name and type');
  expect(((V.properties || {}).type || {}).$ref === '#/definitions/VariableType', 'VariableModel.type is not a VariableType');
  const VT = (d.VariableType || {}).enum || [];
  expect(['query', 'datasource', 'custom'].every((t) => VT.includes(t)) && VT.length < 20,
         `VariableType is not a closed enum: ${JSON.stringify(d.VariableType)}`);
  expect(same(((D.properties || {}).templating || {}).properties.list.items, ref('VariableModel')),
         'templating.list items are not VariableModels');
  expect(((d.FieldConfigSource || {}).required || []).includes('overrides'), 'FieldConfigSource does not require overrides');
  const loose = unconstrained(bundle.dashboard);
  for (const at of loose) expect(EXPECTED_UNCONSTRAINED.has(at), `unexpected unconstrained (any) schema at ${at}`);
  for (const at of EXPECTED_UNCONSTRAINED) {
    expect(loose.includes(at), `${at} was expected to be unconstrained (update EXPECTED_UNCONSTRAINED)`);
  }
  for (const [name, s] of Object.entries(bundle.panels)) {
    const O = (s.options.definitions || {}).Options || {};
    expect(O.type === 'object' && O.additionalProperties === false && Object.keys(O.properties || {}).length > 0,
           `${name} Options is not a closed object with properties`);
    const looseOpts = unconstrained(s.options);
    expect(looseOpts.length === 0, `${name} Options has unconstrained spots: ${looseOpts.join(', ')}`);
  }
  return { problems, loose };
}

function parseArgs(argv) {
  const opts = { files: [], cacheDir: undefined, bad: undefined, checkSchema: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--cache-dir') opts.cacheDir = argv[++i];
    else if (a === '--bad') opts.bad = argv[++i];
    else if (a === '--check-schema') opts.checkSchema = true;
    else if (a.startsWith('--')) throw Object.assign(new Error(`unknown option ${a}`), { exitCode: 2 });
    else opts.files.push(a);
  }
  if (opts.bad === '' || (opts.cacheDir !== undefined && !opts.cacheDir)) {
    throw Object.assign(new Error('option needs a value'), { exitCode: 2 });
  }
  return opts;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  requireDeps();
  const { loadSchemas } = require('./generate_schema');
  const { bundle, file: schemaFile, cached } = loadSchemas({ cacheDir: opts.cacheDir });
  console.log(`schema: @grafana/schema ${bundle.grafanaSchemaVersion} Dashboard + panel plugins ` +
              `${Object.keys(bundle.panels).join(', ')} (${bundle.generatedBy}; ${cached ? 'cached' : 'generated'} ${schemaFile})`);
  const v = new Validator(bundle);
  let failed = false;

  if (opts.checkSchema) {
    const { problems, loose } = checkSchema(bundle);
    const nDefs = Object.keys(bundle.dashboard.definitions).length;
    console.log(`check-schema: ${nDefs} definitions; unconstrained spots (all declared unknown/Record in the types): ${loose.length}`);
    for (const p of problems) console.log(`  FAIL ${p}`);
    if (problems.length > 0) failed = true;
    else console.log('check-schema: OK');
  }

  if (opts.bad) {
    const dir = path.resolve(opts.bad);
    const manifest = readJson(path.join(dir, 'expected.json'));
    const listed = new Set(Object.keys(manifest));
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json') && n !== 'expected.json').sort()) {
      if (!listed.has(f)) { console.log(`FAIL ${f}: not listed in expected.json`); failed = true; }
    }
    for (const [name, exp] of Object.entries(manifest)) {
      const errors = v.validate(readJson(path.join(dir, name)));
      if (exp.check === 'schema') {
        if (errors.length === 0) {
          console.log(`FAIL ${name}: passed schema validation, expected: ${exp.error}`);
          failed = true;
        } else if (!errors.some((e) => e.includes(exp.error))) {
          console.log(`FAIL ${name}: invalid, but no error contains "${exp.error}":\n    ${errors.join('\n    ')}`);
          failed = true;
        } else {
          console.log(`ok   ${name} rejected: ${errors.filter((e) => e.includes(exp.error))[0]}` +
                      (errors.length > 1 ? ` (+${errors.length - 1} more)` : ''));
        }
      } else if (exp.check === 'lint') {
        if (errors.length > 0) {
          console.log(`FAIL ${name}: a lint fixture must be schema-valid:\n    ${errors.join('\n    ')}`);
          failed = true;
        } else {
          console.log(`ok   ${name} is schema-valid (only lint.js rejects it)`);
        }
      } else {
        console.log(`FAIL ${name}: "check" must be "schema" or "lint"`);
        failed = true;
      }
    }
  }

  const files = opts.files.length > 0 || opts.bad || opts.checkSchema ? opts.files : [DASHBOARD];
  for (const f of files) {
    const errors = v.validate(readJson(f));
    if (errors.length === 0) {
      console.log(`OK ${f}`);
    } else {
      console.log(`INVALID ${f}: ${errors.length} error(s)\n  ${errors.join('\n  ')}`);
      failed = true;
    }
  }
  return failed ? 1 : 0;
}

runMain(module, 'validate.js', main);

module.exports = { Validator, checkSchema };
