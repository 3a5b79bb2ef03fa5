// ibdkit/primitives/amount.h — amounts in satoshis and Core's money range.
#pragma once

#include <cstdint>

namespace ibdkit {

using Amount = int64_t;
inline constexpr Amount COIN = 100'000'000;
inline constexpr Amount MAX_MONEY = 21'000'000 * COIN;
/// 0 ≤ v ≤ MAX_MONEY (Core's MoneyRange). Pure.
constexpr bool MoneyRange(Amount v) noexcept { return v >= 0 && v <= MAX_MONEY; }

} // namespace ibdkit
