#pragma once

// A comparison of two reports (core/report/compare.hpp) as JSON, for scripts and CI: what
// `trainbench diff --json` and `kubectl trainbench diff -o json` print. The text diff's numbers
// and verdicts, with the words a program can match:
//
//   {"schemaVersion": 1, "alpha": 0.05,
//    "rows": [{"name": "2 CPUs -- 1M/2G", "in": "both",
//              "baseline": {"phase": "Succeeded", "repeats": 5, "examplesPerSec": 410.2,
//                           "secPerIter": {"p50", "p75", "p90", "p95"}},
//              "test": {...},
//              "examplesPerSecChangePercent": -9.3,
//              "verdict": "slower", "samples": {"baseline": 5, "test": 5},
//              "change": {"percent": -9.1, "lowPercent": -9.6, "highPercent": -8.5,
//                         "pValue": 0.0001, "df": 7.9},
//              "regression": true}],
//    "regression": {"thresholdPercent": 5, "regressed": true, "headline": "...",
//                   "rows": ["2 CPUs -- 1M/2G"]},
//    "significantChanges": ["2 CPUs -- 1M/2G: ex/sec -9.1% [-9.6%, -8.5%] slower (p=0.000 n=5+5)"]}
//
// "in" is both | baseline | test (the row is on one side only, and that side's object alone is
// there). "verdict" is faster | slower | no-change | cannot-tell, absent where there is none
// (a failed run on a side, an all-reduce run); "change" is there with every verdict but
// cannot-tell. "regression" (top level, and per row) only with a threshold.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/report/compare.hpp"

namespace trainbench {

inline constexpr int kComparisonSchemaVersion = 1;

/// The comparison as above; `threshold_percent` is --fail-on-regression's PCT, if given.
nlohmann::json comparison_to_json(const Comparison& c, std::optional<double> threshold_percent);

}  // namespace trainbench
