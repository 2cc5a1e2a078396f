"""cli/common.py: the helpers every command shares (the notices and the progress line)."""
import io
import sys
import time

import click
import pytest

from cli.common import StatusLine, derivatives_notice, progress_counter


def said(capsys, requested, used, quiet=False):
    with click.Context(click.Command("probe"), obj={"quiet": quiet}) as ctx:
        derivatives_notice(ctx, requested, used)
    return capsys.readouterr().err


@pytest.mark.parametrize("used", ["central", ["given", "central"], ("central", "central")])
def test_the_derivatives_notice_says_what_auto_estimated(capsys, used):
    """One notice for inverse, contact-id (one method) and identify (one per recording)."""
    assert said(capsys, "auto", used) == ("dyn: no qdd.* columns: velocities and accelerations by central differences "
                                          "of q (for a noisy recording use --derivatives savgol)\n")


@pytest.mark.parametrize("requested, used, quiet", [("auto", "given", False), ("auto", ["given", "given"], False),
                                                    ("central", "central", False), ("savgol", ["savgol"], False),
                                                    ("auto", "central", True)])
def test_no_derivatives_notice_when_asked_for_or_given_or_quiet(capsys, requested, used, quiet):
    assert said(capsys, requested, used, quiet) == ""


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_status_line_redraws_in_place_at_its_rate_and_finishes_or_clears(monkeypatch):
    """The one progress display (compile, simulate, contact-id, sweep): ``\\rdyn: <text>\\x1b[K`` redrawn,
    at most once every `every` seconds but for the final draw, nothing before `delay`."""
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    clock = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    line = StatusLine(True, every=0.1)
    for t, text in ((0.0, "a"), (0.05, "b"), (0.2, "c")):
        clock[0] = t
        line.draw(text)
    line.draw("d", final=True)
    line.clear()
    assert err.getvalue() == "\rdyn: a\x1b[K\rdyn: c\x1b[K\rdyn: d\x1b[K\r\x1b[K"
    late = StatusLine(True, delay=1.0)
    late.draw("early")
    clock[0] = 1.5
    late.draw("late")
    late.close()
    late.close()  # once
    assert err.getvalue().endswith("\rdyn: d\x1b[K\r\x1b[K\rdyn: late\x1b[K\n")
    StatusLine(False).draw("x", end=True)  # off a terminal: nothing
    assert err.getvalue().endswith("late\x1b[K\n")


@pytest.mark.parametrize("terminal, no_progress, quiet", [(True, False, False), (False, False, False),
                                                          (True, True, False), (True, False, True)])
def test_a_progress_counter_counts_on_a_terminal_only_and_finishes_its_line(monkeypatch, terminal, no_progress,
                                                                             quiet):
    err = Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with click.Context(click.Command("probe"), obj={"quiet": quiet}) as ctx:
        with pytest.raises(RuntimeError):
            with progress_counter(ctx, no_progress, "simulating", "steps") as progress:
                if progress is not None:
                    progress(1, 4)
                raise RuntimeError("a failure mid-way")  # the line is finished before its message
    shown = terminal and not no_progress and not quiet
    assert (progress is not None) == shown
    assert err.getvalue() == ("\rdyn: simulating: 1/4 steps (25 %)\x1b[K\n" if shown else "")


def test_several_inputs_show_their_progress_on_a_terminal_and_name_each_ones_notices(monkeypatch, tmp_path):
    """`for_each_input` (inverse, contact-id, energy-check with several inputs): ``[k/n] INPUT -> OUTPUT`` before
    each on a terminal (nothing off one), and the input's notices name it."""
    from cli.common import Output, for_each_input, notice

    for terminal in (True, False):
        err = Terminal() if terminal else io.StringIO()
        monkeypatch.setattr(sys, "stderr", err)
        with click.Context(click.Command("probe"), obj={}) as ctx:
            for_each_input(ctx, ["a.urdf", "b.urdf"], [Output(f"{tmp_path}/out/", "report", "--report", ".json",
                                                              needed=False), Output(None, "figure", "--plot", needed=False)],
                           lambda source, paths: notice(ctx, f"checked into {paths}"), suffixes=(".urdf",))
        progress = [f"dyn: [1/2] a.urdf -> {tmp_path}/out/a.json\n", f"dyn: [2/2] b.urdf -> {tmp_path}/out/b.json\n"]
        assert err.getvalue() == "".join(
            (progress[k] if terminal else "") + f"dyn: {s}: checked into ['{tmp_path}/out/{s[0]}.json', None]\n"
            for k, s in enumerate(["a.urdf", "b.urdf"]))
