// IL_ISA_CLONES: compiles a function (template) once per instruction set, AVX-512 F, AVX2 and
// baseline x86-64, and picks one at load time (GCC function multiversioning). For small loops
// written for the auto-vectorizer, where a copy per ISA is all the point (larger kernels use the
// simd_impl.h instantiations instead). Clang does not clone function templates; there (the
// sanitizer build) the plain version is used.
#pragma once

#if defined(__clang__)
#define IL_ISA_CLONES
#else
#define IL_ISA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
