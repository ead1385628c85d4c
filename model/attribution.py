"""Attribution beside attention: for every target token y_i, how much each source piece x_j
mattered, measured four ways, with the same shape as a record's attention (T x S, the EOS
row and column included).

- **Gradient × input** (Shrikumar et al. 2016; Ding et al. 2019's "saliency" is its smoothed
  form): a_ij = Σ_d x_jd · ∂ log p(y_i | y_<i, x) / ∂x_jd over the token embedding x_j.
- **Integrated gradients** (Sundararajan et al. 2017): a_ij = Σ_d (x_jd − x'_jd) ∫_0^1
  ∂ log p(y_i) / ∂x_jd (x' + α (x − x')) dα, with :data:`IG_STEPS` Gauss–Legendre points (the
  page: as many of :data:`IG_STEP_SCHEDULE` as a gap ≤ :data:`IG_TARGET_GAP` needs).
  **Baseline x'**: every token embedding zero, on the source and on the target prefix alike
  (the models' position encodings, where they have them, stay). Completeness: the a_ij over
  the source and the prefix sum to f(x) − f(x') = log p(y_i | x) − log p(y_i | x') (``delta``
  is the gap, read relative to |f(x) − f(x')|: :attr:`Attribution.completeness_gap`).
- **Attention knock-out** (``knock-out``): remove source position j from step i's attention
  (α_ij = 0, the row renormalised, :class:`~model.attention.Reweigh`: for the RNNs the context
  c_i loses the contextual annotation h_j, for a Transformer every cross-attention layer and head
  loses position j), the steps before i as decoded, and measure
  a_ij = log p(y_i) − log p(y_i | j knocked out). The word x_j itself still reaches every other
  annotation through the encoder, so this scores the attention's use of position j, not of the
  word; its score is a function of α by construction. RNNenc reads no position, so it has none.
- **Input occlusion** (``input-occlusion``): a_ij = log p(y_i | x) − log p(y_i | x with piece j's
  token embedding replaced by the zero vector), teacher-forced on the same tokens. **Baseline**
  (:data:`INPUT_BASELINE`): the zero vector in place of x_j's token embedding (the integrated
  gradients' baseline for one piece; a Transformer's position encoding stays), so the encoder
  runs again without the piece (a word of several pieces keeps the others) and every annotation
  may change. Defined for every model, RNNenc included. The zero vector is no embedding the
  encoder met in training: :data:`INPUT_RANDOM_BASELINE` is one that is.

Both gradient methods go through Captum (``IntegratedGradients``, ``InputXGradient``) on a
pure function of the embeddings: no hook is put on the shared model. They also attribute to
the target prefix y_0 … y_{i−1}, so ``source_share`` says how much of step i's |attribution|
is on the source against the prefix (Voita et al. 2021): defined for the gradient methods.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, fields

import numpy as np
import torch

from .attention import Reweigh
from .data import Batch
from .decoders import Memory
from .search import DecodingRecord, model_device
from .vocabulary import BOS_ID, EOS_ID

METHODS = ("attention", "gxi", "ig", "knock-out", "input-occlusion")
LABELS = {"attention": "attention", "gxi": "gradient × input", "ig": "integrated gradients",
          "knock-out": "attention knock-out", "input-occlusion": "input occlusion"}
IG_STEPS = 20
# the page's integrated gradients: more points while the completeness gap is above IG_TARGET_GAP
# (Σ_i |δ_i| over Σ_i |f(x) − f(x')|) and the work, T x (T + S) x points, stays within IG_WORK
IG_STEP_SCHEDULE = (20, 50, 100)
IG_TARGET_GAP = 0.01
IG_WORK = 800 * 50
INPUT_BASELINE = ("one piece's token embedding (x_j) replaced by the zero vector (the integrated-gradients baseline, "
                  "one piece at a time; position encodings, where the model has them, kept); the encoder runs again")
# the in-distribution control of input occlusion: x_j replaced by another piece's embedding, a vector the
# encoder has seen in training (the zero vector, or the table's mean, whose norm is far below any piece's, has not)
INPUT_RANDOM_BASELINE = ("one piece's token embedding (x_j) replaced by that of a piece drawn uniformly from the "
                         "source vocabulary (seeded; position encodings kept); the encoder runs again")
SPECIAL = EOS_ID + 1  # ids below are padding, unknown, <s> and </s> (model.vocabulary)
# what the app computes on a click: a gradient method's cost grows with T x (T + S) (T copies of the
# sentence, each through S encoder and T decoder steps); these keep a click within a few seconds on one core
BUDGET = {"ig": 800, "gxi": 8000}
BASELINE = ("every token embedding zero, source and target prefix alike (position encodings, where the model "
            "has them, kept)")


@dataclass
class Attribution:
    """One method's scores for one decoding record.

    scores: T x S, a_ij (signed: positive where x_j raised log p(y_i)); prefix: T x T, the same
    for the decoder's inputs <s>, y_1 … y_{T−1} (row i: zero after y_{i−1}; gradient methods only); delta: T,
    integrated gradients' completeness gap as Captum returns it, Σ a − (f(x) − f(x')); logprobs: T,
    log p(y_i) of the forward pass attributed (equals the record's); at_baseline: T, f(x') =
    log p(y_i | x'), computed on its own; steps: the integration points used."""
    method: str
    scores: np.ndarray
    prefix: np.ndarray | None = None
    delta: np.ndarray | None = None
    logprobs: np.ndarray | None = None
    seconds: float = 0.0
    at_baseline: np.ndarray | None = None
    steps: int | None = None

    @property
    def step_gaps(self) -> np.ndarray | None:
        """|δ_i| / |f(x) − f(x')| per step i (T): completeness, relative to what is attributed."""
        if self.delta is None or self.at_baseline is None:
            return None
        return np.abs(self.delta) / np.maximum(np.abs(self.logprobs - self.at_baseline), 1e-30)

    @property
    def completeness_gap(self) -> float | None:
        """Σ_i |δ_i| / Σ_i |f(x) − f(x')|: the total gap, relative to the total attributed."""
        if self.delta is None or self.at_baseline is None:
            return None
        return float(np.abs(self.delta).sum() / max(np.abs(self.logprobs - self.at_baseline).sum(), 1e-30))

    @property
    def relevance(self) -> np.ndarray:
        """|a_ij| / Σ_j |a_ij|: each row's share of the magnitude, on the source (T x S, rows sum to 1),
        the scale the figures and word alignment read, like attention's α_ij."""
        magnitude = np.abs(self.scores)
        return magnitude / np.maximum(magnitude.sum(1, keepdims=True), 1e-30)

    @property
    def source_share(self) -> np.ndarray | None:
        """Σ_j |a_ij| / (Σ_j |a_ij| + Σ_k<i |a_ik|) over source j and prefix k: T, or None."""
        if self.prefix is None:
            return None
        source, prefix = np.abs(self.scores).sum(1), np.abs(self.prefix).sum(1)
        return source / np.maximum(source + prefix, 1e-30)


def kind(model) -> str:
    """``rnn`` (Seq2Seq), ``transformer`` (ours) or ``hf`` (model/hf.py)."""
    if hasattr(model, "hf"):
        return "hf"
    return "transformer" if model.cfg.decoder == "transformer" else "rnn"


def has_knock_out(model) -> bool:
    return model.cfg.has_attention


# ----------------------------------------------------------------------------------------------
# embeddings in, log p(y_i) out: one pure function per model family
# ----------------------------------------------------------------------------------------------
def embeddings(model, src: torch.Tensor, trg_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The token embeddings each family reads: src (1, S), trg_in (1, T) -> (1, S, E), (1, T, E)."""
    family = kind(model)
    if family == "hf":
        encoder, decoder = model.hf.get_encoder(), model.hf.get_decoder()
        return (encoder.embed_tokens(model._hf_ids(src)) * getattr(encoder, "embed_scale", 1.0),
                decoder.embed_tokens(model._hf_ids(trg_in)))
    source = model.src_embed if family == "transformer" else model.encoder.embed
    return source(src).float(), model.trg_embed(trg_in).float()


def features(model, src_vec: torch.Tensor, trg_vec: torch.Tensor, src: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Teacher-forced decoder output from embeddings (N, S, E), (N, T, E): row r's vector before
    the output layer at its own step rows[r], (N, F). src (1, S): the ids, for the HF model's mask."""
    N, S = src_vec.shape[:2]
    lengths = torch.full((N,), S, dtype=torch.long, device=src_vec.device)
    family = kind(model)
    if family == "rnn":
        return rnn_features(model, src_vec, trg_vec, lengths, rows)
    if family == "transformer":
        _, memory, _ = model.encode(src.expand(N, -1), lengths, src_vectors=src_vec)
        feats = model.decode(memory, model.positioned(trg_vec))[0]
    else:
        feats = model.hf.model(inputs_embeds=src_vec, attention_mask=torch.ones(N, S, dtype=torch.long),
                               decoder_inputs_embeds=trg_vec, use_cache=False, return_dict=True).last_hidden_state
    return feats[torch.arange(N), rows]


def rnn_features(model, src_vec, trg_vec, lengths, rows) -> torch.Tensor:
    """:func:`features` for the RNNs, rows sorted by step, latest first: rows leave the batch
    after their own step (a quarter of it at a time), and the deep output runs once per row, at
    that step (about half the work of running every row to the end)."""
    decoder = model.decoder
    enc = model.encoder.annotate(src_vec, lengths)
    memory, state = decoder.prepare(enc), decoder.init_state(enc)
    done, width = [], len(rows)
    for t in range(int(rows[0]) + 1):
        n = int((rows >= t).sum())  # the rows still decoding: a prefix of the batch
        if n <= 0.75 * width:  # cut the batch only now and then: each cut costs a full-size gradient copy
            width = n
            memory = Memory(**{f.name: None if getattr(memory, f.name) is None else getattr(memory, f.name)[:n]
                               for f in fields(Memory)})
            state = {k: v[:n] for k, v in state.items()}
        state, step = decoder.recurrence(trg_vec[:width, t], state, memory)
        k = int((rows == t).sum())  # the rows whose own step this is: the batch's last k
        if k:
            first, second = decoder.readout_inputs(step)
            done.append(decoder.readout(trg_vec[n - k:n, t], first[n - k:n], second[n - k:n]))
    return torch.cat(done[::-1])


def output_logprobs(model, feats: torch.Tensor) -> torch.Tensor:
    """(N, F) -> log p over the zoo's ids (N, V), with gradients."""
    if kind(model) == "hf":
        logits = model.hf.get_output_embeddings()(feats) + getattr(model.hf, "final_logits_bias", 0.0)
        return model._logprobs(logits)
    return torch.log_softmax(model.logits(feats).float(), dim=-1)


def own_step_logprob(model, src: torch.Tensor, targets: torch.Tensor):
    """f(src_vec, trg_vec, rows) -> (N,): row r's log p(y_{rows[r]}), the function Captum attributes.
    Each row reads only its own step's output, so N rows cost N vectors through the output layer,
    not N x T."""
    def f(src_vec, trg_vec, rows):
        order = rows.argsort(descending=True, stable=True)  # latest step first (rnn_features)
        feats = features(model, src_vec[order], trg_vec[order], src, rows[order])  # N x F
        lp = output_logprobs(model, feats).gather(1, targets[rows[order]].unsqueeze(1)).squeeze(1)
        return lp[order.argsort()]
    return f


# ----------------------------------------------------------------------------------------------
# the methods
# ----------------------------------------------------------------------------------------------
def gradient_attribution(model, src_ids: list[int], target_ids: list[int], method: str = "ig",
                         steps: int = IG_STEPS, check=None) -> Attribution:
    """Gradient × input (``gxi``) or integrated gradients (``ig``) through Captum, for every
    target step at once: T copies of the sentence, copy i attributing log p(y_i). For ``ig``
    f(x') is also computed on its own (one pass on the baseline), so the completeness gap is
    read against f(x) − f(x'), not against log p. ``check()`` is called before the passes (see
    :func:`attribute`)."""
    from captum.attr import InputXGradient, IntegratedGradients  # the app pays for Captum only on use
    if check is not None:
        check()
    start = time.perf_counter()
    device = model_device(model)
    batch = Batch([src_ids], [list(target_ids)]).to(device)
    T = len(target_ids)
    trg_in = torch.tensor([[BOS_ID] + list(target_ids[:-1])], device=device)
    targets = torch.tensor(target_ids, device=device)
    rows = torch.arange(T, device=device)
    with torch.no_grad():
        src_vec, trg_vec = embeddings(model, batch.src, trg_in)
    inputs = (src_vec.expand(T, -1, -1).contiguous().requires_grad_(), trg_vec.expand(T, -1, -1).contiguous().requires_grad_())
    f = own_step_logprob(model, batch.src, targets)
    at_baseline = None
    with torch.enable_grad():
        if method == "ig":
            baselines = tuple(torch.zeros_like(x) for x in inputs)
            (src_attr, trg_attr), delta = IntegratedGradients(f).attribute(
                inputs, baselines=baselines, additional_forward_args=(rows,), n_steps=steps,
                method="gausslegendre", return_convergence_delta=True)
            with torch.no_grad():
                at_baseline = f(*baselines, rows).cpu().numpy()
        elif method == "gxi":
            src_attr, trg_attr = InputXGradient(f).attribute(inputs, additional_forward_args=(rows,))
            delta = None
        else:
            raise ValueError(f"unknown gradient method {method!r}")
        logprobs = f(*inputs, rows).detach()
    prefix = trg_attr.sum(-1).detach()  # T x T: row i on the decoder's inputs, zero after its own
    return Attribution(method, src_attr.sum(-1).detach().cpu().numpy(), prefix.cpu().numpy(),
                       None if delta is None else delta.detach().cpu().numpy(), logprobs.cpu().numpy(),
                       time.perf_counter() - start, at_baseline, steps if method == "ig" else None)


def ig_work(T: int, S: int, steps: int) -> int:
    """Integrated gradients' work in sentence copies through the model: T x (T + S) x points."""
    return T * (T + S) * steps


def complete_integrated_gradients(model, src_ids: list[int], target_ids: list[int], work: int = IG_WORK,
                                  target_gap: float = IG_TARGET_GAP, check=None) -> Attribution:
    """Integrated gradients with the fewest points of :data:`IG_STEP_SCHEDULE` whose completeness
    gap (:attr:`Attribution.completeness_gap`) is at most ``target_gap``, going on to more points
    only while :func:`ig_work` stays within ``work``. The result says its points (``steps``) and
    its gap: above the target where the work stopped it first."""
    T, S = len(target_ids), len(src_ids) + 1
    result, spent = None, 0.0
    for steps in IG_STEP_SCHEDULE:
        if result is not None and ig_work(T, S, steps) > work:
            break
        result = gradient_attribution(model, src_ids, target_ids, "ig", steps, check)
        spent += result.seconds
        if result.completeness_gap <= target_gap:
            break
    result.seconds = spent
    return result


@torch.no_grad()
def decode_states(model, src_ids: list[int], target_ids: list[int]):
    """Force-decode target_ids, keeping what each step i started from: (memory, [(state, y_{i−1})],
    log p (T, V)), so a step can be run again with its attention edited (:func:`knocked_out_steps`)."""
    device = model_device(model)
    batch = Batch([src_ids]).to(device)
    _, memory, state = model.encode(batch.src, batch.src_len)
    prev = torch.tensor([BOS_ID], device=device)
    starts, rows = [], []
    for token in target_ids:
        starts.append((state, prev))
        logprobs, state, _ = model.step(prev, state, memory)
        rows.append(logprobs)
        prev = torch.tensor([token], device=device)
    return memory, starts, torch.cat(rows)


@torch.no_grad()
def knocked_out_steps(model, decoded, columns: list[list[int]], targets: torch.Tensor | None = None,
                      every_layer: bool = True, check=None, layer: int | None = None):
    """Run step i again once per source position in ``columns[i]``, that position knocked out of
    step i's attention (α_ij = 0, the row renormalised) and every step before it as decoded.
    ``every_layer``: a Transformer loses the position in every cross-attention layer and head (the
    default, the page's knock-out); False: in the shown layer's heads only (the layer whose head
    average the record's α is); ``layer``: in that 0-based layer's heads only (the knock-out test,
    one layer at a time).
    Returns log p (T, K, V) for K positions per step; with ``targets`` (T,), only
    (log p(y_i) (T, K), argmax (T, K)), without keeping T x K x V. ``check()``: before each step."""
    memory, starts, _ = decoded
    K = len(columns[0])
    copies = torch.zeros(K, dtype=torch.long, device=memory.mask.device)
    memory = memory.index_select(copies)
    zeros = torch.zeros(K, dtype=torch.float64)  # r = 0: knocked out
    out = []
    for i, ((state, prev), cols) in enumerate(zip(starts, columns)):
        if check is not None:
            check()
        state = {n: v.index_select(0, copies) for n, v in state.items()}
        reweigh = Reweigh(torch.tensor(cols), zeros, every_layer=every_layer, layer=layer)
        logprobs = model.step(prev.index_select(0, copies), state, memory, reweigh)[0]  # K x V
        out.append(logprobs if targets is None else (logprobs[:, targets[i]], logprobs.argmax(1)))
    if targets is None:
        return torch.stack(out)
    return torch.stack([o[0] for o in out]), torch.stack([o[1] for o in out])


def knock_out(model, src_ids: list[int], target_ids: list[int], check=None) -> Attribution:
    """Attention knock-out: a_ij = log p(y_i) − log p(y_i | position j knocked out of step i's
    attention), one batched step per i."""
    if not has_knock_out(model):
        raise ValueError("RNNenc reads no source position at a step (one fixed vector c): nothing to knock out")
    start = time.perf_counter()
    decoded = decode_states(model, src_ids, target_ids)
    S = len(src_ids) + 1
    targets = torch.tensor(target_ids, device=decoded[2].device)
    without, _ = knocked_out_steps(model, decoded, [list(range(S))] * len(target_ids), targets,
                                   check=check)  # T x S
    own = decoded[2].gather(1, targets.unsqueeze(1))  # T x 1
    return Attribution("knock-out", (own - without).cpu().numpy(), logprobs=own.squeeze(1).cpu().numpy(),
                       seconds=time.perf_counter() - start)


def all_step_features(model, src_vec: torch.Tensor, trg_vec: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """Teacher-forced decoder output at every step from embeddings (N, S, E), (N, T, E): (N, T, F)."""
    N, S = src_vec.shape[:2]
    lengths = torch.full((N,), S, dtype=torch.long, device=src_vec.device)
    family = kind(model)
    if family == "transformer":
        _, memory, _ = model.encode(src.expand(N, -1), lengths, src_vectors=src_vec)
        return model.decode(memory, model.positioned(trg_vec))[0]
    if family == "hf":
        return model.hf.model(inputs_embeds=src_vec, attention_mask=torch.ones(N, S, dtype=torch.long),
                              decoder_inputs_embeds=trg_vec, use_cache=False, return_dict=True).last_hidden_state
    decoder = model.decoder
    enc = model.encoder.annotate(src_vec, lengths)
    memory, state = decoder.prepare(enc), decoder.init_state(enc)
    firsts, seconds = [], []
    for t in range(trg_vec.size(1)):
        state, step = decoder.recurrence(trg_vec[:, t], state, memory)
        first, second = decoder.readout_inputs(step)
        firsts.append(first)
        seconds.append(second)
    return decoder.readout(trg_vec, torch.stack(firsts, 1), torch.stack(seconds, 1))


@torch.no_grad()
def random_piece_embeddings(model, n: int, rng: torch.Generator) -> torch.Tensor:
    """The token embeddings of n source pieces drawn uniformly from the vocabulary, special pieces
    (padding, unknown, <s>, </s>) left out, as :func:`embeddings` reads them: (n, E). Seeded by ``rng``."""
    ids = torch.randint(SPECIAL, model.cfg.vocab_size, (1, n), generator=rng).to(model_device(model))  # zoo ids
    return embeddings(model, ids, ids[:, :1])[0][0]


@torch.no_grad()
def input_occluded_steps(model, src_ids: list[int], target_ids: list[int], chunk: int = 8,
                         baseline: torch.Tensor | None = None, check=None):
    """Teacher-forced on target_ids, with each source piece's token embedding replaced in turn by
    ``baseline`` ((E,) or one per position (S, E); None: the zero vector, :data:`INPUT_BASELINE`):
    returns log p(y_i | x) (T,), log p(y_i | x without x_j) (T, S) and the argmax of each occluded
    step (T, S). The unoccluded pass runs in the same batches, so both
    come from one function. ``chunk``: sentence copies per pass (memory: chunk x T x V).
    ``check()``: before each pass."""
    device = model_device(model)
    T = len(target_ids)
    src = Batch([src_ids]).to(device).src
    trg_in = torch.tensor([[BOS_ID] + list(target_ids[:-1])], device=device)
    targets = torch.tensor(target_ids, device=device)
    src_vec, trg_vec = embeddings(model, src, trg_in)
    S = src_vec.size(1)
    keep = torch.ones(S + 1, S, 1, device=device)  # copy 0 as it is, copy j + 1 without x_j
    keep[torch.arange(1, S + 1), torch.arange(S)] = 0.0
    fill = torch.zeros_like(src_vec[0]) if baseline is None else baseline.to(src_vec)  # (S or 1) x E
    own_rows, arg_rows = [], []
    for part in keep.split(chunk):
        if check is not None:
            check()
        n = part.size(0)
        vectors = src_vec * part + (1.0 - part) * fill  # x_j -> the baseline where part is 0
        feats = all_step_features(model, vectors, trg_vec.expand(n, -1, -1), src)  # n x T x F
        logprobs = output_logprobs(model, feats.reshape(n * T, -1)).view(n, T, -1)
        own_rows.append(logprobs.gather(2, targets.view(1, T, 1).expand(n, T, 1)).squeeze(2))
        arg_rows.append(logprobs.argmax(2))
    own, arg = torch.cat(own_rows), torch.cat(arg_rows)  # (S + 1) x T
    return own[0].cpu(), own[1:].T.cpu(), arg[1:].T.cpu()


def input_occlusion(model, src_ids: list[int], target_ids: list[int], check=None) -> Attribution:
    """Input occlusion: a_ij = log p(y_i | x) − log p(y_i | piece j's embedding replaced by zero), all T steps per pass."""
    start = time.perf_counter()
    own, without, _ = input_occluded_steps(model, src_ids, target_ids, check=check)
    return Attribution("input-occlusion", (own.unsqueeze(1) - without).numpy(), logprobs=own.numpy(),
                       seconds=time.perf_counter() - start)


def attribute(model, src_ids: list[int], target_ids: list[int], method: str, steps: int = IG_STEPS,
              check=None) -> Attribution:
    """The one entry point: ``gxi``, ``ig``, ``knock-out`` or ``input-occlusion`` scores for
    force-decoding target_ids (the record's, EOS included where it has one) from src_ids (without EOS).
    ``check()``, if given, is called between passes (a knock-out step, an occlusion batch, an
    integrated-gradients schedule point), as the decoders call it between steps: whatever it
    raises stops the attribution there (a newer request, a run past its seconds)."""
    if method == "knock-out":
        return knock_out(model, src_ids, target_ids, check)
    if method == "input-occlusion":
        return input_occlusion(model, src_ids, target_ids, check)
    if method in ("gxi", "ig"):
        return gradient_attribution(model, src_ids, target_ids, method, steps, check)
    raise ValueError(f"unknown attribution method {method!r}; one of {', '.join(METHODS[1:])}")


def attribute_record(model, vocab, record: DecodingRecord, method: str, steps: int | None = IG_STEPS,
                     work: int = IG_WORK, check=None) -> Attribution:
    """:func:`attribute` for a record made by ``model.search`` from ``record.source_text``.
    ``steps=None``: integrated gradients with as many points as completeness needs, within ``work``
    (:func:`complete_integrated_gradients`)."""
    src_ids = vocab.encode(record.source_text)
    if len(src_ids) + 1 != len(record.source_tokens):
        src_ids = src_ids[:len(record.source_tokens) - 1]  # a long input was cut by prepare_source
    if method == "ig" and steps is None:
        return complete_integrated_gradients(model, src_ids, record.target_ids, work, check=check)
    return attribute(model, src_ids, record.target_ids, method, steps or IG_STEPS, check)


def rank_correlation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's ρ between each row of a and b (T x S each): T values (NaN for a constant row)."""
    def ranks(x):
        order = x.argsort(1, kind="stable")
        r = np.empty_like(order, dtype=float)
        np.put_along_axis(r, order, np.arange(x.shape[1], dtype=float)[None].repeat(len(x), 0), 1)
        return r
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(1, keepdims=True), rb - rb.mean(1, keepdims=True)
    denominator = np.sqrt((ra ** 2).sum(1) * (rb ** 2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (ra * rb).sum(1) / denominator
