"""Models made elsewhere: a Hugging Face encoder–decoder behind the zoo's interface.

A ``transformers`` ``AutoModelForSeq2SeqLM`` (MarianMT first; BART-style models share its
names) and its tokenizer are wrapped so that greedy, beam and forced decoding in
``model/search.py``, evaluation and alignment drive it exactly as they drive our own
Transformer, and return the same :class:`~model.search.DecodingRecord`:

    memory = encode(src, src_len)           # encoder annotations h_j, its self-attention
    logprobs, state, step = step(y_{i-1}, state, memory)

:class:`HFSeq2Seq` speaks the zoo's ids (PAD, UNK, BOS, EOS = 0, 1, 2, 3, then every other
id of the model's vocabulary in its own order), so ``search.py`` needs no branch for it.
Its ``state`` is the decoder's key/value cache as plain tensors (per layer n: self-attention
``K{n}``/``V{n}`` and, from the first step on, cross-attention ``CK{n}``/``CV{n}``, each
B x heads x length x d_k), rebuilt into a ``transformers`` cache object for every call and
read back out of it: nothing is kept on the module, so one loaded model serves every
session of a process, and beam search reorders the cache as it reorders ours.

The record's ``weights`` (the app's "attention") is one decoder layer's cross-attention
with its heads averaged, Vaswani et al. (2017) eq. 1 per head; the layer is the one whose
head average aligns best (lowest AER) on held-out Hansards gold pairs, its AER reported on the
others (docs/alignment.md), once ``python -m model.align --checkpoint hf:NAME --write-metrics``
has scored it; until then the penultimate layer (Garg et al. 2019), said so on the pages.

``transformers`` is imported only here and only when such a model is loaded, so the app's
start without one does not pay for it. Weights load from safetensors, or from a pickled
``pytorch_model.bin`` only through torch's ``weights_only`` loading; no remote code runs.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from .checkpoint import CheckpointError, read_metrics
from .decoders import Memory, Step
from .vocabulary import BOS_ID, EOS_ID, PAD_ID, UNK_ID

PREFIX = "hf:"  # a --checkpoint or zoo name that starts so is a Hugging Face model
ROOT = Path(__file__).resolve().parent.parent
METRICS_ROOT = ROOT / "results" / "hf"  # metrics.json of each model made elsewhere (its folder may be read-only)
ETAG_TIMEOUT_S = 5  # the CLIs' one look at the Hub for a name not cached: fail fast without a network
# what a translation model needs from a Hub repository (not the TensorFlow, Flax or Rust weights)
HUB_FILES = ["*.json", "*.safetensors", "*.spm", "*.model", "*.txt", "*.tiktoken", "merges.txt"]
LANGUAGES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian", "nl": "Dutch",
             "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "cs": "Czech", "fi": "Finnish",
             "zh": "Chinese", "ja": "Japanese", "ar": "Arabic", "sv": "Swedish", "da": "Danish", "pl": "Polish"}
ISO_639_2 = {"eng": "en", "fra": "fr", "fre": "fr", "deu": "de", "ger": "de", "spa": "es", "ita": "it", "nld": "nl",
             "dut": "nl", "por": "pt", "ron": "ro", "rum": "ro", "rus": "ru", "ces": "cs", "cze": "cs", "fin": "fi",
             "zho": "zh", "chi": "zh", "jpn": "ja", "ara": "ar", "swe": "sv", "dan": "da", "pol": "pl"}


def is_hf(spec: str | Path) -> bool:
    return str(spec).startswith(PREFIX)


def language_name(code: str | None) -> str:
    return LANGUAGES.get(code or "", code or "an unknown language")


@dataclass
class HFModelConfig:
    """What the pages and CLIs read off ``model.cfg``, from the model's own config.

    It is a Transformer with scaled dot-product attention, so the views written for ours
    (every layer x head, encoder self-attention) read it the same way; ``layers`` and
    ``heads`` are the decoder's (where cross-attention lives)."""
    name: str
    layers: int
    heads: int
    encoder_layers: int
    encoder_heads: int
    d_model: int
    vocab_size: int                      # in the zoo's ids: the model's vocabulary + the slots it lacks
    shown_layer: int                     # 0-based decoder layer whose cross-attention heads are averaged
    shown_by_aer: float | None = None    # that layer's AER on the Hansards gold; None: the default, not yet scored
    source_language: str | None = None   # ISO 639-1, from the tokenizer (or the Hub name)
    target_language: str | None = None
    decoder: str = "transformer"
    attention: str = "scaled-dot"

    @property
    def has_attention(self) -> bool:
        return True


class HFLoadError(CheckpointError):
    """A Hugging Face model that cannot be loaded; str() says which and why, for users."""


# ----------------------------------------------------------------------------------------------
# ids: the zoo's four special ids first, then the model's own
# ----------------------------------------------------------------------------------------------
class IdMap:
    """The zoo's ids <-> the model's. ``to_hf[i]``: the model's id for zoo id i (BOS maps to the
    decoder's start token, which Marian shares with padding); ``gather``: for each zoo id, the
    column of the model's log-probabilities (plus one column of -inf for zoo ids the model
    never emits: PAD, BOS, and UNK where it has none)."""

    def __init__(self, vocab_size: int, pad: int, unk: int | None, start: int, eos: int):
        special = {PAD_ID: pad, UNK_ID: unk, BOS_ID: start, EOS_ID: eos}
        taken = {i for i in special.values() if i is not None}
        rest = [i for i in range(vocab_size) if i not in taken]
        to_hf = [special[k] if special[k] is not None else pad for k in range(4)] + rest
        self.to_hf = torch.tensor(to_hf, dtype=torch.long)
        never = vocab_size  # the -inf column
        gather = [never, unk if unk is not None else never, never, eos] + rest
        self.gather = torch.tensor(gather, dtype=torch.long)
        # the model's ids back to ours: its padding (= Marian's start token) reads as PAD, never as BOS
        self.from_hf = {h: z for z, h in enumerate(to_hf) if z >= 4 or (z in (UNK_ID, EOS_ID) and special[z] is not None)}
        self.from_hf.setdefault(pad, PAD_ID)
        self.size = len(to_hf)

    def zoo_ids(self, hf_ids: list[int]) -> list[int]:
        return [self.from_hf.get(i, UNK_ID) for i in hf_ids]

    def hf_ids(self, zoo_ids: list[int]) -> list[int]:
        return self.to_hf[torch.tensor(zoo_ids, dtype=torch.long)].tolist() if zoo_ids else []

    def logprobs(self, hf_logprobs: torch.Tensor) -> torch.Tensor:
        """(…, V_model) -> (…, V_zoo): each zoo id's column, -inf where the model has none."""
        never = hf_logprobs.new_full((*hf_logprobs.shape[:-1], 1), float("-inf"))
        return torch.cat([hf_logprobs, never], -1).index_select(-1, self.gather.to(hf_logprobs.device))


class HFVocabulary:
    """The tokenizer behind :class:`~model.vocabulary.Vocabulary`'s methods, in the zoo's ids.

    Source text is cut by the source tokenizer, target text (forced decoding, what-if) by
    the target one: Marian keeps one SentencePiece model per language. The tokenizer keeps
    which of the two it is using on itself, so every call into it holds ``lock``."""

    def __init__(self, tokenizer, ids: IdMap):
        self.tokenizer, self.ids = tokenizer, ids
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return self.ids.size

    def encode(self, text: str) -> list[int]:
        with self.lock:
            hf = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return self.ids.zoo_ids(hf)

    def encode_target(self, text: str) -> list[int]:
        with self.lock:
            hf = self.tokenizer(text_target=text, add_special_tokens=False)["input_ids"]
        return self.ids.zoo_ids(hf)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    def decode(self, ids: list[int]) -> str:
        with self.lock:
            return self.tokenizer.decode(self.ids.hf_ids([i for i in ids if i > EOS_ID or i == UNK_ID]),
                                         skip_special_tokens=True)

    def decode_batch(self, batch: list[list[int]]) -> list[str]:
        return [self.decode(ids) for ids in batch]

    def pieces(self, ids: list[int]) -> list[str]:
        with self.lock:
            return self.tokenizer.convert_ids_to_tokens(self.ids.hf_ids(ids))

    def id_to_piece(self, i: int) -> str:
        return self.pieces([i])[0]

    def pieces_with_spans(self, text: str, target: bool = False) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids of ``text`` and each piece's (begin, end) **byte** span in its UTF-8 form, for word
        alignment (``model.hansards.Written`` spans are bytes, as SentencePiece's are). Marian's
        SentencePiece models give byte spans; other (fast) tokenizers give character offsets,
        turned into bytes here (they differ from the first non-ASCII character on)."""
        tok = self.tokenizer
        with self.lock:
            spm = getattr(tok, "spm_target" if target else "spm_source", None)
            if spm is not None:
                proto = spm.encode(text, return_type="proto")
                vocab = tok.target_encoder if target and getattr(tok, "separate_vocabs", False) else tok.encoder
                unk = vocab[tok.unk_token]
                hf = [vocab.get(p.piece, unk) for p in proto.pieces]
                spans = [(p.begin, p.end) for p in proto.pieces]
            elif getattr(tok, "is_fast", False):
                enc = tok(text_target=text, add_special_tokens=False, return_offsets_mapping=True) if target else \
                    tok(text, add_special_tokens=False, return_offsets_mapping=True)
                hf, spans = enc["input_ids"], character_to_byte_spans(text, enc["offset_mapping"])
            else:
                raise ValueError(f"{type(tok).__name__} gives no character spans: word alignment needs them")
        return self.ids.zoo_ids(hf), spans


def character_to_byte_spans(text: str, spans) -> list[tuple[int, int]]:
    """(begin, end) character offsets into ``text`` -> the same ranges as UTF-8 byte offsets."""
    byte_at = [0]
    for ch in text:
        byte_at.append(byte_at[-1] + len(ch.encode("utf-8")))
    return [(byte_at[b], byte_at[e]) for b, e in spans]


# ----------------------------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------------------------
ATTENTION = "attn_explorer_eager"  # the attention implementation the adapter loads models with


def eager_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, cross_edit=None,
                    **kwargs):
    """``transformers``' eager attention, softmax(Q K^T · scaling + mask) V (Vaswani et al. eq. 1),
    returning its weights; where a call passes ``cross_edit`` (modules, reweigh) and ``module`` is one
    of those cross-attention modules, the weights are edited (model/attention.py, ``Reweigh``)
    before they make the output: the hook for edit-and-re-decode (model/intervention.py). It is
    an argument of the call, not a hook kept on the shared model."""
    weights = torch.matmul(query, key.transpose(2, 3)) * (query.size(-1) ** -0.5 if scaling is None else scaling)
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = F.softmax(weights, dim=-1)  # B x heads x T x S
    if cross_edit is not None and id(module) in cross_edit[0]:
        weights = cross_edit[1](weights)
    weights = F.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def register_attention() -> str:
    """Make :func:`eager_attention` known to ``transformers`` under :data:`ATTENTION` (a new name:
    no other model's attention changes), with eager attention's masks (without one, ``transformers``
    builds no mask at all for an implementation it does not know: no causal mask in a
    teacher-forced pass)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask
    if ATTENTION not in AttentionInterface._global_mapping:
        AttentionInterface.register(ATTENTION, eager_attention)
        AttentionMaskInterface.register(ATTENTION, eager_mask)
    return ATTENTION


class HFSeq2Seq(nn.Module):
    """A ``transformers`` encoder–decoder with the zoo's ``encode`` / ``step`` / ``forward``."""

    def __init__(self, hf_model, cfg: HFModelConfig, ids: IdMap):
        super().__init__()
        self.hf, self.cfg, self.ids = hf_model, cfg, ids
        # the model never writes padding (Marian's generation config bans it too): its logit is
        # -inf before the softmax, so the other tokens' probabilities still sum to 1
        self.banned = [i for i in {hf_model.config.pad_token_id} if i is not None and i != hf_model.config.eos_token_id]
        # the decoder's cross-attention modules, layer by layer (Marian/BART name them so, T5 EncDecAttention)
        self.cross_attention = [id(m) for n, m in hf_model.named_modules()
                                if n.endswith(("encoder_attn", "EncDecAttention"))]

    @property
    def device(self) -> torch.device:
        return next(self.hf.parameters()).device

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.hf.parameters())

    def _hf_ids(self, ids: torch.Tensor) -> torch.Tensor:
        return self.ids.to_hf.to(ids.device)[ids]

    def _logprobs(self, logits: torch.Tensor) -> torch.Tensor:
        """Model logits (…, V_model) -> log p over the zoo's ids (…, V_zoo)."""
        logits = logits.float()
        if self.banned:
            logits = logits.index_fill(-1, torch.tensor(self.banned, device=logits.device), float("-inf"))
        return self.ids.logprobs(F.log_softmax(logits, dim=-1))

    @torch.no_grad()
    def encode(self, src: torch.Tensor, src_len: torch.Tensor) -> tuple[None, Memory, dict]:
        """src: B x S (zoo ids, EOS last, PAD after) -> memory (annotations h_j: B x S x d,
        mask B x S, encoder self-attention B x L_enc x heads x S x S) and the empty cache."""
        mask = torch.arange(src.size(1), device=src.device).unsqueeze(0) < src_len.unsqueeze(1)  # B x S
        out = self.hf.get_encoder()(input_ids=self._hf_ids(src), attention_mask=mask.long(), output_attentions=True,
                                    return_dict=True)
        memory = Memory(values=out.last_hidden_state, mask=mask, encoder_attention=torch.stack(out.attentions, 1))
        d_k = self.cfg.d_model // self.cfg.heads
        empty = out.last_hidden_state.new_zeros(src.size(0), self.cfg.heads, 0, d_k)
        return None, memory, {name: empty for n in range(self.cfg.layers) for name in (f"K{n}", f"V{n}")}

    def _cache(self, state: dict):
        """The tensors of ``state`` as the ``transformers`` cache the model reads and extends."""
        from transformers import DynamicCache, EncoderDecoderCache
        L = self.cfg.layers
        started = state["K0"].size(2) > 0
        own = DynamicCache([(state[f"K{n}"], state[f"V{n}"]) for n in range(L)]) if started else DynamicCache()
        cross = DynamicCache([(state[f"CK{n}"], state[f"CV{n}"]) for n in range(L)]) if "CK0" in state else DynamicCache()
        return EncoderDecoderCache(own, cross)

    @staticmethod
    def _cache_state(cache) -> dict:
        state = {}
        for n, (k, v, *_) in enumerate(cache.self_attention_cache):
            state[f"K{n}"], state[f"V{n}"] = k, v
        for n, (k, v, *_) in enumerate(cache.cross_attention_cache):
            state[f"CK{n}"], state[f"CV{n}"] = k, v
        return state

    @torch.no_grad()
    def step(self, prev_tokens: torch.Tensor, state: dict, memory: Memory,
             reweigh=None) -> tuple[torch.Tensor, dict, Step]:
        """One target position i from the cache of 0 … i−1: prev_tokens (B,) -> log p (B, V_zoo).
        ``reweigh`` edits the heads' cross-attention weights of every layer, or of the shown one
        (:func:`eager_attention`)."""
        from transformers.modeling_outputs import BaseModelOutput
        edit = {} if reweigh is None else {"cross_edit": (
            {a for n, a in enumerate(self.cross_attention)
             if reweigh.acts_on(n, self.cfg.shown_layer % len(self.cross_attention))}, reweigh)}
        out = self.hf(encoder_outputs=BaseModelOutput(last_hidden_state=memory.values),
                      attention_mask=memory.mask.long(), decoder_input_ids=self._hf_ids(prev_tokens).unsqueeze(1),
                      cache=self._cache(state), use_cache=True, output_attentions=True, output_hidden_states=True,
                      return_dict=True, **edit)
        head_weights = torch.stack([w[:, :, 0] for w in out.cross_attentions], 1)  # B x L x heads x S
        weights = head_weights[:, self.cfg.shown_layer].mean(1)  # B x S
        step = Step(query=out.decoder_hidden_states[self.cfg.shown_layer][:, 0],  # the shown layer's input
                    state=out.decoder_hidden_states[-1][:, 0],
                    # c_i = Σ_j α_ij h_j over the encoder's output (Bahdanau eq. 5), not the layer's W^V-projected sum
                    context=torch.bmm(weights.unsqueeze(1), memory.values)[:, 0],
                    weights=weights, head_weights=head_weights,
                    self_weights=torch.stack([w[:, :, 0] for w in out.decoder_attentions], 1))  # B x L x heads x i
        return self._logprobs(out.logits[:, -1]), self._cache_state(out.cache), step

    @torch.no_grad()
    def forward(self, src, src_len, trg_in, trg_out=None, label_smoothing: float = 0.0, return_weights: bool = False):
        """Teacher-forced pass (``model.evaluate``'s perplexity): (sum of −log p over target
        tokens, their count), as :meth:`Seq2Seq.forward` returns it; without trg_out, log p."""
        mask = torch.arange(src.size(1), device=src.device).unsqueeze(0) < src_len.unsqueeze(1)
        out = self.hf(input_ids=self._hf_ids(src), attention_mask=mask.long(), decoder_input_ids=self._hf_ids(trg_in),
                      decoder_attention_mask=(trg_in != PAD_ID).long(), return_dict=True)
        logprobs = self._logprobs(out.logits)  # B x T x V_zoo
        if trg_out is None:
            return logprobs
        keep = trg_out != PAD_ID
        nll = -logprobs.gather(-1, trg_out.unsqueeze(-1)).squeeze(-1)
        return nll[keep].sum(), int(keep.sum())


# ----------------------------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------------------------
def strip_prefix(spec: str) -> str:
    return spec[len(PREFIX):] if is_hf(spec) else spec


def slug(spec: str) -> str:
    """A file-system name for the model: the Hub name with / as --, or a folder's own name."""
    spec = strip_prefix(spec).rstrip("/")
    if looks_like_folder(spec):
        return Path(spec).expanduser().name
    return spec.replace("/", "--")


def looks_like_folder(spec: str) -> bool:
    return spec.startswith(("/", ".", "~")) or Path(spec).expanduser().is_dir()


def metrics_folder(spec: str, root: str | Path | None = None) -> Path:
    """Where ``model.evaluate`` / ``model.align --write-metrics`` keep this model's metrics.json:
    keyed on the whole spec, so two folders with the same name (``/a/marian``, ``/b/marian``) never
    share one. A Hub name: its name with / as --; a folder: its name and a hash of its full path."""
    spec = strip_prefix(spec).rstrip("/")
    if not looks_like_folder(spec):
        return Path(root or METRICS_ROOT) / slug(spec)
    import hashlib
    where = str(Path(spec).expanduser().resolve())
    return Path(root or METRICS_ROOT) / f"{slug(spec)}-{hashlib.sha256(where.encode()).hexdigest()[:10]}"


def resolve(spec: str, allow_download: bool) -> Path:
    """The local folder of a saved model or Hub name. The app never downloads (a visitor must
    not start minutes of work): a Hub name must already be in the local cache. The CLIs may
    fetch one, with a short timeout, so a machine without network fails in seconds."""
    spec = strip_prefix(spec)
    if looks_like_folder(spec):
        folder = Path(spec).expanduser()
        if not folder.is_dir():
            raise HFLoadError(f"{spec}: no such folder")
        return folder
    from huggingface_hub import snapshot_download
    try:
        return Path(snapshot_download(spec, local_files_only=True, allow_patterns=HUB_FILES))
    except Exception as cached_error:  # noqa: BLE001 - the hub's errors differ by version; the reason is what matters
        if not allow_download:
            raise HFLoadError(
                f"{spec}: not in the local Hugging Face cache, and the app does not download models. Fetch it "
                f"once with `python -m model.translate --checkpoint hf:{spec} \"Hello.\"` on a machine with a "
                f"network ({type(cached_error).__name__})") from None
    try:
        folder = Path(snapshot_download(spec, allow_patterns=HUB_FILES, etag_timeout=ETAG_TIMEOUT_S))
        if not list(folder.glob("*.safetensors")):
            folder = Path(snapshot_download(spec, allow_patterns=["pytorch_model.bin"], etag_timeout=ETAG_TIMEOUT_S))
        return folder
    except Exception as e:  # noqa: BLE001
        raise HFLoadError(f"{spec}: not in the local Hugging Face cache and the Hub could not be reached "
                          f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None


def languages(spec: str, tokenizer, hf_config) -> tuple[str | None, str | None]:
    """(source, target) ISO 639-1 codes: the tokenizer's own (Marian saves them), else the
    Hub name's ``…-en-fr`` ending; None where neither says."""
    def norm(code):
        code = (str(code).lower().split("_")[0] if code else "")
        return ISO_639_2.get(code, code) or None
    src, trg = norm(getattr(tokenizer, "source_lang", None)), norm(getattr(tokenizer, "target_lang", None))
    if not (src and trg):
        m = re.search(r"(?:^|[-_/])([a-z]{2,3})-([a-z]{2,3})$", strip_prefix(spec).rstrip("/").lower())
        if m:
            src, trg = src or norm(m.group(1)), trg or norm(m.group(2))
    return src, trg


def chosen_layer(metrics: dict | None) -> tuple[int, float] | None:
    """(0-based layer, AER) recorded by ``model.align --write-metrics``, or None."""
    choice = (metrics or {}).get("attention_layer")
    if not choice:
        return None
    return int(choice["layer"]) - 1, float(choice["aer"])


def load_hf(spec: str, metrics_root: str | Path | None = None,
            allow_download: bool = False) -> tuple[HFSeq2Seq, HFVocabulary, dict]:
    """Load ``hf:NAME_OR_FOLDER``. Returns (model in eval mode, vocabulary, config dict) as
    :func:`~model.checkpoint.load_checkpoint` does; raises :class:`HFLoadError` with the reason."""
    spec = strip_prefix(spec)
    folder = resolve(spec, allow_download)
    try:
        from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer
    except ImportError:
        raise HFLoadError(f"{spec}: the transformers package is not installed "
                          "(pip install -r requirements-hf.txt)") from None
    if not list(folder.glob("*.safetensors")) and not (folder / "pytorch_model.bin").exists():
        raise HFLoadError(f"{spec}: {folder} holds no model.safetensors (nor pytorch_model.bin)")
    try:
        hf_config = AutoConfig.from_pretrained(folder, local_files_only=True)
        if not getattr(hf_config, "is_encoder_decoder", False):
            raise HFLoadError(f"{spec}: a {hf_config.model_type} model is not an encoder–decoder")
        # eager attention (register_attention: eager, plus the edit hook): the fused kernels do not return the
        # weights the pages draw; weights_only: a pickled .bin is read as tensors only, never a full unpickle
        hf_model = AutoModelForSeq2SeqLM.from_pretrained(folder, local_files_only=True,
                                                         attn_implementation=register_attention(),
                                                         weights_only=True, dtype=torch.float32,
                                                         trust_remote_code=False)
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    except HFLoadError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure makes this one model unavailable, with its reason
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise HFLoadError(f"{spec}: could not be loaded ({type(e).__name__}: {first})") from None
    hf_model.eval()
    c = hf_model.config
    V = hf_model.get_output_embeddings().weight.size(0)
    unk = tokenizer.unk_token_id
    ids = IdMap(V, pad=c.pad_token_id, unk=unk if unk is not None and unk < V else None,
                start=c.decoder_start_token_id if c.decoder_start_token_id is not None else c.pad_token_id,
                eos=c.eos_token_id)
    metrics_dir = metrics_folder(spec, metrics_root)
    metrics = read_metrics(metrics_dir)
    L, H, L_enc, H_enc, d_model = sizes(spec, c)
    chosen = chosen_layer(metrics)
    layer, aer = chosen if chosen and chosen[0] < L else ((L - 2) % L, None)  # the penultimate until AER chooses
    src_lang, trg_lang = languages(spec, tokenizer, c)
    name = slug(spec)
    cfg = HFModelConfig(name=name, layers=L, heads=H, encoder_layers=L_enc, encoder_heads=H_enc, d_model=d_model,
                        vocab_size=ids.size, shown_layer=layer, shown_by_aer=aer, source_language=src_lang,
                        target_language=trg_lang)
    config = {"name": name, "metrics_folder": str(metrics_dir),
              "description": f"{c.model_type} model made elsewhere ({spec})", "hf": {
        "spec": spec, "folder": str(folder), "model_type": c.model_type, "d_model": d_model,
        "weights": "safetensors" if list(folder.glob("*.safetensors")) else "pytorch_model.bin (weights_only)"}}
    return HFSeq2Seq(hf_model, cfg, ids).eval(), HFVocabulary(tokenizer, ids), config


def sizes(spec: str, c) -> tuple[int, int, int, int, int]:
    """(decoder layers, decoder heads, encoder layers, encoder heads, d_model) from the config,
    by the names Marian/BART use, else T5's."""
    def first(*names):
        for n in names:
            if getattr(c, n, None) is not None:
                return int(getattr(c, n))
        raise HFLoadError(f"{spec}: its {c.model_type} config names none of {', '.join(names)}")
    return (first("decoder_layers", "num_decoder_layers", "num_layers"),
            first("decoder_attention_heads", "num_heads", "num_attention_heads"),
            first("encoder_layers", "num_layers", "num_hidden_layers"),
            first("encoder_attention_heads", "num_heads", "num_attention_heads"),
            first("d_model", "hidden_size"))


def attention_layer_note(cfg: HFModelConfig, spec: str) -> str:
    """How the shown layer was chosen, for the pages and the Models card."""
    layer = cfg.shown_layer + 1
    if cfg.shown_by_aer is not None:
        return (f"layer {layer} of {cfg.layers}, heads averaged: the layer whose head average aligns best with the "
                f"Hansards gold on held-out pairs (the first 100); AER {cfg.shown_by_aer:.3f} on the other pairs "
                "(`python -m model.align`)")
    return (f"layer {layer} of {cfg.layers}, heads averaged: the default (the penultimate layer), **not yet chosen "
            f"by AER**; `python -m model.align --checkpoint {PREFIX}{spec} --gold ../shared/data/hansards-align "
            "--write-metrics` chooses it")
