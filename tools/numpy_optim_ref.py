"""numpy (float64) re-implementations of the optimizers torch.optim does not have, for
tools/gen_optim_fixtures.py (which imports this module; run that script, not this one).

Each function follows the authors' reference code named in its docstring, operation for operation,
on one parameter `p` (modified in place) with gradient `g` and a per-parameter state dict.
"""
import numpy as np


def sym(a):
    return 0.5 * (a + a.T)


# ------------------------------------------------------------------------------------------------ Lion
def lion(p, g, st, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
    """google/automl lion/lion_pytorch.py (Chen et al. 2023)."""
    m = st.setdefault("exp_avg", np.zeros_like(p))
    p *= 1 - lr * weight_decay
    update = m * betas[0] + g * (1 - betas[0])
    p += -lr * np.sign(update)
    st["exp_avg"] = m * betas[1] + (1 - betas[1]) * g


# --------------------------------------------------------------------------------------------- QHAdamW
def qhadamw(p, g, st, lr=1e-3, betas=(0.9, 0.999), nus=(1.0, 1.0), weight_decay=0.0, eps=1e-8,
            decouple_weight_decay=True):
    """facebookresearch/qhoptim qhoptim/pyt/qhadam.py, QHAdamW = QHAdam(decouple_weight_decay=True)."""
    g = g.copy()
    if weight_decay != 0:
        if decouple_weight_decay:
            p *= 1 - lr * weight_decay
        else:
            g += weight_decay * p
    g2 = g * g
    if "exp_avg" not in st:
        st.update(beta1_weight=0.0, beta2_weight=0.0, exp_avg=np.zeros_like(p), exp_avg_sq=np.zeros_like(p))
    st["beta1_weight"] = 1.0 + betas[0] * st["beta1_weight"]
    st["beta2_weight"] = 1.0 + betas[1] * st["beta2_weight"]
    a1 = 1.0 - 1.0 / st["beta1_weight"]
    a2 = 1.0 - 1.0 / st["beta2_weight"]
    st["exp_avg"] = st["exp_avg"] * a1 + (1.0 - a1) * g
    st["exp_avg_sq"] = st["exp_avg_sq"] * a2 + (1.0 - a2) * g2
    avg = st["exp_avg"] * nus[0]
    if nus[0] != 1.0:
        avg = avg + (1.0 - nus[0]) * g
    rms = st["exp_avg_sq"] * nus[1]
    if nus[1] != 1.0:
        rms = rms + (1.0 - nus[1]) * g2
    rms = np.sqrt(rms) + eps
    p += -lr * avg / rms


# ------------------------------------------------------------------------------------------------ LAMB
def lamb(p, g, st, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, adam=False):
    """cybertronai/pytorch-lamb pytorch_lamb/lamb.py (You et al. 2020, v3: no bias correction); a zero norm
    gives trust ratio 1 (the reference would divide by zero)."""
    m = st.setdefault("exp_avg", np.zeros_like(p))
    v = st.setdefault("exp_avg_sq", np.zeros_like(p))
    m[...] = m * betas[0] + (1 - betas[0]) * g
    v[...] = v * betas[1] + (1 - betas[1]) * g * g
    weight_norm = np.sqrt(np.sum(p * p))
    step = m / (np.sqrt(v) + eps)
    if weight_decay != 0:
        step = step + weight_decay * p
    adam_norm = np.sqrt(np.sum(step * step))
    trust = 1.0 if (adam or weight_norm == 0 or adam_norm == 0) else weight_norm / adam_norm
    p += -lr * trust * step


# ---------------------------------------------------------------------------------------------- Sophia
def sophia(p, g, st, lr=1e-4, betas=(0.965, 0.99), rho=0.04, weight_decay=0.1, bs=5120):
    """Liuhong99/Sophia sophia.py, SophiaG._single_tensor_sophiag (Liu et al. 2023)."""
    m = st.setdefault("exp_avg", np.zeros_like(p))
    h = st.setdefault("hessian", np.zeros_like(p))
    p *= 1 - lr * weight_decay
    m[...] = m * betas[0] + (1 - betas[0]) * g
    ratio = np.minimum(np.abs(m) / (rho * bs * h + 1e-15), 1.0)
    p += -lr * np.sign(m) * ratio


def sophia_update_hessian(p, ghat, st, betas=(0.965, 0.99), **_):
    """SophiaG.update_hessian: h = beta2 h + (1 - beta2) ghat^2."""
    h = st.setdefault("hessian", np.zeros_like(p))
    st.setdefault("exp_avg", np.zeros_like(p))
    h[...] = h * betas[1] + (1 - betas[1]) * ghat * ghat


# ------------------------------------------------------------------------------------------------ MARS
def mars(p, g, st, lr=3e-3, betas=(0.95, 0.99), eps=1e-8, weight_decay=0.0, amsgrad=False, gamma=0.025,
         mars_type="mars-adamw", optimize_1d=False, lr_1d=3e-3, betas_1d=(0.9, 0.95), weight_decay_1d=0.1):
    """AGI-Arena/MARS MARS/optimizers/mars.py, update_fn with is_approx=True (Yuan et al. 2024)."""
    if "exp_avg" not in st:
        st.update(step=0, exp_avg=np.zeros_like(p), last_grad=np.zeros_like(p), exp_avg_sq=np.zeros_like(p))
        if amsgrad:
            st["max_exp_avg_sq"] = np.zeros_like(p)
    st["step"] += 1
    step = st["step"]
    m, v, last = st["exp_avg"], st["exp_avg_sq"], st["last_grad"]
    if optimize_1d or p.ndim == 2:
        b1, b2 = betas
        c = (g - last) * (gamma * (b1 / (1.0 - b1))) + g
        cn = np.sqrt(np.sum(c * c))
        if cn > 1.0:
            c = c / cn
        m[...] = m * b1 + (1.0 - b1) * c
        if mars_type == "mars-adamw":
            v[...] = v * b2 + (1.0 - b2) * c * c
            bc1, bc2 = 1.0 - b1 ** step, 1.0 - b2 ** step
            if amsgrad:
                st["max_exp_avg_sq"] = np.maximum(st["max_exp_avg_sq"], v)
                v = st["max_exp_avg_sq"]
            denom = (np.sqrt(v) * (1 / np.sqrt(bc2)) + eps) * bc1
            upd = -lr * (p * weight_decay + m / denom)
        else:  # mars-lion
            upd = -lr * (p * weight_decay + np.sign(m))
    else:
        b1, b2 = betas_1d
        m[...] = m * b1 + (1.0 - b1) * g
        v[...] = v * b2 + (1.0 - b2) * g * g
        bc1, bc2 = 1.0 - b1 ** step, 1.0 - b2 ** step
        if amsgrad:
            st["max_exp_avg_sq"] = np.maximum(st["max_exp_avg_sq"], v)
            v = st["max_exp_avg_sq"]
        denom = (np.sqrt(v) * (1 / np.sqrt(bc2)) + eps) * bc1
        upd = -lr * (lr_1d / lr) * (p * weight_decay_1d + m / denom)
    p += upd
    st["last_grad"] = g.copy()


# ------------------------------------------------------------------------------------------------ Muon
def newton_schulz5(G, steps=5, coeffs=(3.4445, -4.7750, 2.0315), eps=1e-7):
    """KellerJordan/Muon muon.py zeropower_via_newtonschulz5, in float64 instead of bfloat16."""
    a, b, c = coeffs
    X = G.copy()
    tall = G.shape[0] > G.shape[1]
    if tall:
        X = X.T
    X = X / (np.sqrt(np.sum(X * X)) + eps)
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    return X.T if tall else X


def muon(p, g, st, lr=0.02, momentum=0.95, nesterov=True, weight_decay=0.0, ns_steps=5, adam_lr=3e-4,
         adam_betas=(0.9, 0.95), adam_eps=1e-10, adam_weight_decay=0.0):
    """KellerJordan/Muon muon.py SingleDeviceMuonWithAuxAdam: muon_update for ndim >= 2, adam_update otherwise."""
    if p.ndim >= 2:
        buf = st.setdefault("momentum_buffer", np.zeros_like(p))
        buf[...] = buf + (1 - momentum) * (g - buf)          # momentum.lerp_(grad, 1 - beta)
        upd = g + momentum * (buf - g) if nesterov else buf.copy()   # grad.lerp_(momentum, beta)
        G = upd.reshape(p.shape[0], -1)
        O = newton_schulz5(G, ns_steps) * max(1, G.shape[0] / G.shape[1]) ** 0.5
        p *= 1 - lr * weight_decay
        p += -lr * O.reshape(p.shape)
    else:
        if "exp_avg" not in st:
            st.update(exp_avg=np.zeros_like(p), exp_avg_sq=np.zeros_like(p), step=0)
        st["step"] += 1
        b1, b2 = adam_betas
        m, v = st["exp_avg"], st["exp_avg_sq"]
        m[...] = m + (1 - b1) * (g - m)
        v[...] = v + (1 - b2) * (g * g - v)
        upd = (m / (1 - b1 ** st["step"])) / (np.sqrt(v / (1 - b2 ** st["step"])) + adam_eps)
        alr = adam_lr
        p *= 1 - alr * adam_weight_decay
        p += -alr * upd


# --------------------------------------------------------------------------------------------- Stiefel
def proju(x, u):
    """geoopt EuclideanStiefel.proju: u - x sym(x^T u)."""
    return u - x @ sym(x.T @ u)


def retr(x, u):
    """geoopt EuclideanStiefel.retr: QR of x + u with the signs of diag(R) made positive."""
    q, r = np.linalg.qr(x + u)
    unflip = np.sign(np.sign(np.diag(r)) + 0.5)
    return q * unflip[None, :]


def stiefel_sgd(p, g, st, lr=1e-3, weight_decay=0.0, momentum=0.0, dampening=0.0, nesterov=False):
    """geoopt/geoopt geoopt/optim/rsgd.py RiemannianSGD on EuclideanStiefel."""
    if "momentum_buffer" not in st and momentum > 0:
        st["momentum_buffer"] = g.copy()
    g = g + weight_decay * p
    g = proju(p, g)
    if momentum > 0:
        buf = st["momentum_buffer"] * momentum + (1 - dampening) * g
        d = g + momentum * buf if nesterov else buf
        y = retr(p, -lr * d)
        st["momentum_buffer"] = proju(y, buf)
    else:
        y = retr(p, -lr * g)
    p[...] = y


def stiefel_adam(p, g, st, lr=1e-3, weight_decay=0.0, betas=(0.9, 0.999), eps=1e-8, amsgrad=False):
    """geoopt/geoopt geoopt/optim/radam.py RiemannianAdam on EuclideanStiefel (component_inner = u * u)."""
    if "exp_avg" not in st:
        st.update(step=0, exp_avg=np.zeros_like(p), exp_avg_sq=np.zeros_like(p))
        if amsgrad:
            st["max_exp_avg_sq"] = np.zeros_like(p)
    st["step"] += 1
    g = proju(p, g + weight_decay * p)
    st["exp_avg"] = st["exp_avg"] * betas[0] + (1 - betas[0]) * g
    st["exp_avg_sq"] = st["exp_avg_sq"] * betas[1] + (1 - betas[1]) * (g * g)
    v = st["exp_avg_sq"]
    if amsgrad:
        st["max_exp_avg_sq"] = np.maximum(st["max_exp_avg_sq"], v)
        v = st["max_exp_avg_sq"]
    bc1, bc2 = 1 - betas[0] ** st["step"], 1 - betas[1] ** st["step"]
    d = (st["exp_avg"] / bc1) / (np.sqrt(v / bc2) + eps)
    y = retr(p, -lr * d)
    st["exp_avg"] = proju(y, st["exp_avg"])
    p[...] = y


# ------------------------------------------------------------------------------------------------ SOAP
def _mode_mul(x, d, m):
    """out[.., a, ..] = sum_n m[a, n] x[.., n, ..]"""
    return np.moveaxis(np.tensordot(m, x, axes=([1], [d])), 0, d)


def _mode_gram(x, d):
    xm = np.moveaxis(x, d, 0).reshape(x.shape[d], -1)
    return xm @ xm.T


def soap(p, g, st, lr=3e-3, betas=(0.95, 0.95), shampoo_beta=-1, eps=1e-8, weight_decay=0.01,
         precondition_frequency=10, max_precond_dim=10000, precondition_1d=False, normalize_grads=False,
         correct_bias=True):
    """nikhilvyas/SOAP soap.py at commit f42d296 (Vyas et al. 2024), merge_dims=False; float64 throughout
    (numpy.linalg.eigh / qr instead of torch.linalg)."""
    sb = shampoo_beta if shampoo_beta >= 0 else betas[1]
    dims = [] if (p.ndim == 1 and not precondition_1d) else [d for d in range(p.ndim) if p.shape[d] <= max_precond_dim]

    def project(x, back):
        for d in dims:
            x = _mode_mul(x, d, st["Q"][d] if back else st["Q"][d].T)
        return x

    def update_preconditioner():
        if st["Q"] is not None:
            st["exp_avg"] = project(st["exp_avg"], True)
        for d in dims:
            st["GG"][d] = st["GG"][d] + (1 - sb) * (_mode_gram(g, d) - st["GG"][d])   # lerp_
        if st["Q"] is None:
            st["Q"] = {}
            for d in dims:
                _, Q = np.linalg.eigh(st["GG"][d])
                st["Q"][d] = np.flip(Q, 1)
        if st["step"] > 0 and st["step"] % precondition_frequency == 0:
            for d in dims:
                m, o = st["GG"][d], st["Q"][d]
                est = np.diag(o.T @ m @ o)
                idx = np.argsort(-est, kind="stable")
                st["exp_avg_sq"] = np.take(st["exp_avg_sq"], idx, axis=d)
                st["Q"][d] = np.linalg.qr(m @ o[:, idx])[0]
        if st["step"] > 0:
            st["exp_avg"] = project(st["exp_avg"], False)

    if "step" not in st:
        st.update(step=0, exp_avg=np.zeros_like(p), exp_avg_sq=np.zeros_like(p), Q=None,
                  GG={d: np.zeros((p.shape[d], p.shape[d])) for d in dims})
        update_preconditioner()
        return
    gp = project(g, False)
    st["step"] += 1
    b1, b2 = betas
    st["exp_avg"] = st["exp_avg"] * b1 + (1.0 - b1) * gp
    st["exp_avg_sq"] = st["exp_avg_sq"] * b2 + (1.0 - b2) * gp * gp
    denom = np.sqrt(st["exp_avg_sq"]) + eps
    step_size = lr
    if correct_bias:
        step_size = step_size * (1.0 - b2 ** st["step"]) ** 0.5 / (1.0 - b1 ** st["step"])
    norm_grad = project(st["exp_avg"] / denom, True)
    if normalize_grads:
        norm_grad = norm_grad / (1e-30 + np.mean(norm_grad ** 2) ** 0.5)
    p += -step_size * norm_grad
    if weight_decay > 0:
        p += (-lr * weight_decay) * p
    update_preconditioner()


# -------------------------------------------------------------------------------------------- Kron-PSGD
M64 = (1 << 64) - 1


def _mix64(z):
    """SplitMix64 finaliser (crates/rlx-optim/src/rand.rs)."""
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _uniform(seed, a, b, c):
    k = _mix64(_mix64(_mix64(seed ^ a) ^ b) ^ c)
    return ((k >> 11) + 0.5) / float(1 << 53)


def _normal(seed, a, b, i):
    import math
    u1, u2 = _uniform(seed, a, b, 2 * i), _uniform(seed, a, b, 2 * i + 1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def _name_hash(name):
    h = 0xcbf29ce484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001b3) & M64
    return h


def _norm_lower_bound(A):
    """kron_torch _norm_lower_bound / _lb (real case)."""
    max_abs = np.max(np.abs(A))
    if not max_abs > 0:
        return max_abs
    A = A / max_abs
    aa = A * A
    c0, r0 = np.sum(aa, axis=0), np.sum(aa, axis=1)
    i, j = int(np.argmax(c0)), int(np.argmax(r0))
    if c0[i] > r0[j]:
        x = A[:, i] @ A
        return max_abs * np.linalg.norm((x / np.linalg.norm(x)) @ A.T)
    x = A @ A[j]
    return max_abs * np.linalg.norm(A.T @ (x / np.linalg.norm(x)))


class Kron:
    """evanatyourservice/kron_torch kron_torch/kron.py at commit d163b81 (PSGD Kron, Li 2018), float64, with the
    reference's random draws (Python random.Random for do_update / balance, torch.randn_like for the probe V)
    replaced by the counter-based SplitMix64 stream of crates/rlx-optim/src/rand.rs: at iteration n (0-based),
    do_update = u(seed, 0, n, 0) < prob(n), balance = u(seed, 0, n, 1) < balance_probability and do_update,
    V[i] = Box-Muller(u(seed, fnv1a(name), n, 2i), u(seed, fnv1a(name), n, 2i + 1))."""

    def __init__(self, lr=1e-3, b1=0.9, weight_decay=0.0, update_probability=None, max_size_triangular=8192,
                 min_ndim_triangular=2, memory_save_mode=None, precond_lr=0.1, precond_init_scale=1.0,
                 trust_region_scale=1.5, balance_probability=0.01, seed=5318008):
        self.__dict__.update(locals())
        self.tiny = float(np.finfo(np.float32).tiny)   # == torch.finfo(torch.bfloat16).tiny
        self.n = 0

    def prob(self, n):
        if self.update_probability is not None:
            return self.update_probability
        return min(max(1.0 * np.exp(-0.001 * (n - 250)), 0.03), 1.0)

    def init_q(self, shape):
        scale = self.precond_init_scale ** (1 / len(shape))
        if self.memory_save_mode == "one_diag":
            largest = int(np.argsort(shape, kind="stable")[::-1][0])
            save = [d == largest for d in range(len(shape))]
        else:
            save = [self.memory_save_mode == "all_diag"] * len(shape)
        Q = []
        for d, size in enumerate(shape):
            diag = size == 1 or size > self.max_size_triangular or len(shape) < self.min_ndim_triangular or save[d]
            Q.append(scale * np.ones(size) if diag else scale * np.eye(size))
        return Q

    def begin(self):
        self.do_update = _uniform(self.seed, 0, self.n, 0) < self.prob(self.n)
        self.balance = _uniform(self.seed, 0, self.n, 1) < self.balance_probability and self.do_update

    def end(self):
        self.n += 1

    def step(self, name, p, g, st):
        if "step" not in st:
            st.update(step=0, momentum_buffer=np.zeros_like(p), Q=self.init_q(p.shape))
        st["step"] += 1
        mb = st["momentum_buffer"]
        mb[...] = mb * self.b1 + (1 - self.b1) * g
        mom = mb / (1 - self.b1 ** st["step"])
        Q = st["Q"]
        if p.ndim > 1 and self.balance:
            norms = np.array([np.max(np.abs(q)) for q in Q])
            gm = np.prod(norms) ** (1 / len(Q))
            for q, nrm in zip(Q, norms):
                q *= gm / nrm
        if self.do_update:
            h = _name_hash(name)
            V = np.array([_normal(self.seed, h, self.n, i) for i in range(p.size)]).reshape(p.shape)
            A, B = mom, V
            for d, q in enumerate(Q):
                if q.ndim == 2:
                    A = _mode_mul(A, d, q)
                    B = _mode_mul(B, d, np.linalg.inv(q).T)   # conjB = V x_d Q_d^{-T}
                else:
                    shp = [1] * p.ndim
                    shp[d] = -1
                    A = A * q.reshape(shp)
                    B = B / q.reshape(shp)
            terms = [(_mode_gram(A, d), _mode_gram(B, d)) for d in range(p.ndim)]
            for d, (t1, t2) in enumerate(terms):
                q = Q[d]
                tmp = (t1 - t2) * self.precond_lr
                if q.ndim < 2:
                    tmp = np.diag(tmp) * q / (np.max(np.abs(np.diag(t1 + t2))) + self.tiny)
                    Q[d] = q - tmp
                else:
                    tmp = np.triu(tmp) / (_norm_lower_bound(t1 + t2) + self.tiny)
                    Q[d] = q - tmp @ q
        pre = mom
        for d, q in enumerate(Q):
            if q.ndim == 2:
                pre = _mode_mul(pre, d, q.T @ q)
            else:
                shp = [1] * p.ndim
                shp[d] = -1
                pre = pre * (q * q).reshape(shp)
        x = pre / self.trust_region_scale
        pre = (0.1 * np.sign(x) * np.log(np.abs(x) + 1) + 0.9 * np.tanh(x)) * self.trust_region_scale
        if self.weight_decay != 0 and p.ndim >= 2:
            pre = pre + self.weight_decay * p
        p += -self.lr * pre


def run_kron(problem, kw):
    opt = Kron(**kw)
    names = problem["order"]
    ps = {n: np.array(problem["init"][n], dtype=np.float64).reshape(problem["shapes"][n]) for n in names}
    states = {n: {} for n in names}
    traj = []
    for k in range(1, problem["steps"] + 1):
        opt.begin()
        for n in names:
            opt.step(n, ps[n], grad_of(problem, n, ps[n], k), states[n])
        opt.end()
        traj.append([float(x) for n in names for x in ps[n].reshape(-1)])
    return traj


# ----------------------------------------------------------------------------------------------- runner
def grad_of(problem, name, p, k):
    """The fixture gradient at iteration k (1-based), plus the drift term drift * sin(0.7 k + 0.37 i) (i the
    flat index), which keeps consecutive gradients different even where a parameter does not move (SOAP's first
    call does not move it; with equal gradients its rotated gradient would be pure rounding noise over eps)."""
    h = np.array(problem["h"][name], dtype=np.float64).reshape(p.shape)
    t = np.array(problem["t"][name], dtype=np.float64).reshape(p.shape)
    drift = problem.get("drift", 0.0) * np.sin(0.7 * k + 0.37 * np.arange(p.size)).reshape(p.shape)
    return h * (p - t) + problem["c"] * ((p * p) * p) + drift


def run(problem, fn, kw, hessian_every=0):
    names = problem["order"]
    ps = {n: np.array(problem["init"][n], dtype=np.float64).reshape(problem["shapes"][n]) for n in names}
    states = {n: {} for n in names}
    traj = []
    for k in range(1, problem["steps"] + 1):
        for n in names:
            fn(ps[n], grad_of(problem, n, ps[n], k), states[n], **kw)
        if hessian_every and k % hessian_every == 0:
            for n in names:
                ghat = grad_of(problem, n, ps[n], k) * 0.5 + 0.05
                sophia_update_hessian(ps[n], ghat, states[n], **kw)
        traj.append([float(x) for n in names for x in ps[n].reshape(-1)])
    return traj


def stiefel_problem(problem):
    a = np.array(problem["init"]["w"], dtype=np.float64).reshape(3, 4).T
    q = retr(a, np.zeros_like(a))
    return {"init": {"s": [float(x) for x in q.reshape(-1)]}, "h": {"s": problem["h"]["w"]},
            "t": {"s": problem["t"]["w"]}, "c": problem["c"], "shapes": {"s": [4, 3]}, "order": ["s"],
            "steps": problem["steps"], "drift": problem["drift"]}


def configs():
    return [
        ("lion", "Lion", lion, dict(lr=0.02)),
        ("lion_wd", "Lion", lion, dict(lr=0.01, betas=(0.95, 0.98), weight_decay=0.5)),
        ("qhadamw", "QHAdamW", qhadamw, dict(lr=0.02, nus=(0.7, 1.0), betas=(0.995, 0.999), weight_decay=0.1)),
        ("qhadam_l2_nus", "QHAdamW", qhadamw,
         dict(lr=0.02, nus=(0.8, 0.9), weight_decay=0.05, decouple_weight_decay=False)),
        ("lamb", "Lamb", lamb, dict(lr=0.02)),
        ("lamb_wd", "Lamb", lamb, dict(lr=0.02, weight_decay=0.1, betas=(0.8, 0.9))),
        ("sophia", "Sophia", sophia, dict(lr=0.02, rho=0.04, bs=10)),
        ("sophia_wd", "Sophia", sophia, dict(lr=0.02, rho=0.5, bs=2, weight_decay=0.2, betas=(0.9, 0.95))),
        ("mars", "Mars", mars, dict(lr=0.02)),
        ("mars_amsgrad_1d", "Mars", mars, dict(lr=0.02, amsgrad=True, weight_decay=0.1, optimize_1d=True)),
        ("mars_lion", "Mars", mars, dict(lr=0.01, mars_type="mars-lion", weight_decay=0.1, lr_1d=0.02)),
        ("soap", "Soap", soap, dict(lr=0.02, precondition_frequency=3)),
        # (precondition_1d is not fixture-tested: the first basis of a 1-D parameter is the eigenbasis of the
        # rank-one g g^T, whose null space any eigensolver may span differently)
        ("soap_normalize", "Soap", soap, dict(lr=0.02, betas=(0.9, 0.99), shampoo_beta=0.8, weight_decay=0.1,
                                              precondition_frequency=2, normalize_grads=True)),
        ("soap_no_bias_correction", "Soap", soap, dict(lr=0.01, correct_bias=False, precondition_frequency=5)),
        ("muon", "Muon", muon, dict(lr=0.02, adam_lr=0.01)),
        ("muon_plain_wd", "Muon", muon, dict(lr=0.05, momentum=0.9, nesterov=False, weight_decay=0.1,
                                             adam_lr=0.02, adam_weight_decay=0.1)),
    ]


def kron_configs():
    return [
        ("kron", dict(lr=0.02, update_probability=1.0)),
        ("kron_schedule_balance_wd", dict(lr=0.02, weight_decay=0.1, balance_probability=0.3, seed=7)),
        ("kron_one_diag_sometimes", dict(lr=0.03, b1=0.8, update_probability=0.5, memory_save_mode="one_diag",
                                         precond_lr=0.2, precond_init_scale=2.0, trust_region_scale=1.0, seed=11)),
        ("kron_all_diag", dict(lr=0.02, memory_save_mode="all_diag", update_probability=1.0)),
    ]


def stiefel_configs():
    return [
        ("stiefel_sgd", "Stiefel", stiefel_sgd, dict(lr=0.05)),
        ("stiefel_sgd_nesterov", "Stiefel", stiefel_sgd, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
        ("stiefel_sgd_dampening", "Stiefel", stiefel_sgd, dict(lr=0.05, momentum=0.8, dampening=0.3)),
        ("stiefel_adam", "Stiefel", stiefel_adam, dict(lr=0.05)),
        ("stiefel_adam_amsgrad", "Stiefel", stiefel_adam, dict(lr=0.05, amsgrad=True, betas=(0.8, 0.99))),
    ]


def gen(problem):
    problem = dict(problem, drift=0.3)
    runs = []
    for name, rust, fn, kw in configs():
        every = 2 if rust == "Sophia" else 0
        ent = {"name": name, "optimizer": rust, "reference": fn.__doc__.split("\n")[0], "kwargs": kw,
               "f64": run(problem, fn, kw, every)}
        if every:
            ent["hessian_every"] = every
        runs.append(ent)
        print(f"numpy {name:26s} p[0] {problem['init']['w'][0]} -> {ent['f64'][-1][0]:.6f}")
    for name, kw in kron_configs():
        ent = {"name": name, "optimizer": "KronPsgd", "reference": Kron.__doc__.split("\n")[0], "kwargs": kw,
               "f64": run_kron(problem, kw)}
        runs.append(ent)
        print(f"numpy {name:26s} p[0] {problem['init']['w'][0]} -> {ent['f64'][-1][0]:.6f}")
    sp = stiefel_problem(problem)
    for name, rust, fn, kw in stiefel_configs():
        ent = {"name": name, "optimizer": rust, "reference": fn.__doc__.split("\n")[0], "kwargs": kw,
               "method": "sgd" if fn is stiefel_sgd else "adam", "problem": sp, "f64": run(sp, fn, kw)}
        runs.append(ent)
        q = np.array(ent["f64"][-1]).reshape(4, 3)
        print(f"numpy {name:26s} |W^T W - I| = {np.abs(q.T @ q - np.eye(3)).max():.1e}")
    return {"numpy_version": np.__version__, "problem": problem, "runs": runs,
            "note": "float64; gradient with the drift term of grad_of; Sophia runs call update_hessian(ghat = "
                    "0.5 g + 0.05, g the gradient at the new parameters) after every hessian_every-th iteration"}
