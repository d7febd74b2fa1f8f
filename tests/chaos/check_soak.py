#!/usr/bin/env python3
"""The chaos soak's end checks (chaos_soak.sh): reads the jobs, the Events and the API server's audit
log, prints the figures (a text block, then one JSON line) and exits 1 when a promise broke:

- every job Succeeded, with a report holding every run of its plan, each Succeeded;
- no pod created twice (the audit log's successful pod creates, by name);
- each transition Event of the operator recorded exactly once: per job one JobSucceeded, per
  run one RunSucceeded, one RunStarted per attempt (0..restarts) and one RunRestarted per
  restart, each with count 1. A repeat is any further Event of the same (job, reason, run,
  attempt), or a count above 1; a missing one is a transition without its Event;
- no pod, no container and no pod process left.
"""
import argparse
import collections
import json
import re
import sys
from datetime import datetime


def parse_time(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")


def transition_key(ev):
    """(reason, run, attempt) of an operator Event, from its message (not its name)."""
    reason, msg = ev.get("reason", ""), ev.get("message", "")
    run = re.match(r"run (\d+)", msg)
    run = int(run.group(1)) if run else None
    attempt = None
    if reason == "RunStarted":
        m = re.search(r"attempt (\d+):", msg)
        attempt = int(m.group(1)) if m else None
    elif reason == "RunRestarted":
        m = re.search(r"restarted \((\d+)/", msg)
        attempt = int(m.group(1)) - 1 if m else None
    return (reason, run, attempt)


def expected_transitions(job):
    st = job.get("status", {})
    out = [("JobSucceeded", None, None)]
    for i, rs in enumerate(st.get("runs", [])):
        restarts = rs.get("restarts", 0)
        out.append(("RunSucceeded", i, None))
        out += [("RunStarted", i, a) for a in range(restarts + 1)]
        out += [("RunRestarted", i, a) for a in range(restarts)]
    return out


def check_jobs(jobs, problems):
    durations, restarts = [], 0
    for job in jobs:
        name, st = job["metadata"]["name"], job.get("status", {})
        if st.get("phase") != "Succeeded":
            problems.append(f"job {name} is {st.get('phase')}: {json.dumps(st.get('conditions', []))[:400]}")
            continue
        runs = st.get("report", {}).get("runs", [])
        if len(runs) != st.get("runsTotal") or any(r.get("phase") != "Succeeded" for r in runs):
            problems.append(f"job {name}: incomplete report ({len(runs)} of {st.get('runsTotal')} runs)")
        for r in runs:
            if not r.get("ranks"):
                problems.append(f"job {name}: a run without rank rows")
        restarts += sum(rs.get("restarts", 0) for rs in st.get("runs", []))
        durations.append((parse_time(st["completionTime"]) - parse_time(job["metadata"]["creationTimestamp"])).total_seconds())
    return durations, restarts


def check_events(jobs, events, problems):
    by_job = collections.defaultdict(list)
    for ev in events:
        if ev.get("reportingComponent") == "trainbench-operator" or ev.get("source", {}).get("component") == "trainbench-operator":
            by_job[ev["involvedObject"].get("uid")].append(ev)
    repeats = missing = 0
    for job in jobs:
        seen = collections.Counter()
        for ev in by_job.get(job["metadata"]["uid"], []):
            key = transition_key(ev)
            seen[key] += 1
            if ev.get("count", 1) > 1:
                repeats += ev["count"] - 1
                problems.append(f"job {job['metadata']['name']}: Event {key} has count {ev['count']}")
        for key, n in seen.items():
            if n > 1:
                repeats += n - 1
                problems.append(f"job {job['metadata']['name']}: Event {key} recorded {n} times")
        if job.get("status", {}).get("phase") != "Succeeded":
            continue
        for key in expected_transitions(job):
            if seen[key] == 0:
                missing += 1
                problems.append(f"job {job['metadata']['name']}: no Event for {key}")
    return repeats, missing


def duplicate_pods(audit_path):
    created = collections.Counter()
    with open(audit_path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            # A pod's own create, not its binding (the scheduler's create of pods/binding).
            if (e.get("verb") == "create" and e.get("resource") == "pods" and not e.get("subresource")
                    and e.get("code") == 201):
                created[(e.get("namespace"), e.get("name"))] += 1
    return sum(n - 1 for n in created.values() if n > 1), len(created)


def main():
    ap = argparse.ArgumentParser()
    for a in ("jobs", "events", "audit"):
        ap.add_argument("--" + a, required=True)
    for a in ("seed", "chaos-seconds", "operator-kills", "pod-kills", "watch-drops", "compactions", "apiserver-restarts",
              "relists-on-gone", "leftover-pods",
              "leftover-containers", "leftover-processes", "leader-takeovers"):
        ap.add_argument("--" + a, type=int, default=0)
    args = ap.parse_args()
    jobs = json.load(open(args.jobs))["items"]
    events = json.load(open(args.events))["items"]
    problems = []
    durations, restarts = check_jobs(jobs, problems)
    repeats, missing = check_events(jobs, events, problems)
    duplicates, pods_created = duplicate_pods(args.audit)
    if duplicates:
        problems.append(f"{duplicates} pods created more than once")
    for what, n in (("pods", args.leftover_pods), ("containers", args.leftover_containers),
                    ("pod processes", args.leftover_processes)):
        if n:
            problems.append(f"{n} {what} left")
    fig = {
        "seed": args.seed, "chaosSeconds": args.chaos_seconds, "jobs": len(jobs),
        "succeeded": sum(1 for j in jobs if j.get("status", {}).get("phase") == "Succeeded"),
        "runRestarts": restarts, "podsCreated": pods_created, "operatorKills": args.operator_kills,
        "leaderTakeovers": args.leader_takeovers, "podKills": args.pod_kills, "watchDrops": args.watch_drops,
        "compactions": args.compactions, "apiServerRestarts": args.apiserver_restarts,
        "relistsOnGone": args.relists_on_gone, "duplicatePods": duplicates, "leftoverPods": args.leftover_pods,
        "leftoverProcesses": args.leftover_processes, "eventRepeats": repeats, "eventsMissing": missing,
        "secondsPerJobMean": round(sum(durations) / len(durations), 1) if durations else None,
        "secondsPerJobMax": max(durations) if durations else None,
    }
    for p in problems:
        print("PROBLEM: " + p)
    print("chaos soak figures:")
    for k, v in fig.items():
        print(f"  {k}: {v}")
    print(json.dumps(fig))
    return 1 if problems or not jobs else 0


if __name__ == "__main__":
    sys.exit(main())
