"""What several differential tests share: Bitcoin's hashes and CompactSize, and an in-memory UTXO set.

The UTXO model is Core's UpdateCoins on a dict {(txid, n): (height, coinbase, value, script_pubkey)}:
a block's inputs take their coins out, its spendable outputs put new ones in. The tests build it from
the blocks of Core's active chain (pbk) or from raw block files, and compare ibdkit's chainstate with
it. Not a test module (pytest collects test_*.py only); needs neither pbk nor a build.
"""
import hashlib
import struct


def sha256d(b):
    return hashlib.sha256(hashlib.sha256(b).digest()).digest()


def compact_size(n):
    """Bitcoin's CompactSize encoding of n."""
    if n < 253:
        return bytes([n])
    if n <= 0xFFFF:
        return b"\xfd" + struct.pack("<H", n)
    if n <= 0xFFFFFFFF:
        return b"\xfe" + struct.pack("<I", n)
    return b"\xff" + struct.pack("<Q", n)


def read_compact_size(b, i):
    """The CompactSize at b[i:]: (value, index after it)."""
    f = b[i]
    if f < 253:
        return f, i + 1
    if f == 253:
        return struct.unpack_from("<H", b, i + 1)[0], i + 3
    if f == 254:
        return struct.unpack_from("<I", b, i + 1)[0], i + 5
    return struct.unpack_from("<Q", b, i + 1)[0], i + 9


def is_unspendable(script_pubkey):
    """Core's CScript::IsUnspendable: an OP_RETURN output or one above MAX_SCRIPT_SIZE, never a coin."""
    return (len(script_pubkey) > 0 and script_pubkey[0] == 0x6A) or len(script_pubkey) > 10000


def connect_block(utxo, height, txs):
    """Applies a block to the model `utxo`. `txs`: the block's transactions, coinbase first, each as
    (txid, [(prev txid, prev n), ...], [(value, script_pubkey), ...]). A spent coin missing from the
    model raises KeyError: the model and the chain disagree."""
    for i, (txid, prevouts, outputs) in enumerate(txs):
        if i > 0:
            for prevout in prevouts:
                del utxo[prevout]
        for n, (value, script_pubkey) in enumerate(outputs):
            if not is_unspendable(script_pubkey):
                utxo[(txid, n)] = (height, i == 0, value, script_pubkey)


def core_transactions(block):
    """A pbk (Core's engine) block's transactions in connect_block's form."""
    return [(bytes(tx.txid), [(bytes(txin.out_point.txid), txin.out_point.index) for txin in tx.inputs],
             [(out.amount, bytes(out.script_pubkey)) for out in tx.outputs])
            for tx in block.transactions]
