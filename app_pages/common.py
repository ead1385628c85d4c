"""What every page shares: the model zoo (loaded once per process), the URL state, and
the text-input rules. No model logic lives here: only loading and wiring."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
import streamlit as st

from model.search import BeamNode, DecodingRecord, InputError, MAX_BEAM, translate
from model.zoo import load_zoo, ZooEntry
from ui.url_state import query_param, set_query_params  # noqa: F401 - the pages import them from here
from server import settings
from server.loading import models_loaded
from server.limits import decoding_slot
from server.shared import per_process
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

ROOT = settings.ROOT
DEFAULT_MODEL = "rnnsearch"  # the paper's model: what a page shows when the link names none
MAX_INPUT_CHARS = 1000  # the text box's limit; the model further cuts at MAX_SOURCE_TOKENS pieces


def zoo(root: str | None = None) -> dict[str, ZooEntry]:
    """Every checkpoint, loaded once per process and shared by all browser sessions.

    The folder is read from ATTN_EXPLORER_CHECKPOINTS when called, not when this module is
    imported, so a test that sets it after importing still gets its own checkpoints."""
    args = (root or checkpoints_root(), settings.hf_models(), str(settings.results() / "hf"))
    if models_loaded.is_set() or get_script_run_ctx(suppress_warning=True) is None:
        models = _load_zoo(*args)
    else:
        with st.spinner("Loading the models…"):
            models = _load_zoo(*args)
    models_loaded.set()
    return models


@per_process  # not st.cache_resource: a visitor's clear_cache must not unload them (server/shared.py)
def _load_zoo(root: str, made_elsewhere: tuple[str, ...] = (), metrics_root: str | None = None) -> dict[str, ZooEntry]:
    global zoo_loads
    zoo_loads += 1
    return load_zoo(root, made_elsewhere=made_elsewhere, metrics_root=metrics_root)


zoo_loads = 0  # how many times this process has loaded the zoo (app.py's /_attn/ready reports it)


def available_models() -> dict[str, ZooEntry]:
    return {n: e for n, e in zoo().items() if e.available}


def unavailable_models() -> dict[str, ZooEntry]:
    return {n: e for n, e in zoo().items() if not e.available}


def show_unavailable() -> None:
    """List the models that could not be loaded, with the reason, without stopping the page."""
    broken = unavailable_models()
    if broken:
        with st.expander(f"{len(broken)} model(s) unavailable", expanded=not available_models()):
            for e in broken.values():
                st.warning(f"**{e.display_name}** is unavailable: {e.error}")


# the one place that says why a view leaves the models made elsewhere out
OURS_ONLY = ("Models made elsewhere (Hugging Face) are not listed here: this view shows the decoder's internals "
             "step by step (the RNNs' annotations and query states, our Transformer's projections), which only "
             "our own models expose. Translate, Compare, Beam search, What if and Forced alignment show theirs.")
ENGLISH_FRENCH = ("en", "fr")


def usable_models(purpose: str, attention_only: bool = False, ours_only: bool = False,
                  pair: tuple[str, str] | None = None) -> dict[str, ZooEntry]:
    """The loaded models (with attention, if asked; only ours, if asked; only those translating
    ``pair``, e.g. the Hansards gold's English → French), after listing the unavailable ones;
    stops the page with a message if none is left, e.g. purpose="nothing can be translated"."""
    show_unavailable()
    models = {n: e for n, e in available_models().items() if (e.has_attention or not attention_only)
              and not (ours_only and e.made_elsewhere) and (pair is None or e.languages == pair)}
    if ours_only and any(e.made_elsewhere for e in available_models().values()):
        st.caption(OURS_ONLY)
    if not models:
        kind = "model with attention" if attention_only else "model"
        st.error(f"No {kind} could be loaded, so {purpose}. See the reasons above.")
        st.stop()
    return models


def target_language(entry: ZooEntry) -> str:
    """The language the model writes, by name ("French"), from the model itself."""
    from model.hf import language_name  # no transformers: only the names of languages
    return language_name(entry.languages[1])


def attention_caption(entry: ZooEntry) -> str | None:
    """Which layer × heads the one matrix of a Transformer is, and how that layer was chosen."""
    cfg = entry.model.cfg
    if cfg.decoder != "transformer":
        return None
    if entry.made_elsewhere:
        from model.hf import attention_layer_note
        return (f"{entry.display_name} has {cfg.layers} decoder layers × {cfg.heads} heads of cross-attention; this is "
                + attention_layer_note(cfg, entry.spec) + ". Compare and *From Luong to the Transformer* show every head.")
    return (f"A Transformer has {cfg.layers} layers × {cfg.heads} heads of cross-attention; this is layer "
            f"{cfg.shown_layer % cfg.layers + 1} with its heads averaged. *From Luong to the Transformer* shows every head.")


def pick_model(key: str, attention_only: bool = False, label: str = "Model",
               purpose: str = "there is nothing to show", ours_only: bool = False,
               pair: tuple[str, str] | None = None) -> tuple[str, ZooEntry]:
    """Model selectbox, first from the URL (``?model=``); says so when the link names a model
    that is not available here, and stops the page if no model is usable."""
    models = usable_models(purpose, attention_only, ours_only, pair)
    names = list(models)
    wanted = query_param("model", DEFAULT_MODEL)
    name = st.selectbox(label, names, index=names.index(wanted) if wanted in names else 0, key=key,
                        format_func=lambda n: models[n].display_name)
    if wanted not in names and query_param("model"):
        st.warning(f"The model in the link, {plain(wanted)}, is not available here; showing {models[name].display_name}.")
    return name, models[name]


def checkpoints_root() -> str:
    """The checkpoint folder (tests point it at tiny checkpoints; the app reads the shipped ones)."""
    return str(settings.checkpoints())


def read_only(value):
    """``value`` with every numpy array in it (in dataclasses, lists, tuples, dicts) made
    read-only, so that a page writing into a result every session shares raises at once."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            read_only(getattr(value, f.name))
    elif isinstance(value, (list, tuple)):
        # a list of tokens holds no array, nor does a beam-search tree (its nodes hold Python numbers)
        if value and not isinstance(value[0], (str, int, float, bool, BeamNode)):
            for v in value:
                read_only(v)
    elif isinstance(value, dict):
        for v in value.values():
            read_only(v)
    return value


def shared_result(max_entries: int | None = None):
    """Cache a function's results once per process for every session, as ``st.cache_data``
    does, but hand out the one stored object: ``st.cache_data`` unpickles a fresh copy on
    every call, and Step through's slider asked for four records per move (a twentieth of the
    server's CPU in a class, docs/performance.md). The results are made read-only instead
    (``read_only``), which is the promise ``st.cache_data``'s copies kept."""
    def wrap(fn):
        @functools.wraps(fn)
        def computed(*args, **kwargs):
            return read_only(fn(*args, **kwargs))
        return st.cache_resource(show_spinner=False, max_entries=max_entries)(computed)
    return wrap


def cached_translate(model_name: str, text: str, beam: int) -> DecodingRecord:
    """Translate through the shared model; the same (model, text, beam) is computed once."""
    return _cached_translate(checkpoints_root(), model_name, text, beam)


@shared_result(max_entries=256)
def _cached_translate(root: str, model_name: str, text: str, beam: int) -> DecodingRecord:
    entry = zoo(root)[model_name]
    with decoding_slot():
        return translate(entry.model, entry.vocab, text, beam=beam)


# -- the sentence box, shared by Translate and Compare ---------------------------------------
@dataclass(frozen=True)
class Example:
    """An example sentence: its domain and, where one is published, a human translation that
    the Translate page shows beside the model's (with their chrF), so a mistranslation shows;
    ``note`` is what the page says of a sentence the shipped models are known to get wrong."""
    domain: str
    reference: str | None = None
    source: str | None = None  # where the reference comes from
    note: str | None = None


NEWSTEST = "WMT newstest2014, the paper's test set"
EXAMPLES = {
    # parliament (Canadian Hansards); the first is the landing sentence
    "The European Parliament adopted the new economic policy.": Example("Parliament"),
    "Mr. Speaker, the government must protect the Canadian economy.": Example("Parliament"),
    "The minister answered the question of the honourable member.": Example("Parliament"),
    # everyday (Tatoeba)
    "She bought a small red car last year.": Example("Everyday"),
    "I will eat.": Example("Everyday"),
    "Where is the train station?": Example("Everyday"),
    "I would like a cup of coffee, please.": Example("Everyday"),
    # image captions (Multi30k)
    "A black dog is running through the green grass.": Example("Image caption"),
    "A young man in a red shirt is playing the guitar on a street corner while a small crowd "
    "of people watches him.": Example("Image caption, long"),
    "Two black dogs are running through the deep snow in a park near a frozen lake, while a woman "
    "in a blue coat walks slowly behind them with a camera.": Example("Image caption, long"),
    # news (WMT)
    "The company lost 15,237 customers during the fourth quarter.": Example(
        "News", "L'entreprise a perdu 15 237 clients au cours du quatrième trimestre.", NEWSTEST),
    "The British musician is full of surprises this year.": Example(
        "News", "Le musicien anglais n'a pas fini de surprendre cette année.", NEWSTEST),
    # Bahdanau et al. (2014), Figure 3 (a)-(d)
    "The agreement on the European Economic Area was signed in August 1992.": Example(
        "Paper, Fig. 3a", "L'accord sur la zone économique européenne a été signé en août 1992.",
        "the paper's RNNsearch-50, Figure 3a",
        note="None of the shipped models translates *European Economic Area*: the name is rare in their "
             "training data. Where the paper's model writes *zone économique européenne*, RNNsearch writes "
             "*l'économie européenne* (the European economy, reordered like the paper's) and gets the rest of "
             "the sentence right; the others garble the name (*l'Economique européenne*, *l'Enomique "
             "européenne*, *l'Union européenne Economica*). The same reordering (adjective after the noun) is on the landing "
             "sentence, *The European Parliament adopted the new economic policy.*, which RNNsearch, the "
             "global Luong models and the Transformer translate correctly."),
    "It should be noted that the marine environment is the least known of environments.": Example(
        "Paper, Fig. 3b", "Il faut savoir que le milieu marin est le milieu le moins bien connu.", NEWSTEST),
    "Destruction of the equipment means that Syria can no longer produce new chemical weapons.": Example(
        "Paper, Fig. 3c", "Grâce à la destruction des équipements, la Syrie ne pourra plus produire de nouvelles "
        "armes chimiques.", NEWSTEST),
    "This will change my future with my family, the man said.": Example(
        "Paper, Fig. 3d", "« Cela va changer mon avenir et celui de ma famille », a déclaré l'homme.", NEWSTEST),
}
# The landing sentence: one the default model translates right and that shows reordering the
# way the paper's Figure 3a does (European Parliament -> Parlement européen, economic policy ->
# politique économique). The global Luong models and the Transformer get it right too; local-p
# and RNNenc write "L'Union européenne" for the Parliament, which Compare shows. The paper's
# own Figure 3a sentence stays in the list with its reference and a note, since no shipped
# model translates its "European Economic Area" (RNNsearch writes "l'économie européenne").
DEFAULT_SENTENCE = "The European Parliament adopted the new economic policy."
SENTENCE = "sentence"  # session key: the current sentence, carried from page to page


def sentence_input(key: str) -> str:
    """Example picker and English text box. The first value comes from the URL (``?text=``),
    else from the sentence on the last page visited; returns the text as typed."""
    text_key = f"{key}_text"
    if text_key not in st.session_state:
        initial = query_param("text") or st.session_state.get(SENTENCE) or DEFAULT_SENTENCE
        if len(initial) > MAX_INPUT_CHARS:
            st.session_state[f"{key}_clipped"] = len(initial)
            initial = initial[:MAX_INPUT_CHARS]
        st.session_state[text_key] = initial

    def pick_example():
        choice = st.session_state.get(f"{key}_example")
        if choice:
            st.session_state[text_key] = choice
            st.session_state[f"{key}_example"] = None  # a menu, not a state: the box holds the sentence

    st.selectbox("Example sentences", list(EXAMPLES), index=None, key=f"{key}_example", on_change=pick_example,
                 format_func=lambda s: f"{EXAMPLES[s].domain}: {s}", placeholder="Pick an example, or type below")
    text = st.text_area("English sentence", key=text_key, max_chars=MAX_INPUT_CHARS, height=100,
                        help="Press Ctrl+Enter (⌘+Enter) or click outside the box to translate.")
    clipped = st.session_state.get(f"{key}_clipped")
    if clipped:
        st.warning(f"The text in the link had {clipped} characters; the box keeps the first {MAX_INPUT_CHARS}.")
    st.session_state[SENTENCE] = text
    return text


WORD_RULE = ("**Whole words**: a piece that starts with ▁ begins a new word. Over a *source* word's pieces the "
             "weights are **summed** (the attention the word receives, so every row still sums to 1); over a "
             "*target* word's pieces the rows are **averaged**.")


def decoding_choice(key: str) -> int:
    """Greedy or beam search (with its width), first from the URL (``?beam=``); returns the beam size (1 = greedy)."""
    try:
        beam_in_url = max(1, min(MAX_BEAM, int(query_param("beam", "1"))))
    except ValueError:
        beam_in_url = 1
    method = st.segmented_control("Decoding", ["greedy", "beam search"], key=f"{key}_method", required=True,
                                  default="greedy" if beam_in_url == 1 else "beam search",
                                  help="Greedy takes the most probable token at each step; beam search keeps "
                                       "the k best prefixes and returns the most probable finished one.")
    if method != "beam search":
        return 1
    return st.slider("Beam size k", 2, MAX_BEAM, beam_in_url if beam_in_url > 1 else 5, key=f"{key}_beam")


def view_choice(key: str, default: str = "pieces") -> str:
    """Subword pieces or whole words (``?view=pieces|words``)."""
    first = query_param("view", default)
    view = st.segmented_control("Show", ["pieces", "words"], key=f"{key}_view", required=True,
                                default=first if first in ("pieces", "words") else default,
                                format_func={"pieces": "subword pieces", "words": "whole words"}.get)
    return view or default


def plain(text: str) -> str:
    """User text for st.markdown, shown exactly as typed: markdown and HTML characters escaped."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join("\\" + ch if ch in "\\`*_{}[]()#+-.!|~$" else ch for ch in text)


def small(text: str) -> str:
    """``text`` in small type (Streamlit's ``:small[…]``) for a markdown body. A square bracket
    that pairs with none (a token such as `](` quoted in the text) would end the directive
    early and show the rest as it is typed, so such a text keeps its normal size."""
    depth, escaped = 0, False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                break
    return f":small[{text}]" if depth == 0 else text


def chart(fig, filename: str, key: str, where=None, more_config: dict | None = None, **options) -> None:
    """A Plotly figure whose toolbar's camera saves ``filename.svg`` (``viz.export.plotly_config``,
    the one toolbar config of every figure in the app), drawn in ``where`` (a container or
    column; the page by default). The form for a figure redrawn on every slider move or
    training frame: one element, no download widgets."""
    from viz.export import plotly_config
    (where or st).plotly_chart(fig, key=key, config={**plotly_config(filename), **(more_config or {})}, **options)


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


__all__ = ["zoo", "small", "available_models", "usable_models", "pick_model", "target_language", "attention_caption",
           "OURS_ONLY", "ENGLISH_FRENCH", "unavailable_models", "show_unavailable", "cached_translate",
           "query_param", "set_query_params", "InputError", "MAX_INPUT_CHARS",
           "Example", "EXAMPLES", "DEFAULT_SENTENCE", "DEFAULT_MODEL", "sentence_input", "plain", "show_figure",
           "chart", "chart_with_export", "export_popover",
           "decoding_choice",
           "view_choice", "WORD_RULE"]
