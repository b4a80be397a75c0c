"""Checks a folder written by `poslab export CKPT --to hf` with the real readers: transformers' GPT2LMHeadModel gives
poslab's logits on the check file's token ids; AutoTokenizer encodes each of the check file's texts (new lines, empty
lines, tabs, runs of spaces, characters outside the corpus) to poslab's ids and decodes poslab's ids to poslab's text;
greedy generation decoded by the tokenizer equals `poslab sample --top-k 1` (given its output); huggingface_hub reads
the model card's metadata.

Usage: python3 scripts/check_hf_export.py DIR [--atol 1e-4] [--prompt TEXT --sample FILE --tokens N]
       (a Python with torch and transformers: bash scripts/libtorch.sh pip installs both into
        ~/.cache/poslab/torch-2.11.0; run it with that venv's python)
       --sample FILE: what `poslab sample CKPT --prompt TEXT --top-k 1 --tokens N` printed.
Prints one line per check; exits 1 when one fails, 2 when transformers cannot load the folder.
"""
import argparse
import json
import sys
import warnings

import torch
from safetensors import safe_open
from transformers import AutoTokenizer, GPT2LMHeadModel
from transformers.utils import logging as hf_logging

warnings.filterwarnings("ignore")
hf_logging.set_verbosity_error()
hf_logging.disable_progress_bar()


def line(ok, text):
    print(f"{'ok  ' if ok else 'FAIL'} {text}")
    return 0 if ok else 1


def first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def check_texts(dir_, encode, decode, what):
    """Each check text encoded to poslab's ids, and poslab's ids decoded to poslab's text. Hugging Face's unigram
    model matches every piece in a text, sentencepiece's only the normal ones: a text that spells a byte piece's or
    <unk>'s name is the one known difference (docs/interop.md)."""
    failed = 0
    kind = json.load(open(f"{dir_}/config.json"))["poslab"]["tokenizer"]
    with safe_open(f"{dir_}/poslab_check.safetensors", framework="pt") as f:
        meta = f.metadata()
        i = 0
        while f"text_{i}" in meta:
            text, want = meta[f"text_{i}"], f.get_tensor(f"ids_{i}")[0].tolist()
            got = encode(text)
            spells_a_piece = "<0x" in text or "<unk>" in text
            if got != want and kind == "unigram" and spells_a_piece:
                print(f"ok   {what} text {i} ({len(want)} ids): differs where it spells a piece's name, as known for "
                      "a unigram model")
            else:
                k = first_difference(got, want)
                failed += line(got == want, f"{what} text {i}: {json.dumps(text)[:60]}: {len(want)} ids"
                               + ("" if got == want else f"; first difference at {k}: {got[k:k + 5]} vs poslab "
                                  f"{want[k:k + 5]}"))
            decoded = decode(want)
            failed += line(decoded == meta[f"decoded_{i}"], f"{what} decodes text {i}'s ids to poslab's text"
                           + ("" if decoded == meta[f"decoded_{i}"] else f": {decoded!r} vs {meta[f'decoded_{i}']!r}"))
            i += 1
        if "decoded_unk" in meta:  # ids with <unk>, which sampling may draw and no text encodes to
            decoded = decode(f.get_tensor("ids_unk")[0].tolist())
            failed += line(decoded == meta["decoded_unk"], f"{what} decodes <unk> as poslab does: {decoded!r}"
                           + ("" if decoded == meta["decoded_unk"] else f" vs {meta['decoded_unk']!r}"))
    if i == 0:
        failed += line(False, "the check file holds no texts")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--atol", type=float, default=1e-4, help="largest |logit difference| accepted (float32)")
    ap.add_argument("--prompt", help="the prompt poslab sample continued")
    ap.add_argument("--sample", help="poslab sample's output for --prompt with --top-k 1 --tokens N")
    ap.add_argument("--tokens", type=int, default=0, help="the tokens poslab sample generated")
    args = ap.parse_args()
    with safe_open(f"{args.dir}/poslab_check.safetensors", framework="pt") as f:
        ids = f.get_tensor("input_ids")
        expected = f.get_tensor("logits")
    try:
        model = GPT2LMHeadModel.from_pretrained(args.dir, attn_implementation="eager").eval()
        tok = AutoTokenizer.from_pretrained(args.dir)
    except Exception as e:  # noqa: BLE001 - name what transformers said
        print(f"error: {args.dir}: transformers cannot load it: {e}", file=sys.stderr)
        return 2
    failed = 0
    with torch.no_grad():
        logits = model(ids).logits.float()
    diff = (logits - expected).abs().max().item()
    failed += line(diff <= args.atol, f"logits: {tuple(ids.shape)} tokens, max |transformers - poslab| = {diff:.2e} "
                                      f"(atol {args.atol:g})")
    tied = model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    failed += line(tied, f"head tied to wte: {tied}")
    special = {k: getattr(model.config, k) for k in ("bos_token_id", "eos_token_id")}
    failed += line(all(v is None for v in special.values()), f"no end-of-text id that stops generation: {special}")
    failed += check_texts(args.dir, lambda t: tok(t, add_special_tokens=False)["input_ids"], tok.decode,
                          f"tokenizer ({type(tok).__name__})")
    if args.sample:
        prompt = tok(args.prompt, add_special_tokens=False, return_tensors="pt").input_ids
        with torch.no_grad():
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                 max_new_tokens=args.tokens)
        text = tok.decode(out[0]) + "\n"  # poslab sample ends its text with a new line
        want = open(args.sample, encoding="utf-8").read()
        new = out.shape[1] - prompt.shape[1]
        new_lines = tok.decode(out[0, prompt.shape[1]:]).count("\n")
        k = first_difference(text, want)
        failed += line(text == want and new == args.tokens,
                       f"generate(do_sample=False, max_new_tokens={args.tokens}) = poslab sample --top-k 1: {new} tokens, "
                       f"{new_lines} new lines among them" + ("" if text == want else f"; first difference at character {k}: "
                                                         f"{text[k:k + 20]!r} vs {want[k:k + 20]!r}"))
    from huggingface_hub import ModelCard
    card = ModelCard.load(f"{args.dir}/README.md")
    data = card.data.to_dict()
    ok = (data.get("library_name") == "transformers" and data.get("pipeline_tag") == "text-generation"
          and "poslab" in data.get("tags", []) and data.get("datasets"))
    failed += line(bool(ok), f"model card metadata: library {data.get('library_name')}, pipeline "
                             f"{data.get('pipeline_tag')}, tags {data.get('tags')}, datasets {data.get('datasets')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
