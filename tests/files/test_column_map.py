"""dynlib.files.column_map: which column of a recorded file holds which coordinate (``--columns``)."""
import pytest

from dynlib.errors import InputError
from dynlib.files import column_map as M
from helpers import sample

FF = sample("quadruped", True)
ARM = sample("arm6")


def test_column_templates():
    assert M.parse_column_map("q=pos_{joint}, qd=vel_{joint},q.elbow=E") == {
        "q": "pos_{joint}", "qd": "vel_{joint}", "q.elbow": "E"}
    cols = M.source_columns(ARM, "q", {"q": "p{index}", "q.elbow": "E"})
    assert cols == ["p0", "p1", "E", "p3", "p4", "p5"]
    assert M.source_columns(FF, "qd", None)[:2] == ["qd.root.vx", "qd.root.vy"]
    with pytest.raises(InputError, match="did you mean 'elbow'"):
        M.source_columns(ARM, "q", {"q.elbw": "E"})
    with pytest.raises(InputError, match="expected q, qd, qdd or effort"):
        M.source_columns(ARM, "q", {"pos": "x"})
    with pytest.raises(InputError, match="found neither"):
        M.source_columns(ARM, "q", {"q": "pos"})
    with pytest.raises(InputError, match="found name"):
        M.source_columns(ARM, "q", {"q": "pos_{name}"})
    with pytest.raises(InputError, match="KEY=COLUMN"):
        M.parse_column_map("q:pos_{joint}")
