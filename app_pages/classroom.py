"""Run it for a class: how a teacher serves the app to a room from one machine.

The server command, the address students open, shared links, the owner's switch, the
server's limits, and what ``bench/classroom.py`` measured with many sessions at once
(read from ``results/benchmarks.jsonl``, so the page shows the latest measurement).
"""
from urllib.parse import quote, urlsplit

import pandas as pd
import streamlit as st

from server import settings
from ui.class_session import signed_in_teacher
from ui.examples import DEFAULT_SENTENCE
from ui.figures import show_figure
from ui.zoo_cache import DEFAULT_MODEL
from viz.classroom import load_curve_figure

BENCHMARKS = settings.results() / "benchmarks.jsonl"
P95_BUDGET_MS = 1000  # what a class should feel: a click answered within a second
SHOWN = ["replicas", "sessions", "think_s", "interactions", "p50_ms", "p95_ms", "max_ms", "errors", "mismatches", "rss_mb",
         "commit"]

st.title("Run it for a class")
st.caption("One teacher's computer serves the whole room: every student opens the same address, and the models "
           "are loaded once and shared by all of them.")

st.subheader("1. Start the server")
st.code("pip install -r requirements.txt\n"
        "streamlit run app.py --server.address 0.0.0.0 --server.port 8501", language="bash")
st.markdown("`--server.address 0.0.0.0` lets other computers on the network reach it (the default listens on this "
            "computer only). The first page waits a few seconds while the models load; after that, pages answer "
            "at once.")

st.subheader("2. The address students open")
here = urlsplit(st.context.url or "")
host = here.hostname or "localhost"
if host in ("localhost", "127.0.0.1", "::1"):
    st.markdown("You are looking at this page on the server itself, as `localhost`, which students cannot open. "
                "Give them this computer's network address instead: `http://ADDRESS:8501`, where ADDRESS is what "
                "`hostname -I` (Linux), `ipconfig getifaddr en0` (macOS) or `ipconfig` (Windows) prints.")
else:
    st.markdown(f"Students open **`{here.scheme}://{here.netloc}`**: the address you are using now.")
base = f"{here.scheme}://{here.netloc}" if here.netloc else "http://ADDRESS:8501"
st.markdown("A link carries the sentence and the choices, so the whole room sees the same thing:")
text = st.text_input("Sentence for the links", DEFAULT_SENTENCE, key="classroom_text", max_chars=300)
q = quote(text.strip() or DEFAULT_SENTENCE)
st.code(f"{base}/?text={q}&model={DEFAULT_MODEL}\n"
        f"{base}/compare?text={q}&models=rnnsearch,luong-dot,luong-general,luong-concat\n"
        f"{base}/step-through?text={q}&model={DEFAULT_MODEL}&step=3", language="text")

st.subheader("3. Visitors read, the owner writes")
st.markdown("A server started as above is **read-only for visitors**: nothing a student clicks writes to the "
            "repository or starts minutes of work. The *Recompute* button of *BLEU vs length* (which decodes "
            "the test data for minutes and overwrites the shipped numbers) works only for the signed-in teacher, "
            "the session holding the teacher key; no server-wide switch hands it to the room.")
st.markdown(f"This browser: **{'the signed-in teacher' if signed_in_teacher() else 'read-only, as a visitor'}**.")
st.markdown("The one thing a student writes is an answer on *Exercises*, anonymously, into a class the teacher "
            "opened. The teacher signs in (the sidebar's *Class* panel) with the key the server prints when it "
            "starts, or the one it was started with (`ATTN_EXPLORER_TEACHER_KEY`), opens a class, and sees the "
            "room's answers, the roster and who waits live, without a reload (*Pause live updates* holds them "
            "still), sends a page to every screen and reveals answers. The key is never shown on a page.")

st.subheader("4. What the server shares out")
st.markdown(
    f"- **Decoding**: at most **{settings.decoders()}** translation(s) compute at once (`ATTN_EXPLORER_DECODERS`, "
    "one per core); the others wait a few milliseconds for their turn. A sentence already translated with the "
    "same model and settings comes from the shared cache.\n"
    f"- **Live training** (*Watch attention emerge*): at most **{settings.live_trainings()}** at once "
    "(`ATTN_EXPLORER_LIVE_TRAININGS`); other students see their place in the queue and can cancel.")

st.subheader("5. A lecture: one process per core")
st.markdown("One server process runs its Python on one core at a time, which holds a class of about 30. For a "
            "lecture, run one process per core behind HAProxy (`sudo apt-get install haproxy`); students open "
            "the same address as before:")
st.code("python scripts/serve.py --replicas 2 --port 8501", language="bash")
st.markdown("HAProxy gives each browser a cookie naming its process, so it keeps reaching the process that holds "
            "its session (students behind one network address are still spread out), sends no one to a process "
            "still loading its models, and takes a process that dies out within seconds; the command restarts "
            "it, and its students' pages come back on another process from their links. **More machines**: "
            "add `--backend HOST:8501` for each, HOST its private address, and start `streamlit run app.py "
            "--server.address HOST --server.port 8501` there (never `0.0.0.0`: students would reach it past the "
            "proxy), with the same `STREAMLIT_SERVER_COOKIE_SECRET` and one PostgreSQL class store, "
            "`ATTN_EXPLORER_CLASS_DB=postgresql://…`; the command refuses to start without them and prints what to "
            "run. Ctrl-C stops everything the command started.")
st.markdown("**On a shared network, serve HTTPS** (else the teacher key crosses the room in clear): add "
            "`--tls-cert cert.pem --tls-key key.pem`; students open `https://ADDRESS:PORT`. A self-signed "
            "certificate (`openssl req -x509 …`, docs/campus.md) makes each browser warn once: *Advanced* → "
            "*Proceed*.")

st.subheader("6. How many students, measured")
runs = pd.DataFrame()
if BENCHMARKS.exists():
    runs = pd.read_json(BENCHMARKS, lines=True)
    runs = runs[runs["bench"] == "classroom"] if "bench" in runs else pd.DataFrame()
    if "killed_replica" in runs:  # a fault test's deliberate errors are not a class size's curve
        runs = runs[runs["killed_replica"].isna()]
    runs = runs.assign(replicas=runs["replicas"].fillna(1) if "replicas" in runs else 1)
if runs.empty:
    st.info(f"No load test recorded yet in `{BENCHMARKS}`. Run `python bench/classroom.py --sessions 30 "
            f"--append {BENCHMARKS.relative_to(settings.ROOT) if BENCHMARKS.is_relative_to(settings.ROOT) else BENCHMARKS}`.",
            icon=":material/hourglass_empty:")
    st.stop()
if "think_s" not in runs:
    runs = runs.assign(think_s=float("nan"))
latest = runs.drop_duplicates(["replicas", "sessions", "think_s"], keep="last").sort_values(
    ["replicas", "sessions", "think_s"])
# the curve: the think time measured at the most class sizes; the table has every run
think = latest["think_s"].mode().iloc[0] if latest["think_s"].notna().any() else None
curve = latest[latest["think_s"] == think] if think is not None else latest
st.markdown("`bench/classroom.py` starts the real server and plays a lesson in many browser sessions at once "
            "(open a shared link, change the sentence, Compare four models, move the step-through slider five "
            "times, open the beam tree; a few seconds of thinking between clicks), with some sessions sending "
            "empty, very long or markup text or leaving mid-page. It times each click until the page has "
            "finished redrawing.")
show_figure(load_curve_figure(curve, P95_BUDGET_MS), "classroom-load", key="classroom_curve")
if think is not None:
    st.caption(f"The curve: {think:g} s of thinking between clicks; the table below has every measured run.")
st.dataframe(latest.reindex(columns=[c for c in SHOWN if c in latest]), hide_index=True, width="stretch")
within = latest[(latest["p95_ms"] <= P95_BUDGET_MS) & (latest["errors"] == 0) & (latest["mismatches"] == 0)]
if within.empty:
    st.markdown(f"**No measured class size kept the 95th percentile within {P95_BUDGET_MS / 1000:.0f} s.**")
else:
    best = within.sort_values(["sessions", "think_s"], ascending=[True, False]).iloc[-1]
    pace = f", {best['think_s']:g} s of thinking between clicks" if best["think_s"] == best["think_s"] else ""
    setup = "one process" if best["replicas"] == 1 else f"{best['replicas']:g} processes behind HAProxy"
    st.markdown(f"**Measured: {int(best['sessions'])} students at once** on {setup}{pace}, with 95% of clicks answered "
                f"within {best['p95_ms'] / 1000:.2f} s, no errors and every page identical to a one-student run "
                f"(server memory {best['rss_mb']:.0f} MB).")
st.caption("Host: " + str(latest["host"].iloc[-1] if "host" in latest else "not recorded")
           + ". Other machines differ: run the same command on yours before the lesson.")
