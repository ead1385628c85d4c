"""Exercises: predict the attention, then see it (the app's *Exercises* page).

Three kinds, each drawn from a seed so that one shared link gives a whole room the same
exercise, each checked here, in numpy (how an answer is stored and summarised for the teacher
is ``server/answers.py``):

- ``align``: **predict the alignment** of a sentence pair with gold links (curated pairs the
  shipped RNNsearch translates exactly so, and short Hansards pairs, Mihalcea & Pedersen
  2003). The student's links are scored like the models' attention: AER against the gold
  (Och & Ney 2003, ``model.metrics.alignment_error_rate``) and agreement with the model's
  links (``model.align``: each French word to its most-attended English word).
- ``step``: **compute one attention step by hand** on small seeded vectors: the energies
  e_j (Luong's dot or general score, eq. 8, or Bahdanau's additive score, appendix A.1.2, as
  in the worked example), the weights α_j = softmax(e)_j and the context c = Σ_j α_j h_j (eq. 5), each
  number checked within ``TOLERANCE``.
- ``which``: **which mechanism drew this heatmap?** A real heatmap from one model of the
  zoo; the reveal names the model and the signs that tell it apart.

No UI here: the page lays these out; the class store (``server/class_store/``) keeps the answers.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from model.metrics import alignment_error_rate
from .worked_example import (additive_attention, AttentionSteps, dot_attention, general_attention, random_inputs,
                             softmax, WorkedInputs)

KINDS = {"align": "Predict the alignment", "step": "Compute one step by hand", "which": "Which mechanism drew this?"}
TOLERANCE = 0.02  # absolute, on every number of a hand computation: two decimals, rounded either way


def exercise_id(kind: str, seed: int, model: str | None = None) -> str:
    """The name answers are stored under: the same link gives the same id."""
    return f"{kind}:{seed}" + (f":{model}" if model else "")


# -- predict the alignment ---------------------------------------------------------------------------
@dataclass(frozen=True)
class AlignmentPair:
    """A sentence pair as gold-set tokens; sure ⊆ possible, links (English i, French k), 0-indexed."""
    english: tuple[str, ...]
    french: tuple[str, ...]
    sure: frozenset
    possible: frozenset
    origin: str


def _curated(english: str, french: str, sure: set, possible: set = frozenset()) -> AlignmentPair:
    return AlignmentPair(tuple(english.split()), tuple(french.split()), frozenset(sure),
                         frozenset(set(sure) | set(possible)), "curated: the shipped RNNsearch translates it so")


# Each French side is the shipped RNNsearch's greedy translation (python -m model.translate
# --checkpoint checkpoints/rnnsearch), token for token; links written by hand in the Hansards
# set's convention (a French auxiliary with no English word of its own is a possible link).
CURATED = (
    _curated("The European Parliament adopted the new economic policy .",
             "Le Parlement européen a adopté la nouvelle politique économique .",
             {(0, 0), (2, 1), (1, 2), (3, 4), (4, 5), (5, 6), (7, 7), (6, 8), (8, 9)}, {(3, 3)}),
    _curated("Where is the train station ?", "Où est la gare ?",
             {(0, 0), (1, 1), (2, 2), (3, 3), (4, 3), (5, 4)}),
    _curated("I would like a cup of coffee , please .", "Je voudrais une tasse de café , je vous prie .",
             {(0, 0), (1, 1), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5), (7, 6), (8, 9), (9, 10)},
             {(8, 7), (8, 8)}),
)
MAX_WORDS = 10  # a pair a student can mark in a minute


def alignment_pool(gold_pairs: list | None) -> list[AlignmentPair]:
    """The curated pairs, then the Hansards test pairs of 5 to MAX_WORDS tokens a side (each
    English sentence once)."""
    pool, seen = list(CURATED), set()
    for n, p in enumerate(gold_pairs or []):
        key = " ".join(p.english)
        if 5 <= len(p.english) <= MAX_WORDS and 5 <= len(p.french) <= MAX_WORDS and key not in seen:
            seen.add(key)
            pool.append(AlignmentPair(tuple(p.english), tuple(p.french), frozenset(p.sure), frozenset(p.possible),
                                      f"Hansards test sentence {n + 1}"))
    return pool


ALIGN_LEVELS = ((0, 6), (7, 8), (9, 99))  # French words of a level-1, 2, 3 pair: more words, more links to place


def alignment_exercise(seed: int, gold_pairs: list | None) -> AlignmentPair:
    """Seed → a pair of its level (seed mod 3: up to 6 French words, 7–8, 9 or more), the
    (seed // 3)-th of that level in pool order (the curated pairs first)."""
    pool = alignment_pool(gold_pairs)
    lo, hi = ALIGN_LEVELS[seed % 3]
    tier = [p for p in pool if lo <= len(p.french) <= hi] or pool
    return tier[(seed // 3) % len(tier)]


@dataclass(frozen=True)
class AlignmentScore:
    aer: float
    precision: float
    recall: float
    model_agreement: float  # recall against the model: share of the model's links the student also marked
    missed: frozenset       # sure gold links the student did not mark
    wrong: frozenset        # marked links outside the possible gold
    model_precision: float = 0.0  # share of the student's links the model also makes (marking everything lowers it)


def score_alignment(marks: set, pair: AlignmentPair, model_links: set) -> AlignmentScore:
    result = alignment_error_rate([set(marks)], [set(pair.sure)], [set(pair.possible)])
    shared = len(set(marks) & set(model_links))
    return AlignmentScore(result["aer"], result["precision"], result["recall"], shared / max(1, len(model_links)),
                          frozenset(pair.sure - set(marks)), frozenset(set(marks) - pair.possible),
                          shared / max(1, len(marks)))


def model_links_against_gold(marks: set, model_links: set, pair: AlignmentPair) -> tuple[list, list]:
    """The model's links the student did not mark, split: (right against the gold, i.e. a sure
    or possible link; wrong against it). Each (English i, French k), by French word."""
    extra = sorted(((i, k) for i, k in model_links if (i, k) not in marks), key=lambda link: link[1])
    return [x for x in extra if x in pair.possible], [x for x in extra if x not in pair.possible]


# -- compute one step by hand ------------------------------------------------------------------------
SCORES = {
    "dot": "Luong dot (eq. 8): e_j = s^T h_j",
    "general": "Luong general (eq. 8): e_j = s^T W_a h_j",
    "additive": "Bahdanau additive (appendix A.1.2): e_j = v_a^T tanh(W_a s + U_a h_j)",
}


@dataclass
class StepExercise:
    """A query s (hidden,), keys = values h_j (words x hidden) as in the RNN models (the same
    annotation vectors, h_j or the Luong models' h̄_j = W_m h_j, are scored and averaged), and the score's parameters:
    W_g (hidden x hidden) for general; the worked example's W, v for additive."""
    score: str
    inputs: WorkedInputs
    general_weights: np.ndarray | None = None

    @property
    def words(self) -> int:
        return self.inputs.annotations.shape[0]

    def solution(self) -> AttentionSteps:
        if self.score == "dot":
            return dot_attention(self.inputs)
        if self.score == "general":
            return general_attention(self.inputs, self.general_weights)
        return additive_attention(self.inputs)


STEP_LEVELS = (("dot", 2), ("general", 3), ("additive", 4))  # level 1, 2, 3: (score, keys)


def level(kind: str, seed: int) -> int:
    """The exercise's level, 1 to 3: the seed's place in a cycle of three, so *Next exercise*
    (seed + 1) climbs 1 → 2 → 3 and starts again on new numbers."""
    return seed % 3 + 1


@functools.lru_cache(maxsize=256)
def step_exercise(seed: int) -> StepExercise:
    """Seed → a level's score and its numbers: dot with 2 keys, general with 3, additive with 4;
    hidden size 3 (dot, general) or 2 (additive, with an alignment layer of 2 units), so it can
    be done on paper. Made once per seed and process, read-only (:func:`random_inputs`)."""
    rng = np.random.default_rng(seed)
    score, words = STEP_LEVELS[seed % 3]
    hidden = 2 if score == "additive" else 3
    inputs = random_inputs(seed, words=words, hidden=hidden, alignment=2)
    general = np.round(rng.uniform(-1.0, 1.0, size=(hidden, hidden)), 1) if score == "general" else None
    if general is not None:
        general.flags.writeable = False
    return StepExercise(score, inputs, general)


@dataclass(frozen=True)
class StepCheck:
    """Per part, one flag per number: True where it is within TOLERANCE. The energies are judged
    against the solution; α against the softmax of the student's own e and c against Σ_j α_j h_j
    of their own α (partial credit: one wrong energy does not make every later number wrong).
    ``slips``: the common mistakes the numbers match, named."""
    energies: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    slips: tuple = ()

    @property
    def right(self) -> bool:
        return bool(self.energies.all() and self.weights.all() and self.context.all())

    def wrong_parts(self) -> list[str]:
        return [name for name, ok in (("e", self.energies), ("α", self.weights), ("c", self.context)) if not ok.all()]


def _vector(given, n: int) -> np.ndarray | None:
    v = np.array([np.nan if g is None else g for g in given], dtype=float).reshape(-1)
    return v if v.shape == (n,) else None


def _close(given: np.ndarray | None, *expected) -> np.ndarray:
    """Within tolerance of any of ``expected`` (each a candidate the number may follow from)."""
    n = np.asarray(expected[0]).size
    if given is None:
        return np.zeros(n, dtype=bool)
    ok = np.zeros(n, dtype=bool)
    for x in expected:
        if x is not None:
            ok |= np.abs(given - np.asarray(x, dtype=float).reshape(-1)) <= TOLERANCE  # NaN compares False
    return ok


def check_step(exercise: StepExercise, energies, weights, context, tolerance: float = TOLERANCE) -> StepCheck:
    """Each number the student entered, with partial credit; a missing number (None or NaN) is wrong."""
    truth = exercise.solution()
    H = exercise.inputs.annotations
    n, h = H.shape
    e, a, c = _vector(energies, n), _vector(weights, n), _vector(context, h)
    own_alpha = softmax(e) if e is not None and np.isfinite(e).all() else None
    own_context = a @ H if a is not None and np.isfinite(a).all() else None
    return StepCheck(np.abs(e - truth.energies.ravel()) <= tolerance if e is not None else np.zeros(n, dtype=bool),
                     _close(a, truth.weights, own_alpha), _close(c, truth.context, own_context),
                     tuple(step_slips(exercise, e, a, c)))


def _all_close(given: np.ndarray | None, expected) -> bool:
    return given is not None and bool(np.all(np.abs(given - np.asarray(expected, dtype=float).reshape(-1)) <= TOLERANCE))


def step_slips(exercise: StepExercise, e, a, c) -> list[str]:
    """The common slips the student's numbers match exactly (each within TOLERANCE): W used
    transposed, tanh forgotten, the softmax taken over the wrong axis (every α_j = 1) or
    without exp, the context averaged with e instead of α."""
    x, truth, found = exercise.inputs, exercise.solution(), []
    s, H = x.decoder_state, x.annotations
    wrong_e = e is not None and not _all_close(e, truth.energies)
    if wrong_e and exercise.score == "general" and _all_close(e, H @ exercise.general_weights @ s):
        found.append("W transposed: s^T W_a^T h_j instead of s^T W_a h_j")
    if wrong_e and exercise.score == "additive":
        hidden = s.shape[0]
        transposed = np.tanh(s @ x.W[:hidden].T + H @ x.W[hidden:].T) @ x.v
        if _all_close(e, transposed):
            found.append("W transposed: W_a and U_a used as their transposes")
        if _all_close(e, (s @ x.W[:hidden] + H @ x.W[hidden:]) @ x.v):
            found.append("tanh forgotten: e_j = v_a^T (W_a s + U_a h_j)")
    if a is not None and not _all_close(a, truth.weights):
        if _all_close(a, np.ones(len(a))):
            found.append("softmax over the wrong axis: every α_j = 1 (each normalised by itself)")
        elif e is not None and np.isfinite(e).all() and abs(e.sum()) > 1e-9 and _all_close(a, e / e.sum()):
            found.append("softmax without exp: α_j = e_j / Σ_k e_k")
    if c is not None and not _all_close(c, truth.context):
        for energies in (truth.energies.ravel(), e):
            if energies is not None and np.isfinite(energies).all() and _all_close(c, energies @ H):
                found.append("context from e instead of α: c = Σ_j e_j h_j")
                break
    return found


def _numbers(v) -> str:
    return ", ".join(f"{float(x):.2f}" for x in np.asarray(v).reshape(-1))


def step_hints(exercise: StepExercise) -> list[str]:
    """Two staged hints, before the solution: the first energy written out with its numbers,
    then every energy with exp(e_j) and their sum, leaving α and c to the student."""
    x, truth = exercise.inputs, exercise.solution()
    s, H = x.decoder_state, x.annotations
    if exercise.score == "dot":
        first = " + ".join(f"({a:.1f})({b:.1f})" for a, b in zip(s, H[0]))
        hint = f"e_1 = s · h_1 = {first}; the other e_j the same way with h_j."
    elif exercise.score == "general":
        hint = (f"First W_a h_1 = ({_numbers(exercise.general_weights @ H[0])}); then e_1 = s · (W_a h_1). "
                "The other e_j the same way with h_j.")
    else:
        hidden = s.shape[0]
        hint = (f"W_a s = ({_numbers(s @ x.W[:hidden])}) is the same for every j; U_a h_1 = "
                f"({_numbers(H[0] @ x.W[hidden:])}); add them, take tanh of each, then the dot product with v_a.")
    exps = np.exp(truth.energies.ravel())
    return [hint, f"e = ({_numbers(truth.energies)}); exp(e_j) = ({_numbers(exps)}), their sum Σ = {exps.sum():.2f}. "
                  "Now α_j = exp(e_j) / Σ, then c = Σ_j α_j h_j."]


def step_workings(exercise: StepExercise) -> list[tuple[str, np.ndarray]]:
    """Every intermediate number of the solution, in order, each with its name (LaTeX)."""
    x, truth = exercise.inputs, exercise.solution()
    s, H = x.decoder_state, x.annotations
    rows: list[tuple[str, np.ndarray]] = []
    if exercise.score == "general":
        rows.append((r"W_a h_j", H @ exercise.general_weights.T))
    elif exercise.score == "additive":
        hidden = s.shape[0]
        rows += [(r"W_a s", (s @ x.W[:hidden]).reshape(1, -1)), (r"U_a h_j", H @ x.W[hidden:]),
                 (r"W_a s + U_a h_j", truth.pre_activation), (r"\tanh(W_a s + U_a h_j)", truth.hidden)]
    exps = np.exp(truth.energies)
    return rows + [(r"e_j", truth.energies), (r"\exp(e_j)", exps), (r"\Sigma = \sum_k \exp(e_k)", exps.sum().reshape(1, 1)),
                   (r"\alpha_j = \exp(e_j) / \Sigma", truth.weights), (r"\alpha_j h_j", truth.contributions),
                   (r"c = \sum_j \alpha_j h_j", truth.context)]


# -- which mechanism drew this? ----------------------------------------------------------------------
MECHANISMS = {  # the zoo's models with attention, named as a student would choose
    "luong-dot": "dot (Luong)",
    "luong-general": "general (Luong)",
    "luong-concat": "concat (Luong)",
    "rnnsearch": "additive (Bahdanau, RNNsearch)",
    "luong-local": "local-p (Luong)",
    "transformer": "a Transformer layer (heads averaged)",
}
TELLS = {  # true of the shipped models: the Luong decoders attend over h̄_j = W_m h_j (model/decoders.py)
    "luong-local": "**local-p** predicts a centre p_i at each step (Luong eq. 9) and weighs the positions around it with "
                   "a Gaussian over a window of 2D+1 positions (eq. 10, D = 10 in the shipped model): the heatmap shows "
                   "the weights renormalised over that window, so every cell outside it is exactly 0: on a "
                   "sentence longer than the window (level 2 draws them) the corners are white; on a short one the "
                   "window covers nearly everything, and what shows is how sharp its rows are.",
    "rnnsearch": "**RNNsearch** (additive) scores with a small tanh network, v_a^T tanh(W_a s_{i−1} + U_a h_j) "
                 "(Bahdanau appendix A.1.2; eq. 6 only names it a(s_{i−1}, h_j)). In every model here row i is the "
                 "attention used to choose word i; what differs is the query: Bahdanau's s_{i−1} has not yet read the "
                 "previous word y_{i−1}, while Luong's s_i has. Like every global model, it gives every source word "
                 "some weight.",
    "luong-dot": "**dot** is global (every source word gets some weight) and scores e_ij = s_i^T h̄_j with s_i, the "
                 "state *after* the decoder's step (Luong eq. 8). In our Luong models h̄_j = W_m h_j, a learned "
                 "matrix that maps the bidirectional annotations to the decoder's size, so dot too learns its score "
                 "through W_m. From a heatmap alone it is hard to tell from general and concat.",
    "luong-general": "**general** is global and scores s_i^T W_a h̄_j (Luong eq. 8), with h̄_j = W_m h_j in our models: "
                     "the same family of scores as our dot, with W_a's extra parameters. One heatmap rarely tells it "
                     "from dot or concat.",
    "luong-concat": "**concat** is global and scores v_a^T tanh(W_a [s_i ; h̄_j]) (Luong eq. 8): Bahdanau's additive "
                    "score up to a bias, but on s_i, the state after the step. One heatmap rarely tells it from dot "
                    "or general.",
    "transformer": "**A Transformer layer** has several heads with their own projections; the app shows the "
                   "layer's heads averaged, and each target position attends from its own query q_i = W^Q s_i; the "
                   "dot product q_i·k_j is scaled by 1/√d_k (Vaswani eq. 1), and no recurrent state carries the "
                   "position.",
}


FAMILIES = {  # what a heatmap can tell: the family, not dot from general from concat
    "additive": "additive (Bahdanau, RNNsearch)",
    "global": "Luong global (dot, general or concat)",
    "local-p": "Luong local-p (a window around a predicted position)",
    "transformer": "a Transformer layer (heads averaged)",
}
FAMILY_OF = {"rnnsearch": "additive", "luong-dot": "global", "luong-general": "global", "luong-concat": "global",
             "luong-local": "local-p", "transformer": "transformer"}
SHORT_WORDS, LONG_WORDS = 12, 14  # level 1 draws sentences of ≤ 12 words, level 2 of ≥ 14 (local-p's window shows)


@dataclass(frozen=True)
class WhichExercise:
    """The model that drew the heatmap, the sentence, and the question: ``family`` (levels 1
    and 2: additive, Luong global, local-p or a Transformer layer) or ``mechanism`` (level 3:
    the exact score)."""
    model: str
    sentence: str
    question: str

    @property
    def answer(self) -> str:
        return FAMILY_OF[self.model] if self.question == "family" else self.model


def which_exercise(seed: int, models: list[str], sentences: list[str]) -> WhichExercise:
    """Seed → a model among those given (of MECHANISMS, loaded) and a sentence. Levels 1 and 2
    draw a family first, so the three Luong global scores are one answer among four, then a
    model of it; level 1 a short sentence, level 2 a long one; level 3 asks the exact score."""
    models = [m for m in MECHANISMS if m in models]
    if not models or not sentences:
        raise ValueError("no model with attention or no sentence to draw from")
    rng = np.random.default_rng(seed)
    tier = level("which", seed)
    if tier == 3:
        model = models[int(rng.integers(len(models)))]
    else:
        families = [f for f in FAMILIES if any(FAMILY_OF[m] == f for m in models)]
        family = families[int(rng.integers(len(families)))]
        members = [m for m in models if FAMILY_OF[m] == family]
        model = members[int(rng.integers(len(members)))]
    pool = ([t for t in sentences if len(t.split()) <= SHORT_WORDS] if tier == 1
            else [t for t in sentences if len(t.split()) >= LONG_WORDS] if tier == 2 else sentences) or sentences
    return WhichExercise(model, pool[int(rng.integers(len(pool)))], "mechanism" if tier == 3 else "family")


def attention_cues(weights) -> dict[str, float]:
    """What a heatmap shows, measured on its α (target × source, rows summing to 1): sharpness
    (the mean of each row's largest weight), entropy (mean over rows, in nats) and the share of
    cells exactly 0 (local-p's window: weights outside it vanish)."""
    w = np.asarray(weights, dtype=float)
    safe = np.where(w > 0, w, 1.0)
    return {"sharpness": float(w.max(axis=1).mean()), "entropy": float(-(w * np.log(safe)).sum(axis=1).mean()),
            "zeros": float((w == 0).mean())}
