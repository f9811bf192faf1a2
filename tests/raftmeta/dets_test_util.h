// Helpers for the DETS reader tests: running the Erlang helper
// (erl/dets_gen.erl) that writes real DETS files and prints what Erlang
// reads back, and small file surgery for corruption tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "raftmeta/dets/ra_meta_rows.h"

namespace strata::raftmeta::dets::test {

// Runs `erl -noshell -pa <beams> -eval 'dets_gen:main()' -extra cmd args..`
// and returns "" on success, else a description of the failure (exit
// status and output; or that erl / the compiled helper is missing).
std::string run_dets_gen(const std::string& cmd, const std::vector<std::string>& args);

// The lines of a text file, sorted (row and term dumps are unordered).
std::vector<std::string> sorted_lines(const std::string& path);

// A row in dets_gen's row-line format (see dets_gen.erl).
std::string row_line(const RaMetaRow& row);
std::vector<std::string> sorted_row_lines(const std::vector<RaMetaRow>& rows);

// Uppercase hex, as Erlang's binary:encode_hex/1 prints.
std::string hex_upper(BytesView b);

Bytes read_bytes(const std::string& path);
void write_bytes(const std::string& path, BytesView data);

}  // namespace strata::raftmeta::dets::test
