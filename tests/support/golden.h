// Golden vectors: checked-in byte strings that pin a format, so that a change
// to an encoder fails a test instead of silently changing what is on disk or
// on the wire. A vector is a text file of hex bytes, one field per line,
// annotated from the format documents (docs/FORMATS.md lists them):
//
//   # anything after '#' is a comment
//   #= chunk header          a structure starts: '@' offsets count from here
//   5343484b   # @0 magic    the line's first byte must be at offset 0
//   xxxxxxxx   # @4 nonce    'xx' is a byte the format does not pin (random)
//
// The '@' offsets are the ones in the document's tables; the loader checks
// each against the bytes before it, so a vector whose fields do not line up
// with the documented offsets fails to load.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "common/bytes.h"

namespace strata::test::golden {

struct Line {
  size_t number = 0;  // 1-based line in the file
  size_t begin = 0;   // byte offset (whole vector) of the line's first byte
  size_t end = 0;     // one past its last byte
  std::string comment;
  std::string structure;  // name given by the last "#=" line
  std::string field;      // the word after "@N", if any
};

struct Vector {
  std::string path;
  Bytes bytes;                        // 'xx' bytes are 0 here
  std::vector<bool> pinned;           // false for 'xx'
  std::vector<Line> lines;            // lines holding bytes
  std::vector<std::string> problems;  // malformed text or misplaced '@' offsets

  // The data line holding byte `at`, or nullptr.
  const Line* line_of(size_t at) const {
    for (const Line& l : lines) {
      if (at >= l.begin && at < l.end) return &l;
    }
    return nullptr;
  }
};

inline std::string vector_path(const std::string& relative) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/" + relative;
}

inline int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Loads tests/<relative>. Problems (file missing, bad hex, an '@' offset
// that disagrees with the bytes before it) are collected in `problems`.
inline Vector load(const std::string& relative) {
  Vector v;
  v.path = vector_path(relative);
  std::ifstream in(v.path);
  if (!in) {
    v.problems.push_back(v.path + ": cannot be read");
    return v;
  }
  size_t structure_start = 0;
  std::string structure;
  std::string text;
  for (size_t number = 1; std::getline(in, text); ++number) {
    const size_t hash = text.find('#');
    const std::string data = text.substr(0, hash);
    const std::string comment = hash == std::string::npos ? "" : text.substr(hash + 1);
    const std::string where = v.path + ":" + std::to_string(number) + ": ";
    if (data.find_first_not_of(" \t\r") == std::string::npos) {
      if (comment.rfind("=", 0) == 0) {
        structure_start = v.bytes.size();
        const size_t b = comment.find_first_not_of(" =");
        const size_t e = comment.find_last_not_of(" \r");
        structure = b == std::string::npos ? "" : comment.substr(b, e - b + 1);
      }
      continue;
    }
    Line line{number, v.bytes.size(), 0, comment, structure, ""};
    std::string digits;
    for (char c : data) {
      if (!std::isspace(static_cast<unsigned char>(c))) digits += c;
    }
    if (digits.size() % 2 != 0) {
      v.problems.push_back(where + "odd number of hex digits");
      continue;
    }
    for (size_t i = 0; i < digits.size(); i += 2) {
      if (digits[i] == 'x' && digits[i + 1] == 'x') {
        v.bytes.push_back('\0');
        v.pinned.push_back(false);
        continue;
      }
      const int hi = hex_digit(digits[i]), lo = hex_digit(digits[i + 1]);
      if (hi < 0 || lo < 0) {
        v.problems.push_back(where + "'" + digits.substr(i, 2) + "' is not a hex byte");
        break;
      }
      v.bytes.push_back(char(hi * 16 + lo));
      v.pinned.push_back(true);
    }
    line.end = v.bytes.size();
    // "# @N field": the field is documented at offset N of its structure.
    const size_t at = comment.find_first_not_of(' ');
    if (at != std::string::npos && comment[at] == '@') {
      size_t documented = 0;
      std::istringstream(comment.substr(at + 1)) >> documented >> line.field;
      while (!line.field.empty() && (line.field.back() == ':' || line.field.back() == ',')) {
        line.field.pop_back();
      }
      if (line.begin - structure_start != documented) {
        v.problems.push_back(where + "field documented at offset " + std::to_string(documented) +
                             " is at offset " + std::to_string(line.begin - structure_start));
      }
    }
    v.lines.push_back(std::move(line));
  }
  if (v.bytes.empty()) v.problems.push_back(v.path + ": holds no bytes");
  return v;
}

// The line of the field annotated "@N <name>" in structure `structure`. A
// name "reserved@60" picks the field of that name documented at offset 60.
inline const Line* find_field(const Vector& v, const std::string& structure,
                              const std::string& name) {
  const size_t at = name.find('@');
  const std::string plain = name.substr(0, at);
  const std::string offset = at == std::string::npos ? "" : name.substr(at + 1);
  for (const Line& l : v.lines) {
    if (l.structure != structure || l.field != plain) continue;
    if (!offset.empty() && l.comment.find("@" + offset + " ") == std::string::npos) continue;
    return &l;
  }
  ADD_FAILURE() << v.path << ": no field '" << name << "' in structure '" << structure << "'";
  return nullptr;
}

// The big-endian value of a field (at most 8 bytes). Reading fields through
// the annotations, at the document's offsets, checks the layout
// independently of the decoders.
inline uint64_t field(const Vector& v, const std::string& structure, const std::string& name) {
  if (const Line* found = find_field(v, structure, name)) {
    const Line& l = *found;
    EXPECT_LE(l.end - l.begin, 8u) << v.path << ":" << l.number << ": field wider than 8 bytes";
    uint64_t x = 0;
    for (size_t i = l.begin; i < l.end && i < l.begin + 8; ++i) {
      x = (x << 8) | uint8_t(v.bytes[i]);
    }
    return x;
  }
  return 0;
}

struct FieldValue {
  const char* name;
  uint64_t value;
};
// Checks each named field of `structure` against its expected value.
inline void expect_fields(const Vector& v, const std::string& structure,
                          std::initializer_list<FieldValue> expected) {
  for (const FieldValue& f : expected) {
    EXPECT_EQ(field(v, structure, f.name), f.value)
        << v.path << ": " << structure << " field " << f.name;
  }
}

// The bytes of the field annotated "@N <name>" in `structure` (any width).
inline Bytes field_bytes(const Vector& v, const std::string& structure, const std::string& name) {
  const Line* l = find_field(v, structure, name);
  return l ? v.bytes.substr(l->begin, l->end - l->begin) : Bytes();
}

inline std::string hex_dump(BytesView b, size_t max_bytes = 512) {
  std::string s;
  for (size_t i = 0; i < b.size() && i < max_bytes; i += 16) {
    s += "  " + to_hex(b.substr(i, std::min<size_t>(16, b.size() - i))) + "\n";
  }
  if (b.size() > max_bytes) s += "  ... (" + std::to_string(b.size()) + " bytes)\n";
  return s;
}

// Success if `actual` has the vector's length and every pinned byte; else a
// message naming the first differing byte and the field (line) it is in.
// With STRATA_GOLDEN_ACTUAL_DIR set, the actual bytes are also written there
// as <vector name>.actual (hex), for updating a vector after a deliberate
// format change (which must also update the format's document under docs/formats/).
inline ::testing::AssertionResult matches(const Vector& v, BytesView actual) {
  if (const char* dir = std::getenv("STRATA_GOLDEN_ACTUAL_DIR"); dir != nullptr && *dir) {
    const std::string name = v.path.substr(v.path.find_last_of('/') + 1);
    std::ofstream(std::string(dir) + "/" + name + ".actual") << to_hex(actual) << "\n";
  }
  if (!v.problems.empty()) {
    std::string m = "golden vector is malformed:";
    for (const auto& p : v.problems) m += "\n  " + p;
    return ::testing::AssertionFailure() << m;
  }
  for (size_t i = 0; i < actual.size() && i < v.bytes.size(); ++i) {
    if (!v.pinned[i] || actual[i] == v.bytes[i]) continue;
    const Line* l = v.line_of(i);
    return ::testing::AssertionFailure()
           << v.path << ": byte " << i << " (line " << l->number << ":" << l->comment << ") is 0x"
           << to_hex(actual.substr(i, 1)) << ", the vector has 0x"
           << to_hex(BytesView(v.bytes).substr(i, 1))
           << "\n  that line's bytes: " << to_hex(actual.substr(l->begin, l->end - l->begin))
           << "\n  actual bytes:\n"
           << hex_dump(actual);
  }
  if (actual.size() != v.bytes.size()) {
    return ::testing::AssertionFailure()
           << v.path << ": " << actual.size() << " bytes, the vector has " << v.bytes.size()
           << "\n  actual bytes:\n"
           << hex_dump(actual);
  }
  return ::testing::AssertionSuccess();
}

// The vector's bytes, for decoding; requires every byte pinned.
inline Bytes pinned_bytes(const Vector& v) {
  EXPECT_EQ(std::count(v.pinned.begin(), v.pinned.end(), false), 0)
      << v.path << " has unpinned ('xx') bytes";
  return v.bytes;
}

}  // namespace strata::test::golden
