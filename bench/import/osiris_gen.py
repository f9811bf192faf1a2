#!/usr/bin/env python3
"""Writes a RabbitMQ node directory with one stream in osiris's file format
(docs/formats/osiris-import.md) and its definitions export, for the import
benchmark: as osiris 1.3.1 writes them (segments of at most SEGMENT bytes,
each after the first opening with a tracking snapshot, one publisher whose
sequence is in every user chunk's trailer, an index per segment).

  osiris_gen.py OUT_DIR TOTAL_MB MESSAGES_PER_CHUNK MESSAGE_BYTES [SEGMENT_MB]

OUT_DIR/node/stream/__bench_1/… and OUT_DIR/definitions.json.
"""
import json
import os
import struct
import sys
import zlib


def chunk(ctype, entries, records, ts, chunk_id, data, trailer=b""):
    header = struct.pack(">BBHIqQQIIII", 0x50, ctype, entries, records, ts, 1, chunk_id,
                         zlib.crc32(data), len(data), len(trailer), 0)
    return header + data + trailer


def main():
    out, total_mb, per_chunk, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    segment_limit = (int(sys.argv[5]) if len(sys.argv) > 5 else 500) * 1000 * 1000
    d = os.path.join(out, "node", "stream", "__bench_1")
    os.makedirs(d, exist_ok=True)
    body = bytes((i * 7 + 3) % 256 for i in range(size))
    entry = struct.pack(">I", size) + body
    data = entry * per_chunk
    total = total_mb << 20
    written = 0
    offset = 0
    seq = 0
    ts = 1796558324000
    seg = idx = None
    seg_size = 0
    while written < total:
        if seg is None or seg_size >= segment_limit:
            if seg:
                seg.close()
                idx.close()
            name = os.path.join(d, "%020d" % offset)
            seg = open(name + ".segment", "wb")
            idx = open(name + ".index", "wb")
            seg.write(b"OSIL" + struct.pack(">I", 1))
            idx.write(b"OSII" + struct.pack(">I", 1))
            seg_size = 8
            if offset > 0:
                snap = bytes([0, 3]) + b"pub" + struct.pack(">QQ", offset - per_chunk, seq)
                c = chunk(2, 1, 1, ts, offset, struct.pack(">I", len(snap)) + snap)
                idx.write(struct.pack(">QqQIB", offset, ts, 1, seg_size, 2))
                seg.write(c)
                seg_size += len(c)
                offset += 1
        seq += per_chunk
        trailer = bytes([0, 3]) + b"pub" + struct.pack(">Q", seq)
        c = chunk(0, per_chunk, per_chunk, ts, offset, data, trailer)
        idx.write(struct.pack(">QqQIB", offset, ts, 1, seg_size, 0))
        seg.write(c)
        seg_size += len(c)
        written += len(c)
        offset += per_chunk
        ts += 1
    seg.close()
    idx.close()
    defs = {"queues": [{"name": "bench", "vhost": "/", "durable": True, "auto_delete": False,
                        "type": "stream", "arguments": {"x-queue-type": "stream"}}]}
    with open(os.path.join(out, "definitions.json"), "w") as f:
        json.dump(defs, f)
    print(json.dumps({"offsets": offset, "publisher_sequence": seq, "bytes": written}))


if __name__ == "__main__":
    main()
