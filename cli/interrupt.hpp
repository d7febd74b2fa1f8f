#pragma once

namespace trainbench {

/// SIGINT, SIGTERM and SIGHUP on the CLI become a flag that the local executor polls: it then
/// stops every rank of the current run, reaps them and returns, and the CLI exits 128 + signal.
/// The handlers only record the signal (async-signal-safe).
void install_interrupt_handlers();

/// The first interrupting signal received, or 0.
int interrupt_signal();

/// How many interrupting signals have arrived (a second one skips the SIGTERM grace period).
int interrupt_count();

/// Clears the flag (tests).
void reset_interrupt();

}  // namespace trainbench
