#!/usr/bin/env python3
"""Checks a PNG rendered from a plot is not trivial: the expected size, enough drawn (non-white)
pixels but not a solid fill, and pixels of each expected colour (a series' line, the target).

    png_check.py FILE.png --size 960x500 [--color 0072B2 ...]
    png_check.py --self-test     (a blank and a drawn PNG, made here, must fail and pass)

Decodes 8-bit RGB / RGBA, non-interlaced PNGs (what Chromium writes) with the standard library."""

import argparse
import struct
import sys
import zlib


def decode(data):
    """(width, height, channels, rows of bytes) of a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = ihdr
    channels = {2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def problems(data, size=None, colours=()):
    """What is wrong with the picture, [] if nothing."""
    width, height, channels, rows = decode(data)
    found = []
    if size and (width, height) != size:
        found.append(f"size {width}x{height}, expected {size[0]}x{size[1]}")
    pixels = [row[i:i + 3] for row in rows for i in range(0, len(row), channels)]
    drawn = sum(1 for p in pixels if min(p) < 230) / len(pixels)
    if not 0.01 <= drawn <= 0.6:
        found.append(f"{drawn:.1%} of the pixels are drawn (non-white): blank or a solid fill")
    for hexcode in colours:
        want = bytes.fromhex(hexcode)
        near = sum(1 for p in pixels if max(abs(p[k] - want[k]) for k in range(3)) <= 24)
        if near < 20:
            found.append(f"only {near} pixels of colour #{hexcode}")
    return found


def png(width, height, pixel):
    """A PNG of `pixel(x, y) -> (r, g, b)`, for the self-test."""
    raw = b"".join(b"\0" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))
    chunk = lambda kind, body: struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def self_test():
    blank = png(60, 40, lambda x, y: (255, 255, 255))
    line = png(60, 40, lambda x, y: (0, 0x72, 0xB2) if abs(y - 20) < 3 else (255, 255, 255))
    assert problems(blank, (60, 40)), "a blank PNG passed"
    assert problems(line, (61, 40)), "a wrong size passed"
    assert problems(line, (60, 40), ["D62728"]), "a missing colour passed"
    assert not problems(line, (60, 40), ["0072B2"]), problems(line, (60, 40), ["0072B2"])
    print("png_check: self-test ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("png", nargs="?")
    ap.add_argument("--size")
    ap.add_argument("--color", action="append", default=[])
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return 0
    size = tuple(int(v) for v in args.size.split("x")) if args.size else None
    with open(args.png, "rb") as f:
        found = problems(f.read(), size, args.color)
    for p in found:
        print(f"png_check: {args.png}: {p}", file=sys.stderr)
    if not found:
        print(f"png_check: {args.png}: ok")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
