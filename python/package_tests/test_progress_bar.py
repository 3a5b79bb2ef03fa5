"""Progress bars (tqdm) are drawn on a terminal only, unless asked for: ``progress=None`` (the default
of replay and sync) draws one only when stderr is a terminal, ``True`` always, ``False`` never; a
callable gets the progress dicts either way."""
import io
import sys

import pytest

from conftest import _need


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def tqdm():
    return _need("tqdm", "pip install tqdm (scripts/pydeps.sh installs it)")


def bar_on(ibdkit, monkeypatch, stream, progress):
    monkeypatch.setattr(sys, "stderr", stream)
    bar = ibdkit._Bar(progress, "replay")
    bar({"height": 3, "tip_height": 10})
    bar.close()
    return bar


def test_no_bar_when_stderr_is_not_a_terminal(ibdkit, tqdm, monkeypatch):
    stream = io.StringIO()
    bar = bar_on(ibdkit, monkeypatch, stream, None)
    assert bar.bar is None and not bar.active
    assert stream.getvalue() == ""


def test_a_bar_on_a_terminal_or_when_asked(ibdkit, tqdm, monkeypatch):
    assert bar_on(ibdkit, monkeypatch, Terminal(), None).bar is not None
    stream = io.StringIO()
    assert bar_on(ibdkit, monkeypatch, stream, True).bar is not None
    assert "replay" in stream.getvalue()
    assert bar_on(ibdkit, monkeypatch, Terminal(), False).bar is None


def test_a_callable_gets_progress_without_a_bar(ibdkit, monkeypatch):
    seen = []
    bar = bar_on(ibdkit, monkeypatch, io.StringIO(), seen.append)
    assert bar.bar is None and bar.active and seen == [{"height": 3, "tip_height": 10}]


def test_replay_on_a_non_terminal_draws_nothing(ibdkit, chain, monkeypatch, capfd):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    ibdkit.replay(chain, statistics=False)
    assert sys.stderr.getvalue() == ""
    assert capfd.readouterr().err == ""
