"""Beam search tree: every hypothesis beam search explored, as an interactive tree.

Beam search (``model/search.py``) keeps the k most probable prefixes at every step; each
proposes its best continuations, the k best survive, the rest are pruned. The tree shows
them all: node = token, size = p(token | prefix), colour = log p of the whole prefix, grey
= pruned, squares = finished with </s>; the path beam search returned is drawn thick.
Clicking a node (or choosing a hypothesis in the list) shows the attention the decoder
used along that path: the α stored in the tree at each of its steps.
"""
import streamlit as st

from ui.figures import chart_with_export, shared_figure
from ui.url_state import from_link, int_param
from ui.widgets import plain, sentence_input, within_bound
from server.costs import beam_bound
from ui.zoo_cache import pick_model, target_language
from ui.teaching_pages import cached_beam, keep_in_url, source_or_stop
from model.internals import beam_hypotheses, beam_path, path_attention
from model.search import MAX_BEAM
from viz.teaching_figures import beam_tree, highlighted_heatmap

NODE = "beam_node"  # session key: the tree node whose path is shown

st.title("Beam search tree")
st.caption("Beam search keeps the k most probable prefixes at each step. Here is everything it tried: which "
           "branches survived, which were pruned, and the path it chose.")

text = sentence_input("beam")
c_model, c_beam = st.columns([2, 3])
with c_model:
    name, entry = pick_model("beam_model")
with c_beam:
    from_link("beam_k", lambda: int_param("beam", 3, 1, MAX_BEAM))
    k = st.slider("Beam size k", 1, MAX_BEAM, key="beam_k",
                  help="k = 1 is greedy decoding: a tree with a single surviving branch.")
keep_in_url(name, text, beam=k)
source_or_stop(entry, text)  # stops the page, with a message, on unusable input
with st.spinner("Beam search…"):
    record = cached_beam(name, within_bound(beam_bound(text, k, "The beam search tree")), k)
tree = record.beam_tree
hypotheses = beam_hypotheses(tree)
chosen = hypotheses[0]

# which path to show: the last choice made, by click or by list; a new tree starts at the chosen path
identity = (name, text, k)
if st.session_state.get("beam_identity") != identity or st.session_state.get(NODE, -1) >= len(tree):
    st.session_state["beam_identity"] = identity
    st.session_state[NODE] = chosen.node
    st.session_state["beam_hypothesis"] = 0


def pick_from_list() -> None:
    st.session_state[NODE] = hypotheses[st.session_state["beam_hypothesis"]].node


def pick_from_tree() -> None:
    points = st.session_state["beam_tree"]["selection"]["points"]
    node = next((p["customdata"][0] for p in points if p.get("customdata")), None)
    if node is not None:
        st.session_state[NODE] = int(node)


st.markdown(f"**Chosen hypothesis** (log p = {chosen.logprob:.3f}, {chosen.normalised:.3f} per token):")
st.markdown(f"### {plain(record.translation) or '*(empty translation)*'}")
st.caption(f"{len(tree) - 1} nodes explored, {sum(not n.pruned for n in tree[1:])} on a branch that reached a "
           f"finished hypothesis, {len(hypotheses)} finished hypotheses. Hypotheses are ranked by log p / length.")

path = beam_path(tree, st.session_state[NODE])
chart_with_export(shared_figure(record, ("tree", tuple(path)), lambda: beam_tree(tree, selected_path=path)),
                  f"beam-tree-{name}", "beam_tree", on_select=pick_from_tree, selection_mode="points")
st.caption("Click a node to see the attention along its path. Grey dotted: pruned. Thick orange: the chosen "
           "path. Outlined: the path shown below.")

labels = [f"{'★ chosen' if h.chosen else f'#{r + 1}'} · {h.normalised:.3f} per token · "
          f"{entry.vocab.decode([tree[n].token_id for n in h.path]) or '(empty)'}" for r, h in enumerate(hypotheses)]
st.selectbox("Finished hypotheses", range(len(hypotheses)), key="beam_hypothesis", on_change=pick_from_list,
             format_func=lambda r: labels[r])

node = tree[st.session_state[NODE]]
tokens = [tree[n].token for n in path]
weights = path_attention(tree, path)
status = ("the chosen hypothesis" if node.on_best_path and (node.finished or node.id == chosen.node)
          else "a finished hypothesis" if node.finished else "a pruned prefix" if node.pruned else "a surviving prefix")
st.markdown(f"**Path shown**: {status}, {len(path)} token(s), log p = {node.score:.3f}: "
            + " ".join(f"`{t}`" for t in tokens))
if weights is None:
    st.info("No attention to show: " + ("the path is empty (the root)." if not path else
                                         "RNNenc has no attention."), icon=":material/info:")
else:
    chart_with_export(shared_figure(record, ("path", tuple(path), target_language(entry)), lambda: highlighted_heatmap(
        weights, record.source_tokens, tokens, title="α_ij along the path shown", target_language=target_language(entry))),
                      f"beam-path-{name}", "beam_heatmap")
    st.caption("Row i is the attention the decoder used at step i of this hypothesis, stored in the tree when "
               "beam search expanded it.")
