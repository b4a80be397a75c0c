// eval/per_position_loss_SPLIT.csv and eval/shift_loss_SPLIT.csv, written by poslab eval (run_files.h).
#include "run/run_files.h"

#include <spdlog/fmt/fmt.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "run/json_records.h"
#include "util/fs.h"

namespace poslab {

std::string position_loss_csv(const std::vector<double>& loss) {
  std::string csv = "position,loss\n";
  for (size_t i = 0; i < loss.size(); ++i) csv += fmt::format("{},{:.6f}\n", i, loss[i]);
  return csv;
}

std::vector<double> read_position_loss(const std::string& path) {
  std::vector<double> loss;
  if (!is_file(path)) return loss;
  const std::string hint = "the file is damaged: write it again with poslab eval";
  std::istringstream in(read_file(path));
  std::string line;
  int no = 1;
  if (!std::getline(in, line) || line.rfind("position,loss", 0) != 0)
    damaged(path, 1, "the header is not position,loss", hint);
  while (std::getline(in, line)) {
    ++no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto comma = line.find(',');
    char* end = nullptr;
    const long long position = comma == std::string::npos ? -1 : std::strtoll(line.c_str(), &end, 10);
    if (comma == std::string::npos || end != line.c_str() + comma)
      damaged(path, no, "\"" + line + "\" is not POSITION,LOSS", hint);
    if (position != static_cast<long long>(loss.size()))
      damaged(path, no, fmt::format("position {} where {} was expected", position, loss.size()), hint);
    const char* value = line.c_str() + comma + 1;
    const double v = std::strtod(value, &end);
    if (end == value || std::string(end).find_first_not_of(" \t\r") != std::string::npos)
      damaged(path, no, fmt::format("loss \"{}\" is not a number", value), hint);
    loss.push_back(v);
  }
  return loss;
}

std::string shift_loss_csv(const std::vector<int64_t>& shifts, const std::vector<std::vector<double>>& by_position) {
  std::string csv = "shift,position,loss\n";
  for (size_t s = 0; s < shifts.size(); ++s)
    for (size_t i = 0; i < by_position[s].size(); ++i)
      csv += fmt::format("{},{},{:.6f}\n", shifts[s], i, by_position[s][i]);
  return csv;
}

ShiftCurve read_shift_loss(const std::string& path) {
  ShiftCurve c;
  if (!is_file(path)) return c;
  const std::string hint = "the file is damaged: write it again with poslab eval --shift";
  std::istringstream in(read_file(path));
  std::string line;
  int no = 1;
  if (!std::getline(in, line) || line.rfind("shift,position,loss", 0) != 0)
    damaged(path, 1, "the header is not shift,position,loss", hint);
  while (std::getline(in, line)) {
    ++no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    long long shift = 0, position = 0;
    double loss = 0;
    int used = 0;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lf%n", &shift, &position, &loss, &used) != 3 ||
        line.find_first_not_of(" \t\r", static_cast<size_t>(used)) != std::string::npos)
      damaged(path, no, "\"" + line + "\" is not SHIFT,POSITION,LOSS", hint);
    if (position == 0) {
      c.shifts.push_back(shift);
      c.by_position.emplace_back();
    }
    if (c.shifts.empty() || c.shifts.back() != shift || position != static_cast<long long>(c.by_position.back().size()))
      damaged(path, no, fmt::format("shift {} position {} out of order", shift, position), hint);
    c.by_position.back().push_back(loss);
  }
  for (const auto& v : c.by_position) {
    double sum = 0;
    for (double x : v) sum += x;
    c.loss.push_back(sum / static_cast<double>(v.size()));
  }
  return c;
}

}  // namespace poslab
