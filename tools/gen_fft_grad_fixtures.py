#!/usr/bin/env python3
"""Generate JAX reference gradients of real losses through the FFT family.

Writes ``crates/rlx-autodiff/tests/fixtures/fft_grad.json`` for
``crates/rlx-autodiff/tests/fft_grad.rs``, which builds the same losses with
RLX ``Fft`` nodes, differentiates them with ``grad_with_loss`` and compares.
Complex intermediates follow ``jax.vjp``'s cotangent convention, so these
gradients also pin down RLX's convention (see ``rules/fft.rs``).

Environment (made by /work/shared/ref/setup.sh)::

    ~/.cache/rlx-ref/venv/bin/python tools/gen_fft_grad_fixtures.py

Fixed seed; float64 references from inputs on a 1/256 grid.

Models, for ``x: f32[2, n]`` and constants ``r, s: f32[2, n]``,
``c: c64[n//2+1]``, ``c2: c64[n]``:

* ``rfft_irfft``: ``sum(r * irfft(rfft(x) * c, n))``
* ``fft_ifft``: ``sum(r * real(fft(complex(x)) * c2)) + sum(s * real(ifft(complex(x) * c2)))``

each with numpy's ``norm`` (``backward`` / ``ortho`` / ``forward``).
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(7)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "..", "crates", "rlx-autodiff", "tests", "fixtures", "fft_grad.json")


def grid(*shape):
    return np.round(rng.uniform(-1, 1, size=shape) * 256) / 256


def flat(a):
    return [float(v) for v in np.asarray(a).reshape(-1)]


cases = []
for n in (8, 7):
    for norm in ("backward", "ortho", "forward"):
        x, r, s = grid(2, n), grid(2, n), grid(2, n)
        c = grid(n // 2 + 1) + 1j * grid(n // 2 + 1)
        c2 = grid(n) + 1j * grid(n)
        models = {
            "rfft_irfft": lambda x: jnp.sum(
                r * jnp.fft.irfft(jnp.fft.rfft(x, norm=norm) * c, n=n, norm=norm)),
            "fft_ifft": lambda x: jnp.sum(
                r * jnp.real(jnp.fft.fft(x.astype(jnp.complex128), norm=norm) * c2))
            + jnp.sum(s * jnp.real(jnp.fft.ifft(x.astype(jnp.complex128) * c2, norm=norm))),
        }
        for model, f in models.items():
            loss, g = jax.value_and_grad(f)(x)
            cases.append({
                "name": f"{model}_n{n}_{norm}", "model": model, "n": n, "norm": norm,
                "x": flat(x), "r": flat(r), "s": flat(s),
                "c_re": flat(c.real), "c_im": flat(c.imag),
                "c2_re": flat(c2.real), "c2_im": flat(c2.imag),
                "loss": float(loss), "grad": flat(g),
            })
with open(OUT, "w") as fh:
    json.dump({"cases": cases}, fh)
print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")
