"""The class's roster through a real server (one process, its class store on PostgreSQL): what a
script speaking Streamlit's websocket can and cannot do to a class (docs/campus.md, "A prankster
in the room"). Students are raw websocket tabs (bench/classroom_tab.py), each loading the page
first for its ``attn_student`` cookie, as a browser does; the teacher acts through the store with
the key, as the teacher's panel does.

The server believes X-Forwarded-For from 127.0.0.1 here (``ATTN_EXPLORER_PROXIES``), so that tabs
can stand behind different networks as they would behind HAProxy (tests/test_teacher_session.py
checks that HAProxy overwrites what a visitor writes there)."""
from __future__ import annotations

import asyncio
import re

import pytest

from helpers.lecture import load_bench

KEY = "roster-teachers-key-0123"
JOINS = 100  # joins per address and minute on this server (the default, 300, is a class behind a NAT)

bench = load_bench()


@pytest.fixture(scope="module")
def room(tiny_zoo, postgres_url):
    """A real server on the PostgreSQL store, and the store as the teacher's panel reaches it."""
    from server.class_store import ClassStore
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "OMP_NUM_THREADS": "1", "ATTN_EXPLORER_CLASS_DB": postgres_url,
           "ATTN_EXPLORER_TEACHER_KEY": KEY, "ATTN_EXPLORER_PROXIES": "127.0.0.1",
           "ATTN_EXPLORER_JOINS_PER_MINUTE": str(JOINS)}
    store = ClassStore(postgres_url, teacher_key=KEY)
    with bench.server(None, env=env) as target:
        yield target.base, store
    store.engine.dispose()


def tab(base: str, network: str = "10.0.0.1", cookie: bool = True):
    """A student's browser tab behind ``network``; ``cookie``: it loads the page first (a script
    need not, and then has a new id on every connection)."""
    t = bench.Tab(base, 120, load_page=cookie)
    t.headers = {"X-Forwarded-For": network}
    return t


def text(t) -> str:
    return t.drawn.decode("utf-8", "replace")


async def give_up(t, code: str, seed: int, kind: str = "step") -> str:
    """Open exercise ``kind:seed`` from the class link and press *Show me the solution* (a
    committed answer: "gave up"); what the page then says. The link says it is the teacher's
    page already (``sent=1``), so following the class does not take the tab to the last send."""
    for action in (("open", "exercises", f"ex={kind}&seed={seed}&class={code}&sent=1"),  # a fresh page, as a browser
                   ("click", f"ex_give_up_{kind}:{seed}", True)):
        _, _, error = await t.do(action)
        assert error is None, (action, error, text(t)[-600:])
    return text(t)


def counted(store, code: str) -> dict:
    """Exercise -> the sessions whose first answer the class counts."""
    out: dict = {}
    for a in store.summary(KEY, code):
        if a.attempt == 1:
            out.setdefault(a.exercise, set()).add(a.session)
    return out


def test_the_fill_attack_leaves_the_class_open_and_an_honest_answer_counted(room):
    """Two ids answer 100 different exercises each: only the exercises the class counts (the
    practice catalogue, and the 50 the teacher sent) are stored, each id stops at its own cap,
    and an honest student's answer after them is counted."""
    from server.class_store import MAX_STUDENT_EXERCISES, PRACTICE_SEEDS
    base, store = room
    code = store.open_class(KEY).code
    sent = range(40, 90)
    for seed in sent:
        store.send(KEY, code, "exercises", {"ex": "step", "seed": seed})

    async def attack(t) -> list[str]:
        said = [await give_up(t, code, seed) for seed in range(100)]
        await t.close()
        return said

    async def both():
        return await asyncio.gather(attack(tab(base, "10.6.6.6")), attack(tab(base, "10.6.6.6")))
    for said in asyncio.run(both()):
        assert sum("Counted in class" in s for s in said) == MAX_STUDENT_EXERCISES
        assert sum("the most one student may" in s for s in said) == PRACTICE_SEEDS + len(sent) - MAX_STUDENT_EXERCISES
        assert sum("practice outside class" in s for s in said) == 100 - PRACTICE_SEEDS - len(sent)
        assert not any("is full" in s for s in said)
    assert len(store.summary(KEY, code)) == 2 * MAX_STUDENT_EXERCISES

    async def honest():
        t = tab(base, "10.0.0.7")
        said = [await give_up(t, code, 41), await give_up(t, code, 3, "which")]
        await t.close()
        return said
    for said in asyncio.run(honest()):
        assert re.search(r"Counted in class \*\*" + code, said), said[-600:]
    stored = counted(store, code)
    assert len(stored["step:41"]) == 3 and len(stored["which:3"]) == 1
    assert store.class_counts(KEY, code).joined == 3


def test_scripted_joins_from_one_address_stop_at_the_limit_while_a_class_joins(room):
    """200 new ids from one address within a minute: the first JOINS are on the roster, the rest
    told to wait; meanwhile 40 students behind another address (one NAT) all join."""
    base, store = room
    code = store.open_class(KEY).code

    async def one(network: str, cookie: bool) -> str:
        t = tab(base, network, cookie)
        _, _, error = await t.do(("open", "exercises", f"ex=step&seed=0&class={code}"))
        await t.close()
        assert error is None, error
        return text(t)

    async def everyone():
        # 240 connections, twelve at a time: every sixth a student behind the NAT, the rest the script
        who = [("10.1.1.1", True) if i % 6 == 0 else ("10.6.6.6", False) for i in range(240)]
        pages = []
        for k in range(0, 240, 12):
            pages += await asyncio.gather(*(one(network, cookie) for network, cookie in who[k:k + 12]))
        return pages
    pages = asyncio.run(everyone())
    refused = [p for p in pages if "joined class" in p and "within the last minute" in p]
    joined = store.class_counts(KEY, code).joined
    assert len(refused) == 200 - JOINS and joined == JOINS + 40, (len(refused), joined)
    assert all("Following class" in p or "You are" in p or "within the last minute" in p for p in pages)


def test_a_locked_class_refuses_a_new_id_and_a_removed_student_leaves_the_summary(room):
    base, store = room
    code = store.open_class(KEY).code

    async def lesson():
        first, second, late = tab(base), tab(base), tab(base)
        await give_up(first, code, 1)
        await give_up(second, code, 1)
        names = [m.nickname for m in store.roster_of(KEY, code)]
        assert len(set(names)) == 2
        for t in (first, second):  # each sees the nickname the teacher's list shows (under the Class panel)
            assert sum(f"as **{n}**" in text(t) for n in names) == 1, text(t)[-600:]
        store.lock(KEY, code)
        _, _, error = await late.do(("open", "exercises", f"ex=step&seed=1&class={code}"))
        assert error is None and "is locked" in text(late)
        assert "Counted in class" in await give_up(second, code, 2)  # in the class before the lock: goes on
        gone = store.roster_of(KEY, code)[0].nickname  # the first to join
        assert store.remove(KEY, code, gone)
        said = await give_up(first, code, 4)
        assert "removed you" in said and "Counted" not in said
        again = tab(base)
        again.student = first.student  # the removed id, in a new tab
        _, _, error = await again.do(("open", "exercises", f"ex=step&seed=5&class={code}"))
        assert error is None and "removed you" in text(again)
        for t in (first, second, late, again):
            await t.close()
    asyncio.run(lesson())
    stored = store.summary(KEY, code)
    assert {a.exercise for a in stored} == {"step:1", "step:2"} and len({a.session for a in stored}) == 1
    counts = store.class_counts(KEY, code)
    assert (counts.joined, counts.answered, counts.counted, counts.locked) == (1, 1, 2, True)


def test_a_replayed_student_cookie_counts_once(room):
    """Three tabs with one student's cookie answer the same exercise: one student, one counted
    answer, two retries."""
    base, store = room
    code = store.open_class(KEY).code

    async def replay():
        first = tab(base)
        said = [await give_up(first, code, 7)]
        for _ in range(2):
            copy = tab(base, cookie=False)
            copy.student = first.student
            said.append(await give_up(copy, code, 7))
            await copy.close()
        await first.close()
        return said
    said = asyncio.run(replay())
    assert "Counted in class" in said[0] and all("Kept as a retry" in s for s in said[1:])
    stored = store.summary(KEY, code)
    assert [a.attempt for a in stored] == [1, 2, 3] and len({a.session for a in stored}) == 1
    assert store.class_counts(KEY, code).counted == 1


def test_a_forged_choice_with_markup_stores_nothing(room):
    """A raw client sets the mechanism radio to markup of its own and checks: the page keeps to its
    options, and the class stores no answer carrying the markup."""
    base, store = room
    code = store.open_class(KEY).code

    async def forge():
        t = tab(base)
        await t.do(("open", "exercises", f"ex=which&seed=0&class={code}"))
        for action in (("set", "ex_which_0", "<img src=x onerror=alert(1)>"), ("click", "ex_check_which:0", True)):
            _, _, error = await t.do(action)
            assert error is None, error
        await t.close()
    asyncio.run(forge())
    assert not any("<img" in str(a.answer) for a in store.summary(KEY, code))


def test_picking_a_mechanism_redraws_the_options_alone_and_check_counts_the_pick(room):
    """The mechanism radio is a fragment: picking an option reruns the options only (no heatmap, no
    listener drawn again), and *Check*, a run of the whole page, reads the pick, judges it and
    counts it in the class."""
    base, store = room
    code = store.open_class(KEY).code

    async def pick():
        t = tab(base, network="10.0.0.9")
        _, _, error = await t.do(("open", "exercises", f"ex=which&seed=1&class={code}&sent=1"))
        assert error is None and "plotly" in text(t).lower() and t.listen
        listen = t.listen
        assert t.fragment_of.get(t.keys["ex_which_1"])  # the front end reruns its fragment alone
        _, _, error = await t.do(("set", "ex_which_1", "Luong global (dot, general or concat)"))
        assert error is None
        options = text(t)
        assert "Luong global" in options and "plotly" not in options.lower() and "Check my answer" not in options
        assert t.listen == listen  # the listener outside the fragment stands as it was
        _, _, error = await t.do(("click", "ex_check_which:1", True))
        assert error is None
        said = text(t)
        await t.close()
        return said
    said = asyncio.run(pick())
    assert "Counted in class" in said and ("Right: " in said or "No: " in said)
    stored = store.summary(KEY, code)
    assert [(a.exercise, a.attempt) for a in stored] == [("which:1", 1)]
    assert "Luong global" in str(stored[0].answer)


@pytest.mark.parametrize("page, query, says", [
    ("worked-example", "seed=999999", "not a whole number from 0 to 10,000"),
    ("worked-example", "seed=-5", "not a whole number from 0 to 10,000"),
    ("compare", "models=" + ",".join(["rnnsearch", "luong-dot"] * 250), "repeated"),
    ("compare", "models=" + ",".join(f"m{k}" for k in range(500)), "500 unknown left out"),
    ("exercises", "ex=step&seed=" + "9" * 5000, "not a whole number from 0 to 9,999"),
    ("lesson", "stop=999999&step=abc", "not a whole number from 1"),
    ("exercises", "class=%3Cscript%3E&ex=step", "Exercises"),
], ids=lambda v: str(v)[:24])
def test_odd_link_parameters_give_a_message(room, page, query, says):
    base, _ = room

    async def visit():
        t = tab(base)
        _, _, error = await t.do(("open", page, query))
        await t.close()
        return error, text(t)
    error, shown = asyncio.run(visit())
    assert error is None and says in shown, shown[-800:]


def test_a_huge_sentence_is_cut_to_the_boxs_length_or_its_connection_closed(room):
    """A raw client opens Translate with 8 MB of text in its link, then types 2 MB into the box:
    the page answers both and keeps (in its link) at most the box's 1,000 characters. A 24 MB
    message is past what the server reads (uvicorn's websocket, 16 MiB): that connection is
    closed, and the next tab is served."""
    from urllib.parse import parse_qs, quote
    from ui.widgets import MAX_INPUT_CHARS
    base, _ = room

    async def flood():
        t = tab(base)
        _, _, opened = await t.do(("open", "", "text=" + quote("word " * (8 * 1024 * 1024 // 5))))
        said = text(t)
        kept = [parse_qs(t.query).get("text", [""])[0]]
        _, _, typed = await t.do(("set", "translate_text", "word " * (2 * 1024 * 1024 // 5)))
        kept.append(parse_qs(t.query).get("text", [""])[0])
        _, _, huge = await t.do(("set", "translate_text", "word " * (24 * 1024 * 1024 // 5)))
        await t.close()
        after = tab(base)
        _, _, next_tab = await after.do(("open", "", "text=Where%20is%20it%3F"))
        await after.close()
        return opened, typed, huge, next_tab, said, kept
    opened, typed, huge, next_tab, said, kept = asyncio.run(flood())
    assert opened is None and typed is None
    assert all(0 < len(k) <= MAX_INPUT_CHARS == 1000 for k in kept)
    assert huge.startswith("disconnect") and next_tab is None
