#include "cli/log_output.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace strata::cli {
namespace {

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    const auto ms = duration_cast<milliseconds>(msg.time.time_since_epoch());
    const std::time_t secs = std::time_t(duration_cast<seconds>(ms).count());
    std::tm utc{};
    gmtime_r(&secs, &utc);
    const auto level = spdlog::level::to_string_view(msg.level);
    nlohmann::json line = {
        {"ts", fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", utc, ms.count() % 1000)},
        {"level", std::string(level.data(), level.size())},
        {"thread", msg.thread_id},
        {"msg", std::string(msg.payload.data(), msg.payload.size())},
    };
    const std::string text =
        line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLogFormatter>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> json_log_formatter() {
  return std::make_unique<JsonLogFormatter>();
}

}  // namespace strata::cli
