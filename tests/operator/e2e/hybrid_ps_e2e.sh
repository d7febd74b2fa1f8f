#!/usr/bin/env bash
# paradigm hybrid-ps under the operator: a run of 2 trainers (2 trainer pods, one rank each) and
# 2 parameter servers (2 pods of their own) plus the master pod. Checks each role's environment
# in the pods the operator created (RANK, WORLD_SIZE = trainers + servers, TRAINBENCH_ROLE,
# NODE_RANK), that the run succeeds through the master's result ConfigMap, and that the report
# in the job's status has both trainers and both servers (their ranks, rows, lookups served).
source "$(dirname "$0")/lib.sh"

start_cluster
JOB=hybrid
cat >"$WORK/job.yaml" <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: $JOB}
spec:
  benchmark:
    model: hybrid-embedding
    paradigm: hybrid-ps
    hybridEmbedding: {numTables: 4, numEmbeddings: 40, embeddingDim: 8, bagSize: 3, denseSizes: [32, 16], numClasses: 4}
    hybridPs: {parameterServers: 2}
    batchSizePerDevice: 8
    warmupSteps: 1
    measureSteps: 4
    repeats: 1
    threadsPerProcess: 1
  sweep:
    - {nodes: 2, devicesPerNode: 1}
  masterPort: 29500
  template: {image: trainbench/worker:0.1.0}
  runPolicy: {backoffLimit: 0}
YAML
kc apply -f "$WORK/job.yaml" >/dev/null
# Each role's environment, as the operator wrote it into the pods: read while the run's 5 pods exist.
all_pods_created() {
  kc get pods -l "trainbench.dev/job=$JOB" -o json >"$WORK/pods.json" && [ "$(jq '.items | length' "$WORK/pods.json")" = 5 ]
}
wait_for 120 all_pods_created || fail "pods: $(jq -c '[.items[].metadata.name]' "$WORK/pods.json")"
roles=$(jq -r '[.items[].metadata.labels["trainbench.dev/role"]] | sort | join(",")' "$WORK/pods.json")
[ "$roles" = "master,parameter-server,parameter-server,trainer,trainer" ] || fail "pods by role: $roles"
envs=$(jq -c '[.items[] | {role: .metadata.labels["trainbench.dev/role"],
                env: (.spec.containers[0].env | map({(.name): .value}) | add)}
               | {role, roleEnv: .env.TRAINBENCH_ROLE, world: .env.WORLD_SIZE, rank: .env.RANK,
                  node: .env.NODE_RANK, nproc: .env.NPROC_PER_NODE, local: .env.LOCAL_WORLD_SIZE}]
              | sort_by(.role, .rank, .node)' "$WORK/pods.json")
expected='[{"role":"master","roleEnv":"master","world":"4","rank":null,"node":null,"nproc":"1","local":"1"},
{"role":"parameter-server","roleEnv":"parameter-server","world":"4","rank":"2","node":"0","nproc":null,"local":"1"},
{"role":"parameter-server","roleEnv":"parameter-server","world":"4","rank":"3","node":"0","nproc":null,"local":"1"},
{"role":"trainer","roleEnv":"trainer","world":"4","rank":null,"node":"0","nproc":"1","local":"1"},
{"role":"trainer","roleEnv":"trainer","world":"4","rank":null,"node":"1","nproc":"1","local":"1"}]'
[ "$envs" = "$(jq -c . <<<"$expected")" ] || fail "pod environments: $envs"
jq -e '[.items[] | select(.metadata.labels["trainbench.dev/role"] == "parameter-server")
        | .spec.containers[0].command == ["trainbench-worker"] and .spec.automountServiceAccountToken == false
          and .spec.securityContext.runAsNonRoot == true] | all' "$WORK/pods.json" >/dev/null ||
  fail "parameter-server pods: $(jq -c '[.items[] | {name: .metadata.name, spec: .spec.containers[0].command}]' "$WORK/pods.json")"
wait_phase "$JOB" Succeeded || fail "job did not succeed: $(kc get bj $JOB -o jsonpath='{.status}')"

# The report: 2 trainers (ranks 0, 1) with losses, 2 servers (ranks 2, 3) that served every lookup:
# 2 trainers x 4 measured steps = 8 requests each.
report=$(kc get bj "$JOB" -o jsonpath='{.status.report}')
jq -e '.runs[0].phase == "Succeeded" and .runs[0].paradigm == "hybrid-ps" and .runs[0].worldSize == 2' <<<"$report" >/dev/null ||
  fail "run: $(jq -c '.runs[0] | {phase, paradigm, worldSize}' <<<"$report")"
jq -e '[.runs[0].ranks[].rank] == [0, 1] and (.runs[0].lossStart | type) == "number"' <<<"$report" >/dev/null ||
  fail "trainers: $(jq -c '.runs[0].ranks' <<<"$report")"
jq -e '.runs[0].hybridPs.trainers == 2 and .runs[0].hybridPs.parameterServers == 2
       and [.runs[0].hybridPs.servers[] | .rank] == [2, 3]
       and ([.runs[0].hybridPs.servers[] | .lookups == 8 and .rows == 80] | all)' <<<"$report" >/dev/null ||
  fail "servers: $(jq -c '.runs[0].hybridPs' <<<"$report")"

# cleanPodPolicy All (the default): no pod of the finished job is left, servers included.
wait_for 60 no_pods_of "$JOB" || fail "pods left: $(kc get pods -l trainbench.dev/job=$JOB -o name)"
echo PASS
