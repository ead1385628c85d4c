"""What a new session's first page costs its server: ``--opens`` tabs, one after another, each a
new session that loads the page's HTML (the student cookie) and opens Translate on a news
sentence no tab asked before (WMT newstest, the same seeded order for every app), as the class
bench's ``open`` does. The server's CPU per open, and optionally a py-spy profile of the opens.

    python bench/open_cost.py [--opens 80] [--cached | --sent | --class] [--app DIR] [--profile FILE.raw] [--append FILE]

With ``--cached`` every open is of one link, as a class opening the teacher's link: the opens
after the first are replayed (``replay_follows``) unless ``ATTN_EXPLORER_STREAMLIT_PATCHES``
leaves it out (``all,-replay_follows``). With ``--class`` one student's tab opens the class's sent
links in turn (the three sends and the same page with another number, each with the class code, a
new socket each time), exactly the reference run's ``follow`` kind (``bench/classroom.py``), in a
class opened by the app's own store (``kinds_interleaved.open_class``).

``--app DIR`` runs another checkout's app.py (``/tmp/attn-side-by-side/COMMIT``, made by
``bench/side_by_side.py``); ``--profile`` records py-spy's samples of the server's GIL holder
during the timed opens (``classroom_servers.profiled``; three untimed opens warm it first).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT, Tab, server  # noqa: E402
from classroom_lesson import SAME_PAGE, SENDS, news_sentences, sent_link  # noqa: E402
from classroom_report import emit, stamp  # noqa: E402
from classroom_servers import cpu_seconds, profiled  # noqa: E402
from kinds_interleaved import open_class  # noqa: E402

WARM = 3


async def opens(base: str, links: list[tuple[str, str]], one_tab: bool = False) -> None:
    """Each link opened on a new session; with ``one_tab`` by one student (their cookie kept), as
    a class's follower opens each sent page."""
    tab = None
    for path, query in links:
        tab = tab if one_tab and tab is not None else Tab(base, 120, load_page=True)
        try:
            _, _, error = await tab.do(("open", path, query))
        finally:
            await tab.close()
        if error:
            raise RuntimeError(error)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opens", type=int, default=80)
    parser.add_argument("--app", type=Path, default=ROOT)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--cached", action="store_true",
                        help="open one Translate link every time (decoded by the warm-up opens): a new session's "
                             "own cost, without a decoding")
    which.add_argument("--sent", action="store_true",
                        help="open the teacher's three sent pages in turn (cached after their first open), "
                             "as the reference run's follow does, not Translate on new sentences")
    which.add_argument("--class", dest="in_class", action="store_true",
                       help="one student opens the class's sent links in turn, as the reference run's follow does")
    parser.add_argument("--profile", type=Path, help="py-spy's raw samples of the server, to this file")
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    if args.cached:
        links = [("", urlencode({"text": news_sentences(7)[0], "model": "rnnsearch"}, quote_via=quote))]
        links *= WARM + args.opens
    elif args.sent:
        links = [(page, urlencode(params)) for page, params in SENDS] * (1 + (WARM + args.opens) // len(SENDS))
    elif not args.in_class:
        links = [("", urlencode({"text": text, "model": "rnnsearch"}, quote_via=quote)) for text in news_sentences(7)]
    env, warm = None, WARM
    with tempfile.TemporaryDirectory() as folder:
        if args.in_class:
            env, code = open_class(args.app.resolve(), folder, 1)
            links = [sent_link(page, params, code) for page, params in (*SENDS, SAME_PAGE)]
            warm = len(links)  # each link's first open runs its page; the timed ones are replayed
            links *= 1 + (warm + args.opens) // len(links)
        links = links[:warm + args.opens]
        with server(None, env=env, root=args.app) as target:
            pid = target.pids()[0]
            asyncio.run(opens(target.base, links[:warm], args.in_class))
            before = cpu_seconds(pid)
            with profiled(pid, args.profile):
                asyncio.run(opens(target.base, links[warm:], args.in_class))
            spent = cpu_seconds(pid) - before
    emit({"bench": "open_cost", "app": str(args.app), "opens": args.opens, "sent": args.sent, "cached": args.cached,
          "in_class": args.in_class,
          "server_cpu_ms_per_open": round(spent * 1000 / args.opens, 1),
          "streamlit_patches": os.environ.get("ATTN_EXPLORER_STREAMLIT_PATCHES", "all"), **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
