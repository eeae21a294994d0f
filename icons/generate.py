#!/usr/bin/env python3
"""Draws Mneme's app icon (a white "M" on an indigo rounded square) and writes the PNG sizes
tauri.conf.json lists. Standard library only: signed distances give the anti-aliasing, zlib
and struct write the PNG. Run from anywhere: `python3 icons/generate.py`."""

import math
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = {"32x32.png": 32, "128x128.png": 128, "128x128@2x.png": 256, "icon.png": 512}

# The "M" as strokes in a unit square (0..1), with the stroke half-width.
STROKES = [((0.28, 0.72), (0.28, 0.30)), ((0.28, 0.30), (0.50, 0.56)), ((0.50, 0.56), (0.72, 0.30)), ((0.72, 0.30), (0.72, 0.72))]
HALF_WIDTH = 0.055
TOP, BOTTOM = (0x5B, 0x4B, 0xE8), (0x2E, 0x1F, 0x8F)


def segment_distance(px, py, a, b):
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


def rounded_square_distance(px, py, inset=0.04, radius=0.2):
    # Signed distance to a square [inset, 1-inset]^2 with rounded corners.
    cx, cy = abs(px - 0.5), abs(py - 0.5)
    half = 0.5 - inset - radius
    qx, qy = cx - half, cy - half
    outside = math.hypot(max(qx, 0.0), max(qy, 0.0))
    return outside + min(max(qx, qy), 0.0) - radius


def pixel(x, y, size):
    px, py = (x + 0.5) / size, (y + 0.5) / size
    px_len = 1.0 / size
    bg = max(0.0, min(1.0, 0.5 - rounded_square_distance(px, py) / px_len))
    if bg == 0.0:
        return (0, 0, 0, 0)
    t = py
    r, g, b = (TOP[i] * (1 - t) + BOTTOM[i] * t for i in range(3))
    d = min(segment_distance(px, py, a, c) for a, c in STROKES) - HALF_WIDTH
    ink = max(0.0, min(1.0, 0.5 - d / px_len))
    r, g, b = (v * (1 - ink) + 255 * ink for v in (r, g, b))
    return (round(r), round(g), round(b), round(255 * bg))


def png(size):
    rows = bytearray()
    for y in range(size):
        rows.append(0)  # filter: none
        for x in range(size):
            rows.extend(pixel(x, y, size))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b"")


if __name__ == "__main__":
    for name, size in SIZES.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(png(size))
        print(f"icons/{name} ({size}x{size})")
