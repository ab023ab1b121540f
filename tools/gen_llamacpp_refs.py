#!/usr/bin/env python3
"""llama.cpp reference fixture for crates/rlx-llama: greedy continuations and a chat rendering.

Run (from the repository root):
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ~/.cache/rlx-ref/venv/bin/python \
        tools/gen_llamacpp_refs.py [--model PATH] [--out NAME] [--threads 2]
  env: ~/.cache/rlx-ref/venv with llama-cpp-python 0.3.36 (and its jinja2) and gguf.
  --model defaults to $RLX_MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf
  (RLX_MODELS defaults to ~/.cache/rlx-models; fetched by tools/fetch_models.sh).

  Other quantizations (tools/quantize_smollm2.py makes Q8_0 / Q4_K_M from the Q4_1 file):
    ... tools/gen_llamacpp_refs.py --model $RLX_MODELS/gguf/SmolLM2-135M-Instruct.Q8_0.gguf \
        --out smollm2_llamacpp.Q8_0.json   (and likewise Q4_K_M)

Writes crates/rlx-llama/tests/fixtures/smollm2_llamacpp.json (or --out NAME there):
  prompts     the prompt ids of tests/fixtures/smollm2.json (HF `tokenizers` ids, fed to
              llama.cpp as ids so both sides start from the same tokens) and llama.cpp's greedy
              continuation (N_NEW tokens, argmax of its logits, one eval per token, KV cache);
              for each generated position the gap between llama.cpp's top-1 and top-2 logits
              (`margin`), which says where a small activation-rounding difference can flip the
              argmax; and its five largest logits there (`top5`, [id, logit] pairs).
  chat        a fixed conversation and add_generation_prompt rendered by llama-cpp-python's
              Jinja2ChatFormatter (jinja2, the settings of HF transformers: trim_blocks,
              lstrip_blocks) from the GGUF's tokenizer.chat_template, for both values of
              add_generation_prompt, with and without a system message; and the same
              conversations through EXTRA_TEMPLATE (whitespace control, namespace(), string
              methods, filters, tojson), `extra_template` / `extra_chat`.
"""
import argparse
import json
import os

import numpy as np
from gguf import GGUFReader
from llama_cpp import Llama
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "crates", "rlx-llama", "tests", "fixtures")
N_NEW = 40

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "Name a prime number."},
        {"role": "assistant", "content": "7"},
        {"role": "user", "content": "And one above 100?\nOnly the number."},
    ],
]


# A template in the style of larger models' (Llama 3 / Mistral), with what SmolLM2's lacks:
# whitespace control, block lines that trim_blocks / lstrip_blocks strip, namespace(), Python
# string methods, filters, tojson, loop variables and raise_exception.
EXTRA_TEMPLATE = """{{ bos_token }}
{%- set ns = namespace(system='') %}
{%- if messages[0]['role'] == 'system' %}
    {%- set ns.system = messages[0]['content'].strip() %}
    {%- set messages = messages[1:] %}
{%- endif %}
{% for message in messages %}
    {% if message['role'] not in ['user', 'assistant'] %}
        {{ raise_exception('unknown role ' + message['role']) }}
    {% endif %}
<|{{ message['role'] | upper }}|>{% if loop.first and ns.system %} [{{ ns.system }}]{% endif %}
 {{ message['content'].strip() | replace('\n', ' ') }}{% if loop.last %} {{ {'n': loop.length, 'last': message['role']} | tojson }}{% endif %}

{% endfor %}
{% if add_generation_prompt %}<|ASSISTANT|>{% else %}{{ eos_token }}{% endif %}
{{ messages[-1] | tojson(indent=2) }}
"""


def default_model():
    root = os.environ.get("RLX_MODELS", os.path.expanduser("~/.cache/rlx-models"))
    return os.path.join(root, "gguf", "SmolLM2-135M-Instruct.Q4_1.gguf")


def gguf_string(path, key):
    r = GGUFReader(path)
    f = r.fields[key]
    return bytes(f.parts[f.data[0]]).decode("utf-8")


def greedy(llm, prompt, n_new):
    """llama.cpp's greedy continuation: argmax of the last row, one eval per new token."""
    llm.reset()
    llm.eval(prompt)
    out, margins, top5 = [], [], []
    for i in range(n_new):
        row = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        best = np.argsort(row)[::-1][:5]
        out.append(int(best[0]))
        margins.append(round(float(row[best[0]] - row[best[1]]), 5))
        top5.append([[int(t), round(float(row[t]), 5)] for t in best])
        if i + 1 < n_new:
            llm.eval([out[-1]])
    return out, margins, top5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=default_model())
    ap.add_argument("--out", default="smollm2_llamacpp.json")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    with open(os.path.join(FIX, "smollm2.json")) as f:
        prompts = json.load(f)["prompts"]
    llm = Llama(
        model_path=a.model,
        n_ctx=256,
        n_batch=256,
        n_threads=a.threads,
        n_threads_batch=a.threads,
        logits_all=True,
        verbose=False,
    )
    rows = []
    for p in prompts:
        ids, margins, top5 = greedy(llm, p["ids"], N_NEW)
        rows.append(
            {"text": p["text"], "ids": p["ids"], "greedy": ids, "margin": margins, "top5": top5}
        )
        print(repr(p["text"]), "->", repr(llm.detokenize(ids).decode("utf-8", "replace")))
        print("  smallest top-1 margins:", sorted(margins)[:4])
    template = gguf_string(a.model, "tokenizer.chat_template")
    eos = llm.detokenize([llm.token_eos()], special=True).decode()
    bos = llm.detokenize([llm.token_bos()], special=True).decode()
    chats = []
    for messages in CONVERSATIONS:
        for gen in (True, False):
            fmt = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos, add_generation_prompt=gen)
            rendered = fmt(messages=messages).prompt
            chats.append({"messages": messages, "add_generation_prompt": gen, "rendered": rendered})
    extra = []
    for messages in CONVERSATIONS:
        fmt = Jinja2ChatFormatter(EXTRA_TEMPLATE, eos_token=eos, bos_token=bos, add_generation_prompt=True)
        extra.append({"messages": messages, "add_generation_prompt": True,
                      "rendered": fmt(messages=messages).prompt})
    fixture = {
        "gguf": os.path.basename(a.model),
        "llama_cpp_python": __import__("llama_cpp").__version__,
        "threads": a.threads,
        "n_new": N_NEW,
        "prompts": rows,
        "chat_template": template,
        "bos_token": bos,
        "eos_token": eos,
        "chat": chats,
        "extra_template": EXTRA_TEMPLATE,
        "extra_chat": extra,
    }
    out = os.path.join(FIX, a.out)
    with open(out, "w") as f:
        json.dump(fixture, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
