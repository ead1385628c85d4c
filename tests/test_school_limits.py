"""No student can lock out the school (server/follow.py, server/sign_in.py; docs/campus.md), through
a real server: every request here comes from this machine, one address, as a school behind its
NAT with one unfriendly student among its 400. Unnamed follow requests take no student's place,
guessed class codes refuse no student's follow, and wrong keys refuse no teacher's right key."""
from __future__ import annotations

import asyncio
import json
import time
import urllib.request

import pytest

from helpers.lecture import load_bench

bench = load_bench()
from classroom_prank import http_get, random_code, sign_in, TEACHER_VIEW  # noqa: E402 - beside bench/classroom.py

pytestmark = pytest.mark.server
STUDENTS = 30
FOLLOW_BUDGET_S = 10.0  # a send reaches a follower within this (the class bench's follow budget), on a busy host too
PAGE_BUDGET_S = 120.0   # a page, or a held request's answer, on a busy 2-core host


@pytest.fixture(scope="module")
def school(tiny_zoo, tmp_path_factory):
    """One process on the tiny zoo and a SQLite store of its own (a generated key), default seats."""
    from server.class_store import ClassStore
    folder = tmp_path_factory.mktemp("school")
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "OMP_NUM_THREADS": "1", "ATTN_EXPLORER_CLASS_DB": "",
           "ATTN_EXPLORER_CLASS_DIR": str(folder), "ATTN_EXPLORER_TEACHER_KEY": "", "ATTN_EXPLORER_PROXIES": "",
           "ATTN_EXPLORER_CLASS_SEATS": "", "ATTN_EXPLORER_JOINS_PER_MINUTE": ""}
    store = ClassStore(f"sqlite:///{folder / 'classes.sqlite3'}")
    with bench.server(None, env=env) as target:
        yield target.base, store, store.teacher_key()
    store.engine.dispose()


def listeners(base: str) -> int:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(base + "/_attn/load", timeout=30) as response:
        return json.loads(response.read())["follow_listeners"]


async def until(condition, budget: float, what: str):
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        if await asyncio.to_thread(condition):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {budget:.0f} s: {what}")


def students(store, code: str, n: int) -> list[str]:
    """``n`` students on the class's roster, joined from this address as their pages join them: their cookies."""
    from server import identity
    secret, cookies = store.cookie_secret(), []
    for _ in range(n):
        value = identity.new_student_cookie(secret)
        store.join(code, identity.student_id(secret, value), "127.0.0.1")
        cookies.append(f"{identity.STUDENT_COOKIE}={value}")
    return cookies


async def followed_send(base: str, store, key: str, code: str, cookies: list[str], page_params: dict) -> list:
    """Each student's follow request held, then the teacher's send: (status, answer, seconds after the send)."""
    async def follow(cookie: str):
        status, said = await http_get(base, f"/_attn/follow?class={code}&v={version}", cookie, PAGE_BUDGET_S)
        return status, said, time.monotonic() - sent_at[0]
    version = store.follow(code).version
    sent_at = [float("inf")]
    held_before = await asyncio.to_thread(listeners, base)
    waiting = [asyncio.create_task(follow(c)) for c in cookies]
    await until(lambda: listeners(base) >= held_before + len(cookies), PAGE_BUDGET_S, "every student's request held")
    sent_at[0] = time.monotonic()
    await asyncio.to_thread(store.send, key, code, "step-through", page_params)
    return await asyncio.gather(*waiting)


def test_a_thousand_unnamed_requests_take_no_students_place(school):
    """1,000 follow requests naming no student, held from the school's address: they share the
    class's few unnamed places (the rest refused), and 30 students from that address then follow
    and each learns of the send."""
    from server.follow import UNNAMED_PER_CLASS
    base, store, key = school
    code = store.open_class(key).code
    cookies = students(store, code, STUDENTS)

    async def scenario():
        unnamed = [asyncio.create_task(http_get(base, f"/_attn/follow?class={code}&v=0", timeout=PAGE_BUDGET_S))
                   for _ in range(1000)]
        await until(lambda: sum(t.done() for t in unnamed) >= 1000 - UNNAMED_PER_CLASS, PAGE_BUDGET_S,
                    "the unnamed requests past the class's unnamed places answered")
        refused = [t.result()[0] for t in unnamed if t.done()]
        await until(lambda: listeners(base) == UNNAMED_PER_CLASS, PAGE_BUDGET_S, "the unnamed places held")
        held = sum(not t.done() for t in unnamed)
        answers = await followed_send(base, store, key, code, cookies, {"text": "I will eat.", "step": "2"})
        for t in unnamed:
            t.cancel()
        await asyncio.gather(*unnamed, return_exceptions=True)
        return refused, held, answers
    refused, held, answers = asyncio.run(scenario())
    assert set(refused) == {429} and held == UNNAMED_PER_CLASS
    assert [status for status, _, _ in answers] == [200] * STUDENTS
    assert all("step=2" in said["link"] for _, said, _ in answers)
    assert max(s for _, _, s in answers) <= FOLLOW_BUDGET_S


def test_guessing_codes_from_the_schools_address_refuses_no_students_follow(school):
    """A script asks 5,000 random codes from the address while 30 students there follow a real
    class: its guesses are refused once its share is spent (the store not asked), and every
    student learns of the send within the follow budget."""
    from server.follow import UNKNOWN_CODES
    base, store, key = school
    code = store.open_class(key).code
    cookies = students(store, code, STUDENTS)

    async def scenario():
        answered: list[int] = []
        guessing = asyncio.Semaphore(32)

        async def guess():
            async with guessing:
                answered.append((await http_get(base, f"/_attn/follow?class={random_code()}&v=0", timeout=60))[0])
        guesses = [asyncio.create_task(guess()) for _ in range(5000)]
        await until(lambda: len(answered) >= 2 * UNKNOWN_CODES and answered[-1] == 429, PAGE_BUDGET_S,
                    "the guesser's share spent")
        answers = await followed_send(base, store, key, code, cookies, {"text": "I will eat.", "step": "3"})
        during = len(answered) < 5000  # the students followed while the guesses went on
        await asyncio.gather(*guesses)
        return answered, answers, during
    answered, answers, during = asyncio.run(scenario())
    assert during and len(answered) == 5000
    assert set(answered) <= {404, 429} and answered.count(404) <= 2 * UNKNOWN_CODES  # a burst, then a few a minute
    assert [status for status, _, _ in answers] == [200] * STUDENTS
    assert all("step=3" in said["link"] for _, said, _ in answers)
    assert max(s for _, _, s in answers) <= FOLLOW_BUDGET_S


def test_a_wrong_key_a_second_never_refuses_the_teachers_right_key(school):
    """A script types a wrong key a second from the school's address (a new session whenever it is
    told to wait) until the address is busy, and for a minute more while the teacher types the
    right key every 5 s in a new tab from that address: every one of the teacher's tries signs in
    at its first try."""
    base, store, key = school
    code = store.open_class(key).code

    async def scenario():
        stop, counts = asyncio.Event(), {}
        script = asyncio.create_task(bench_wrong_keys(base, stop, counts))
        from server.sign_in import SignInAttempts
        busy = SignInAttempts().per_address  # the address is busy with wrong keys before the teacher comes
        await until(lambda: counts.get("prank_keys_checked", 0) >= busy, PAGE_BUDGET_S, "the address busy")
        tries = []
        started = time.monotonic()
        while time.monotonic() - started < 60:
            began = time.monotonic()
            tab = bench.Tab(base, PAGE_BUDGET_S, load_page=True)
            try:
                tries.append(TEACHER_VIEW in await sign_in(tab, code, key))
            finally:
                await tab.close()
            await asyncio.sleep(max(0.0, 5.0 - (time.monotonic() - began)))
        stop.set()
        await script
        return tries, counts
    tries, counts = asyncio.run(scenario())
    assert len(tries) >= 6 and all(tries), tries
    assert counts["prank_keys"] > counts["prank_keys_checked"]  # the busy address's tabs were told to wait


async def bench_wrong_keys(base: str, stop: asyncio.Event, counts: dict) -> None:
    from classroom_prank import wrong_keys
    await wrong_keys(base, 1.0, stop, counts)
