"""Reference trajectory of the MLP SGD training step (rlx-bench's
`mlp_train_step` pattern) from JAX, for crates/rlx-bench/tests/mlp_step.rs.

Re-run (the reference venv of /work/shared/ref/setup.sh: numpy + jax):

    ~/.cache/rlx-ref/venv/bin/python tools/gen_mlp_step_fixtures.py

writes crates/rlx-bench/tests/fixtures/mlp_sgd_steps.json: the initial
params and inputs, then for each of STEPS steps the loss at the params
before the update, and the params after the last step. The step is the
one tools/bench_ref.py times: relu(x @ w1 + b1) @ w2 + b2, mean softmax
cross-entropy against one-hot labels, p -= 0.1 * grad (float32 throughout).
"""
import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

BATCH, D_IN, D_HIDDEN, D_OUT = 8, 12, 16, 3
STEPS, LR = 6, 0.1

rng = np.random.default_rng(20261203)


def uniform(shape, scale):
    return (rng.uniform(-1, 1, size=shape) * scale).astype(np.float32)


params = {
    "l1.w": uniform((D_IN, D_HIDDEN), D_IN ** -0.5),
    "l1.b": uniform((D_HIDDEN,), 0.1),
    "l2.w": uniform((D_HIDDEN, D_OUT), D_HIDDEN ** -0.5),
    "l2.b": uniform((D_OUT,), 0.1),
}
x = uniform((BATCH, D_IN), 1.0)
y = np.eye(D_OUT, dtype=np.float32)[[(r * 7 + 3) % D_OUT for r in range(BATCH)]]


def loss(p, x, y):
    h = jax.nn.relu(x @ p["l1.w"] + p["l1.b"])
    z = h @ p["l2.w"] + p["l2.b"]
    return -jnp.sum(y * jax.nn.log_softmax(z, axis=-1)) / BATCH


@jax.jit
def step(p, x, y):
    value, grads = jax.value_and_grad(loss)(p, x, y)
    return {k: p[k] - LR * grads[k] for k in p}, value


p = {k: jnp.asarray(v) for k, v in params.items()}
losses = []
for _ in range(STEPS):
    p, value = step(p, x, y)
    losses.append(float(value))

flat = lambda a: [float(v) for v in np.asarray(a, dtype=np.float32).ravel()]  # noqa: E731
out = {
    "generator": f"tools/gen_mlp_step_fixtures.py (jax {jax.__version__})",
    "dims": [BATCH, D_IN, D_HIDDEN, D_OUT],
    "lr": LR,
    "params": {k: flat(v) for k, v in params.items()},
    "inputs": {"x": flat(x), "y": flat(y)},
    "losses": losses,
    "final_params": {k: flat(v) for k, v in p.items()},
}
path = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-bench", "tests",
                    "fixtures", "mlp_sgd_steps.json")
with open(path, "w") as f:
    json.dump(out, f)
print(f"wrote {path}: losses {losses}")
