// Optimizer updates in place on the device, one thread per parameter
// element, in f32 (torch's single-tensor SGD / Adam / AdamW, as rlx-optim).

// SGD with momentum, dampening, Nesterov and weight decay:
//   g = ±grad; g += wd p (L2)
//   buf = g on the first step, else mu buf + (1 - dampening) g
//   g = g + mu buf (Nesterov) or buf;  p -= lr g
// `buf` is null without momentum.
extern "C" __global__ void rlx_sgd_f32(float* p, const float* grad, float* buf, i64 n,
                                       float lr, float mu, float dampening, float wd,
                                       int nesterov, int maximize, int first) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        float g = maximize ? -grad[i] : grad[i];
        if (wd != 0.0f) g = fmaf(wd, p[i], g);
        if (buf) {
            float b = first ? g : fmaf(1.0f - dampening, g, buf[i] * mu);
            buf[i] = b;
            g = nesterov ? fmaf(mu, b, g) : b;
        }
        p[i] = fmaf(-lr, g, p[i]);
    }
}

// torch's lerp, fused as its CPU kernel is.
__device__ __forceinline__ float torch_lerp(float a, float b, float w) {
    return fabsf(w) < 0.5f ? fmaf(w, b - a, a) : fmaf(-(b - a), 1.0f - w, b);
}

// Adam / AdamW at step t (the host passes step_size = lr / (1 - b1^t),
// bc2_sqrt = sqrt(1 - b2^t) and decay = 1 - lr wd, all rounded from f64):
//   g = ±grad; decoupled: p *= decay, else g += wd p
//   m = lerp(m, g, 1 - b1);  v = b2 v + (1 - b2) g²;  vmax = max(vmax, v)
//   p -= step_size m / (sqrt(v or vmax) / bc2_sqrt + eps)
// `vmax` is null without amsgrad.
extern "C" __global__ void rlx_adam_f32(float* p, const float* grad, float* m, float* v,
                                        float* vmax, i64 n, float b1, float b2,
                                        float eps, float wd, float decay, int decoupled,
                                        int maximize, float step_size, float bc2_sqrt) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        float g = maximize ? -grad[i] : grad[i];
        float pi = p[i];
        if (wd != 0.0f) {
            if (decoupled) pi *= decay;
            else g = fmaf(wd, pi, g);
        }
        float mi = torch_lerp(m[i], g, 1.0f - b1);
        float vi = fmaf((1.0f - b2) * g, g, v[i] * b2);
        m[i] = mi;
        v[i] = vi;
        float second = vi;
        if (vmax) {
            second = fmaxf(vmax[i], vi);
            vmax[i] = second;
        }
        p[i] = pi + -step_size * mi / (sqrtf(second) / bc2_sqrt + eps);
    }
}
