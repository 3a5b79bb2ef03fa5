// src/consensus/tx_check.h — context-free transaction checks (Core's CheckTransaction) and the
// legacy sigop count.
#pragma once

#include <ibdkit/consensus/validation.h>
#include <ibdkit/primitives/transaction.h>

namespace ibdkit {

/// Core's CheckTransaction. On failure returns false with `state` holding TX_CONSENSUS and one of:
/// bad-txns-vin-empty, bad-txns-vout-empty, bad-txns-oversize, bad-txns-vout-negative,
/// bad-txns-vout-toolarge, bad-txns-txouttotal-toolarge, bad-txns-inputs-duplicate,
/// bad-cb-length, bad-txns-prevout-null (checked in that order).
bool CheckTransaction(const Transaction& tx, TxValidationState& state);

/// Core's GetLegacySigOpCount: GetSigOpCount(false) over every scriptSig and scriptPubKey.
unsigned GetLegacySigOpCount(const Transaction& tx) noexcept;

} // namespace ibdkit
