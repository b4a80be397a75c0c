// A poslab checkpoint as a Hugging Face transformers folder that GPT2LMHeadModel.from_pretrained loads with no code of
// the user's: config.json, model.safetensors in GPT-2's names and layouts, the tokenizer (tokenizer.json, which
// encodes and decodes as poslab does, beside sentencepiece's model), the model card (README.md, with the report's
// figures it shows) and a check file with poslab's own logits on a sample text (scripts/check_hf_export.py compares
// them and generates with transformers as poslab sample does). docs/interop.md.
#pragma once

#include <string>
#include <vector>

namespace poslab {

struct HfExport {
  std::string dir;
  std::vector<std::string> files;     // written, in order
  int64_t check_tokens = 0;           // tokens of the sample text in the check file
  std::vector<std::string> warnings;  // what the folder cannot say as poslab does (for the command to print)
};

// The sample text the check file encodes: new lines, a tab and characters outside the corpus (byte fallback).
extern const char* const kExportCheckText;
// The texts whose ids (and decoding) the check file holds for the tokenizer's check: new lines, empty lines, tabs,
// runs of spaces, digits, text that looks like a piece, characters outside the corpus and control characters.
extern const std::vector<std::string> kTokenizerCheckTexts;

// Writes DIR (created; files already there are replaced). Throws poslab::Error naming the checkpoint when it is
// not a poslab checkpoint, or DIR when it cannot be written. The head is tied to wte, as poslab trains it; a
// model without biases (model.bias false) gets zero biases, model.position none a zero table, sinusoidal its
// fixed table: the same function in GPT-2's layout.
HfExport export_hf(const std::string& checkpoint, const std::string& dir);

}  // namespace poslab
