"""Export what a page shows: the attention matrix as CSV, a figure as standalone HTML, and a
figure as SVG, PDF or PNG for a slide or a paper.

SVG, PDF and PNG are drawn on the server by Kaleido 1.x in a headless Chromium: the system's
(``/usr/bin/chromium``, Debian's, as ``scripts/setup_browser.sh`` installs it), never one
Kaleido would download, and with the plotly.js of the installed ``plotly`` package, never a
CDN's; MathJax is off (no figure here uses LaTeX labels), so nothing is fetched at all. Plotly
writes the SVG with its text as ``<text>`` elements, so the tokens stay searchable and
editable, accents and ``▁`` as typed.

The app never runs Chromium in its own process. :func:`export_image` hands each figure to
one managed child per server process (``python -m viz.export --serve``, :class:`Exporter`),
which keeps a Kaleido and its headless Chromium open between exports: the first export starts
them (2–3 s), later ones only draw (well under a second). One export runs at a time per
server (:data:`_EXPORT_SLOT`), one more click may wait for it, at most :data:`QUEUE_WAIT`
seconds, any further click is turned away at once; a child still drawing after
:data:`EXPORT_TIMEOUT` seconds is killed with its browser, as is one that died or answered
garbage, and the next export starts a fresh one; after :data:`MAX_EXPORTS` figures the child
is replaced, so its browser's memory stays bounded. :func:`render` draws many figures in one
browser, for ``python -m viz.paper_figures`` and the tests.

(PNG also comes from Plotly's own toolbar; the camera button saves SVG, see :func:`plotly_config`.)
"""
from __future__ import annotations

import asyncio
import atexit
import copy
import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

CHROMIUM = "/usr/bin/chromium"  # Debian's package (scripts/setup_browser.sh)
EXPORT_TIMEOUT = 30.0  # s: Chromium's start (2–3 s) and one figure (under 1 s), with room for a busy server
QUEUE_WAIT = 10.0      # s: how long a click waits while another visitor's export runs
MAX_EXPORTS = 200      # figures one warm browser draws before it is replaced (its memory stays bounded)
MIME = {"svg": "image/svg+xml", "pdf": "application/pdf", "png": "image/png"}
BASE_FONT = 16         # px: the font size the app's figures are laid out for (viz.heatmap.FONT_SIZE)
PRINT_FONT = "Arial, Helvetica, 'DejaVu Sans', sans-serif"


class ExportError(RuntimeError):
    """An export that could not be made; the message says why, for the visitor."""


@dataclass(frozen=True)
class Size:
    """An exported figure's size: width and height in CSS pixels (96 to the inch, so 1 px is
    0.75 pt on the PDF's page) and the body font size in pixels."""
    label: str
    width: int
    height: int
    font: int


SIZES = {
    "slide": Size("slide 16:9", 1280, 720, 22),           # 13.3 × 7.5 in: PowerPoint's and Beamer's 16:9
    "column": Size("paper column", 336, 288, 10),         # 3.5 in wide (IEEE, ACL columns), 7.5 pt text
    "page": Size("paper page", 672, 432, 12),             # 7 in wide: a two-column paper's full width, 9 pt text
}


def plotly_config(filename: str) -> dict:
    """Plotly's toolbar config: the camera button saves ``filename.svg`` (vector, text kept),
    drawn by the visitor's own browser."""
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": "svg", "filename": filename}}


def matrix_csv(weights: np.ndarray, source_tokens: list[str], target_tokens: list[str]) -> str:
    """α as CSV: one row per target token, one column per source token (tokens as typed,
    repeated tokens kept as separate columns), weights to 6 decimals."""
    table = pd.DataFrame(np.round(np.asarray(weights, dtype=float), 6), columns=list(source_tokens))
    table.insert(0, "target \\ source", list(target_tokens))
    return table.to_csv(index=False)


def figure_html(fig: go.Figure, title: str = "Attention Explorer") -> str:
    """A self-contained HTML page (plotly.js inlined): opens offline, stays interactive."""
    # a figure of its own: a figure from viz/ may be shared by every tab (ui.figures.shared_figure), read only
    spec = copy.deepcopy(fig if isinstance(fig, dict) else fig.to_dict())
    return go.Figure(spec).to_html(include_plotlyjs=True, full_html=True, config={"displaylogo": False},
                                   default_width="100%", default_height=spec["layout"].get("height") or 600) \
        .replace("<head>", f"<head><title>{_escape(title)}</title>", 1)


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- SVG, PDF, PNG -------------------------------------------------------------------------------
def export_unavailable(browser: str = CHROMIUM) -> str | None:
    """Why this server cannot draw SVG/PDF/PNG, for the visitor; None when it can."""
    if importlib.util.find_spec("kaleido") is None:
        return "Kaleido is not installed on this server (`pip install -r requirements.txt`)."
    if not (os.path.isfile(browser) and os.access(browser, os.X_OK)):
        return (f"No Chromium at `{browser}` on this server: SVG, PDF and PNG are drawn by a headless Chromium "
                "(`bash scripts/setup_browser.sh` installs Debian's). HTML, CSV and the chart's camera button "
                "still work.")
    return None


def print_ready(fig: go.Figure | dict, size: Size = SIZES["slide"], light: bool = False) -> dict:
    """The figure as a dict laid out for ``size``: every font size, margin and colour-bar
    thickness scaled by ``size.font / 16`` (the app's figures are laid out for 16 px type),
    the width and height set, on Plotly's ``plotly`` template, or with ``light`` its
    ``simple_white`` one and black text (a light theme for print). Each trace gets a fixed
    ``uid`` so the SVG is the same on every run."""
    spec = copy.deepcopy(fig if isinstance(fig, dict) else fig.to_dict())
    layout = spec.setdefault("layout", {})
    _scale_sizes(spec, size.font / BASE_FONT)
    layout.update(width=size.width, height=size.height, autosize=False)
    layout.setdefault("font", {}).setdefault("size", size.font)  # a figure's own size was scaled above
    # Plotly's own template, whatever the process's default (a Streamlit server sets its own)
    layout["template"] = pio.templates["simple_white" if light else "plotly"].to_plotly_json()
    if light:
        layout["font"].update(color="black", family=PRINT_FONT)
        layout.update(paper_bgcolor="white", plot_bgcolor="white")
    for k, trace in enumerate(spec.get("data", [])):
        trace["uid"] = f"trace{k}"
    return spec


def _scale_sizes(node, factor: float, key: str = "") -> None:
    """Scale (in place) font sizes, margins and colour-bar thicknesses below ``node``; a
    template's own values are left alone (the figure's explicit ones win over them)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "template":
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool) and (
                    (k == "size" and key.endswith("font")) or (key == "margin" and k in ("l", "r", "t", "b", "pad"))
                    or k == "thickness" and key == "colorbar"):
                node[k] = round(v * factor, 2)
            else:
                _scale_sizes(v, factor, k)
    elif isinstance(node, list):
        for v in node:
            _scale_sizes(v, factor, key)


_UID = re.compile(r'id="defs-([0-9a-z]+)"')


def stable_svg(svg: bytes) -> bytes:
    """Plotly.js names a graph's clip paths and gradients after a random id per drawing
    ("clipd7c214xyplot"); the same name on every run makes the same figure the same file."""
    found = _UID.search(svg.decode("utf-8", "replace"))
    return svg if not found else svg.replace(found.group(1).encode(), b"fig")


def render(jobs: list[dict], browser: str = CHROMIUM, timeout: float = 60.0) -> list[bytes]:
    """Draw figures in one headless Chromium: each job is ``{"figure": dict (print_ready's),
    "format": "svg"|"pdf"|"png", "scale": 1}``; returns their bytes in order. Raises
    ExportError when the browser cannot be used or a figure takes longer than ``timeout``."""
    reason = export_unavailable(browser)
    if reason:
        raise ExportError(reason)
    import kaleido  # imported here: it starts nothing, but the app has no use for it elsewhere
    import plotly
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

    async def draw() -> list[bytes]:
        async with kaleido.Kaleido(path=browser, plotlyjs=str(plotly_js), mathjax=False, timeout=timeout, n=1) as k:
            out = []
            for job in jobs:
                layout = job["figure"]["layout"]
                opts = {"format": job["format"], "width": layout["width"], "height": layout["height"],
                        "scale": job.get("scale", 1)}
                image = await k.calc_fig(job["figure"], opts=opts)
                out.append(stable_svg(image) if job["format"] == "svg" else image)
            return out

    try:
        return _run(draw())
    except TimeoutError as e:
        raise ExportError(f"Drawing the figure took longer than {timeout:.0f} s.") from e
    except ExportError:
        raise
    except Exception as e:  # noqa: BLE001 - Chromium or Kaleido failed: say so, whatever it was
        raise ExportError(f"The export failed ({type(e).__name__}: {e}).") from e


def _run(coroutine):
    """Run a coroutine to its end from synchronous code, in a thread of its own when this
    thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(value=asyncio.run(coroutine)), daemon=True)
    worker.start()
    worker.join()
    if "value" not in result:
        raise ExportError("The export failed.")
    return result["value"]


# one export at a time per server process (Chromium takes a core while it draws), and one click
# waiting for it: a click runs on one of the server's few worker threads (Streamlit's deferred
# download), so a burst of clicks is turned away at once rather than holding them all
_EXPORT_SLOT = threading.BoundedSemaphore(1)
_WAITING_ROOM = threading.BoundedSemaphore(2)


def export_image(fig: go.Figure | dict, fmt: str, size: Size = SIZES["slide"], light: bool = False,
                 browser: str = CHROMIUM, timeout: float = EXPORT_TIMEOUT, wait: float = QUEUE_WAIT) -> bytes:
    """One figure as SVG, PDF or PNG (PNG at twice the size), drawn in a child process (see the
    module's docstring) that is killed after ``timeout`` seconds. Waits up to ``wait`` seconds
    while another export runs, unless another click is waiting already; raises ExportError,
    with the reason, when it cannot be made."""
    if fmt not in MIME:
        raise ValueError(f"format {fmt!r}: one of {', '.join(MIME)}")
    reason = export_unavailable(browser)
    if reason:
        raise ExportError(reason)
    job = json.dumps({"figure": print_ready(fig, size, light), "format": fmt, "scale": 2 if fmt == "png" else 1,
                      "browser": browser, "timeout": timeout}, cls=_plotly_encoder())
    busy = ExportError("Other figures are being exported on this server; try again in a few seconds.")
    if not _WAITING_ROOM.acquire(blocking=False):
        raise busy
    try:
        if not _EXPORT_SLOT.acquire(timeout=wait):
            raise busy
        try:
            return _child(job, timeout)
        finally:
            _EXPORT_SLOT.release()
    finally:
        _WAITING_ROOM.release()


def _plotly_encoder():
    from plotly.utils import PlotlyJSONEncoder
    return PlotlyJSONEncoder


def _child(job: str, timeout: float) -> bytes:
    """One job drawn by this process's warm exporter (:data:`_EXPORTER`)."""
    return _EXPORTER.export(job.encode("utf-8"), timeout, json.loads(job).get("browser", CHROMIUM))


class Exporter:
    """The one warm exporter of a server process: a child (``python -m viz.export --serve``)
    holding a Kaleido and its headless Chromium, fed one job at a time (the caller holds
    :data:`_EXPORT_SLOT`). A job is a length-prefixed JSON document on the child's stdin; the
    answer a status byte (0: the file, 1: the reason it failed), a length and the bytes. The
    child leads a process group of its own, killed whole (Chromium too) when a figure takes
    longer than the timeout or the child died; it ends by itself when the server does (its
    stdin closes)."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None
        self.browser = CHROMIUM
        self.served = 0
        self.lock = threading.Lock()

    def export(self, job: bytes, timeout: float, browser: str = CHROMIUM) -> bytes:
        with self.lock:
            if self.proc is not None and (self.proc.poll() is not None or self.served >= MAX_EXPORTS
                                          or browser != self.browser):
                self.stop()  # died, drew its share, or another browser asked for: a fresh one
            if self.proc is None:
                root = Path(__file__).resolve().parent.parent
                self.proc = subprocess.Popen([sys.executable, "-m", "viz.export", "--serve"], cwd=root,
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                             start_new_session=True)
                self.served, self.browser = 0, browser
            try:
                self.proc.stdin.write(len(job).to_bytes(4, "big") + job)
                self.proc.stdin.flush()
                deadline = time.monotonic() + timeout
                status = _read(self.proc.stdout, 5, deadline)
                body = _read(self.proc.stdout, int.from_bytes(status[1:], "big"), deadline)
            except (OSError, TimeoutError, EOFError) as e:
                self.stop()
                if isinstance(e, TimeoutError):
                    raise ExportError(f"Drawing the figure took longer than {timeout:.0f} s; it was stopped.") from None
                raise ExportError("The export failed (its browser ended); the next export starts a new one.") from None
            self.served += 1
            if status[0] != 0:
                raise ExportError(body.decode("utf-8", "replace") or "The export failed.")
            return body

    def stop(self) -> None:
        """End the child and its browser (the whole process group)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass


def _read(pipe, n: int, deadline: float) -> bytes:
    """Exactly ``n`` bytes from ``pipe`` by ``deadline`` (TimeoutError), or EOFError when it closes."""
    out = bytearray()
    fd = pipe.fileno()
    while len(out) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return bytes(out)


_EXPORTER = Exporter()  # the one managed browser of this process (started on the first export)
atexit.register(_EXPORTER.stop)


def serve() -> int:
    """The child of :class:`Exporter`: one Kaleido (its Chromium kept open) drawing the jobs that
    arrive on stdin until stdin closes. Its stdout carries only the answers (anything else that
    would print goes to stderr)."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    import kaleido
    import plotly
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

    def next_job():
        head = sys.stdin.buffer.read(4)
        return json.loads(sys.stdin.buffer.read(int.from_bytes(head, "big"))) if len(head) == 4 else None

    def send(status: int, body: bytes) -> None:
        answers.write(bytes([status]) + len(body).to_bytes(4, "big") + body)
        answers.flush()

    async def loop():
        first = await asyncio.get_running_loop().run_in_executor(None, next_job)
        if first is None:
            return
        browser = first.get("browser", CHROMIUM)
        async with kaleido.Kaleido(path=browser, plotlyjs=str(plotly_js), mathjax=False, n=1,
                                   timeout=first.get("timeout", EXPORT_TIMEOUT)) as k:
            job = first
            while job is not None:
                try:
                    layout = job["figure"]["layout"]
                    opts = {"format": job["format"], "width": layout["width"], "height": layout["height"],
                            "scale": job.get("scale", 1)}
                    image = await k.calc_fig(job["figure"], opts=opts)
                    send(0, stable_svg(image) if job["format"] == "svg" else image)
                except Exception as e:  # noqa: BLE001 - this figure failed: say why, keep serving
                    send(1, f"The export failed ({type(e).__name__}: {e}).".encode())
                job = await asyncio.get_running_loop().run_in_executor(None, next_job)
    try:
        asyncio.run(loop())
    except Exception as e:  # noqa: BLE001 - the browser could not start: the parent reads EOF and says so
        print(f"viz.export --serve: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    """``python -m viz.export --serve``: :func:`serve`. Without ``--serve``: one job (JSON) on
    stdin, the file's bytes on stdout; an error's reason as the last line of stderr."""
    if "--serve" in sys.argv[1:]:
        return serve()
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    try:
        (image,) = render([job], job.get("browser", CHROMIUM), job.get("timeout", EXPORT_TIMEOUT))
    except ExportError as e:
        print(e, file=sys.stderr)
        return 1
    sys.stdout.buffer.write(image)
    return 0


if __name__ == "__main__":
    sys.exit(main())
