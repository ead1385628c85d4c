"""The Hansards gold set's tokens, written back as the text the models were trained on.

The HLT-NAACL 2003 gold alignments (``../shared/data/hansards-align``) are defined over an
old tokenisation: French ``du`` appears as ``de le``, ``l'avis`` as ``le avis``, ``c'est``
as ``ce est``; every punctuation mark stands apart (``Speaker ,``), hyphenated words are
split (``peut - être``) and sentences often start in lower case (``i disagree``). Our
models were trained on ordinary written text (Tatoeba, Multi30k), so force-decoding those
tokens as they are asks the model about French it has never seen, and the AER then
measures that as much as the attention.

``written_english`` / ``written_french`` undo the tokenisation with fixed orthographic
rules, decided from French and English spelling, never from the gold links:

- French elision: le/la/de/ne/je/me/te/se/ce/que/jusque before a vowel or mute h
  (``le avis`` → ``l'avis``, ``ce est`` → ``c'est``); si before il/ils; lorsque/puisque
  before il, elle, on, un, une, en; quelque before un/une.
- French contraction: de le → du, de les → des, à le → au, à les → aux, and the
  lequel/lesquel(le)s forms. The tokens cannot tell the pronoun ``le`` (``de le faire``)
  from the article, so the contraction is always made: a known, rare error.
- Both: `` - `` between two words is a hyphen (``peut-être``, ``a-t-il``); the first letter
  is upper case; English ``i`` is ``I``; closing punctuation joins the word before it
  (French keeps its space before ``; : ! ?``, as Tatoeba's French does); ``aujourd' hui``
  is one word; English ``$`` joins the number after it.

Every gold token keeps a byte span in the written text; tokens merged into one written
word (``de`` + ``le`` = ``du``) share its span, so scoring stays on the gold tokens.
"""
from __future__ import annotations

from dataclasses import dataclass

VOWELS = set("aeiouyàâäéèêëîïôöùûüœæ")
# h aspiré: no elision before these (la hausse, le héros), from French spelling, not the data.
H_ASPIRE = {"hache", "haine", "halte", "hameau", "handicap", "hangar", "hanche", "harcèlement",
            "harcèlements", "hardi", "hareng", "haricot", "hasard", "hâte", "hausse", "haut", "haute",
            "hauts", "hautes", "hauteur", "héros", "hibou", "hiérarchie", "hockey", "hollandais", "homard",
            "honte", "hors", "huit", "huitième", "hurler"}
ELIDED = {"le": "l'", "la": "l'", "de": "d'", "ne": "n'", "je": "j'", "me": "m'", "te": "t'", "se": "s'",
          "ce": "c'", "que": "qu'", "jusque": "jusqu'"}
ELIDED_BEFORE = {  # words that elide only before the words listed
    "si": ("s'", {"il", "ils"}),
    "lorsque": ("lorsqu'", {"il", "ils", "elle", "elles", "on", "un", "une", "en"}),
    "puisque": ("puisqu'", {"il", "ils", "elle", "elles", "on", "un", "une", "en"}),
    "quelque": ("quelqu'", {"un", "une"}),
}
CONTRACTED = {("de", "le"): "du", ("de", "les"): "des", ("à", "le"): "au", ("à", "les"): "aux",
              ("de", "lequel"): "duquel", ("de", "lesquels"): "desquels", ("de", "lesquelles"): "desquelles",
              ("à", "lequel"): "auquel", ("à", "lesquels"): "auxquels", ("à", "lesquelles"): "auxquelles"}
CLOSING = {",", ".", ")", "...", "%"}  # written against the word before them
HIGH_PUNCTUATION = {";", ":", "!", "?"}  # English writes these against the word; French keeps a space
ENGLISH_CLITICS = {"'s", "'re", "'ll", "'ve", "'m", "'d", "n't"}


@dataclass
class Written:
    """A tokenised sentence as written text. spans[k]: the byte range (UTF-8) of token k."""
    text: str
    spans: list[tuple[int, int]]


@dataclass
class _Word:
    text: str
    tokens: list[int]  # the gold tokens this written word stands for
    glued: bool = False  # written without a space before it


def _starts_with_vowel_sound(word: str) -> bool:
    w = word.lower()
    if not w:
        return False
    if w[0] == "h":
        return w not in H_ASPIRE and len(w) > 1
    return w[0] in VOWELS


def _assemble(words: list[_Word], n_tokens: int) -> Written:
    """Join the written words, recording every token's byte span."""
    text, spans = b"", [(0, 0)] * n_tokens
    for k, w in enumerate(words):
        if k and not w.glued:
            text += b" "
        piece = w.text.encode("utf-8")
        for t in w.tokens:
            spans[t] = (len(text), len(text) + len(piece))
        text += piece
    return Written(text.decode("utf-8"), spans)


def _hyphenate_and_capitalise(words: list[_Word]) -> list[_Word]:
    for k in range(1, len(words) - 1):  # `` - `` between two words is a hyphen
        if words[k].text == "-" and words[k - 1].text[-1:].isalpha() and words[k + 1].text[:1].isalpha():
            words[k].glued = words[k + 1].glued = True
    if words and words[0].text[:1].islower():
        words[0].text = words[0].text[0].upper() + words[0].text[1:]
    return words


def as_typed(tokens: list[str]) -> Written:
    """Tokens joined by single spaces: for sentences typed by a user, already written text."""
    return _assemble([_Word(t, [k]) for k, t in enumerate(tokens)], len(tokens))


def written_english(tokens: list[str]) -> Written:
    words: list[_Word] = []
    for k, t in enumerate(tokens):
        text = "I" if t == "i" else t
        glued = bool(words) and (t in CLOSING or t in HIGH_PUNCTUATION or t in ENGLISH_CLITICS
                                 or words[-1].text in {"(", "$"})
        words.append(_Word(text, [k], glued))
    return _assemble(_hyphenate_and_capitalise(words), len(tokens))


def written_french(tokens: list[str]) -> Written:
    words: list[_Word] = []
    k = 0
    while k < len(tokens):
        t, nxt = tokens[k], tokens[k + 1] if k + 1 < len(tokens) else ""
        after = tokens[k + 2] if k + 2 < len(tokens) else ""
        pair = (t.lower(), nxt)
        if pair in CONTRACTED and not (nxt == "le" and _starts_with_vowel_sound(after)):
            text = CONTRACTED[pair]
            glued = bool(words) and words[-1].text == "("
            words.append(_Word(text if t.islower() else text.capitalize(), [k, k + 1], glued))
            k += 2
            continue
        glued = bool(words) and (t in CLOSING or words[-1].text == "(" or words[-1].text.endswith("'"))
        low = t.lower()
        if low in ELIDED and _starts_with_vowel_sound(nxt):
            t = t[0] + ELIDED[low][1:] if low != t else ELIDED[low]
        elif low in ELIDED_BEFORE and nxt.lower() in ELIDED_BEFORE[low][1]:
            t = ELIDED_BEFORE[low][0] if low == t else t[0] + ELIDED_BEFORE[low][0][1:]
        words.append(_Word(t, [k], glued))
        k += 1
    return _assemble(_hyphenate_and_capitalise(words), len(tokens))
