#!/usr/bin/env bash
# ctest fixture controlplane_chart: installs the chart (helm/trainbench) into the shared control
# plane with the real helm, as a user would: `helm install` creates the CRD from the chart's crds/,
# so the real API server compiles its structural schema and CEL rules (and refuses the chart if
# they do not compile or exceed the CEL cost budget), then the RBAC objects and the Deployment.
# replicaCount 0: tests that need the operator run it themselves under the chart's ServiceAccount.
# Needs: KUBECONFIG, CONTROLPLANE_DIR, HELM, REPO.
set -euo pipefail
export PATH="$CONTROLPLANE_DIR/bin:$PATH"  # the kubectl of the server's release
export HELM_CACHE_HOME=$(mktemp -d) HELM_CONFIG_HOME=$(mktemp -d) HELM_DATA_HOME=$(mktemp -d)
trap 'rm -rf "$HELM_CACHE_HOME" "$HELM_CONFIG_HOME" "$HELM_DATA_HOME"' EXIT
[ -x "$HELM" ] || { echo "no helm at $HELM: run scripts/fetch-helm.sh" >&2; exit 1; }
"$HELM" upgrade --install trainbench "$REPO/helm/trainbench" --namespace trainbench-system --create-namespace \
  --set replicaCount=0 --wait --timeout 120s
kubectl wait --for condition=Established --timeout 60s crd/benchmarkjobs.trainbench.dev
kubectl get crd benchmarkjobs.trainbench.dev -o jsonpath='{.status.conditions[?(@.type=="NamesAccepted")].status}' |
  grep -qx True
