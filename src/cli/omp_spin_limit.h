// The OpenMP runtime's spin-wait, limited before it starts.
//
// libgomp (GCC's OpenMP runtime, which Debian's oneDNN and the intra-op pool run on) lets an idle
// worker spin up to GOMP_SPINCOUNT iterations (300,000 by default: milliseconds) before it sleeps.
// On a machine shared with other busy processes the spinning workers take the CPU time the
// working ones need, and a 2-thread run collapses: ResNet-50 at 2 threads on 2 cores next to busy
// compilers took 505-1216 ms per run with the default and 77-142 ms with a limit of 1,000 (ONNX
// Runtime 185-253 ms under the same load). libgomp reads the variable once, when the process
// loads it, so it cannot be changed from main(): the CLI sets it and executes itself again.
//
// The value is a trade-off measured here (2 threads, medians of 2-3 alternating rounds, p50 ms):
//   next to two busy loops  ResNet-50 b1: 1k 87, 10k 78, 30k 94, ORT 75;
//                           BERT b1:      1k 234, 10k 255, 30k 423, ORT 381;
//   idle machine            BERT b1:      1k 145, 10k 141, 30k 115, 300k 120;
//                           ResNet-50 b1: 1k 42.8, 10k 43.5, 30k 41.3, 300k 41.1;
//                           3-D U-Net b1: 1k 76, 10k 71, 30k 76, 300k 75.
// 10,000 keeps nearly all of the gain under load and costs at most a few percent idle on
// convolution models (BERT, whose regions are further apart, loses ~15% idle). A machine that
// runs nothing else can set GOMP_SPINCOUNT=300000 (libgomp's default) itself.
#pragma once

namespace inferloop::cli {

// Spin iterations the CLI gives libgomp's workers unless the user chose (GOMP_SPINCOUNT or
// OMP_WAIT_POLICY set in the environment: left as they are).
inline constexpr const char* kGompSpinCount = "10000";

// When neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set: sets GOMP_SPINCOUNT=kGompSpinCount and
// re-executes /proc/self/exe with `argv` (the same command, now with the limit). Returns only when
// nothing had to be done, or when the re-execution failed (then the process goes on with
// libgomp's defaults).
void LimitOmpSpinWait(char** argv);

}  // namespace inferloop::cli
