/* Compiled as C: proves inferloop_c.h is valid C. */
#include "inferloop/inferloop_c.h"

int inferloop_c_api_compile_check(void) {
  il_session* s = il_session_create_from_bytes("", 0, NULL);
  il_session_destroy(s);
  return il_session_input_count(s) == 0 ? 0 : 1;
}
