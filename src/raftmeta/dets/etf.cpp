#include "raftmeta/dets/etf.h"

#include <algorithm>
#include <array>
#include <string>

#include "common/endian.h"

namespace strata::raftmeta::etf {
namespace {

// Tags of the Erlang external term format (docs/formats/meta-dets.md, "Erlang
// external term format subset").
enum Tag : uint8_t {
  kSmallIntegerExt = 97,
  kIntegerExt = 98,
  kAtomExt = 100,
  kSmallTupleExt = 104,
  kLargeTupleExt = 105,
  kNilExt = 106,
  kStringExt = 107,
  kListExt = 108,
  kBinaryExt = 109,
  kSmallBigExt = 110,
  kLargeBigExt = 111,
  kSmallAtomExt = 115,
  kAtomUtf8Ext = 118,
  kSmallAtomUtf8Ext = 119,
};

// Erlang atoms hold at most 255 characters.
constexpr size_t kMaxAtomChars = 255;

// Appends the UTF-8 encoding of code point `cp` (< 0x110000).
void append_utf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(char(cp));
  } else if (cp < 0x800) {
    out->push_back(char(0xC0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xE0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(char(0xF0 | (cp >> 18)));
    out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  }
}

// Decodes one UTF-8 sequence at s[i]; returns its length and sets *cp, or
// returns 0 if the bytes there are not well-formed UTF-8 (overlong forms,
// surrogates and values past U+10FFFF included).
size_t next_utf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return uint8_t(s[i + k]); };
  const uint8_t b0 = b(0);
  size_t len;
  uint32_t min;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, min = 0x80, *cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, min = 0x800, *cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, min = 0x10000, *cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    *cp = (*cp << 6) | (b(k) & 0x3F);
  }
  if (*cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF)) return 0;
  return len;
}

class Decoder {
 public:
  Decoder(BytesView in, uint64_t base, std::string_view what) : in_(in), base_(base), what_(what) {}

  Result<Term> top() {
    if (in_.empty()) return fail(0, "empty term (no version byte)");
    if (uint8_t(in_[0]) != kVersionMagic) {
      return fail(0, "term starts with byte " + std::to_string(uint8_t(in_[0])) +
                         ", expected the external format version " + std::to_string(kVersionMagic));
    }
    pos_ = 1;
    Term t;
    STRATA_TRY(term(&t, 0));
    if (pos_ != in_.size()) {
      return fail(pos_, std::to_string(in_.size() - pos_) + " unexpected bytes after the term");
    }
    return t;
  }

 private:
  Error fail(size_t at, const std::string& msg) const {
    return Error(Errc::corrupt,
                 std::string(what_) + ": byte " + std::to_string(base_ + at) + ": " + msg);
  }

  // Fails unless n more bytes remain; `field` names what was being read.
  Status need(size_t n, const char* field) const {
    if (in_.size() - pos_ < n) {
      return fail(pos_, std::string("term truncated: ") + field + " needs " + std::to_string(n) +
                            " bytes, " + std::to_string(in_.size() - pos_) + " left");
    }
    return Status::OK();
  }
  uint8_t get8() { return uint8_t(in_[pos_++]); }
  uint16_t get16() {
    uint16_t v = get_be16(u8(in_.data() + pos_));
    pos_ += 2;
    return v;
  }
  uint32_t get32() {
    uint32_t v = get_be32(u8(in_.data() + pos_));
    pos_ += 4;
    return v;
  }

  // A count of elements that each need at least one more byte cannot exceed
  // what is left: checked before reserving, so a corrupt count cannot make
  // the decoder allocate gigabytes.
  Status check_count(uint64_t count, size_t at, const char* what) const {
    if (count > in_.size() - pos_) {
      return fail(at, std::string(what) + " claims " + std::to_string(count) +
                          " elements but only " + std::to_string(in_.size() - pos_) +
                          " bytes remain");
    }
    return Status::OK();
  }

  // One term at pos_, tag first; each kind's layout is decoded by its own
  // function below, called with the tag already read (`at` is its position).
  Status term(Term* out, int depth) {
    if (depth > kMaxDepth) {
      return fail(pos_, "terms nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    const size_t at = pos_;
    out->position = base_ + at;
    STRATA_TRY(need(1, "tag"));
    const uint8_t tag = get8();
    switch (tag) {
      case kSmallIntegerExt:
        return small_integer(out);
      case kIntegerExt:
        return integer(out);
      case kSmallBigExt:
      case kLargeBigExt:
        return big_integer(tag, at, out);
      case kAtomExt:
      case kSmallAtomExt:
      case kAtomUtf8Ext:
      case kSmallAtomUtf8Ext:
        return atom(tag, at, out);
      case kBinaryExt:
        return binary(out);
      case kSmallTupleExt:
      case kLargeTupleExt:
        return tuple(tag, at, depth, out);
      case kNilExt:
        out->value = List{};
        return Status::OK();
      case kStringExt:
        return string_ext(out);
      case kListExt:
        return list(at, depth, out);
      default:
        return fail(at, "unsupported term tag " + std::to_string(tag) + " (" + tag_name(tag) + ")");
    }
  }

  // SMALL_INTEGER_EXT: u8.
  Status small_integer(Term* out) {
    STRATA_TRY(need(1, "SMALL_INTEGER_EXT value"));
    out->value = Integer{false, get8(), {}};
    return Status::OK();
  }

  // INTEGER_EXT: i32.
  Status integer(Term* out) {
    STRATA_TRY(need(4, "INTEGER_EXT value"));
    const int32_t v = int32_t(get32());
    // Negate in 64 bits so INT32_MIN has a magnitude.
    const int64_t w = v;
    out->value = Integer{w < 0, uint64_t(w < 0 ? -w : w), {}};
    return Status::OK();
  }

  // SMALL_BIG_EXT (n:u8) / LARGE_BIG_EXT (n:u32), then sign:u8 and n
  // little-endian digits.
  Status big_integer(uint8_t tag, size_t at, Term* out) {
    uint64_t n;
    if (tag == kSmallBigExt) {
      STRATA_TRY(need(2, "SMALL_BIG_EXT header"));
      n = get8();
    } else {
      STRATA_TRY(need(5, "LARGE_BIG_EXT header"));
      n = get32();
    }
    const uint8_t sign = get8();
    if (sign > 1) {
      return fail(at, "big integer sign byte is " + std::to_string(sign) + ", expected 0 or 1");
    }
    STRATA_TRY(need(n, "big integer digits"));
    BytesView digits = in_.substr(pos_, n);
    pos_ += n;
    // Ignore zero digits at the most significant end (term_to_binary
    // never writes them, but they do not change the value).
    while (!digits.empty() && digits.back() == 0) digits.remove_suffix(1);
    Integer v;
    v.negative = sign == 1 && !digits.empty();
    if (digits.size() <= 8) {
      for (size_t i = digits.size(); i-- > 0;)
        v.magnitude = (v.magnitude << 8) | uint8_t(digits[i]);
    } else {
      v.big.assign(digits.data(), digits.size());
    }
    out->value = std::move(v);
    return Status::OK();
  }

  // ATOM_EXT / SMALL_ATOM_EXT (Latin-1) and ATOM_UTF8_EXT /
  // SMALL_ATOM_UTF8_EXT: a length (u16, or u8 for the small forms), then
  // the text. Kept as UTF-8, at most kMaxAtomChars characters.
  Status atom(uint8_t tag, size_t at, Term* out) {
    const bool small = tag == kSmallAtomExt || tag == kSmallAtomUtf8Ext;
    STRATA_TRY(need(small ? 1 : 2, "atom length"));
    const size_t len = small ? get8() : get16();
    STRATA_TRY(need(len, "atom text"));
    BytesView text = in_.substr(pos_, len);
    Atom a;
    size_t chars = 0;
    if (tag == kAtomExt || tag == kSmallAtomExt) {
      // Latin-1: every byte is one character (ASCII ones are UTF-8 as is).
      if (std::all_of(text.begin(), text.end(), [](char c) { return uint8_t(c) < 0x80; })) {
        a.name.assign(text.data(), text.size());
      } else {
        for (char c : text) append_utf8(&a.name, uint8_t(c));
      }
      chars = len;
    } else {
      for (size_t i = 0; i < text.size(); ++chars) {
        uint32_t cp;
        const size_t k = next_utf8(text, i, &cp);
        if (k == 0) return fail(pos_ + i, "atom text is not valid UTF-8");
        i += k;
      }
      a.name.assign(text.data(), text.size());
    }
    if (chars > kMaxAtomChars) {
      return fail(at, "atom of " + std::to_string(chars) + " characters (Erlang allows " +
                          std::to_string(kMaxAtomChars) + ")");
    }
    pos_ += len;
    out->value = std::move(a);
    return Status::OK();
  }

  // BINARY_EXT: len:u32, then the bytes.
  Status binary(Term* out) {
    STRATA_TRY(need(4, "BINARY_EXT length"));
    const uint32_t len = get32();
    STRATA_TRY(need(len, "binary bytes"));
    out->value = Binary{Bytes(in_.substr(pos_, len))};
    pos_ += len;
    return Status::OK();
  }

  // SMALL_TUPLE_EXT (arity:u8) / LARGE_TUPLE_EXT (arity:u32), then the
  // elements.
  Status tuple(uint8_t tag, size_t at, int depth, Term* out) {
    uint64_t arity;
    if (tag == kSmallTupleExt) {
      STRATA_TRY(need(1, "tuple arity"));
      arity = get8();
    } else {
      STRATA_TRY(need(4, "tuple arity"));
      arity = get32();
    }
    STRATA_TRY(check_count(arity, at, "tuple"));
    Tuple t;
    t.elements.resize(arity);
    for (auto& e : t.elements) STRATA_TRY(term(&e, depth + 1));
    out->value = std::move(t);
    return Status::OK();
  }

  // STRING_EXT: len:u16 bytes, a list of small integers.
  Status string_ext(Term* out) {
    STRATA_TRY(need(2, "STRING_EXT length"));
    const uint16_t len = get16();
    STRATA_TRY(need(len, "STRING_EXT bytes"));
    List l;
    l.elements.resize(len);
    for (uint16_t i = 0; i < len; ++i) {
      l.elements[i].position = base_ + pos_;
      l.elements[i].value = Integer{false, get8(), {}};
    }
    out->value = std::move(l);
    return Status::OK();
  }

  // LIST_EXT: len:u32, the elements, then the tail (kept unless it is []).
  Status list(size_t at, int depth, Term* out) {
    STRATA_TRY(need(4, "LIST_EXT length"));
    const uint32_t len = get32();
    STRATA_TRY(check_count(len, at, "list"));
    List l;
    l.elements.resize(len);
    for (auto& e : l.elements) STRATA_TRY(term(&e, depth + 1));
    Term tail;
    STRATA_TRY(term(&tail, depth + 1));
    const List* tl = tail.list();
    if (tl == nullptr || !tl->elements.empty() || !tl->tail.empty()) {
      l.tail.push_back(std::move(tail));
    }
    out->value = std::move(l);
    return Status::OK();
  }

  BytesView in_;
  uint64_t base_;
  std::string_view what_;
  size_t pos_ = 0;
};

// Letters and digits as Erlang's scanner classifies Latin-1 characters.
bool is_lower(uint32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 0xDF && c <= 0xFF && c != 0xF7);
}
bool is_name_char(uint32_t c) {
  return is_lower(c) || (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) ||
         (c >= '0' && c <= '9') || c == '_' || c == '@';
}

bool is_reserved_word(std::string_view s) {
  static constexpr std::array<std::string_view, 27> kWords = {
      "after", "and",  "andalso", "band",   "begin",   "bnot", "bor", "bsl",  "bsr",
      "bxor",  "case", "catch",   "cond",   "div",     "end",  "fun", "if",   "let",
      "not",   "of",   "or",      "orelse", "receive", "rem",  "try", "when", "xor"};
  return std::find(kWords.begin(), kWords.end(), s) != kWords.end();
}

bool atom_needs_quotes(std::string_view name) {
  if (name.empty() || is_reserved_word(name)) return true;
  bool first = true;
  for (size_t i = 0; i < name.size();) {
    uint32_t cp;
    const size_t k = next_utf8(name, i, &cp);
    if (k == 0) return true;
    if (first ? !is_lower(cp) : !is_name_char(cp)) return true;
    first = false;
    i += k;
  }
  return false;
}

// Decimal digits of a little-endian magnitude, by repeated division by 10^9.
std::string big_to_decimal(BytesView le) {
  std::vector<uint32_t> limbs;  // little-endian base-2^32
  for (size_t i = 0; i < le.size(); i += 4) {
    uint32_t v = 0;
    for (size_t k = std::min<size_t>(4, le.size() - i); k-- > 0;) v = (v << 8) | uint8_t(le[i + k]);
    limbs.push_back(v);
  }
  std::vector<uint32_t> chunks;  // base 10^9, least significant first
  while (!limbs.empty()) {
    uint64_t rem = 0;
    for (size_t i = limbs.size(); i-- > 0;) {
      const uint64_t cur = (rem << 32) | limbs[i];
      limbs[i] = uint32_t(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    chunks.push_back(uint32_t(rem));
    while (!limbs.empty() && limbs.back() == 0) limbs.pop_back();
  }
  std::string s = std::to_string(chunks.empty() ? 0 : chunks.back());
  for (size_t i = chunks.size() - 1; i-- > 0;) {
    const std::string part = std::to_string(chunks[i]);
    s.append(9 - part.size(), '0');
    s += part;
  }
  return s;
}

// Printing stops adding text once `max` characters are exceeded.
class Printer {
 public:
  explicit Printer(size_t max) : max_(max) {}
  bool full() const { return out_.size() > max_; }
  void put(std::string_view s) {
    if (!full()) out_ += s;
  }
  void term(const Term& t) {
    if (full()) return;
    if (const Integer* i = t.integer()) {
      if (i->negative) put("-");
      // Converting huge numbers is quadratic; past 1 KiB of digits bytes a
      // message gains nothing from the exact value.
      if (i->big.size() > 1024) {
        put("<integer of " + std::to_string(i->big.size()) + " bytes>");
      } else {
        put(i->fits_u64() ? std::to_string(i->magnitude) : big_to_decimal(i->big));
      }
    } else if (const Atom* a = t.atom()) {
      atom(a->name);
    } else if (const Binary* b = t.binary()) {
      put("<<");
      for (size_t k = 0; k < b->bytes.size() && !full(); ++k) {
        if (k > 0) put(",");
        put(std::to_string(uint8_t(b->bytes[k])));
      }
      put(">>");
    } else if (const Tuple* tu = t.tuple()) {
      put("{");
      for (size_t k = 0; k < tu->elements.size() && !full(); ++k) {
        if (k > 0) put(",");
        term(tu->elements[k]);
      }
      put("}");
    } else if (const List* l = t.list()) {
      put("[");
      for (size_t k = 0; k < l->elements.size() && !full(); ++k) {
        if (k > 0) put(",");
        term(l->elements[k]);
      }
      if (!l->tail.empty()) {
        put("|");
        term(l->tail[0]);
      }
      put("]");
    }
  }
  std::string take() {
    if (full()) {
      out_.resize(max_);
      out_ += "...";
    }
    return std::move(out_);
  }

 private:
  void atom(std::string_view name) {
    if (!atom_needs_quotes(name)) {
      put(name);
      return;
    }
    std::string q = "'";
    for (size_t i = 0; i < name.size();) {
      uint32_t c;
      size_t k = next_utf8(name, i, &c);
      if (k == 0) c = uint8_t(name[i]), k = 1;  // not UTF-8: print the byte
      switch (c) {
        case '\'':
          q += "\\'";
          break;
        case '\\':
          q += "\\\\";
          break;
        case '\b':
          q += "\\b";
          break;
        case '\t':
          q += "\\t";
          break;
        case '\n':
          q += "\\n";
          break;
        case '\v':
          q += "\\v";
          break;
        case '\f':
          q += "\\f";
          break;
        case '\r':
          q += "\\r";
          break;
        case 27:
          q += "\\e";
          break;
        case 127:
          q += "\\d";
          break;
        default:
          if (c < 32 || (c >= 128 && c < 160)) {
            // Other control characters print as three octal digits.
            q += '\\';
            q += char('0' + ((c >> 6) & 7));
            q += char('0' + ((c >> 3) & 7));
            q += char('0' + (c & 7));
          } else {
            q.append(name.substr(i, k));
          }
      }
      i += k;
    }
    q += "'";
    put(q);
  }

  size_t max_;
  std::string out_;
};

}  // namespace

const char* Term::kind_name() const {
  static constexpr const char* kNames[] = {"integer", "atom", "binary", "tuple", "list"};
  return kNames[value.index()];
}

Result<Term> decode(BytesView in, uint64_t base, std::string_view what) {
  return Decoder(in, base, what).top();
}

void append_canonical(const Term& t, Bytes* out) {
  ByteWriter w(out);
  // Each part is a type byte and a length, so no two terms share a string.
  if (const Integer* i = t.integer()) {
    w.u8(i->negative ? 'N' : 'P');
    if (i->fits_u64()) {
      w.be32(8);
      w.be64(i->magnitude);
    } else {
      w.be32(uint32_t(i->big.size()));
      w.bytes(i->big);
    }
  } else if (const Atom* a = t.atom()) {
    w.u8('a');
    w.be32(uint32_t(a->name.size()));
    w.bytes(a->name);
  } else if (const Binary* b = t.binary()) {
    w.u8('b');
    w.be32(uint32_t(b->bytes.size()));
    w.bytes(b->bytes);
  } else if (const Tuple* tu = t.tuple()) {
    w.u8('t');
    w.be32(uint32_t(tu->elements.size()));
    for (const Term& e : tu->elements) append_canonical(e, out);
  } else if (const List* l = t.list()) {
    w.u8(l->tail.empty() ? 'l' : 'i');
    w.be32(uint32_t(l->elements.size()));
    for (const Term& e : l->elements) append_canonical(e, out);
    if (!l->tail.empty()) append_canonical(l->tail[0], out);
  }
}

std::string to_string(const Term& t, size_t max_chars) {
  Printer p(max_chars);
  p.term(t);
  return p.take();
}

const char* tag_name(uint8_t tag) {
  switch (tag) {
    case 70:
      return "NEW_FLOAT_EXT";
    case 77:
      return "BIT_BINARY_EXT";
    case 80:
      return "compressed term";
    case 82:
      return "ATOM_CACHE_REF";
    case 88:
      return "NEW_PID_EXT";
    case 89:
      return "NEW_PORT_EXT";
    case 90:
      return "NEWER_REFERENCE_EXT";
    case 97:
      return "SMALL_INTEGER_EXT";
    case 98:
      return "INTEGER_EXT";
    case 99:
      return "FLOAT_EXT";
    case 100:
      return "ATOM_EXT";
    case 101:
      return "REFERENCE_EXT";
    case 102:
      return "PORT_EXT";
    case 103:
      return "PID_EXT";
    case 104:
      return "SMALL_TUPLE_EXT";
    case 105:
      return "LARGE_TUPLE_EXT";
    case 106:
      return "NIL_EXT";
    case 107:
      return "STRING_EXT";
    case 108:
      return "LIST_EXT";
    case 109:
      return "BINARY_EXT";
    case 110:
      return "SMALL_BIG_EXT";
    case 111:
      return "LARGE_BIG_EXT";
    case 112:
      return "NEW_FUN_EXT";
    case 113:
      return "EXPORT_EXT";
    case 114:
      return "NEW_REFERENCE_EXT";
    case 115:
      return "SMALL_ATOM_EXT";
    case 116:
      return "MAP_EXT";
    case 117:
      return "FUN_EXT";
    case 118:
      return "ATOM_UTF8_EXT";
    case 119:
      return "SMALL_ATOM_UTF8_EXT";
    case 120:
      return "V4_PORT_EXT";
    case 121:
      return "LOCAL_EXT";
    default:
      return "unknown";
  }
}

}  // namespace strata::raftmeta::etf
