// src/stream/owned_bytes.h — OwnedBytes: the bytes of a DataStream<Policy> of any policy, kept
// in that stream's own buffer and freed the way that policy frees them.
//
// This is where the buffer policy stops. A node receives a message (or reads a record) into its
// policy's buffer and frees that buffer once it has decoded it; what lies between — queues,
// threads, the decoder — needs only the bytes and a way to release them. OwnedBytes takes the
// DataStream over without copying it (the stream is moved into storage inside the object, no
// allocation of its own), exposes its unread bytes, and destroys it on Release() or destruction,
// so each policy pays exactly its own allocation, copies and cleanse, at the moment a node would.
#pragma once

#include "memory/policy.h"
#include "stream/streams.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

namespace ibdkit {

namespace detail {
template <typename... P>
constexpr std::size_t MaxStreamSize(PolicyTypes<P...>) { return std::max({sizeof(DataStream<P>)...}); }
template <typename... P>
constexpr std::size_t MaxStreamAlign(PolicyTypes<P...>) { return std::max({alignof(DataStream<P>)...}); }
} // namespace detail

/// Move-only owner of a policy's byte buffer. Empty (no buffer) when default-constructed, moved
/// from or released.
class OwnedBytes {
public:
    OwnedBytes() noexcept = default;
    /// Takes `stream` over (its buffer moves, nothing is copied). The bytes are the stream's
    /// unread ones; the buffer is freed with the policy's release when this object is released.
    template <typename Policy>
    explicit OwnedBytes(DataStream<Policy>&& stream) noexcept
    {
        static_assert(sizeof(DataStream<Policy>) <= STORAGE_BYTES && alignof(DataStream<Policy>) <= STORAGE_ALIGN);
        static_assert(std::is_nothrow_move_constructible_v<DataStream<Policy>>);
        ::new (static_cast<void*>(m_storage)) DataStream<Policy>(std::move(stream));
        m_ops = &OPS<Policy>;
        m_bytes = m_ops->view(m_storage);
    }
    OwnedBytes(OwnedBytes&& o) noexcept { TakeFrom(o); }
    OwnedBytes& operator=(OwnedBytes&& o) noexcept
    {
        if (this != &o) {
            Release();
            TakeFrom(o);
        }
        return *this;
    }
    OwnedBytes(const OwnedBytes&) = delete;
    OwnedBytes& operator=(const OwnedBytes&) = delete;
    ~OwnedBytes() { Release(); }

    std::span<const std::byte> span() const noexcept { return m_bytes; }
    /// The same bytes as unsigned chars (what the decoders take).
    std::span<const uint8_t> uchars() const noexcept
    {
        return {reinterpret_cast<const uint8_t*>(m_bytes.data()), m_bytes.size()};
    }
    const std::byte* data() const noexcept { return m_bytes.data(); }
    const std::byte* begin() const noexcept { return m_bytes.data(); }
    const std::byte* end() const noexcept { return m_bytes.data() + m_bytes.size(); }
    std::size_t size() const noexcept { return m_bytes.size(); }
    bool empty() const noexcept { return m_bytes.empty(); }
    /// The policy of the buffer held; nullopt when empty.
    std::optional<PolicyId> policy() const noexcept { return m_ops ? std::optional<PolicyId>(m_ops->id) : std::nullopt; }

    /// Frees the buffer now, as its policy frees it (cleansing it where the policy does); the
    /// object is empty afterwards. Does nothing on an empty object.
    void Release() noexcept
    {
        if (!m_ops) return;
        m_ops->destroy(m_storage);
        m_ops = nullptr;
        m_bytes = {};
    }

private:
    static constexpr std::size_t STORAGE_BYTES = detail::MaxStreamSize(AllPolicyTypes{});
    static constexpr std::size_t STORAGE_ALIGN = detail::MaxStreamAlign(AllPolicyTypes{});

    /// What OwnedBytes knows of the stream it holds: one table per policy.
    struct Ops {
        PolicyId id;
        void (*move)(void* dst, void* src) noexcept; ///< move-constructs dst from src, destroys src
        void (*destroy)(void* p) noexcept;
        std::span<const std::byte> (*view)(const void* p) noexcept;
    };
    template <typename Policy>
    struct OpsOf {
        using S = DataStream<Policy>;
        static void Move(void* dst, void* src) noexcept
        {
            S* from = static_cast<S*>(src);
            ::new (dst) S(std::move(*from));
            from->~S();
        }
        static void Destroy(void* p) noexcept { static_cast<S*>(p)->~S(); }
        static std::span<const std::byte> View(const void* p) noexcept { return static_cast<const S*>(p)->span(); }
    };
    template <typename Policy>
    static constexpr Ops OPS{Policy::id, &OpsOf<Policy>::Move, &OpsOf<Policy>::Destroy, &OpsOf<Policy>::View};

    void TakeFrom(OwnedBytes& o) noexcept
    {
        if (!o.m_ops) return;
        m_ops = std::exchange(o.m_ops, nullptr);
        m_ops->move(m_storage, o.m_storage);
        // Inline bytes (a short buffer of a policy with inline storage) moved with the stream.
        m_bytes = m_ops->view(m_storage);
        o.m_bytes = {};
    }

    const Ops* m_ops{nullptr};
    std::span<const std::byte> m_bytes;
    alignas(STORAGE_ALIGN) std::byte m_storage[STORAGE_BYTES];
};

} // namespace ibdkit
