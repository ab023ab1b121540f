#!/usr/bin/env python3
"""Reference fixtures for crates/rlx-splat (committed under crates/rlx-splat/tests/fixtures/).

    ~/.cache/rlx-ref/venv/bin/python tools/gen_splat_fixtures.py

(the venv of ../shared/ref/setup.sh: numpy + jax). Seeds are fixed; a re-run writes the same file.

An independent 3D Gaussian splatting renderer written with jax.numpy in float64, vectorised over
(pixel, Gaussian) pairs instead of the reference renderer's per-tile loops, following the 3DGS
reference rasterizer (Kerbl et al. 2023, diff-gaussian-rasterization):

- covariance R(q) S S^T R(q)^T (q normalised, w first); view-space mean t = V p + tv, culled when
  t.z <= near; J of the pinhole projection with x/z, y/z clamped to 1.3 tan(fov/2); 2D covariance
  J V Sigma V^T J^T + 0.3 I (EWA low-pass); conic = its inverse; radius ceil(3 sqrt(lambda_max)),
  lambda_max = mid + sqrt(max(0.1, mid^2 - det));
- 16x16 tiles: a Gaussian reaches the pixels of the tiles its [centre +- radius] rectangle touches;
- per pixel, Gaussians front to back (stable sort by depth): power = -0.5 d^T conic d
  (d = centre - pixel), skipped when power > 0; alpha = min(0.99, opacity exp(power)), skipped when
  < 1/255; stop before the Gaussian that takes transmittance below 1e-4;
  color = sum alpha T c + T_final background.

Gradients of L = sum(image * d_image) w.r.t. means, scales, rotations, opacities and colors are
JAX autodiff of the same function (the inclusion masks are piecewise constant). The scenes keep
every alpha below the 0.99 clamp and every visible Gaussian inside the x/z clamp, where the
function is smooth.

- splat.json: scenes (params, inputs, d_image) with the rendered image, per-Gaussian projection
  (pixel centre, conic, depth, radius, tile rectangle), the depth order, per-tile overlap counts,
  and the gradients.
"""
import json
import os

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rlx-splat", "tests", "fixtures")
TILE = 16


def rotmat(q):
    q = q / jnp.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return jnp.stack([
        jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def project(p, means, scales, rots):
    """Per-Gaussian pixel centre, conic, depth and a culled flag (before the tile test)."""
    W, H, fx, fy, cx, cy = p["width"], p["height"], p["fx"], p["fy"], p["cx"], p["cy"]
    view = jnp.asarray(p["view"], dtype=jnp.float64).reshape(4, 4)
    V, tv = view[:3, :3], view[:3, 3]
    R = rotmat(rots)
    M = R * scales[:, None, :]
    cov3 = M @ jnp.swapaxes(M, 1, 2)
    t = means @ V.T + tv
    tz = t[:, 2]
    behind = tz <= p["near"]
    tzs = jnp.where(behind, 1.0, tz)
    limx, limy = 1.3 * W / (2 * fx), 1.3 * H / (2 * fy)
    txc = jnp.clip(t[:, 0] / tzs, -limx, limx) * tzs
    tyc = jnp.clip(t[:, 1] / tzs, -limy, limy) * tzs
    zero = jnp.zeros_like(tzs)
    J = jnp.stack([
        jnp.stack([fx / tzs, zero, -fx * txc / tzs ** 2], -1),
        jnp.stack([zero, fy / tzs, -fy * tyc / tzs ** 2], -1),
    ], 1)
    T = J @ V
    cov2 = T @ cov3 @ jnp.swapaxes(T, 1, 2) + 0.3 * jnp.eye(2)
    a, b, c = cov2[:, 0, 0], cov2[:, 0, 1], cov2[:, 1, 1]
    det = a * c - b * b
    conic = jnp.stack([c / det, -b / det, a / det], -1)
    px = fx * t[:, 0] / tzs + cx
    py = fy * t[:, 1] / tzs + cy
    mid = 0.5 * (a + c)
    lam = mid + jnp.sqrt(jnp.maximum(0.1, mid * mid - det))
    radius = jnp.ceil(3 * jnp.sqrt(lam))
    culled = behind | (det == 0)
    return px, py, conic, tz, radius, culled


def tile_rects(px, py, radius, W, H):
    tx, ty = -(-W // TILE), -(-H // TILE)
    x0 = np.minimum(tx, np.maximum(0, np.trunc((px - radius) / TILE))).astype(int)
    y0 = np.minimum(ty, np.maximum(0, np.trunc((py - radius) / TILE))).astype(int)
    x1 = np.minimum(tx, np.maximum(0, np.trunc((px + radius + TILE - 1) / TILE))).astype(int)
    y1 = np.minimum(ty, np.maximum(0, np.trunc((py + radius + TILE - 1) / TILE))).astype(int)
    return x0, y0, x1, y1


def render(p, means, scales, rots, opac, colors, want_info=False):
    W, H = p["width"], p["height"]
    px, py, conic, tz, radius, culled = project(p, means, scales, rots)
    # The discrete decisions (tiles, order, culling) are made on concrete values.
    pxn, pyn, rn = (np.asarray(jax.lax.stop_gradient(v)) for v in (px, py, radius))
    culledn = np.asarray(culled)
    x0, y0, x1, y1 = tile_rects(pxn, pyn, rn, W, H)
    visible = ~culledn & ((x1 - x0) * (y1 - y0) > 0)
    order = np.argsort(np.asarray(jax.lax.stop_gradient(tz)), kind="stable")
    ys, xs = np.mgrid[0:H, 0:W]
    xs, ys = xs.reshape(-1), ys.reshape(-1)
    ptx, pty = xs // TILE, ys // TILE
    o = order
    inrect = (visible[o][None, :] & (ptx[:, None] >= x0[o][None, :]) & (ptx[:, None] < x1[o][None, :])
              & (pty[:, None] >= y0[o][None, :]) & (pty[:, None] < y1[o][None, :]))
    dx = px[o][None, :] - xs[:, None]
    dy = py[o][None, :] - ys[:, None]
    A, B, C = conic[o, 0][None, :], conic[o, 1][None, :], conic[o, 2][None, :]
    power = -0.5 * (A * dx * dx + C * dy * dy) - B * dx * dy
    alpha = jnp.minimum(0.99, opac[o][None, :] * jnp.exp(power))
    an = np.asarray(jax.lax.stop_gradient(alpha))
    pn = np.asarray(jax.lax.stop_gradient(power))
    valid = inrect & (pn <= 0) & (an >= 1.0 / 255.0)
    t_incl = np.cumprod(np.where(valid, 1 - an, 1.0), axis=1)
    include = valid & (t_incl >= 1e-4)
    a = jnp.where(include, alpha, 0.0)
    one_minus = 1 - a
    t_excl = jnp.cumprod(jnp.concatenate([jnp.ones((a.shape[0], 1)), one_minus[:, :-1]], 1), 1)
    t_final = jnp.prod(one_minus, 1)
    img = (a * t_excl) @ colors[o] + t_final[:, None] * jnp.asarray(p["background"])[None, :]
    img = img.reshape(H, W, 3)
    if not want_info:
        return img
    tiles = np.zeros(((-(-H // TILE)), (-(-W // TILE))), dtype=int)
    for i in range(len(pxn)):
        if visible[i]:
            tiles[y0[i]:y1[i], x0[i]:x1[i]] += 1
    info = dict(
        px=pxn, py=pyn, conic=np.asarray(conic), depth=np.asarray(tz),
        radius=np.where(visible, rn, 0), visible=visible, rect=np.stack([x0, y0, x1, y1], 1),
        order=order, tile_counts=tiles.reshape(-1),
        stopped=int(((valid & ~include).any(1)).sum()),
        clamped=int((an[include] >= 0.99).sum()),
    )
    return img, info


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def look_at_view(eye, target):
    f = target - eye
    f = f / np.linalg.norm(f)
    up = np.array([0.0, -1.0, 0.0])
    r = np.cross(up, f)
    r = r / np.linalg.norm(r)
    u = np.cross(f, r)
    V = np.stack([r, u, f])  # rows: camera x, y, z in world coordinates
    view = np.eye(4)
    view[:3, :3] = V
    view[:3, 3] = -V @ eye
    return view


def scene(name, rng, n, W, H, focal, dense):
    view = f32(look_at_view(np.array([0.3, -0.2, -4.0]), np.array([0.0, 0.0, 0.5])))
    p = dict(width=W, height=H, fx=float(np.float32(focal)), fy=float(np.float32(focal * 1.05)),
             cx=float(np.float32((W - 1) / 2 + 0.3)), cy=float(np.float32((H - 1) / 2 - 0.2)),
             near=float(np.float32(0.2)), view=view.reshape(-1).tolist(),
             background=f32([0.1, 0.2, 0.3]).tolist())
    Vi = np.linalg.inv(view)
    # Sample in view space (so everything is in front of the camera and on screen), map to world.
    z = rng.uniform(3.0, 6.0, n)
    spread = 0.05 if dense else 0.45
    cam = np.stack([rng.uniform(-spread, spread, n) * z, rng.uniform(-spread * 0.7, spread * 0.7, n) * z, z], 1)
    if not dense:
        cam[-2] = [0.1, 0.1, -1.0]  # behind the camera: culled
        cam[-1] = [4.0 * 5.0, 0.0, 5.0]  # far off screen to the right: no tile
    means = f32((np.c_[cam, np.ones(n)] @ Vi.T)[:, :3])
    scales = f32(rng.uniform(0.15, 0.45, (n, 3)) if dense else rng.uniform(0.08, 0.3, (n, 3)))
    rots = f32(rng.normal(size=(n, 4)) * rng.uniform(0.5, 2.0, (n, 1)))
    opac = f32(rng.uniform(0.75, 0.95, n) if dense else rng.uniform(0.3, 0.85, n))
    colors = f32(rng.uniform(0.0, 1.0, (n, 3)))
    d_image = f32(rng.normal(size=(H, W, 3)))
    ins = [jnp.asarray(v) for v in (means, scales, rots, opac, colors)]
    img, info = render(p, *ins, want_info=True)
    assert info["clamped"] == 0, f"{name}: an alpha reaches the 0.99 clamp"
    loss = lambda *a: jnp.sum(render(p, *a) * d_image)  # noqa: E731
    grads = jax.grad(loss, argnums=(0, 1, 2, 3, 4))(*ins)
    print(f"{name}: {n} Gaussians, {int(info['visible'].sum())} visible, "
          f"{info['stopped']} pixels stopped at T < 1e-4")
    lst = lambda a: np.asarray(a, dtype=np.float64).reshape(-1).tolist()  # noqa: E731
    return dict(
        name=name, params=p, n=n,
        means=lst(means), scales=lst(scales), rotations=lst(rots), opacities=lst(opac), colors=lst(colors),
        d_image=lst(d_image), image=lst(img),
        px=lst(info["px"]), py=lst(info["py"]), conic=lst(info["conic"]), depth=lst(info["depth"]),
        radius=lst(info["radius"]), rect=np.asarray(info["rect"]).reshape(-1).tolist(),
        order=np.asarray(info["order"]).tolist(), tile_counts=np.asarray(info["tile_counts"]).tolist(),
        stopped_pixels=info["stopped"],
        grad_means=lst(grads[0]), grad_scales=lst(grads[1]), grad_rotations=lst(grads[2]),
        grad_opacities=lst(grads[3]), grad_colors=lst(grads[4]),
    )


def main():
    rng = np.random.default_rng(22)
    scenes = [
        scene("sparse", rng, 20, 32, 24, 30.0, dense=False),
        scene("dense", rng, 30, 32, 24, 30.0, dense=True),
    ]
    assert scenes[1]["stopped_pixels"] > 0, "the dense scene must exercise the 1e-4 cutoff"
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "splat.json"), "w") as f:
        json.dump(scenes, f)
    print("wrote", os.path.join(OUT, "splat.json"))


if __name__ == "__main__":
    main()
