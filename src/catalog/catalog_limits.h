// The catalog layer's fixed limits, in one place: sizes every backend
// enforces alike and the embedded backend's lock striping. Settings
// (catalog.capacity, catalog.wal_bytes, catalog.namespace) are in
// docs/CONFIGURATION.md. Each says why it has its value.
#pragma once

#include <cstddef>

namespace strata::catalog {

// Longest root key a catalog stores. A root key is
// <prefix>/<hash8>/<component>/meta/root.<epoch>.<uid8> (the component of a
// name is at most 200 bytes, common/name_component.h): at most 250 bytes
// plus the prefix; the embedded backend's record has room for this many. A
// longer key is invalid_argument (every backend, so that a stream moves
// between backends).
inline constexpr size_t kMaxRootKeyBytes = 512;

// Longest etcd key namespace (catalog.namespace): it prefixes every key, and
// etcd keys stay well under etcd's request limit with it.
inline constexpr size_t kMaxNamespaceBytes = 128;

// The embedded backend serializes the calls on one stream with one of this
// many mutexes (by a hash of the name): calls on different streams rarely
// share one, and list() takes all of them in index order.
inline constexpr size_t kEmbeddedStripes = 64;

// How much of a bad name or value an error message quotes.
inline constexpr size_t kErrorSnippetBytes = 32;

}  // namespace strata::catalog
