// The web console's files (src/server/console/), built into the binary by
// src/server/console/embed.cmake: the node serves them under /console/ with
// no CDN and nothing installed beside it. The console reads everything it
// shows from the management API (management_api.h) with the user's
// credentials.
#pragma once

#include <string_view>
#include <vector>

namespace strata::server {

struct ConsoleAsset {
  std::string_view name;  // "index.html", "console.js", ...
  std::string_view body;
};

const std::vector<ConsoleAsset>& console_assets();

}  // namespace strata::server
