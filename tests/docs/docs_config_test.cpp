// docs/CONFIGURATION.md against the configuration readers, both ways: every
// setting a reader accepts has a row, and every row names a setting a reader
// accepts. What the readers accept comes from the readers themselves (the
// keys a parse asks for, or the table a parser runs from), never from a
// list kept here.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "docs/doc_tables.h"
#include "node/stream_settings.h"
#include "server/serve_config.h"
#include "server/stream_args.h"

namespace strata::test {
namespace {

const char* kDoc = "docs/CONFIGURATION.md";

// The sections of the document whose tables name configuration file
// settings by their JSON path.
const std::set<std::string> kFileSections = {
    "The node's configuration file",
    "`strata serve`: `server`, `users`, `tls`, `logging`, `cluster`",
    "Object store (`objstore`)",
};
const char* kStreamSection = "Per-stream settings";

// Settings only: a path that another path continues ("tiering" of
// "tiering.enabled") names an object holding settings, not a setting.
std::set<std::string> settings_of(const SettingsRead& paths) {
  std::set<std::string> out;
  for (const auto& p : paths) {
    auto next = paths.upper_bound(p);
    bool holds_more = next != paths.end() && next->rfind(p + ".", 0) == 0;
    if (!holds_more) out.insert(p);
  }
  return out;
}

// Both ways, naming each difference: `accepted` (the readers' names) and
// `documented` (the rows' names, with how often each occurs).
void expect_same(const std::set<std::string>& accepted,
                 const std::map<std::string, int>& documented, const std::string& what,
                 const std::string& reader) {
  for (const auto& name : accepted) {
    EXPECT_TRUE(documented.count(name)) << what << " `" << name << "` is accepted by " << reader
                                        << " but " << kDoc << " has no row for it";
  }
  for (const auto& [name, times] : documented) {
    EXPECT_TRUE(accepted.count(name))
        << kDoc << " documents " << what << " `" << name << "`, which is not accepted by " << reader
        << " (gone, renamed or misspelt?)";
    EXPECT_EQ(times, 1) << kDoc << " documents " << what << " `" << name << "` " << times
                        << " times";
  }
}

class ConfigurationDoc : public ::testing::Test {
 protected:
  void SetUp() override {
    doc_ = read_source_file(kDoc);
    ASSERT_FALSE(doc_.empty()) << "cannot read " << kDoc;
  }
  std::string doc_;
};

TEST_F(ConfigurationDoc, EverySettingOfTheFileIsDocumentedAndEveryRowIsASetting) {
  std::map<std::string, int> documented;
  for (const auto& row : doc_rows(doc_)) {
    if (kFileSections.count(row.section)) documented[row.cells[0]] += 1;
  }
  expect_same(settings_of(server::serve_config_settings()), documented, "setting",
              "the configuration file's readers (src/node/node_config.cpp, "
              "src/server/serve_config.cpp, src/objstore/config.cpp)");
}

TEST_F(ConfigurationDoc, EveryStreamArgumentAndSettingsFieldIsDocumented) {
  std::map<std::string, int> arguments, fields;
  for (const auto& row : doc_rows(doc_)) {
    if (row.section != kStreamSection) continue;
    arguments[row.cells[0]] += 1;
    ASSERT_GE(row.cells.size(), 2u) << row.cells[0];
    // "—": an argument that sets nothing (accepted and ignored).
    if (std::string f = cell_name(row.cells[1]); !f.empty()) fields[f] += 1;
  }
  auto args = server::stream_arg_names();
  expect_same({args.begin(), args.end()}, arguments, "stream argument",
              "the Create arguments' parser (src/server/stream_args.cpp)");
  auto names = node::stream_settings_fields();
  expect_same({names.begin(), names.end()}, fields, "settings field",
              "the settings file's reader (src/node/stream_settings.cpp)");
}

}  // namespace
}  // namespace strata::test
