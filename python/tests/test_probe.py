"""Unit tests of trainbench_probe (the Python side of the probe protocol, docs/workloads.md).
Run: python3 -m unittest discover -s python/tests (ctest: probe.unit)."""
import json
import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from trainbench_probe import Probe, ProbeError  # noqa: E402


def environ(tmp, rank=0, world=2, warmup=1, measure=3, repeats=2):
    config = {"warmupSteps": warmup, "measureSteps": measure, "repeats": repeats, "batchSizePerDevice": 8}
    return {
        "TRAINBENCH_RUN_CONFIG": json.dumps(config),
        "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank), "NODE_RANK": "0",
        "TRAINBENCH_RANK_RECORD_FILE": os.path.join(tmp, "rank-%d.record.json" % rank),
        "TRAINBENCH_RANK_PROGRESS_FILE": os.path.join(tmp, "rank-%d.progress.json" % rank),
        "TRAINBENCH_PROGRESS_FILE": os.path.join(tmp, "progress.json"),
        "POD_NAME": "pod-a",
    }


def read(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class ProbeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_counts_warmup_and_measured_steps_as_the_spec_does(self):
        env = environ(self.dir)
        with Probe(env) as probe:
            self.assertEqual(probe.total_steps, 1 + 2 * 3)
            for i in probe.steps():
                with probe.step():
                    self.assertEqual(probe.measuring, i >= 1)
                    time.sleep(0.002)
                    probe.loss(10.0 - i)
        rec = read(env["TRAINBENCH_RANK_RECORD_FILE"])
        self.assertEqual(rec["kind"], "trainbench.dev/rank-record")
        self.assertEqual(rec["version"], 1)
        self.assertEqual((rec["rank"], rec["worldSize"]), (0, 2))
        self.assertEqual([len(r) for r in rec["stepSeconds"]], [3, 3])
        self.assertTrue(all(s >= 0.002 for r in rec["stepSeconds"] for s in r))
        self.assertEqual(rec["initialLoss"], 9.0)  # loop step 1 is the first measured
        self.assertEqual(rec["finalLoss"], 4.0)
        self.assertGreater(rec["peakMemoryBytes"], 0)
        self.assertIn("Python", rec["environment"]["framework"])

    def test_time_in_waiting_phases_is_communication(self):
        env = environ(self.dir, warmup=0, measure=2, repeats=1)
        with Probe(env) as probe:
            for _ in probe.steps():
                with probe.step():
                    time.sleep(0.01)
                    with probe.phase("all-reduce"):
                        time.sleep(0.02)
                    probe.phase("optimizer")
                    time.sleep(0.005)
        rec = read(env["TRAINBENCH_RANK_RECORD_FILE"])
        for step, comm in zip(rec["stepSeconds"][0], rec["communicationSeconds"][0]):
            self.assertGreaterEqual(comm, 0.019)
            self.assertLess(comm, step)
            self.assertGreaterEqual(step - comm, 0.014)  # compute: 10 + 5 ms

    def test_progress_records_say_where_the_rank_stands(self):
        env = environ(self.dir, rank=0)
        probe = Probe(env, heartbeat_seconds=0.05)
        first = read(env["TRAINBENCH_RANK_PROGRESS_FILE"])
        self.assertEqual(first["phase"], "starting")
        self.assertEqual(first["step"], -1)
        self.assertEqual(first["pod"], "pod-a")
        with probe.step():
            probe.phase("all-gather")
            # The heartbeat (every 0.05 s) publishes the phase and the time in it; followed until a
            # record shows 0.1 s in it, however late the heartbeat thread gets the CPU.
            deadline = time.monotonic() + 30
            rec = read(env["TRAINBENCH_RANK_PROGRESS_FILE"])
            while rec["phaseSeconds"] <= 0.1 or rec["phase"] != "all-gather":
                self.assertLess(time.monotonic(), deadline, f"no record 0.1 s into all-gather: {rec}")
                time.sleep(0.02)
                rec = read(env["TRAINBENCH_RANK_PROGRESS_FILE"])
            self.assertEqual((rec["step"], rec["phase"], rec["collective"]), (0, "all-gather", 1))
            self.assertGreater(rec["published"], first["published"])
        run = read(env["TRAINBENCH_PROGRESS_FILE"])  # rank 0's run progress, as the worker writes it
        self.assertEqual((run["phase"], run["step"], run["steps"]), ("warmup", 1, 1))
        for _ in range(probe.total_steps - 1):
            with probe.step():
                pass
        probe.finish()
        self.assertEqual(read(env["TRAINBENCH_RANK_PROGRESS_FILE"])["phase"], "done")
        run = read(env["TRAINBENCH_PROGRESS_FILE"])
        self.assertEqual((run["phase"], run["repeat"], run["step"]), ("measure", 2, 3))

    def test_a_late_heartbeat_does_not_overwrite_done(self):
        # The heartbeat makes a record and loses the CPU before writing it, while the loop finishes:
        # the last record must still be "done" (a finished rank's record left in its last phase
        # reads as a rank stuck there).
        env = environ(self.dir, rank=0)
        probe = Probe(env, heartbeat_seconds=0.01)
        write = probe._sink.progress
        in_write = threading.Event()

        def late(text):
            if threading.current_thread() is probe._heartbeat and json.loads(text)["phase"] != "done":
                in_write.set()
                time.sleep(0.3)
            write(text)

        probe._sink.progress = late
        for _ in range(probe.total_steps):
            with probe.step():
                pass
        self.assertTrue(in_write.wait(30))
        probe.finish()
        self.assertEqual(read(env["TRAINBENCH_RANK_PROGRESS_FILE"])["phase"], "done")

    def test_only_rank_zero_writes_the_run_progress(self):
        env = environ(self.dir, rank=1)
        with Probe(env) as probe:
            for _ in probe.steps():
                with probe.step():
                    pass
        self.assertFalse(os.path.exists(env["TRAINBENCH_PROGRESS_FILE"]))
        self.assertEqual(read(env["TRAINBENCH_RANK_RECORD_FILE"])["rank"], 1)

    def test_finishing_early_writes_no_record(self):
        env = environ(self.dir)
        probe = Probe(env)
        with probe.step():
            pass
        with self.assertRaisesRegex(ProbeError, "measured 0 of 6 steps"):
            probe.finish()
        self.assertFalse(os.path.exists(env["TRAINBENCH_RANK_RECORD_FILE"]))

    def test_extra_steps_are_not_recorded(self):
        env = environ(self.dir, warmup=0, measure=2, repeats=1)
        with Probe(env) as probe:
            for _ in range(5):
                with probe.step():
                    pass
        self.assertEqual(len(read(env["TRAINBENCH_RANK_RECORD_FILE"])["stepSeconds"][0]), 2)

    def test_misuse_is_refused(self):
        probe = Probe(environ(self.dir))
        with self.assertRaisesRegex(ValueError, "unknown phase 'data'"):
            probe.phase("data")
        with probe.step():
            with self.assertRaisesRegex(ProbeError, "inside another step"):
                with probe.step():
                    pass
            with self.assertRaisesRegex(ProbeError, "non-finite loss"):
                probe.loss(float("nan"))

    def test_a_failed_step_is_not_measured(self):
        env = environ(self.dir, warmup=0, measure=1, repeats=1)
        probe = Probe(env)
        with self.assertRaises(RuntimeError):
            with probe.step():
                raise RuntimeError("out of memory")
        with self.assertRaisesRegex(ProbeError, "measured 0 of 1"):
            probe.finish()

    def test_outside_trainbench_the_environment_is_named(self):
        env = environ(self.dir)
        del env["TRAINBENCH_RUN_CONFIG"]
        with self.assertRaisesRegex(ProbeError, "TRAINBENCH_RUN_CONFIG is not set"):
            Probe(env)
        env = environ(self.dir)
        env["RANK"] = "x"
        with self.assertRaisesRegex(ProbeError, "RANK='x' is not an integer"):
            Probe(env)


if __name__ == "__main__":
    unittest.main()
