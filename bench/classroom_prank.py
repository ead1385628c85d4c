"""``--prank``: one unfriendly student on the school's network, beside the class (bench/classroom.py).

From the class's own address (this machine, as a school behind one NAT), three things at once,
until the lesson ends:

- **unnamed listeners**: ``PRANK_UNNAMED`` requests on ``/_attn/follow`` for the class, none naming a
  student (no cookie), each asked again a second after it is answered, ``REFUSED_AGAIN_S`` after
  a refusal;
- **guessed codes**: ``PRANK_GUESSES_PER_S`` requests a second, each naming a random class code;
- **wrong teacher keys**: one a second, typed into the class panel's *I am the teacher* box over
  Streamlit's websocket, a new session whenever the page says to wait;

and the teacher's own right key, typed every ``TEACHER_EVERY_S`` seconds in a new tab from the
same address (on the Exercises page, not the class link, which follows the class's sends), which
must sign in at its first try (``prank_teacher_signed_in``).

It runs as a process of its own (``python bench/classroom_prank.py --base URL --code CODE``, the
teacher's key on its standard input, never on a command line that ``ps`` shows), started by
``bench/classroom.py --prank`` and stopped with SIGINT, when it prints what each prank got as one
JSON line: a prankster is another machine, and the students' clients must not wait for its event
loop. Its raw HTTP client is ``classroom_tab.http_get``, which ``tests/test_school_limits.py`` sends too.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_tab import http_get, Tab  # noqa: E402,F401 - http_get: the tests send it from here
from server.class_store import CODE_ALPHABET  # noqa: E402

PRANK_UNNAMED = 1000     # unnamed follow requests kept open
PRANK_GUESSES_PER_S = 80.0  # random class codes asked a second
TEACHER_EVERY_S = 5.0    # the teacher's right key, tried this often
REFUSED_AGAIN_S = 10.0   # an unnamed listener refused asks again this much later
TEACHER_VIEW = "the answers, live"  # what only the class's teacher sees on Exercises
TEACHER_OPEN = "class_open"  # *Open a class*: the Class panel offers it to a signed-in teacher only


def random_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(6))


async def unnamed_listeners(base: str, code: str, n: int, stop: asyncio.Event, counts: dict) -> None:
    """``n`` follow requests for ``code`` naming no student, each asked again a second after its
    answer (REFUSED_AGAIN_S after a refusal)."""
    async def one() -> None:
        seen = 0
        while not stop.is_set():
            status, said = await http_get(base, f"/_attn/follow?class={code}&v={seen}", timeout=60.0)
            seen = said.get("version", seen)  # as the page's listener asks: past the version it was told
            counts[f"prank_unnamed_{status}"] = counts.get(f"prank_unnamed_{status}", 0) + 1
            await asyncio.sleep(1.0 if status == 200 else REFUSED_AGAIN_S)
    tasks = [asyncio.create_task(one()) for _ in range(n)]
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def guess_codes(base: str, per_s: float, stop: asyncio.Event, counts: dict) -> None:
    """Random class codes at ``per_s`` a second (each its own request, not waiting for the last)."""
    async def one() -> None:
        status, _ = await http_get(base, f"/_attn/follow?class={random_code()}&v=0", timeout=30.0)
        counts[f"prank_guess_{status}"] = counts.get(f"prank_guess_{status}", 0) + 1
    pending: set[asyncio.Task] = set()
    while not stop.is_set():
        task = asyncio.create_task(one())
        pending.add(task)
        task.add_done_callback(pending.discard)
        await asyncio.sleep(1.0 / per_s)
    await asyncio.gather(*pending, return_exceptions=True)


def told(page: str) -> str:
    """What a sign-in's page said of the key, or that the page failed."""
    for said in ("Too many wrong keys", "not the teacher key", "Cannot check the key"):
        if said in page:
            return said
    return page if page.startswith("page error") else "no teacher view"


async def sign_in(tab: Tab, code: str | None, key: str) -> str:
    """Type ``key`` into the class panel of the class link's Exercises page (opened once per tab,
    as the teacher's page already, ``sent=1``: a tab that opens a class link follows the class, and
    would otherwise be taken to the page the teacher sent last) and press *Sign in*; the page's
    text afterwards (or "page error: …" when a step failed)."""
    link = "ex=step&seed=0" + (f"&class={code}&sent=1" if code else "")  # no code: the page alone, no class joined
    opening = [("open", "exercises", link)] if tab.ws is None else []
    for action in (*opening, ("set", "class_panel", True), ("set", "class_key_box", key),
                   ("click", "class_sign_in", True)):
        _, _, error = await tab.do(action)
        if error:
            return f"page error: {error}"[:200]
    return tab.drawn.decode("utf-8", "replace")


async def wrong_keys(base: str, per_s: float, stop: asyncio.Event, counts: dict) -> None:
    """A wrong key every 1/``per_s`` seconds, typed on the Exercises page without the class's link
    (a script need not join the class to try keys: it would only fill a seat); a new session
    whenever the page says to wait."""
    tab = Tab(base, 120.0, load_page=True)
    try:
        while not stop.is_set():
            started = time.monotonic()
            said = await sign_in(tab, None, "wrong-" + secrets.token_urlsafe(9))
            counts["prank_keys"] = counts.get("prank_keys", 0) + 1
            if "not the teacher key" in said:
                counts["prank_keys_checked"] = counts.get("prank_keys_checked", 0) + 1
            if "Too many wrong keys" in said or said.startswith("page error"):
                await tab.close()
                tab = Tab(base, 120.0, load_page=True)  # a new session: what the script pays for its next key
            await asyncio.sleep(max(0.0, 1.0 / per_s - (time.monotonic() - started)))
    finally:
        await tab.close()


async def key_rate(base: str, tabs: int, seconds: float) -> dict:
    """How fast one address can have wrong keys checked: ``tabs`` scripts at once, each typing as
    fast as the server answers and opening a new session whenever told to wait."""
    stop, counts = asyncio.Event(), {}
    tasks = [asyncio.create_task(wrong_keys(base, 1000.0, stop, counts)) for _ in range(tabs)]
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(*tasks)
    return {**counts, "seconds": seconds, "tabs": tabs,
            "keys_checked_per_s": round(counts.get("prank_keys_checked", 0) / seconds, 1)}


async def teacher_signs_in(base: str, key: str, every: float, stop: asyncio.Event, counts: dict) -> None:
    """The teacher's right key in a new tab every ``every`` seconds: signed in at the first try, or not."""
    while not stop.is_set():
        started = time.monotonic()
        tab = Tab(base, 120.0, load_page=True)
        try:
            said = await sign_in(tab, None, key)  # not on the class link: a tab there follows the sends
        finally:
            await tab.close()
        signed_in = TEACHER_OPEN in tab.keys  # the panel offers the signed-in teacher *Open a class*
        counts["prank_teacher_tries"] = counts.get("prank_teacher_tries", 0) + 1
        counts["prank_teacher_signed_in"] = counts.get("prank_teacher_signed_in", 0) + signed_in
        if not signed_in:  # what the teacher read instead
            counts.setdefault("prank_teacher_refused", []).append(told(said))
        try:
            await asyncio.wait_for(stop.wait(), max(0.0, every - (time.monotonic() - started)))
        except TimeoutError:
            pass


async def prank(target, code: str, key: str, stop: asyncio.Event, unnamed: int = PRANK_UNNAMED,
                guesses_per_s: float = PRANK_GUESSES_PER_S) -> dict:
    """The three beside the class, and the teacher's key, until ``stop`` is set: what each got."""
    counts: dict = {}
    await asyncio.gather(unnamed_listeners(target.base, code, unnamed, stop, counts),
                         guess_codes(target.base, guesses_per_s, stop, counts),
                         wrong_keys(target.base, 1.0, stop, counts),
                         teacher_signs_in(target.base, key, TEACHER_EVERY_S, stop, counts))
    return dict(sorted(counts.items()))


async def prank_process(target, code: str, key: str, stop: asyncio.Event) -> dict:
    """This module as a process of its own beside the class until ``stop``: what each prank got."""
    proc = await asyncio.create_subprocess_exec(sys.executable, __file__, "--base", target.base, "--code", code,
                                                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    proc.stdin.write(key.encode() + b"\n")
    await proc.stdin.drain()
    proc.stdin.close()
    try:
        await stop.wait()
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = await proc.communicate()
    lines = out.decode().strip().splitlines()
    return json.loads(lines[-1]) if lines else {"prank_error": f"exit {proc.returncode}"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="one unfriendly student beside a class, until SIGINT")
    p.add_argument("--base", required=True, help="the server's address, e.g. http://127.0.0.1:8501")
    p.add_argument("--code", required=True, help="the class's code")
    p.add_argument("--unnamed", type=int, default=PRANK_UNNAMED)
    p.add_argument("--guesses-per-s", type=float, default=PRANK_GUESSES_PER_S)
    p.add_argument("--key-rate", type=int, default=0, metavar="TABS",
                   help="only this: TABS tabs typing wrong keys as fast as the server answers, a new session "
                        "whenever told to wait, for --seconds; prints the keys checked a second")
    p.add_argument("--seconds", type=float, default=30.0)
    args = p.parse_args(argv)
    if args.key_rate:
        print(json.dumps(asyncio.run(key_rate(args.base.rstrip("/"), args.key_rate, args.seconds))))
        return 0
    key = sys.stdin.readline().strip()  # the teacher's key, for the teacher's own tries

    async def run() -> dict:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
        target = argparse.Namespace(base=args.base.rstrip("/"))
        return await prank(target, args.code, key, stop, args.unnamed, args.guesses_per_s)
    print(json.dumps(asyncio.run(run())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
