// Internal to src/compute/simd: calls the instantiation of a per-instruction-set function template
// that ActiveIsa() selects.
//
// For loops written once for the auto-vectorizer as templates on Isa (in an *_impl.h header) and
// instantiated in one translation unit per instruction set, each compiled with its set's -m flags
// (CMakeLists.txt). Those instantiations must only be entered through CallForActiveIsa, which
// never picks a set the CPU lacks; INFERLOOP_ISA selects the lower ones for tests.
#pragma once

#include <type_traits>

#include "compute/simd/cpu_isa.h"

namespace inferloop {
namespace simd {

template <Isa kIsa>
using IsaTag = std::integral_constant<Isa, kIsa>;

// fn(IsaTag<ActiveIsa()>()); fn uses the tag's ::value as the template argument of the loop it calls.
template <typename Fn>
void CallForActiveIsa(Fn&& fn) {
  switch (ActiveIsa()) {
    case Isa::kAvx512: return fn(IsaTag<Isa::kAvx512>());
    case Isa::kAvx2: return fn(IsaTag<Isa::kAvx2>());
    case Isa::kScalar: break;
  }
  fn(IsaTag<Isa::kScalar>());
}

}  // namespace simd
}  // namespace inferloop
