"""Prints the scalars of a folder's TensorBoard event files (events.out.tfevents.*, in name order, as TensorBoard
reads them) as "step tag value" lines, with no TensorBoard installed: the TFRecord framing and the Event messages
read by hand (formats/tfevents.h writes them). A record cut short ends a file's reading, as in TensorBoard.
Usage: python3 tests/train/tb_scalars.py DIR [TAG_TO_LEAVE_OUT ...]
"""
import os
import struct
import sys


def varint(b, p):
    v = shift = 0
    while True:
        byte = b[p]
        p += 1
        v |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return v, p


def fields(b):
    p = 0
    while p < len(b):
        key, p = varint(b, p)
        wire = key & 7
        if wire == 0:
            v, p = varint(b, p)
            yield key >> 3, v
            continue
        n = {1: 8, 5: 4}.get(wire)
        if n is None:
            n, p = varint(b, p)
        yield key >> 3, b[p:p + n]
        p += n


def scalars(path):
    b = open(path, "rb").read()
    p = 0
    while p + 12 <= len(b):
        (n,) = struct.unpack_from("<Q", b, p)
        if p + 16 + n > len(b):
            break
        event = dict(fields(b[p + 12:p + 12 + n]))
        p += 16 + n
        if 5 not in event:
            continue
        value = dict(fields(dict(fields(event[5]))[1]))
        yield event.get(2, 0), value[1].decode(), struct.unpack("<f", value[2])[0]


def main():
    d, leave_out = sys.argv[1], set(sys.argv[2:])
    for name in sorted(f for f in os.listdir(d) if "tfevents" in f):
        for step, tag, value in scalars(os.path.join(d, name)):
            if tag not in leave_out:
                print(step, tag, repr(value))


if __name__ == "__main__":
    main()
