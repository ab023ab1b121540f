#!/usr/bin/env python3
"""Cross-check of tools/numpy_optim_ref.py against the authors' own (PyTorch) code.

Re-run (torch env of /work/shared/ref/setup_torch.sh), after gen_optim_fixtures.py:
    ~/.cache/rlx-ref/torchenv/bin/python tools/crosscheck_optim_authors.py AUTHORS_DIR

AUTHORS_DIR holds the authors' files, fetched by whoever runs this (they are not part of this repository):
    lion_pytorch.py  google/automl            lion/lion_pytorch.py
    qhadam.py        facebookresearch/qhoptim qhoptim/pyt/qhadam.py   (relative param_conv import removed)
    lamb.py          cybertronai/pytorch-lamb pytorch_lamb/lamb.py    (tensorboardX logging helper removed)
    sophia.py        Liuhong99/Sophia         sophia.py
    mars.py          AGI-Arena/MARS           MARS/optimizers/mars.py (torch.compile'd NewtonSchulz removed)
    muon.py          KellerJordan/Muon        muon.py
    soap.py          nikhilvyas/SOAP          soap.py at f42d296 (merge_dims / channels_last branches removed)
    kron.py          evanatyourservice/kron_torch kron_torch/kron.py at d163b81 (@torch.compile decorators removed)
For one fixture run of each optimizer (crates/rlx-optim/tests/fixtures/numpy_optim.json) the authors' optimizer
is run on the same problem in torch float64, and the largest relative difference from the numpy trajectory is
printed. Muon's published Newton-Schulz runs in bfloat16, so its difference is bfloat16-sized (~1e-2); it is
also run with Tensor.bfloat16 patched to the identity, which must agree to float64 rounding. SOAP's published
code computes its eigenbases in float32 (`m.data.float()` before eigh / qr) even for float64 parameters, so
its difference is float32-sized; with Tensor.float patched to the identity it must agree to float64 rounding
(up to the conditioning of the eigenbases). Kron's random draws (random.Random, torch.randn_like) are replaced by
the SplitMix64 stream of numpy_optim_ref.py, and its hard-coded precond_lr / precond_init_scale / balance
probability are set to the fixture's; its triangular solve runs in float32 (as published: float32-sized
difference) and once in float64. The others agree to float64 rounding.
"""
import importlib.util
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "crates", "rlx-optim", "tests", "fixtures", "numpy_optim.json")


def load(dirname, fname):
    spec = importlib.util.spec_from_file_location(fname[:-3], os.path.join(dirname, fname))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def grad(problem, name, p, k):
    h = torch.tensor(problem["h"][name], dtype=torch.float64).reshape(p.shape)
    t = torch.tensor(problem["t"][name], dtype=torch.float64).reshape(p.shape)
    i = torch.arange(p.numel(), dtype=torch.float64).reshape(p.shape)
    return h * (p - t) + problem["c"] * ((p * p) * p) + problem["drift"] * torch.sin(0.7 * k + 0.37 * i)


def run(problem, make, step_kw=None, hessian_every=0):
    names = problem["order"]
    ps = [torch.nn.Parameter(torch.tensor(problem["init"][n], dtype=torch.float64).reshape(problem["shapes"][n]))
          for n in names]
    opt = make(ps)
    traj = []
    for k in range(1, problem["steps"] + 1):
        with torch.no_grad():
            for n, p in zip(names, ps):
                p.grad = grad(problem, n, p.detach(), k).clone()
        opt.step(**(step_kw or {}))
        if hessian_every and k % hessian_every == 0:
            with torch.no_grad():
                for n, p in zip(names, ps):
                    p.grad = grad(problem, n, p.detach(), k) * 0.5 + 0.05
            opt.update_hessian()
        traj.append([float(x) for p in ps for x in p.detach().reshape(-1)])
    return traj


def run_kron(problem, kron, kw):
    """The published Kron with its randomness taken from numpy_optim_ref's SplitMix64 stream."""
    sys.path.insert(0, HERE)
    import numpy_optim_ref as R
    seed, bp = kw.get("seed", 5318008), kw.get("balance_probability", 0.01)
    args = dict(lr=kw["lr"], b1=kw.get("b1", 0.9), weight_decay=kw.get("weight_decay", 0.0),
                memory_save_mode=kw.get("memory_save_mode"), trust_region_scale=kw.get("trust_region_scale", 1.5))
    if "update_probability" in kw:
        args["preconditioner_update_probability"] = kw["update_probability"]

    class Draws:
        n = 0
        k = 0

        def random(self):
            u = R._uniform(seed, 0, self.n, self.k)
            self.k += 1
            return u if self.k == 1 else u * 0.01 / bp   # balance: u' < 0.01  <=>  u < bp

    draws = Draws()
    probes = []
    randn_like = torch.randn_like
    torch.randn_like = lambda t, dtype=None: probes.pop(0)

    def make(ps):
        opt = kron.Kron(ps, **args)
        opt.rng = draws
        opt.param_groups[0]["precond_lr"] = kw.get("precond_lr", 0.1)
        opt.param_groups[0]["precond_init_scale"] = kw.get("precond_init_scale", 1.0)
        return opt

    names = problem["order"]
    ps = [torch.nn.Parameter(torch.tensor(problem["init"][n], dtype=torch.float64).reshape(problem["shapes"][n]))
          for n in names]
    opt = make(ps)
    traj = []
    for k in range(1, problem["steps"] + 1):
        draws.n, draws.k = k - 1, 0
        probes[:] = [torch.tensor([R._normal(seed, R._name_hash(n), k - 1, i) for i in range(p.numel())],
                                  dtype=torch.float64).reshape(p.shape) for n, p in zip(names, ps)]
        with torch.no_grad():
            for n, p in zip(names, ps):
                p.grad = grad(problem, n, p.detach(), k).clone()
        opt.step()
        traj.append([float(x) for p in ps for x in p.detach().reshape(-1)])
    torch.randn_like = randn_like
    return traj


def main():
    authors = sys.argv[1]
    fx = json.load(open(FIX))
    problem = dict(fx["problem"], drift=0.3)
    runs = {r["name"]: r for r in fx["runs"]}

    def rel(name, got):
        want = np.array(runs[name]["f64"])
        got = np.array(got)
        return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 5e-2)))

    lion = load(authors, "lion_pytorch.py")
    qh = load(authors, "qhadam.py")
    lamb = load(authors, "lamb.py")
    sophia = load(authors, "sophia.py")
    mars = load(authors, "mars.py")
    muon = load(authors, "muon.py")
    soap = load(authors, "soap.py")
    kw = lambda n: {k: tuple(v) if isinstance(v, list) else v for k, v in runs[n]["kwargs"].items()}
    checks = [
        ("lion_wd", lambda ps: lion.Lion(ps, **kw("lion_wd")), None, 0),
        ("qhadamw", lambda ps: qh.QHAdamW(ps, **kw("qhadamw")), None, 0),
        ("qhadam_l2_nus", lambda ps: qh.QHAdam(ps, **kw("qhadam_l2_nus")), None, 0),
        ("lamb_wd", lambda ps: lamb.Lamb(ps, **kw("lamb_wd")), None, 0),
        ("sophia_wd", lambda ps: sophia.SophiaG(ps, **{k: v for k, v in kw("sophia_wd").items() if k != "bs"}),
         {"bs": kw("sophia_wd")["bs"]}, 2),
        ("mars", lambda ps: mars.MARS(ps, **kw("mars")), None, 0),
        ("mars_amsgrad_1d", lambda ps: mars.MARS(ps, **kw("mars_amsgrad_1d")), None, 0),
        ("mars_lion", lambda ps: mars.MARS(ps, **kw("mars_lion")), None, 0),
        ("muon", lambda ps: muon.SingleDeviceMuonWithAuxAdam([
            dict(params=[ps[0]], use_muon=True, lr=0.02),
            dict(params=[ps[1]], use_muon=False, lr=0.01)]), None, 0),
    ]
    for name, make, step_kw, every in checks:
        print(f"{name:24s} authors' code vs numpy reference: max rel diff {rel(name, run(problem, make, step_kw, every)):.2e}")
    bf16 = torch.Tensor.bfloat16
    torch.Tensor.bfloat16 = lambda self: self
    print(f"{'muon (no bfloat16 cast)':24s} authors' code vs numpy reference: max rel diff "
          f"{rel('muon', run(problem, checks[-1][1])):.2e}")
    torch.Tensor.bfloat16 = bf16
    torch.set_default_dtype(torch.float64)  # the published SOAP makes its GG with the default dtype
    for name in ["soap", "soap_normalize", "soap_no_bias_correction"]:
        diff = rel(name, run(problem, lambda ps: soap.SOAP(ps, **kw(name))))
        print(f"{name:24s} authors' code vs numpy reference: max rel diff {diff:.2e}")
    to_float = torch.Tensor.float
    torch.Tensor.float = lambda self: self
    diff = rel("soap", run(problem, lambda ps: soap.SOAP(ps, **kw("soap"))))
    print(f"{'soap (no float32 cast)':24s} authors' code vs numpy reference: max rel diff {diff:.2e}")
    torch.Tensor.float = to_float
    torch.set_default_dtype(torch.float32)
    kron = load(authors, "kron.py")
    for name in ["kron", "kron_schedule_balance_wd", "kron_one_diag_sometimes", "kron_all_diag"]:
        print(f"{name:24s} authors' code vs numpy reference: max rel diff {rel(name, run_kron(problem, kron, kw(name))):.2e}")
    published = kron._solve_triangular_right
    kron._solve_triangular_right = lambda X, A: torch.linalg.solve_triangular(A, X[None, :], upper=True, left=False)[0]
    name = "kron_schedule_balance_wd"
    print(f"{name + ' (f64 solve)':24s} authors' code vs numpy reference: max rel diff "
          f"{rel(name, run_kron(problem, kron, kw(name))):.2e}")
    kron._solve_triangular_right = published


if __name__ == "__main__":
    main()
