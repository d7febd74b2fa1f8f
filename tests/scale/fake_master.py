#!/usr/bin/env python3
"""The run masters of a sweep on kwok nodes, where nothing runs in the pods.

On a cluster the run's master pod (worker/master.cpp) waits for rank 0's RunResult, summarises it
with core (summarize_run) and merge-patches the run's result ConfigMap (J-r<i>-result,
worker/result_configmap.cpp) with data.result = {"attempt", "run" (core's RunReport JSON),
"environment"}, under the job's reporter ServiceAccount (J-reporter), whose Role allows exactly
that. This stand-in does the same from outside: once every pod of a run's attempt is Running (the
master pod and the trainers: a real rank 0 has a result only after all ranks rendezvoused), it
writes that attempt's result with synthetic per-rank step times, one rank row for every rank
(nodes x devicesPerNode), with a token of the job's J-reporter ServiceAccount, so the
operator's reader (collect_result, operator/controller/reconciler_runs.cpp) and RBAC are the real ones.

  fake_master.py NAMESPACE LOG_JSONL
Polls every 0.5 s until killed; appends one JSON line per result written to LOG_JSONL
({"job", "run", "attempt", "ranks", "bytes", "written"}). Needs kubectl (admin KUBECONFIG) in PATH
and CONTROLPLANE_DIR (its url and pki/ca.crt, for the reporter's kubeconfig). SCALE_API_URL, when
set, is the server the reporter writes through instead (tests/faultproxy: a real master reaches the
API server as the operator does); the reads, the admin's, go to the API server itself.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

NS, LOG = sys.argv[1], sys.argv[2]


def kubectl(*args, kubeconfig=None):
    cmd = ["kubectl", "-n", NS, "--request-timeout", "30s"]
    if kubeconfig:  # the reporter's identity instead of the admin's
        cmd += ["--kubeconfig", kubeconfig]
    out = subprocess.run(cmd + list(args), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args[:3])}: {out.stderr.strip()}")
    return out.stdout


def env_of(pod):
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env", [])}


def percentiles(t):
    return {"p50": t, "p75": t * 1.02, "p90": t * 1.05, "p95": t * 1.08}


def label_of(cfg):
    """RunConfig::label() and devices_label() (core/plan/run_config.cpp)."""
    world = cfg["nodes"] * cfg["devicesPerNode"]
    if cfg["paradigm"] == "none":
        label = "no ddp"
    else:
        label = f'{cfg["nodes"]}M/{cfg["devicesPerNode"]}G'
        if cfg["paradigm"] != "ddp":
            label += " " + cfg["paradigm"]
    return label, f'{world} {"GPUs" if cfg["device"] == "cuda" else "CPUs"}'


def run_report(cfg):
    """A succeeded run's RunReport JSON (to_json(RunReport), core/report/report.cpp) with every rank."""
    nodes, per_node = cfg["nodes"], cfg["devicesPerNode"]
    world = nodes * per_node
    base = 0.180 * (1 + 0.04 * (world.bit_length() - 1))  # all-reduce costs grow with the world
    ranks = []
    for r in range(world):
        t = base * (1 + 0.01 * ((r * 37) % 10) / 10)
        if world > 1 and r == world - 1:
            t *= 1.3  # one slow rank: the rank summary must name it first
        ranks.append({"rank": r, "nodeRank": r // per_node, "localRank": r % per_node,
                      "secPerIter": percentiles(round(t, 6)), "peakMemoryBytes": 30 << 30,
                      "optimizerStateBytes": 880 << 20, "parameterCount": 110_000_000})
    p50s = sorted(rk["secPerIter"]["p50"] for rk in ranks)
    pooled = p50s[len(p50s) // 2]
    batch = cfg["batchSizePerDevice"] * world
    label, devices = label_of(cfg)
    return {"index": cfg["index"], "label": label, "devices": devices, "nodes": nodes, "devicesPerNode": per_node,
            "worldSize": world, "paradigm": cfg["paradigm"], "bucketCapMB": cfg["ddp"]["bucketCapMB"],
            "phase": "Succeeded", "secPerIter": percentiles(pooled),
            "examplesPerSec": {k: batch / v for k, v in percentiles(pooled).items()},
            "repeats": [percentiles(pooled)] * cfg["repeats"], "speedup": None, "efficiency": None,
            "parameterCount": 110_000_000, "ddpBucketCount": 17, "maxPeakMemoryBytes": 30 << 30,
            "lossStart": 10.4, "lossEnd": 9.8, "optimizer": cfg["optimizer"], "ranks": ranks}


ENVIRONMENT = {"trainbenchVersion": "scale-test", "libtorchVersion": "none", "cudaVersion": "none",
               "backend": "nccl", "device": "cuda", "deviceName": "kwok fake GPU", "blas": "none",
               "hostname": "kwok", "threadsPerProcess": 1}

CP = os.environ["CONTROLPLANE_DIR"]
WORKDIR = os.path.dirname(os.path.abspath(LOG))  # the caller removes it
kubeconfigs = {}  # job -> a kubeconfig with a token of its J-reporter ServiceAccount
written = set()  # (job, run, attempt)


def reporter_kubeconfig(job):
    if job not in kubeconfigs:
        token = kubectl("create", "token", f"{job}-reporter", "--duration", "2h").strip()
        path = os.path.join(WORKDIR, f"{job}.kubeconfig")
        with open(os.path.join(CP, "url")) as u, open(path, "w") as f:
            server = os.environ.get("SCALE_API_URL") or u.read().strip()
            json.dump({"apiVersion": "v1", "kind": "Config",
                       "clusters": [{"name": "c", "cluster": {"server": server,
                                                               "certificate-authority": os.path.join(CP, "pki/ca.crt")}}],
                       "users": [{"name": "reporter", "user": {"token": token}}],
                       "contexts": [{"name": "c", "context": {"cluster": "c", "user": "reporter", "namespace": NS}}],
                       "current-context": "c"}, f)
        kubeconfigs[job] = path
    return kubeconfigs[job]


def tick():
    masters = json.loads(kubectl("get", "pods", "-l", "trainbench.dev/role=master", "-o", "json"))["items"]
    for m in masters:
        lab = m["metadata"]["labels"]
        key = (lab["trainbench.dev/job"], lab["trainbench.dev/run"], lab["trainbench.dev/attempt"])
        if key in written or m["metadata"].get("deletionTimestamp") or m["status"].get("phase") != "Running":
            continue
        env = env_of(m)
        cfg = json.loads(env["TRAINBENCH_RUN_CONFIG"])
        selector = ",".join(f"trainbench.dev/{k}={v}" for k, v in zip(("job", "run", "attempt"), key))
        pods = json.loads(kubectl("get", "pods", "-l", selector, "-o", "json"))["items"]
        want = cfg["nodes"] + 1 + (cfg.get("parameterServers", 0) if cfg.get("parameterServersOwnPods") else 0)
        if len(pods) < want or any(p["status"].get("phase") != "Running" for p in pods):
            continue
        payload = {"attempt": int(key[2]), "run": run_report(cfg), "environment": ENVIRONMENT}
        patch = json.dumps({"data": {"result": json.dumps(payload, separators=(",", ":"))}})
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write(patch)
            f.flush()
            kubectl("patch", "configmap", env["TRAINBENCH_RESULT_CONFIGMAP"], "--type", "merge", "--patch-file", f.name,
                    kubeconfig=reporter_kubeconfig(key[0]))
        written.add(key)
        with open(LOG, "a") as log:
            log.write(json.dumps({"job": key[0], "run": int(key[1]), "attempt": int(key[2]),
                                  "ranks": len(payload["run"]["ranks"]), "bytes": len(patch),
                                  "written": time.time()}) + "\n")


while True:
    try:
        tick()
    except Exception as e:  # an API hiccup: the next poll tries again
        print(f"fake_master: {e}", file=sys.stderr, flush=True)
    time.sleep(0.5)
