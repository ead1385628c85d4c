"""A small alignment matrix with awkward tokens, whether a browser is here to draw it, and readers
of the SVG and PDF files the export writes."""
from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from viz.export import CHROMIUM, export_unavailable


SOURCE = ["▁L'accord", "▁économique", "▁européenne", "▁<b>", "▁&", "</s>"]
TARGET = ["▁The", "▁agreement", "▁ça", "</s>"]
WEIGHTS = np.random.default_rng(3).dirichlet(np.ones(len(SOURCE)), size=len(TARGET))
HAS_BROWSER = export_unavailable(CHROMIUM) is None
needs_browser = pytest.mark.skipif(not HAS_BROWSER, reason=f"no Chromium at {CHROMIUM} (scripts/setup_browser.sh)")


def svg_texts(svg: bytes) -> list[str]:
    """Every <text> element's text (its tspans' joined), as a reader of the SVG sees it."""
    root = ET.fromstring(svg)
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


def pdf_page_size(pdf: bytes) -> tuple[float, float, int]:
    from pypdf import PdfReader
    reader = PdfReader(io.BytesIO(pdf))
    box = reader.pages[0].mediabox
    return float(box.width), float(box.height), len(reader.pages)
