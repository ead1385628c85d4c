"""Follow the teacher, per page kind: after the Step through send that ``follow_the_teacher`` times,
the teacher sends the worked example, then an exercise, then reveals that exercise; each round is
timed per follower, from the store's send (or reveal) until the follower's page, as its listener
opens or reruns it, has finished drawing and shows the round's own words (``ROUNDS``)."""
from __future__ import annotations

import asyncio
import time

from classroom_report import pct
from classroom_tab import Tab

REVEALED_EXERCISE = "which:3"
# (round, the page the followers end on, what the teacher sends (None: a reveal), what the page then shows)
ROUNDS = (
    ("worked-example", "worked-example", {}, b"Turn off the lights"),
    ("exercise", "exercises", {"ex": "which", "seed": "3"}, b"drew this heatmap?"),
    ("reveal", "exercises", None, b"The teacher revealed the answer."),
)


async def timed_rounds(tabs: list[Tab], store, key: str, code: str, until_sent) -> dict:
    """Each of ``ROUNDS`` in turn, every follower at once; ``until_sent`` is what a follower's page
    does on a change (``classroom_modes.until_sent``). ``follow_<round>_p50_ms`` / ``_p95_ms`` /
    ``_max_ms`` / ``_errors`` per round."""
    out = {}
    for name, page, params, shown in ROUNDS:
        await asyncio.sleep(2.0)  # every follower's listener open again on the page it shows
        sent = time.perf_counter()
        if params is None:
            await asyncio.to_thread(store.reveal, key, code, REVEALED_EXERCISE)
        else:
            await asyncio.to_thread(store.send, key, code, page, params)
        got = await asyncio.gather(*(_follow(tab, page, shown, sent, until_sent) for tab in tabs),
                                   return_exceptions=True)
        times = [ms for ms in got if isinstance(ms, float)]
        out.update({f"follow_{name}_p50_ms": pct(times, 0.5), f"follow_{name}_p95_ms": pct(times, 0.95),
                    f"follow_{name}_max_ms": round(max(times), 1) if times else None,
                    f"follow_{name}_errors": len(tabs) - len(times)})
    return out


async def _follow(tab: Tab, page: str, shown: bytes, sent: float, until_sent) -> float | None:
    """One follower's milliseconds from ``sent`` until its page shows ``shown``; None if it never did."""
    _, _, error = await until_sent(tab, page, sent + 15.0)
    return None if error or shown not in tab.drawn else 1000 * (time.perf_counter() - sent)
