// A stream name as one path component (a directory or file name) or one
// object-key segment. Names may hold any UTF-8 (common/stream_name.h) and
// are up to 255 bytes; a path component must not hold '/' or NUL, must not
// be "." or "..", must fit NAME_MAX (255) with room for a temporary suffix
// or prefix, and must not look like any other file its directory holds.
// Every name is therefore encoded, the same way everywhere (the log's
// stream directories, the server's tracking/ and super_streams/ files,
// deletion markers, the remote tier's object keys, etcd's offsets keys):
//
//   escaped form: the name with every byte outside [A-Za-z0-9._~-], and a
//     '.' in first position, written as '%' and two UPPERCASE hex digits
//     ("orders 2026/Q1" -> "orders%202026%2FQ1"). A name made of those
//     bytes only (the names strata accepted before, never starting with
//     '.') is its own escaped form, so existing directories and buckets
//     keep their names.
//   hashed form, when the escaped form would be longer than
//     kMaxNameComponentBytes: the escaped form of the longest prefix of the
//     name, cut between UTF-8 characters, that keeps the escaped prefix
//     within kHashedPrefixBytes, then "%%", then the SHA-256 of the whole
//     name in 64 lowercase hex digits.
//
// Why two names never share a component: the escaped form is decodable
// (each '%' starts exactly one escape), so two names with the same escaped
// form are equal; a hashed form contains "%%", which no escaped form does
// (its '%' is always followed by two hex digits), and two hashed forms are
// equal only if the names' SHA-256 are. Why no component is any other
// file: a component never starts with '.' (the log registry's ".creating-"
// and ".deleting-" entries, "." and "..") and never contains '%' followed
// by a byte other than '%' or an uppercase hex digit (kTempSuffix).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

// The longest component: room for the longest prefix or suffix strata adds
// (".deleting-<component>.<n>", "<component>.json.tmp") within NAME_MAX.
// Also the old limit of a stream directory's name, so every directory of
// before keeps its name.
inline constexpr size_t kMaxNameComponentBytes = 200;
// The escaped prefix a hashed form keeps: what is left of the component
// after "%%" and 64 hex digits.
inline constexpr size_t kHashedPrefixBytes = kMaxNameComponentBytes - 2 - 64;

// The escape character, outside the bytes names keep as they are.
inline constexpr char kComponentEscape = '%';
// The suffix of a temporary file beside components (the server's state
// directories): no component contains "%t".
inline constexpr std::string_view kTempSuffix = "%tmp";

// The component of a name (1 or more bytes; callers pass names that passed
// validate_stream_name). Deterministic: the same name always gives the
// same component.
std::string name_component(std::string_view name);

// The name an escaped form stands for; nullopt for a hashed form and for a
// string that is not the component of any name (so decoding and encoding
// agree: name_component(*name_of_component(c)) == c).
std::optional<std::string> name_of_component(std::string_view component);

// Whether `component` has the shape of a hashed form (an escaped prefix of
// at most kHashedPrefixBytes, "%%", 64 lowercase hex digits). Its name
// cannot be decoded: its owner keeps the name beside it (in the file, or
// in the directory).
bool is_hashed_component(std::string_view component);

// name_of_component(c) or is_hashed_component(c): c is some name's
// component (or, for a hashed shape, could be).
bool is_name_component(std::string_view component);

}  // namespace strata
