#!/usr/bin/env python3
"""Standalone numpy reference of Qwen3.5's Gated DeltaNet (GDN) pieces, for cross-checking the Rust ops.

    python tools/oracle/gdn_reference.py                 # self-checks (numpy only)
    python tools/oracle/gdn_reference.py --transformers  # + against transformers' own functions,
                                                         #   and a whole numpy forward of
                                                         #   goldens/qwen3_5-tiny against its goldens

Every function below is plain numpy (float32 or float64, as given), written to follow the order of
operations of transformers 5.24, src/transformers/models/qwen3_5/modeling_qwen3_5.py ("M." below),
which is what the goldens in goldens/qwen3_5-tiny were captured with (its linear attention runs on
CPU through M.'s plain PyTorch fallback: no fla / causal-conv1d / kernels installed).

=====================================================================================================
THE MATH (what the Rust engine implements). Shapes are for one sequence; T tokens.
Config names: H = hidden_size, nk = linear_num_key_heads, nv = linear_num_value_heads,
dk = linear_key_head_dim, dv = linear_value_head_dim, K = linear_conv_kernel_dim, eps = rms_norm_eps.
key_dim = nk*dk, value_dim = nv*dv, conv_dim = 2*key_dim + value_dim. nv % nk == 0, r = nv // nk.
(tiny: H 128, nk 2, nv 4, dk 32, dv 32, K 4, eps 1e-6; Qwen3.5-0.8B: H 1024, nk 16, nv 16, dk 128,
dv 128, K 4.)

Decoder layer (M.Qwen3_5DecoderLayer.forward), layer_types[i] in {linear_attention, full_attention}:
    h = h + mixer(rmsnorm1p(h, input_layernorm.weight))
    h = h + mlp(rmsnorm1p(h, post_attention_layernorm.weight))     mlp = down(silu(gate(x)) * up(x))
Model: h0 = embed_tokens[ids]; layers; rmsnorm1p(h, model.norm.weight); logits = h @ embed_tokens^T
(tied). Every linear is y = x @ W^T with W stored [out, in]; no biases anywhere.

rmsnorm1p (M.Qwen3_5RMSNorm.forward, "zero-centred" weight, stored w ~ 0 in the checkpoint):
    y = x * rsqrt(mean(x^2) + eps) * (1 + w)          (all in f32; this is used by input_layernorm,
                                                        post_attention_layernorm, model.norm,
                                                        self_attn.q_norm, self_attn.k_norm)

Linear-attention mixer (M.Qwen3_5GatedDeltaNet.forward), x = normed hidden [T, H]:
 1. qkv = x @ in_proj_qkv.weight^T   [T, conv_dim]; channel layout [ q (nk*dk) | k (nk*dk) | v (nv*dv) ],
    each part head-major (head j owns channels [j*d, (j+1)*d) of its part). NOT interleaved per head
    group (Qwen3-Next's in_proj_qkvz was; Qwen3.5 has separate in_proj_qkv / in_proj_z / _b / _a).
    z = x @ in_proj_z.weight^T [T, nv*dv] -> [T, nv, dv];  b = x @ in_proj_b.weight^T [T, nv];
    a = x @ in_proj_a.weight^T [T, nv].
 2. Causal depthwise conv1d + SiLU over the sequence, per channel c (M.causal_conv1d_fn: F.conv1d
    with padding K-1, groups=conv_dim, keep the first T outputs). conv1d.weight is stored
    [conv_dim, 1, K]; w[c, j] = conv1d.weight[c, 0, j]; no bias. With xpad = (K-1 zeros, then qkv):
        y[t, c] = silu( sum_{j=0..K-1} w[c, j] * xpad[t + j, c] )
    i.e. w[c, K-1] multiplies the current token, w[c, 0] the token K-1 steps back (cross-correlation,
    not a flipped convolution).  silu(x) = x * sigmoid(x).
    Conv state for decode: the last conv inputs (pre-conv qkv rows), zero-filled on the left when
    fewer tokens were seen. transformers' cache (cache_utils.LinearAttentionLayer.update_conv_state)
    stores the last K inputs [conv_dim, K], but the decode step (M.causal_conv1d_update: cat(state,
    x_t), conv without padding, keep the last output) only ever reads the last K-1 of them; this
    reference keeps K-1 (`causal_conv1d(..)` returns it; `causal_conv1d_step` rolls it by one token).
 3. Split y into q [T, nk, dk], k [T, nk, dk], v [T, nv, dv] (after the conv, after the SiLU).
 4. beta = sigmoid(b) [T, nv];   g = -exp(A_log) * softplus(a + dt_bias) [T, nv]   (f32; A_log and
    dt_bias are [nv]; torch softplus: x if x > 20 else log1p(exp(x))). exp(g) in (0, 1] is the decay.
 5. Gated delta rule (M.torch_chunk_gated_delta_rule for prefill / M.torch_recurrent_gated_delta_rule
    for single-token decode, both called with use_qk_l2norm_in_kernel=True), state S in f32:
      - key heads onto value heads by repeat_interleave (NOT tile): value head h reads q/k head
        h // r (r = nv // nk consecutive value heads share one key head).
      - q = l2norm(q), k = l2norm(k) over dk, with l2norm(x) = x * rsqrt(sum(x^2) + 1e-6)
        (eps 1e-6 fixed, inside the sqrt; M.l2norm); then q = q / sqrt(dk).
      - state S_h is [dk, dv] per value head: layout [nv, dk, dv], S[h, i, j] with i over the key dim,
        j over the value dim (the recurrent state tensor is [batch, nv, dk, dv]).
      - recurrent step for token t, each value head h (the order matters: decay first, then read):
            S      = S * exp(g_t)
            kv_mem = k_t^T S                  [dv]   (sum over i of S[i, :] * k_t[i])
            delta  = (v_t - kv_mem) * beta_t  [dv]
            S      = S + outer(k_t, delta)    [dk, dv]
            o_t    = q_t^T S                  [dv]   (read AFTER the update)
        Initial S = 0 for a fresh sequence.
      - chunked form (prefill, chunk C = 64): identical result (see `gdn_chunked`); the sequence is
        zero-padded to a multiple of C (padded steps have k = v = q = 0, beta = 0, g = 0, so they
        leave S unchanged). Per chunk, with G = inclusive cumsum of g inside the chunk,
        D[i, j] = exp(G_i - G_j) for j <= i else 0, kb = k * beta, vb = v * beta:
            A     = strictly_lower((kb @ k^T) * D)           (diagonal not used)
            U     = (I + A)^-1 vb,   W = (I + A)^-1 (kb * exp(G))   (unit-lower-triangular solves:
                                                                    forward substitution)
            v_new = U - W @ S
            o     = (q * exp(G)) @ S + ((q @ k^T) * D) @ v_new  (D includes the diagonal here)
            S     = S * exp(G_last) + (k * exp(G_last - G))^T @ v_new
 6. Gated RMSNorm per (token, value head) over dv (M.Qwen3_5RMSNormGated.forward; norm weight [dv]
    shared by all heads, a plain weight, NOT 1 + w):
        o = o * rsqrt(mean(o^2) + eps) * norm.weight * silu(z)      (norm before gate)
 7. out = o.reshape(T, nv*dv) @ out_proj.weight^T.

Full-attention mixer (M.Qwen3_5Attention.forward), nq = num_attention_heads, nkv = num_key_value_heads,
hd = head_dim, rd = int(hd * partial_rotary_factor) rotary dims (tiny 16 of 64; 0.8B 64 of 256):
 1. qg = x @ q_proj.weight^T [T, nq*2*hd] viewed [T, nq, 2*hd]: per head the FIRST hd are the query,
    the SECOND hd the output gate (per-head interleave of q and gate rows in q_proj.weight:
    rows [h*2hd, h*2hd+hd) = q of head h, rows [h*2hd+hd, (h+1)*2hd) = gate of head h).
 2. q = rmsnorm1p(q, q_norm.weight) over hd; k = rmsnorm1p(x @ k_proj^T viewed [T, nkv, hd],
    k_norm.weight); v = x @ v_proj^T [T, nkv, hd].
 3. Partial RoPE (M.apply_rotary_pos_emb, NeoX rotate_half over the first rd dims only, dims rd..hd
    pass through): inv_freq[i] = 1 / theta^(2i / rd), i < rd/2; angle = pos * inv_freq; cos/sin are
    cat(angle, angle) [rd]; x_rot = x[:rd] * cos + rotate_half(x[:rd]) * sin, rotate_half(u) =
    cat(-u[rd/2:], u[:rd/2]). Text-only: the 3 mRoPE position rows are identical, so mrope_section
    changes nothing and pos = 0..T-1 (plus the cache length in decode).
 4. Causal softmax attention, scale hd^-0.5, GQA: q head h reads kv head h // (nq // nkv).
 5. out = (attn [T, nq*hd]) * sigmoid(gate [T, nq*hd]); then @ o_proj.weight^T.
=====================================================================================================
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

CHUNK = 64
L2NORM_EPS = 1e-6


# --------------------------------------------------------------------------------------------------
# elementwise
# --------------------------------------------------------------------------------------------------
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def softplus(x):
    """torch.nn.functional.softplus (beta 1, threshold 20)."""
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


# --------------------------------------------------------------------------------------------------
# norms
# --------------------------------------------------------------------------------------------------
def rmsnorm1p(x, w, eps):
    """M.Qwen3_5RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w), over the last dim."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (1.0 + w)


def rmsnorm_gated(x, z, w, eps):
    """M.Qwen3_5RMSNormGated: rmsnorm(x) * w * silu(z), over the last dim (norm before gate)."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w * silu(z)


def l2norm(x, eps=L2NORM_EPS):
    """M.l2norm: x * rsqrt(sum(x^2) + eps), over the last dim."""
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


# --------------------------------------------------------------------------------------------------
# causal depthwise conv1d (+ SiLU)
# --------------------------------------------------------------------------------------------------
def causal_conv1d(x, w, state=None):
    """x [T, C] (token-major), w [C, K]; state [K-1, C] (the previous K-1 inputs, oldest first) or None
    (zeros). Returns (silu(conv) [T, C], new state [K-1, C] = the last K-1 rows of cat(state, x))."""
    T, C = x.shape
    K = w.shape[1]
    if state is None:
        state = np.zeros((K - 1, C), dtype=x.dtype)
    xp = np.concatenate([state, x], axis=0)  # [K-1+T, C]
    y = np.zeros((T, C), dtype=x.dtype)
    for j in range(K):
        y += xp[j:j + T] * w[:, j]
    return silu(y), xp[T:].copy()


def causal_conv1d_step(x_t, w, state):
    """One decode token: x_t [C], state [K-1, C] -> (silu(conv) [C], rolled state [K-1, C])."""
    xp = np.concatenate([state, x_t[None]], axis=0)  # [K, C]
    y = np.sum(xp * w.T, axis=0)
    return silu(y), xp[1:].copy()


# --------------------------------------------------------------------------------------------------
# gated delta rule
# --------------------------------------------------------------------------------------------------
def _prep(q, k, v, g, beta):
    """l2norm q/k, scale q, repeat_interleave key heads onto value heads; head-major for the kernels.
    q, k [T, nk, dk]; v [T, nv, dv]; g, beta [T, nv] -> q, k [nv, T, dk], v [nv, T, dv], g, beta [nv, T]."""
    nk, nv = k.shape[1], v.shape[1]
    dk = k.shape[2]
    q = l2norm(q)
    k = l2norm(k)
    q = q / np.sqrt(np.asarray(dk, dtype=q.dtype))
    if nk != nv:
        q = np.repeat(q, nv // nk, axis=1)  # == torch.repeat_interleave: heads 0,0,1,1,...
        k = np.repeat(k, nv // nk, axis=1)
    return (q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2), g.T, beta.T)


def gdn_recurrent_step(q_t, k_t, v_t, g_t, beta_t, S):
    """One token, already prepared (l2-normed, q scaled, heads expanded): q_t, k_t [nv, dk], v_t [nv, dv],
    g_t, beta_t [nv], S [nv, dk, dv]. Returns (o_t [nv, dv], new S)."""
    S = S * np.exp(g_t)[:, None, None]
    kv_mem = np.einsum("hij,hi->hj", S, k_t)
    delta = (v_t - kv_mem) * beta_t[:, None]
    S = S + k_t[:, :, None] * delta[:, None, :]
    o_t = np.einsum("hij,hi->hj", S, q_t)
    return o_t, S


def gdn_recurrent(q, k, v, g, beta, state=None):
    """M.torch_recurrent_gated_delta_rule(use_qk_l2norm_in_kernel=True) for one sequence.
    q, k [T, nk, dk]; v [T, nv, dv]; g, beta [T, nv]; state [nv, dk, dv] or None.
    Returns (o [T, nv, dv], final state [nv, dk, dv])."""
    q, k, v, g, beta = _prep(q, k, v, g, beta)
    nv, T, dk = k.shape
    dv = v.shape[2]
    S = np.zeros((nv, dk, dv), dtype=v.dtype) if state is None else state.astype(v.dtype)
    o = np.zeros((nv, T, dv), dtype=v.dtype)
    for t in range(T):
        o[:, t], S = gdn_recurrent_step(q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], S)
    return o.transpose(1, 0, 2), S


def solve_unit_lower(A, B):
    """X with (I + strictly_lower(A)) X = B, by forward substitution. A [..., C, C], B [..., C, n]."""
    X = np.zeros_like(B)
    C = A.shape[-1]
    for i in range(C):
        X[..., i, :] = B[..., i, :] - np.einsum("...j,...jn->...n", A[..., i, :i], X[..., :i, :])
    return X


def gdn_chunked(q, k, v, g, beta, state=None, chunk=CHUNK):
    """M.torch_chunk_gated_delta_rule(use_qk_l2norm_in_kernel=True) for one sequence; same arguments
    and results as gdn_recurrent."""
    q, k, v, g, beta = _prep(q, k, v, g, beta)
    nv, T, dk = k.shape
    dv = v.shape[2]
    dt = v.dtype
    pad = (chunk - T % chunk) % chunk
    if pad:
        q, k, v = (np.concatenate([x, np.zeros((nv, pad, x.shape[2]), dt)], axis=1) for x in (q, k, v))
        g, beta = (np.concatenate([x, np.zeros((nv, pad), dt)], axis=1) for x in (g, beta))
    n = (T + pad) // chunk
    q, k, v = (x.reshape(nv, n, chunk, -1) for x in (q, k, v))
    g, beta = g.reshape(nv, n, chunk), beta.reshape(nv, n, chunk)

    kb = k * beta[..., None]
    vb = v * beta[..., None]
    G = np.cumsum(g, axis=-1)  # inclusive
    diff = G[..., :, None] - G[..., None, :]  # [nv, n, C, C]: G_i - G_j
    lower = np.tril(np.ones((chunk, chunk), dtype=bool))  # j <= i
    D = np.exp(np.where(lower, diff, -np.inf)).astype(dt)
    A = np.einsum("hnid,hnjd->hnij", kb, k) * D  # only its strictly-lower part is used
    U = solve_unit_lower(A, vb)
    W = solve_unit_lower(A, kb * np.exp(G)[..., None])
    QK = np.einsum("hnid,hnjd->hnij", q, k) * D  # includes the diagonal
    qd = q * np.exp(G)[..., None]
    kd = k * np.exp(G[..., -1:] - G)[..., None]
    glast = np.exp(G[..., -1])  # [nv, n]

    S = np.zeros((nv, dk, dv), dtype=dt) if state is None else state.astype(dt)
    o = np.zeros((nv, n, chunk, dv), dtype=dt)
    for c in range(n):
        v_new = U[:, c] - W[:, c] @ S
        o[:, c] = qd[:, c] @ S + QK[:, c] @ v_new
        S = S * glast[:, c, None, None] + kd[:, c].transpose(0, 2, 1) @ v_new
    o = o.reshape(nv, n * chunk, dv)[:, :T]
    return o.transpose(1, 0, 2), S


# --------------------------------------------------------------------------------------------------
# layers and the whole model (weights: dict name -> float array, as read by load_safetensors)
# --------------------------------------------------------------------------------------------------
class GdnCache:
    """Per linear layer: conv state [K-1, conv_dim] and recurrent state [nv, dk, dv]."""

    def __init__(self):
        self.conv = None
        self.S = None


def gdn_layer(W, p, cfg, x, cache=None, chunked=True):
    """M.Qwen3_5GatedDeltaNet.forward. x [T, H] (already input_layernorm'd); p = 'model.layers.i.linear_attn.'.
    cache (GdnCache) carries conv/recurrent state between calls; T == 1 with a warm cache uses the
    single-step forms, else the whole-sequence forms (chunked, or recurrent if chunked=False)."""
    nk, nv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    eps = cfg["rms_norm_eps"]
    T = x.shape[0]
    qkv = x @ W[p + "in_proj_qkv.weight"].T
    z = (x @ W[p + "in_proj_z.weight"].T).reshape(T, nv, dv)
    b = x @ W[p + "in_proj_b.weight"].T
    a = x @ W[p + "in_proj_a.weight"].T
    wconv = W[p + "conv1d.weight"][:, 0, :]  # [conv_dim, K]
    warm = cache is not None and cache.S is not None
    if warm and T == 1:
        y, new_conv = causal_conv1d_step(qkv[0], wconv, cache.conv)
        y = y[None]
    else:
        y, new_conv = causal_conv1d(qkv, wconv, cache.conv if warm else None)
    q = y[:, : nk * dk].reshape(T, nk, dk)
    k = y[:, nk * dk: 2 * nk * dk].reshape(T, nk, dk)
    v = y[:, 2 * nk * dk:].reshape(T, nv, dv)
    beta = sigmoid(b)
    g = -np.exp(W[p + "A_log"]) * softplus(a + W[p + "dt_bias"])
    S0 = cache.S if warm else None
    if warm and T == 1:
        qp, kp, vp, gp, bp = _prep(q, k, v, g, beta)
        o, S = gdn_recurrent_step(qp[:, 0], kp[:, 0], vp[:, 0], gp[:, 0], bp[:, 0], S0)
        o = o[None]
    elif chunked:
        o, S = gdn_chunked(q, k, v, g, beta, S0)
    else:
        o, S = gdn_recurrent(q, k, v, g, beta, S0)
    if cache is not None:
        cache.conv, cache.S = new_conv, S
    o = rmsnorm_gated(o, z, W[p + "norm.weight"], eps)
    return o.reshape(T, nv * dv) @ W[p + "out_proj.weight"].T


def rope_cos_sin(cfg, positions, dtype):
    hd = cfg["head_dim"]
    rp = cfg["rope_parameters"]
    rd = int(hd * rp.get("partial_rotary_factor", 1.0))
    inv = 1.0 / (np.float32(rp["rope_theta"]) ** (np.arange(0, rd, 2, dtype=np.float32) / np.float32(rd)))
    ang = positions.astype(np.float32)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=-1)
    return np.cos(ang).astype(dtype), np.sin(ang).astype(dtype), rd


def apply_partial_rope(x, cos, sin, rd):
    """x [T, heads, hd]; NeoX rotate_half on the first rd dims, the rest passes through."""
    xr, xp = x[..., :rd], x[..., rd:]
    half = rd // 2
    rot = np.concatenate([-xr[..., half:], xr[..., :half]], axis=-1)
    xr = xr * cos[:, None, :] + rot * sin[:, None, :]
    return np.concatenate([xr, xp], axis=-1)


class KvCache:
    def __init__(self):
        self.k = None  # [T, nkv, hd] (after k_norm and RoPE)
        self.v = None


def attention_layer(W, p, cfg, x, pos0=0, cache=None):
    """M.Qwen3_5Attention.forward (eager). x [T, H] normed; p = 'model.layers.i.self_attn.'."""
    nq, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    T = x.shape[0]
    qg = (x @ W[p + "q_proj.weight"].T).reshape(T, nq, 2 * hd)
    q, gate = qg[..., :hd], qg[..., hd:].reshape(T, nq * hd)
    q = rmsnorm1p(q, W[p + "q_norm.weight"], eps)
    k = rmsnorm1p((x @ W[p + "k_proj.weight"].T).reshape(T, nkv, hd), W[p + "k_norm.weight"], eps)
    v = (x @ W[p + "v_proj.weight"].T).reshape(T, nkv, hd)
    cos, sin, rd = rope_cos_sin(cfg, np.arange(pos0, pos0 + T), x.dtype)
    q = apply_partial_rope(q, cos, sin, rd)
    k = apply_partial_rope(k, cos, sin, rd)
    if cache is not None:
        if cache.k is not None:
            k = np.concatenate([cache.k, k], axis=0)
            v = np.concatenate([cache.v, v], axis=0)
        cache.k, cache.v = k, v
    S = k.shape[0]
    rep = nq // nkv
    kh = np.repeat(k, rep, axis=1)  # q head h reads kv head h // rep
    vh = np.repeat(v, rep, axis=1)
    scores = np.einsum("thd,shd->hts", q, kh) * np.asarray(hd ** -0.5, dtype=x.dtype)
    qpos = np.arange(S - T, S)[:, None]
    mask = np.arange(S)[None, :] <= qpos  # causal
    scores = np.where(mask[None], scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    pr = np.exp(scores)
    pr = pr / pr.sum(axis=-1, keepdims=True)
    o = np.einsum("hts,shd->thd", pr, vh).reshape(T, nq * hd)
    o = o * sigmoid(gate)
    return o @ W[p + "o_proj.weight"].T


def mlp(W, p, x):
    return (silu(x @ W[p + "gate_proj.weight"].T) * (x @ W[p + "up_proj.weight"].T)) @ W[p + "down_proj.weight"].T


def model_forward(W, cfg, ids, caches=None, pos0=0, chunked=True):
    """Whole Qwen3_5ForCausalLM text forward. Returns (logits [T, V], hidden [n_layers+1, T, H])."""
    eps = cfg["rms_norm_eps"]
    h = W["model.embed_tokens.weight"][np.asarray(ids)]
    hidden = [h]
    for i, kind in enumerate(cfg["layer_types"]):
        p = f"model.layers.{i}."
        xn = rmsnorm1p(h, W[p + "input_layernorm.weight"], eps)
        c = None if caches is None else caches[i]
        if kind == "linear_attention":
            h = h + gdn_layer(W, p + "linear_attn.", cfg, xn, c, chunked=chunked)
        else:
            h = h + attention_layer(W, p + "self_attn.", cfg, xn, pos0, c)
        h = h + mlp(W, p + "mlp.", rmsnorm1p(h, W[p + "post_attention_layernorm.weight"], eps))
        hidden.append(h)
    h = rmsnorm1p(h, W["model.norm.weight"], eps)
    lm = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    return h @ lm.T, np.stack(hidden)


def new_caches(cfg):
    return [GdnCache() if t == "linear_attention" else KvCache() for t in cfg["layer_types"]]


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


# --------------------------------------------------------------------------------------------------
# safetensors (numpy only: bf16 is widened by a 16-bit shift, as the Rust loader does)
# --------------------------------------------------------------------------------------------------
def load_safetensors(path, dtype=np.float32):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = data[base + a: base + b]
        shape = info["shape"]
        if info["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = u.view(np.float32).reshape(shape).astype(dtype)
        elif info["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype="<f4").reshape(shape).astype(dtype)
        elif info["dtype"] == "I32":
            arr = np.frombuffer(raw, dtype="<i4").reshape(shape).copy()
        else:
            raise ValueError(f"{name}: dtype {info['dtype']}")
        out[name] = arr
    return out


# --------------------------------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------------------------------
LENGTHS = [1, 63, 64, 65, 150]


def random_gdn_inputs(rng, T, nk, nv, dk, dv, dtype):
    q = rng.standard_normal((T, nk, dk)).astype(dtype)
    k = rng.standard_normal((T, nk, dk)).astype(dtype)
    v = rng.standard_normal((T, nv, dv)).astype(dtype)
    a = rng.standard_normal((T, nv))
    A = rng.uniform(1.0, 16.0, nv)
    dt_bias = np.log(np.expm1(np.exp(rng.uniform(np.log(0.01), np.log(0.1), nv))))
    g = (-A * softplus(a + dt_bias)).astype(dtype)
    beta = sigmoid(rng.standard_normal((T, nv))).astype(dtype)
    return q, k, v, g, beta


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(1e-30, float(np.max(np.abs(b)))))


def check_numpy(verbose=True):
    rng = np.random.default_rng(0)
    worst = {}
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-5)):
        # (nk, nv, dk, dv): the tiny model's GDN shape, and one with dk != dv and r = 3 (a transposed
        # state does not even run there)
        for shape in ((2, 4, 32, 32), (2, 6, 16, 24)):
            for T in LENGTHS:
                q, k, v, g, beta = random_gdn_inputs(rng, T, *shape, dtype)
                o_r, S_r = gdn_recurrent(q, k, v, g, beta)
                o_c, S_c = gdn_chunked(q, k, v, g, beta)
                e = max(np.max(np.abs(o_r - o_c)), np.max(np.abs(S_r - S_c)))
                # continuing from a state (prefill then decode): chunked over the first half, then
                # recurrent over the rest starting from the chunked final state
                cut = max(1, T // 2)
                o1, S1 = gdn_chunked(q[:cut], k[:cut], v[:cut], g[:cut], beta[:cut])
                o2, S2 = gdn_recurrent(q[cut:], k[cut:], v[cut:], g[cut:], beta[cut:], S1)
                e2 = max(np.max(np.abs(np.concatenate([o1, o2]) - o_r)), np.max(np.abs(S2 - S_r)))
                key = (np.dtype(dtype).name, shape)
                worst[key] = max(worst.get(key, 0.0), float(e), float(e2))
                if verbose:
                    print(f"  delta rule {np.dtype(dtype).name} (nk,nv,dk,dv)={shape} T={T:3d}: "
                          f"chunked vs recurrent max|diff| {e:.2e}; split chunked+recurrent {e2:.2e}")
                assert e < tol and e2 < tol, (dtype, shape, T, e, e2)
    # conv: the whole sequence == token by token through the rolled state, with and without a prior state
    for T in (1, 3, 4, 5, 70):
        C, K = 24, 4
        x = rng.standard_normal((T, C)).astype(np.float32)
        w = rng.standard_normal((C, K)).astype(np.float32)
        s0 = rng.standard_normal((K - 1, C)).astype(np.float32)
        for init in (None, s0):
            y, s = causal_conv1d(x, w, init)
            st = np.zeros((K - 1, C), np.float32) if init is None else init
            ys = []
            for t in range(T):
                yt, st = causal_conv1d_step(x[t], w, st)
                ys.append(yt)
            assert np.max(np.abs(np.stack(ys) - y)) < 1e-6 and np.array_equal(st, s), T
    if verbose:
        print("  conv1d: whole-sequence == token-by-token (T 1, 3, 4, 5, 70; zero and given state)")
    return worst


def check_transformers(model_dir, golden_dir, verbose=True):
    """Against transformers' own functions, and a whole numpy forward of the tiny model vs its goldens."""
    import torch

    torch.set_num_threads(1)
    import transformers.models.qwen3_5.modeling_qwen3_5 as M

    rng = np.random.default_rng(1)
    t = lambda x: torch.from_numpy(np.ascontiguousarray(x))[None]  # noqa: E731  add batch dim
    # delta rule, both forms, vs M. (f32), on the tiny shape and on nk 2 / nv 6 / dk 16 / dv 24
    for shape in ((2, 4, 32, 32), (2, 6, 16, 24)):
        for T in LENGTHS:
            q, k, v, g, beta = random_gdn_inputs(rng, T, *shape, np.float32)
            for name, ours in (("torch_chunk_gated_delta_rule", gdn_chunked),
                               ("torch_recurrent_gated_delta_rule", gdn_recurrent)):
                o_t, S_t = getattr(M, name)(t(q), t(k), t(v), g=t(g), beta=t(beta), output_final_state=True,
                                            use_qk_l2norm_in_kernel=True)
                o, S = ours(q, k, v, g, beta)
                e = max(np.max(np.abs(o_t[0].numpy() - o)), np.max(np.abs(S_t[0].numpy() - S)))
                if verbose:
                    print(f"  M.{name} (nk,nv,dk,dv)={shape} T={T:3d}: max|diff| {e:.2e}")
                assert e < 1e-5, (name, shape, T, e)
    # teeth: tiling key heads onto value heads (h % nk) instead of repeat_interleave (h // r) is wrong
    q, k, v, g, beta = random_gdn_inputs(rng, 20, 2, 4, 32, 32, np.float32)
    o_t, _ = M.torch_recurrent_gated_delta_rule(t(q), t(k), t(v), g=t(g), beta=t(beta), use_qk_l2norm_in_kernel=True)
    o_tile, _ = gdn_recurrent(np.tile(q, (1, 2, 1)), np.tile(k, (1, 2, 1)), v, g, beta)
    e_tile = float(np.max(np.abs(o_t[0].numpy() - o_tile)))
    assert e_tile > 1e-2, e_tile
    if verbose:
        print(f"  teeth: key heads tiled instead of repeat_interleave'd differs from M. by {e_tile:.2e}")
    # conv vs M.causal_conv1d_fn / M.causal_conv1d_update (transformers keeps K state columns)
    C, K, T = 24, 4, 9
    x = rng.standard_normal((T, C)).astype(np.float32)
    w = rng.standard_normal((C, K)).astype(np.float32)
    y_t = M.causal_conv1d_fn(torch.from_numpy(x.T.copy())[None], torch.from_numpy(w), None, activation="silu")
    y, s = causal_conv1d(x, w)
    assert np.max(np.abs(y_t[0].numpy().T - y)) < 1e-6
    state_t = torch.from_numpy(np.concatenate([np.zeros((C, 1), np.float32), s.T], axis=1))[None].contiguous()
    xt = rng.standard_normal((C,)).astype(np.float32)
    yt_t = M.causal_conv1d_update(torch.from_numpy(xt)[None, :, None], state_t, torch.from_numpy(w), None, "silu")
    yt, s2 = causal_conv1d_step(xt, w, s)
    assert np.max(np.abs(yt_t[0, :, 0].numpy() - yt)) < 1e-6 and np.array_equal(state_t[0, :, 1:].numpy(), s2.T)
    # gated norm
    gn = M.Qwen3_5RMSNormGated(32, eps=1e-6)
    with torch.no_grad():
        gn.weight.copy_(torch.from_numpy(rng.standard_normal(32).astype(np.float32)))
    xo = rng.standard_normal((5, 32)).astype(np.float32)
    zz = rng.standard_normal((5, 32)).astype(np.float32)
    e = np.max(np.abs(gn(torch.from_numpy(xo), torch.from_numpy(zz)).detach().numpy()
                      - rmsnorm_gated(xo, zz, gn.weight.detach().numpy(), 1e-6)))
    assert e < 1e-5, e
    if verbose:
        print("  M.causal_conv1d_fn / causal_conv1d_update / Qwen3_5RMSNormGated: match")

    # whole model vs the goldens
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    W = load_safetensors(os.path.join(model_dir, "model.safetensors"))
    tf = load_safetensors(os.path.join(golden_dir, "teacher_forced.safetensors"))
    gr = load_safetensors(os.path.join(golden_dir, "greedy.safetensors"))
    hid = load_safetensors(os.path.join(golden_dir, "hidden.safetensors"))["hidden"]
    with open(os.path.join(golden_dir, "manifest.json")) as f:
        man = json.load(f)
    worst_tf = 0.0
    for i in range(len(man["args"]["tf_lengths"])):
        ids = tf[f"seq_{i}"]
        logits, _ = model_forward(W, cfg, ids)
        lp = log_softmax(logits)
        top = tf[f"top_ids_{i}"]
        got = np.take_along_axis(lp, top, axis=-1)
        e = float(np.max(np.abs(got - tf[f"top_logprobs_{i}"])))
        worst_tf = max(worst_tf, e)
        if verbose:
            print(f"  numpy model vs golden teacher-forced seq_{i} (L={len(ids)}): max|logprob diff| {e:.2e}, "
                  f"top1 agrees at {np.mean(np.argmax(lp, -1) == top[:, 0]) * 100:.0f}% of positions")
    hp = gr[f"prompt_{man['args']['hidden_prompt']:02d}"]
    _, h = model_forward(W, cfg, hp)
    eh = float(np.max(np.abs(h - hid)))
    if verbose:
        print(f"  numpy model vs golden hidden states: max|diff| {eh:.2e}")
    # the hybrid cache: prefill (chunked) then decode token by token (recurrent step + conv step + KV)
    worst_dec, agree = 0.0, True
    n_prompts = man["args"]["n_prompts"]
    for pi in range(n_prompts):
        p = gr[f"prompt_{pi:02d}"]
        toks = gr["tokens"][pi]
        caches = new_caches(cfg)
        logits, _ = model_forward(W, cfg, p, caches)
        pos = len(p)
        for s in range(len(toks)):
            lp = log_softmax(logits[-1])
            top = gr["top_ids"][pi, s]
            worst_dec = max(worst_dec, float(np.max(np.abs(lp[top] - gr["top_logprobs"][pi, s]))))
            agree &= int(np.argmax(lp)) == int(toks[s]) or (lp[toks[s]] >= lp.max() - 1e-4)
            logits, _ = model_forward(W, cfg, toks[s:s + 1], caches, pos0=pos)
            pos += 1
    if verbose:
        print(f"  numpy hybrid-cache decode vs golden greedy ({n_prompts} prompts x {len(toks)} steps): "
              f"max|logprob diff| {worst_dec:.2e}, greedy tokens {'agree' if agree else 'DISAGREE'}")
    tol = man["tolerance"]
    assert worst_tf < tol["tf_logprob_max_abs"] and eh < tol["hidden_max_abs"] and worst_dec < tol["tf_logprob_max_abs"]
    assert agree
    return worst_tf, eh, worst_dec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transformers", action="store_true",
                    help="also check against transformers' functions and the qwen3_5-tiny goldens")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--golden", default=os.path.join(root, "goldens", "qwen3_5-tiny"))
    args = ap.parse_args()
    print("numpy self-checks (chunked == recurrent on lengths 1, 63, 64, 65, 150):")
    check_numpy()
    if args.transformers:
        print("against transformers and the goldens:")
        check_transformers(os.path.join(args.golden, "model"), args.golden)
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
