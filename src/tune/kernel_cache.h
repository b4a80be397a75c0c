// The kernel-path cache: cache_dir/kernel_paths.json, {key: {paths, timings: [{paths, ms | unavailable, rounds}],
// date}}, so that the next run with the same key (CPU, LibTorch, build, device, dtype, shape: tune/autotune.h) starts
// at once; and a tuning as JSON, in the same form.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "config/config.h"
#include "tune/autotune_search.h"

namespace poslab {

// The cache file of cfg's cache folder (data/dataset.h, cache_dir).
std::string kernel_cache_path(const Config& cfg);

// The cache's entry for `key`, or nothing: absent, or damaged (then a warning names the file, and the caller
// measures again and rewrites it).
std::optional<KernelTuning> read_kernel_cache(const std::string& path, const std::string& key);

// Stores `t` under t.key with today's date, keeping the file's other entries (a damaged file starts afresh). A
// failed write is a warning (the next run measures again), never an error.
void write_kernel_cache(const std::string& path, const KernelTuning& t);

nlohmann::json to_json(const KernelTuning& t);
// The timings as to_json writes them, read back (`what` names their file in errors).
std::vector<PathTiming> timings_from_json(const nlohmann::json& rows, const std::string& what);

}  // namespace poslab
