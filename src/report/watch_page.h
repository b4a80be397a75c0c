// The pages that play snapshots with a step slider, each one self-contained HTML file (data, script and style inline,
// no network): the "watch it form" page of a run or one table, and the page of a variant's seeds side by side. Their
// data come from report/watch.h; the pages themselves are watch_page.html, seeds_page.html, their .css and .js and
// panels.js (the drawings both share) beside this file, embedded at build time. Plain canvas drawing, no library.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace poslab {

// The watch page with `data` (watch.h's watch_data) embedded; `title` and `source` head it.
std::string watch_html(const std::string& title, const std::string& source, const nlohmann::json& data);

// The seeds page with `data` (watch.h's seeds_watch_data) embedded. Throws poslab::Error when no seed has a frame.
std::string seeds_html(const std::string& title, const std::string& source, const nlohmann::json& data);

}  // namespace poslab
