"""How the Streamlit runtime is set up for a class server: which of the changes to Streamlit's
private internals and of the private reads (``server/streamlit_patches/``) are in effect from
start-up, and the rule that paces a tab's full-page reruns.

``ATTN_EXPLORER_STREAMLIT_PATCHES`` chooses them: ``all`` (the default), ``none`` (the server
then runs as Streamlit does and reads nothing private of it), or patch and read names separated
by commas; ``-name`` leaves one out of the rest (``all,-send_promptly``). A patch or read written
for another Streamlit version than the one installed is refused, so an upgrade runs as Streamlit
does until it is re-read. Each outcome is printed at start-up and listed on ``/_attn/ready``. What
each patch buys, with the commands that measure it, is in ``docs/performance.md`` ("Streamlit
patches").
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass

from server.streamlit_patches import patches, reads, switch
from server.streamlit_patches.fingerprints import installed_streamlit
from server.streamlit_patches.patches import files_watched, page  # noqa: F401 - the app's names for them

_LOG = logging.getLogger(__name__)
ENV = switch.ENV


@dataclass(frozen=True)
class Outcome:
    """What start-up did with one patch or private read (``kind``: "patch" or "read")."""
    name: str
    applied: bool
    reason: str
    kind: str = "patch"


def chosen(value: str | None = None) -> tuple[list[str], list[str]]:
    """(the patch and read names ``value`` chooses, patches first, each in the records' order; the
    names it gives that no patch or read has). ``value`` defaults to the environment's
    ``ATTN_EXPLORER_STREAMLIT_PATCHES``."""
    return switch.chosen([p.name for p in patches.PATCHES] + [r.name for r in reads.READS], value)


def apply_patches(value: str | None = None, installed: str | None = None) -> list[Outcome]:
    """Apply the chosen patches, and switch on the chosen private reads, written for the installed
    Streamlit (the others off: no private read); every outcome is printed and kept for
    ``/_attn/ready``. The rerun pacer is set before ``pace_reruns`` can call it."""
    names, unknown = chosen(value)
    installed = installed or installed_streamlit()
    patches.set_rerun_pacer(rerun_wait)
    outcomes = []
    for patch in patches.PATCHES:
        refused = _refused(patch.name, patch.streamlit, names, installed)
        if refused:
            outcome = Outcome(patch.name, False, refused)
        elif patch.apply():
            patch.applied = True
            outcome = Outcome(patch.name, True, "applied")
        else:
            outcome = Outcome(patch.name, False, "not applied: this Streamlit lacks its target, or files are watched")
        outcomes.append(outcome)
    for read in reads.READS:
        refused = _refused(read.name, read.streamlit, names, installed)
        read.chosen = not refused
        outcomes.append(Outcome(read.name, read.chosen, refused or "reads Streamlit's private state", "read"))
    for name in unknown:
        outcomes.append(Outcome(name, False, "no such patch"))
    _OUTCOMES[:] = outcomes
    for o in outcomes:  # on the terminal, as the server's other start-up lines
        print(f"Attention Explorer: Streamlit {o.kind} {o.name}: {o.reason}", flush=True)
        _LOG.info("Streamlit %s %s: %s", o.kind, o.name, o.reason)
    return outcomes


def _refused(name: str, written_for: str, names: list[str], installed: str) -> str:
    """Why a patch or read is not in effect ("" when it is chosen and written for this Streamlit)."""
    if name not in names:
        return f"not chosen ({ENV})"
    if written_for != installed:
        return f"refused: written for Streamlit {written_for}, this is {installed}; running as Streamlit does"
    return ""


_OUTCOMES: list[Outcome] = []  # what start-up did, for /_attn/ready


def outcomes() -> list[dict]:
    """What start-up did with each patch, as ``/_attn/ready`` lists it; ``used``: Streamlit's
    runtime has gone through the applied change since (it still calls what the patch changed)."""
    def used(name: str) -> bool:
        return reads.BY_NAME[name].used if name in reads.BY_NAME else patches.BY_NAME[name].used()
    def counts(name: str) -> dict:
        patch = patches.BY_NAME.get(name)
        return {"counts": patch.counts()} if patch is not None and patch.counts else {}
    return [{**asdict(o), "used": o.applied and used(o.name), **counts(o.name)} for o in _OUTCOMES]


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
