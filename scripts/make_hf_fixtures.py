"""Writes tests/fixtures/hf/: tiny Hugging Face model folders saved by transformers itself, for the C++ HF reader.

Usage: ~/.cache/poslab/torch-2.11.0/bin/python scripts/make_hf_fixtures.py [OUT_DIR]   (default tests/fixtures/hf)
       (that venv is scripts/libtorch.sh pip's; it needs transformers, numpy and safetensors:
        ~/.cache/poslab/torch-2.11.0/bin/python -m pip install transformers numpy safetensors)

Every model is built from a tiny config object with random init (torch.manual_seed(0); no download), then saved
with save_pretrained (safetensors, float32 unless the folder's name says fp16/bf16). Weight matrices use
initializer_range 0.3 where the family reads it, and every 1-D parameter (biases, norm weights) gets N(0, 0.1)
noise on top of its init, so that references below depend on every tensor they use.

OUT_DIR/manifest.json   per folder: class, model_type, files, every stored tensor (name, shape, dtype, file), the
                        model's state-dict names absent from the files (tied weights), and its position tables,
                        found on the live modules: name as stored, shape, offset, class_rows, grid, role, frozen,
                        positions = rows - offset - class_rows. Rotary models get tables = [] and uses = "rotary".
OUT_DIR/references.json NumPy float64 numbers computed from the saved files (safetensors.numpy): layer-0 positional
                        attention per head of the gpt2 (causal) and bert (bidirectional) fixtures, and CKA and
                        similarity correlation of gpt2's table (24 x 16) against gpt_neo's (24 x 8).
OUT_DIR/cka_a.npy, cka_b.npy  float32 copies of those two tables.
"""
import json
import os
import re
import shutil
import sys

import numpy as np
import safetensors.numpy
import torch
import transformers as T

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
V = 64  # vocabulary of every fixture
INIT = 0.3  # initializer_range: large enough that random attention is not uniform
SPECIAL = dict(pad_token_id=1, bos_token_id=0, eos_token_id=2)


def gpt2_config():
    return T.GPT2Config(vocab_size=V, n_positions=24, n_embd=16, n_head=2, n_layer=1, n_inner=32,
                        initializer_range=INIT, bos_token_id=0, eos_token_id=2)


def whisper_config():
    return T.WhisperConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                           decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, num_mel_bins=4,
                           max_source_positions=16, max_target_positions=24, decoder_start_token_id=3,
                           suppress_tokens=None, begin_suppress_tokens=None, **SPECIAL)


def seq2seq(cls):
    return lambda: cls(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                       decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=24,
                       init_std=INIT, decoder_start_token_id=2, forced_eos_token_id=2, **SPECIAL)


def roberta_like(cls):
    return lambda: cls(vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                       max_position_embeddings=26, type_vocab_size=1, initializer_range=INIT, **SPECIAL)


def distilbert(sinusoidal):
    return lambda: T.DistilBertConfig(vocab_size=V, dim=16, n_layers=1, n_heads=2, hidden_dim=32,
                                      max_position_embeddings=24, sinusoidal_pos_embds=sinusoidal,
                                      initializer_range=INIT, pad_token_id=0)


# name: (model class, config maker, how to save: None, "sharded", "bin", torch.float16 or torch.bfloat16)
FIXTURES = {
    "gpt2": (T.GPT2LMHeadModel, gpt2_config, None),
    "gpt_neo": (T.GPTNeoForCausalLM, lambda: T.GPTNeoConfig(
        vocab_size=V, max_position_embeddings=24, hidden_size=8, num_layers=1, num_heads=2, intermediate_size=32,
        attention_types=[[["global"], 1]], window_size=8, initializer_range=INIT, bos_token_id=0, eos_token_id=2),
        None),
    "opt": (T.OPTForCausalLM, lambda: T.OPTConfig(
        vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, ffn_dim=32,
        max_position_embeddings=24, word_embed_proj_dim=16, init_std=INIT, **SPECIAL), None),
    "bert": (T.BertForMaskedLM, lambda: T.BertConfig(
        vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=24, initializer_range=INIT, pad_token_id=0), None),
    "roberta": (T.RobertaForMaskedLM, roberta_like(T.RobertaConfig), None),
    "xlm-roberta": (T.XLMRobertaModel, roberta_like(T.XLMRobertaConfig), None),
    "camembert": (T.CamembertModel, roberta_like(T.CamembertConfig), None),
    "distilbert": (T.DistilBertModel, distilbert(False), None),
    "distilbert_sinusoidal": (T.DistilBertModel, distilbert(True), None),
    "bart": (T.BartForConditionalGeneration, seq2seq(T.BartConfig), None),
    "mbart": (T.MBartForConditionalGeneration, seq2seq(T.MBartConfig), None),
    "whisper": (T.WhisperForConditionalGeneration, whisper_config, None),
    "clip": (T.CLIPModel, lambda: T.CLIPConfig(
        text_config=dict(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=24, **SPECIAL),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                           image_size=32, patch_size=8, num_channels=3),
        projection_dim=8), None),
    "vit": (T.ViTModel, lambda: T.ViTConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, image_size=32,
        patch_size=8, num_channels=3, initializer_range=INIT), None),
    "llama": (T.LlamaForCausalLM, lambda: T.LlamaConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=24, initializer_range=INIT, **SPECIAL), None),
    "gpt2_sharded": (T.GPT2LMHeadModel, gpt2_config, "sharded"),
    "gpt2_bin": (T.GPT2LMHeadModel, gpt2_config, "bin"),
    "gpt2_fp16": (T.GPT2LMHeadModel, gpt2_config, torch.float16),
    "gpt2_bf16": (T.GPT2LMHeadModel, gpt2_config, torch.bfloat16),
}

# The leaf names transformers gives learned or fixed absolute position tables.
TABLE_NAME = re.compile(r"(^|\.)(wpe|position_embeddings?|embed_positions)(\.weight)?$")


def build(cls, make_config):
    model = cls(make_config())
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.ndim == 1 and p.requires_grad:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def save(model, folder, how):
    if how == "bin":
        # transformers 5 only writes safetensors; this is what transformers 4 wrote for safe_serialization=False:
        # torch.save of the state dict, tied duplicates left out.
        model.config.save_pretrained(folder)
        tied = set(tied_duplicates(model))
        state = {n: t for n, t in model.state_dict().items() if n not in tied}
        torch.save(state, os.path.join(folder, "pytorch_model.bin"))
        return
    model.save_pretrained(folder, max_shard_size="8KB" if how == "sharded" else "50GB")


def read_header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    return header


def stored_tensors(folder):
    """[{name, shape, dtype, file}] of every tensor in the folder's weight files, in file then name order."""
    out = []
    for file in sorted(os.listdir(folder)):
        path = os.path.join(folder, file)
        if file.endswith(".safetensors"):
            for name, info in sorted(read_header(path).items()):
                out.append({"name": name, "shape": info["shape"], "dtype": info["dtype"], "file": file})
        elif file.endswith(".bin"):
            for name, t in torch.load(path, weights_only=True).items():
                out.append({"name": name, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                            "file": file})
    return out


def stored_name(model_name, value, folder, tensors):
    """The name under which the folder stores the model's tensor model_name (checked by value)."""
    cands = [t for t in tensors if t["name"] == model_name or model_name.endswith("." + t["name"])
             or t["name"].endswith("." + model_name)]
    hits = [t for t in cands if torch.equal(load_one(folder, t).to(value.dtype), value.detach().cpu())]
    assert len(hits) == 1, (folder, model_name, [t["name"] for t in cands])
    return hits[0]["name"]


def load_one(folder, t):
    path = os.path.join(folder, t["file"])
    if path.endswith(".bin"):
        return torch.load(path, weights_only=True)[t["name"]]
    from safetensors.torch import load_file
    return load_file(path)[t["name"]]


def as_pair(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


def vision_info(model, owner_name):
    """(grid, num_patches) of the embeddings module holding a table, or (None, None) for a non-vision table."""
    for name in (owner_name, owner_name.rpartition(".")[0]):
        mod = model.get_submodule(name) if name else model
        for m in (mod, getattr(mod, "patch_embeddings", None)):
            if m is not None and hasattr(m, "num_patches") and hasattr(m, "image_size"):
                (ih, iw), (ph, pw) = as_pair(m.image_size), as_pair(m.patch_size)
                return [ih // ph, iw // pw], m.num_patches
    return None, None


def is_sinusoid(table):
    """Row 0 of a sin/cos table is sin(0) = 0 and cos(0) = 1 in every column; a random table never is."""
    row0 = table.detach().float().reshape(-1, table.shape[-1])[0]
    return bool(((row0 == 0) | (row0 == 1)).all() and (row0 == 1).any())


def role_of(name, grid):
    parts = name.split(".")
    for key, role in (("text_model", "text"), ("vision_model", "vision"), ("encoder", "encoder"),
                      ("decoder", "decoder")):
        if key in parts:
            return role
    return "vision" if grid else "model"


def position_tables(model, folder, tensors):
    buffers = {n for n, _ in model.named_buffers()}
    tables = []
    named = list(model.named_parameters()) + [(n, b) for n, b in model.named_buffers() if n in
                                               {t["name"] for t in tensors}]
    for name, value in named:
        if not TABLE_NAME.search(name) or value.ndim < 2:
            continue
        # An nn.Embedding's weight (owner: the Embedding), or a bare nn.Parameter such as ViT's (owner: None).
        owner_name = name.rpartition(".")[0]
        owner = model.get_submodule(owner_name) if name.endswith(".weight") else None
        offset = 0
        if owner is not None and isinstance(getattr(owner, "offset", None), int):
            offset = owner.offset  # OPT, BART, mBART: positions start at row offset
        elif isinstance(owner, torch.nn.Embedding) and owner.padding_idx is not None:
            offset = owner.padding_idx + 1  # RoBERTa family: positions start after the padding row
        vis_owner = owner_name.rpartition(".")[0] if owner is not None else owner_name
        grid, num_patches = vision_info(model, vis_owner)
        rows = value.shape[-2]
        class_rows = rows - offset - num_patches if grid else 0
        reasons = [r for r, yes in (("requires_grad=False", not value.requires_grad),
                                    ("buffer", name in buffers),
                                    ("sinusoid", is_sinusoid(value))) if yes]
        tables.append({"name": stored_name(name, value, folder, tensors), "module": name,
                       "shape": list(value.shape), "offset": offset, "class_rows": class_rows, "grid": grid,
                       "role": role_of(name, grid), "frozen": bool(reasons), "frozen_reason": reasons,
                       "positions": rows - offset - class_rows})
    return tables


def check_loads(cls, folder, model):
    """Loads the folder back with from_pretrained: nothing missing or unexpected, every tensor as saved."""
    loaded, info = cls.from_pretrained(folder, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    assert not bad, (folder, bad)
    want, got = model.state_dict(), loaded.state_dict()
    assert want.keys() == got.keys(), folder
    for name, t in want.items():
        assert torch.equal(got[name].to(t.dtype), t), (folder, name)
    return str(next(loaded.parameters()).dtype).replace("torch.", "")


def tied_duplicates(model):
    """State-dict names whose tensor is another entry's (tied weights): the files hold each tensor once."""
    seen, dup = set(), []
    for name, t in model.state_dict(keep_vars=True).items():
        key = (t.data_ptr(), tuple(t.shape))
        (dup.append(name) if key in seen else seen.add(key))
    return dup


# ---- NumPy references (float64, from the files) ----

def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def attention_summary(q, k, n_head, causal):
    P, C = q.shape
    hs = C // n_head
    heads = []
    for h in range(n_head):
        s = q[:, h * hs:(h + 1) * hs] @ k[:, h * hs:(h + 1) * hs].T / np.sqrt(hs)
        if causal:
            s = np.where(np.tril(np.ones((P, P), bool)), s, -np.inf)
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        late = np.arange(P // 2, P)
        heads.append({"head": h, "A": a.tolist(), "mean_diag": float(a[late, late].mean()),
                      "mean_prev": float(a[late, late - 1].mean()), "mean_first": float(a[late, 0].mean())})
    return heads


def gpt2_reference(out):
    cfg = json.load(open(os.path.join(out, "gpt2", "config.json")))
    w = {k: v.astype(np.float64) for k, v in safetensors.numpy.load_file(
        os.path.join(out, "gpt2", "model.safetensors")).items()}
    C, H = cfg["n_embd"], cfg["n_head"]
    tbar = w["transformer.wte.weight"].mean(0)
    x = layer_norm(w["transformer.wpe.weight"] + tbar, w["transformer.h.0.ln_1.weight"],
                   w["transformer.h.0.ln_1.bias"], cfg["layer_norm_epsilon"])
    W, b = w["transformer.h.0.attn.c_attn.weight"], w["transformer.h.0.attn.c_attn.bias"]
    q, k = x @ W[:, :C] + b[:C], x @ W[:, C:2 * C] + b[C:2 * C]
    return {"fixture": "gpt2", "file": "gpt2/model.safetensors", "layer": 0, "causal": True, "n_head": H,
            "positions": len(x), "eps": cfg["layer_norm_epsilon"],
            "tensors": ["transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                        "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.weight",
                        "transformer.h.0.attn.c_attn.bias"],
            "heads": attention_summary(q, k, H, causal=True)}


def bert_reference(out):
    cfg = json.load(open(os.path.join(out, "bert", "config.json")))
    w = {k: v.astype(np.float64) for k, v in safetensors.numpy.load_file(
        os.path.join(out, "bert", "model.safetensors")).items()}
    e, a = "bert.embeddings.", "bert.encoder.layer.0.attention.self."
    H = cfg["num_attention_heads"]
    tbar = w[e + "word_embeddings.weight"].mean(0)
    x = layer_norm(tbar + w[e + "position_embeddings.weight"] + w[e + "token_type_embeddings.weight"][0],
                   w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"], cfg["layer_norm_eps"])
    q = x @ w[a + "query.weight"].T + w[a + "query.bias"]
    k = x @ w[a + "key.weight"].T + w[a + "key.bias"]
    return {"fixture": "bert", "file": "bert/model.safetensors", "layer": 0, "causal": False, "n_head": H,
            "positions": len(x), "eps": cfg["layer_norm_eps"],
            "tensors": [e + "word_embeddings.weight", e + "position_embeddings.weight",
                        e + "token_type_embeddings.weight", e + "LayerNorm.weight", e + "LayerNorm.bias",
                        a + "query.weight", a + "query.bias", a + "key.weight", a + "key.bias"],
            "heads": attention_summary(q, k, H, causal=False)}


def check_attention(out, ref, cls):
    """The same attention from transformers' own forward pass (eager, float64): inputs_embeds = t-bar at every
    position, so layer 0 sees LayerNorm(t-bar + p_i (+ token type 0)). Returns the largest difference."""
    model = cls.from_pretrained(os.path.join(out, ref["fixture"]), attn_implementation="eager").eval()
    tbar = model.get_input_embeddings().weight.detach().double().mean(0)
    model = model.double()
    with torch.no_grad():
        att = model(inputs_embeds=tbar.expand(1, ref["positions"], -1).clone(), output_attentions=True).attentions
    diff = max(float(np.abs(att[0][0, h["head"]].numpy() - np.array(h["A"])).max()) for h in ref["heads"])
    assert diff < 1e-12, (ref["fixture"], diff)
    return diff


def cka_reference(out):
    a32 = safetensors.numpy.load_file(os.path.join(out, "gpt2", "model.safetensors"))["transformer.wpe.weight"]
    b32 = safetensors.numpy.load_file(os.path.join(out, "gpt_neo", "model.safetensors"))["transformer.wpe.weight"]
    assert a32.shape[0] == b32.shape[0] and a32.shape[1] != b32.shape[1]
    np.save(os.path.join(out, "cka_a.npy"), a32)
    np.save(os.path.join(out, "cka_b.npy"), b32)
    a, b = a32.astype(np.float64), b32.astype(np.float64)
    ac, bc = a - a.mean(0), b - b.mean(0)
    cka = np.linalg.norm(bc.T @ ac) ** 2 / (np.linalg.norm(ac.T @ ac) * np.linalg.norm(bc.T @ bc))

    def cos(m):
        u = m / np.linalg.norm(m, axis=1, keepdims=True)
        return u @ u.T

    off = ~np.eye(len(a), dtype=bool)
    sim = np.corrcoef(cos(a)[off], cos(b)[off])[0, 1]
    return {"a": {"fixture": "gpt2", "tensor": "transformer.wpe.weight", "npy": "cka_a.npy", "shape": list(a.shape)},
            "b": {"fixture": "gpt_neo", "tensor": "transformer.wpe.weight", "npy": "cka_b.npy",
                  "shape": list(b.shape)},
            "cka": float(cka), "similarity_correlation": float(sim)}


def main():
    T.utils.logging.disable_progress_bar()
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "hf"))
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    manifest = {"transformers": T.__version__, "torch": torch.__version__, "fixtures": {}}
    for name, (cls, make_config, how) in FIXTURES.items():
        folder = os.path.join(out, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        model = build(cls, make_config)
        if isinstance(how, torch.dtype):
            model.to(how)
        save(model, folder, how)
        tensors = stored_tensors(folder)
        entry = {"class": cls.__name__, "model_type": model.config.model_type,
                 "files": {f: os.path.getsize(os.path.join(folder, f)) for f in sorted(os.listdir(folder))},
                 "tables": position_tables(model, folder, tensors)}
        if not entry["tables"] and any("Rotary" in type(m).__name__ for m in model.modules()):
            entry["uses"] = "rotary"
        # The files hold the state dict less tied duplicates, under the checkpoint's names, which transformers 5
        # may write differently from its modules' names (ViT, ...): count those too.
        entry["tied_absent_from_files"] = tied_duplicates(model)
        assert len(tensors) == len(model.state_dict()) - len(entry["tied_absent_from_files"]), name
        live = set(model.state_dict())
        entry["stored_names_unlike_module_names"] = sum(t["name"] not in live for t in tensors)
        entry["tensors"] = tensors
        entry["loaded_dtype"] = check_loads(cls, folder, model)
        manifest["fixtures"][name] = entry
        print(f"{name:22s} {sum(entry['files'].values()):7d} B  " + "; ".join(
            f"{t['name']} {t['shape']} offset {t['offset']} class {t['class_rows']} {t['role']}"
            f"{' frozen' if t['frozen'] else ''}" for t in entry["tables"]) + (
            " rotary" if entry.get("uses") else ""))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    refs = {"float": "float64, from the saved files read with safetensors.numpy",
            "attention": {"gpt2": gpt2_reference(out), "bert": bert_reference(out)},
            "agreement": cka_reference(out)}
    for name, cls in (("gpt2", T.GPT2LMHeadModel), ("bert", T.BertForMaskedLM)):
        ref = refs["attention"][name]
        ref["max_abs_diff_vs_transformers_forward"] = check_attention(out, ref, cls)
    with open(os.path.join(out, "references.json"), "w") as f:
        json.dump(refs, f, indent=1)
        f.write("\n")
    for k, r in refs["attention"].items():
        for h in r["heads"]:
            print(f"{k} head {h['head']}: diag {h['mean_diag']:.4f} prev {h['mean_prev']:.4f} "
                  f"first {h['mean_first']:.4f}")
    print(f"CKA {refs['agreement']['cka']:.4f}, similarity r {refs['agreement']['similarity_correlation']:.4f}")


if __name__ == "__main__":
    main()
