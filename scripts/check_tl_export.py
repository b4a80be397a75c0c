"""Checks folders written by `poslab export CKPT --to hf` with TransformerLens: its TransformerBridge boots each
folder as it stands, gives poslab's logits on the check file's token ids, its W_pos is the exported table, its
to_tokens and to_string give poslab's ids and text for the check file's texts; in compatibility mode (HookedTransformer's numerics: LayerNorm folded,
weights centred) the log-probabilities stay poslab's and W_pos is the table with each row's mean removed.

Usage: python3 scripts/check_tl_export.py DIR [DIR ...] [--atol 1e-4]
       (a Python with torch, transformers and transformer-lens: bash scripts/libtorch.sh pip installs them into
        ~/.cache/poslab/torch-2.11.0; run it with that venv's python)
Prints one line per check; exits 1 when one fails, 2 when TransformerLens cannot boot a folder.
"""
import argparse
import json
import logging
import sys
import warnings

import torch
from safetensors import safe_open

from check_hf_export import check_texts

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
from transformer_lens.model_bridge import TransformerBridge  # noqa: E402 - after silencing its import-time warnings


def line(ok, text):
    print(f"{'ok  ' if ok else 'FAIL'} {text}")
    return 0 if ok else 1


def check(folder, atol):
    with safe_open(f"{folder}/poslab_check.safetensors", framework="pt") as f:
        ids = f.get_tensor("input_ids")
        expected = f.get_tensor("logits")
    with safe_open(f"{folder}/model.safetensors", framework="pt") as f:
        wpe = f.get_tensor("transformer.wpe.weight")
    try:
        bridge = TransformerBridge.boot_transformers(folder, device="cpu")
    except Exception as e:  # noqa: BLE001 - name what TransformerLens said
        print(f"error: {folder}: TransformerLens cannot boot it: {e}", file=sys.stderr)
        return None
    bridge.eval()
    failed = 0
    with torch.no_grad():
        logits = bridge(ids, return_type="logits").float()
    diff = (logits - expected).abs().max().item()
    failed += line(diff <= atol, f"TransformerBridge logits: {tuple(ids.shape)} tokens, max |TransformerLens - poslab| = "
                                 f"{diff:.2e} (atol {atol:g})")
    w_pos = bridge.W_pos.detach()
    failed += line(tuple(w_pos.shape) == tuple(wpe.shape) and torch.equal(w_pos, wpe),
                   f"W_pos {tuple(w_pos.shape)} is the exported table, bit for bit")
    # Its tokenizer calls on the check file's texts (new lines and all): poslab's ids and poslab's text.
    failed += check_texts(folder, lambda t: bridge.to_tokens(t, prepend_bos=False, truncate=False)[0].tolist(),
                          lambda ids_: bridge.to_string(torch.tensor(ids_)), "to_tokens / to_string")
    # HookedTransformer's numerics: LayerNorm folded into the next weights, writing weights and the unembedding
    # centred. Logits move by a constant per position (center_unembed): compare log-probabilities.
    bridge.enable_compatibility_mode()
    with torch.no_grad():
        logp = bridge(ids, return_type="logits").float().log_softmax(-1)
    diff = (logp - expected.log_softmax(-1)).abs().max().item()
    failed += line(diff <= atol, f"compatibility mode log-probabilities: max |TransformerLens - poslab| = {diff:.2e}")
    centred = wpe - wpe.mean(-1, keepdim=True)
    diff = (bridge.W_pos.detach() - centred).abs().max().item()
    failed += line(diff <= 1e-6, f"compatibility mode W_pos = the table less each row's mean: max |difference| = {diff:.2e}")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--atol", type=float, default=1e-4, help="largest |logit difference| accepted (float32)")
    args = ap.parse_args()
    failed = 0
    for folder in args.dirs:
        print(f"folder {folder}")
        result = check(folder, args.atol)
        if result is None:
            return 2
        failed += result
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
