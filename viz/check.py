"""The spread of a class's check: each student's change per concept, a dot plot.

One column per concept (or kind), one dot per student: their share right after the lesson
minus before (−100 % … +100 %), dots of equal value set side by side so every student stays
visible, and the class's mean change as a bar-shaped marker. A student right on every item of
the concept before and after has nothing left to gain: drawn apart (a hollow diamond, its own
legend entry), not as a blue dot at 0 like a student who learned nothing. Values in whole points,
as the page writes them. Plain lists in; the text alternative (``viz.describe``) lists every dot
with its student's nickname.
"""
from __future__ import annotations

from collections import Counter

from .fast_figure import figure
from .heatmap import CHART_HEIGHT, FONT_SIZE

STUDENT = "#0072B2"  # Okabe–Ito blue: one student
MEAN = "#D55E00"     # Okabe–Ito vermillion: the class's mean
TOP = "#009E73"      # Okabe–Ito bluish green: at the top before and after
SPREAD = 0.06        # how far apart two dots of the same value sit, in columns


def change_dots(changes: dict[str, list[float]], names: dict[str, list[str]] | None = None,
                title: str = "Each student's change, after − before", top: dict[str, list[bool]] | None = None):
    """``changes``: column name (a concept) -> each student's change in share right (−1 … 1);
    ``names``: the same students' nicknames, in the same order (the dots' hover and notes);
    ``top``: the same students, True where they were right on everything before and after."""
    columns = list(changes)
    dots: dict[bool, tuple[list, list, list]] = {False: ([], [], []), True: ([], [], [])}
    for c, column in enumerate(columns):
        seen: Counter = Counter()
        for n, change in enumerate(changes[column]):
            at_top = bool((top or {}).get(column, [False] * (n + 1))[n])
            k = seen[(round(change, 3), at_top)]
            seen[(round(change, 3), at_top)] += 1
            xs, ys, notes = dots[at_top]
            xs.append(c + SPREAD * ((k + 1) // 2) * (1 if k % 2 else -1) + (2 * SPREAD if at_top else 0))
            ys.append(round(100 * change))
            who = (names or {}).get(column, [])
            notes.append(f"{column}: {who[n] if n < len(who) else f'student {n + 1}'}"
                         + (", at the top before and after" if at_top else ""))
    means = [round(100 * sum(v) / len(v)) if v else None for v in changes.values()]
    data = [dict(type="scatter", x=dots[False][0], y=dots[False][1], text=dots[False][2], mode="markers",
                 name="a student", marker=dict(color=STUDENT, size=11, line=dict(color="white", width=1)),
                 hovertemplate="%{text}<br>%{y:+.0f} points<extra></extra>"),
            dict(type="scatter", x=list(range(len(columns))), y=means, mode="markers", name="the class's mean",
                 text=[f"{c}: mean" for c in columns], marker=dict(color=MEAN, size=22, symbol="line-ew-open",
                                                                  line=dict(color=MEAN, width=4)),
                 hovertemplate="%{text}<br>%{y:+.0f} points<extra></extra>")]
    if dots[True][0]:
        data.append(dict(type="scatter", x=dots[True][0], y=dots[True][1], text=dots[True][2], mode="markers",
                         name="at the top before and after", marker=dict(color=TOP, size=12, symbol="diamond-open",
                                                                         line=dict(color=TOP, width=2)),
                         hovertemplate="%{text}<extra></extra>"))
    layout = dict(font=dict(size=FONT_SIZE), height=CHART_HEIGHT, plot_bgcolor="white", title=dict(text=title),
                  margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.3),
                  xaxis=dict(title=dict(text="concept"), tickmode="array", tickvals=list(range(len(columns))),
                             ticktext=columns, range=[-0.5, len(columns) - 0.5]),
                  yaxis=dict(title=dict(text="change in share right (points)"), range=[-105, 105], gridcolor="#ddd",
                             zeroline=True, zerolinecolor="#888"))
    return figure(data, layout)
