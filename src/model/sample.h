// Autoregressive sampling from the model.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/gpt.h"

namespace poslab {

struct SampleOptions {
  int tokens = 200;          // new tokens to generate
  double temperature = 0.8;  // 0 = greedy (argmax)
  int top_k = 0;             // keep the k most likely tokens; 0 = all
  uint64_t seed = 1337;      // same seed, same text
};

// Returns prompt + generated ids. The context fed to the model is the last block_size ids.
// An empty prompt starts from `start_id`. `on_token`, where given, is called with each new id as it is drawn.
std::vector<int> generate(GPT& model, std::vector<int> prompt, const SampleOptions& opt, int start_id = 0,
                          const std::function<void(int)>& on_token = nullptr);

}  // namespace poslab
