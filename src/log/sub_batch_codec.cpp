#include "log/sub_batch_codec.h"

#include <fmt/format.h>
#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <memory>

#include "common/crc32c.h"
#include "common/endian.h"
#include "log/entries.h"

namespace strata::log {
namespace {

Error bad(uint8_t codec, const std::string& why) {
  return Error(Errc::unsupported,
               fmt::format("cannot decompress the {} sub-batch: {}", compression_name(codec), why));
}

Result<std::string> gunzip(BytesView in, uint32_t want) {
  std::string out(want, '\0');
  z_stream z{};
  // 16 + MAX_WBITS: a gzip header and trailer, not a zlib one.
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return bad(1, "zlib inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  int rc = inflate(&z, Z_FINISH);
  const size_t produced = out.size() - z.avail_out;
  const size_t left_in = z.avail_in;
  std::string msg = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (rc == Z_BUF_ERROR && z.avail_out == 0) {
    return bad(1, fmt::format("expands beyond the declared {} bytes", want));
  }
  if (rc != Z_STREAM_END) {
    return bad(1, fmt::format("zlib error {}{}{} after {} bytes", rc, msg.empty() ? "" : ": ", msg,
                              produced));
  }
  if (produced != want) {
    return bad(1, fmt::format("expands to {} bytes, the header declares {}", produced, want));
  }
  if (left_in != 0) return bad(1, fmt::format("{} bytes follow the gzip member", left_in));
  return out;
}

Result<std::string> zstd_decompress(BytesView in, uint32_t want) {
  std::string out(want, '\0');
  size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n)) return bad(4, ZSTD_getErrorName(n));
  if (n != want) return bad(4, fmt::format("expands to {} bytes, the header declares {}", n, want));
  return out;
}

Result<std::string> lz4_decompress(BytesView in, uint32_t want) {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
    return bad(3, "cannot create an LZ4 frame context");
  }
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> ctx(
      raw, &LZ4F_freeDecompressionContext);
  std::string out(want, '\0');
  size_t in_pos = 0, out_pos = 0;
  while (true) {
    size_t src = in.size() - in_pos;
    size_t dst = out.size() - out_pos;
    size_t hint =
        LZ4F_decompress(ctx.get(), out.data() + out_pos, &dst, in.data() + in_pos, &src, nullptr);
    if (LZ4F_isError(hint)) return bad(3, LZ4F_getErrorName(hint));
    in_pos += src;
    out_pos += dst;
    // 0: the frame is complete.
    if (hint == 0) break;
    if (in_pos == in.size()) return bad(3, "the LZ4 frame is truncated");
    if (out_pos == out.size() && src == 0) {
      return bad(3, fmt::format("expands beyond the declared {} bytes", want));
    }
  }
  if (out_pos != want) {
    return bad(3, fmt::format("expands to {} bytes, the header declares {}", out_pos, want));
  }
  if (in_pos != in.size())
    return bad(3, fmt::format("{} bytes follow the LZ4 frame", in.size() - in_pos));
  return out;
}

// The framing format's checksum: CRC32C of the uncompressed bytes, rotated
// and offset so that a CRC over data holding CRCs stays useful.
uint32_t snappy_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

Result<std::string> snappy_framed(BytesView in, uint32_t want) {
  std::string out;
  out.reserve(want);
  size_t pos = 0;
  bool identified = false;
  while (pos < in.size()) {
    if (in.size() - pos < 4) return bad(2, fmt::format("truncated chunk header at byte {}", pos));
    const uint8_t type = uint8_t(in[pos]);
    const uint32_t len = get_le32(u8(in.data() + pos)) >> 8;
    const size_t body = pos + 4;
    if (!identified && type != 0xff) {
      return bad(2, "not the Snappy framing format (no stream identifier)");
    }
    if (in.size() - body < len) {
      return bad(2, fmt::format("chunk at byte {} of {} bytes overruns the body", pos, len));
    }
    BytesView chunk = in.substr(body, len);
    if (type == 0xff) {
      if (chunk != BytesView("sNaPpY")) return bad(2, "bad stream identifier");
      identified = true;
    } else if (type == 0x00 || type == 0x01) {
      if (len < 4) return bad(2, fmt::format("data chunk at byte {} without its checksum", pos));
      const uint32_t crc = get_le32(u8(chunk.data()));
      BytesView data = chunk.substr(4);
      const size_t start = out.size();
      if (type == 0x01) {
        if (out.size() + data.size() > want) {
          return bad(2, fmt::format("expands beyond the declared {} bytes", want));
        }
        out.append(data);
      } else {
        size_t n = 0;
        if (!snappy::GetUncompressedLength(data.data(), data.size(), &n)) {
          return bad(2, fmt::format("chunk at byte {} is not a Snappy block", pos));
        }
        if (out.size() + n > want) {
          return bad(2, fmt::format("expands beyond the declared {} bytes", want));
        }
        out.resize(start + n);
        if (!snappy::RawUncompress(data.data(), data.size(), out.data() + start)) {
          return bad(2, fmt::format("chunk at byte {} does not decompress", pos));
        }
      }
      if (snappy_mask(crc32c::value(out.data() + start, out.size() - start)) != crc) {
        return bad(2, fmt::format("chunk at byte {} fails its CRC32C", pos));
      }
    } else if (type >= 0x02 && type <= 0x7f) {
      return bad(2, fmt::format("reserved unskippable chunk type {:#x} at byte {}", type, pos));
    }
    // 0x80-0xfe: padding and reserved skippable chunks.
    pos = body + len;
  }
  if (out.size() != want) {
    return bad(
        2, fmt::format("expands to {} or more bytes, the header declares {}", out.size(), want));
  }
  return out;
}

}  // namespace

Result<std::string> decompress_sub_batch(uint8_t compression, BytesView body,
                                         uint32_t uncompressed_len) {
  if (uncompressed_len > kMaxUncompressedSubBatch) {
    return bad(compression, fmt::format("declares {} uncompressed bytes, above the {} a reader "
                                        "accepts",
                                        uncompressed_len, kMaxUncompressedSubBatch));
  }
  switch (compression) {
    case 1:
      return gunzip(body, uncompressed_len);
    case 2:
      return snappy_framed(body, uncompressed_len);
    case 3:
      return lz4_decompress(body, uncompressed_len);
    case 4:
      return zstd_decompress(body, uncompressed_len);
    default:
      return bad(compression, "no codec for it");
  }
}

}  // namespace strata::log
