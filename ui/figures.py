"""A figure on a page and its export: the chart (its toolbar's camera saves SVG), the
*SVG · PDF · PNG · HTML* popover and the download buttons it opens."""
from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict

import streamlit as st

from server import settings
from ui.focus import FOCUS_CSS, POPOVER_FOCUS_JS


FIT_STEP = 100    # px: the widths a figure may ask for come in these steps (one CSS rule each)
FIT_MAX = 6000   # px: the widest such width
NARROW = 640     # px: a screen this narrow or narrower draws no Plotly toolbar over the figures
SCROLL_HINT_PAD = 48  # px: the page's side padding on a narrow screen (2 x 1.5 rem), so a figure of
                      # width W is cut where the viewport is under W + this
SCROLL_HINT = "↔ This figure is wider than the screen: swipe or scroll it sideways to see all of it."


FIGURES_KEPT = 256     # figures a process keeps for every tab; the least recently drawn go first
LARGEST_SHARED = 1600  # source x target tokens (40 x 40) past which a result's figures are made per draw


class SharedFigures:
    """Figures drawn from a shared result (a decoding record every tab of the process is handed,
    ``ui.zoo_cache.shared_result``), made once per process: a class opening one link, or stepping
    through one sentence, asks for the same figures in every tab, and building one (the spec, its
    JSON-ready form, the width its labels need) is a good part of a page's run.

    The last :data:`FIGURES_KEPT` figures drawn are kept, each with a weak reference to its result
    (a figure of a result no longer alive is never handed out, even to a new result at the same
    address). A result larger than :data:`LARGEST_SHARED` cells (a heatmap of a text box's 1,000
    characters holds 60,000 hover labels) has its figures made for each draw, so what a process
    keeps stays small whatever visitors type. A figure handed out is read, never changed."""

    def __init__(self, kept: int = FIGURES_KEPT, largest: int = LARGEST_SHARED):
        self.kept, self.largest = kept, largest
        self._lock = threading.Lock()
        self._figures: OrderedDict = OrderedDict()  # (id(result), key) -> (weak reference to result, figure)

    def __len__(self) -> int:
        with self._lock:
            return len(self._figures)

    def get(self, result, key: tuple, build):
        """The figure ``build()`` makes from ``result``; ``key``: everything else the figure
        depends on (the step, the title, the view...)."""
        if len(getattr(result, "source_tokens", ())) * len(getattr(result, "target_tokens", ())) > self.largest:
            return build()
        slot = (id(result), key)
        with self._lock:
            kept = self._figures.get(slot)
            if kept is not None and kept[0]() is result:
                self._figures.move_to_end(slot)
                return kept[1]
        fig = build()
        with self._lock:
            self._figures[slot] = (weakref.ref(result), fig)
            self._figures.move_to_end(slot)
            while len(self._figures) > self.kept:
                self._figures.popitem(last=False)
        return fig


_SHARED_FIGURES = SharedFigures()


def shared_figure(result, key: tuple, build):
    """``build()``, a figure of the shared ``result``, made once per process for ``key`` (see
    :class:`SharedFigures`)."""
    return _SHARED_FIGURES.get(result, key, build)


class Html(str):
    """HTML that ``st.html`` takes as it is: a string with ``_repr_html_``, which Streamlit reads
    instead of asking the disk whether the string names a file and dedenting it (every rerun)."""

    def _repr_html_(self) -> str:
        return str(self)


# WCAG 2.1 AA 1.4.3 (contrast 4.5:1) where the theme alone does not reach it: code inside a caption
# takes the caption's colour, and st.code's syntax colours are replaced by darker ones (GitHub's
# light palette, 5.9:1 and more on st.code's background); 2.4.7: a visible focus on the regions
# made focusable below
ACCESSIBLE_CSS = (
    '[data-testid="stCaptionContainer"] code{color:inherit!important}'
    '[data-testid="stCode"] .token{color:#1f2328!important}'
    '[data-testid="stCode"] .token:is(.comment,.prolog,.doctype,.cdata){color:#57606a!important}'
    '[data-testid="stCode"] .token:is(.string,.char,.attr-value,.regex,.inserted,.url){color:#0a3069!important}'
    '[data-testid="stCode"] .token:is(.keyword,.builtin,.important,.atrule,.deleted){color:#a40e26!important}'
    '[data-testid="stCode"] .token:is(.number,.boolean,.constant,.symbol,.operator){color:#0550ae!important}'
    '[data-testid="stCode"] .token:is(.function,.class-name,.parameter,.variable,.property,.tag,.selector)'
    '{color:#6639ba!important}'
    '[data-scroll-focus]:focus-visible{outline:3px solid #0550ae;outline-offset:2px}'
    # a text, number or menu box: a ring as well as Streamlit's 1 px border in the primary colour
    ':is([data-testid="stSelectbox"],[data-testid="stNumberInput"],[data-testid="stTextInput"],'
    '[data-testid="stTextArea"],[data-testid="stMultiSelect"]) div:has(> :is(input,textarea):focus-visible)'
    '{outline:2px solid #0550ae;outline-offset:1px}'
    # the text alternative under a figure (viz/describe.py): a table that only a screen reader reads
    '.fig-alt .sr-only{position:absolute!important;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;'
    'clip:rect(0,0,0,0);white-space:nowrap;border:0}'
    '.fig-alt{font-size:0.875rem;margin:0}.fig-alt figcaption{margin:0 0 .25rem 0}'
    '.fig-alt details{margin:.25rem 0}.fig-alt summary{cursor:pointer}'
    '.fig-alt .fig-matrix{overflow-x:auto;max-width:100%}'
    '.fig-alt table{border-collapse:collapse;font-size:0.8rem}'
    '.fig-alt th,.fig-alt td{border:1px solid #d0d3d9;padding:1px 6px;text-align:right}'
    # the follow panel's empty chart that only loads the chart library (ui.class_follow._warm_charts):
    # nothing to see or read, so out of sight and out of the accessible tree, and no scroll region
    '.st-key-class_charts_warm{visibility:hidden;overflow:hidden!important;height:0!important}'
    # a teacher's live view's button that the page's script clicks (ui/class_live.py): never seen or tabbed to
    '[class*="st-key-class_live_look_"]{display:none!important}'
    + FOCUS_CSS  # every control's focus ring, 3:1 and more (ui/focus.py)
)


@functools.lru_cache(maxsize=1)
def narrow_screen_css() -> str:
    """The page's style (one ``<style>``, drawn once per page by ``navigation.py``, made once per
    process): for narrow screens, a figure box keyed ``fitw{W}_…`` is at least W px wide and
    scrolls sideways inside the page; under :data:`NARROW` px the Plotly toolbar, which would
    cover the figure's top, is hidden (the export popover and the chart's own taps still work).
    And :data:`ACCESSIBLE_CSS` (docs/accessibility.md)."""
    rules = "".join(f'[class*="st-key-fitw{w}_"]>div{{min-width:{w}px}}' for w in range(FIT_STEP, FIT_MAX + 1, FIT_STEP))
    # the line under such a figure that says it scrolls, shown only where the page is narrower
    # than the figure (the viewport less the page's side padding, SCROLL_HINT_PAD)
    hints = "".join(f"@media (max-width:{w + SCROLL_HINT_PAD}px){{.fig-scroll-hint.fsh{w}{{display:block}}}}"
                    for w in range(FIT_STEP, FIT_MAX + 1, FIT_STEP))
    return Html(f'<style>[class*="st-key-fitw"]{{overflow-x:auto;overflow-y:hidden}}{rules}'
                 f".fig-scroll-hint{{display:none;font-size:0.875rem;margin:0 0 .25rem 0}}{hints}"
                 f"@media (max-width:{NARROW}px){{.js-plotly-plot .modebar-container{{display:none!important}}}}"
                 f"{ACCESSIBLE_CSS}</style>")


# The regions that may scroll (a wide equation, a code block, a figure wider than a phone, a
# full matrix): WCAG 2.1.1 asks that a keyboard reach what they hide, so each one that overflows
# and holds nothing focusable gets tabindex=0 (arrow keys then scroll it) and a name. Run once per
# browser tab (the flag), on every change of the page (a MutationObserver, batched per frame).
SCROLL_REGIONS = ('.katex-display, [data-testid="stCode"] pre, [class*="st-key-fitw"], .fig-alt .fig-matrix, '
                  '[data-testid="stMarkdownContainer"] table')
FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]"
SCROLL_FOCUS_JS = (
    "<script>(() => {if (window.__aeScrollFocus) return; window.__aeScrollFocus = true; let queued = false;"
    "const mark = () => { queued = false;"
    f" for (const e of document.querySelectorAll({SCROLL_REGIONS!r})) {{"
    "  if (e.hasAttribute('data-scroll-focus')) continue;"
    "  if (e.scrollWidth <= e.clientWidth && e.scrollHeight <= e.clientHeight) continue;"
    f"  if ([...e.querySelectorAll({FOCUSABLE!r})].some(f => f.checkVisibility())) continue;"  # the toolbar is hidden on a phone
    "  e.setAttribute('data-scroll-focus', ''); e.setAttribute('tabindex', '0'); e.setAttribute('role', 'group');"
    "  e.setAttribute('aria-label', (e.classList.contains('katex-display') ? 'Equation' :"
    "    e.tagName === 'PRE' ? 'Code' : e.classList.contains('fig-matrix') ? 'Table' : 'Figure')"
    "    + ', scrolls sideways: arrow keys'); } };"
    "const soon = () => { if (!queued) { queued = true; requestAnimationFrame(mark); } };"
    "new MutationObserver(soon).observe(document.body, {childList: true, subtree: true});"
    "addEventListener('resize', soon); soon();})();" + POPOVER_FOCUS_JS + "</script>")


def scroll_focus_script() -> str:
    """:data:`SCROLL_FOCUS_JS` as HTML for ``st.html(..., unsafe_allow_javascript=True)`` (a
    constant: nothing a visitor types reaches it)."""
    return Html(SCROLL_FOCUS_JS)


def chart(fig, filename: str, key: str, where=None, more_config: dict | None = None, alt: str | None = None,
          **options) -> None:
    """A Plotly figure whose toolbar's camera saves ``filename.svg`` (``viz.export.plotly_config``,
    the one toolbar config of every figure in the app), drawn in ``where`` (a container or
    column; the page by default). The form for a figure redrawn on every slider move or
    training frame: one element, no download widgets. A figure whose labels need more width
    than a phone has (``viz.narrow.min_width``) is drawn at that width in a box that scrolls
    sideways (:func:`narrow_screen_css`), so its labels never run into each other.

    Every figure the app draws passes here, and here gets its text alternative
    (``viz.describe``, read from the figure's own data): its summary as the chart's accessible
    name (``alt``, after the page's own words for it when given) and, under the chart, the
    tables a screen reader reads and everyone may open (docs/accessibility.md)."""
    from viz.describe import alternative_html, describe
    from viz.export import plotly_config
    from viz.narrow import min_width
    described = describe(fig, alt)
    place = where or st
    need = min_width(fig)
    box, hint = place, ""
    if need > 360:  # wider than a phone's page: a box of that width that scrolls, where the page is narrower
        width = min(FIT_MAX, -(-need // FIT_STEP) * FIT_STEP)
        box = place.container(key=f"fitw{width}_{key}")
        # said in words, in the element already drawn under the chart (no element more): a
        # phone shows part of the figure, and a question about the rest must not look unanswerable
        hint = f'<p class="fig-scroll-hint fsh{width}">{SCROLL_HINT}</p>'
    box.plotly_chart(fig, key=key, config={**plotly_config(filename), **(more_config or {})},
                     alt=described.summary, **options)
    # a shared figure's text alternative is written once per process, as its description is
    derived = getattr(fig, "derived", None) if alt is None else None
    words = derived("alternative_html", lambda: alternative_html(described)) if derived else alternative_html(described)
    place.html(Html(hint + words))


def chart_with_export(fig, filename: str, key: str, where=None, **options) -> None:
    """:func:`chart` and one popover beside it, *SVG · PDF · PNG · HTML*: two elements in all
    (:func:`show_figure` draws four), the files' widgets built only while the popover is open."""
    chart(fig, filename, key, where, **options)
    export_popover(fig, filename, key, where)


def export_popover(fig, filename: str, key: str, where=None, label: str = "SVG · PDF · PNG · HTML",
                   latex=None, html: bool = True) -> None:
    """One popover offering ``fig`` (a figure, or a function that makes it) as SVG, PDF, PNG and
    (with ``html``) standalone HTML, and as LaTeX given ``latex``; closed, it is one element and
    builds nothing, the figure included."""
    export = (where or st).popover(label, key=f"{key}_export", on_change="rerun", icon=":material/image:",
                                   help="For a slide or a paper: vector files, drawn on the server")
    if export.open:
        with export:
            export_buttons(fig() if callable(fig) else fig, filename, key, latex, html=html)


def show_figure(fig, filename: str, key: str, latex=None) -> None:
    """A Plotly figure (SVG from its own toolbar's camera button), a download of it as a
    standalone, still interactive HTML page, and a popover that offers it as SVG, PDF and PNG
    for a slide or a paper (and as LaTeX, given ``latex``: a callable returning the .tex).
    Every file is made only when its button is clicked; the popover's contents are built only
    while it is open."""
    from viz.export import figure_html
    chart(fig, filename, key)
    row = st.container(horizontal=True)
    row.download_button("Download figure (HTML)", lambda: figure_html(fig, filename), file_name=f"{filename}.html",
                        mime="text/html", key=f"{key}_html", icon=":material/download:")
    export_popover(fig, filename, key, row, "SVG · PDF · PNG" + (" · LaTeX" if latex else ""), latex, html=False)


def export_buttons(fig, filename: str, key: str, latex=None, html: bool = False) -> None:
    """Size, theme and one download per format (and, with ``html``, the standalone HTML page);
    a server without Chromium says why instead (the buttons stay, disabled), and the LaTeX and
    HTML files need no browser."""
    from viz.export import export_image, export_unavailable, figure_html, MIME, SIZES
    browser = settings.chromium()
    size = st.segmented_control("Size", list(SIZES), key=f"{key}_size", default="slide", required=True,
                                format_func=lambda s: SIZES[s].label) or "slide"
    light = st.toggle("Light theme for print", key=f"{key}_light")
    why_not = export_unavailable(browser)
    chosen = SIZES[size]
    name = f"{filename}-{size}" + ("-print" if light else "")
    for fmt in MIME:
        st.download_button(f"{fmt.upper()}", lambda f=fmt: export_image(fig, f, chosen, light, browser),
                           file_name=f"{name}.{fmt}", mime=MIME[fmt], key=f"{key}_{fmt}", disabled=why_not is not None,
                           help=why_not, icon=":material/download:")
    if html:
        st.download_button("HTML", lambda: figure_html(fig, filename), file_name=f"{filename}.html", mime="text/html",
                           key=f"{key}_html", icon=":material/download:", help="Standalone and still interactive")
    if latex is not None:
        st.download_button("LaTeX (TikZ)", latex, file_name=f"{filename}.tex", mime="application/x-tex",
                           key=f"{key}_tex", icon=":material/functions:")
    st.caption(why_not or f"{chosen.width} × {chosen.height} px ({chosen.width * 0.75:.0f} × {chosen.height * 0.75:.0f} pt "
                          f"on the PDF's page), {chosen.font} px type; drawn on the server when clicked, one file at a time for "
                          "everyone (seconds). A button that says it failed met a busy server: click it again.")


