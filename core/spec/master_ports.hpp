#pragma once

namespace trainbench {

/// The master pod of a run on Kubernetes listens on two ports: spec.masterPort (the rendezvous
/// store, MASTER_PORT) and this one, where it serves its run's progress (GET /progress, a
/// RunProgressSample: core/results/run_progress.hpp; container port "progress"), which the operator polls
/// (docs/operator.md, "Progress"). spec.masterPort may therefore not be this port: core's
/// validation and a CEL rule of the CRD refuse it.
inline constexpr int kMasterProgressPort = 9390;

}  // namespace trainbench
