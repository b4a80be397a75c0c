#!/usr/bin/python3
"""The same GPT in PyTorch's Python API, as a user would write it (nanoGPT-style), to measure poslab against.

Usage: PYTHON scripts/torch_reference.py EXPORT_DIR [--compile]
EXPORT_DIR comes from `poslab bench CONFIG --export EXPORT_DIR`: bench.json (the hyperparameters, the step count
and poslab's own losses), init/NAME.npy (the initial weights, by GPT-2 parameter name) and batches.npy (the token
windows, one row of block_size + 1 ids per sequence). This script starts from the same weights, trains on the
same batches with the same optimizer, schedule, dtype, thread count and device (bench.json's "device": cpu or
cuda), and prints JSON: tokens/s, ms/step and the loss of every step. PYTHON is any Python with PyTorch: Debian's
/usr/bin/python3 (python3-torch, the LibTorch 1.13 poslab links), or the PyPI environment of scripts/libtorch.sh pip
(PyTorch 2.x), where attention is F.scaled_dot_product_attention as nanoGPT writes it. --compile (PyTorch 2.x):
the model through torch.compile (inductor) and AdamW's fused kernel; the compilation runs in the warm-up steps, and
"compile_s" reports their time.
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNorm(nn.Module):
    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"], bias=c["bias"])
        self.attn_dropout = nn.Dropout(c["dropout"])
        self.resid_dropout = nn.Dropout(c["dropout"])
        self.n_head = c["n_head"]
        T = c["block_size"]
        self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch >= 2.0, as nanoGPT uses it
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_dropout.p if self.training else 0.0,
                                               is_causal=True)
            return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"], bias=c["bias"])
        self.dropout = nn.Dropout(c["dropout"])

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = LayerNorm(c["n_embd"], c["bias"])
        self.attn = CausalSelfAttention(c)
        self.ln_2 = LayerNorm(c["n_embd"], c["bias"])
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["block_size"], c["n_embd"]) if c["position"] != "none" else None
        if c["position"] == "sinusoidal":
            self.wpe.weight.requires_grad_(False)
        self.drop = nn.Dropout(c["dropout"])
        self.h = nn.ModuleList([Block(c) for _ in range(c["n_layer"])])
        self.ln_f = LayerNorm(c["n_embd"], c["bias"])

    def forward(self, idx):
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe.weight[: idx.size(1)]
        x = self.drop(x)
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # tied head


def lr_at(step, c):
    if step < c["warmup_steps"]:
        return c["lr"] * (step + 1) / (c["warmup_steps"] + 1)
    if step >= c["max_steps"] or c["max_steps"] <= c["warmup_steps"]:
        return c["min_lr"]
    progress = (step - c["warmup_steps"]) / (c["max_steps"] - c["warmup_steps"])
    return c["min_lr"] + 0.5 * (1 + math.cos(math.pi * min(max(progress, 0.0), 1.0))) * (c["lr"] - c["min_lr"])


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    compiled = "--compile" in sys.argv[1:]
    if len(args) != 1 or any(a not in ("--compile",) for a in sys.argv[1:] if a.startswith("--")):
        sys.exit("usage: PYTHON scripts/torch_reference.py EXPORT_DIR [--compile]")
    if compiled and not hasattr(torch, "compile"):
        sys.exit(f"error: --compile needs PyTorch 2.x; this is {torch.__version__}\n"
                 "hint: run it with the Python of bash scripts/libtorch.sh pip")
    export = args[0]
    bench = json.load(open(os.path.join(export, "bench.json")))
    c = bench["config"]
    torch.set_num_threads(c["threads"])
    device = torch.device(bench.get("device", "cpu"))
    model = GPT(c)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(np.load(os.path.join(export, "init", name + ".npy"))).reshape(p.shape))
        if model.wpe is not None and not model.wpe.weight.requires_grad:
            model.wpe.weight.copy_(torch.from_numpy(np.load(os.path.join(export, "init", "wpe.weight.npy"))))
    model.to(device)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        is_decay = c["decay_position_table"] if name == "wpe.weight" else p.dim() >= 2
        (decay if is_decay else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": c["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=c["lr"], betas=(c["beta1"], c["beta2"]), eps=1e-8,
                            **({"fused": True} if compiled else {}))

    def loss_of(x, y):  # as nanoGPT's forward returns it; compiled whole (model and loss) with --compile
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
        return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1))

    loss_fn = torch.compile(loss_of) if compiled else loss_of
    windows = torch.from_numpy(np.load(os.path.join(export, "batches.npy"))).long()  # (steps * accum * B, T + 1)
    windows = windows.to(device)  # all of them up front: no copies inside the timed steps
    B, accum, T = c["batch_size"], c["grad_accum"], c["block_size"]
    bf16 = c["dtype"] == "bfloat16"
    model.train()
    losses, timed, warm = [], 0.0, 0.0
    steps, warmup = bench["warmup"] + bench["steps"], bench["warmup"]
    # Timed from the first step after warm-up to the end of the last, one wait for a GPU at each end (as poslab bench
    # times it): the steps queue back to back; the losses are read after.
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    t0 = time.perf_counter()
    for s in range(steps):
        if s == warmup:
            sync()
            warm = time.perf_counter() - t0
            t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(s, c)
        loss_sum = torch.zeros((), device=device)
        for m in range(accum):
            w = windows[(s * accum + m) * B:(s * accum + m + 1) * B]
            x, y = w[:, :T], w[:, 1:]
            loss = loss_fn(x, y) / accum
            loss.backward()
            loss_sum += loss.detach()
        if c["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c["grad_clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss_sum)
    sync()
    timed = time.perf_counter() - t0
    losses = [float(v) for v in losses]
    n = bench["steps"]
    print(json.dumps({"ms_per_step": 1000 * timed / n, "tokens_per_s": bench["tokens_per_step"] * n / timed,
                      "losses": losses, "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "device": str(device), "compiled": compiled, "compile_s": warm if compiled else 0.0}))


if __name__ == "__main__":
    main()
