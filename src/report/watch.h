// The data of the "watch it form" page (report/watch_page.h) from a run's snapshots: at each snapshot the rows'
// cosine similarity, their path on fixed principal axes, the singular values with the noise floor, layer 0's
// positional kernels and the headline metrics, quantised and subsampled to keep the page small.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/trajectory.h"

namespace poslab {

// The most form a path's axes follow: a helix (its circle and slow axis), a circle (its pair and the strongest
// component outside it), or the top principal directions only.
enum class PathForm { principal = 0, circle = 1, helix = 2 };

struct WatchLimits {
  size_t max_frames = 64;        // snapshots shown: evenly spaced, always the first and the last
  int64_t max_sim_rows = 128;    // rows of the similarity heatmap (every k-th position beyond)
  int64_t max_path_rows = 512;   // rows drawn on the path
  int64_t kernel_bytes = 16384;  // per snapshot, all heads: each kernel is averaged down to fit (at most 64 × 64);
                                 // 0: no kernels (the heads' kinds still)
  int64_t max_singular_values = 128;
  int64_t max_frequencies = 64;          // the periodogram's lowest frequencies shown
  PathForm path_form = PathForm::helix;  // the most form the path's axes follow (the seeds page: what every seed holds)
};

// The form of the analysis's own path axes: a helix (direct or turned), a circle, or none.
PathForm path_form_of(const Analysis& a);

// Which of n items to keep, at most `max`: evenly spaced, the first and the last always among them, ascending.
std::vector<int64_t> pick_evenly(int64_t n, int64_t max);

// The page's data for the run's snapshots `points` (analysis/trajectory.h; each point's table is read from its
// .npy, its kernels from snapshots/attn_stepN.npy and model_stepN.json when the run wrote them):
// {positions, dims, sim{positions}, path{positions, components, scale, basis_step, axes (their names), what (for the
// caption), kind ("turned helix", "helix", "circle" or "": the top directions), scaled (sd units), up (the 3-D view's
// upright axis)}, kernels{n_head, resolution} or
// null, metrics[{key, label, gaps (a step without a value breaks its curve)}], frames[{step, train_loss, val_loss, sim
// (base64 uint8: round((cos + 1)/2 · 255), row major), path (base64 int16 LE: round(x / scale · 32767), rows ×
// components), path_outside and path_outside_rows (rows beyond the 2-D view's frame: their count and the first four),
// path_share, circle, turned_circle (a helix turned apart: its circle's components, period and turns), sv, floor,
// signal_rank, metrics[] (signal share, effective rank, adjacent cosine, sinusoid R², probe R², train and val loss),
// kernels (base64 uint8: round(√a · 255), heads × r × r) or null, kinds, text_kinds}], evals[[step, train loss, val
// loss (each or null)]] (the run's every evaluation, at most 512, evenly spaced; absent without metrics.jsonl)}. The
// path's axes are the last snapshot's helix, circle or top (up to) three principal directions, at most the form
// limits.path_form, fixed for every frame, each pointing away from the first position (whose coordinates are ≤ 0).
nlohmann::json watch_data(const std::string& run_dir, const std::vector<TrajectoryPoint>& points,
                          const WatchLimits& limits = {});

// The same page's data for one table W (any device and dtype) and its analysis: one frame at step 0, no kernels, and
// "table": true, which shows the parts that fit one table (the similarity, the path in 2-D and 3-D, the spectrum
// and the periodogram) without the slider, the kernels or the curves over training.
nlohmann::json table_watch_data(const torch::Tensor& W, const Analysis& a, const WatchLimits& limits = {});

// One seed of a variant for the seeds page: its run folder, analysed snapshots and a short verdict ("emerged from
// step 700").
struct SeedRun {
  int64_t seed = 0;
  std::string run_dir;
  const std::vector<TrajectoryPoint>* points = nullptr;
  std::string verdict;
};

// What the seeds page shows of each seed: smaller than a run's page (a variant has several), no kernels but the heads'
// kinds.
WatchLimits seeds_limits();

// The seeds page's data: {variant, path_form, seeds[{seed, name, run, verdict, form, data (watch_data of the run)}]},
// the seeds with snapshots only, in the order given. Every seed's path follows the form all of them hold at their
// last snapshots (path_form: "helix", "circle" or "principal"; `form` is each seed's own), so that the panels
// compare: a seed whose analysis alone found a circle is drawn on its top principal directions as the others are.
// Throws poslab::Error when none has any.
nlohmann::json seeds_watch_data(const std::string& variant, const std::vector<SeedRun>& seeds,
                                const WatchLimits& limits = seeds_limits());

// Writes `report_dir`/watch.html for one table (poslab report TABLE); returns its path.
std::string write_table_watch_page(const torch::Tensor& W, const Analysis& a, const std::string& source,
                                   const std::string& report_dir);

// Writes `report_dir`/watch.html for the run and logs its size; returns its path.
std::string write_watch_page(const std::string& run_dir, const std::string& report_dir,
                             const std::vector<TrajectoryPoint>& points);

}  // namespace poslab
