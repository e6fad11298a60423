"""The PyTorch twin of remat's nn::Llama (nn/llama.{h,cpp}): torchtitan's models/llama3/model.py,
with the same module names (tok_embeddings, layers.<i>.attention.wq, ..., feed_forward.w1/w2/w3,
attention_norm, ffn_norm, norm, output), so a safetensors file moves between the two.

As torchtitan: rotary embeddings through complex numbers (view_as_complex on consecutive pairs,
times freqs_cis), computed in f32 and returned in the input's dtype -- except that an f64 model
computes them in f64 (complex128), where torchtitan would drop to f32; remat does the same.
The blocks take only x (the rotary table is set on them by the model), so that
torch.utils.checkpoint wraps a block as torchtitan's apply_ac does.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def ffn_hidden_dim(dim, multiple_of, ffn_dim_multiplier):
    hidden = int(2 * (4 * dim) / 3)
    if ffn_dim_multiplier:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def named_config(name, max_seq_len):
    """remat's LlamaConfig::debugmodel() / llama3_8b() (torchtitan's flavours), max_seq_len as given."""
    base = {"n_kv_heads": 0, "multiple_of": 256, "ffn_dim_multiplier": 0.0, "norm_eps": 1e-5,
            "rope_theta": 500000.0, "rope_scaling": True, "max_seq_len": max_seq_len}
    if name == "debugmodel":
        return dict(base, dim=256, n_layers=6, n_heads=16, vocab_size=2048)
    if name == "llama3_8b":
        return dict(base, dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, vocab_size=128256, multiple_of=1024,
                    ffn_dim_multiplier=1.3)
    raise ValueError(f"unknown configuration {name!r} (debugmodel or llama3_8b)")


def precompute_freqs_cis(dim, end, theta, scaling, dtype=torch.float32):
    """torchtitan's precompute_freqs_cis (with apply_scaling's Llama 3.1 defaults), in double, then complex64
    (complex128 for an f64 model)."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64)[: dim // 2] / dim))
    if scaling:
        factor, low, high, original = 8.0, 1.0, 4.0, 8192.0
        wavelen = 2 * math.pi / freqs
        new = torch.where(wavelen > original / low, freqs / factor, freqs)
        smooth = (original / wavelen - low) / (high - low)
        band = (wavelen >= original / high) & (wavelen <= original / low)
        freqs = torch.where(band, (1 - smooth) * new / factor + smooth * new, new)
    angles = torch.outer(torch.arange(end, dtype=torch.float64), freqs)
    cis = torch.polar(torch.ones_like(angles), angles)
    return cis.to(torch.complex128 if dtype == torch.float64 else torch.complex64)


def apply_rotary_emb(x, freqs_cis):
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    B, T, H, D = x.shape
    xc = torch.view_as_complex(x.to(compute).reshape(B, T, H, D // 2, 2))
    out = torch.view_as_real(xc * freqs_cis[:T].view(1, T, 1, D // 2)).flatten(3)
    return out.type_as(x)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return torch.unsqueeze(x, dim=3).expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(
        bs, slen, n_kv_heads * n_rep, head_dim)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads, self.n_kv_heads = c["n_heads"], c["n_kv_heads"] or c["n_heads"]
        self.n_rep = self.n_heads // self.n_kv_heads
        self.head_dim = c["dim"] // c["n_heads"]
        self.wq = nn.Linear(c["dim"], self.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(c["dim"], self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(c["dim"], self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(self.n_heads * self.head_dim, c["dim"], bias=False)

    def forward(self, x, freqs_cis):
        bs, seqlen, _ = x.shape
        xq = self.wq(x).view(bs, seqlen, -1, self.head_dim)
        xk = self.wk(x).view(bs, seqlen, -1, self.head_dim)
        xv = self.wv(x).view(bs, seqlen, -1, self.head_dim)
        xq, xk = apply_rotary_emb(xq, freqs_cis), apply_rotary_emb(xk, freqs_cis)
        keys, values = repeat_kv(xk, self.n_rep), repeat_kv(xv, self.n_rep)
        out = F.scaled_dot_product_attention(xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2),
                                             is_causal=True)
        return self.wo(out.transpose(1, 2).contiguous().view(bs, seqlen, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        hidden = c.get("ffn_hidden") or ffn_hidden_dim(c["dim"], c["multiple_of"], c["ffn_dim_multiplier"])
        self.feed_forward = FeedForward(c["dim"], hidden)  # remat's LlamaConfig::ffn_hidden: as given
        self.attention_norm = nn.RMSNorm(c["dim"], eps=c["norm_eps"])
        self.ffn_norm = nn.RMSNorm(c["dim"], eps=c["norm_eps"])
        self.freqs_cis = None  # set by Llama.forward

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x), self.freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    """c: a dict of LlamaConfig's fields (dim, n_layers, n_heads, n_kv_heads, vocab_size, multiple_of,
    ffn_dim_multiplier, norm_eps, rope_theta, rope_scaling, max_seq_len)."""

    def __init__(self, c, dtype=torch.float32):
        super().__init__()
        self.c = c
        self.tok_embeddings = nn.Embedding(c["vocab_size"], c["dim"])
        self.layers = nn.ModuleDict({str(i): TransformerBlock(c) for i in range(c["n_layers"])})
        self.norm = nn.RMSNorm(c["dim"], eps=c["norm_eps"])
        self.output = nn.Linear(c["dim"], c["vocab_size"], bias=False)
        self.register_buffer("freqs_cis", precompute_freqs_cis(c["dim"] // c["n_heads"], c["max_seq_len"],
                                                               c["rope_theta"], c["rope_scaling"], dtype),
                             persistent=False)
        self.strategy = None
        self.init_weights()

    def cast(self, dtype):
        """The parameters in dtype (Module.to would also cast the complex rotary table to a real dtype)."""
        for p in self.parameters():
            p.data = p.data.to(dtype)
        return self

    def init_weights(self):
        # torchtitan's init_weights (depth_init), as remat's Llama::init_weights draws it.
        with torch.no_grad():
            nn.init.normal_(self.tok_embeddings.weight)
            for i, b in enumerate(self.layers.values()):
                std = 0.02 / (2 * (i + 1)) ** 0.5
                for lin in (b.attention.wq, b.attention.wk, b.attention.wv, b.feed_forward.w1):
                    nn.init.normal_(lin.weight, 0.0, 0.02)
                for lin in (b.attention.wo, b.feed_forward.w2, b.feed_forward.w3):
                    nn.init.normal_(lin.weight, 0.0, std)
            nn.init.normal_(self.output.weight, 0.0, self.c["dim"] ** -0.5)

    def forward(self, idx, targets):
        B, T = idx.shape
        h = self.tok_embeddings(idx)
        for i, block in enumerate(self.layers.values()):
            # on the block itself: remat_plan.apply_plan (torchtitan's checkpoint_wrapper) may have wrapped it
            getattr(block, "_checkpoint_wrapped_module", block).freqs_cis = self.freqs_cis
            h = self.strategy(i, block, h) if self.strategy else block(h)
        logits = self.output(self.norm(h))
        return F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))
