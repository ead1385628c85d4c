"""What the server shares out (server/limits.py)."""
from __future__ import annotations


def test_training_queue_is_first_come_first_served():
    from server.limits import TrainingQueue
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
