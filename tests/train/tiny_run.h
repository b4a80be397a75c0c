// A tiny training run on a generated corpus (char tokenizer, 1 layer, 16 positions): seconds on a CPU.
#pragma once

#include <string>

#include "test_util.h"
#include "train/trainer.h"

namespace poslab::test {

inline TrainRequest tiny_run(const TempDir& dir, const std::string& name, int max_steps) {
  test::write_text(dir / "corpus.txt", test::generated_corpus(2000));
  TrainRequest r;
  // On the CPU unless a test says otherwise (run.device auto would pick a GPU where there is one).
  r.overrides = {"run.out_dir=" + dir.str(),
                 "run.name=" + name,
                 "run.threads=2",
                 "run.report=false",
                 "run.device=cpu",
                 "data.corpus=" + (dir / "corpus.txt"),
                 "data.cache_dir=" + (dir / "cache"),
                 "data.tokenizer.type=char",
                 "model.n_layer=1",
                 "model.n_head=2",
                 "model.n_embd=32",
                 "model.block_size=16",
                 "train.batch_size=16",
                 "train.max_steps=" + std::to_string(max_steps),
                 "train.lr=3e-3",
                 "train.min_lr=3e-4",
                 "train.warmup_steps=5",
                 "train.eval_every=20",
                 "train.eval_batches=4",
                 "train.checkpoint_every=20",
                 "train.log_every=5",
                 "snapshot.every=20"};
  return r;
}

}  // namespace poslab::test
