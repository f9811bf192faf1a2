#include "raftmeta/dets/ra_meta_rows.h"

#include <algorithm>

namespace strata::raftmeta::dets {
namespace {

// Ra's row: {UId, CurrentTerm, VotedFor, LastApplied}.
constexpr size_t kRowArity = 4;

bool printable(BytesView b) {
  return std::all_of(b.begin(), b.end(), [](char c) { return c >= 0x20 && c < 0x7F && c != '"'; });
}

// Names the row by position, text and uid (element 1, whatever its type);
// built only when a row is refused.
Error row_error(const std::string& path, const Object& obj, const std::string& problem) {
  std::string uid;
  if (const etf::Tuple* t = obj.term.tuple(); t != nullptr && !t->elements.empty()) {
    const etf::Term& k = t->elements[0];
    uid = " for uid " +
          (k.binary() != nullptr ? describe_uid(k.binary()->bytes) : etf::to_string(k, 100));
  }
  return Error(Errc::schema_mismatch, path + ": byte " + std::to_string(obj.position) + " (slot " +
                                          std::to_string(obj.slot) + "): row " +
                                          etf::to_string(obj.term, 200) + uid + ": " + problem);
}

// current_term and last_applied: `undefined` or an integer in [0, 2^64).
Result<std::optional<uint64_t>> counter(const etf::Term& t, const char* field,
                                        const std::string& path, const Object& obj) {
  if (t.is_atom("undefined")) return std::optional<uint64_t>();
  const etf::Integer* i = t.integer();
  if (i != nullptr && i->is_u64()) return std::optional<uint64_t>(i->magnitude);
  std::string why = std::string(field) + " must be a non-negative integer below 2^64 or " +
                    "undefined, found " + etf::to_string(t, 100);
  if (i != nullptr && i->negative) why += " (negative)";
  if (i != nullptr && !i->fits_u64()) why += " (does not fit 64 bits)";
  return row_error(path, obj, why);
}

}  // namespace

std::string describe_uid(BytesView uid) {
  if (printable(uid)) return "<<\"" + std::string(uid) + "\">>";
  return "<<16#" + to_hex(uid) + ">>";
}

Result<RaMetaRow> decode_ra_meta_row(const Object& obj, const std::string& path) {
  const etf::Tuple* t = obj.term.tuple();
  if (t == nullptr || t->elements.size() != kRowArity) {
    return row_error(path, obj,
                     "expected a tuple {UId, CurrentTerm, VotedFor, LastApplied} of 4 elements, "
                     "found " +
                         (t == nullptr ? std::string("a ") + obj.term.kind_name()
                                       : "a tuple of " + std::to_string(t->elements.size())));
  }
  const auto& e = t->elements;
  RaMetaRow row;
  const etf::Binary* uid = e[0].binary();
  if (uid == nullptr) {
    return row_error(path, obj,
                     std::string("the uid must be a binary (Ra's ra_uid() is binary()), found a ") +
                         e[0].kind_name());
  }
  row.uid = uid->bytes;
  STRATA_ASSIGN_OR_RETURN(row.current_term, counter(e[1], "current_term", path, obj));
  STRATA_ASSIGN_OR_RETURN(row.last_applied, counter(e[3], "last_applied", path, obj));

  const etf::Term& v = e[2];
  if (v.is_atom("undefined")) {
    row.voted_for.form = VotedFor::Form::none;
  } else if (const etf::Atom* a = v.atom()) {
    row.voted_for.form = VotedFor::Form::bare_name;
    row.voted_for.name = a->name;
  } else if (const etf::Tuple* id = v.tuple(); id != nullptr && id->elements.size() == 2 &&
                                               id->elements[0].atom() != nullptr &&
                                               id->elements[1].atom() != nullptr) {
    row.voted_for.form = VotedFor::Form::server_id;
    row.voted_for.name = id->elements[0].atom()->name;
    row.voted_for.node = id->elements[1].atom()->name;
  } else {
    return row_error(path, obj,
                     "voted_for must be undefined, an atom or {Name, Node} of two atoms, found " +
                         etf::to_string(v, 100));
  }
  return row;
}

Result<std::unique_ptr<RaMetaReader>> RaMetaReader::open(FileSystem& fs, const std::string& path) {
  // Every row's shape is checked while DetsReader validates the file, so
  // that for_each streams only a file known to convert completely.
  STRATA_ASSIGN_OR_RETURN(auto d, DetsReader::open(fs, path, [&](const Object& obj) -> Status {
                            auto row = decode_ra_meta_row(obj, path);
                            if (!row.ok()) return std::move(row).error();
                            return Status::OK();
                          }));
  if (d->info().keypos != 1) {
    return Error(Errc::schema_mismatch,
                 path + ": the table's key is element " + std::to_string(d->info().keypos) +
                     " of its objects; Ra's meta table keys on element 1 (the uid)");
  }
  return std::unique_ptr<RaMetaReader>(new RaMetaReader(std::move(d)));
}

Status RaMetaReader::for_each(const std::function<Status(const RaMetaRow&, uint64_t)>& fn) {
  uint64_t index = 0;
  const std::string& path = dets_->info().path;
  return dets_->for_each([&](const Object& obj) -> Status {
    STRATA_ASSIGN_OR_RETURN(RaMetaRow row, decode_ra_meta_row(obj, path));
    return fn(row, index++);
  });
}

Result<std::vector<RaMetaRow>> read_ra_meta(FileSystem& fs, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(auto reader, RaMetaReader::open(fs, path));
  std::vector<RaMetaRow> rows;
  rows.reserve(reader->info().object_count);
  STRATA_TRY(reader->for_each([&](const RaMetaRow& row, uint64_t) -> Status {
    rows.push_back(row);
    return Status::OK();
  }));
  return rows;
}

}  // namespace strata::raftmeta::dets
