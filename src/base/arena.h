// A best-fit arena on top of a backing allocator (cudaMalloc for the CUDA
// provider; a fake one in tests). Memory is obtained from the backing
// allocator in regions and carved into chunks; released chunks go back to a
// free list ordered by size and are merged with free neighbours of the same
// region, so steady-state runs of fixed shapes call the backing allocator
// only during the first run. Thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace onyx {

class BackingAllocator {
 public:
  virtual ~BackingAllocator() = default;
  // Returns null when the memory is not available; `why` may say more.
  virtual void* alloc(size_t bytes, std::string* why) = 0;
  virtual void free(void* p) = 0;
};

enum class ArenaExtendStrategy { kNextPowerOfTwo, kSameAsRequested };

struct ArenaOptions {
  std::string name = "arena";  // for messages, e.g. "CUDA device 0"
  size_t limit = SIZE_MAX;     // most bytes held from the backing allocator (gpu_mem_limit)
  ArenaExtendStrategy extend = ArenaExtendStrategy::kNextPowerOfTwo;
  size_t initial_region = size_t{1} << 20;  // first region size with kNextPowerOfTwo
};

struct ArenaStats {
  size_t reserved = 0;   // bytes held from the backing allocator
  size_t in_use = 0;     // bytes in chunks handed out (rounded sizes)
  size_t peak_in_use = 0;
  size_t regions = 0;
  size_t chunks = 0;       // chunks, used or free
  size_t free_chunks = 0;
  int64_t allocations = 0;       // allocate() calls
  int64_t backing_allocations = 0;  // regions obtained
};

class Arena {
 public:
  static constexpr size_t kAlignment = 256;
  Arena(BackingAllocator& backing, ArenaOptions options);
  ~Arena();  // gives every region back (chunks still in use are leaked to the backing allocator's care)
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Throws onyx::Error naming the request and the limit when the limit would be exceeded.
  void* allocate(size_t bytes);
  void release(void* p);
  // Gives back regions that are entirely free.
  void shrink();
  ArenaStats stats() const;
  const ArenaOptions& options() const { return options_; }
  static size_t round_up(size_t bytes) { return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment; }

 private:
  struct Chunk {
    size_t size = 0;
    bool free = true;
    int64_t region = 0;
  };
  struct Region {
    char* base = nullptr;
    size_t size = 0;
  };
  char* take(std::map<uintptr_t, Chunk>::iterator it, size_t bytes);
  void add_free(uintptr_t addr, size_t size);
  void remove_free(uintptr_t addr, size_t size);

  BackingAllocator& backing_;
  ArenaOptions options_;
  mutable std::mutex mutex_;
  std::map<uintptr_t, Chunk> chunks_;                 // by address
  std::multimap<size_t, uintptr_t> free_by_size_;     // best fit: lower_bound(size)
  std::map<int64_t, Region> regions_;
  int64_t next_region_id_ = 0;
  size_t next_region_size_;
  ArenaStats stats_;
};

}  // namespace onyx
