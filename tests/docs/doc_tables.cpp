#include "docs/doc_tables.h"

#include <fstream>
#include <sstream>

namespace strata::test {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// The cells of a table row "| a | b |"; a `|` escaped as `\|` stays in its
// cell.
std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += '|';
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(trim(cur));
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return cells;
}

}  // namespace

std::string read_source_file(const std::string& path) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/" + path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string cell_name(const std::string& cell) {
  if (cell.size() < 3 || cell.front() != '`' || cell.back() != '`') return "";
  std::string name = cell.substr(1, cell.size() - 2);
  if (name.find('`') != std::string::npos) return "";
  return name;
}

std::vector<DocRow> doc_rows(const std::string& markdown) {
  std::vector<DocRow> rows;
  std::istringstream in(markdown);
  std::string line, section;
  bool in_code = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    if (in_code) continue;
    if (line.rfind("## ", 0) == 0) section = line.substr(3);
    if (line.rfind("|", 0) != 0) continue;
    std::vector<std::string> cells = split_row(line);
    if (cells.empty()) continue;
    std::string name = cell_name(cells[0]);
    if (name.empty()) continue;
    cells[0] = name;
    rows.push_back({section, std::move(cells)});
  }
  return rows;
}

std::set<std::string> comma_list(const std::string& cell) {
  std::set<std::string> out;
  std::stringstream ss(cell);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (!item.empty()) out.insert(item);
  }
  return out;
}

}  // namespace strata::test
