#!/usr/bin/env python3
"""Prints `EXP2_16THS` of crates/rlx-cpu/src/kernels/fastmath.rs (the AVX-512 sigmoid's table).

Entry i is 2^(i/16) rounded to the nearest binary32 (from a 60-digit decimal value), as raw bits,
minus i << 19: adding the integer k << 19 (k = 16 q + i, so q lands in the exponent field and i
cancels) then gives the bits of 2^(k/16), the way glibc's expf table is indexed.

Run: python3 tools/gen_sigmoid_exp2_table.py   (standard library only)
"""
import struct
from decimal import Decimal, getcontext

getcontext().prec = 60
for i in range(16):
    exact = Decimal(2) ** (Decimal(i) / Decimal(16))
    # float(str(...)) is correctly rounded to binary64; rounding that to binary32 could double-round,
    # so pick the nearer of the two binary32 neighbours against the 60-digit value directly.
    f = struct.unpack("<f", struct.pack("<f", float(str(exact))))[0]
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    cands = [bits - 1, bits, bits + 1]
    vals = [Decimal(struct.unpack("<f", struct.pack("<I", b))[0]) for b in cands]
    best = min(range(3), key=lambda j: abs(vals[j] - exact))
    print("    0x%08x," % ((cands[best] - (i << 19)) % (1 << 32)))
