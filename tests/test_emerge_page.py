"""Watch attention emerge (app_pages/emerge.py), through AppTest: live training keeps its frames
and waits its turn in the server's training queue (server/limits.py's TrainingQueue, first come,
first served)."""
from __future__ import annotations

import numpy as np

from helpers.apptest import chart, open_page


def test_emerge_trains_live_and_keeps_its_frames():
    at = open_page("emerge")
    assert at.info  # nothing trained yet
    at.select_slider(key="emerge_steps").set_value(20)
    at.button(key="emerge_train").click().run()
    assert not at.exception
    result = at.session_state["emerge_result"]
    for frames in result["runs"].values():
        assert [f[0] for f in frames][:2] == [1, 2] and frames[-1][0] == 20
        assert frames[0][2].shape == (len(result["target"]), len(result["source"]))
        assert np.allclose(frames[-1][2].sum(1), 1, atol=1e-5)
    animation = chart(at, "emerge_animation")
    assert len(animation["frames"]) == 20 and len(animation["data"]) == 2  # Bahdanau | Luong
    at.run()  # a rerun keeps the frames
    assert len(chart(at, "emerge_animation")["frames"]) == 20


def test_emerge_waits_its_turn_in_the_servers_queue():
    """One live training at a time, server-wide: a second visitor waits with its place shown,
    starts once the first finishes, and gives its place back when done."""
    import threading
    from server.training_queue import training_queue
    at = open_page("emerge")
    at.select_slider(key="emerge_steps").set_value(20)
    other = training_queue().join()  # another visitor's training is running
    threading.Timer(3.0, training_queue().leave, args=(other,)).start()
    at.button(key="emerge_train").click().run()
    assert not at.exception
    assert at.button(key="emerge_cancel")  # the waiting visitor could cancel
    assert len(at.session_state["emerge_result"]["runs"]) == 2  # and trained once its turn came
    assert len(training_queue()) == 0


def test_training_queue_is_first_come_first_served():
    from server.training_queue import TrainingQueue
    queue = TrainingQueue()
    a, b, c = queue.join(), queue.join(), queue.join()
    assert [queue.place(t, 1) for t in (a, b, c)] == [0, 1, 2]
    assert [queue.place(t, 2) for t in (a, b, c)] == [0, 0, 1]
    queue.leave(b)  # a visitor cancels: the one behind moves up
    assert queue.place(c, 1) == 1 and len(queue) == 2
    queue.leave(a)
    assert queue.wait(c, 1, timeout=0.01) == 0
    queue.leave(c)
    queue.leave(c)  # leaving twice (finished, then the page stopped) is harmless
    assert len(queue) == 0
