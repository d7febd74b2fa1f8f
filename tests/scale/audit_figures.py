#!/usr/bin/env python3
"""Per-run figures of a sweep from the real API server's audit log (tests/scale/sweep1000_e2e.sh).

  audit_figures.py AUDIT_LOG NAMESPACE JOB RUNS_JSON EXTRA_JSON OUT_JSON [PROXY_LOG]
RUNS_JSON: [{"index", "gpus", "pods"}] as planned; EXTRA_JSON: figures measured elsewhere (operator
CPU seconds and VmHWM, status bytes, qps), copied into OUT_JSON. Prints a Markdown table.
PROXY_LOG: tests/faultproxy's --log when the operator went through it: the operator's requests the
proxy answered itself (no upstreamCode: a 429, a reset before forwarding) never reached the
server's audit log, yet the operator made them; they count in its requests and rates (at the
time the proxy received them; watches left out as in the audit log) and in operatorAnsweredByProxy.

The audit log holds JSON lines at level Metadata; each request's ResponseComplete stage is used,
its requestReceivedTimestamp (when it arrived) and stageTimestamp (when it was answered). A run
starts with its first pod create; per run:
  t_created  start -> its last pod create answered (201)
  t_bound    start -> its last pods/binding create (kube-scheduler) answered
  t_running  start -> its last pod's first status write by kwok (userAgent kwok...: Running)
  t_result   start -> its result ConfigMap written by the job's reporter ServiceAccount
  FailedScheduling  Events kube-scheduler wrote about its pods beyond one Scheduled per bound pod:
             a pod that found no node with GPUs free (the previous run's pods still being deleted)
  requests   the operator's requests (userAgent trainbench-operator, watches left out: they are
             long-running) from the run's start to the next run's start (the last run: to the end)
  peak/10s   the most of those received in any 10 s window
"""
import bisect
import collections
import json
import sys
from datetime import datetime, timezone

audit, ns, job, runs_path, extra_path, out_path = sys.argv[1:7]
proxy_log = sys.argv[7] if len(sys.argv) > 7 else None
runs = json.load(open(runs_path))
extra = json.load(open(extra_path))


def ts(e, k="stageTimestamp"):
    return datetime.strptime(e[k], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


ref = lambda e, k: (e.get("objectRef") or {}).get(k, "")
code = lambda e: (e.get("responseStatus") or {}).get("code")
log = []
with open(audit) as f:
    for line in f:
        e = json.loads(line)
        if e.get("stage") == "ResponseComplete":
            log.append(e)
in_ns = [e for e in log if ref(e, "namespace") == ns]
is_op = lambda e: e.get("userAgent", "").startswith("trainbench-operator") and e["verb"] != "watch"
ops = sorted((e for e in log if is_op(e)), key=lambda e: ts(e, "requestReceivedTimestamp"))
by_proxy = []  # the operator's requests the proxy answered itself
if proxy_log:
    with open(proxy_log) as f:
        by_proxy = [e for e in map(json.loads, f) if e.get("upstreamCode") is None and e.get("verb") != "watch"
                    and e.get("userAgent", "").startswith("trainbench-operator")]
op_times = sorted([ts(e, "requestReceivedTimestamp") for e in ops] + [ts(e, "ts") for e in by_proxy])


def peak(times):
    """The most of `times` (sorted) in any 10 s window [t, t + 10)."""
    best = 0
    for i, t in enumerate(times):
        best = max(best, bisect.bisect_left(times, t + 10) - i)
    return best


creates, binds, running, results = {}, {}, {}, {}
sched_events = collections.Counter()  # pod -> Events kube-scheduler wrote about it
for e in in_ns:
    name, res, sub = ref(e, "name"), ref(e, "resource"), ref(e, "subresource")
    if res == "pods" and e["verb"] == "create" and not sub and code(e) == 201:
        creates.setdefault(name, e)
    elif res == "pods" and sub == "binding" and e["verb"] == "create" and code(e) == 201:
        binds.setdefault(name, e)
    elif res == "pods" and sub == "status" and e["verb"] in ("patch", "update") and \
            e.get("userAgent", "").startswith("kwok") and code(e) == 200:
        running.setdefault(name, e)
    elif res == "configmaps" and e["verb"] in ("patch", "update") and code(e) == 200 and \
            e["user"]["username"] == f"system:serviceaccount:{ns}:{job}-reporter":
        results.setdefault(name, e)
    elif res == "events" and e["verb"] in ("create", "patch") and e["user"]["username"] == "system:kube-scheduler":
        sched_events[name.rsplit(".", 1)[0]] += 1

rows = []
starts = []
for r in runs:
    prefix = f'{job}-r{r["index"]}-a'
    mine = [n for n in creates if n.startswith(prefix)]
    if not mine:
        starts.append(None)
        continue
    starts.append(min(ts(creates[n], "requestReceivedTimestamp") for n in mine))
for k, r in enumerate(runs):
    prefix = f'{job}-r{r["index"]}-a'
    mine = [n for n in creates if n.startswith(prefix)]
    row = {"index": r["index"], "gpus": r["gpus"], "pods": r["pods"], "podsCreated": len(mine)}
    t0 = starts[k]
    if t0 is not None:
        last = lambda evs: round(max(ts(e) for e in evs) - t0, 3) if evs else None
        row["tCreated"] = last([creates[n] for n in mine])
        row["podsBound"] = sum(1 for n in mine if n in binds)
        row["tBound"] = last([binds[n] for n in mine if n in binds])
        row["podsRunning"] = sum(1 for n in mine if n in running)
        # One Scheduled Event per bound pod; the rest are FailedScheduling (the level is Metadata:
        # the reason is not in the log, the count is).
        row["failedScheduling"] = sum(sched_events[n] for n in mine) - row["podsBound"]
        row["tRunning"] = last([running[n] for n in mine if n in running])
        cm = results.get(f'{job}-r{r["index"]}-result')
        row["tResult"] = round(ts(cm) - t0, 3) if cm else None
        later = [s for s in starts[k + 1:] if s is not None]
        t1 = later[0] if later else float("inf")
        window = op_times[bisect.bisect_left(op_times, t0):bisect.bisect_left(op_times, t1)]
        row["operatorRequests"] = len(window)
        row["peakRequestsPer10s"] = peak(window)
    rows.append(row)

by_kind = collections.Counter(
    f'{e["verb"]} {ref(e, "resource")}{"/" + ref(e, "subresource") if ref(e, "subresource") else ""}' for e in ops)
figures = dict(extra)
figures.update({
    "runs": rows,
    "operatorRequestsTotal": len(op_times),
    "operatorAnsweredByProxy": dict(collections.Counter(str(e["code"]) for e in by_proxy)),
    "operatorPeakRequestsPer10s": peak(op_times),
    "operatorRequestsByKind": dict(sorted(by_kind.items())),
    "operatorRefused": sum(1 for e in ops if code(e) in (403, 429)),
})
json.dump(figures, open(out_path, "w"), indent=1)

fmt = lambda v, unit="": "-" if v is None else f"{v}{unit}"
print("| GPUs | pods | t_created | t_bound | t_running | t_result | operator requests | peak req/10s | FailedScheduling |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    print(f'| {r["gpus"]} | {r["pods"]} | {fmt(r.get("tCreated"), " s")} | {fmt(r.get("tBound"), " s")} | '
          f'{fmt(r.get("tRunning"), " s")} | {fmt(r.get("tResult"), " s")} | {fmt(r.get("operatorRequests"))} | '
          f'{fmt(r.get("peakRequestsPer10s"))} | {fmt(r.get("failedScheduling"))} |')
print()
proxied = f' ({len(by_proxy)} of them answered by the proxy: {figures["operatorAnsweredByProxy"]})' if proxy_log else ""
print(f'operator: {len(op_times)} requests{proxied} (watches left out), peak {figures["operatorPeakRequestsPer10s"]} in 10 s '
      f'(client limit --qps {extra.get("qps")} = {10 * extra.get("qps", 0)} per 10 s); '
      f'CPU {extra.get("operatorCpuSeconds")} s, VmHWM {extra.get("operatorVmHWMKiB", 0) // 1024} MiB; '
      f'job status {extra.get("statusBytes")} bytes')
print("operator requests by kind: " + ", ".join(f"{k}: {v}" for k, v in figures["operatorRequestsByKind"].items()))
