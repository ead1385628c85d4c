"""The app's pages: the script Streamlit runs for every browser session (``app.py`` serves it).

Pages only wire widgets to ``model/`` (translation, decoding records) and ``viz/``
(Plotly figures). Models are loaded once per process and shared by every session.
Tests drive this file with Streamlit's AppTest.
"""
import streamlit as st

from ui.class_panel import class_sidebar  # torch-free too: the class store is SQLAlchemy
from server.lanes import page_running, WorkCut  # torch-free: costly work waits in its own lane
from server.limits import page_run_slot, recently_paced, SlowDown, without_page_slot  # torch-free
from server.loading import models_loaded, warm_up  # torch-free: see below
from server.serving import page  # st.Page, resolved on disk once per process
from ui.figures import narrow_screen_css, scroll_focus_script

st.set_page_config(page_title="Attention Explorer", page_icon=":material/search:", layout="wide")

# Material Symbols (Streamlit's front end bundles the font): drawn the same in every browser,
# with no emoji font installed (Debian's chromium has none by default)
PAGES = {
    "Explore": [
        page("app_pages/translate.py", title="Translate", icon=":material/translate:", default=True),
        page("app_pages/compare.py", title="Compare", icon=":material/compare:", url_path="compare"),
        page("app_pages/bleu_length.py", title="BLEU vs length", icon=":material/trending_down:", url_path="bleu-vs-length"),
        page("app_pages/models.py", title="Models", icon=":material/folder_open:", url_path="models"),
        page("app_pages/attribution.py", title="Attention or attribution?", icon=":material/science:", url_path="attribution"),
    ],
    "Teach": [
        page("app_pages/lesson.py", title="Lesson", icon=":material/school:", url_path="lesson"),
        page("app_pages/step_through.py", title="Step through", icon=":material/footprint:", url_path="step-through"),
        page("app_pages/worked_example.py", title="Worked example", icon=":material/calculate:", url_path="worked-example"),
        page("app_pages/beam_tree.py", title="Beam search tree", icon=":material/account_tree:", url_path="beam-tree"),
        page("app_pages/what_if.py", title="What if", icon=":material/alt_route:", url_path="what-if"),
        page("app_pages/forced_alignment.py", title="Forced alignment", icon=":material/straighten:",
                url_path="forced-alignment"),
        page("app_pages/emerge.py", title="Watch attention emerge", icon=":material/eco:", url_path="emerge"),
        page("app_pages/luong_to_transformer.py", title="From Luong to the Transformer", icon=":material/layers:",
                url_path="luong-to-transformer"),
        page("app_pages/exercises.py", title="Exercises", icon=":material/edit_note:", url_path="exercises"),
        page("app_pages/classroom.py", title="Run it for a class", icon=":material/co_present:", url_path="classroom"),
    ],
}


def draw() -> None:
    """The page this rerun asked for, with the navigation and the class panel."""
    chosen = st.navigation(PAGES)
    st.html(narrow_screen_css())  # figures wider than a phone scroll sideways; no toolbar over them on a phone
    # a region that scrolls (an equation, code, a wide figure) is reached by the keyboard (docs/accessibility.md)
    st.html(scroll_focus_script(), unsafe_allow_javascript=True)
    if recently_paced():  # this tab asks for reruns faster than its share: they wait their turn (server/serving.py)
        st.warning("Slow down: this tab asks the server for new pages faster than one tab may, so each waits its "
                   "turn. Nothing is lost: the page shows what you last typed or picked.",
                   icon=":material/hourglass_top:")
    if not models_loaded.is_set() or warm_up.pending:
        # The first visit after the server started: torch and the checkpoints are still loading
        # (app.py loads them in the background). An empty chart drawn now makes the browser fetch
        # and start Plotly's 4.7 MB bundle during that wait instead of after it (bench/app_speed.py
        # measures the cold start; docs/performance.md). The
        # wait ends here, before the page runs, so the chart is gone whatever the page does (a
        # page may st.stop() early). Each step first waits for the warm-up thread to have done
        # it (server/loading.py: never import or load alongside it), giving the page-run slot to
        # the next tab meanwhile.
        loading = st.empty()
        with without_page_slot():
            warm_up.wait(warm_up.figures_ready)
        from viz.fast_figure import placeholder
        loading.plotly_chart(placeholder("Loading the models… (the first visit after the server starts)"),
                             config={"displayModeBar": False, "staticPlot": True},
                             alt="Loading the models: the page draws once they are in memory")
        try:
            with without_page_slot():
                warm_up.wait(warm_up.finished)
            from ui.zoo_cache import zoo
            zoo()
        finally:
            loading.empty()
    # the class panel (join a class, follow the teacher, the teacher's tools): every page, in the sidebar
    listen = class_sidebar({p.url_path: p for section in PAGES.values() for p in section}, chosen.url_path)
    try:
        chosen.run()
    finally:  # a follower's listener again, where this run answered the exercise its page shows (ui/class_follow.py)
        if listen is not None:
            listen()


try:
    # a few pages run at once, the others in turn (server/limits.py), from the rerun's first line:
    # thirty followers' reruns start together, and all but a few wait here, off the GIL
    # counted as a cheap run meanwhile: a costly decoding under way pauses for it (server/lanes.py)
    with page_running(), page_run_slot():
        draw()
except WorkCut as e:  # a costly decoding past the seconds one run may take: what was typed stays
    st.warning(e.message, icon=":material/timer:")
    st.button("Try again", key="work_cut_again", icon=":material/refresh:")
except SlowDown as e:  # this tab asked for more decodings than its share: what it typed stays in its boxes
    st.warning(f"Slow down: this tab asked the server for more translations in a few seconds than one tab may. "
               f"Nothing is lost: what you typed stays here, and the page shows its results on your next change "
               f"(in about {max(1, round(e.wait_s))} s, or press *Try again*).", icon=":material/hourglass_top:")
    st.button("Try again", key="slow_down_again", icon=":material/refresh:")
