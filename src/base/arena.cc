#include "base/arena.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "onyx/status.h"

namespace onyx {

namespace {

size_t next_pow2(size_t v) {
  size_t p = 1;
  while (p < v && p < (size_t{1} << 62)) p <<= 1;
  return p;
}

std::string mib(size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

Arena::Arena(BackingAllocator& backing, ArenaOptions options)
    : backing_(backing), options_(std::move(options)), next_region_size_(options_.initial_region) {}

Arena::~Arena() {
  for (auto& [id, r] : regions_) backing_.free(r.base);
}

void Arena::add_free(uintptr_t addr, size_t size) { free_by_size_.emplace(size, addr); }

void Arena::remove_free(uintptr_t addr, size_t size) {
  auto range = free_by_size_.equal_range(size);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second == addr) {
      free_by_size_.erase(it);
      return;
    }
}

// Marks the free chunk at `it` used for `bytes`, splitting off the rest.
char* Arena::take(std::map<uintptr_t, Chunk>::iterator it, size_t bytes) {
  Chunk& c = it->second;
  remove_free(it->first, c.size);
  if (c.size - bytes >= kAlignment) {
    Chunk rest;
    rest.size = c.size - bytes;
    rest.free = true;
    rest.region = c.region;
    uintptr_t rest_addr = it->first + bytes;
    chunks_.emplace(rest_addr, rest);
    add_free(rest_addr, rest.size);
    c.size = bytes;
  }
  c.free = false;
  stats_.in_use += c.size;
  if (stats_.in_use > stats_.peak_in_use) stats_.peak_in_use = stats_.in_use;
  return reinterpret_cast<char*>(it->first);
}

void* Arena::allocate(size_t bytes) {
  const size_t need = round_up(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.allocations;
  auto fit = free_by_size_.lower_bound(need);
  if (fit != free_by_size_.end()) return take(chunks_.find(fit->second), need);

  // Grow: a new region.
  size_t region = need;
  if (options_.extend == ArenaExtendStrategy::kNextPowerOfTwo) {
    region = std::max(next_pow2(need), next_region_size_);
    if (options_.limit != SIZE_MAX && stats_.reserved + region > options_.limit) region = need;  // fall back to exact
  }
  if (options_.limit != SIZE_MAX && stats_.reserved + region > options_.limit)
    fail(ErrorCode::RuntimeException,
         options_.name + ": cannot allocate " + std::to_string(bytes) + " bytes (" + mib(bytes) +
             "): the memory limit (gpu_mem_limit) of " + std::to_string(options_.limit) + " bytes (" + mib(options_.limit) +
             ") would be exceeded; " + std::to_string(stats_.reserved) + " bytes reserved, " +
             std::to_string(stats_.in_use) + " in use");
  std::string why;
  void* p = backing_.alloc(region, &why);
  if (!p && region > need) {
    region = need;
    p = backing_.alloc(region, &why);
  }
  if (!p)
    fail(ErrorCode::RuntimeException, options_.name + ": out of memory allocating " + std::to_string(bytes) + " bytes (" +
                                          mib(bytes) + ") with " + std::to_string(stats_.reserved) + " bytes reserved" +
                                          (why.empty() ? "" : ": " + why));
  int64_t id = next_region_id_++;
  regions_[id] = Region{static_cast<char*>(p), region};
  stats_.reserved += region;
  ++stats_.backing_allocations;
  if (options_.extend == ArenaExtendStrategy::kNextPowerOfTwo && region >= next_region_size_)
    next_region_size_ = std::min<size_t>(region * 2, size_t{1} << 40);
  Chunk c;
  c.size = region;
  c.free = true;
  c.region = id;
  auto it = chunks_.emplace(reinterpret_cast<uintptr_t>(p), c).first;
  add_free(it->first, region);
  return take(it, need);
}

void Arena::release(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = chunks_.find(reinterpret_cast<uintptr_t>(p));
  if (it == chunks_.end() || it->second.free)
    fail(ErrorCode::RuntimeException, options_.name + ": release of a pointer the arena did not hand out");
  it->second.free = true;
  stats_.in_use -= it->second.size;
  // Merge with the next chunk of the same region.
  auto next = std::next(it);
  if (next != chunks_.end() && next->second.free && next->second.region == it->second.region &&
      it->first + it->second.size == next->first) {
    remove_free(next->first, next->second.size);
    it->second.size += next->second.size;
    chunks_.erase(next);
  }
  // And with the previous one.
  if (it != chunks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.free && prev->second.region == it->second.region && prev->first + prev->second.size == it->first) {
      remove_free(prev->first, prev->second.size);
      prev->second.size += it->second.size;
      chunks_.erase(it);
      it = prev;
    }
  }
  add_free(it->first, it->second.size);
}

void Arena::shrink() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto r = regions_.begin(); r != regions_.end();) {
    auto it = chunks_.find(reinterpret_cast<uintptr_t>(r->second.base));
    if (it != chunks_.end() && it->second.free && it->second.size == r->second.size) {
      remove_free(it->first, it->second.size);
      chunks_.erase(it);
      backing_.free(r->second.base);
      stats_.reserved -= r->second.size;
      r = regions_.erase(r);
    } else {
      ++r;
    }
  }
}

ArenaStats Arena::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ArenaStats s = stats_;
  s.regions = regions_.size();
  s.chunks = chunks_.size();
  s.free_chunks = free_by_size_.size();
  return s;
}

}  // namespace onyx
