#!/usr/bin/env python3
"""HuggingFace PEFT reference fixtures for crates/rlx-peft.

Re-run (torch env made by shared/ref/setup_torch.sh: torch + peft 0.21):
    ~/.cache/rlx-ref/torchenv/bin/python tools/gen_peft_fixtures.py
Writes crates/rlx-peft/tests/fixtures/: one CASE.json per adapter type and, for every case, CASE/ holding what
PEFT's save_pretrained() wrote (adapter_config.json + adapter_model.safetensors; the README it also writes is
dropped). Deterministic: fixed seeds, one thread, PYTHONHASHSEED=0 (the script re-executes itself with it).
Tensors are float32 values written as JSON numbers (exact); the "f64" record holds y and the gradients of the same
model and values run in float64.

Model: nn.Sequential(Linear(8, 6), Tanh(), Linear(6, 4)) in float32, created after torch.manual_seed(0); modules
"0" and "2" are the adapted linears. Input x: [3, 8] (seed 1). Loss: sum(y * cot) with a fixed cotangent
cot [3, 4]. Each adapter is wrapped with get_peft_model, then EVERY adapter parameter is overwritten with seeded
random values (PEFT initialises LoRA's B, AdaLoRA's E, OFT's R to zero and IA3 to one: the identity, useless as a
test).

Each CASE.json holds: the saved adapter_config.json, x, cot, the base weights / biases per module, the adapter
tensors under the keys PEFT saves them with (base_model.model.<module>.<tensor>), y (adapter active), y_base
(adapter disabled), the gradient of the loss wrt x and wrt every adapter tensor (same keys), per module the
merged weight / bias after merge() and the weight / bias after merge() then unmerge(), y_merged, and
per-adapter derived values (scaling, delta weight, OFT rotation, DoRA weight norm).

adalora.json also records a rank-allocation run: SGD training steps on sum((y - cot)^2) with RankAllocator.update_and_allocate after
each (PEFT's documented loop: backward, optimizer.step, update_and_allocate), and per step the parameters and
gradients the allocator saw, the budget, the importance EMAs and the rank pattern / masked lora_E it produced;
the masked adapter is saved to adalora_masked/ and loaded back into a fresh base with PeftModel.from_pretrained
(its outputs and ranknum are recorded); "orth_reg" holds, in float64, the loss AdaLoraModel.forward returns
(sum(y * cot) + orth_reg_weight * its orthogonal regulariser) and that loss's gradients.
"""
import copy
import json
import os
import sys

import numpy as np
import torch
from torch import nn

import peft
from peft import AdaLoraConfig, IA3Config, LoraConfig, OFTConfig, PeftModel, get_peft_model, get_peft_model_state_dict

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rlx-peft", "tests", "fixtures")
MODULES = ["0", "2"]


def make_base():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 6), nn.Tanh(), nn.Linear(6, 4)).float()


def T(t):
    return t.detach().cpu().float().tolist() if isinstance(t, torch.Tensor) else t


def T64(t):
    return t.detach().cpu().double().tolist()


def saved_key(param_name):
    """named_parameters name -> the key save_pretrained writes (adapter name removed)."""
    return param_name.replace(".default", "")


def fill_random(model, seed, overrides):
    """Overwrites every adapter parameter with seeded normal values (std 0.3, or mean/std from overrides)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            mean, std = 0.0, 0.3
            for key, (m, s) in overrides.items():
                if key in name:
                    mean, std = m, s
            p.copy_(mean + std * torch.randn(p.shape, generator=gen))


def adapter_tensors(model):
    return {saved_key(n): T(p) for n, p in model.named_parameters() if p.requires_grad}


def loss_and_grads(model, x, cot, conv=T):
    model.zero_grad(set_to_none=True)
    xg = x.clone().requires_grad_(True)
    y = model(xg)
    (y * cot).sum().backward()
    g = {saved_key(n): conv(p.grad) for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return conv(y), conv(xg.grad), g


def derived(model, kind):
    out = {}
    for m in MODULES:
        layer = model.base_model.model[int(m)]
        d = {}
        with torch.no_grad():
            if kind in ("lora", "dora", "adalora"):
                d["scaling"] = float(layer.scaling["default"])
                d["delta_weight"] = T(layer.get_delta_weight("default"))
                if kind == "dora":
                    W = layer.get_base_layer().weight
                    d["weight_norm"] = T(torch.linalg.norm(W + layer.get_delta_weight("default"), dim=1))
                if kind == "adalora":
                    d["ranknum"] = float(layer.ranknum["default"])
            elif kind == "oft":
                d["r"] = layer.r["default"]
                d["block_size"] = layer.oft_block_size["default"]
                d["rotation"] = T(layer.get_delta_weight("default"))
            elif kind == "ia3":
                d["is_feedforward"] = bool(layer.is_feedforward)
        out[m] = d
    return out


def merged_weights(model, x):
    m = copy.deepcopy(model)
    rec = {}
    for name in MODULES:
        m.base_model.model[int(name)].merge()
    with torch.no_grad():
        y_merged = m(x)
    for name in MODULES:
        base = m.base_model.model[int(name)].get_base_layer()
        rec[name] = {"merged_weight": T(base.weight), "merged_bias": T(base.bias)}
    for name in MODULES:
        m.base_model.model[int(name)].unmerge()
    for name in MODULES:
        base = m.base_model.model[int(name)].get_base_layer()
        rec[name]["unmerged_weight"] = T(base.weight)
        rec[name]["unmerged_bias"] = T(base.bias)
    return rec, T(y_merged)


def save_dir(model, name):
    sub = os.path.join(OUT, name)
    model.save_pretrained(sub)
    readme = os.path.join(sub, "README.md")
    if os.path.exists(readme):
        os.remove(readme)
    with open(os.path.join(sub, "adapter_config.json")) as f:
        return json.load(f)


def run_case(name, kind, cfg, seed, overrides, x, cot):
    torch.manual_seed(1234)
    model = get_peft_model(make_base(), cfg)
    model.eval()
    fill_random(model, seed, overrides)
    rec = {"name": name, "kind": kind, "peft_version": peft.__version__, "torch_version": torch.__version__}
    rec["adapter_config"] = save_dir(model, name)
    rec["x"], rec["cot"] = T(x), T(cot)
    rec["base"] = {m: {"weight": T(model.base_model.model[int(m)].get_base_layer().weight),
                       "bias": T(model.base_model.model[int(m)].get_base_layer().bias)} for m in MODULES}
    rec["tensors"] = adapter_tensors(model)
    rec["saved_keys"] = {k: list(v.shape) for k, v in get_peft_model_state_dict(model).items()}
    with torch.no_grad():
        with model.disable_adapter():
            rec["y_base"] = T(model(x))
    rec["y"], rec["x_grad"], rec["grads"] = loss_and_grads(model, x, cot)
    # the same model and values in float64: near-exact references for the f64 graph check
    m64 = copy.deepcopy(model).double()
    y64, dx64, g64 = loss_and_grads(m64, x.double(), cot.double(), T64)
    rec["f64"] = {"y": y64, "x_grad": dx64, "grads": g64}
    rec["derived"] = derived(model, kind)
    rec["modules"], rec["y_merged"] = merged_weights(model, x)
    if kind == "adalora":
        rec["orth_reg"] = adalora_orth_reg(model, x, cot)
        rec["allocation"] = adalora_allocation(model, x, cot)
    return rec


class _Out:
    pass


def adalora_orth_reg(model, x, cot):
    """AdaLoraModel.forward adds orth_reg_weight * mean ||P P^T - I||_F to an output's .loss: run it (float64)
    with the Sequential's forward patched to return loss = sum(y * cot), and record the loss and its gradients."""
    m = copy.deepcopy(model).double()
    inner = m.base_model.model
    plain_forward = inner.forward
    c64 = cot.double()

    def forward(xx):
        o = _Out()
        o.logits = plain_forward(xx)
        o.loss = (o.logits * c64).sum()
        return o

    inner.forward = forward
    xg = x.double().clone().requires_grad_(True)
    out = m.base_model(xg)  # AdaLoraModel.forward: adds the regulariser to out.loss
    plain = (out.logits * c64).sum()
    out.loss.backward()
    return {"orth_reg_weight": m.peft_config["default"].orth_reg_weight, "loss_total": float(out.loss),
            "loss_plain": float(plain), "x_grad": T64(xg.grad),
            "grads": {saved_key(n): T64(p.grad) for n, p in m.named_parameters() if p.grad is not None}}


def adalora_allocation(model, x, cot):
    m = copy.deepcopy(model)
    m.train()
    cfg = m.peft_config["default"]
    tuner = m.base_model
    ra = tuner.rankallocator
    opt = torch.optim.SGD([p for p in m.parameters() if p.requires_grad], lr=0.02)
    steps = []
    for step in range(cfg.total_step):
        opt.zero_grad(set_to_none=True)
        y = m(x)
        ((y - cot) ** 2).sum().backward()  # bounded below, so the short run stays finite
        opt.step()
        seen = {saved_key(n): T(p) for n, p in m.named_parameters() if p.grad is not None}
        grads = {saved_key(n): T(p.grad) for n, p in m.named_parameters() if p.grad is not None}
        budget, mask_ind = ra.budget_schedule(step)
        tuner.update_and_allocate(step)
        ema = {"ipt": {saved_key(n): T(v) for n, v in ra.ipt.items()},
               "exp_avg_ipt": {saved_key(n): T(v) for n, v in ra.exp_avg_ipt.items()},
               "exp_avg_unc": {saved_key(n): T(v) for n, v in ra.exp_avg_unc.items()}}
        steps.append({"step": step, "params_seen": seen, "grads": grads, "budget": budget, "mask_ind": mask_ind,
                      "state_after": ema,
                      "rank_pattern": {saved_key(k): v for k, v in (cfg.rank_pattern or {}).items()},
                      "lora_E_after": {m_: T(m.base_model.model[int(m_)].lora_E["default"]) for m_ in MODULES}})
    # save the masked adapter (PEFT cuts the saved tensors to the kept ranks) and load it back into a fresh base
    m.eval()
    saved_config = save_dir(m, "adalora_masked")
    loaded = PeftModel.from_pretrained(make_base(), os.path.join(OUT, "adalora_masked"))
    loaded.eval()
    with torch.no_grad():
        y_loaded = T(loaded(x))
    return {"init_bgt": ra.init_bgt,
            "masked_saved_config": saved_config, "masked_y_after_load": y_loaded,
            "masked_ranknum_after_load": {m_: float(loaded.base_model.model[int(m_)].ranknum["default"])
                                          for m_ in MODULES}, "target_bgt": ra.target_bgt, "lr": 0.02, "loss": "sum((y - cot)^2)",
            "config": {k: getattr(cfg, k) for k in ("init_r", "target_r", "tinit", "tfinal", "deltaT", "beta1",
                                                    "beta2", "total_step", "orth_reg_weight")},
            "steps": steps}


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":
        # PEFT keeps target_modules in a set: fix string hashing so the saved configs are byte-stable
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 8, generator=gen)
    cot = torch.randn(3, 4, generator=gen)
    common = dict(target_modules=MODULES)
    cases = [
        ("lora", "lora", LoraConfig(r=3, lora_alpha=5, lora_dropout=0.0, rank_pattern={"2": 2},
                                    alpha_pattern={"2": 3}, **common), 10, {}),
        ("lora_rslora", "lora", LoraConfig(r=4, lora_alpha=6, use_rslora=True, **common), 11, {}),
        ("dora", "dora", LoraConfig(r=2, lora_alpha=4, use_dora=True, **common), 12,
         {"lora_magnitude_vector": (1.5, 0.3)}),
        ("ia3", "ia3", IA3Config(feedforward_modules=["2"], **common), 13, {"ia3_l": (1.0, 0.4)}),
        ("adalora", "adalora", AdaLoraConfig(init_r=3, target_r=2, lora_alpha=6, total_step=10, tinit=1, tfinal=3,
                                             deltaT=1, beta1=0.85, beta2=0.85, **common), 14, {}),
        ("oft", "oft", OFTConfig(r=2, oft_block_size=0, **common), 15, {"oft_R": (0.0, 0.2)}),
        ("oft_exact", "oft", OFTConfig(r=2, oft_block_size=0, use_cayley_neumann=False, **common), 16,
         {"oft_R": (0.0, 0.2)}),
        ("oft_shared", "oft", OFTConfig(r=2, oft_block_size=0, block_share=True, num_cayley_neumann_terms=3,
                                        **common), 17, {"oft_R": (0.0, 0.3)}),
    ]
    for name, kind, cfg, seed, ov in cases:
        rec = run_case(name, kind, cfg, seed, ov, x, cot)
        with open(os.path.join(OUT, f"{name}.json"), "w") as f:
            json.dump(rec, f, allow_nan=False)
        dy = float(np.abs(np.array(rec["y"]) - np.array(rec["y_base"])).max())
        dm = float(np.abs(np.array(rec["y"]) - np.array(rec["y_merged"])).max())
        print(f"{name:12s} |y - y_base| = {dy:.4f}  |y - y_merged| = {dm:.2e}  keys = {rec['saved_keys']}")
    print("wrote", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
