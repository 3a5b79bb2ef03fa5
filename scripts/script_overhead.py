#!/usr/bin/env python3
"""The interpreter's overhead over libsecp256k1, per input, in instructions (docs/script.md).

Runs a script-verification benchmark case (bench/bench_script.cpp) under callgrind the way
`ibdkit bench --callgrind` does (collection only inside the counted loop, after one warm-up
iteration) and splits the instructions (Ir) between

  secp   the inclusive cost of libsecp256k1's entry points the interpreter calls (SECP_ENTRIES:
         ECDSA and Schnorr verification, the taproot tweak check, key and signature parsing and
         the low-S normalisation), and
  total  everything in the loop: PrecomputedTxData::Init per transaction, VerifyInput per input
         (scripts, signature hashes, encodings, allocations) and those libsecp256k1 calls.

overhead = (total - secp) / secp: what verifying an input costs beyond the signature checks it
cannot avoid. Instruction counts are exact and repeat to the instruction on the same binary.

  scripts/script_overhead.py --exe build/release/ibdkit [--case VerifyScripts_866342/ibdkit] ...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

SECP_ENTRIES = [
    "secp256k1_ecdsa_verify",
    "secp256k1_schnorrsig_verify",
    "secp256k1_xonly_pubkey_tweak_add_check",
    "secp256k1_ec_pubkey_parse",
    "secp256k1_xonly_pubkey_parse",
    "secp256k1_ecdsa_signature_parse_compact",
    "secp256k1_ecdsa_signature_normalize",
]

UNITS = {"VerifyScripts_866342/ibdkit": 7972, "VerifyScripts_signed/ibdkit": 8014}


def count(exe, case, iterations, env, keep=None):
    with tempfile.TemporaryDirectory(prefix="ibdkit-overhead-") as d:
        out = keep or os.path.join(d, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, "--collect-atstart=no",
               "--toggle-collect=ibdkit_bench_callgrind_loop", exe, "bench", "--filter",
               "^" + re.escape(case) + "$", "--iterations", str(iterations)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0 or "skipped" in r.stdout:
            sys.exit(f"{case}: valgrind failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                             capture_output=True, text=True, check=True).stdout
    total = None
    secp = {}
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(?:\*\s+)?(PROGRAM TOTALS|\S+)", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        what = m.group(2)
        if what == "PROGRAM TOTALS":
            total = ir
            continue
        fn = what.split(":", 1)[-1].split("'")[0]
        if fn in SECP_ENTRIES:
            secp[fn] = secp.get(fn, 0) + ir
    if total is None:
        sys.exit(f"{case}: no totals in callgrind_annotate's output")
    return total, secp


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", default="build/release/ibdkit")
    ap.add_argument("--case", action="append", help="bench case (default: both script cases)")
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--keep", metavar="PREFIX", help="keep callgrind's output as PREFIX.<case>.out (for callgrind_annotate)")
    args = ap.parse_args()
    env = dict(os.environ)
    env.setdefault("IBDKIT_TEST_DATA", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data"))
    for case in args.case or list(UNITS):
        keep = f"{args.keep}.{case.replace('/', '_')}.out" if args.keep else None
        total, secp = count(args.exe, case, args.iterations, env, keep)
        units = UNITS.get(case, 1) * args.iterations
        s = sum(secp.values())
        print(f"{case}: {total / units:,.0f} Ir/input, libsecp256k1 {s / units:,.0f} Ir/input "
              f"({100.0 * s / total:.1f}% of the total), overhead {100.0 * (total - s) / s:.1f}%")
        for fn, ir in sorted(secp.items(), key=lambda kv: -kv[1]):
            print(f"    {fn:42} {ir / units:12,.0f} Ir/input")


if __name__ == "__main__":
    main()
