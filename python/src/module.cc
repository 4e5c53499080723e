// NB_MODULE for inferloop._inferloop: registers each source file's bindings (bindings.h). A new
// group of bindings adds its source file to python/src/ and one call here.
#include "bindings.h"

NB_MODULE(_inferloop, m) {
  m.doc() = "inferloop's engine (use the inferloop package, not this module)";
  m.attr("__version__") = IL_PY_VERSION;  // project(inferloop VERSION ...) in CMakeLists.txt
  inferloop::py::RegisterErrors(m);
  inferloop::py::RegisterSession(m);
  inferloop::py::RegisterModelFile(m);
  inferloop::py::RegisterLlm(m);
  inferloop::py::RegisterTools(m);
}
