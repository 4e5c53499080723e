// The OpenMP runtime's spin-wait, limited before it starts.
//
// libgomp (GCC's OpenMP runtime, which Debian's oneDNN and the intra-op pool run on) lets an idle
// worker spin up to GOMP_SPINCOUNT iterations (300,000 by default, milliseconds) before it sleeps.
// On a machine shared with other busy processes the spinning workers take the CPU time the
// working ones need, and a 2-thread run collapses: ResNet-50 at 2 threads on 2 cores next to two
// busy compilers took 520-1220 ms per run with the default and 70-130 ms with GOMP_SPINCOUNT=1000
// (ONNX Runtime 185-253 ms under the same load; bench/busy_neighbours.py measures it).
// libgomp reads the variable once, when the process loads it, so it cannot be changed from
// main(): the CLI sets it and executes itself again, first thing.
#pragma once

namespace inferloop::cli {

// Spin iterations the CLI gives libgomp's workers unless the user chose (GOMP_SPINCOUNT or
// OMP_WAIT_POLICY set in the environment: left as they are).
inline constexpr const char* kGompSpinCount = "1000";

// When neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set: sets GOMP_SPINCOUNT=kGompSpinCount and
// re-executes /proc/self/exe with `argv` (the same command, now with the limit). Returns only when
// nothing had to be done, or when the re-execution failed (then the process goes on with
// libgomp's defaults).
void LimitOmpSpinWait(char** argv);

}  // namespace inferloop::cli
