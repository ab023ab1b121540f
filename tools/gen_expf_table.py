#!/usr/bin/env python3
"""Prints `EXP2_TABLE` of crates/rlx-cpu/src/kernels/silu_exact.rs.

Entry i is 2^(i/32) rounded to the nearest binary64 (from a 60-digit decimal value), as raw
bits, minus i << 47: adding k << 47 for k = 32 q + i then gives 2^(k/32) (the table of glibc's /
ARM optimized-routines' expf, which silu_exact.rs reproduces bit for bit).

Run: python3 tools/gen_expf_table.py   (standard library only)
"""
import struct
from decimal import Decimal, getcontext

getcontext().prec = 60
for i in range(32):
    v = float(str(Decimal(2) ** (Decimal(i) / Decimal(32))))  # correctly rounded from 60 digits
    bits = struct.unpack("<Q", struct.pack("<d", v))[0]
    print("    0x%016x," % ((bits - (i << 47)) % (1 << 64)))
