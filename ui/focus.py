"""Focus a keyboard user can see and follow (WCAG 2.2 AA, docs/accessibility.md): the ring every
control draws when focused, and focus moved into a popover when it opens and back when it closes.
Both ride on what every page already draws (``ui/figures.narrow_screen_css``'s style and
``ui/figures.scroll_focus_script``'s script): no element more on a rerun."""
from __future__ import annotations

RING = "#0550ae"  # 7.6:1 on white; the white band around it keeps 3:1 on any background (the grey sidebar's too)
# 1.4.11 / 2.4.7: Streamlit rings a focused button in its primary colour at 50 % (about 2.4:1 on
# white); every control gets a 3 px ring instead, with a 3 px white band outside it. A checkbox,
# radio or switch hides its own input: its label is ringed. 2.4.11: the page scrolls a focused
# control clear of the header pinned at its top.
FOCUS_CSS = (
    ':is(a[href],button,summary,[tabindex]:not([tabindex="-1"])):focus-visible'
    f'{{outline:3px solid {RING}!important;outline-offset:0!important;box-shadow:0 0 0 6px #fff!important}}'
    'label:has(input:is([type=checkbox],[type=radio]):focus-visible)'
    f'{{outline:3px solid {RING};outline-offset:2px;box-shadow:0 0 0 8px #fff;border-radius:4px}}'
    'html,[data-testid="stMain"],[data-testid="stAppViewContainer"]{scroll-padding-top:4.5rem;scroll-padding-bottom:1rem}'
)

# 2.4.3 / 2.1.2: a popover (*I am the teacher*, *New key*, the roster) opened by a click or a key
# takes the focus at its first box (else its first control); closed (Escape, the button again, a
# click elsewhere) the focus goes back to the button that opened it, unless the person put it
# somewhere else.
POPOVER_FOCUS_JS = (
    "(() => {if (window.__aePopoverFocus) return; window.__aePopoverFocus = true; let opener = null;"
    "const body = () => document.querySelector('[data-testid=\"stPopoverBody\"]');"
    "const first = 'input:not([type=hidden]):not([disabled]), textarea, select, button:not([disabled]), a[href],"
    " [tabindex]:not([tabindex=\"-1\"])';"
    "const box = p => [...p.querySelectorAll('input:not([type=hidden]):not([disabled]), textarea, select')]"
    " .find(x => x.checkVisibility());"
    "const enter = p => { const f = box(p) || [...p.querySelectorAll(first)].find(x => x.checkVisibility());"
    " (f || p).focus(); };"
    "document.addEventListener('click', e => {"
    " const b = e.target.closest && e.target.closest('[data-testid=\"stPopoverButton\"]');"
    " if (!b) return; const until = Date.now() + 5000; let seen = 0;"
    # the popover's content may draw a frame or two after the popover: its box is waited for a moment
    " const into = () => { const p = body();"
    "  if (p && b.getAttribute('aria-expanded') === 'true') { seen = seen || Date.now();"
    "   if (box(p) || Date.now() - seen > 400) { opener = b; enter(p); return; } }"
    "  if (Date.now() < until) requestAnimationFrame(into); };"
    " requestAnimationFrame(into); }, true);"
    # a rerun that draws the popover's content anew drops the focus to the page: put it back in
    # (looked at a moment later: between a Tab's blur and its focus the page has no focus either)
    "let queued = false;"
    "const check = () => { queued = false; if (!opener) return; const p = body(), a = document.activeElement;"
    " const lost = !a || a === document.body;"
    " if (p) { if (lost) enter(p); return; }"
    " const o = opener; opener = null; if (lost && o.isConnected) o.focus(); };"
    "new MutationObserver(() => { if (opener && !queued) { queued = true; setTimeout(check, 50); } })"
    ".observe(document.body, {childList: true, subtree: true});})();"
)
