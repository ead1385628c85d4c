"""Example sentences: the Translate and Compare pages' picker, the landing sentence, and the
published human translations some of them come with."""
from __future__ import annotations

from dataclasses import dataclass


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
