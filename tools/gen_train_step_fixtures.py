"""Reference trajectory for rlx::train::TrainStep: a 4-8-3 tanh MLP with
softmax cross-entropy, trained 12 steps by torch.optim.AdamW with a cosine
learning-rate schedule and torch.nn.utils.clip_grad_norm_ (max norm 0.22).

Writes crates/rlx/tests/fixtures/train_step.json (initial params, batch,
loss per step, final params). Re-run with the torch env made by
../shared/ref/setup_torch.sh:

    ~/.cache/rlx-ref/torchenv/bin/python tools/gen_train_step_fixtures.py
"""
import json
import pathlib

import numpy as np
import torch

torch.set_default_dtype(torch.float32)
rng = np.random.default_rng(7)
init = {
    "w1": rng.uniform(-0.5, 0.5, (4, 8)).astype(np.float32),
    "b1": rng.uniform(-0.1, 0.1, (8,)).astype(np.float32),
    "w2": rng.uniform(-0.5, 0.5, (8, 3)).astype(np.float32),
    "b2": np.zeros(3, np.float32),
}
x = rng.normal(size=(6, 4)).astype(np.float32)
labels = np.array([0, 1, 2, 1, 0, 2])
y = np.eye(3, dtype=np.float32)[labels]

params = {k: torch.tensor(v, requires_grad=True) for k, v in init.items()}
order = ["w1", "b1", "w2", "b2"]
opt = torch.optim.AdamW([params[k] for k in order], lr=0.05, weight_decay=0.01)
steps = 12
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=0.005)
xt, yt = torch.tensor(x), torch.tensor(y)
losses, norms = [], []
for _ in range(steps):
    opt.zero_grad()
    h = torch.tanh(xt @ params["w1"] + params["b1"])
    z = h @ params["w2"] + params["b2"]
    loss = -(yt * torch.log_softmax(z, -1)).sum() / x.shape[0]
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_([params[k] for k in order], max_norm=0.22)
    opt.step()
    sched.step()
    losses.append(float(loss))
    norms.append(float(norm))

out = {
    "init": {k: v.ravel().tolist() for k, v in init.items()},
    "x": x.ravel().tolist(),
    "y": y.ravel().tolist(),
    "losses": losses,
    "grad_norms": norms,
    "final": {k: params[k].detach().numpy().ravel().tolist() for k in order},
}
path = pathlib.Path(__file__).resolve().parent.parent / "crates/rlx/tests/fixtures/train_step.json"
path.write_text(json.dumps(out))
print("wrote", path)
