// cpuid_mask: an LD_PRELOAD library that makes a process see this CPU as a CPU without AMX
// (INFERLOOP_CPUID_MASK=avx512: AVX-512 with VNNI and BF16, as an AMD EPYC Zen 4 or an Ice Lake
// Xeon) or as an AVX2-only CPU (INFERLOOP_CPUID_MASK=avx2: no AVX-512, no AMX, no AVX-VNNI), for
// the benchmarks' anchors (ONNX Runtime, llama.cpp), which pick their kernels from CPUID and have
// no switch to cap them, so that a bench row "on the avx2 path" compares with the anchor as it
// runs on an AVX2 machine rather than with its AMX kernels.
//
// How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, needs the cpuid_fault CPU flag) makes
// every CPUID instruction of the process raise SIGSEGV; the handler runs the real CPUID (faulting
// off for that instruction), clears the feature bits of leaf 7 that the chosen CPU lacks and
// resumes after the instruction. The setting is per thread, inherited by threads and fork, reset
// by execve (LD_PRELOAD in the environment loads the library again there). SIGSEGV handlers that
// the program installs later are kept as the ones to chain to (sigaction/signal are wrapped), so
// a program's own handler still sees its real faults.
//
// Limits: code that does not ask CPUID (a hard-coded instruction set, or the ISA state bits of
// XGETBV alone) is not masked; glibc chose its string functions before this library loads
// (scripts set GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,... with it: bench/isa_mask.py). Without
// CPUID faulting, or with an unknown mode, the process exits with status 2 and a message rather
// than running unmasked.
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

enum { kNone, kAvx512, kAvx2 };
static int g_mode = kNone;
static struct sigaction g_chained;  // the program's SIGSEGV action (SIG_DFL until it sets one)
typedef int (*SigactionFn)(int, const struct sigaction*, struct sigaction*);
static SigactionFn g_real_sigaction;

static long SetCpuid(int enabled) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled); }

static void RealCpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

#define BIT(n) (1u << (n))

// Clears what the emulated CPU does not have (Intel SDM vol. 2A, CPUID leaf 07H).
static void Mask(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  if (leaf == 7 && sub == 0) {
    r[3] &= ~(BIT(22) | BIT(24) | BIT(25));  // EDX: AMX-BF16, AMX-TILE, AMX-INT8
    if (g_mode == kAvx2) {
      // EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL.
      r[1] &= ~(BIT(16) | BIT(17) | BIT(21) | BIT(26) | BIT(27) | BIT(28) | BIT(30) | BIT(31));
      // ECX: AVX512_VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ.
      r[2] &= ~(BIT(1) | BIT(6) | BIT(11) | BIT(12) | BIT(14));
      // EDX: AVX512_4VNNIW, 4FMAPS, VP2INTERSECT, FP16.
      r[3] &= ~(BIT(2) | BIT(3) | BIT(8) | BIT(23));
    }
  } else if (leaf == 7 && sub == 1) {
    r[0] &= ~BIT(21);  // EAX: AMX-FP16
    r[3] &= ~BIT(8);   // EDX: AMX-COMPLEX
    if (g_mode == kAvx2) {
      r[0] &= ~(BIT(4) | BIT(5) | BIT(23));          // EAX: AVX-VNNI, AVX512_BF16, AVX-IFMA
      r[3] &= ~(BIT(4) | BIT(5) | BIT(10) | BIT(19));  // EDX: AVX-VNNI-INT8, AVX-NE-CONVERT, AVX-VNNI-INT16, AVX10
    }
  }
}

static void Chain(int sig, siginfo_t* si, void* uc) {
  if (g_chained.sa_flags & SA_SIGINFO) {
    if (g_chained.sa_sigaction != NULL) {
      g_chained.sa_sigaction(sig, si, uc);
      return;
    }
  } else if (g_chained.sa_handler != SIG_DFL && g_chained.sa_handler != SIG_IGN) {
    g_chained.sa_handler(sig);
    return;
  }
  // Default action: restore it and return, so that the faulting instruction faults again.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  g_real_sigaction(SIGSEGV, &dfl, NULL);
}

static void OnSegv(int sig, siginfo_t* si, void* uc_) {
  ucontext_t* uc = (ucontext_t*)uc_;
  greg_t* g = uc->uc_mcontext.gregs;
  const uint8_t* ip = (const uint8_t*)g[REG_RIP];
  if (si->si_code != SI_KERNEL || ip[0] != 0x0F || ip[1] != 0xA2) {
    Chain(sig, si, uc_);
    return;
  }
  uint32_t r[4];
  const uint32_t leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX];
  SetCpuid(1);
  RealCpuid(leaf, sub, r);
  SetCpuid(0);
  Mask(leaf, sub, r);
  g[REG_RAX] = r[0];
  g[REG_RBX] = r[1];
  g[REG_RCX] = r[2];
  g[REG_RDX] = r[3];
  g[REG_RIP] += 2;
}

static void Die(const char* what) {
  fprintf(stderr, "cpuid_mask: %s\n", what);
  _exit(2);
}

__attribute__((constructor)) static void Install(void) {
  g_real_sigaction = (SigactionFn)dlsym(RTLD_NEXT, "sigaction");
  const char* mode = getenv("INFERLOOP_CPUID_MASK");
  if (mode == NULL || mode[0] == '\0') return;  // loaded but asked for nothing: a no-op
  if (strcmp(mode, "avx512") == 0) {
    g_mode = kAvx512;
  } else if (strcmp(mode, "avx2") == 0) {
    g_mode = kAvx2;
  } else {
    Die("INFERLOOP_CPUID_MASK must be avx512 or avx2");
  }
  memset(&g_chained, 0, sizeof g_chained);
  g_chained.sa_handler = SIG_DFL;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = OnSegv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (g_real_sigaction(SIGSEGV, &sa, NULL) != 0) Die("cannot install the SIGSEGV handler");
  if (SetCpuid(0) != 0) Die("this CPU or kernel has no CPUID faulting (arch_prctl ARCH_SET_CPUID failed)");
}

// The program's own SIGSEGV handlers become the chained ones; other signals pass through.
int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (g_real_sigaction == NULL) g_real_sigaction = (SigactionFn)dlsym(RTLD_NEXT, "sigaction");
  if (sig != SIGSEGV || g_mode == kNone) return g_real_sigaction(sig, act, old);
  if (old != NULL) *old = g_chained;
  if (act != NULL) g_chained = *act;
  return 0;
}

sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}
