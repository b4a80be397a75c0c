#!/usr/bin/python3
"""Writes tests/fixtures/gpt_reference.safetensors: a tiny GPT computed by PyTorch, for the C++ Reference tests.

Usage: /usr/bin/python3 scripts/make_reference_fixture.py [OUT]   (needs Debian's python3-torch, python3-numpy)

The model is scripts/torch_reference.py's GPT (nanoGPT's, written in PyTorch's Python API). Like llm.c's
test_gpt2, the fixture holds the initial weights, one batch, and what PyTorch computes from them:

  param.NAME            initial weights, by GPT-2 name (wte.weight, h.0.attn.c_attn.weight, ...)
  tokens                (B, T + 1) int64 token windows: x = tokens[:, :T], y = tokens[:, 1:]
  DTYPE.logits          (B, T, V) logits of x (float32; under bf16 autocast they are bf16 values)
  DTYPE.loss            (1,) mean cross-entropy of the logits against y
  DTYPE.grad.NAME       gradient of that loss for every parameter
  DTYPE.losses          (STEPS,) loss of each of STEPS AdamW updates on the same batch (clip, lr schedule)
  DTYPE.grad_norms      (STEPS,) global gradient norm before clipping, per update
  DTYPE.final.wpe.weight  the position table after the STEPS updates

DTYPE is fp32 (plain float32) or bf16 (the forward pass under torch.autocast("cpu", torch.bfloat16)).
The header's __metadata__ holds the config, the training settings and this command.
"""
import json
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import GPT, lr_at  # noqa: E402

CONFIG = {"n_layer": 2, "n_head": 4, "n_embd": 32, "block_size": 16, "vocab_size": 64, "bias": True,
          "dropout": 0.0, "position": "learned"}
TRAIN = {"batch_size": 4, "steps": 10, "lr": 1e-2, "min_lr": 1e-3, "warmup_steps": 2, "max_steps": 10,
         "weight_decay": 0.1, "beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "grad_clip": 1.0,
         "decay_position_table": True}
SEED = 20261201


def init_weights(model):
    """nanoGPT's init: N(0, 0.02) weights, c_proj weights N(0, 0.02 / sqrt(2 n_layer)), zero biases, unit norms."""
    proj_std = 0.02 / (2 * CONFIG["n_layer"]) ** 0.5
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif "ln_" in name:
                p.fill_(1.0)
            elif name.endswith("c_proj.weight"):
                p.normal_(0.0, proj_std)
            else:
                p.normal_(0.0, 0.02)


def fresh_model(init):
    model = GPT(CONFIG)
    model.load_state_dict(init)
    model.train()
    return model


def forward_loss(model, x, y, bf16):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = model(x)
    loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1))
    return logits, loss


def one_pass(init, x, y, bf16, prefix, out):
    """Logits, loss and every gradient of one forward + backward."""
    model = fresh_model(init)
    logits, loss = forward_loss(model, x, y, bf16)
    loss.backward()
    out[prefix + "logits"] = logits.detach().float()
    out[prefix + "loss"] = loss.detach().reshape(1)
    for name, p in model.named_parameters():
        out[prefix + "grad." + name] = p.grad.detach().clone()


def training(init, x, y, bf16, prefix, out):
    """TRAIN["steps"] AdamW updates on the same batch, as poslab's train_step does them."""
    model = fresh_model(init)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        is_decay = TRAIN["decay_position_table"] if name == "wpe.weight" else p.dim() >= 2
        (decay if is_decay else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": TRAIN["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=TRAIN["lr"], betas=(TRAIN["beta1"], TRAIN["beta2"]), eps=TRAIN["eps"])
    losses, norms = [], []
    for step in range(TRAIN["steps"]):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, TRAIN)
        _, loss = forward_loss(model, x, y, bf16)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), TRAIN["grad_clip"])))
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    out[prefix + "losses"] = torch.tensor(losses, dtype=torch.float32)
    out[prefix + "grad_norms"] = torch.tensor(norms, dtype=torch.float32)
    out[prefix + "final.wpe.weight"] = model.wpe.weight.detach().clone()


def write_safetensors(path, tensors, metadata):
    dtypes = {torch.float32: "F32", torch.int64: "I64"}
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        data = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtypes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "tests", "fixtures", "gpt_reference.safetensors")
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    model = GPT(CONFIG)
    init_weights(model)
    init = {k: v.clone() for k, v in model.state_dict().items()}
    B, T, V = TRAIN["batch_size"], CONFIG["block_size"], CONFIG["vocab_size"]
    tokens = torch.randint(0, V, (B, T + 1), dtype=torch.int64)
    x, y = tokens[:, :T], tokens[:, 1:]

    out = {"tokens": tokens}
    for name, p in model.named_parameters():
        out["param." + name] = p.detach().clone()
    for prefix, bf16 in (("fp32.", False), ("bf16.", True)):
        one_pass(init, x, y, bf16, prefix, out)
        training(init, x, y, bf16, prefix, out)
    metadata = {"command": "/usr/bin/python3 scripts/make_reference_fixture.py",
                "model": json.dumps(CONFIG), "train": json.dumps(TRAIN), "seed": str(SEED),
                "torch": torch.__version__, "numpy": np.__version__}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_safetensors(path, out, metadata)
    print(f"wrote {path}: {len(out)} tensors, {os.path.getsize(path)} bytes; "
          f"fp32 loss {out['fp32.loss'].item():.6f}, bf16 loss {out['bf16.loss'].item():.6f}, "
          f"fp32 losses {out['fp32.losses'][0].item():.4f} -> {out['fp32.losses'][-1].item():.4f}, "
          f"grad norms {out['fp32.grad_norms'][0].item():.3f} .. {out['fp32.grad_norms'][-1].item():.3f}")


if __name__ == "__main__":
    main()
