// Registration of the string kernel family: StringConcat (20), StringNormalizer (10),
// StringSplit (20), RegexFullMatch (20).
//
// Strings are UTF-8. Case mapping decodes to code points and uses the C library's wide-char
// tables (towupper_l/towlower_l with a UTF-8 locale: the node's locale if installed, else
// C.UTF-8, else the process's current locale). RegexFullMatch uses std::wregex (ECMAScript
// syntax, matched on code points) after translating the RE2 constructs that ECMAScript lacks;
// back-references are rejected as in RE2, and matching runs in time polynomial in the input.
#include <clocale>
#include <cwctype>
#include <locale.h>  // newlocale, towupper_l (POSIX)

#include <memory>
#include <regex>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/status_macros.h"
#include "base/utf8.h"
#include "compute/broadcast.h"
#include "compute/kernel_registry.h"

namespace inferloop {
namespace {

// ---- UTF-8 ----

// Decodes the code point at s[i], advancing i. Invalid bytes decode to themselves as
// "code points" 0xDC80..0xDCFF (lone surrogates) so that re-encoding restores them.
char32_t DecodeUtf8(const std::string& s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto invalid = [&]() -> char32_t {
    ++i;
    return 0xDC00 + b0;
  };
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len;
  char32_t cp;
  if ((b0 & 0xE0) == 0xC0) { len = 2; cp = b0 & 0x1F; }
  else if ((b0 & 0xF0) == 0xE0) { len = 3; cp = b0 & 0x0F; }
  else if ((b0 & 0xF8) == 0xF0) { len = 4; cp = b0 & 0x07; }
  else return invalid();
  if (i + len > s.size()) return invalid();
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return invalid();
    cp = (cp << 6) | (b & 0x3F);
  }
  static const char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return invalid();
  i += len;
  return cp;
}

void EncodeUtf8(char32_t cp, std::string& out) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // an invalid byte carried through
    out.push_back(static_cast<char>(cp - 0xDC00));
  } else {
    AppendUtf8(out, static_cast<uint32_t>(cp));
  }
}

std::wstring Utf8ToWide(const std::string& s) {
  std::wstring w;
  w.reserve(s.size());
  for (size_t i = 0; i < s.size();) w.push_back(static_cast<wchar_t>(DecodeUtf8(s, i)));
  return w;
}

// ---- StringConcat ----

Status RunStringConcat(KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* b, ctx.RequireInput(1));
  if (a->dtype() != DataType::kString || b->dtype() != DataType::kString)
    return ctx.Invalid(std::string("inputs must be strings, got ") + DataTypeName(a->dtype()) + " and " + DataTypeName(b->dtype()));
  Result<Shape> out_shape = BroadcastShapes({a->shape(), b->shape()});
  if (!out_shape.ok()) return out_shape.status().WithContext(ctx.node().Describe());
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kString, *out_shape));
  const std::string* pa = a->strings();
  const std::string* pb = b->strings();
  std::string* po = out.strings();
  ForEachBroadcast2(*out_shape, BroadcastStrides(a->shape(), *out_shape), BroadcastStrides(b->shape(), *out_shape),
                    [&](int64_t i, int64_t ia, int64_t ib) {
                      po[i].reserve(pa[ia].size() + pb[ib].size());
                      po[i] = pa[ia];
                      po[i] += pb[ib];
                    });
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// ---- StringNormalizer ----

// A C library locale used for case mapping; freed with the kernel.
class CaseMapper {
 public:
  explicit CaseMapper(const std::string& name) {
    std::vector<std::string> candidates;
    if (!name.empty()) {
      candidates.push_back(name + ".UTF-8");
      candidates.push_back(name + ".utf8");
      candidates.push_back(name);
    }
    candidates.push_back("C.UTF-8");
    candidates.push_back("C.utf8");
    for (const std::string& c : candidates) {
      loc_ = newlocale(LC_CTYPE_MASK, c.c_str(), static_cast<locale_t>(nullptr));
      if (loc_) break;
    }
  }
  ~CaseMapper() {
    if (loc_) freelocale(loc_);
  }
  CaseMapper(const CaseMapper&) = delete;
  CaseMapper& operator=(const CaseMapper&) = delete;

  // upper: true to upper-case, false to lower-case.
  std::string Map(const std::string& s, bool upper) const {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      const char32_t cp = DecodeUtf8(s, i);
      char32_t m = cp;
      if (cp < 0xD800 || cp > 0xDFFF) {
        const auto w = static_cast<wint_t>(cp);
        if (loc_) m = static_cast<char32_t>(upper ? towupper_l(w, loc_) : towlower_l(w, loc_));
        else m = static_cast<char32_t>(upper ? std::towupper(w) : std::towlower(w));
      }
      EncodeUtf8(m, out);
    }
    return out;
  }

 private:
  locale_t loc_ = static_cast<locale_t>(nullptr);
};

struct NormalizerConfig {
  enum Action { kNone, kLower, kUpper } action = kNone;
  bool case_sensitive = false;
  std::unordered_set<std::string> stopwords;  // lower-cased when !case_sensitive
  std::shared_ptr<CaseMapper> mapper;
};

Status RunStringNormalizer(KernelContext& ctx, const NormalizerConfig& c) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  if (x->dtype() != DataType::kString) return ctx.Invalid(std::string("input must be string, got ") + DataTypeName(x->dtype()));
  const bool two_d = x->rank() == 2;
  if (!(x->rank() == 1 || (two_d && x->dim(0) == 1)))
    return ctx.Invalid("input must have shape [C] or [1, C], got " + ShapeToString(x->shape()));
  const std::string* px = x->strings();
  std::vector<std::string> kept;
  kept.reserve(static_cast<size_t>(x->size()));
  for (int64_t i = 0; i < x->size(); ++i) {
    const std::string& s = px[i];
    if (!c.stopwords.empty()) {
      const bool stop = c.case_sensitive ? c.stopwords.count(s) > 0 : c.stopwords.count(c.mapper->Map(s, false)) > 0;
      if (stop) continue;
    }
    switch (c.action) {
      case NormalizerConfig::kNone: kept.push_back(s); break;
      case NormalizerConfig::kLower: kept.push_back(c.mapper->Map(s, false)); break;
      case NormalizerConfig::kUpper: kept.push_back(c.mapper->Map(s, true)); break;
    }
  }
  if (kept.empty()) kept.emplace_back();  // an all-stopwords input gives one empty string
  const int64_t n = static_cast<int64_t>(kept.size());
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kString, two_d ? Shape{1, n} : Shape{n}));
  for (int64_t i = 0; i < n; ++i) out.strings()[i] = std::move(kept[i]);
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeStringNormalizer(const KernelInfo& info) {
  auto c = std::make_shared<NormalizerConfig>();
  const std::string action = info.GetString("case_change_action", "NONE");
  if (action == "NONE") c->action = NormalizerConfig::kNone;
  else if (action == "LOWER") c->action = NormalizerConfig::kLower;
  else if (action == "UPPER") c->action = NormalizerConfig::kUpper;
  else return info.Invalid("case_change_action must be NONE, LOWER or UPPER, got '" + action + "'");
  const int64_t sensitive = info.GetInt("is_case_sensitive", 0);
  if (sensitive != 0 && sensitive != 1) return info.Invalid("is_case_sensitive must be 0 or 1, got " + std::to_string(sensitive));
  c->case_sensitive = sensitive != 0;
  c->mapper = std::make_shared<CaseMapper>(info.GetString("locale", ""));
  for (const std::string& w : info.GetStrings("stopwords"))
    c->stopwords.insert(c->case_sensitive ? w : c->mapper->Map(w, false));
  return MakeKernel([c](KernelContext& ctx) { return RunStringNormalizer(ctx, *c); });
}

// ---- StringSplit ----

// Byte length of the whitespace code point at s[i] (Python's str.isspace), else 0.
size_t SpaceLen(const std::string& s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b == ' ' || (b >= 0x09 && b <= 0x0D) || (b >= 0x1C && b <= 0x1F)) return 1;
  if (b < 0x80) return 0;
  size_t j = i;
  const char32_t cp = DecodeUtf8(s, j);
  const bool space = cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
                     cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
  return space ? j - i : 0;
}

// Python's str.split(None, maxsplit): runs of whitespace separate, no empty pieces.
void SplitWhitespace(const std::string& s, int64_t maxsplit, std::vector<std::string>& out) {
  size_t i = 0, len;
  const size_t n = s.size();
  int64_t left = maxsplit < 0 ? INT64_MAX : maxsplit;
  while (left-- > 0) {
    while (i < n && (len = SpaceLen(s, i)) > 0) i += len;
    if (i == n) break;
    const size_t j = i;
    while (i < n && SpaceLen(s, i) == 0) ++i;
    out.emplace_back(s, j, i - j);
  }
  if (i < n) {
    while (i < n && (len = SpaceLen(s, i)) > 0) i += len;
    if (i != n) out.emplace_back(s, i);
  }
}

// Python's str.split(sep, maxsplit).
void SplitDelimiter(const std::string& s, const std::string& sep, int64_t maxsplit, std::vector<std::string>& out) {
  size_t i = 0;
  int64_t left = maxsplit < 0 ? INT64_MAX : maxsplit;
  while (left-- > 0) {
    const size_t pos = s.find(sep, i);
    if (pos == std::string::npos) break;
    out.emplace_back(s, i, pos - i);
    i = pos + sep.size();
  }
  out.emplace_back(s, i);
}

Status RunStringSplit(KernelContext& ctx, const std::string& delimiter, int64_t maxsplit) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  if (x->dtype() != DataType::kString) return ctx.Invalid(std::string("input must be string, got ") + DataTypeName(x->dtype()));
  const int64_t n = x->size();
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(n));
  int64_t widest = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (delimiter.empty()) SplitWhitespace(x->strings()[i], maxsplit, parts[i]);
    else SplitDelimiter(x->strings()[i], delimiter, maxsplit, parts[i]);
    widest = std::max<int64_t>(widest, static_cast<int64_t>(parts[i].size()));
  }
  Shape ys = x->shape();
  ys.push_back(widest);
  IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(DataType::kString, ys));
  IL_ASSIGN_OR_RETURN(Tensor z, ctx.Allocate(DataType::kInt64, x->shape()));
  for (int64_t i = 0; i < n; ++i) {
    z.data<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
    for (size_t k = 0; k < parts[i].size(); ++k) y.strings()[i * widest + static_cast<int64_t>(k)] = std::move(parts[i][k]);
  }
  ctx.SetOutput(0, std::move(y));
  if (ctx.num_outputs() > 1) ctx.SetOutput(1, std::move(z));
  return Status::Ok();
}

// ---- RegexFullMatch ----

// Rewrites the RE2 constructs ECMAScript lacks: named groups (?P<name>...) and (?<name>...)
// become plain groups, \A and \z become ^ and $, and a leading (?i) sets `icase`.
Result<std::string> TranslateRe2(const std::string& p, bool* icase) {
  std::string out;
  size_t i = 0;
  *icase = false;
  if (p.compare(0, 4, "(?i)") == 0) {
    *icase = true;
    i = 4;
  }
  int depth = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) return Status::InvalidArgument("trailing backslash");
      const char e = p[i + 1];
      if (e == 'A') out += '^';
      else if (e == 'z') out += '$';
      else if (e >= '1' && e <= '9') return Status::InvalidArgument("back-references are not supported (RE2 syntax)");
      else out.append(p, i, 2);
      i += 2;
    } else if (c == '[') {
      // Copy a bracket expression verbatim; ']' right after '[' or '[^' is literal.
      size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') {
        if (p[j] == '\\') ++j;
        else if (p[j] == '[' && j + 1 < p.size() && (p[j + 1] == ':' || p[j + 1] == '=' || p[j + 1] == '.')) {
          const size_t close = p.find(std::string(1, p[j + 1]) + "]", j + 2);
          if (close == std::string::npos) return Status::InvalidArgument("unterminated character class");
          j = close + 1;
          continue;
        }
        ++j;
      }
      if (j >= p.size()) return Status::InvalidArgument("missing ]");
      out.append(p, i, j + 1 - i);
      i = j + 1;
    } else if (c == '(') {
      if (++depth > 1000) return Status::InvalidArgument("groups nested too deeply");
      size_t name_start = std::string::npos;
      if (p.compare(i, 4, "(?P<") == 0) name_start = i + 4;
      else if (p.compare(i, 3, "(?<") == 0 && i + 3 < p.size() && p[i + 3] != '=' && p[i + 3] != '!') name_start = i + 3;
      if (name_start != std::string::npos) {
        const size_t close = p.find('>', name_start);
        if (close == std::string::npos) return Status::InvalidArgument("unterminated group name");
        out += '(';
        i = close + 1;
      } else {
        out += c;
        ++i;
      }
    } else {
      if (c == ')') --depth;
      out += c;
      ++i;
    }
  }
  return out;
}

Result<std::unique_ptr<Kernel>> MakeRegexFullMatch(const KernelInfo& info) {
  const Attribute* a = info.attr("pattern");
  if (!a || a->type != Attribute::Type::kString) return info.Invalid("missing required string attribute 'pattern'");
  bool icase = false;
  Result<std::string> translated = TranslateRe2(a->s, &icase);
  if (!translated.ok()) return info.Invalid("invalid regex '" + a->s + "': " + translated.status().message());
  std::shared_ptr<const std::wregex> re;
  try {
    auto flags = std::regex_constants::ECMAScript;
#ifdef __GLIBCXX__
    flags |= std::regex_constants::__polynomial;  // no backtracking blow-up, no deep recursion
#endif
    if (icase) flags |= std::regex_constants::icase;
    re = std::make_shared<const std::wregex>(Utf8ToWide(*translated), flags);
  } catch (const std::regex_error& e) {
    return info.Invalid("invalid regex '" + a->s + "': " + e.what());
  }
  return MakeKernel([re](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->dtype() != DataType::kString) return ctx.Invalid(std::string("input must be string, got ") + DataTypeName(x->dtype()));
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(DataType::kBool, x->shape()));
    for (int64_t i = 0; i < x->size(); ++i) {
      try {
        y.data<uint8_t>()[i] = std::regex_match(Utf8ToWide(x->strings()[i]), *re) ? 1 : 0;
      } catch (const std::regex_error& e) {
        return ctx.Invalid(std::string("regex matching failed: ") + e.what());
      }
    }
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  });
}

}  // namespace

void RegisterStringKernels(KernelRegistry& r) {
  r.Register("", "StringConcat", 20, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel(RunStringConcat);
  });
  r.Register("", "StringNormalizer", 10, MakeStringNormalizer);
  r.Register("", "StringSplit", 20, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const Attribute* d = info.attr("delimiter");
    if (d && d->type != Attribute::Type::kString) return info.Invalid("attribute 'delimiter' must be a string");
    const std::string delimiter = d ? d->s : "";
    const int64_t maxsplit = info.GetInt("maxsplit", -1);
    return MakeKernel([delimiter, maxsplit](KernelContext& ctx) { return RunStringSplit(ctx, delimiter, maxsplit); });
  });
  r.Register("", "RegexFullMatch", 20, MakeRegexFullMatch);
}

}  // namespace inferloop
