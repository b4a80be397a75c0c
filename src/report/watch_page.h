// The "watch it form" page: one self-contained HTML file (data, script and style inline, no network) that plays a
// run's snapshots with a step slider. Its data come from report/watch.h; the page itself is watch_page.html, .css
// and .js beside this file, embedded at build time. Plain canvas drawing, no library.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace poslab {

// The page with `data` (watch.h's watch_data) embedded; `title` and `source` head it.
std::string watch_html(const std::string& title, const std::string& source, const nlohmann::json& data);

}  // namespace poslab
