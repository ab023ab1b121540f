#!/usr/bin/env python3
"""Reference trajectories for crates/rlx-optim (tests/fixtures/*.json).

Re-run (needs the torch env of /work/shared/ref/setup_torch.sh, which also has numpy):
    ~/.cache/rlx-ref/torchenv/bin/python tools/gen_optim_fixtures.py            # every file
    ~/.cache/rlx-ref/torchenv/bin/python tools/gen_optim_fixtures.py more       # one: torch | more | schedules |
                                                                                #   schedules_more | sparse_adam | clip | numpy
then run `cargo test -p rlx-optim` and commit the rewritten JSON under crates/rlx-optim/tests/fixtures/ (the
output is deterministic: a rerun with the same torch / numpy writes the same bytes).

Problem (identical in torch, numpy and the Rust tests): two parameters, "w" of shape [3, 4] and "b" of shape
[5], initial values INIT below; the gradient is a fixed function of the parameter, computed elementwise in the
parameter's dtype with this exact operation order:
    g = h * (p - t) + c * ((p * p) * p)          (h, t per element, c = 0.1)
Each run: 20 iterations of {g_w = grad(w); g_b = grad(b); opt.step() on both}; runs with maximize=True are given
-g instead (an exact negation), so that they too converge. Recorded: the parameters after
every iteration, for float32 and float64 (everything in that dtype).

torch_optim.json: torch.optim (single-tensor path, foreach=False) for SGD, Adam, AdamW, NAdam, RAdam, Adafactor.
torch_optim_more.json: the rest of torch.optim (Adagrad, RMSprop, Adamax, Adadelta, ASGD, Rprop, and NAdam with
    momentum_decay), on a second problem of the same form (PROBLEM_MORE: other shapes, values and c) for
    STEPS_MORE = 50 iterations, fresh hyper-parameters per run; runs with "grad_mask" zero some gradient
    elements (see mask_more: every ZERO_EVERY-th iteration all of them, otherwise those with (j + k) % SPARSE_MOD
    == 0) to exercise zero and sparse-ish gradients. ASGD runs also record the final average `ax`.
    Only this file:  ~/.cache/rlx-ref/torchenv/bin/python tools/gen_optim_fixtures.py more
    It also has "lbfgs_runs": torch.optim.LBFGS (fixed step and strong-Wolfe, history sizes, maximize) for
    STEPS_MORE calls of opt.step(closure) on the same problem, whose loss is
    L = sum over elements, in order (w then b, row-major), of (0.5 * h) * (p - t) * (p - t) + (0.25 * c) * p*p*p*p,
    summed left to right in float64 from the parameter values (loss_more); the gradient is g as above (no mask).
numpy_optim.json: numpy re-implementations (float64, tools/numpy_optim_ref.py) of the optimizers torch does not
    have, each following the authors' reference code named in its docstring (Lion, QHAdamW, LAMB, Sophia-G, MARS,
    Muon, SOAP, PSGD Kron, geoopt's Riemannian SGD / Adam on the Stiefel manifold); their gradient adds a drift
    term (numpy_optim_ref.grad_of). torch.optim.Muon exists but orthogonalises in bfloat16, so Muon follows
    Keller Jordan's code here. tools/crosscheck_optim_authors.py re-runs one case of each against the authors'
    own code.
schedules.json:   torch.optim.lr_scheduler learning rates (LinearLR, CosineAnnealingLR, StepLR, LambdaLR with the
    warm-up + cosine formula).
schedules_more.json: the rest of torch.optim.lr_scheduler over 60+ steps with non-default parameters
    (MultiStepLR with a repeated milestone, ExponentialLR, CosineAnnealingWarmRestarts with T_mult 1 and 2,
    OneCycleLR cos / linear / three_phase with its momentum (SGD) and beta1 (Adam) cycling, and long runs of
    StepLR / LinearLR / CosineAnnealingLR past T_max to check the closed forms against torch's recursive ones),
    and "plateau": ReduceLROnPlateau driven by a fixed metric sequence (plateaus, improvements, cooldowns,
    min_lr and eps). Only this file:
        ~/.cache/rlx-ref/torchenv/bin/python tools/gen_optim_fixtures.py schedules_more
sparse_adam.json: torch.optim.SparseAdam with sparse COO gradients for SPARSE_STEPS iterations: "w" [6, 4] gets a
    row-sparse gradient (sparse_dim 1, as nn.Embedding(sparse=True) gives), "b" [7] an element-sparse one; the
    rows / elements present at each iteration are recorded (some iterations have none), the gradient is the
    formula above on the present entries. Only this file:
        ~/.cache/rlx-ref/torchenv/bin/python tools/gen_optim_fixtures.py sparse_adam
clip.json:        torch.nn.utils.clip_grad_norm_ on fixed gradients (f32 and f64).
"""
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "crates", "rlx-optim", "tests", "fixtures")
STEPS = 20
C = 0.1


def _vals(n, a, b, k):
    return [round(a * math.sin(k * i + 0.3) + b, 3) for i in range(n)]


INIT = {"w": _vals(12, 0.8, 0.1, 1.7), "b": _vals(5, 0.6, -0.2, 2.3)}
H = {"w": [round(0.5 + 0.25 * i, 3) for i in range(12)], "b": [round(1.5 - 0.2 * i, 3) for i in range(5)]}
# targets at least 0.8 away from the start, so that no gradient element passes through zero within 20 steps
# (near a zero the Adam-type updates m / sqrt(v) amplify the 1-ulp differences of torch's float32 sqrt, which
# is not correctly rounded, into differences above 1e-6)
T = {n: [round(x + (0.8 + 0.1 * (i % 3)) * (1 if i % 2 else -1), 3) for i, x in enumerate(INIT[n])] for n in INIT}
SHAPES = {"w": [3, 4], "b": [5]}
NAMES = ["w", "b"]


def problem():
    return {"init": INIT, "h": H, "t": T, "c": C, "shapes": SHAPES, "order": NAMES, "steps": STEPS,
            "grad": "g = h * (p - t) + c * ((p * p) * p), elementwise in the parameter dtype"}


def flat(d):
    return [x for n in NAMES for x in d[n]]


def num(x, dt):
    # float32 values are written with the shortest repr that reads back to the same float32
    return float(str(np.float32(x))) if dt == "f32" else float(x)


# ----------------------------------------------------------------------------------------------- torch

def torch_grad(p, name):
    h = torch.tensor(H[name], dtype=torch.float64).to(p.dtype).reshape(p.shape)
    t = torch.tensor(T[name], dtype=torch.float64).to(p.dtype).reshape(p.shape)
    return h * (p - t) + C * ((p * p) * p)


def torch_configs():
    O = torch.optim
    fe = dict(foreach=False)
    return [
        ("sgd", "Sgd", O.SGD, dict(lr=0.02)),
        ("sgd_momentum", "Sgd", O.SGD, dict(lr=0.02, momentum=0.9)),
        ("sgd_nesterov_wd", "Sgd", O.SGD, dict(lr=0.02, momentum=0.9, nesterov=True, weight_decay=0.1)),
        ("sgd_dampening_maximize", "Sgd", O.SGD, dict(lr=0.02, momentum=0.8, dampening=0.3, maximize=True)),
        ("adam", "Adam", O.Adam, dict(lr=0.02)),
        ("adam_amsgrad", "Adam", O.Adam, dict(lr=0.02, amsgrad=True, betas=(0.8, 0.99))),
        ("adam_l2_maximize", "Adam", O.Adam, dict(lr=0.02, weight_decay=0.1, maximize=True)),
        ("adamw", "AdamW", O.AdamW, dict(lr=0.02, weight_decay=0.1)),
        ("adamw_amsgrad", "AdamW", O.AdamW, dict(lr=0.02, weight_decay=0.1, amsgrad=True, eps=1e-6)),
        ("nadam", "NAdamW", O.NAdam, dict(lr=0.02)),
        ("nadam_l2", "NAdamW", O.NAdam, dict(lr=0.02, weight_decay=0.1)),
        ("nadamw", "NAdamW", O.NAdam, dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True)),
        ("radam", "RAdam", O.RAdam, dict(lr=0.02)),
        ("radam_fast_beta2", "RAdam", O.RAdam, dict(lr=0.02, betas=(0.9, 0.9), weight_decay=0.05)),
        ("radam_decoupled_wd", "RAdam", O.RAdam,
         dict(lr=0.02, betas=(0.9, 0.8), weight_decay=0.1, decoupled_weight_decay=True)),
        ("adafactor", "Adafactor", O.Adafactor, dict(lr=0.02)),
        ("adafactor_wd_maximize", "Adafactor", O.Adafactor, dict(lr=0.02, weight_decay=0.1, maximize=True)),
        ("adafactor_eps_d", "Adafactor", O.Adafactor, dict(lr=0.2, eps=(1e-6, 1e-2), d=2.0, beta2_decay=-0.5)),
    ], fe


def torch_run(cls, kw, fe, dtype):
    ps = {n: torch.tensor(INIT[n], dtype=torch.float64).to(dtype).reshape(SHAPES[n]) for n in NAMES}
    opt = cls([ps[n] for n in NAMES], **kw, **fe)
    traj = []
    for _ in range(STEPS):
        with torch.no_grad():
            for n in NAMES:
                g = torch_grad(ps[n], n)
                # maximize runs are given -g, so that they also descend (exact negation)
                ps[n].grad = -g if kw.get("maximize") else g
            opt.step()
        traj.append(flat({n: ps[n].reshape(-1).tolist() for n in NAMES}))
    return traj


def gen_torch():
    configs, fe = torch_configs()
    runs = []
    for name, rust, cls, kw in configs:
        ent = {"name": name, "optimizer": rust, "torch": f"torch.optim.{cls.__name__}", "kwargs": kw}
        for dt, tdt in [("f32", torch.float32), ("f64", torch.float64)]:
            ent[dt] = [[num(x, dt) for x in row] for row in torch_run(cls, kw, fe, tdt)]
        runs.append(ent)
        print(f"torch {name:28s} p[0]: {INIT['w'][0]} -> {ent['f64'][-1][0]:.6f}")
    return {"torch_version": torch.__version__, "problem": problem(), "runs": runs}


# ------------------------------------------------------------------------------------------ torch, more

STEPS_MORE = 50
ZERO_EVERY = 7
SPARSE_MOD = 3
SHAPES_MORE = {"w": [2, 3], "b": [3]}
INIT_MORE = {"w": _vals(6, 0.7, -0.05, 1.3), "b": _vals(3, 0.5, 0.15, 2.9)}
H_MORE = {"w": [round(0.4 + 0.15 * i, 3) for i in range(6)], "b": [round(1.2 - 0.1 * i, 3) for i in range(3)]}
T_MORE = {n: [round(x + (0.6 + 0.1 * (i % 4)) * (-1 if i % 2 else 1), 3) for i, x in enumerate(INIT_MORE[n])]
          for n in INIT_MORE}
C_MORE = 0.05


def problem_more():
    return {"init": INIT_MORE, "h": H_MORE, "t": T_MORE, "c": C_MORE, "shapes": SHAPES_MORE, "order": NAMES,
            "steps": STEPS_MORE, "zero_every": ZERO_EVERY, "sparse_mod": SPARSE_MOD,
            "grad": "g = h * (p - t) + c * ((p * p) * p), elementwise in the parameter dtype; with grad_mask, "
                    "element j (flat index within its parameter) of iteration k (1-based) is 0 if "
                    "k % zero_every == 0 or (j + k) % sparse_mod == 0"}


def mask_more(k, n):
    """1/0 per element of a parameter of n elements at iteration k (1-based)."""
    return [0.0 if k % ZERO_EVERY == 0 or (j + k) % SPARSE_MOD == 0 else 1.0 for j in range(n)]


def torch_configs_more():
    O = torch.optim
    M = True  # grad_mask
    return [
        ("adagrad", "Adagrad", O.Adagrad, dict(lr=0.1), False),
        ("adagrad_lr_decay_init_acc", "Adagrad", O.Adagrad,
         dict(lr=0.2, lr_decay=0.01, initial_accumulator_value=0.1, eps=1e-8), False),
        ("adagrad_wd_maximize", "Adagrad", O.Adagrad, dict(lr=0.15, weight_decay=0.05, maximize=True), False),
        ("adagrad_sparse", "Adagrad", O.Adagrad, dict(lr=0.12, lr_decay=0.005), M),
        ("rmsprop", "RmsProp", O.RMSprop, dict(lr=0.005), False),
        ("rmsprop_centered", "RmsProp", O.RMSprop, dict(lr=0.003, alpha=0.95, centered=True), False),
        ("rmsprop_momentum_wd", "RmsProp", O.RMSprop, dict(lr=0.002, momentum=0.8, weight_decay=0.05), False),
        ("rmsprop_centered_momentum_maximize", "RmsProp", O.RMSprop,
         dict(lr=0.002, alpha=0.9, eps=1e-6, momentum=0.5, centered=True, maximize=True), False),
        ("rmsprop_sparse", "RmsProp", O.RMSprop, dict(lr=0.004, alpha=0.97, momentum=0.3), M),
        ("adamax", "Adamax", O.Adamax, dict(lr=0.02), False),
        ("adamax_wd_betas", "Adamax", O.Adamax, dict(lr=0.03, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), False),
        ("adamax_maximize_sparse", "Adamax", O.Adamax, dict(lr=0.025, betas=(0.85, 0.995), maximize=True), M),
        ("adadelta", "Adadelta", O.Adadelta, dict(), False),
        ("adadelta_rho_wd", "Adadelta", O.Adadelta, dict(lr=2.0, rho=0.8, eps=1e-5, weight_decay=0.1), False),
        ("adadelta_maximize_sparse", "Adadelta", O.Adadelta, dict(lr=1.5, rho=0.95, maximize=True), M),
        ("asgd", "Asgd", O.ASGD, dict(lr=0.02), False),
        ("asgd_averaging", "Asgd", O.ASGD, dict(lr=0.03, lambd=1e-3, alpha=0.6, t0=10.0), False),
        ("asgd_wd_maximize_sparse", "Asgd", O.ASGD,
         dict(lr=0.025, lambd=5e-3, alpha=0.9, t0=25.0, weight_decay=0.05, maximize=True), M),
        ("rprop", "Rprop", O.Rprop, dict(lr=0.01), False),
        ("rprop_etas_step_sizes", "Rprop", O.Rprop, dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2)), False),
        ("rprop_maximize_sparse", "Rprop", O.Rprop,
         dict(lr=0.02, etas=(0.6, 1.1), step_sizes=(1e-4, 1.0), maximize=True), M),
        ("nadam_momentum_decay", "NAdamW", O.NAdam, dict(lr=0.01, betas=(0.85, 0.995), momentum_decay=0.02), False),
        ("nadam_l2_momentum_decay_maximize", "NAdamW", O.NAdam,
         dict(lr=0.015, momentum_decay=0.01, weight_decay=0.05, maximize=True), False),
        ("nadamw_momentum_decay_sparse", "NAdamW", O.NAdam,
         dict(lr=0.02, momentum_decay=0.008, weight_decay=0.1, decoupled_weight_decay=True), M),
    ]


def torch_run_more(cls, kw, masked, dtype):
    ps = {n: torch.tensor(INIT_MORE[n], dtype=torch.float64).to(dtype).reshape(SHAPES_MORE[n]) for n in NAMES}
    opt = cls([ps[n] for n in NAMES], **kw, foreach=False)
    traj = []
    for k in range(1, STEPS_MORE + 1):
        with torch.no_grad():
            for n in NAMES:
                p = ps[n]
                h = torch.tensor(H_MORE[n], dtype=torch.float64).to(dtype).reshape(p.shape)
                t = torch.tensor(T_MORE[n], dtype=torch.float64).to(dtype).reshape(p.shape)
                g = h * (p - t) + C_MORE * ((p * p) * p)
                if masked:
                    g = g * torch.tensor(mask_more(k, p.numel()), dtype=dtype).reshape(p.shape)
                p.grad = -g if kw.get("maximize") else g
            opt.step()
        traj.append(flat({n: ps[n].reshape(-1).tolist() for n in NAMES}))
    extra = None
    if cls is torch.optim.ASGD:
        extra = flat({n: opt.state[ps[n]]["ax"].reshape(-1).tolist() for n in NAMES})
    return traj, extra


def loss_more(ps):
    total = 0.0
    for n in NAMES:
        for x, h, t in zip(ps[n].reshape(-1).tolist(), H_MORE[n], T_MORE[n]):
            total += (0.5 * h) * (x - t) * (x - t) + (0.25 * C_MORE) * x * x * x * x
    return total


def lbfgs_configs():
    return [
        ("lbfgs_fixed", dict(lr=0.5, max_iter=1, history_size=5)),
        ("lbfgs_fixed_short_history", dict(lr=1.0, max_iter=3, history_size=2, tolerance_change=1e-12)),
        ("lbfgs_strong_wolfe", dict(lr=1.0, max_iter=2, history_size=4, line_search_fn="strong_wolfe")),
        ("lbfgs_strong_wolfe_maximize", dict(lr=0.8, max_iter=4, history_size=3, line_search_fn="strong_wolfe",
                                             tolerance_change=1e-12, maximize=True)),
    ]


def lbfgs_run(kw, dtype):
    ps = {n: torch.tensor(INIT_MORE[n], dtype=torch.float64).to(dtype).reshape(SHAPES_MORE[n]) for n in NAMES}
    opt = torch.optim.LBFGS([ps[n] for n in NAMES], **kw)
    sign = -1.0 if kw.get("maximize") else 1.0

    def closure():
        for n in NAMES:
            p = ps[n]
            h = torch.tensor(H_MORE[n], dtype=torch.float64).to(dtype).reshape(p.shape)
            t = torch.tensor(T_MORE[n], dtype=torch.float64).to(dtype).reshape(p.shape)
            p.grad = sign * (h * (p - t) + C_MORE * ((p * p) * p))
        return torch.tensor(sign * loss_more(ps), dtype=torch.float64)

    traj, losses = [], []
    for _ in range(STEPS_MORE):
        with torch.no_grad():
            losses.append(float(opt.step(closure)))
        traj.append(flat({n: ps[n].reshape(-1).tolist() for n in NAMES}))
    st = opt.state[ps[NAMES[0]]]
    return traj, losses, {"func_evals": st["func_evals"], "n_iter": st["n_iter"]}


def gen_torch_more():
    lbfgs = []
    for name, kw in lbfgs_configs():
        ent = {"name": name, "torch": "torch.optim.LBFGS", "kwargs": kw}
        for dt, tdt in [("f32", torch.float32), ("f64", torch.float64)]:
            traj, losses, counts = lbfgs_run(kw, tdt)
            ent[dt] = [[num(x, dt) for x in row] for row in traj]
            ent[dt + "_losses"] = losses
            ent[dt + "_counts"] = counts
        lbfgs.append(ent)
        print(f"torch {name:36s} p[0]: {INIT_MORE['w'][0]} -> {ent['f64'][-1][0]:.6f}  {ent['f64_counts']}")

    runs = []
    for name, rust, cls, kw, masked in torch_configs_more():
        ent = {"name": name, "optimizer": rust, "torch": f"torch.optim.{cls.__name__}", "kwargs": kw,
               "grad_mask": masked}
        for dt, tdt in [("f32", torch.float32), ("f64", torch.float64)]:
            traj, extra = torch_run_more(cls, kw, masked, tdt)
            ent[dt] = [[num(x, dt) for x in row] for row in traj]
            if extra is not None:
                ent[dt + "_ax"] = [num(x, dt) for x in extra]
        runs.append(ent)
        print(f"torch {name:36s} p[0]: {INIT_MORE['w'][0]} -> {ent['f64'][-1][0]:.6f}")
    return {"torch_version": torch.__version__, "problem": problem_more(), "runs": runs, "lbfgs_runs": lbfgs}


def gen_schedules():
    S = torch.optim.lr_scheduler
    base = 0.1
    n = 30
    cases = [
        ("constant", {"kind": "constant"}, lambda o: S.ConstantLR(o, factor=1.0, total_iters=0)),
        ("linear_warmup", {"kind": "linear", "start_factor": 0.1, "end_factor": 1.0, "total_iters": 8},
         lambda o: S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=8)),
        ("linear_decay", {"kind": "linear", "start_factor": 1.0, "end_factor": 0.25, "total_iters": 12},
         lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.25, total_iters=12)),
        ("cosine", {"kind": "cosine", "t_max": 25, "eta_min": 0.001},
         lambda o: S.CosineAnnealingLR(o, T_max=25, eta_min=0.001)),
        ("step", {"kind": "step", "step_size": 7, "gamma": 0.5}, lambda o: S.StepLR(o, step_size=7, gamma=0.5)),
        ("warmup_cosine", {"kind": "warmup_cosine", "warmup": 5, "total": 25, "min_factor": 0.1},
         lambda o: S.LambdaLR(o, lambda t: t / 5 if t < 5 else
                              0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, (t - 5) / 20))))),
    ]
    out = []
    for name, spec, make in cases:
        p = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([p], lr=base)
        sch = make(opt)
        lrs = []
        for _ in range(n):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sch.step()
        out.append({"name": name, "schedule": spec, "base_lr": base, "lrs": lrs})
    return {"torch_version": torch.__version__, "note": "lrs[t] = lr in force after t scheduler.step() calls",
            "cases": out}


def gen_schedules_more():
    S = torch.optim.lr_scheduler
    n = 80
    cases = [
        ("step_long", 0.3, {"kind": "step", "step_size": 9, "gamma": 0.7},
         lambda o: S.StepLR(o, step_size=9, gamma=0.7), n),
        ("linear_up_long", 0.05, {"kind": "linear", "start_factor": 0.2, "end_factor": 0.9, "total_iters": 37},
         lambda o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=37), n),
        ("linear_down_long", 0.2, {"kind": "linear", "start_factor": 1.0, "end_factor": 0.05, "total_iters": 61},
         lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.05, total_iters=61), n),
        ("cosine_long", 0.07, {"kind": "cosine", "t_max": 17, "eta_min": 0.003},
         lambda o: S.CosineAnnealingLR(o, T_max=17, eta_min=0.003), n),
        ("cosine_long_zero_min", 0.4, {"kind": "cosine", "t_max": 23, "eta_min": 0.0},
         lambda o: S.CosineAnnealingLR(o, T_max=23), n),
        ("multistep", 0.25, {"kind": "multi_step", "milestones": [5, 12, 12, 30, 47], "gamma": 0.4},
         lambda o: S.MultiStepLR(o, milestones=[47, 5, 12, 30, 12], gamma=0.4), n),
        ("exponential", 0.15, {"kind": "exponential", "gamma": 0.93},
         lambda o: S.ExponentialLR(o, gamma=0.93), n),
        ("warm_restarts_mult2", 0.08, {"kind": "cosine_warm_restarts", "t_0": 7, "t_mult": 2, "eta_min": 0.002},
         lambda o: S.CosineAnnealingWarmRestarts(o, T_0=7, T_mult=2, eta_min=0.002), n),
        ("warm_restarts_mult1", 0.3, {"kind": "cosine_warm_restarts", "t_0": 11, "t_mult": 1, "eta_min": 0.0},
         lambda o: S.CosineAnnealingWarmRestarts(o, T_0=11), n),
        ("warm_restarts_mult3", 0.05, {"kind": "cosine_warm_restarts", "t_0": 3, "t_mult": 3, "eta_min": 0.01},
         lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=3, eta_min=0.01), n),
    ]
    # OneCycleLR: the base rate is max_lr; n = total_steps + 1 rates (torch refuses to step further).
    one_cycle = [
        ("one_cycle_cos_sgd", 0.9, 70, dict(pct_start=0.25, anneal_strategy="cos", div_factor=10.0,
                                            final_div_factor=100.0, three_phase=False,
                                            base_momentum=0.8, max_momentum=0.97), "sgd"),
        ("one_cycle_linear_adam", 0.02, 64, dict(pct_start=0.35, anneal_strategy="linear", div_factor=20.0,
                                                 final_div_factor=1e3, three_phase=False,
                                                 base_momentum=0.82, max_momentum=0.93), "adam"),
        ("one_cycle_three_phase_cos", 0.5, 75, dict(pct_start=0.3, anneal_strategy="cos", div_factor=8.0,
                                                    final_div_factor=50.0, three_phase=True,
                                                    base_momentum=0.85, max_momentum=0.95), "sgd"),
        ("one_cycle_three_phase_linear", 0.12, 61, dict(pct_start=0.2, anneal_strategy="linear", div_factor=25.0,
                                                        final_div_factor=1e4, three_phase=True,
                                                        base_momentum=0.7, max_momentum=0.9), "adam"),
        ("one_cycle_defaults", 0.1, 66, dict(), "sgd"),
    ]
    out = []
    for name, base, spec, make, steps in cases:
        p = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([p], lr=base)
        sch = make(opt)
        lrs = []
        for _ in range(steps):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sch.step()
        out.append({"name": name, "schedule": spec, "base_lr": base, "lrs": lrs})
    for name, max_lr, total, kw, which in one_cycle:
        full = dict(pct_start=0.3, anneal_strategy="cos", div_factor=25.0, final_div_factor=1e4,
                    three_phase=False, base_momentum=0.85, max_momentum=0.95)
        full.update(kw)
        p = torch.zeros(1, requires_grad=True)
        if which == "sgd":
            opt = torch.optim.SGD([p], lr=1.0, momentum=0.5)
        else:
            opt = torch.optim.Adam([p], lr=1.0, betas=(0.5, 0.999))
        sch = S.OneCycleLR(opt, max_lr=max_lr, total_steps=total, **kw)
        lrs, moms = [], []
        for t in range(total + 1):
            g = opt.param_groups[0]
            lrs.append(g["lr"])
            moms.append(g["momentum"] if which == "sgd" else g["betas"][0])
            if t < total:
                opt.step()
                sch.step()
        spec = {"kind": "one_cycle", "total_steps": total, "pct_start": full["pct_start"],
                "anneal": full["anneal_strategy"], "div_factor": full["div_factor"],
                "final_div_factor": full["final_div_factor"], "three_phase": full["three_phase"],
                "base_momentum": full["base_momentum"], "max_momentum": full["max_momentum"]}
        out.append({"name": name, "schedule": spec, "base_lr": max_lr, "lrs": lrs, "momentum": moms,
                    "momentum_of": which})
    plateau = []
    # Metric sequences: improve, plateau (bad epochs -> reduce), cooldown, tiny improvements under the threshold,
    # improvements again, then a long plateau that runs into min_lr (and, for the second, into eps).
    seq_min = ([1.0 - 0.05 * k for k in range(8)] + [0.65] * 9 + [0.649, 0.648, 0.6] + [0.6] * 10
               + [0.5, 0.45, 0.4449, 0.4448] + [0.45] * 12 + [0.3] + [0.31] * 24)
    seq_max = ([0.1 * k for k in range(6)] + [0.5, 0.53, 0.54, 0.52] + [0.6, 0.64] + [0.64] * 8
               + [0.7, 0.9, 0.9, 0.94, 0.96] + [0.9] * 15 + [1.2] + [1.1] * 30)
    plateau_cases = [
        ("plateau_min_rel", 0.1, seq_min,
         {"mode": "min", "factor": 0.5, "patience": 3, "threshold": 0.01, "threshold_mode": "rel",
          "cooldown": 2, "min_lr": 0.004, "eps": 1e-8}),
        ("plateau_max_abs", 0.2, seq_max,
         {"mode": "max", "factor": 0.3, "patience": 2, "threshold": 0.05, "threshold_mode": "abs",
          "cooldown": 4, "min_lr": 1e-3, "eps": 2e-3}),
        ("plateau_min_abs_no_cooldown", 0.05, seq_min,
         {"mode": "min", "factor": 0.7, "patience": 1, "threshold": 0.002, "threshold_mode": "abs",
          "cooldown": 0, "min_lr": 0.0, "eps": 1e-8}),
        ("plateau_max_rel", 1.0, seq_max,
         {"mode": "max", "factor": 0.1, "patience": 4, "threshold": 0.05, "threshold_mode": "rel",
          "cooldown": 1, "min_lr": 1e-4, "eps": 1e-8}),
    ]
    for name, base, metrics, cfg in plateau_cases:
        p = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([p], lr=base)
        sch = S.ReduceLROnPlateau(opt, **cfg)
        lrs = []
        # torch's state_dict() after `resume_at` steps (mid-cooldown / mid-patience for some cases); the
        # Rust test restores it and continues with the remaining metrics. JSON has no infinity:
        # non-finite floats become "inf" / "-inf" / "NaN" strings.
        resume_at = {"plateau_min_rel": 19, "plateau_max_abs": 23, "plateau_min_abs_no_cooldown": 30,
                     "plateau_max_rel": 37}[name]
        state = None
        for t, m in enumerate(metrics):
            if t == resume_at:
                state = {k: (v if not isinstance(v, float) or math.isfinite(v) else
                             ("NaN" if v != v else ("inf" if v > 0 else "-inf")))
                         for k, v in sch.state_dict().items()}
            opt.step()
            sch.step(m)
            lrs.append(opt.param_groups[0]["lr"])
        plateau.append({"name": name, "base_lr": base, "config": cfg, "metrics": metrics, "lrs": lrs,
                        "resume_at": resume_at, "torch_state": state})
    return {"torch_version": torch.__version__,
            "note": "cases: lrs[t] = lr in force after t scheduler.step() calls (momentum: SGD momentum or Adam "
                    "beta1 likewise); plateau: lrs[t] = lr after scheduler.step(metrics[t])",
            "cases": out, "plateau": plateau}


SPARSE_STEPS = 50


def gen_sparse_adam():
    shapes = {"w": [6, 4], "b": [7]}
    init = {"w": _vals(24, 0.7, 0.05, 1.3), "b": _vals(7, 0.5, -0.1, 2.9)}
    h = {"w": [round(0.4 + 0.15 * i, 3) for i in range(24)], "b": [round(1.2 - 0.1 * i, 3) for i in range(7)]}
    tg = {n: [round(x + (0.9 + 0.1 * (i % 4)) * (1 if i % 2 else -1), 3) for i, x in enumerate(init[n])]
          for n in init}
    c = 0.05

    def present(k):  # k: 1-based iteration -> (rows of w, elements of b)
        rows = [] if k % 9 == 0 else [r for r in range(6) if (r + k) % 3 != 0]
        els = [] if k % 11 == 0 else [j for j in range(7) if (j * k + 1) % 4 != 0]
        return rows, els

    configs = [
        ("defaults", {}, False),
        ("lr_betas_eps", {"lr": 0.05, "betas": (0.8, 0.95), "eps": 1e-6}, False),
        ("maximize", {"lr": 0.02, "betas": (0.5, 0.9), "eps": 1e-7, "maximize": True}, True),
    ]
    runs = []
    for name, kw, negate in configs:
        for dt, tdt in [("f32", torch.float32), ("f64", torch.float64)]:
            ps = {n: torch.tensor(init[n], dtype=tdt).reshape(shapes[n]) for n in NAMES}
            hs = {n: torch.tensor(h[n], dtype=tdt).reshape(shapes[n]) for n in NAMES}
            ts = {n: torch.tensor(tg[n], dtype=tdt).reshape(shapes[n]) for n in NAMES}
            for p in ps.values():
                p.requires_grad_(True)
            opt = torch.optim.SparseAdam([ps["w"], ps["b"]], **kw)
            traj = []
            for k in range(1, SPARSE_STEPS + 1):
                rows, els = present(k)
                with torch.no_grad():
                    for n, sel in [("w", rows), ("b", els)]:
                        p = ps[n]
                        g = hs[n] * (p - ts[n]) + c * ((p * p) * p)
                        if negate:
                            g = -g
                        idx = torch.tensor([sel], dtype=torch.int64).reshape(1, len(sel))
                        vals = g[sel] if sel else g[:0]
                        p.grad = torch.sparse_coo_tensor(idx, vals, tuple(shapes[n]))
                opt.step()
                traj.append([num(x, dt) for n in NAMES for x in ps[n].detach().reshape(-1).tolist()])
            runs.append({"name": name, "dtype": dt, "config": {**kw, "betas": list(kw.get("betas", (0.9, 0.999)))},
                         "negate_grad": negate, "params": traj})
    return {"torch_version": torch.__version__,
            "problem": {"shapes": shapes, "init": init, "h": h, "t": tg, "c": c, "order": NAMES,
                        "steps": SPARSE_STEPS,
                        "present": [dict(zip(["w_rows", "b_elements"], present(k)))
                                    for k in range(1, SPARSE_STEPS + 1)],
                        "grad": "g = h * (p - t) + c * ((p * p) * p) in the dtype, negated for negate_grad runs"},
            "note": "params[k] = w then b, flat, after k + 1 steps", "runs": runs}


def gen_clip():
    rng = np.random.default_rng(7)
    shapes = [[3, 4], [5], [2, 3]]
    cases = []
    for scale, max_norm in [(1.0, 1.0), (0.05, 1.0), (3.0, 0.5)]:
        gs = [np.round(rng.standard_normal(s) * scale, 4) for s in shapes]
        ent = {"max_norm": max_norm, "grads": [g.reshape(-1).tolist() for g in gs]}
        for dt, tdt in [("f32", torch.float32), ("f64", torch.float64)]:
            ps = [torch.zeros(s, dtype=tdt) for s in shapes]
            for p, g in zip(ps, gs):
                p.grad = torch.tensor(g, dtype=tdt)
            total = torch.nn.utils.clip_grad_norm_(ps, max_norm, foreach=False)
            ent[dt] = {"total_norm": num(float(total), dt),
                       "clipped": [[num(x, dt) for x in p.grad.reshape(-1).tolist()] for p in ps]}
        cases.append(ent)
    return {"torch_version": torch.__version__, "shapes": shapes, "cases": cases}


def dump(obj, fname):
    path = os.path.join(OUT, fname)
    with open(path, "w") as fh:
        json.dump(obj, fh, separators=(",", ":"))
    print("wrote", os.path.relpath(path), os.path.getsize(path), "bytes")


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    only = sys.argv[1:]
    if not only or "torch" in only:
        dump(gen_torch(), "torch_optim.json")
    if not only or "more" in only:
        dump(gen_torch_more(), "torch_optim_more.json")
    if not only or "schedules" in only:
        dump(gen_schedules(), "schedules.json")
    if not only or "schedules_more" in only:
        dump(gen_schedules_more(), "schedules_more.json")
    if not only or "sparse_adam" in only:
        dump(gen_sparse_adam(), "sparse_adam.json")
    if not only or "clip" in only:
        dump(gen_clip(), "clip.json")
    if not only or "numpy" in only:
        import numpy_optim_ref
        dump(numpy_optim_ref.gen(problem()), "numpy_optim.json")


if __name__ == "__main__":
    main()
