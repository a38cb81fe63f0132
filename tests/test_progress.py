"""The console while claims run: count, running claims and why, times, a heartbeat in a log, a closing line."""

from __future__ import annotations

import io

from torchclaims.run.progress import HEARTBEAT_S, NAMED, Progress, summary


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def plain(clock: Clock) -> tuple[Progress, list[str]]:
    lines: list[str] = []
    return Progress(lines.append, terminal=io.StringIO(), clock=clock), lines  # a StringIO is no terminal


def test_a_log_gets_each_claim_with_why_it_runs_the_count_and_the_times():
    clock = Clock()
    progress, lines = plain(clock)
    progress.begin(4)
    progress.started("a-claim", "changed: gallery/a_claim.py")
    clock.now = 30.0
    progress.done("a-claim", "holds in 30.0s")
    assert lines[0] == "torchclaims: running a-claim (changed: gallery/a_claim.py) [0/4 done, 00:00]"
    assert lines[1] == "torchclaims: a-claim -> holds in 30.0s [1/4 done, 00:30, ~01:30 left]"


def test_a_log_hears_from_a_run_at_least_every_heartbeat_while_claims_run():
    clock = Clock()
    progress, lines = plain(clock)
    progress.begin(1)
    progress.started("slow-claim", "no earlier record")
    for second in range(1, 35):
        clock.now = float(second)
        progress.tick()
    beats = [line for line in lines if "still running slow-claim" in line]
    assert len(beats) == 3 and beats[0].endswith("[0/1 done, 00:10]")
    assert int(HEARTBEAT_S) == 10  # the CI log's promise: a line at least every 10 s
    progress.done("slow-claim", "holds")
    clock.now = 60.0
    progress.tick()
    assert not lines[-1].startswith("torchclaims: still"), "no heartbeat once nothing runs"


def test_a_terminal_gets_a_bar_with_the_running_claims_and_the_lines_above_it():
    screen, lines = Terminal(), []
    progress = Progress(lines.append, terminal=screen)
    progress.begin(2)
    progress.started("a-claim", "--force")
    progress.done("a-claim", "holds")
    progress.report({"a-claim": "--force"}, current=1)
    shown = screen.getvalue()
    assert "torchclaims: running a-claim (--force)" in shown and "1/2" in shown and "claims" in shown
    assert lines == ["torchclaims: re-ran 1 of 2 claims in 00:00: a-claim (--force); 1 current"]


def test_the_closing_line_names_what_re_ran_and_why_or_that_nothing_did():
    assert summary({}, 70, 1.0) == "nothing re-ran: 70 claims current"
    assert summary({"b": "changed: gallery/b.py", "a": "--force"}, 68, 65.0) == (
        "re-ran 2 of 70 claims in 01:05: a (--force), b (changed: gallery/b.py); 68 current"
    )
    many = {f"claim-{i:02}": "no earlier record" for i in range(NAMED + 3)}
    assert summary(many, 0, 1.0).endswith(f"claim-{NAMED - 1:02} (no earlier record) and 3 more; 0 current")


def test_a_terminal_bar_starts_no_thread_in_the_process_that_starts_claims():
    import threading

    before = threading.active_count()
    progress = Progress(lambda line: None, terminal=Terminal())
    progress.begin(3)
    assert threading.active_count() == before
    progress.end()


def test_what_a_script_wrote_never_drives_the_terminal_in_a_log_or_on_a_bar():
    hostile = "boom\x1b]52;c;ZXZpbA==\x07\x1b[2J"
    clock = Clock()
    progress, lines = plain(clock)
    progress.begin(1)
    progress.started("a-claim", hostile)
    progress.done("a-claim", f"error in 1.0s: {hostile}")
    progress.report({"a-claim": hostile}, current=0)
    screen = Terminal()
    on_a_bar = Progress(lambda line: None, terminal=screen)
    on_a_bar.begin(1)
    on_a_bar.started("a-claim", hostile)
    on_a_bar.end()
    for text in [*lines, screen.getvalue()]:
        assert "\x1b]" not in text and "\x07" not in text and "\x1b[2J" not in text, text
    assert "\\x1b]52" in lines[0]


def test_a_bar_draws_on_the_terminal_beneath_the_guarded_stream(monkeypatch):
    import sys

    from torchclaims.run.progress import console
    from torchclaims.text_safety import guarded

    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    with guarded():
        progress = console()
        progress.begin(2)
        progress.started("a-claim", "--force")
        progress.end()
    assert "\r" in screen.getvalue(), "tqdm's own carriage returns reach the terminal unescaped"
    assert "\\r" not in screen.getvalue()
