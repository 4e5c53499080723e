#include "serve/response_cache_disk.h"

// The disk tier lands in the next commit; until then a disk_dir is refused.
namespace inferloop::serve {

struct ResponseCacheDisk::State {};

ResponseCacheDisk::ResponseCacheDisk(Options options) : options_(std::move(options)) {}
ResponseCacheDisk::~ResponseCacheDisk() = default;

Result<std::unique_ptr<ResponseCacheDisk>> ResponseCacheDisk::Create(Options options) {
  return Status::Unimplemented("response cache: the disk tier is not built yet ('" + options.dir + "')");
}
std::optional<std::vector<InferOutput>> ResponseCacheDisk::Read(const ResponseCacheKey&) { return std::nullopt; }
void ResponseCacheDisk::Enqueue(const ResponseCacheKey&, std::shared_ptr<const CachedResponse>) {}
void ResponseCacheDisk::Flush() {}
void ResponseCacheDisk::AddStats(ResponseCacheStats*) const {}

}  // namespace inferloop::serve
