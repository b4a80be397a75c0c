// The figures of a vision table's 2-D patch grid (analysis/grid.h): similarity by (Δrow, Δcol), and each patch's
// cosine to every other patch as a small map placed where the patch sits in the image.
#include <spdlog/fmt/fmt.h>

#include "report/figures.h"

namespace poslab {

namespace {

// A matrix as gnuplot's `matrix` format: one row per line.
std::string matrix_text(const torch::Tensor& M) {
  const auto m = M.to(torch::kFloat64).contiguous();
  const auto a = m.accessor<double, 2>();
  std::string d;
  for (int64_t i = 0; i < m.size(0); ++i) {
    for (int64_t j = 0; j < m.size(1); ++j) d += (j ? " " : "") + fmt::format("{:.4f}", a[i][j]);
    d += "\n";
  }
  return d;
}

}  // namespace

Figure grid_offset_figure(const GridAnalysis& g) {
  Figure f{"grid_offsets",
           "Similarity by offset in the patch grid",
           "Mean cosine similarity of two patches by how many grid rows (Δrow, down) and columns (Δcol, across) apart "
           "they are; the centre is a patch with itself. A table that encodes the image's 2-D layout is bright near "
           "the centre along both axes; one read as a sequence would show stripes.",
           {{"grid_offsets.dat", matrix_text(g.similarity_by_offset)}},
           {}};
  f.script =
      both_formats(f.name,
                   std::string(kPalette) +
                       fmt::format("  set cbrange [-1:1]\n  set cblabel 'mean cosine similarity'\n  set size ratio -1\n"
                                   "  set xlabel 'Δcol'\n  set ylabel 'Δrow'\n  set xrange [{0}-0.5:{1}+0.5]\n  set "
                                   "yrange [{2}+0.5:{3}-0.5]\n"
                                   "  plot 'grid_offsets.dat' matrix using ($1-{4}):($2-{5}):3 with image notitle\n"
                                   "  set autoscale xy\n  set size noratio\n",
                                   -(g.cols - 1), g.cols - 1, g.rows - 1, -(g.rows - 1), g.cols - 1, g.rows - 1),
                   700, 600);
  return f;
}

Figure patch_maps_figure(const GridAnalysis& g) {
  // One block per patch (gnuplot's `index`), each an R x C map of that patch's cosine to every patch.
  std::string d;
  const int64_t n = g.rows * g.cols;
  for (int64_t p = 0; p < n; ++p) {
    d += matrix_text(g.cosine[p].view({g.rows, g.cols}));
    d += "\n\n";
  }
  Figure f{
      "patch_maps",
      "Each patch's similarity to every other patch",
      fmt::format("A {0} × {1} grid of small maps, one per patch, placed where the patch sits in the image: each shows "
                  "the cosine similarity of that patch's position embedding to every patch's ({0} × {1}), on one "
                  "scale from −1 to 1. Learned 2-D structure shows as a bright spot that moves with the patch.",
                  g.rows, g.cols),
      {{"patch_maps.dat", d}},
      {}};
  std::string body =
      std::string(kPalette) +
      "  set cbrange [-1:1]\n  unset colorbox\n  unset xtics\n  unset ytics\n"
      "  unset key\n  set size ratio -1\n  set lmargin 0\n  set rmargin 0\n  set tmargin 0\n  set bmargin 0\n";
  body += fmt::format("  set xrange [-0.5:{}-0.5]\n  set yrange [{}-0.5:-0.5]\n", g.cols, g.rows);
  body += fmt::format("  set multiplot layout {},{} margins 0.02,0.98,0.02,0.98 spacing 0.004\n", g.rows, g.cols);
  body += fmt::format("  do for [p=0:{}] {{ plot 'patch_maps.dat' index p matrix with image }}\n", n - 1);
  body += "  unset multiplot\n";
  const int side = static_cast<int>(std::min<int64_t>(1100, std::max<int64_t>(500, 40 * g.cols)));
  f.script = both_formats(f.name, body, side, side * static_cast<int>(g.rows) / static_cast<int>(g.cols));
  return f;
}

}  // namespace poslab
