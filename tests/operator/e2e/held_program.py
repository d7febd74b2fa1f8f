#!/usr/bin/env python3
"""A program workload that the e2e test holds in its run and lets go when it chooses.

Tests that make something happen while a run trains (a suspend, a preemption, an API-server or
operator restart, a lost node, a leader that dies) need the run to be training at that moment and
to finish soon after. Sizing the run in steps can do neither on every machine: steps that outlast
the event on a fast machine outlast the test's wait on a slow one. This program makes both a
signal instead (lib.sh: held_job, wait_held, release_run):

* every rank enters its first step (a warm-up step, so nothing held is measured), tells the test
  by creating HOLD_DIR/<job>-r<index>.rank<R>.held (its pod's name inside), and waits there,
  publishing progress as usual (the probe's heartbeat), until HOLD_DIR/<job>-r<index> exists;
* then it runs the spec's steps at about 2 ms each and hands its record to trainbench (the probe,
  python/trainbench_probe), like any program workload.

A run that finds its release file already there (a rerun after the test let it go) never waits.
Nothing here is trainbench's: it is a user's program, through the same launch, store and report.
"""
import os
import time

from trainbench_probe import Probe


def main():
    hold_dir = os.environ["HOLD_DIR"]
    probe = Probe()
    key = f"{probe.config['jobName']}-r{probe.config['index']}"
    release = os.path.join(hold_dir, key)
    for step in probe.steps():
        with probe.step():
            if step == 0 and not os.path.exists(release):
                marker = os.path.join(hold_dir, f"{key}.rank{probe.rank}.held")
                with open(marker + ".tmp", "w", encoding="utf-8") as f:
                    f.write(os.environ.get("POD_NAME", "") + "\n")
                os.replace(marker + ".tmp", marker)
                while not os.path.exists(release):
                    time.sleep(0.05)
            time.sleep(0.002)
            probe.loss(1.0 / (step + 1))
    probe.finish()


if __name__ == "__main__":
    main()
