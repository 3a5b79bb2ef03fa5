// src/memory/allocators.h — the five buffer-memory policies as standard allocators.
//
// Every allocator here satisfies the Allocator requirements and works with std::vector. They take
// an `Upstream` (where bytes really come from) so tests can observe freed storage; production code
// uses the defaults. Guarantees, stated precisely in docs/memory.md:
//
//  policy           allocator                     after deallocate(p, n)
//  plain            std::allocator                nothing: bytes stay in the heap
//  zero-after-free  ZeroAfterFreeAllocator        all n·sizeof(T) bytes zeroed (Core's allocator)
//  barrier-only     BarrierOnlyAllocator          nothing zeroed; Core's compiler barrier runs
//  secure           SecureAllocator               zeroed, from an mlocked, MADV_DONTDUMP pool
//  hardened         HardenedAllocator             every byte that was ever written is zeroed
//
// `hardened` gets its speed from ByteBuffer (memory/byte_buffer.h), which tells the allocator how
// many bytes were ever written (the "dirty" prefix) through `deallocate_dirty`, so only those are
// cleansed, and which copies with memcpy instead of libstdc++'s per-element path for custom
// allocators. Used directly with std::vector it falls back to cleansing the whole capacity.
#pragma once

#include "memory/cleanse.h"

#include <cstddef>
#include <new>
#include <memory>

namespace ibdkit {

/// Upstream that gets memory from the global operator new/delete, exactly as std::allocator does
/// (plain new for ordinary alignment, sized delete where the compiler enables it).
struct NewDeleteUpstream {
    static void* allocate(std::size_t bytes, std::size_t align)
    {
        if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) return ::operator new(bytes, std::align_val_t{align});
        return ::operator new(bytes);
    }
    static void deallocate(void* p, [[maybe_unused]] std::size_t bytes, std::size_t align) noexcept
    {
#if defined(__cpp_sized_deallocation)
        if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) return ::operator delete(p, bytes, std::align_val_t{align});
        ::operator delete(p, bytes);
#else
        if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) return ::operator delete(p, std::align_val_t{align});
        ::operator delete(p);
#endif
    }
};

/// What an allocator does to a block before returning it upstream.
enum class FreeAction {
    None,        ///< plain
    CoreCleanse, ///< memset + "memory" barrier over the whole block (Core's zero_after_free)
    BarrierOnly, ///< the barrier alone (the seed PR's diagnostic variant)
    Cleanse,     ///< explicit_bzero over the bytes known to be dirty (hardened)
};

/// A stateless allocator that applies `Action` on deallocation. The building block of the
/// plain-like policies; use the aliases below.
template <typename T, FreeAction Action, typename Upstream = NewDeleteUpstream>
class BasicPolicyAllocator {
public:
    using value_type = T;
    using size_type = std::size_t;
    using difference_type = std::ptrdiff_t;
    using propagate_on_container_move_assignment = std::true_type;
    using is_always_equal = std::true_type;
    template <typename U>
    struct rebind {
        using other = BasicPolicyAllocator<U, Action, Upstream>;
    };

    static constexpr FreeAction free_action = Action;

    BasicPolicyAllocator() noexcept = default;
    template <typename U>
    BasicPolicyAllocator(const BasicPolicyAllocator<U, Action, Upstream>&) noexcept {}

    T* allocate(std::size_t n)
    {
        if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
        return static_cast<T*>(Upstream::allocate(n * sizeof(T), alignof(T)));
    }

    void deallocate(T* p, std::size_t n) noexcept { deallocate_dirty(p, n, n); }

    /// Returns p to upstream, cleansing according to Action. Only the first `dirty` elements were
    /// ever written; policies that cleanse the whole block (Core's) ignore it, as Core does.
    void deallocate_dirty(T* p, std::size_t n, std::size_t dirty) noexcept
    {
        if (p == nullptr) return;
        if constexpr (Action == FreeAction::CoreCleanse) {
            CleanseCoreStyle(p, n * sizeof(T));
        } else if constexpr (Action == FreeAction::BarrierOnly) {
            CompilerBarrier(p);
        } else if constexpr (Action == FreeAction::Cleanse) {
            Cleanse(p, dirty * sizeof(T));
        }
        (void)dirty;
        Upstream::deallocate(p, n * sizeof(T), alignof(T));
    }

    template <typename U>
    friend bool operator==(const BasicPolicyAllocator&, const BasicPolicyAllocator<U, Action, Upstream>&) noexcept
    {
        return true;
    }
};

/// `plain` with an explicit upstream (for tests). The `plain` policy itself uses std::allocator.
template <typename T, typename Upstream = NewDeleteUpstream>
using PlainAllocator = BasicPolicyAllocator<T, FreeAction::None, Upstream>;

/// Bitcoin Core's zero_after_free_allocator: cleanse the whole capacity, then free.
template <typename T, typename Upstream = NewDeleteUpstream>
using ZeroAfterFreeAllocator = BasicPolicyAllocator<T, FreeAction::CoreCleanse, Upstream>;

/// The seed PR's diagnostic variant: Core's compiler barrier without the memset.
template <typename T, typename Upstream = NewDeleteUpstream>
using BarrierOnlyAllocator = BasicPolicyAllocator<T, FreeAction::BarrierOnly, Upstream>;

/// ibdkit's hardened policy: zero every byte ever written, with explicit_bzero.
template <typename T, typename Upstream = NewDeleteUpstream>
using HardenedAllocator = BasicPolicyAllocator<T, FreeAction::Cleanse, Upstream>;

} // namespace ibdkit
