#!/usr/bin/env bash
# Builds the digits-CNN firmware (firmware/cortexm-digits) for
# thumbv7em-none-eabihf, runs it on QEMU's mps2-an386 (Cortex-M4) with
# semihosting, checks its predictions against the host int8 model's
# (rlx-quant-int8, example tinyconv_predict) and reports flash / RAM sizes
# and SysTick counts under -icount.
#
#   tools/test_cortexm_qemu.sh            (from the repository root)
#
# Needs: rustup target thumbv7em-none-eabihf (added here when missing),
# qemu-system-arm (Debian qemu-system-arm), a size tool (llvm-size,
# arm-none-eabi-size or size). A missing target or QEMU skips only the
# step that needs it, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
N=64
TARGET=thumbv7em-none-eabihf
FW=firmware/cortexm-digits
ELF=$FW/target/$TARGET/release/cortexm-digits-firmware
OUT=${CARGO_TARGET_DIR:-target}/cortexm-qemu
mkdir -p "$OUT"

if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
  rustup target add "$TARGET" || true
fi
if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
  echo "SKIP: the $TARGET target cannot be installed; firmware build and QEMU run skipped"
  exit 0
fi

echo "== build firmware ($TARGET, release)"
# The firmware is its own workspace with its own target dir.
(cd "$FW" && env -u CARGO_TARGET_DIR cargo build --release --target "$TARGET")

echo "== size"
SIZE=$(command -v llvm-size || command -v arm-none-eabi-size || command -v size || true)
if [ -n "$SIZE" ]; then
  "$SIZE" -A "$ELF" | grep -E '^\.(vector_table|text|rodata|data|bss) '
  "$SIZE" -A "$ELF" | awk '
    /^\.(vector_table|text|rodata|data) / { flash += $2 }
    /^\.(data|bss) / { ram += $2 }
    END { printf "flash %d bytes, static RAM %d bytes (+ stack: two scratch buffers and frames)\n", flash, ram }'
else
  echo "no size tool found (llvm-size / arm-none-eabi-size / size)"
fi

echo "== host int8 predictions"
cargo run -q -p rlx-quant-int8 --example tinyconv_predict -- "$N" > "$OUT/host.txt"

if ! command -v qemu-system-arm > /dev/null; then
  echo "SKIP: qemu-system-arm not installed (apt-get install qemu-system-arm); QEMU run skipped"
  exit 0
fi
echo "== QEMU mps2-an386"
timeout 60 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
  -icount shift=0 \
  -semihosting-config enable=on,target=native -kernel "$ELF" > "$OUT/qemu.txt" 2>&1
grep '^pred ' "$OUT/qemu.txt" > "$OUT/firmware.txt" || true
grep '^systick ' "$OUT/qemu.txt" || true
if ! diff -u "$OUT/host.txt" "$OUT/firmware.txt"; then
  echo "FAIL: firmware predictions differ from the host int8 model"
  exit 1
fi
echo "OK: $(wc -l < "$OUT/firmware.txt") firmware predictions equal the host int8 model's"
