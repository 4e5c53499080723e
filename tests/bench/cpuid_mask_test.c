// Checks bench/cpuid_mask.c (the benches' CPUID mask, loaded by LD_PRELOAD): run as
//   cpuid_mask_test MODE path/to/libcpuid_mask.so
// It first asks the kernel whether CPUID faulting works here (arch_prctl ARCH_SET_CPUID with
// CPUID left on, which changes nothing: -ENODEV without it) and skips where it does not (the mask
// would refuse to run, by design); then runs itself again with INFERLOOP_CPUID_MASK=MODE and
// LD_PRELOAD=the library, and there
// it asserts that CPUID leaf 7 hides what MODE's CPU lacks (avx512: AMX; avx2: AMX, AVX-512,
// AVX-VNNI) while still reporting AVX2, that a real segmentation fault of the process still kills
// it with SIGSEGV (the mask's handler passes faults that are not CPUID on), and that a handler the
// program installs for SIGSEGV is the one called for such a fault. Exit 0: passed; 1: failed;
// 77: skipped (the CPU has no CPUID faulting, or does not have the features to hide).
#include <cpuid.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures = 0;
#define CHECK(cond, ...)                       \
  do {                                         \
    if (!(cond)) {                             \
      fprintf(stderr, "FAILED: " __VA_ARGS__); \
      fprintf(stderr, "\n");                   \
      ++failures;                              \
    }                                          \
  } while (0)

static int HasCpuFlag(const char* flag) {
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return 0;
  char line[8192];
  int found = 0;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "flags", 5) != 0) continue;
    for (char* tok = strtok(line, " \t\n:"); tok != NULL; tok = strtok(NULL, " \t\n:")) {
      if (strcmp(tok, flag) == 0) found = 1;
    }
    break;
  }
  fclose(f);
  return found;
}

static void OnSegv(int sig) {
  (void)sig;
  _exit(42);
}

// Runs fn in a child; returns its wait status.
static int InChild(void (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

static void WriteNull(void) { *(volatile int*)(void*)0 = 1; }

static void WriteNullWithHandler(void) {
  signal(SIGSEGV, OnSegv);
  WriteNull();
}

// Whether the library at path is mapped into this process (/proc/self/maps).
static int IsMapped(const char* path) {
  char real[4096];
  if (realpath(path, real) == NULL) return 0;
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == NULL) return 0;
  char line[8192];
  int found = 0;
  while (!found && fgets(line, sizeof line, f) != NULL) found = strstr(line, real) != NULL;
  fclose(f);
  return found;
}

// The masked run: re-executes this program with the mask preloaded (marked by
// CPUID_MASK_TEST_MASKED so that the second run checks instead of re-executing).
static int RunMasked(char** argv) {
  if (setenv("CPUID_MASK_TEST_MASKED", "1", 1) != 0 || setenv("INFERLOOP_CPUID_MASK", argv[1], 1) != 0 ||
      setenv("LD_PRELOAD", argv[2], 1) != 0) {
    perror("setenv");
    return 1;
  }
  execv("/proc/self/exe", argv);
  perror("execv /proc/self/exe");
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[1], "avx512") != 0 && strcmp(argv[1], "avx2") != 0)) {
    fprintf(stderr, "usage: %s avx512|avx2 path/to/libcpuid_mask.so\n", argv[0]);
    return 1;
  }
  if (getenv("CPUID_MASK_TEST_MASKED") == NULL) {
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1) != 0) {
      printf("SKIPPED: this CPU or kernel has no CPUID faulting (arch_prctl ARCH_SET_CPUID: %s); the mask cannot work here\n",
             strerror(errno));
      return 77;
    }
    if (!HasCpuFlag("avx512f") || !HasCpuFlag("avx2")) {
      printf("SKIPPED: the CPU has no AVX-512 to hide\n");
      return 77;
    }
    return RunMasked(argv);
  }
  const char* env = getenv("INFERLOOP_CPUID_MASK");
  CHECK(IsMapped(argv[2]), "%s is not loaded in the masked run", argv[2]);
  CHECK(env != NULL && strcmp(env, argv[1]) == 0, "INFERLOOP_CPUID_MASK is not %s", argv[1]);
  unsigned a, b, c, d;
  __cpuid_count(7, 0, a, b, c, d);
  const int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1, vnni = (c >> 11) & 1;
  const int amx_tile = (d >> 24) & 1, amx_int8 = (d >> 25) & 1;
  __cpuid_count(7, 1, a, b, c, d);
  const int avx_vnni = (a >> 4) & 1;
  CHECK(avx2, "AVX2 hidden");
  CHECK(!amx_tile && !amx_int8, "AMX visible (tile %d, int8 %d)", amx_tile, amx_int8);
  if (strcmp(argv[1], "avx2") == 0) {
    CHECK(!avx512f && !avx512bw && !vnni && !avx_vnni, "AVX-512 or VNNI visible (F %d BW %d VNNI %d AVX-VNNI %d)",
          avx512f, avx512bw, vnni, avx_vnni);
  } else {
    CHECK(avx512f && avx512bw, "AVX-512 hidden by the avx512 mask");
  }
  int st = InChild(WriteNull);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a real fault did not end with SIGSEGV (status 0x%x)", st);
  st = InChild(WriteNullWithHandler);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42, "the program's SIGSEGV handler was not called (status 0x%x)", st);
  if (failures == 0) printf("cpuid_mask %s: passed\n", argv[1]);
  return failures == 0 ? 0 : 1;
}
