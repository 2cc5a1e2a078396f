"""Faults in the files dyn reads (#33 items 8 and 5): damaged bags (a bad bz2 or lz4 chunk, a bad
index, flipped MCAP bytes), a ROS 2 ``metadata.yaml`` whose message count is huge, a clock jump in
the stamps. Each is one ``dyn: error:`` line and exit 2, never an internal error (exit 3).
docs/faults.md is the table of these cases. The bags are written by `rosbags`' own writers
(tests/recording_files.py), then damaged byte by byte."""
import contextlib
import random
import resource
import shutil
import struct
import tracemalloc

import numpy as np
import pytest

from dynlib.errors import DynError
from dynlib.files.recordings import read_recording
from helpers import ROBOTS_DIR, invoke, sample
from recording_files import EPOCH_NS, messages, swing, write_bag, write_rostopic_csv

ARM6 = ROBOTS_DIR / "arm6.urdf"
ARM = sample("arm6")
N = 400


def one_line_error(result):
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("dyn: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def joint_states(n=N, stamps=None):
    t_ns = EPOCH_NS + np.arange(n, dtype=np.int64) * 1_000_000 if stamps is None else stamps
    Q, V, _ = swing(ARM.nq, np.arange(n) * 1e-3)
    return messages(ARM.q_names, t_ns, Q, V, np.ones_like(Q))


def ros1_bag(path, compression=None, msgs=None):
    """A ROS 1 bag of JointStates; `compression` 'BZ2' or 'LZ4' (chunks of 16 kB: several of them)."""
    from rosbags.rosbag1 import Writer

    from recording_files import _joint_state, _typestore

    if compression is None:
        return write_bag(path, {"/joint_states": msgs or joint_states()}, "bag")
    ts = _typestore(True)
    w = Writer(path)
    w.set_compression(Writer.CompressionFormat[compression])
    w.chunk_threshold = 16 * 1024
    with w:
        c = w.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ts)
        for k, m in enumerate(msgs or joint_states()):
            w.write(c, m.logtime, ts.serialize_ros1(_joint_state(ts, m, k, True), "sensor_msgs/msg/JointState"))
    return path


def damage(data, how):
    """The bytes of a bag, damaged as a bad disk, a cut copy or a bad tool damages them."""
    d = bytearray(data)
    if how in ("bz2", "lz4"):  # bytes in the first compressed chunk's stream
        at = d.index(b"BZh" if how == "bz2" else b"\x04\x22\x4d\x18")
        d[at + 12:at + 28] = b"\xa5" * 16
    elif how == "index":  # an index record (op 0x04) whose count does not match its entries
        c = d.index(b"count=", d.index(b"op=\x04") - 64)
        d[c + 6:c + 10] = struct.pack("<I", struct.unpack_from("<I", d, c + 6)[0] + 1)
    elif how == "mcap-length":  # the top byte of the first message record's length, in the first chunk
        pos = 8
        while d[pos] != 0x06:  # records: opcode, u64 length, body
            pos += 9 + struct.unpack_from("<Q", d, pos + 1)[0]
        body = pos + 9 + 28  # a chunk: start and end time, uncompressed size (u64), CRC (u32), compression
        body += 4 + struct.unpack_from("<I", d, body)[0] + 8  # the compression's name, the records' length
        while d[body] != 0x05:
            body += 9 + struct.unpack_from("<Q", d, body + 1)[0]
        d[body + 8] = 0xff
    return bytes(d)


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bags")
    made = {"plain": ros1_bag(folder / "plain.bag"), "bz2": ros1_bag(folder / "bz2.bag", "BZ2"),
            "lz4": ros1_bag(folder / "lz4.bag", "LZ4")}
    for kind in ("mcap", "db3"):
        made[kind] = write_bag(folder / kind, {"/joint_states": joint_states()}, kind)
    return made


def damaged_copy(bags, tmp_path, kind, how):
    src = bags[kind]
    if src.is_dir():
        dst = tmp_path / src.name
        shutil.copytree(src, dst)
        f = next(p for p in dst.iterdir() if p.name != "metadata.yaml")
    else:
        dst = f = tmp_path / src.name
        shutil.copy(src, dst)
    f.write_bytes(damage(f.read_bytes(), how))
    return dst


# ------------------------------------------------------------------ damaged bags

@pytest.mark.parametrize("kind, how, says", [
    ("bz2", "bz2", "OSError: Invalid data stream"),
    ("lz4", "lz4", "RuntimeError: LZ4F_"),
    ("plain", "index", "AssertionError"),
    ("lz4", "index", "AssertionError"),
    ("mcap", "mcap-length", "OverflowError"),
])
def test_a_damaged_bag_is_one_line_naming_the_file_and_the_repair(bags, tmp_path, kind, how, says):
    bag = damaged_copy(bags, tmp_path, kind, how)
    out = tmp_path / "out.csv"
    line = one_line_error(invoke("inverse", ARM6, bag, "-o", out))
    assert f"{bag}: cannot be read as a ROS bag: the file is damaged" in line and says in line, line
    assert ("`mcap recover`" if kind == "mcap" else "`rosbag reindex`") in line, line
    assert not out.exists()


@pytest.mark.parametrize("kind", ["plain", "bz2", "lz4", "mcap", "db3"])
def test_bytes_flipped_anywhere_in_a_bag_are_never_an_internal_error(bags, tmp_path, kind):
    """60 random damages per kind (1 to 16 bytes set to random values): the recording is read (a value
    changed) or refused with a DynError; no other exception leaves the reader."""
    src = bags[kind]
    rng = random.Random(kind)
    others = []
    for i in range(60):
        dst = tmp_path / str(i)
        dst.mkdir()
        if src.is_dir():
            bag = dst / src.name
            shutil.copytree(src, bag)
            f = next(p for p in bag.iterdir() if p.name != "metadata.yaml")
        else:
            bag = f = dst / src.name
            shutil.copy(src, f)
        d = bytearray(f.read_bytes())
        for _ in range(rng.choice([1, 4, 16])):
            d[rng.randrange(len(d))] = rng.randrange(256)
        f.write_bytes(bytes(d))
        try:
            read_recording(ARM, bag)
        except DynError:
            pass
        except Exception as exc:  # noqa: BLE001 - the point: none may come out
            others.append(f"damage {i}: {type(exc).__name__}: {exc}")
        shutil.rmtree(dst)
    assert not others, others[:5]


def test_a_huge_message_count_in_metadata_yaml_allocates_nothing_from_it(bags, tmp_path):
    """A ROS 2 folder whose metadata.yaml says 10**12 messages (138 TiB of rows were asked: an
    internal error) or 2 * 10**7 (3.2 GB allocated for 400 messages): read in the memory of its
    400 messages."""
    for count, name in ((10**12, "tera"), (2 * 10**7, "twenty-million")):
        bag = tmp_path / name
        shutil.copytree(bags["db3"], bag)
        meta = bag / "metadata.yaml"
        meta.write_text(meta.read_text().replace(f"message_count: {N}", f"message_count: {count}"))
        tracemalloc.start()  # numpy's arrays are traced too
        try:
            rec = read_recording(ARM, bag)
            peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
        finally:
            tracemalloc.stop()
        assert rec.trajectory.data.shape[0] == N
        assert peak_mb < 100, peak_mb


# ------------------------------------------------------------------ a clock jump (#33 item 5)

def _jumped(msgs, k, stamp_ns):
    return [m._replace(stamp=stamp_ns) if i == k else m for i, m in enumerate(msgs)]


@pytest.mark.parametrize("k", [0, N - 1])
@pytest.mark.parametrize("fmt", ["bag", "rostopic"])
def test_one_stamp_at_2_31_s_is_an_error_naming_the_message_not_a_14_year_recording(tmp_path, k, fmt):
    """One header stamp at 2**31 s (a clock jump; 2038-01-19) at the first or the last message: it was
    read as a recording of 4.47e8 s (14 years), exit 0, when the jumped message was the last one. A
    jump in the middle has two steps and was already refused (`rhythm_break`)."""
    msgs = _jumped(joint_states(), k, 2**31 * 10**9 + k * 1_000_000)
    if fmt == "bag":
        path = write_bag(tmp_path / "run.bag", {"/joint_states": _ros1_stamps(msgs)}, "bag")
        path.write_bytes(_stamp_2_31(path.read_bytes(), k))
        where = f"message {k + 1} of /joint_states, stamp 2147483648."
    else:
        path = write_rostopic_csv(tmp_path / "run.csv", msgs)
        where = f"run.csv:{k + 2}: this message, stamp 2147483648."
    out = tmp_path / "out.csv"
    line = one_line_error(invoke("inverse", ARM6, path, "-o", out))
    assert where in line and "breaks the rhythm" in line and "--clock log" in line, line
    assert not out.exists()


def _ros1_stamps(msgs):
    """The messages with stamps a ROS 2 typestore can serialize (int32 seconds): the jumped one is
    written at its normal time and its seconds are set to 2**31 in the bag's bytes (`_stamp_2_31`)."""
    return [m._replace(stamp=EPOCH_NS + i * 1_000_000) if m.stamp >= 2**31 * 10**9 else m
            for i, m in enumerate(msgs)]


def _stamp_2_31(data, k):
    """ROS 1 header: seq, stamp seconds, nanoseconds (uint32 each): message k's seconds at 2**31."""
    old = struct.pack("<III", k, EPOCH_NS // 10**9, k * 1_000_000)
    assert data.count(old) == 1
    return data.replace(old, struct.pack("<III", k, 2**31, k * 1_000_000))


# ------------------------------------------------------------------ file names that are not UTF-8

def _bytes_name(folder, raw: bytes):
    """A path in `folder` whose last part is the bytes `raw` (Linux allows any but '/' and NUL)."""
    import os

    return type(folder)(os.fsdecode(os.fsencode(folder) + b"/" + raw))


def test_file_names_that_are_not_utf8_are_read_and_written(tmp_path):
    """A trajectory, a URDF, an output or its folder named with bytes that are not UTF-8 (a Latin-1
    name from an old system, a damaged name): read and written as any other (they were internal
    errors, exit 3: Arrow takes UTF-8 paths only, the page and the figure's title could not
    encode the name); a name shown in a message, a title or a page has the bytes as \\xNN."""
    import shutil as sh

    robot = _bytes_name(tmp_path, b"arm\xff6.urdf")
    sh.copy(ARM6, robot)
    folder = _bytes_name(tmp_path, b"d\xfe")
    folder.mkdir()
    csv_out, pq_out = _bytes_name(tmp_path, b"tr\xe9.csv"), _bytes_name(folder, b"tr\xff.parquet")
    for out in (csv_out, pq_out):
        ran = invoke("simulate", robot, "--steps", "20", "-o", out)
        assert ran.exit_code == 0, ran.stderr
    torques = _bytes_name(folder, b"tau\xff.csv")
    ran = invoke("inverse", robot, pq_out, "-o", torques)
    assert ran.exit_code == 0, ran.stderr
    assert torques.read_text().startswith("time,")
    figure = _bytes_name(folder, b"q\xff.png")
    ran = invoke("plot", csv_out, "-o", figure)
    assert ran.exit_code == 0, ran.stderr
    assert figure.read_bytes().startswith(b"\x89PNG")
    page = _bytes_name(folder, b"v\xff.html")
    ran = invoke("view", robot, csv_out, "-o", page)
    assert ran.exit_code == 0, ran.stderr
    assert "tr\\xe9.csv" in page.read_text(encoding="utf-8")
    xacro = _bytes_name(tmp_path, b"arm\xff6.urdf.xacro")
    sh.copy(ROBOTS_DIR / "arm6.urdf.xacro", xacro)
    ran = invoke("info", xacro)
    assert ran.exit_code == 0 and "shoulder_pan" in ran.stdout, ran.stderr
    line = one_line_error(invoke("inverse", robot, _bytes_name(tmp_path, b"missing\xff.csv")))
    assert "missing\\xff.csv: no such file" in line, line
    scenario = _bytes_name(tmp_path, b"sweep\xff.yaml")
    scenario.write_text(SMALL_SWEEP)
    sweep = _bytes_name(tmp_path, b"out\xff")
    ran = invoke("sweep", scenario, "-o", sweep, "--workers", "1", "--no-progress", "--view")
    assert ran.exit_code == 0, ran.stderr
    assert "<title>dyn sweep: sweep\\xff.yaml" in (sweep / "index.html").read_text(encoding="utf-8")


# ------------------------------------------------------------------ a cell over 128 kB

BIG = 200_000  # characters: over the csv module's default field limit of 131072


def _dyn_csv(tmp_path):
    path = tmp_path / "run.csv"
    ran = invoke("simulate", ARM6, "--steps", "20", "-o", path)
    assert ran.exit_code == 0, ran.stderr
    return path.read_text().splitlines()


def test_a_cell_over_128_kb_in_a_column_dyn_does_not_need_is_read(tmp_path):
    """A 200 kB note cell, a 200 kB column name (dyn CSV) and a 200 kB log line in a PlotJuggler
    export: read as the file without them (they were internal errors: the csv module's "field larger
    than field limit (131072)"); a 200 kB cell that is not a number in a column dyn reads is one line,
    not a 200 kB one."""
    from recording_files import write_plotjuggler_csv

    lines = _dyn_csv(tmp_path)
    made = {"note": [lines[0] + ",note"] + [ln + ("," + "n" * BIG if k == 3 else ",ok") for k, ln in enumerate(lines[1:])],
            "name": [lines[0] + "," + "h" * BIG] + [ln + ",1" for ln in lines[1:]]}
    pj = write_plotjuggler_csv(tmp_path / "pj.csv", {"/joint_states": joint_states(50)})
    pj_lines = pj.read_text().splitlines()
    made["plotjuggler"] = [pj_lines[0] + ",/rosout/msg"] + [ln + ("," + "y" * BIG if k == 2 else ",")
                                                            for k, ln in enumerate(pj_lines[1:])]
    for name, text in made.items():
        path = tmp_path / f"{name}.csv"
        path.write_text("\n".join(text) + "\n")
        out = tmp_path / f"tau-{name}.csv"
        ran = invoke("inverse", ARM6, path, "-o", out)
        assert ran.exit_code == 0, (name, ran.stderr[:500])
        assert out.read_text().startswith("time,")
    bad = list(lines)
    cells = bad[4].split(",")
    cells[2] = "z" * BIG
    bad[4] = ",".join(cells)
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(bad) + "\n")
    line = one_line_error(invoke("inverse", ARM6, path, "-o", tmp_path / "tau.csv"))
    assert f"bad.csv:5: column '{lines[0].split(',')[2]}': 'zzz" in line and f"({BIG} characters) is not a number" in line
    assert len(line) < 400, len(line)


# ------------------------------------------------------------------ the memory check's limits

def test_the_memory_check_counts_ulimit_v(tmp_path):
    """Under ``ulimit -v 3 GB`` a run whose trajectory needs 18 GB (less than the machine's memory)
    is one line naming the limit, before the run (it was refused only by the machine's memory:
    MemoryError, an internal error)."""
    from helpers import run_process

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 * 10**9, resource.RLIM_INFINITY))

    out = tmp_path / "big.parquet"
    ran = run_process("simulate", ARM6, "--steps", "30000000", "-o", out, preexec_fn=limit, timeout=300)
    assert ran.returncode == 2, ran.stderr[-2000:]
    assert "internal error" not in ran.stderr
    line = [ln for ln in ran.stderr.splitlines() if ln.startswith("dyn: error:")]
    assert len(line) == 1 and "--steps" in line[0] and "(ulimit -v)" in line[0], ran.stderr
    assert not out.exists()


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_the_memory_check_counts_the_control_groups_limit(tmp_path, monkeypatch, version):
    """A process in a control group of 1 GB (its parent's limit, 2 GB of which 0.5 used: the least
    counts) cannot have the machine's memory: a need of 1.5 GB is over, 0.5 GB fits."""
    from dynlib.files import output

    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    proc.mkdir()
    (proc / "status").write_text("VmSize:\t 100 kB\n")
    if version == "v2":
        (proc / "cgroup").write_text("0::/jobs/run\n")
        files, base = ("memory.max", "memory.current"), root
        (base / "jobs" / "run").mkdir(parents=True)
        (base / files[0]).write_text("max\n")
    else:
        (proc / "cgroup").write_text("5:cpu:/\n4:memory:/jobs/run\n")
        files, base = ("memory.limit_in_bytes", "memory.usage_in_bytes"), root / "memory"
        (base / "jobs" / "run").mkdir(parents=True)
        (base / files[0]).write_text(f"{2**63 - 4096}\n")
    (base / "jobs" / files[0]).write_text(f"{10**9}\n")
    (base / "jobs" / files[1]).write_text("0\n")
    (base / "jobs" / "run" / files[0]).write_text(f"{2 * 10**9}\n")
    (base / "jobs" / "run" / files[1]).write_text(f"{5 * 10**8}\n")
    monkeypatch.setattr(output, "_PROC", proc)
    monkeypatch.setattr(output, "_CGROUP", root)
    over = output.memory_shortfall(1.5e9)
    assert over and over.startswith("1.5 GB, more than the 1 GB its control group has left of its limit of 1 GB"), over
    assert str(base / "jobs" / files[0]) in over
    assert output.memory_shortfall(0.5e9) is None


# ------------------------------------------------------------------ a sweep worker killed by the OOM killer

OOM_SWEEP = f"""\
dyn: 1
robot: {ARM6}
duration: 0.2
dt: 0.001
output: {{every: 10}}
sweep:
  grid:
    initial.q.shoulder_lift: [-1.0, -0.5, 0.0, 0.5, 1.0]
"""


def test_a_sweep_worker_killed_by_the_oom_killer_fails_its_variant_and_the_sweep_goes_on(tmp_path, monkeypatch):
    """The worker running v001 is killed with SIGKILL every time (as the out-of-memory killer kills a
    variant that does not fit): v001 is recorded as failed, naming SIGKILL; the variants that shared
    its pool run again and are ok (each break of the pool blamed every task queued in it: two breaks
    failed them too)."""
    import helpers
    from dynlib.runs.sweep import backends, plan_sweep, run_sweep

    monkeypatch.setattr(backends, "run_variant", helpers.variant_killed_as_by_the_oom_killer)
    scenario = tmp_path / "sweep.yaml"
    scenario.write_text(OOM_SWEEP)
    report = run_sweep(plan_sweep(scenario), tmp_path / "out", workers=2)
    status = {row["variant"]: row["status"] for row in report.rows.values()} if isinstance(report.rows, dict) \
        else {row["variant"]: row["status"] for row in report.rows}
    assert status == {"v000": "ok", "v001": "failed", "v002": "ok", "v003": "ok", "v004": "ok"}, status
    summary = (tmp_path / "out" / "summary.csv").read_text()
    v001 = next(line for line in summary.splitlines() if line.startswith("v001,"))
    assert "killed by SIGKILL" in v001, v001


# ------------------------------------------------------------------ a full disk when a sweep starts

SMALL_SWEEP = f"""\
dyn: 1
robot: {ARM6}
duration: 0.05
dt: 0.001
sweep:
  grid:
    initial.q.shoulder_lift: [-1.0, 0.0]
"""


@pytest.fixture
def full_tmpfs(tmp_path):
    """A mounted tmpfs of 1 MB filled to its last byte (root only; skipped where mounting is not
    allowed), unmounted at the end."""
    import os
    import subprocess

    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    folder = tmp_path / "tmpfs"
    folder.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.decode().strip()}")
    try:
        fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
        for size in (65536, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
        os.close(fd)
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _assert_sweep_refused_leaving_nothing(ran, out):
    line = one_line_error(ran)
    assert f"{out}: cannot start the sweep there: No space left on device" in line, line
    assert not out.exists(), sorted(p.name for p in out.rglob("*"))


def test_a_full_disk_when_a_sweep_starts_is_one_line_and_leaves_no_folder_or_lock(tmp_path, full_tmpfs):
    """The output folder on a full file system (a real tmpfs): the folder and .dyn-sweep could be made,
    the lock's pid could not be written: exit 2 naming the folder, and the folder, with its lock, is
    removed (it was an internal error, exit 3, and left out/.dyn-sweep/lock)."""
    from helpers import run_process

    scenario = tmp_path / "sweep.yaml"
    scenario.write_text(SMALL_SWEEP)
    out = full_tmpfs / "out"
    ran = run_process("sweep", scenario, "-o", out, "--workers", "1", "--no-progress")
    _assert_sweep_refused_leaving_nothing(ran, out)


def test_a_full_disk_when_a_sweep_starts_is_one_line_and_leaves_no_folder_or_lock_in_process(tmp_path, monkeypatch):
    """The same where no file system can be mounted: the lock's write fails with ENOSPC."""
    import errno
    import os

    def full(fd, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    scenario = tmp_path / "sweep.yaml"
    scenario.write_text(SMALL_SWEEP)
    out = tmp_path / "out"
    monkeypatch.setattr(os, "ftruncate", full)
    ran = invoke("sweep", scenario, "-o", out, "--workers", "1", "--no-progress")
    monkeypatch.undo()
    _assert_sweep_refused_leaving_nothing(ran, out)


# ------------------------------------------------------------------ dyn view: meshes and link names

MESH_SECRET = "SECRET-mesh-7e31"
TRIANGLE_OBJ = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"


def _page_payload(html: bytes) -> bytes:
    import base64
    import gzip
    import re

    found = re.search(rb'<script id="dyn-scene" type="application/octet-stream">\s*([A-Za-z0-9+/=]+)\s*</script>',
                      html)
    return gzip.decompress(base64.b64decode(found.group(1)))


def _robot_with_mesh(tmp_path, filename, package=True):
    """robot/ (a package when `package`) with robot.urdf whose one visual is the mesh `filename`."""
    pkg = tmp_path / "robot"
    (pkg / "meshes").mkdir(parents=True)
    if package:
        (pkg / "package.xml").write_text("<package><name>mesh_description</name></package>\n")
    (pkg / "meshes" / "own.obj").write_text(TRIANGLE_OBJ)
    robot = pkg / "robot.urdf"
    robot.write_text(f'<robot name="r"><link name="base"><visual><geometry><mesh filename="{filename}"/>'
                     '</geometry></visual></link></robot>\n')
    motion = tmp_path / "m.csv"
    motion.write_text("time\n0\n0.1\n")
    return robot, motion


def _view(robot, motion, page, timeout=None):
    from helpers import run_process

    if timeout is None:
        return invoke("view", robot, motion, "-o", page)
    return run_process("view", robot, motion, "-o", page, timeout=timeout)


@pytest.mark.parametrize("filename", ["/PLACE/secret/scan.obj", "../secret/scan.obj", "file:///PLACE/secret/scan.obj",
                                      "meshes/link.obj", "package://mesh_description/../secret/scan.obj"])
def test_a_page_embeds_no_mesh_outside_the_robots_package(tmp_path, filename):
    """A URDF <mesh> naming an .obj (.stl, .dae) outside the robot's package (absolute, ../, file://, a
    symlink in the package, package:// with ../): one warning, left out; nothing of the file is in the
    page (it was embedded, as mtllib files were before #33 item 2)."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "scan.obj").write_text(f"# {MESH_SECRET}\n" + TRIANGLE_OBJ)
    robot, motion = _robot_with_mesh(tmp_path, filename.replace("/PLACE", str(tmp_path)))
    (robot.parent / "meshes" / "link.obj").symlink_to(secret / "scan.obj")
    page = tmp_path / "page.html"
    ran = invoke("view", robot, motion, "-o", page, "--package-path", tmp_path)
    assert ran.exit_code == 0, ran.stderr
    warnings = [ln for ln in ran.stderr.splitlines() if ln.startswith("dyn: warning:")]
    assert any("is not a mesh file inside the robot's package" in w and "left out" in w for w in warnings), ran.stderr
    assert MESH_SECRET.encode() not in _page_payload(page.read_bytes())


@pytest.mark.parametrize("filename, package", [("meshes/own.obj", True), ("meshes/own.obj", False),
                                               ("package://mesh_description/meshes/own.obj", True),
                                               ("file:///PLACE/other_description/meshes/shared.obj", True)])
def test_a_page_still_embeds_the_robots_own_meshes_and_other_packages(tmp_path, filename, package):
    """The robot's own meshes (relative, package://, in a folder without package.xml) and another ROS
    package's (a generated URDF names them by file://) are drawn, without a warning."""
    other = tmp_path / "other_description"
    (other / "meshes").mkdir(parents=True)
    (other / "package.xml").write_text("<package><name>other_description</name></package>\n")
    (other / "meshes" / "shared.obj").write_text("# shared\n" + TRIANGLE_OBJ)
    robot, motion = _robot_with_mesh(tmp_path, filename.replace("/PLACE", str(tmp_path)), package)
    page = tmp_path / "page.html"
    ran = invoke("view", robot, motion, "-o", page, "--package-path", tmp_path)
    assert ran.exit_code == 0, ran.stderr
    assert "warning" not in ran.stderr, ran.stderr
    # the triangle's vertex (0, 1, 0) among the page's float32 positions (meshes arrive as arrays, issue 34)
    assert struct.pack("<3f", 0, 1, 0) in _page_payload(page.read_bytes())


@pytest.mark.parametrize("kind", ["dev-zero-link", "dev-zero-node", "fifo", "fifo-texture"])
def test_a_mesh_that_is_a_device_or_a_fifo_is_left_out_without_reading_it(tmp_path, kind):
    """A mesh that is /dev/zero (a symlink in the package to it, or the device itself made there: it
    filled the memory), a FIFO in the package (the build hung), a FIFO as an .obj's texture: one
    warning, left out, in a process that ends (a real process: a hang is the fault)."""
    import os
    import stat as st

    robot, motion = _robot_with_mesh(tmp_path, "meshes/own.obj" if kind == "fifo-texture" else "meshes/link.stl")
    meshes = robot.parent / "meshes"
    if kind == "dev-zero-link":
        (meshes / "link.stl").symlink_to("/dev/zero")
    elif kind == "dev-zero-node":
        try:
            os.mknod(meshes / "link.stl", st.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero's numbers
        except PermissionError:
            pytest.skip("making a device needs root")
    elif kind == "fifo":
        os.mkfifo(meshes / "link.stl")
    else:
        os.mkfifo(meshes / "wood.png")
        (meshes / "own.mtl").write_text("newmtl m\nmap_Kd wood.png\n")
        (meshes / "own.obj").write_text("mtllib own.mtl\nusemtl m\n" + TRIANGLE_OBJ)
    page = tmp_path / "page.html"
    ran = _view(robot, motion, page, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    warnings = [ln for ln in ran.stderr.splitlines() if ln.startswith("dyn: warning:") and "link frames" not in ln]
    assert len(warnings) == 1, ran.stderr
    says = {"dev-zero-link": "is not a mesh file inside the robot's package",
            "dev-zero-node": "is not a regular file (a character device)",
            "fifo": "is not a regular file (a FIFO)", "fifo-texture": "is not a regular file (a FIFO)"}[kind]
    assert says in warnings[0] and "left out" in warnings[0], warnings


def test_links_whose_names_differ_only_by_slash_and_underscore_stay_two_in_the_page(tmp_path):
    """tf-prefixed link names ``arm/link1`` and ``arm_link1`` (two moving bodies): two nodes of the
    page, each with its own shape and motion (mapping '/' to '_' merged them into one node)."""
    import json

    robot = tmp_path / "r.urdf"
    robot.write_text("""<robot name="r">
  <link name="base"/>
  <link name="arm/link1"><visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>
  <link name="arm_link1"><visual><geometry><sphere radius="0.05"/></geometry></visual></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm/link1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="base"/><child link="arm_link1"/><origin xyz="1 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>
""")
    motion = tmp_path / "m.csv"
    motion.write_text("time,q.j1,q.j2\n0,0,0\n0.5,1,-1\n1,2,-2\n")
    page = tmp_path / "page.html"
    ran = invoke("view", robot, motion, "-o", page)
    assert ran.exit_code == 0, ran.stderr
    payload = _page_payload(page.read_bytes())
    assert b"/dyn/robot/arm%2Flink1" in payload and b"/dyn/robot/arm_link1" in payload
    assert payload.count(b"BoxGeometry") == 1 and payload.count(b"SphereGeometry") == 1


def test_a_clock_that_jumps_and_stays_is_an_error_naming_the_first_message_after_it():
    """Stamps that jump by 14 years half-way and stay there: the first sample after the jump breaks
    the rhythm (the recording was 14 years long, exit 0); a pause of 30 s in a 0.4 s recording is a
    gap, not a jump."""
    from dynlib.files.recordings.clock import rhythm_break

    t = np.arange(N) * 1e-3
    jumped = t.copy()
    jumped[N // 2:] += 2**31 - 1.7e9
    brk = rhythm_break(jumped)
    assert brk is not None and brk.k == N // 2 and brk.before > 4e8
    paused = t.copy()
    paused[N // 2:] += 30.0
    assert rhythm_break(paused) is None


@pytest.mark.parametrize("args, says", [
    (("inverse", ARM6, "/dev/zero", "-o", "OUT"), "/dev/zero: is a character device, expected a trajectory file"),
    (("plot", "/dev/urandom", "-o", "OUT.png"), "/dev/urandom: is a character device"),
    (("info", "/dev/zero"), "/dev/zero: is a device, expected a .urdf or .xacro file"),
])
def test_a_device_as_an_input_file_is_one_line_without_reading_it(tmp_path, args, says):
    """/dev/zero or /dev/urandom given as a trajectory or a robot: one line, exit 2, nothing read (they
    were read whole: a MemoryError under a memory limit, all the machine's memory without one). Run
    under ulimit -v 4 GB, so that a reader that reads them stops there."""
    from helpers import run_process

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (4 * 10**9, resource.RLIM_INFINITY))

    args = [str(a).replace("OUT", str(tmp_path / "out.csv")) for a in args]
    ran = run_process(*args, preexec_fn=limit, timeout=120)
    assert ran.returncode == 2, ran.stderr[-1000:]
    assert "internal error" not in ran.stderr
    assert says in [ln for ln in ran.stderr.splitlines() if ln.startswith("dyn: error:")][0], ran.stderr
