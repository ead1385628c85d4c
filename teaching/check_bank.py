"""The recall items of the check before and after the lesson (``teaching/check.py``), as banks a
test-wise reader cannot game, and the unseen sentences its transfer items read.

Each recall concept is a *pool* of parallel facts, each a cue (what the stem names) and its
answer, all of one form and about one length. An item asks one member's cue, with its answer as
the key and the answers of three other members of the same pool as the distractors. Every
member is the key of its own question and a distractor of the others', so a rule that reads the
options alone (the longest, the shortest, the most technical) picks the key as often as chance
does; each concept's stems come in two phrasings, and a seed draws the member, the phrasing and
the three distractors, so Before, After and the next class ask different items.

No answer shares a content word with its stem (``content_words``; ``tests/test_check_items.py``
walks every member and phrasing), and no pool states a fact that answers another pool's item
(the heatmap pool never says "sums to 1", the Transformer's never "one-hot"). The scoring pool
covers every score of the RNN zoo: Bahdanau's additive (RNNsearch), Luong's dot, general, concat
and local-p; the Transformer's scaled dot product has its own concept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

OPTIONS = 4  # a recall item's options: its key and three distractors


@dataclass(frozen=True)
class Pool:
    """One recall concept's facts: ``cues`` and ``answers`` in parallel (member m's cue is
    answered by ``answers[m]``), and the stem phrasings, each with ``{cue}`` in it."""
    concept: str
    cues: tuple[str, ...]
    answers: tuple[str, ...]
    stems: tuple[str, ...]


# the RNN zoo's scores (the Transformer's scaled dot product is the transformer concept's: its stems
# print softmax(QKᵀ/√d_k)V, which would answer a scoring item asking for it)
SCORES = ("Bahdanau (RNNsearch)", "Luong general", "Luong dot", "Luong concat", "Luong local-p")
FORMULAS = ("v_aᵀ tanh(W_a s_{i−1} + U_a h_j)", "s_iᵀ W_a h̄_j", "s_iᵀ h̄_j", "v_aᵀ tanh(W_a [s_i ; h̄_j])",
            "s_iᵀ W_a h̄_j, only for j within p_i ± D")

POOLS = {
    "alignment": Pool(
        "alignment",
        ("one row", "one column", "a bright cell far from the diagonal", "a row spread over several cells",
         "a column nearly dark in every row", "bright cells running down the diagonal"),
        ("where the decoder looked while writing one target word",
         "how much each target word drew on a single source word",
         "a target word reading one source word out of its order",
         "a target word that draws on a few source words at once",
         "a source word which the decoder almost never looked at",
         "target words that keep the order of their source words"),
        ("In RNNsearch's attention heatmap (rows: French, columns: English), what does {cue} show?",
         "An alignment heatmap of English into French: {cue} tells you …")),
    "weights": Pool(
        "weights",
        ("add 5 to every energy", "multiply every energy by 10", "set all the energies to one value",
         "divide every energy by 10", "lower one energy by 20", "add one more source piece with its energy"),
        ("nothing at all: each α stays exactly what it was",
         "the largest α grows towards 1, the others shrink",
         "each α becomes 1/S: exactly equal shares for all",
         "the α move towards each other but remain unequal",
         "that α falls near 0, the rest rise in proportion",
         "the other α shrink to make room for that new one"),
        ("At one decoder step you {cue} before the softmax. What happens to that step's weights?",
         "Softmax turns a step's energies e_ij into α_ij. If you {cue}, then …")),
    "scoring": Pool(
        "scoring",
        FORMULAS,
        SCORES,
        ("Which attention in the zoo computes the energy e_ij as {cue}?",
         "A model scores source position j at target step i by {cue}. Which model is it?")),
    "scoring-by-name": Pool(  # the same mechanisms asked the other way round: the formula of a name
        "scoring",
        SCORES,
        FORMULAS,
        ("Which formula gives the energy e_ij of {cue}?",
         "How does {cue} score source position j at target step i?")),
    "scoring-by-trait": Pool(
        "scoring",
        ("reads the decoder's state from before its step, s_{i−1}",
         "puts one learnt matrix between the state and each annotation",
         "learns no parameter of its own in the score",
         "joins s_i and h̄_j into one vector before a tanh layer",
         "predicts a centre and scores only a window around it"),
        SCORES,
        ("Which attention of the zoo {cue}?", "One mechanism {cue}. Which?")),
    "transformer": Pool(
        "transformer",
        ("Q", "K", "V", "the division by √d_k", "one row of softmax(QKᵀ/√d_k)", "the product with V"),
        ("the decoder's state s_i, looking for what to read",
         "the annotations h_j, as matched against state s_i",
         "the annotations h_j, as summed into a context c_i",
         "keeps long dot products from flattening gradients",
         "α_i, all the alignment weights of one target step",
         "the context vectors c_i, one for each target step"),
        ("In the Transformer's attention softmax(QKᵀ/√d_k)V, {cue} corresponds in RNNsearch's terms to …",
         "Take softmax(QKᵀ/√d_k)V as the RNN attention of the lesson: {cue} is …")),
}
# concept -> its pools (the scoring concept is asked three ways)
BANK = {c: tuple(p for p in POOLS.values() if p.concept == c) for c in ("alignment", "weights", "scoring", "transformer")}

# Sentences the lesson never shows (none is in ui.examples): the transfer items' unseen sentences.
# The alignment item reads REORDERED (teaching/check_alignment.py): each has five English content
# words or more, so that the item can choose its four options, and French words RNNsearch writes
# from an English word neither spelt alike nor on the diagonal, at one offset class or more: one
# before it (an adjective after its noun: noir, chaud; a possessor: cuisine), one after it (a noun
# before its adjective: maison, verre), two or more before it (a possessor after its head: père,
# frère, sœur), two or more after it (a noun before its colour, after a possessor: voiture, vélo).
REORDERED = (
    "Yesterday my sister's red car stopped near the old station.", "My father's black coat is warm and very heavy.",
    "Her brother's small garden is green in summer.", "My friend's brown dog runs fast in the park.",
    "Our neighbour's white house is beautiful and very large.", "His father's green bicycle was stolen last night.",
    "My sister's black cat sleeps on the kitchen chair.", "The doctor's black bag is heavy and very old.",
    "Her mother's blue dress is new and very expensive.", "My brother's red bicycle is broken again today.",
    "Our teacher's green car is old but still fast.", "His sister's white dog is small and very friendly.",
    "My mother's white kitchen is clean and bright.", "The farmer's white horse is old and tired.",
    "My brother's wife works here every morning.", "Her father's red car is fast and very expensive.",
    "The black cat sleeps on the red chair every afternoon.",
    "My sister bought a green dress and black shoes yesterday.", "They live in a yellow house near the blue sea.",
    "The empty glass is on the wooden table in the kitchen.", "The white car stopped in front of the old church.",
    "Every morning my uncle drinks hot coffee in the garden.", "The old house has a beautiful blue door.",
    "A woman is walking her dog in the park.",
)
OTHERS = (
    "My brother works in a large hospital.", "We must reduce the cost of energy.",
    "He reads the newspaper every morning.", "The government has presented a new budget.",
    "Our teacher explained the problem very clearly.", "The river flows through the small town.",
    "The bank raised its interest rates.", "This report describes the situation in Europe.",
    "The students asked many difficult questions.", "The new law protects the rights of workers.",
    "Two men are sitting on a wooden bench.", "The price of bread increased last month.",
    "She writes a letter to her mother.", "The members voted against the proposal.",
    "A little girl is eating an apple.", "The police arrested three young men.",
    "The farmers need more water this summer.", "They visited the museum on Sunday.",
)
SENTENCES = REORDERED + OTHERS

STOPWORDS = set("""a an the of to in on at by for from with and or but as is are be it its it's this that these those
what which who how does do did each one all any every you your into over under than then there their them they
not no only more most much many some such can will would should per own while""".split())


def content_words(text: str) -> set[str]:
    """The words of ``text`` a reader could match between a stem and an option: three letters or
    more, not a function word, compared by their first five letters (weight, weights)."""
    words = re.findall(r"[a-zà-ÿ]+", text.lower())
    return {w[:5] for w in words if len(w) >= 3 and w not in STOPWORDS}


def members(concept: str) -> list[tuple[int, int]]:
    """Every (pool, member) of a concept: what a seed draws from."""
    return [(p, m) for p, pool in enumerate(BANK[concept]) for m in range(len(pool.cues))]


def recall_parts(concept: str, pool: int, member: int, stem: int, others) -> tuple[str, str, tuple[str, ...]]:
    """The item of ``member`` of ``BANK[concept][pool]`` in phrasing ``stem``: (prompt, key,
    options), the options being the key and the answers of ``others`` (three other members), in
    the order given."""
    p = BANK[concept][pool]
    prompt = p.stems[stem % len(p.stems)].format(cue=p.cues[member])
    return prompt, p.answers[member], tuple(p.answers[m] for m in others)
