"""How the Streamlit runtime is set up for a class server: which of the changes to Streamlit's
private internals (``server/streamlit_patches.py``) are applied at start-up, and the rule that
paces a tab's full-page reruns.

``ATTN_EXPLORER_STREAMLIT_PATCHES`` chooses them: ``all`` (the default), ``none`` (the server
then runs as Streamlit does), or patch names separated by commas; ``-name`` leaves one out of
the rest (``all,-send_promptly``). A patch written for another Streamlit version than the one
installed is refused, so an upgrade runs as Streamlit does until the patch is re-read. Each
outcome is printed at start-up and listed on ``/_attn/ready``. What each patch buys, with the
commands that measure it, is in ``docs/performance.md`` ("Streamlit patches").
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass

from server import settings, streamlit_patches as patches
from server.streamlit_patches import files_watched, page  # noqa: F401 - the app's names for them

_LOG = logging.getLogger(__name__)
ENV = "ATTN_EXPLORER_STREAMLIT_PATCHES"


@dataclass(frozen=True)
class Outcome:
    """What start-up did with one patch."""
    name: str
    applied: bool
    reason: str


def chosen(value: str | None = None) -> tuple[list[str], list[str]]:
    """(the patch names ``value`` chooses, in the records' order; the names it gives that no
    patch has). ``value`` defaults to the environment's ``ATTN_EXPLORER_STREAMLIT_PATCHES``."""
    value = settings.streamlit_patches() if value is None else value
    words = [w.strip() for w in value.split(",") if w.strip()] or ["all"]
    names = set()
    for word in words:
        if word == "all":
            names.update(patches.BY_NAME)
        elif word != "none" and not word.startswith("-"):
            names.add(word)
    names -= {w[1:] for w in words if w.startswith("-")}
    unknown = sorted({w.lstrip("-") for w in words} - {"all", "none"} - set(patches.BY_NAME))
    return [p.name for p in patches.PATCHES if p.name in names], unknown


def installed_streamlit() -> str:
    import streamlit
    return streamlit.__version__


def apply_patches(value: str | None = None, installed: str | None = None) -> list[Outcome]:
    """Apply the chosen patches written for the installed Streamlit; every outcome is printed and
    kept for ``/_attn/ready``. The rerun pacer is set before ``pace_reruns`` can call it."""
    names, unknown = chosen(value)
    installed = installed or installed_streamlit()
    patches.set_rerun_pacer(rerun_wait)
    outcomes = []
    for patch in patches.PATCHES:
        if patch.name not in names:
            outcome = Outcome(patch.name, False, f"not chosen ({ENV})")
        elif patch.streamlit != installed:
            outcome = Outcome(patch.name, False, f"refused: written for Streamlit {patch.streamlit}, "
                                                 f"this is {installed}; running as Streamlit does")
        elif patch.apply():
            patch.applied = True
            outcome = Outcome(patch.name, True, "applied")
        else:
            outcome = Outcome(patch.name, False, "not applied: this Streamlit lacks its target, or files are watched")
        outcomes.append(outcome)
    for name in unknown:
        outcomes.append(Outcome(name, False, "no such patch"))
    _OUTCOMES[:] = outcomes
    for o in outcomes:  # on the terminal, as the server's other start-up lines
        print(f"Attention Explorer: Streamlit patch {o.name}: {o.reason}", flush=True)
        _LOG.info("Streamlit patch %s: %s", o.name, o.reason)
    return outcomes


_OUTCOMES: list[Outcome] = []  # what start-up did, for /_attn/ready


def outcomes() -> list[dict]:
    """What start-up did with each patch, as ``/_attn/ready`` lists it; ``used``: Streamlit's
    runtime has gone through the applied change since (it still calls what the patch changed)."""
    return [{**asdict(o), "used": o.applied and patches.BY_NAME[o.name].used()} for o in _OUTCOMES]


def rerun_wait(session_id: str) -> float:
    """How long a tab's full-page rerun request waits for its share (``server.limits.rerun_rate``);
    0 runs it now. A tab on the raw websocket asking twenty a second would otherwise start a run
    for each, every one stopping the one before; a held request costs a timer, and only a tab's
    newest is kept (its page then says "slow down", ``navigation.py``)."""
    from server.limits import paced, rerun_rate
    wait = rerun_rate().take(session_id, time.monotonic())
    if wait:
        paced(session_id)
    return wait
