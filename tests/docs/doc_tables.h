// Reading the reference documents' tables for the docs tests: the rows of
// every Markdown table whose first cell is one name in backquotes, with the
// "## " section each is in.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace strata::test {

struct DocRow {
  std::string section;             // the text of the "## " heading above it
  std::vector<std::string> cells;  // trimmed; cells[0] is the name, backquotes removed
};

// The document at `path` relative to the source tree; "" if unreadable.
std::string read_source_file(const std::string& path);

// Every row of `markdown`'s tables whose first cell is exactly one
// backquoted name (`strata_log_first_offset`, `tiering.confirm`).
std::vector<DocRow> doc_rows(const std::string& markdown);

// The backquoted name a cell is, or "" when it is anything else.
std::string cell_name(const std::string& cell);

// "a, b" -> {"a", "b"}; "" -> {}.
std::set<std::string> comma_list(const std::string& cell);

}  // namespace strata::test
