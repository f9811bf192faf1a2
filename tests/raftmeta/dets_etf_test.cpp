// The Erlang external term format decoder: hand-made encodings for each tag
// and error, and term_to_binary/1 output of OTP itself compared with its own
// io:format("~w") text.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/random.h"
#include "raftmeta/dets/etf.h"
#include "raftmeta/dets_test_util.h"
#include "support/temp_dir.h"

namespace strata::raftmeta::etf {
namespace {

Bytes B(std::initializer_list<int> bytes) {
  Bytes b;
  for (int v : bytes) b.push_back(char(v));
  return b;
}

Term ok(const Bytes& in, uint64_t base = 0) {
  auto t = decode(in, base, "t.dets");
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? std::move(t).value() : Term{};
}

std::string err(const Bytes& in, uint64_t base = 0) {
  auto t = decode(in, base, "t.dets");
  EXPECT_FALSE(t.ok()) << "decoded as " << to_string(*t);
  if (t.ok()) return "";
  EXPECT_EQ(t.code(), Errc::corrupt);
  EXPECT_EQ(t.error().message.rfind("t.dets: byte ", 0), 0u) << t.error().message;
  return t.error().message;
}

TEST(Etf, SmallIntegerAndIntegerIncludingInt32Min) {
  Term t = ok(B({131, 97, 200}));
  ASSERT_NE(t.integer(), nullptr);
  EXPECT_EQ(t.integer()->magnitude, 200u);
  EXPECT_FALSE(t.integer()->negative);
  t = ok(B({131, 98, 0x80, 0, 0, 0}));
  EXPECT_TRUE(t.integer()->negative);
  EXPECT_EQ(t.integer()->magnitude, 2147483648u);
  EXPECT_EQ(to_string(t), "-2147483648");
  t = ok(B({131, 98, 0x7F, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(to_string(t), "2147483647");
  EXPECT_TRUE(t.integer()->is_u64());
}

TEST(Etf, BignumsUpTo64BitsAreValuesLargerOnesAreFlagged) {
  Term t = ok(B({131, 110, 8, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
  EXPECT_TRUE(t.integer()->is_u64());
  EXPECT_EQ(t.integer()->magnitude, UINT64_MAX);
  // Non-minimal encodings (zero high digits) mean the same value.
  t = ok(B({131, 110, 10, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(t.integer()->is_u64());
  EXPECT_EQ(t.integer()->magnitude, 5u);
  // LARGE_BIG_EXT is valid for small values too.
  t = ok(B({131, 111, 0, 0, 0, 2, 1, 0x34, 0x12}));
  EXPECT_TRUE(t.integer()->negative);
  EXPECT_EQ(t.integer()->magnitude, 0x1234u);
  // 2^64 does not fit: kept, flagged, printed exactly.
  t = ok(B({131, 110, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_FALSE(t.integer()->fits_u64());
  EXPECT_FALSE(t.integer()->is_u64());
  EXPECT_EQ(to_string(t), "18446744073709551616");
  // Negative zero is zero.
  t = ok(B({131, 110, 1, 1, 0}));
  EXPECT_FALSE(t.integer()->negative);
  EXPECT_NE(err(B({131, 110, 1, 2, 7})).find("sign byte is 2"), std::string::npos);
}

TEST(Etf, AtomsInEveryEncodingBecomeUtf8) {
  // ATOM_EXT is Latin-1: 'café' (what OTP 25 writes for it).
  Term t = ok(B({131, 100, 0, 4, 'c', 'a', 'f', 0xE9}));
  ASSERT_NE(t.atom(), nullptr);
  EXPECT_EQ(t.atom()->name, "caf\xC3\xA9");
  EXPECT_EQ(ok(B({131, 115, 2, 'o', 'k'})).atom()->name, "ok");
  // SMALL_ATOM_UTF8_EXT 'ж' and ATOM_UTF8_EXT.
  EXPECT_EQ(ok(B({131, 119, 2, 0xD0, 0xB6})).atom()->name, "\xD0\xB6");
  EXPECT_EQ(ok(B({131, 118, 0, 3, 0xE8, 0x8A, 0x82})).atom()->name, "\xE8\x8A\x82");
  EXPECT_TRUE(
      ok(B({131, 100, 0, 9, 'u', 'n', 'd', 'e', 'f', 'i', 'n', 'e', 'd'})).is_atom("undefined"));
}

TEST(Etf, InvalidAtomsAreErrorsWithTheirPosition) {
  // A lone continuation byte, an overlong '/', a surrogate.
  EXPECT_NE(err(B({131, 119, 1, 0x80}), 100).find("byte 103: atom text is not valid UTF-8"),
            std::string::npos);
  EXPECT_NE(err(B({131, 119, 2, 0xC0, 0xAF})).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(err(B({131, 119, 3, 0xED, 0xA0, 0x80})).find("not valid UTF-8"), std::string::npos);
  Bytes long_atom = B({131, 100, 1, 0});
  long_atom.append(256, 'a');
  EXPECT_NE(err(long_atom).find("atom of 256 characters"), std::string::npos);
}

TEST(Etf, BinariesTuplesAndLists) {
  Term t = ok(B({131, 104, 3, 109, 0, 0, 0, 2, 'h', 'i', 106, 107, 0, 2, 1, 2}), 1000);
  ASSERT_NE(t.tuple(), nullptr);
  ASSERT_EQ(t.tuple()->elements.size(), 3u);
  EXPECT_EQ(t.position, 1001u);
  EXPECT_EQ(t.tuple()->elements[0].binary()->bytes, "hi");
  EXPECT_EQ(t.tuple()->elements[0].position, 1003u);
  EXPECT_EQ(t.tuple()->elements[1].list()->elements.size(), 0u);
  EXPECT_EQ(t.tuple()->elements[1].position, 1010u);
  EXPECT_EQ(to_string(t), "{<<104,105>>,[],[1,2]}");
  // [a | b] and [1 | []] (proper).
  EXPECT_EQ(to_string(ok(B({131, 108, 0, 0, 0, 1, 115, 1, 'a', 115, 1, 'b'}))), "[a|b]");
  Term proper = ok(B({131, 108, 0, 0, 0, 1, 97, 1, 106}));
  EXPECT_TRUE(proper.list()->tail.empty());
  EXPECT_EQ(to_string(proper), "[1]");
  // LARGE_TUPLE_EXT with arity 0.
  EXPECT_EQ(to_string(ok(B({131, 105, 0, 0, 0, 0}))), "{}");
}

TEST(Etf, EveryTruncationIsAnErrorNamingAPositionInside) {
  const Bytes full =
      B({131, 104, 4, 109, 0, 0, 0,   3,   'u', 'i', 'd', 110, 8, 0, 1, 2,  3, 4, 5, 6, 7,
         8,   104, 2, 100, 0, 1, 'a', 119, 1,   'b', 108, 0,   0, 0, 1, 98, 0, 0, 1, 0, 106});
  ok(full);
  for (size_t n = 0; n < full.size(); ++n) {
    const std::string m = err(full.substr(0, n), 500);
    const size_t at = m.find("byte ");
    ASSERT_NE(at, std::string::npos);
    const uint64_t pos = std::stoull(m.substr(at + 5));
    EXPECT_GE(pos, 500u);
    EXPECT_LE(pos, 500u + n) << m;
  }
}

TEST(Etf, StructuralErrors) {
  EXPECT_NE(err(Bytes()).find("empty term"), std::string::npos);
  EXPECT_NE(err(B({130, 97, 1})).find("byte 0: term starts with byte 130"), std::string::npos);
  EXPECT_NE(err(B({131, 97, 1, 0})).find("byte 3: 1 unexpected bytes after the term"),
            std::string::npos);
  // A map, named by tag and position (inside a tuple).
  EXPECT_NE(err(B({131, 104, 1, 116, 0, 0, 0, 0}), 10)
                .find("byte 13: unsupported term tag 116 (MAP_EXT)"),
            std::string::npos);
  EXPECT_NE(err(B({131, 80, 0, 0, 0, 1, 120, 156})).find("tag 80 (compressed term)"),
            std::string::npos);
  EXPECT_NE(err(B({131, 200})).find("tag 200 (unknown)"), std::string::npos);
}

TEST(Etf, HostileCountsAndDepthAreBounded) {
  // A list claiming 4 G elements in a few bytes: rejected before allocating.
  EXPECT_NE(err(B({131, 108, 0xFF, 0xFF, 0xFF, 0xFF, 106})).find("claims 4294967295 elements"),
            std::string::npos);
  EXPECT_NE(err(B({131, 105, 0xFF, 0xFF, 0xFF, 0xFF})).find("claims"), std::string::npos);
  // 100 nested 1-tuples.
  Bytes deep = B({131});
  for (int i = 0; i < 100; ++i) deep += B({104, 1});
  deep += B({106});
  EXPECT_NE(err(deep).find("nested deeper than 64"), std::string::npos);
}

TEST(Etf, PrinterQuotesAtomsLikeErlangAndCutsLongText) {
  Term t;
  t.value = Atom{"it's"};
  EXPECT_EQ(to_string(t), "'it\\'s'");
  t.value = Atom{std::string("a\x01\nb", 4)};
  EXPECT_EQ(to_string(t), "'a\\001\\nb'");
  t.value = Atom{"receive"};
  EXPECT_EQ(to_string(t), "'receive'");
  t.value = Binary{Bytes(1000, 'x')};
  const std::string s = to_string(t, 20);
  EXPECT_EQ(s.size(), 23u);
  EXPECT_EQ(s.substr(20), "...");
}

TEST(Etf, CanonicalBytesIdentifyTermsNotEncodings) {
  const auto canon = [](const Bytes& in) {
    Bytes out;
    append_canonical(ok(in), &out);
    return out;
  };
  // One atom in three encodings; one integer in two.
  EXPECT_EQ(canon(B({131, 100, 0, 1, 'a'})), canon(B({131, 119, 1, 'a'})));
  EXPECT_EQ(canon(B({131, 100, 0, 1, 'a'})), canon(B({131, 115, 1, 'a'})));
  EXPECT_EQ(canon(B({131, 97, 7})), canon(B({131, 110, 1, 0, 7})));
  // Different terms differ.
  const std::vector<Bytes> distinct = {
      B({131, 100, 0, 1, 'a'}),                        // a
      B({131, 109, 0, 0, 0, 1, 'a'}),                  // <<"a">>
      B({131, 107, 0, 1, 'a'}),                        // "a" = [97]
      B({131, 97, 97}),                                // 97
      B({131, 98, 0xFF, 0xFF, 0xFF, 0x9F}),            // -97
      B({131, 104, 1, 97, 97}),                        // {97}
      B({131, 108, 0, 0, 0, 1, 97, 97, 97, 98}),       // [97|98]
      B({131, 108, 0, 0, 0, 2, 97, 97, 97, 98, 106}),  // [97,98]
      B({131, 106}),                                   // []
      B({131, 104, 0}),                                // {}
  };
  for (size_t i = 0; i < distinct.size(); ++i) {
    for (size_t j = i + 1; j < distinct.size(); ++j) {
      EXPECT_NE(canon(distinct[i]), canon(distinct[j])) << i << " vs " << j;
    }
  }
}

// term_to_binary/1 of OTP 25 for integers at every encoding boundary,
// atoms, binaries, tuples and lists: decoded and printed like ~w; terms of
// other types are errors naming their tag.
TEST(Etf, MatchesErlangTermToBinaryAndPrinting) {
  strata::test::TempDir dir;
  const std::string out = dir.sub("terms.txt");
  const std::string failure = dets::test::run_dets_gen("terms", {"out=" + out});
  ASSERT_EQ(failure, "");
  std::ifstream in(out);
  int decoded = 0, rejected = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string hex, text, kind;
    ASSERT_TRUE(std::getline(ls, hex, '\t') && std::getline(ls, text, '\t') &&
                std::getline(ls, kind, '\t'))
        << line;
    Bytes bin;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
      bin.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
    auto t = decode(bin, 0, "sample");
    if (kind == "int" || kind == "bigint" || kind == "atom" || kind == "binary" ||
        kind == "tuple" || kind == "list") {
      ASSERT_TRUE(t.ok()) << text << ": " << t.error().to_string();
      EXPECT_EQ(to_string(*t), text) << hex;
      if (kind == "int") {
        ASSERT_NE(t->integer(), nullptr);
        EXPECT_TRUE(t->integer()->fits_u64()) << text;
        EXPECT_EQ(t->integer()->negative, text[0] == '-');
        EXPECT_EQ(std::to_string(t->integer()->magnitude), text.substr(text[0] == '-' ? 1 : 0));
      }
      if (kind == "bigint") {
        EXPECT_FALSE(t->integer()->fits_u64()) << text;
      }
      ++decoded;
    } else {
      ASSERT_FALSE(t.ok()) << kind << " decoded as " << to_string(*t);
      EXPECT_NE(t.error().message.find("unsupported term tag"), std::string::npos)
          << t.error().message;
      ++rejected;
    }
  }
  EXPECT_EQ(decoded, 48);
  EXPECT_EQ(rejected, 6);
}

// Random damage to real encodings: an error or a term, never a crash (the
// sanitizer build checks memory safety).
TEST(Etf, RandomCorruptionNeverCrashes) {
  const Bytes sample = B({131, 104, 4, 109, 0,  0, 0,   3, 'u', 'i', 'd', 110, 8,   0, 1,   2,
                          3,   4,   5, 6,   7,  8, 104, 2, 100, 0,   1,   'a', 119, 1, 'b', 108,
                          0,   0,   0, 2,   98, 0, 0,   1, 0,   107, 0,   2,   1,   2, 106});
  Random rng(strata::test::test_seed(42));
  const int n = strata::test::scaled(20000);
  int errors = 0;
  for (int i = 0; i < n; ++i) {
    Bytes b = sample;
    const int flips = 1 + int(rng.uniform(4));
    for (int f = 0; f < flips; ++f) b[rng.uniform(b.size())] = char(rng.uniform(256));
    if (rng.uniform(4) == 0) b.resize(rng.uniform(b.size()));
    auto t = decode(b, 0, "fuzz");
    if (!t.ok()) {
      ++errors;
      EXPECT_EQ(t.error().message.rfind("fuzz: byte ", 0), 0u) << t.error().message;
    } else {
      to_string(*t, 1000);
    }
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace strata::raftmeta::etf
