#include "compute/kernel.h"

#include <cstdint>
#include <new>

namespace inferloop {

int64_t KernelInfo::GetInt(const std::string& name, int64_t def) const {
  const Attribute* a = attr(name);
  return a && a->type == Attribute::Type::kInt ? a->i : def;
}
float KernelInfo::GetFloat(const std::string& name, float def) const {
  const Attribute* a = attr(name);
  return a && a->type == Attribute::Type::kFloat ? a->f : def;
}
std::string KernelInfo::GetString(const std::string& name, const std::string& def) const {
  const Attribute* a = attr(name);
  return a && a->type == Attribute::Type::kString ? a->s : def;
}
std::vector<int64_t> KernelInfo::GetInts(const std::string& name, std::vector<int64_t> def) const {
  const Attribute* a = attr(name);
  return a && a->type == Attribute::Type::kInts ? a->ints : def;
}
std::vector<float> KernelInfo::GetFloats(const std::string& name, std::vector<float> def) const {
  const Attribute* a = attr(name);
  return a && a->type == Attribute::Type::kFloats ? a->floats : def;
}
std::vector<std::string> KernelInfo::GetStrings(const std::string& name, std::vector<std::string> def) const {
  const Attribute* a = attr(name);
  return a && a->type == Attribute::Type::kStrings ? a->strings : def;
}
const Tensor* KernelInfo::GetTensor(const std::string& name) const {
  const Attribute* a = attr(name);
  return a && (a->type == Attribute::Type::kTensor || a->type == Attribute::Type::kSparseTensor) ? &a->t : nullptr;
}

void* KernelContext::Scratch(size_t bytes) {
  constexpr size_t kAlign = 64;
  std::unique_ptr<uint8_t[]> block(new (std::nothrow) uint8_t[bytes + kAlign]);
  if (!block) return nullptr;
  auto addr = reinterpret_cast<uintptr_t>(block.get());
  void* p = block.get() + ((kAlign - addr % kAlign) % kAlign);
  fallback_scratch_.push_back(std::move(block));
  return p;
}

Result<const Tensor*> KernelContext::RequireInput(int i) const {
  const Tensor* t = input(i);
  if (!t) return Invalid("required input " + std::to_string(i) + " is missing or is not a tensor");
  return t;
}

namespace {
class FnKernel : public Kernel {
 public:
  explicit FnKernel(KernelFn fn) : fn_(std::move(fn)) {}
  Status Compute(KernelContext& ctx) const override { return fn_(ctx); }

 private:
  KernelFn fn_;
};
}  // namespace

std::unique_ptr<Kernel> MakeKernel(KernelFn fn) { return std::make_unique<FnKernel>(std::move(fn)); }

}  // namespace inferloop
