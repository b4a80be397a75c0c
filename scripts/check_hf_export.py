"""Checks a folder written by `poslab export CKPT --to hf` with the real readers: transformers' GPT2LMHeadModel gives
poslab's logits on the check file's token ids, and AutoTokenizer encodes the check text to poslab's ids.

Usage: python3 scripts/check_hf_export.py DIR [--atol 1e-4]
       (a Python with torch and transformers: bash scripts/libtorch.sh pip installs both into
        ~/.cache/poslab/torch-2.11.0; run it with that venv's python)
Prints one line per check; exits 1 when one fails, 2 when transformers cannot load the folder.
"""
import argparse
import json
import sys

import numpy as np
import torch
from safetensors import safe_open
from transformers import AutoTokenizer, GPT2LMHeadModel


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--atol", type=float, default=1e-4, help="largest |logit difference| accepted (float32)")
    args = ap.parse_args()
    with safe_open(f"{args.dir}/poslab_check.safetensors", framework="pt") as f:
        ids = f.get_tensor("input_ids")
        expected = f.get_tensor("logits")
        text = f.metadata()["text"]
    try:
        model = GPT2LMHeadModel.from_pretrained(args.dir, attn_implementation="eager").eval()
    except Exception as e:  # noqa: BLE001 - name what transformers said
        print(f"error: {args.dir}: transformers cannot load it: {e}", file=sys.stderr)
        return 2
    failed = 0
    with torch.no_grad():
        logits = model(ids).logits.float()
    diff = (logits - expected).abs().max().item()
    ok = diff <= args.atol
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} logits: {tuple(ids.shape)} tokens, max |transformers - poslab| = {diff:.2e} (atol {args.atol:g})")
    tied = model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    print(f"{'ok  ' if tied else 'FAIL'} head tied to wte: {tied}")
    failed += not tied
    # poslab encodes line by line and puts its newline piece between lines; transformers' sentencepiece tokenizer
    # encodes each line the same, and "\n" itself as the byte <0x0A> (docs/interop.md).
    tok = AutoTokenizer.from_pretrained(args.dir)
    newline = json.load(open(f"{args.dir}/tokenizer_config.json"))["poslab_newline_id"]
    got = []
    for i, line in enumerate(text.split("\n")):
        got += ([newline] if i else []) + tok(line, add_special_tokens=False)["input_ids"]
    got = got[: ids.shape[1]]
    want = ids[0].tolist()
    same = got == want
    failed += not same
    first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    print(f"{'ok  ' if same else 'FAIL'} tokenizer ({type(tok).__name__}): {len(want)} ids, line by line with poslab's "
          f"newline id {newline} between lines"
          + ("" if same else f"; first difference at {first}: {got[first:first + 5]} vs poslab {want[first:first + 5]}"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
