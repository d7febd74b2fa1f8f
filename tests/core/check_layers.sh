#!/usr/bin/env bash
# core/'s folders depend one way. Each folder may include its own headers and those of the
# folders listed for it (everything below it); nothing sits at core/'s top level.
#   util <- spec <- plan <- results <- analysis <- report <- plot, api
# Usage: check_layers.sh [REPO_ROOT]; prints each include against the arrows, exits 1 if any.
set -euo pipefail
root=${1:-.}
declare -A below=(
  [util]=""
  [spec]="util"
  [plan]="spec util"
  [results]="plan spec util"
  [analysis]="results plan spec util"
  [report]="analysis results plan spec util"
  [plot]="report analysis results plan spec util"
  [api]="report analysis results plan spec util"
)
bad=0
for f in "$root"/core/*.hpp "$root"/core/*.cpp; do
  [ -e "$f" ] || continue
  echo "${f#"$root"/}: at core/'s top level, not in a folder"; bad=1
done
for dir in "$root"/core/*/; do
  from=$(basename "$dir")
  if [ -z "${below[$from]+x}" ]; then echo "core/$from/: a folder check_layers.sh does not know"; bad=1; continue; fi
  for f in "$dir"*.hpp "$dir"*.cpp; do
    [ -e "$f" ] || continue
    while IFS= read -r inc; do
      to=${inc%%/*}
      [ "$to" = "$from" ] && continue
      case " ${below[$from]} " in
        *" $to "*) ;;
        *) echo "${f#"$root"/}: includes core/$inc, but core/$from/ may use only: ${below[$from]:-nothing}"; bad=1 ;;
      esac
    done < <(sed -n 's|^#include "core/\([^"]*\)".*|\1|p' "$f")
  done
done
exit $bad
