// A stream name as a path component or key segment
// (common/name_component.h): names strata accepted before are their own
// component, everything else is escaped or hashed, decoding gives the name
// back, no two names share a component, and no component is ever a
// temporary file, "." or "..", or a hidden entry.
#include "common/name_component.h"

#include <gtest/gtest.h>

#include <map>

#include "common/random.h"
#include "common/stream_name.h"
#include "common/utf8.h"

namespace strata {
namespace {

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// What every component must be, for any name.
void expect_sound(const std::string& name) {
  SCOPED_TRACE(printable_name(name));
  const std::string c = name_component(name);
  ASSERT_FALSE(c.empty());
  EXPECT_LE(c.size(), kMaxNameComponentBytes);
  EXPECT_NE(c[0], '.');
  for (char ch : c) {
    const bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                       (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '~' ||
                       ch == '-' || ch == '%';
    ASSERT_TRUE(plain) << c;
  }
  EXPECT_EQ(c.find("%t"), std::string::npos) << c;
  EXPECT_TRUE(is_name_component(c)) << c;
  auto back = name_of_component(c);
  if (back) {
    EXPECT_EQ(*back, name);
    EXPECT_FALSE(is_hashed_component(c)) << c;
  } else {
    EXPECT_TRUE(is_hashed_component(c)) << c;
    EXPECT_GT(name.size(), kHashedPrefixBytes / 3);
  }
  // Its temporary file and the registry's entries are never a component.
  EXPECT_FALSE(is_name_component(c + std::string(kTempSuffix)));
  EXPECT_FALSE(is_name_component(".creating-" + c));
  EXPECT_FALSE(is_name_component(".deleting-" + c + ".0"));
}

// A random valid name: ASCII (the separators and the escape character
// often), 2-, 3- and 4-byte characters, 1..255 bytes.
std::string random_name(Random& r) {
  static const std::vector<std::string> pieces = {"a",
                                                  "Z",
                                                  "0",
                                                  ".",
                                                  "_",
                                                  "~",
                                                  "-",
                                                  " ",
                                                  "/",
                                                  "%",
                                                  "%%",
                                                  "%25",
                                                  "%2E",
                                                  "+",
                                                  "\\",
                                                  "\"",
                                                  "tmp",
                                                  ".tmp",
                                                  "%tmp",
                                                  "\t",
                                                  "\xc3\xa9",
                                                  "\xe2\x82\xac",
                                                  "\xf0\x9f\x98\x80",
                                                  "\x7f"};
  const size_t target = 1 + r.uniform(r.chance(1, 4) ? 255 : 40);
  std::string out;
  while (out.size() < target) {
    const std::string& p = pieces[r.uniform(pieces.size())];
    if (out.size() + p.size() > kMaxStreamNameBytes) break;
    out += p;
  }
  if (out.empty() || !validate_stream_name(out).ok()) return "n";
  return out;
}

TEST(NameComponent, NamesOfTheOldAlphabetAreTheirOwnComponent) {
  for (const std::string& n :
       {std::string("orders-1"), std::string("AZaz09._~-"), std::string("x.tmp"),
        std::string("a..b"), std::string("a."), std::string("~"), std::string(200, 'z')}) {
    EXPECT_EQ(name_component(n), n);
    EXPECT_EQ(name_of_component(n), n);
  }
  Random r(7);
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-";
  for (int i = 0; i < 10000; ++i) {
    std::string n;
    const size_t len = 1 + r.uniform(200);
    while (n.size() < len) n.push_back(alphabet[r.uniform(alphabet.size())]);
    if (n[0] == '.') n[0] = 'x';
    ASSERT_EQ(name_component(n), n);
  }
}

TEST(NameComponent, EverythingElseIsEscaped) {
  EXPECT_EQ(name_component("orders 2026/Q1 \xe2\x82\xac"), "orders%202026%2FQ1%20%E2%82%AC");
  EXPECT_EQ(name_component("."), "%2E");
  EXPECT_EQ(name_component(".."), "%2E.");
  EXPECT_EQ(name_component(".creating-x"), "%2Ecreating-x");
  EXPECT_EQ(name_component("a/b"), "a%2Fb");
  EXPECT_EQ(name_component("a%2Fb"), "a%252Fb");
  EXPECT_EQ(name_component("%"), "%25");
  EXPECT_EQ(name_component("x%tmp"), "x%25tmp");
  EXPECT_EQ(name_component("\xf0\x9f\x98\x80"), "%F0%9F%98%80");
  EXPECT_EQ(name_of_component("orders%202026%2FQ1%20%E2%82%AC"), "orders 2026/Q1 \xe2\x82\xac");
  EXPECT_EQ(name_of_component("%2E."), "..");
}

TEST(NameComponent, LongNamesAreHashedWithAReadablePrefix) {
  // 255 'a': the first 134 kept, then "%%" and SHA-256("a" x 255).
  EXPECT_EQ(
      name_component(std::string(255, 'a')),
      std::string(134, 'a') + "%%b0f3323e7a3cad8ae6778340cc2a17ae0cb31c818df3767cda7c3dd423725e90");
  EXPECT_EQ(name_component(std::string(201, 'a')).size(), 200u);
  // 255 bytes of 4-byte characters: 12 escaped bytes each, so 11 whole
  // characters (132 bytes) fit the prefix; never half a character.
  const std::string emoji = repeat("\xf0\x9f\x98\x80", 63) + "abc";
  const std::string c = name_component(emoji);
  EXPECT_EQ(c.substr(0, 134), repeat("%F0%9F%98%80", 11) + "%%");
  EXPECT_EQ(c.size(), 132u + 2 + 64);
  EXPECT_FALSE(name_of_component(c));
  EXPECT_TRUE(is_hashed_component(c));
  // A short name escaping past the limit is hashed too (67 x 3 bytes).
  const std::string euros = repeat("\xe2\x82\xac", 67);
  EXPECT_TRUE(is_hashed_component(name_component(euros)));
  EXPECT_EQ(name_component(repeat("\xe2\x82\xac", 22)).size(), 198u);  // still escaped
}

TEST(NameComponent, RandomNamesRoundTripAndNeverShareAComponent) {
  Random r(20260101);
  std::map<std::string, std::string> seen;  // component -> name
  auto add = [&](const std::string& name) {
    ASSERT_TRUE(validate_stream_name(name).ok()) << printable_name(name);
    expect_sound(name);
    const std::string c = name_component(name);
    auto [it, fresh] = seen.emplace(c, name);
    EXPECT_TRUE(fresh || it->second == name)
        << printable_name(name) << " and " << printable_name(it->second) << " share " << c;
  };
  // Adversarial: temporary-file lookalikes, dot names, the escape in
  // every role, names equal to other names' components, hashed forms used
  // as names, long names that differ only after the hashed prefix.
  std::vector<std::string> hard = {
      "a",     "a.tmp",   "a%tmp", "a%25tmp", "a.json",      "a.json.tmp",    ".",
      "..",    "...",     "%2E",   "%2E.",    ".creating-a", ".deleting-a.0", "a/b",
      "a%2Fb", "a%252Fb", "%",     "%%",      "%25",         "%%25",          "~",
      "-",     "%t",      "amq",   "A",       "a%",          "a%4",           "a%41",
      "aA"};
  const std::string long_a = std::string(255, 'a');
  hard.push_back(long_a);
  hard.push_back(name_component(long_a));  // a hashed form, as a name
  for (char last = 'a'; last <= 'z'; ++last) hard.push_back(std::string(254, 'a') + last);
  hard.push_back(repeat("\xf0\x9f\x98\x80", 63) + "abc");
  hard.push_back(repeat("\xf0\x9f\x98\x80", 63) + "abd");
  hard.push_back(repeat("\xe2\x82\xac", 85));
  for (const auto& h : std::vector<std::string>(hard)) {
    hard.push_back(name_component(h));           // another name's component as a name
    hard.push_back(name_component(h) + "%tmp");  // its temporary file's name as a name
  }
  for (const auto& h : hard) {
    if (validate_stream_name(h).ok()) add(h);
  }
  const int n = 200000;
  for (int i = 0; i < n; ++i) add(random_name(r));
  EXPECT_GT(seen.size(), size_t(n / 2));
}

TEST(NameComponent, DecodingRefusesWhatNoNameEncodesTo) {
  const std::string hash(64, 'a');
  for (const std::string& bad :
       {std::string(""), std::string(".x"), std::string("%2e"), std::string("%41"),
        std::string("a%"), std::string("a%4"), std::string("a%G1"), std::string("a b"),
        std::string("a/b"), std::string(201, 'a'), std::string("x%tmp"), std::string("x.tmp%tmp"),
        "a%%" + hash, "%%" + hash}) {
    EXPECT_FALSE(name_of_component(bad)) << bad;
  }
  EXPECT_TRUE(is_hashed_component("a%%" + hash));
  for (const std::string& bad : {"%%" + hash, "a%%" + hash + "0", "a%%" + hash.substr(1),
                                 "a%%" + std::string(64, 'A'), ".a%%" + hash, "a%2e%%" + hash,
                                 std::string(135, 'a') + "%%" + hash, "a%%" + hash + "%tmp"}) {
    EXPECT_FALSE(is_hashed_component(bad)) << bad;
  }
}

}  // namespace
}  // namespace strata
