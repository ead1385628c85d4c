"""Watch attention emerge: train two tiny attention models live on a toy task.

A few hundred steps on a CPU (``model.toy.train_toy``, the real ``Seq2Seq`` classes, only
small) are enough for attention to go from uniform to sharp. Every few steps the callback
receives the alignment matrix of a fixed probe string under forced decoding; the page draws
it live while training runs, then keeps every frame (in the session) as an animation,
Bahdanau and Luong side by side, with loss, attention entropy and diagonality per step.

Training is the one thing on the server a visitor can start that takes seconds of CPU, so
at most ``settings.live_trainings()`` run at once, server-wide; the others wait their turn,
see their place in the queue, and can cancel (``server/limits.py``).
"""
import time

import numpy as np
import streamlit as st

from server import settings
from ui.figures import chart, chart_with_export
from ui.url_state import from_link, query_param, set_query_params
from server.limits import without_page_slot
from server.training_queue import training_queue
from model.analysis import diagonality, entropy
from model.toy import tiny_config, toy_accuracy, toy_pair_target, toy_vocabulary, train_toy
from viz.teaching_figures import emergence_animation, emergence_curves, highlighted_heatmap

RESULT = "emerge_result"  # session key: the frames of the last run, kept across reruns
PROBE = "3 8 1 6 2 9 4"   # distinct digits, unsorted: reverse, copy and sort all look different
MODELS = {  # title -> (decoder, attention)
    "Bahdanau (RNNsearch, additive)": ("rnnsearch", "additive"),
    "Luong (global, general)": ("luong", "general"),
}
TASKS = {
    "reverse": "Reverse the digits: the alignment should become the anti-diagonal.",
    "copy": "Copy the digits: the alignment should become the diagonal.",
    "sort": "Sort the digits: each output digit must find where it sits in the input, a permutation.",
}
STEPS = [20, 50, 100, 200, 300, 400, 600]
TIME_LIMIT = 25.0  # seconds per model, so a full run of both stays within a minute


@st.cache_resource(show_spinner="Preparing the toy task…")
def toy_vocab():
    """The digit vocabulary, once per process. One throwaway training step comes with it:
    a process's first optimiser step loads parts of torch (about a second), paid here on the
    first visit rather than between the button press and the first frame."""
    vocab = toy_vocabulary()
    train_toy(tiny_config(vocab), vocab, steps=1)
    return vocab


st.title("Watch attention emerge")
st.caption("Train two tiny attention models live, here on the server's CPU, and watch their alignment matrix go "
           "from uniform (the models know nothing) to sharp (they have learned where to look).")

c_task, c_steps = st.columns(2)
with c_task:
    from_link("emerge_task", lambda: query_param("task") if query_param("task") in TASKS else list(TASKS)[0])
    task = st.selectbox("Toy task", list(TASKS), key="emerge_task", format_func=lambda t: f"{t}: {TASKS[t]}")
with c_steps:
    from_link("emerge_steps", lambda: int(query_param("steps")) if query_param("steps") in map(str, STEPS) else 300)
    steps = st.select_slider("Training steps", STEPS, key="emerge_steps",
                             help="Batches of 64 random digit strings (4–9 digits), Adam, learning rate 0.01.")
set_query_params(task=task if task != "reverse" else None, steps=steps if steps != 300 else None)
every = max(1, steps // 30)  # about 30 frames per model
vocab = toy_vocab()
source_tokens = vocab.pieces(vocab.encode(PROBE)) + ["</s>"]
target_tokens = vocab.pieces(vocab.encode(toy_pair_target(task, PROBE))) + ["</s>"]
st.markdown(f"Probe string, drawn every {every} step(s): **{PROBE}** → **{toy_pair_target(task, PROBE)}** "
            f"(forced decoding, so we see where the model looks for each correct output digit).")


def train_both() -> None:
    """Train the two models one after the other, drawing the probe's alignment as they learn."""
    live = st.empty()
    runs, accuracy, seconds = {}, {}, {}
    with live.container():
        panels = dict(zip(MODELS, st.columns(len(MODELS))))
        for title, (decoder, attention) in MODELS.items():
            with panels[title]:
                holder = st.empty()
            frames = []

            def on_frame(step, loss, weights, title=title, frames=frames, holder=holder):
                frames.append((step, loss, np.asarray(weights)))
                # a training frame: the camera only, no widget drawn per frame
                chart(highlighted_heatmap(weights, source_tokens, target_tokens,
                                          title=f"{title}: step {step}, loss {loss:.2f}"),
                      f"emerge-{task}-{MODELS[title][0]}-step{step}", f"emerge_live_{title}_{step}", where=holder)

            start = time.perf_counter()
            model = train_toy(tiny_config(vocab, decoder, attention), vocab, task, steps, probe=PROBE, every=every,
                              on_frame=on_frame, time_limit=TIME_LIMIT)
            seconds[title] = time.perf_counter() - start
            accuracy[title] = toy_accuracy(model, vocab, task, n=200)
            runs[title] = frames
    live.empty()
    st.session_state[RESULT] = dict(task=task, steps=steps, runs=runs, accuracy=accuracy, seconds=seconds,
                                    source=source_tokens, target=target_tokens)


def wait_for_a_turn(ticket) -> None:
    """Show this visitor's place in the server's queue until their training may start. A click
    anywhere (Cancel included) reruns the page, which ends this wait and gives the place back."""
    queue, slots = training_queue(), settings.live_trainings()
    status = st.empty()
    place = queue.place(ticket, slots)
    if place:
        st.button("Cancel", key="emerge_cancel", icon=":material/close:")
    while place:
        # each redraw is also where Streamlit stops this run if the visitor clicked or left
        status.info(f"The server trains {slots} model pair(s) at a time, for the whole class. You are number "
                    f"{place} in the queue; your training starts as soon as the one(s) before you finish.",
                    icon=":material/hourglass_top:")
        place = queue.wait(ticket, slots, timeout=0.5)
    status.empty()


if st.button("Train both models", key="emerge_train", type="primary", icon=":material/play_arrow:"):
    ticket = training_queue().join()
    try:
        with without_page_slot():  # the queue's wait and the training leave the other tabs' pages their turns
            wait_for_a_turn(ticket)
            train_both()
    finally:  # finished, failed, cancelled or left: the next visitor's turn
        training_queue().leave(ticket)

result = st.session_state.get(RESULT)
if result is None:
    st.info("Press **Train both models**. It takes a few seconds per hundred steps; the alignment is redrawn as "
            "training goes.", icon=":material/school:")
    st.stop()

st.subheader(f"{result['task']}: {result['steps']} steps")
cols = st.columns(len(result["runs"]))
for col, title in zip(cols, result["runs"]):
    frames = result["runs"][title]
    col.metric(title, f"{result['accuracy'][title]:.0%} exactly right",
               help="Share of 200 fresh digit strings the trained model gets exactly right (greedy).")
    col.caption(f"{frames[-1][0]} steps in {result['seconds'][title]:.1f} s, final loss {frames[-1][1]:.3f}"
                + ("" if frames[-1][0] == result["steps"] else " (stopped at the time limit)"))
# the camera saves the frame on screen; a file made on the server would hold only the first
chart(emergence_animation(result["runs"], result["source"], result["target"]), f"emerge-{result['task']}-frame",
      "emerge_animation")
st.caption("Press ▶ play (or drag the slider): both models' alignment of the probe string, frame by frame. At step 1 "
           "the weights are nearly uniform; as the loss falls each output digit learns where to look.")
curves = {title: {"step": [f[0] for f in frames], "loss": [f[1] for f in frames],
                  "entropy": [float(entropy(f[2]).mean()) for f in frames],
                  "diagonality": [diagonality(f[2]) for f in frames]}
          for title, frames in result["runs"].items()}
chart_with_export(emergence_curves(curves), f"emerge-{result['task']}-curves", "emerge_curves")
st.caption("Entropy of α_i in nats, averaged over the output steps: log S (uniform) at the start, towards 0 "
           "(all weight on one token) as attention sharpens. Diagonality is 1 when step i attends where i/T "
           "falls in the source: high for copy, low for reverse.")
