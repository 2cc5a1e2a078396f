"""What a CSV recording is, told from its header: the tests that pick its reader, kept apart from the
readers (which import the kernels) so that a read-ahead can ask them first (`dynlib.files.recordings.read_ahead`)."""

ROSTOPIC_FIRST = "%time"
"""The first column of a ``rostopic echo -p`` CSV (`dynlib.files.recordings.rostopic` reads it)."""


def is_rostopic(names) -> bool:
    """Whether a CSV with these column names is a ``rostopic echo -p`` file."""
    return bool(names) and names[0] == ROSTOPIC_FIRST
