"""trainbench's measuring library for a user's own training program.

A BenchmarkJob workload with a ``program`` runs that program as every rank of each run, with
torchrun's environment and trainbench's own variables (docs/workloads.md). The program creates
one :class:`Probe` per process and wraps each training step in ``probe.step()``; the probe

* counts the steps as the spec does: ``warmupSteps`` unmeasured, then ``repeats`` rounds of
  ``measureSteps`` measured ones (``probe.steps()`` yields exactly that many);
* times each step, and within it the time spent in waiting phases (``all-reduce``, ``all-gather``,
  ``broadcast``, ``send``, ``recv``): that is the step's exposed communication, the rest its compute;
* keeps the loss of the first and the last measured step;
* publishes a progress record (step, phase, since when) about once a second from a heartbeat
  thread, so a hang is named with the rank and its phase;
* at the end writes this rank's record, which the executor turns into the run's result.

Nothing here needs PyTorch; when the program has imported torch, the probe also reports the
CUDA allocator's peak memory and uses torch's TCPStore where records go to a store.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import socket
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, List, Optional

__all__ = ["Probe", "ProbeError", "PHASES", "WAITING_PHASES", "RECORD_KIND", "RECORD_VERSION"]
__version__ = "0.1.0"

RECORD_KIND = "trainbench.dev/rank-record"
RECORD_VERSION = 1

#: The phases a rank can be in, as trainbench's hang watch names them (core/results/rank_progress.hpp).
PHASES = ("starting", "forward", "backward", "all-reduce", "all-gather", "broadcast", "optimizer",
          "send", "recv", "done")
#: The phases that wait on other ranks: time in them is the step's exposed communication.
WAITING_PHASES = frozenset({"all-reduce", "all-gather", "broadcast", "send", "recv"})
_COLLECTIVES = frozenset({"all-reduce", "all-gather", "broadcast"})


class ProbeError(RuntimeError):
    """The program used the probe in a way that cannot give a valid record."""


def _env_int(env, name: str, default: Optional[int] = None) -> int:
    text = env.get(name)
    if text is None or text == "":
        if default is None:
            raise ProbeError(f"{name} is not set: run this program through trainbench "
                             "(a BenchmarkJob workload with a program, docs/workloads.md)")
        return default
    try:
        return int(text)
    except ValueError:
        raise ProbeError(f"{name}={text!r} is not an integer") from None


def _write_atomic(path: str, text: str) -> None:
    """Writes `text` to `path` by a rename, so a reader never sees half of it."""
    tmp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


class _FileSink:
    """trainbench run: records are files beside the run (paths from the environment)."""

    def __init__(self, record_file: str, progress_file: Optional[str], run_progress_file: Optional[str]):
        self.record_file = record_file
        self.progress_file = progress_file
        self.run_progress_file = run_progress_file

    def progress(self, text: str) -> None:
        if self.progress_file:
            _write_atomic(self.progress_file, text)

    def run_progress(self, text: str) -> None:
        if self.run_progress_file:
            _write_atomic(self.run_progress_file, text)

    def record(self, text: str) -> None:
        _write_atomic(self.record_file, text)


class _StoreSink:
    """The operator's pods: records go to the run's store on the master pod (host:port from
    TRAINBENCH_STORE), keys trainbench/progress/<rank> and trainbench/record/<rank>."""

    def __init__(self, address: str, rank: int):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ProbeError(f"TRAINBENCH_STORE={address!r} is not host:port")
        try:
            from torch.distributed import TCPStore  # the store trainbench's master pod serves
        except ImportError as e:  # pragma: no cover - needs a cluster
            raise ProbeError("TRAINBENCH_STORE is set but torch.distributed is not importable: " + str(e)) from e
        self.store = TCPStore(host, int(port), is_master=False, wait_for_workers=False)
        self.rank = rank
        self.lock = threading.Lock()

    def progress(self, text: str) -> None:
        with self.lock:
            self.store.set(f"trainbench/progress/{self.rank}", text)

    def run_progress(self, text: str) -> None:
        pass  # the master pod serves rank 0's progress record as the run's progress

    def record(self, text: str) -> None:
        with self.lock:
            self.store.set(f"trainbench/record/{self.rank}", text)
            # done with trainbench's keys: the master keeps the store up until every rank says so
            self.store.add("trainbench/finished", 1)


class _Phase:
    """What probe.phase() returns: the phase is entered already; leaving a `with` block goes
    back to the phase before it."""

    def __init__(self, probe: "Probe", previous: str):
        self._probe = probe
        self._previous = previous

    def __enter__(self) -> "_Phase":
        return self

    def __exit__(self, *exc) -> None:
        self._probe.phase(self._previous)


class Probe:
    """One rank's measurements. Create one per process, after or before init_process_group.

    Args:
        environ: the environment to read (default os.environ).
        heartbeat_seconds: how often the progress record is published.
    """

    def __init__(self, environ=None, heartbeat_seconds: float = 1.0):
        env = os.environ if environ is None else environ
        config_text = env.get("TRAINBENCH_RUN_CONFIG")
        if not config_text:
            raise ProbeError("TRAINBENCH_RUN_CONFIG is not set: run this program through trainbench "
                             "(a BenchmarkJob workload with a program, docs/workloads.md)")
        try:
            self.config = json.loads(config_text)
        except ValueError as e:
            raise ProbeError(f"TRAINBENCH_RUN_CONFIG is not JSON: {e}") from None
        self.rank = _env_int(env, "RANK")
        self.world_size = _env_int(env, "WORLD_SIZE")
        self.local_rank = _env_int(env, "LOCAL_RANK", 0)
        self.node_rank = _env_int(env, "NODE_RANK", _env_int(env, "GROUP_RANK", 0))
        self.warmup_steps = int(self.config["warmupSteps"])
        self.measure_steps = int(self.config["measureSteps"])
        self.repeats = int(self.config["repeats"])
        self.batch_size = int(self.config["batchSizePerDevice"])
        self.total_steps = self.warmup_steps + self.repeats * self.measure_steps
        self._pod = env.get("POD_NAME", "")
        self._node = env.get("NODE_NAME", "")
        if env.get("TRAINBENCH_STORE"):
            self._sink = _StoreSink(env["TRAINBENCH_STORE"], self.rank)
        else:
            record_file = env.get("TRAINBENCH_RANK_RECORD_FILE")
            if not record_file:
                raise ProbeError("TRAINBENCH_RANK_RECORD_FILE is not set: run this program through trainbench")
            self._sink = _FileSink(record_file, env.get("TRAINBENCH_RANK_PROGRESS_FILE"),
                                   env.get("TRAINBENCH_PROGRESS_FILE") if self.rank == 0 else None)
        self._lock = threading.Lock()
        # Held while a progress record is made and written, so that records are written in the
        # order they were made: without it the heartbeat could make a record, lose the CPU, and
        # write it after finish() had written "done", leaving a finished rank in its last phase.
        self._publish_lock = threading.Lock()
        self._step = -1            # 0-based loop step of the current / last step
        self._in_step = False
        self._phase = "starting"
        self._since_wall = time.time()
        self._since = time.perf_counter()
        self._collective = 0
        self._step_start = 0.0
        self._comm = 0.0           # waiting time inside the current step
        self._steps: List[float] = []
        self._comms: List[float] = []
        self._losses: List[Optional[float]] = []
        self._step_loss: Optional[float] = None
        self._finished = False
        self._stop = threading.Event()
        self._publish()
        self._heartbeat = threading.Thread(target=self._beat, args=(heartbeat_seconds,),
                                           name="trainbench-probe-heartbeat", daemon=True)
        self._heartbeat.start()

    # ---- the loop

    def steps(self) -> Iterator[int]:
        """The loop's step indexes, 0 .. warmup + repeats x measure - 1."""
        return iter(range(self.total_steps))

    @property
    def measuring(self) -> bool:
        """True while the current step is a measured one."""
        return self._step >= self.warmup_steps

    @contextmanager
    def step(self):
        """Times one training step (its forward, backward, communication and optimizer)."""
        with self._lock:
            if self._in_step:
                raise ProbeError("probe.step() entered inside another step")
            if self._finished:
                raise ProbeError("probe.step() after finish()")
            self._in_step = True
            self._step += 1
            self._comm = 0.0
            self._step_loss = None
            self._enter("forward")
            self._step_start = self._since
        ok = False
        try:
            yield self
            ok = True
        finally:
            with self._lock:
                end = time.perf_counter()
                self._account(end)
                self._in_step = False
                seconds = end - self._step_start
                measured = self._step >= self.warmup_steps and len(self._steps) < self.repeats * self.measure_steps
                if ok and measured:
                    self._steps.append(seconds)
                    self._comms.append(min(self._comm, seconds))
                    self._losses.append(self._step_loss)
                self._enter("forward")
            if ok:
                self._run_progress(seconds)

    def phase(self, name: str) -> _Phase:
        """Enters phase `name` (one of PHASES) until the next phase() or the step's end; as a
        context manager it goes back to the phase before it when the block ends."""
        if name not in PHASES:
            raise ValueError(f"unknown phase {name!r}: one of {', '.join(PHASES)}")
        with self._lock:
            previous = self._phase
            self._account(time.perf_counter())
            self._enter(name)
        return _Phase(self, previous)

    def loss(self, value) -> None:
        """This step's training loss (a float or a 0-d tensor); the report shows the first and
        the last measured step's, averaged over ranks."""
        if hasattr(value, "item"):
            value = value.item()
        value = float(value)
        if value != value or value in (float("inf"), float("-inf")):
            raise ProbeError(f"non-finite loss {value} at step {self._step}")
        self._step_loss = value

    # ---- the end

    def finish(self, parameter_count: int = 0, optimizer_state_bytes: int = 0,
               peak_memory_bytes: Optional[int] = None) -> None:
        """Writes this rank's record. Raises ProbeError (and writes none) when fewer steps were
        measured than the spec asks for."""
        if self._finished:
            return
        want = self.repeats * self.measure_steps
        if len(self._steps) < want:
            self._finished = True
            self._stop.set()
            raise ProbeError(f"rank {self.rank} measured {len(self._steps)} of {want} steps "
                             f"(warmupSteps {self.warmup_steps}, then {self.repeats} x {self.measure_steps}): "
                             "loop over probe.steps() and wrap each in probe.step()")
        with self._lock:
            self._enter("done")
        self._publish()
        self._stop.set()
        self._heartbeat.join(timeout=5)
        self._finished = True
        self._sink.record(json.dumps(self.record(parameter_count, optimizer_state_bytes, peak_memory_bytes)))

    def record(self, parameter_count: int = 0, optimizer_state_bytes: int = 0,
               peak_memory_bytes: Optional[int] = None) -> dict:
        """This rank's record as the protocol's JSON object (docs/workloads.md)."""
        m = self.measure_steps
        split = lambda xs: [xs[r * m:(r + 1) * m] for r in range(self.repeats)]  # noqa: E731
        losses = [x for x in self._losses if x is not None]
        rec = {
            "kind": RECORD_KIND,
            "version": RECORD_VERSION,
            "rank": self.rank,
            "worldSize": self.world_size,
            "stepSeconds": split(self._steps),
            "communicationSeconds": split(self._comms),
            "peakMemoryBytes": int(peak_memory_bytes if peak_memory_bytes is not None else _peak_memory_bytes()),
            "parameterCount": int(parameter_count),
            "optimizerStateBytes": int(optimizer_state_bytes),
            "environment": _environment(),
        }
        if losses:
            rec["initialLoss"] = losses[0]
            rec["finalLoss"] = losses[-1]
        return rec

    def __enter__(self) -> "Probe":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.finish()
        else:
            self._stop.set()

    # ---- internals (callers hold self._lock where it matters)

    def _enter(self, name: str) -> None:
        self._phase = name
        self._since = time.perf_counter()
        self._since_wall = time.time()
        if name in _COLLECTIVES:
            self._collective += 1

    def _account(self, now: float) -> None:
        if self._in_step and self._phase in WAITING_PHASES:
            self._comm += now - self._since

    def _progress_json(self) -> str:
        with self._lock:
            rec = {
                "rank": self.rank, "role": "trainer", "nodeRank": self.node_rank, "localRank": self.local_rank,
                "pid": os.getpid(), "step": self._step, "phase": self._phase, "collective": self._collective,
                "since": self._since_wall, "phaseSeconds": time.perf_counter() - self._since,
                "published": time.time(),
            }
        if self._pod:
            rec["pod"] = self._pod
        if self._node:
            rec["node"] = self._node
        return json.dumps(rec)

    def _publish(self) -> None:
        try:
            with self._publish_lock:
                self._sink.progress(self._progress_json())
        except OSError as e:  # a full disk must not kill the training; the hang watch will tell
            print(f"trainbench-probe rank {self.rank}: cannot publish progress: {e}", file=sys.stderr)

    def _beat(self, period: float) -> None:
        while not self._stop.wait(period):
            self._publish()

    def _run_progress(self, seconds: float) -> None:
        if self.rank != 0:
            return
        s = self._step
        if s < self.warmup_steps:
            doc = {"phase": "warmup", "repeat": 0, "repeats": self.repeats, "step": s + 1,
                   "steps": self.warmup_steps, "secPerIter": seconds}
        else:
            m = s - self.warmup_steps
            doc = {"phase": "measure", "repeat": min(m // self.measure_steps, self.repeats - 1) + 1,
                   "repeats": self.repeats, "step": m % self.measure_steps + 1, "steps": self.measure_steps,
                   "secPerIter": seconds}
        try:
            self._sink.run_progress(json.dumps(doc))
        except OSError:
            pass


def _peak_memory_bytes() -> int:
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                return int(torch.cuda.max_memory_allocated())
        except Exception:  # noqa: BLE001 - a probe must not fail the training for a statistic
            pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux: KiB


def _environment() -> dict:
    parts = []
    torch = sys.modules.get("torch")
    if torch is not None:
        parts.append(f"torch {getattr(torch, '__version__', '?')}")
    for name in ("deepspeed", "tensorflow", "jax"):
        mod = sys.modules.get(name)
        if mod is not None:
            parts.append(f"{name} {getattr(mod, '__version__', '?')}")
    parts.append(f"Python {platform.python_version()}")
    env = {"framework": ", ".join(parts), "hostname": socket.gethostname(), "deviceName": _device_name()}
    if torch is not None:
        try:
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                env["cudaVersion"] = str(torch.version.cuda)
                env["deviceName"] = torch.cuda.get_device_name()
        except Exception:  # noqa: BLE001
            pass
    return env


def _device_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
