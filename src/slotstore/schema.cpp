#include "slotstore/schema.h"

#include <fmt/format.h>

#include <set>

#include "common/assert.h"

namespace strata::slotstore {

FieldType FieldType::u64() {
  return FieldType{{Element{ElementKind::u64, 0}}, false};
}
FieldType FieldType::bytes(uint16_t max_len) {
  return FieldType{{Element{ElementKind::bytes, max_len}}, false};
}
FieldType FieldType::interned(uint16_t max_len) {
  return FieldType{{Element{ElementKind::interned, max_len}}, false};
}
FieldType FieldType::tuple_of(std::vector<FieldType> scalars) {
  FieldType t;
  t.tuple = true;
  for (auto& s : scalars) {
    // A nested tuple is flattened into an invalid element so validate()
    // reports it instead of silently changing the shape.
    if (s.tuple || s.elements.size() != 1) {
      t.elements.push_back(Element{ElementKind(0), 0});
    } else {
      t.elements.push_back(s.elements[0]);
    }
  }
  return t;
}

namespace {

std::string element_name(const Element& e) {
  switch (e.kind) {
    case ElementKind::u64:
      return "u64";
    case ElementKind::bytes:
      return fmt::format("bytes({})", e.max_len);
    case ElementKind::interned:
      return fmt::format("interned({})", e.max_len);
  }
  return fmt::format("kind{}", int(e.kind));
}

std::string type_name(const FieldType& t) {
  if (!t.tuple) return t.elements.empty() ? "?" : element_name(t.elements[0]);
  std::string s = "(";
  for (size_t i = 0; i < t.elements.size(); ++i) {
    if (i) s += ",";
    s += element_name(t.elements[i]);
  }
  return s + ")";
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

std::string scalar_string(const Scalar& s) {
  if (s.index() == 0) return std::to_string(std::get<0>(s));
  return quote(std::get<1>(s));
}

}  // namespace

std::string FieldType::to_string() const {
  return type_name(*this);
}

Status Schema::validate() const {
  if (max_key_len < 1) return Error(Errc::invalid_argument, "schema: max_key_len must be >= 1");
  if (fields.size() > kMaxFields) {
    return Error(Errc::invalid_argument,
                 fmt::format("schema: {} fields, at most {} allowed", fields.size(), kMaxFields));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& f = fields[i];
    auto bad = [&](const std::string& why) {
      return Error(Errc::invalid_argument, fmt::format("schema field {} '{}': {}", i, f.name, why));
    };
    if (f.name.empty() || f.name.size() > kMaxFieldNameLen) {
      return bad(fmt::format("name must be 1..{} bytes", kMaxFieldNameLen));
    }
    if (!names.insert(f.name).second) return bad("duplicate name");
    if (f.frequency != Frequency::low && f.frequency != Frequency::high)
      return bad("bad frequency");
    if (f.type.elements.empty()) return bad("no elements");
    if (!f.type.tuple && f.type.elements.size() != 1)
      return bad("a scalar has exactly one element");
    if (f.type.elements.size() > kMaxTupleElements) {
      return bad(fmt::format("tuple of {} elements, at most {}", f.type.elements.size(),
                             kMaxTupleElements));
    }
    for (const Element& e : f.type.elements) {
      switch (e.kind) {
        case ElementKind::u64:
          if (e.max_len != 0) return bad("u64 takes no length");
          break;
        case ElementKind::bytes:
          if (e.max_len < 1 || e.max_len > kMaxBytesLen) {
            return bad(fmt::format("bytes(n) needs 1 <= n <= {}", kMaxBytesLen));
          }
          break;
        case ElementKind::interned:
          if (e.max_len < 1 || e.max_len > kMaxInternedLen) {
            return bad(fmt::format("interned(n) needs 1 <= n <= {}", kMaxInternedLen));
          }
          break;
        default:
          return bad("unknown element kind (nested tuples are not supported)");
      }
    }
  }
  return Status::OK();
}

Result<FieldId> Schema::field_id(std::string_view name) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return FieldId(i);
  }
  return Error(Errc::unknown_field,
               fmt::format("unknown field '{}' (schema: {})", name, to_string()));
}

Bytes Schema::encode() const {
  Bytes out;
  ByteWriter w(&out);
  w.u8(1);  // encoding version of this description
  w.u8(max_key_len);
  w.u8(uint8_t(fields.size()));
  for (const FieldSpec& f : fields) {
    w.u8(uint8_t(f.name.size()));
    w.bytes(f.name);
    w.u8(uint8_t(f.frequency));
    w.u8(f.type.tuple ? 1 : 0);
    w.u8(uint8_t(f.type.elements.size()));
    for (const Element& e : f.type.elements) {
      w.u8(uint8_t(e.kind));
      w.be16(e.max_len);
    }
  }
  return out;
}

Result<Schema> Schema::decode(BytesView in) {
  ByteReader r(in, "slotstore schema");
  Schema s;
  uint8_t ver = 0, nfields = 0;
  r.u8(&ver, "encoding version");
  r.u8(&s.max_key_len, "max_key_len");
  r.u8(&nfields, "field count");
  if (r.failed()) return r.error();
  if (ver != 1) {
    return Error(Errc::unsupported_version, fmt::format("schema encoding version {}", int(ver)));
  }
  for (size_t i = 0; i < nfields; ++i) {
    FieldSpec f;
    uint8_t name_len = 0, freq = 0, tuple = 0, nelem = 0;
    BytesView name;
    r.u8(&name_len, "field name length");
    r.bytes(name_len, &name, "field name");
    r.u8(&freq, "frequency");
    r.u8(&tuple, "tuple flag");
    r.u8(&nelem, "element count");
    if (r.failed()) return r.error();
    f.name = std::string(name);
    f.frequency = Frequency(freq);
    f.type.tuple = tuple != 0;
    for (size_t j = 0; j < nelem; ++j) {
      uint8_t kind = 0;
      uint16_t len = 0;
      r.u8(&kind, "element kind");
      r.be16(&len, "element max_len");
      if (r.failed()) return r.error();
      f.type.elements.push_back(Element{ElementKind(kind), len});
    }
    s.fields.push_back(std::move(f));
  }
  if (r.remaining() != 0) {
    return Error(Errc::corrupt, fmt::format("slotstore schema: {} trailing bytes", r.remaining()));
  }
  if (Status st = s.validate(); !st.ok()) {
    return Error(Errc::corrupt, "stored schema is invalid: " + st.error().message);
  }
  return s;
}

std::string Schema::to_string() const {
  std::string s = fmt::format("max_key={}", int(max_key_len));
  for (const FieldSpec& f : fields) {
    s += fmt::format(" {}:{}/{}", f.name, type_name(f.type),
                     f.frequency == Frequency::low ? "low" : "high");
  }
  return s;
}

uint64_t Value::as_u64() const {
  STRATA_ASSERT(is_u64(), "Value::as_u64 on a non-u64 value");
  return std::get<0>(rep_);
}

const std::string& Value::as_str() const {
  STRATA_ASSERT(is_str(), "Value::as_str on a non-string value");
  return std::get<1>(rep_);
}

const std::vector<Scalar>& Value::elements() const {
  STRATA_ASSERT(is_tuple(), "Value::elements on a non-tuple value");
  return std::get<2>(rep_);
}

std::string Value::to_string() const {
  if (is_u64()) return std::to_string(as_u64());
  if (is_str()) return quote(as_str());
  std::string s = "(";
  const auto& el = elements();
  for (size_t i = 0; i < el.size(); ++i) {
    if (i) s += ", ";
    s += scalar_string(el[i]);
  }
  return s + ")";
}

std::string Record::to_string() const {
  std::string s = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) s += ", ";
    s += fields[i] ? fields[i]->to_string() : "absent";
  }
  return s + "}";
}

}  // namespace strata::slotstore
