// The Python module inferloop._inferloop: one Register* function per source file, called from
// module.cc in this order (errors first: the others raise its exception types).
#pragma once

#include <nanobind/nanobind.h>

namespace inferloop::py {

namespace nb = nanobind;

void RegisterErrors(nb::module_& m);    // errors.cc: InferloopError and the ORT-named subclasses
void RegisterSession(nb::module_& m);   // session_binding.cc: Session (InferenceSession's engine)
void RegisterModelFile(nb::module_& m); // model_file.cc: model metadata, writing optimized models
void RegisterLlm(nb::module_& m);       // llm_binding.cc: LLM, Generation (GGUF text generation)
void RegisterTools(nb::module_& m);     // tools_binding.cc: quantize, compare (the CLI's tools)

}  // namespace inferloop::py
