"""The HTML report in a real browser: headless Chromium (the system package, started here; the page's
Content-Security-Policy lets no script run and nothing load) renders a page whose screenshot is not
blank and shows both series' colours, whose DOM holds the charts with the records' numbers, and
which prints to PDF.

Chromium is required where the CI variable is set (`.ci/run` installs it); elsewhere the test is
skipped with the command that installs it.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from typing import List, Tuple

import pytest

from ddp_lint.runtime.charts import FIXED, ORIGINAL
from ddp_lint.runtime.page import verify_page, write_page
from report_support import chart, charts_in, frozen_and_training

pytestmark = pytest.mark.slow

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL = "apt-get install -y chromium (Debian's package; .ci/run installs it)"
WIDTH, HEIGHT = 1100, 1400


def _browser() -> str:
    found = next((path for path in map(shutil.which, BROWSERS) if path), None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test needs Chromium, which is not installed: {INSTALL}")
        pytest.skip(f"needs Chromium (required when CI is set): {INSTALL}")
    return found


def _chromium(browser: str, profile: str, *args: str) -> "subprocess.CompletedProcess[bytes]":
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--user-data-dir={profile}", *args]
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done


def decode_png(data: bytes) -> Tuple[int, int, List[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows: List[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        previous = line
        rgb = bytes(line) if channels == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3)
        rows.append(rgb)
    return width, height, rows


def _near(pixel: Tuple[int, int, int], colour: str, tolerance: int = 40) -> bool:
    target = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, target))


def test_chromium_renders_the_report_with_its_charts_and_prints_it(tmp_path) -> None:
    browser = _browser()
    result = frozen_and_training("train.py")
    page = verify_page(result, "ddp-lint verify --nproc-per-node 2 train.py")
    path = tmp_path / "report.html"
    write_page(str(path), page)
    url = path.as_uri()
    profile = str(tmp_path / "profile")

    shot = tmp_path / "shot.png"
    _chromium(browser, profile, f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}", url)
    width, height, rows = decode_png(shot.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    pixels = [tuple(row[i:i + 3]) for row in rows[::2] for i in range(0, len(row), 6)]
    # Not blank: many distinct colours and a spread of brightness.
    grey = [sum(p) / 3 for p in pixels]
    mean = sum(grey) / len(grey)
    assert sum((g - mean) ** 2 for g in grey) / len(grey) > 200, "the screenshot is (nearly) one colour"
    assert len(set(pixels)) > 50
    # Both series were drawn: the original's and the fixed run's colours cover some of the screen.
    assert sum(_near(p, ORIGINAL.colour) for p in pixels) > 100
    assert sum(_near(p, FIXED.colour) for p in pixels) > 100

    # The DOM Chromium built holds the charts with the records' numbers.
    dom = _chromium(browser, profile, "--dump-dom", url).stdout.decode("utf-8")
    charts = charts_in(dom)
    assert len(charts) == len(charts_in(page)) == 4  # loss and parameter change, for two ranks
    rows0 = result.original.report.traces[0].steps
    assert chart(charts, "loss", 0).series["original"][1] == [r["loss"] for r in rows0]
    assert chart(charts, "update", 1).series["fixed"][1] == [0.5, 0.25, 0.125]
    assert all(c.polylines >= 1 for c in charts if c.kind != "divergence")

    # It prints: a PDF of at least one page.
    pdf = tmp_path / "report.pdf"
    _chromium(browser, profile, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", url)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and data.count(b"/Type /Page") + data.count(b"/Type/Page") >= 1
