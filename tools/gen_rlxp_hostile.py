#!/usr/bin/env python3
"""Writes .rlxp packages from the description in docs/rlxp.md alone (pure Python: struct,
json, numpy, xxhash for XXH3-64, zstandard for the zstd blocks), independently of rlx-pkg's
writer:

  crates/rlx-pkg/tests/fixtures/rlxp/reference.rlxp   a valid package using every feature
      (hot / warm / cold tiers, raw and zstd blocks, a Q8_0 weight, two ranks, metadata,
      a tokenizer blob); reference.json holds its tensors' values, an input and the graph's
      output computed with numpy.
  crates/rlx-pkg/tests/fixtures/rlxp/hostile/*.rlxp   one broken package per check a reader
      must make; hostile.json names the error each must get (PkgError::kind), a substring of
      its message, and whether open or verify() refuses it.

Re-run (deterministic output):
  ~/.cache/rlx-ref/venv/bin/pip install xxhash zstandard   # once
  ~/.cache/rlx-ref/venv/bin/python tools/gen_rlxp_hostile.py
"""
import json
import pathlib
import struct

import numpy as np
import xxhash
import zstandard

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "crates/rlx-pkg/tests/fixtures/rlxp"
MAGIC = b"\x89RLXP\r\n\x1a"


def xxh(b):
    return xxhash.xxh3_64_intdigest(b)


def hexsum(b):
    return "%016x" % xxh(b)


class Data:
    """The data section: spans at multiples of 64, zero padding between."""

    def __init__(self):
        self.buf = bytearray()

    def add(self, b):
        pad = (-len(self.buf)) % 64
        self.buf += b"\0" * pad
        off = len(self.buf)
        self.buf += b
        return off


def header(toc_len, data_offset, data_len, toc_sum, major=1, minor=0, flags=0, toc_offset=64):
    h = MAGIC + struct.pack("<HHIQQQQQ", major, minor, flags, toc_offset, toc_len,
                            data_offset, data_len, toc_sum)
    return h + struct.pack("<Q", xxh(h))


def assemble(toc, data, toc_bytes=None, **hdr):
    """A package of `toc` (a dict, or raw `toc_bytes`) and `data`; `hdr` overrides header
    fields (toc_sum, data_offset, data_len, major, minor, flags, toc_offset)."""
    tb = toc_bytes if toc_bytes is not None else json.dumps(toc).encode()
    data_offset = (64 + len(tb) + 63) // 64 * 64
    fields = dict(toc_len=len(tb), data_offset=data_offset, data_len=len(data), toc_sum=xxh(tb))
    fields.update(hdr)
    h = header(**fields)
    body = tb + b"\0" * (data_offset - 64 - len(tb))
    return h + body + bytes(data)


def raw_entry(name, dtype, dims, raw, data, tier="hot"):
    off = data.add(raw)
    return {"name": name, "dtype": dtype, "dims": list(dims), "tier": tier, "encoding": "raw",
            "offset": off, "len": len(raw), "checksum": hexsum(raw)}


def byte_planes(chunk, es):
    """All first bytes of the es-byte elements, then all second bytes, ..."""
    return np.frombuffer(chunk, np.uint8).reshape(-1, es).T.tobytes()


def zstd_entry(name, dtype, dims, raw, data, block, tier="warm", keep_raw=(), shuffle=0):
    """zstd blocks of `block` raw bytes; blocks whose index is in keep_raw are stored raw;
    shuffle=es byte-shuffles each block's es-byte elements first."""
    cctx = zstandard.ZstdCompressor(level=3)
    stored, blocks = b"", []
    for k, at in enumerate(range(0, len(raw), block)):
        chunk = raw[at:at + block]
        if shuffle:
            chunk = byte_planes(chunk, shuffle)
        z = chunk if k in keep_raw else cctx.compress(chunk)
        assert k in keep_raw or len(z) != len(chunk)
        stored += z
        blocks.append([len(z), len(chunk)])
    off = data.add(stored)
    e = {"name": name, "dtype": dtype, "dims": list(dims), "tier": tier, "encoding": "zstd",
         "offset": off, "len": len(stored), "checksum": hexsum(stored), "blocks": blocks}
    if shuffle:
        e["shuffle"] = True
    return e


GRAPH = """graph "ref" {
  %0 = input "x" : f32[2,4]
  %1 = param "w" : f32[4,3]
  %2 = param "b" : f32[3]
  %3 = matmul %0, %1 : f32[2,3]
  %4 = add %3, %2 : f32[2,3]
  %5 = constant [0.5] : f32[]
  %6 = mul %4, %5 : f32[2,3]
  return %6
}"""


def q8_0(values):
    """GGUF Q8_0 blocks of a [rows, 32k] f32 array: f16 scale d = amax / 127, 32 int8."""
    out = b""
    for row in values:
        for blk in row.reshape(-1, 32):
            d = np.float32(np.abs(blk).max() / 127.0)
            q = np.round(blk / d).astype(np.int8) if d != 0 else np.zeros(32, np.int8)
            out += np.float16(d).tobytes() + q.tobytes()
    return out


def reference():
    rng = np.random.default_rng(24)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    emb = np.round(rng.standard_normal((64, 16)) * 4).astype(np.float32) / 4
    table = np.arange(10, dtype=np.int32) * 7 - 20
    half = rng.standard_normal(8).astype(np.float16)
    qv = rng.standard_normal((2, 32)).astype(np.float32)
    q = q8_0(qv)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    y = ((x.astype(np.float64) @ w.astype(np.float64) + b) * 0.5).astype(np.float32)
    tok = b'{"model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "hello": 1}}}'

    data = Data()
    tensors = [
        raw_entry("w", "f32", w.shape, w.tobytes(), data),
        zstd_entry("b", "f32", b.shape, b.tobytes(), data, block=8, keep_raw=(0,)),
        zstd_entry("emb", "f32", emb.shape, emb.tobytes(), data, block=2048, shuffle=4),
        zstd_entry("cold_table", "i32", table.shape, table.tobytes(), data, block=24, tier="cold",
                   keep_raw=(1,), shuffle=4),
        raw_entry("cold_half", "f16", half.shape, half.tobytes(), data, tier="cold"),
        raw_entry("q", "u8", [len(q)], q, data),
    ]
    tensors[-1]["quant"] = {"scheme": "Q8_0", "dims": [2, 32]}
    blob_off = data.add(tok)
    toc = {
        "graph": GRAPH,
        "options": {"precision": "f32", "fusion": {"elementwise": True}, "hoist_params": True},
        "tensors": tensors,
        "placement": [
            {"rank": 0, "device": "cpu", "tensors": ["w", "b", "emb"]},
            {"rank": 1, "device": "cpu", "tensors": ["cold_table", "cold_half", "q"]},
        ],
        "metadata": {"source": "tools/gen_rlxp_hostile.py", "writer": "python reference"},
        "blobs": [{"name": "tokenizer.json", "offset": blob_off, "len": len(tok),
                   "checksum": hexsum(tok)}],
    }
    pkg = assemble(toc, data.buf)
    (OUT / "reference.rlxp").write_bytes(pkg)
    ref = {
        "tensors": {
            "w": {"dtype": "f32", "dims": list(w.shape), "hex": w.tobytes().hex()},
            "b": {"dtype": "f32", "dims": list(b.shape), "hex": b.tobytes().hex()},
            "emb": {"dtype": "f32", "dims": list(emb.shape), "hex": emb.tobytes().hex()},
            "cold_table": {"dtype": "i32", "dims": list(table.shape), "hex": table.tobytes().hex()},
            "cold_half": {"dtype": "f16", "dims": list(half.shape), "hex": half.tobytes().hex()},
            "q": {"dtype": "u8", "dims": [len(q)], "hex": q.hex()},
        },
        "tiers": {t["name"]: t["tier"] for t in tensors},
        "ranks": {"0": ["w", "b", "emb"], "1": ["cold_table", "cold_half", "q"]},
        "tokenizer_json": tok.decode(),
        "x": x.flatten().tolist(),
        "y": y.flatten().tolist(),
    }
    (OUT / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")


def base():
    """A small valid package (w hot, b warm), as (toc dict, data bytes)."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    data = Data()
    tensors = [raw_entry("w", "f32", w.shape, w.tobytes(), data),
               zstd_entry("b", "f32", b.shape, b.tobytes(), data, block=12)]
    toc = {"graph": GRAPH, "options": {}, "tensors": tensors,
           "placement": [{"rank": 0, "device": "cpu", "tensors": ["w", "b"]}],
           "metadata": {}, "blobs": []}
    return toc, bytearray(data.buf)


def hostile():
    cases = []
    (OUT / "hostile").mkdir(parents=True, exist_ok=True)

    def case(name, pkg, error, contains, stage="open"):
        (OUT / "hostile" / f"{name}.rlxp").write_bytes(bytes(pkg))
        cases.append({"file": f"{name}.rlxp", "error": error, "contains": contains, "stage": stage})

    def mutate(fn, **hdr):
        toc, data = base()
        fn(toc, data)
        return assemble(toc, data, **hdr)

    good = mutate(lambda t, d: None)
    # Header.
    case("truncated_header", good[:40], "Truncated", "fixed header")
    case("empty", b"", "Truncated", "fixed header")
    case("bad_magic", b"PK\x03\x04" + good[4:], "BadMagic", "not an .rlxp package")
    flipped = bytearray(good)
    flipped[30] ^= 0x10
    case("header_checksum", flipped, "HeaderChecksum", "bytes 56..64")
    case("version_2", mutate(lambda t, d: None, major=2), "UnsupportedVersion", "version 2.0")
    case("flags", mutate(lambda t, d: None, flags=4), "UnsupportedFlags", "0x00000004")
    case("toc_offset", mutate(lambda t, d: None, toc_offset=128), "BadLayout", "toc_offset")
    case("toc_len_overflow", mutate(lambda t, d: None, toc_len=2**64 - 8), "LengthOverflow",
         "the TOC")
    case("data_len_overflow", mutate(lambda t, d: None, data_len=2**64 - 64), "LengthOverflow",
         "the data section")
    toc, data = base()
    tb = json.dumps(toc).encode()
    doff = (64 + len(tb) + 63) // 64 * 64
    case("data_misaligned", assemble(toc, data, data_offset=doff + 8), "BadLayout",
         "not a multiple of 64")
    case("toc_into_data", assemble(toc, data, toc_len=len(tb) + 200), "BadLayout",
         "runs into the data section")
    case("truncated_data", good[:-10], "Truncated", "the data section")
    case("trailing_bytes", good + b"\0" * 64, "BadLayout", "trailing bytes")
    # TOC.
    case("toc_checksum", mutate(lambda t, d: None, toc_sum=12345), "TocChecksum",
         "stored 0000000000003039")
    toc, data = base()
    case("toc_not_json", assemble(toc, data, toc_bytes=b"{\"graph\": [1, 2"), "BadToc",
         "not JSON")
    case("toc_no_graph", mutate(lambda t, d: t.pop("graph")), "BadToc", "no \"graph\"")
    case("toc_not_object", assemble(toc, data, toc_bytes=b"[1, 2, 3]"), "BadToc",
         "not a JSON object")
    case("options_unknown_key", mutate(lambda t, d: t["options"].update(turbo=True)), "BadToc",
         "unknown key \"turbo\"")
    case("bad_checksum_text", mutate(lambda t, d: t["tensors"][0].update(checksum="xyz")),
         "BadToc", "tensors[0].checksum")
    # Tensors.
    case("unknown_dtype", mutate(lambda t, d: t["tensors"][0].update(dtype="f128")), "BadTensor",
         "unknown dtype \"f128\"")
    case("unknown_tier", mutate(lambda t, d: t["tensors"][0].update(tier="lukewarm")),
         "BadTensor", "unknown tier")
    case("hot_zstd", mutate(lambda t, d: t["tensors"][1].update(tier="hot")), "BadTensor",
         "hot tier must be stored raw")
    case("shuffle_raw", mutate(lambda t, d: t["tensors"][0].update(shuffle=True)), "BadTensor",
         "shuffle needs the zstd encoding")
    case("shuffle_partial", mutate(lambda t, d: t["tensors"][1].update(
        shuffle=True, len=12, blocks=[[6, 6], [6, 6]])), "BadBlocks", "not whole 4-byte elements")
    case("unknown_quant", mutate(lambda t, d: t["tensors"][0].update(
        quant={"scheme": "Q9_9", "dims": [4, 3]})), "BadTensor", "unknown quant scheme")
    case("quant_size", mutate(lambda t, d: t["tensors"][0].update(
        dtype="u8", dims=[48], quant={"scheme": "Q8_0", "dims": [1, 64]})), "SizeMismatch",
        "68 bytes expected")
    case("dims_overflow", mutate(lambda t, d: t["tensors"][0].update(dims=[2**40, 2**40])),
         "DimsOverflow", "tensor \"w\"")
    case("size_mismatch", mutate(lambda t, d: t["tensors"][0].update(dims=[4, 4])),
         "SizeMismatch", "64 bytes expected")
    case("misaligned", mutate(lambda t, d: t["tensors"][0].update(offset=4)), "Misaligned",
         "offset 4")
    case("span_overflow", mutate(lambda t, d: t["tensors"][1].update(offset=2**64 - 64, len=128)),
         "LengthOverflow", "tensor \"b\"")
    case("out_of_range", mutate(lambda t, d: t["tensors"][1].update(offset=4096)), "OutOfRange",
         "tensor \"b\"")
    case("overlap", mutate(lambda t, d: t["tensors"][1].update(offset=0)), "Overlap",
         "overlaps")
    case("duplicate_name", mutate(lambda t, d: t["tensors"][1].update(name="w")),
         "DuplicateName", "tensor \"w\" appears twice")
    case("blocks_ratio", mutate(lambda t, d: t["tensors"][1].update(
        dims=[3 * 1024 * 1024], blocks=[[t["tensors"][1]["len"], 12 * 1024 * 1024]])),
        "BadBlocks", "limit")
    case("blocks_sum", mutate(lambda t, d: t["tensors"][1].update(
        blocks=[[t["tensors"][1]["len"], 8]])), "BadBlocks", "decode to 8 bytes")
    # Placement and graph.
    case("placement_unknown", mutate(lambda t, d: t["placement"][0]["tensors"].append("ghost")),
         "BadPlacement", "\"ghost\"")
    case("placement_rank_twice", mutate(lambda t, d: t["placement"].append(
        {"rank": 0, "device": "cpu", "tensors": []})), "BadPlacement", "rank 0 is listed twice")
    case("graph_syntax", mutate(lambda t, d: t.update(graph=GRAPH.replace("matmul", "matmull"))),
         "GraphParse", "does not parse")
    case("graph_dtype", mutate(lambda t, d: t["tensors"][1].update(dtype="i32")),
         "GraphMismatch", "param \"b\"")
    case("graph_missing_tensor", mutate(lambda t, d: t.update(graph=GRAPH.replace(
        'param "b"', 'param "bias"'))), "GraphMismatch", "param \"bias\"")

    # Bytes that pass open but fail when read.
    def flip_w(t, d):
        d[5] ^= 0xFF
    case("tensor_checksum", mutate(flip_w), "TensorChecksum", "tensor \"w\"", stage="verify")

    def garbage_zstd(t, d):
        e = t["tensors"][1]
        junk = b"\x28\xb5\x2f\xfd" + b"\x13" * (e["len"] - 4)
        d[e["offset"]:e["offset"] + e["len"]] = junk
        e["checksum"] = hexsum(junk)
    case("zstd_garbage", mutate(garbage_zstd), "Decompress", "tensor \"b\": block 0",
         stage="verify")

    def short_frame(t, d):
        # A valid frame of 8 bytes where the block says 12.
        e = t["tensors"][1]
        z = zstandard.ZstdCompressor(level=3).compress(b"\1" * 8)
        assert len(z) != 12
        d[e["offset"]:e["offset"] + e["len"]] = b"\0" * e["len"]
        d[e["offset"]:e["offset"] + len(z)] = z
        e.update(len=len(z), checksum=hexsum(z), blocks=[[len(z), 12]])
    case("zstd_short", mutate(short_frame), "Decompress", "block 0", stage="verify")
    (OUT / "hostile.json").write_text(json.dumps(cases, indent=1) + "\n")
    return cases


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    reference()
    n = len(hostile())
    print(f"wrote {OUT / 'reference.rlxp'} and {n} hostile packages")
