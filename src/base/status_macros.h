// IL_RETURN_IF_ERROR / IL_ASSIGN_OR_RETURN: return early on error, for code inside inferloop
// (not part of the public API: include/inferloop/status.h holds Status and Result only).
//   IL_RETURN_IF_ERROR(expr);             expr is a Status: returns it when not OK.
//   IL_ASSIGN_OR_RETURN(auto x, expr);    expr is a Result<T>: returns its status when not OK,
//                                         else moves the value into x.
#pragma once

#include <utility>

#include "inferloop/status.h"

#define IL_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::inferloop::Status _il_st = (expr);         \
    if (!_il_st.ok()) return _il_st;             \
  } while (0)

#define IL_CONCAT_INNER(a, b) a##b
#define IL_CONCAT(a, b) IL_CONCAT_INNER(a, b)
#define IL_ASSIGN_OR_RETURN(lhs, expr) IL_ASSIGN_OR_RETURN_IMPL(IL_CONCAT(_il_res_, __LINE__), lhs, expr)
#define IL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
