#include "cli/log_output.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>

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

// The message with every control character (C0 but TAB, and DEL) as \xNN:
// one event per line, whatever bytes a stream, user or vhost name brought
// in (a stored name's line feed, common/stream_name.h, or a client's
// terminal escapes).
class EscapedPayload final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) {
        fmt::format_to(std::back_inserter(dest), "\\x{:02x}", u);
      } else {
        dest.push_back(c);
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedPayload>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> text_log_formatter() {
  auto f = std::make_unique<spdlog::pattern_formatter>();
  // spdlog's default pattern, with the message escaped.
  f->add_flag<EscapedPayload>('*').set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %*");
  return f;
}

std::unique_ptr<spdlog::formatter> json_log_formatter() {
  return std::make_unique<JsonLogFormatter>();
}

}  // namespace strata::cli
