"""Options shared by several commands, defined once, and small helpers.

Nothing here imports dynlib's kernels at import time.
"""
import contextlib
import math
import sys
import time
from typing import NamedTuple

import click


def robot_argument(f):
    return click.argument("robot", metavar="ROBOT", type=click.Path(dir_okay=False))(f)


def no_limits_option(f):
    return click.option("--no-limits", is_flag=True, default=None,
                        help="Do not hold the URDF's position limits nor saturate motor torques at its effort "
                             "limits.")(f)


def floating_base_option(f):
    return click.option("--floating-base", is_flag=True, default=None,
                        help="Add a free-flyer root joint named 'root' above the URDF's root link.")(f)


def gravity_option(f):
    return click.option("--gravity", metavar="X,Y,Z", default=None,
                        help="Gravity in the world frame, m/s^2 [default: 0,0,-9.81].")(f)


def armature_option(f):
    return click.option("--armature", multiple=True, metavar="JOINT=KG_M2",
                        help="Rotor inertia of a joint, added to the mass matrix's diagonal (MuJoCo's and "
                             "Pinocchio's armature); repeat for more joints [default: the URDF's <dynamics dyn:armature>, "
                             "or the scenario's, else none].")(f)


def armature_values(values) -> dict:
    """('elbow=0.1', 'wrist_1=0.02') -> {'elbow': 0.1, 'wrist_1': 0.02} (--armature)."""
    given = vector_option(values, "--armature")
    if isinstance(given, list):
        raise click.BadParameter(f"{values[0]!r}: expected JOINT=VALUE", param_hint="--armature")
    return given


def lock_option(f):
    return click.option("--lock", multiple=True, metavar="JOINT=VALUE",
                        help="Hold a joint at VALUE (rad or m; a planar or floating joint: its numbers, "
                             "comma-separated): the robot without that joint, as Pinocchio's buildReducedModel "
                             "(e.g. fingers a recording leaves out); repeat for more joints.")(f)


WITH_PARTS = ("limits",)  # the extra output columns of --with (inverse, contact-id)


def with_option(f):
    return click.option("--with", "with_parts", metavar="PARTS", default=None, callback=_with_parts,
                        help="Extra output columns, comma-separated: 'limits' adds over_limit.<joint> for each joint "
                             "with a URDF effort limit, 1 on the rows where |tau| exceeds it, else 0 (as "
                             "'dyn simulate --columns ...,limits' adds limit.<joint>).")(f)


def _with_parts(ctx, param, value) -> tuple:
    if value is None:
        return ()
    parts = tuple(dict.fromkeys(p.strip() for p in value.split(",")))
    bad = [p for p in parts if p not in WITH_PARTS]
    if bad:
        raise click.BadParameter(f"unknown part {bad[0]!r}; parts: {', '.join(WITH_PARTS)}")
    return parts


def lock_values(values) -> dict:
    """('panda_finger_joint1=0.02', 'slide=0.1,0,0') -> {'panda_finger_joint1': 0.02, 'slide': [0.1, 0.0, 0.0]}
    (--lock); the values are checked against the robot when it loads (dynlib.files.locks)."""
    out = {}
    for text in values:
        name, eq, val = text.partition("=")
        if not eq or not name.strip():
            raise click.BadParameter(f"{text!r}: expected JOINT=VALUE", param_hint="--lock")
        try:
            numbers = [float(x) for x in val.split(",")]
        except ValueError:
            raise click.BadParameter(f"{text!r}: {val!r} is not a number", param_hint="--lock") from None
        out[name.strip()] = numbers[0] if len(numbers) == 1 else numbers
    return out


def output_option(f):
    return click.option("-o", "--output", metavar="PATH", default=None,
                        help="Output file (.csv or .parquet); '-' or absent: standard output.")(f)


def progress_option(f):
    return click.option("--no-progress", is_flag=True, help="No progress line on standard error.")(f)


def _compose(*decorators):
    def apply(f):
        for d in reversed(decorators):
            f = d(f)
        return f
    return apply


# simulate and energy-check: the run and its initial state
run_options = _compose(
    click.option("--duration", type=click.FloatRange(min=0, min_open=True), default=None,
                 help="Simulated time in seconds (steps = duration / dt) [default: the scenario's, or 1 s]."),
    click.option("--dt", type=click.FloatRange(min=0, min_open=True), default=None, help="Time step, s [default: 1e-3]."),
    click.option("--integrator", type=click.Choice(["rk4", "semi-implicit", "euler"]), default=None,
                 help="Integration scheme [default: rk4]."),
    click.option("--q0", multiple=True, metavar="VALUES|NAME=VALUE", help="Initial configuration."),
    click.option("--qd0", multiple=True, metavar="VALUES|NAME=VALUE", help="Initial velocity."),
)

# inverse and contact-id: where q, qd, qdd come from, and the joint friction added back
derivative_options = _compose(
    click.option("--derivatives", type=click.Choice(["auto", "given", "central", "savgol"]), default="auto",
                 show_default=True, help="Where velocities and accelerations come from: the file's qd/qdd columns "
                                         "(given), central differences or a Savitzky–Golay filter of q."),
    click.option("--window", type=float, default=0.1, show_default=True, metavar="SECONDS",
                 callback=lambda ctx, param, v: check_value(
                     v, math.isfinite(v) and v > 0, "Savitzky–Golay window must be a positive number of seconds"),
                 help="Savitzky–Golay window length."),
    click.option("--polyorder", type=int, default=4, show_default=True, metavar="K",
                 callback=lambda ctx, param, v: check_value(
                     v, v >= 2, "Savitzky–Golay polyorder must be at least 2 to estimate accelerations"),
                 help="Savitzky–Golay polynomial order (at least 2)."),
    click.option("--columns", "column_map", metavar="MAP", default=None,
                 help=("Columns with other names: comma-separated KEY=VALUE, KEY time, q, qd, qdd or effort and VALUE "
                      "a template with {joint} (the name 'dyn info' gives) or {index} (the position in --joint-order), "
                      "e.g. 'q=pos_{joint},qd=vel_{joint}'; "
                      "or one coordinate, q.<name>=COLUMN.")),
    click.option("--no-joint-friction", is_flag=True,
                 help="Leave out the URDF damping and Coulomb friction (rigid-body torques only)."),
    click.option("--friction-smoothing", type=float, default=1e-3, show_default=True, metavar="EPS",
                 help="ε of the joint Coulomb term friction·tanh(q̇/ε), rad/s or m/s."),
)


def check_outputs(*outputs, inputs=()):
    """Before the work: each (path, kind, label) output can be written, has its kind's
    extension and is none of `inputs` (`dynlib.files.output.check_outputs`; InputError, exit 2)."""
    from dynlib.files.output import check_outputs as check

    check(outputs, inputs)


def check_value(value, ok, message):
    """`value`, or click.BadParameter "MESSAGE, got VALUE" when not `ok` (an option callback's check)."""
    if not ok:
        raise click.BadParameter(f"{message}, got {value!r}")
    return value


@contextlib.contextmanager
def naming(label):
    """A DynError without a location raised inside gets `label` (the option that gave the value) as its place."""
    from dynlib.errors import DynError

    try:
        yield
    except DynError as exc:
        if not exc.location:
            exc.key = label
        raise


def parse_vector(text, n=None, what="value"):
    """'1,2,3' -> list of floats (click.BadParameter on bad text)."""
    try:
        vals = [float(s) for s in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of numbers", param_hint=what) from None
    if n is not None and len(vals) != n:
        raise click.BadParameter(f"expected {n} numbers, got {len(vals)} in {text!r}", param_hint=what)
    return vals


def notice(ctx, message):
    """A line on standard error unless -q; while `each_input` works on one of several inputs, the line
    names that input (``dyn: walk.bag: warning: …``)."""
    obj = ctx.obj or {}
    if not obj.get("quiet"):
        source = obj.get("input")
        click.echo(f"dyn: {f'{source}: ' if source else ''}{message}", err=True)


def _remove_if_empty(folder, made):
    """The output folder a command made, removed again when nothing was written in it."""
    import contextlib
    import os

    if made:
        with contextlib.suppress(OSError):
            os.rmdir(folder)


class Output(NamedTuple):
    """One output option of a command that takes several inputs (`for_each_input`): its value `target` (a
    file, a folder ending in '/', a ``{stem}`` name, '-' or None), its `kind` (`dynlib.files.output.KINDS`),
    its option `label`, the `suffix` of each input's file in a folder, and whether several inputs
    `need` it (a trajectory cannot go to standard output for each; energy-check's report can be left out)."""

    target: object
    kind: str
    label: str
    suffix: str = ".csv"
    needed: bool = True


def each_input(ctx, robot, sources, output, work, *, before=None, kind="trajectory"):
    """Run ``work(source, output)`` for each of a command's inputs, in one process (the robot loaded
    and the kernels compiled once): `for_each_input` with the one output -o/--output (a `kind` file),
    ROBOT among the inputs no output may be."""
    return for_each_input(ctx, sources, [Output(output, kind, "-o/--output")],
                          lambda source, outs: work(source, outs[0]), before=before, inputs=(robot,))


def _named(target) -> bool:
    """Whether an output option names a folder or a ``{stem}`` template rather than one file."""
    import os

    return target is not None and (str(target).endswith(os.sep) or os.path.isdir(target) or "{stem}" in str(target))


def _batch_paths(sources, outputs, suffixes):
    """(the output paths of each input, one list per input; the folders they go to, in order)."""
    from dynlib.files.output import batch_outputs

    columns, folders = [], []
    for o in outputs:
        if o.target is None and not o.needed:
            columns.append([None] * len(sources))
        elif len(sources) == 1 and not _named(o.target):
            columns.append([o.target])
        else:
            names, folder = batch_outputs(sources, o.target, o.suffix, suffixes=suffixes, label=o.label)
            columns.append(names)
            folders += [(folder, o.label)] if folder not in [f for f, _ in folders] else []
    return [list(row) for row in zip(*columns)], folders


def for_each_input(ctx, sources, outputs, work, *, before=None, inputs=(), suffixes=None):
    """Run ``work(source, paths)`` for each of a command's inputs, in one process; `paths`: the file of
    each `Output` for that input (or its target as given, or None). One input: the targets as given (a
    file, or standard output), but a folder or a ``{stem}`` name as for several.
    Several: a needed output is a folder or a ``{stem}`` name (`dynlib.files.output.batch_outputs`; the
    stem leaves out `suffixes`, default a recording's), every output is checked before any work (a name
    clash, an input as output: exit 2, nothing written), each input's notices name it, and an input that
    fails is one ``dyn: FILE: error: …`` line while the others still run; the command then ends with exit 2
    naming the inputs that failed (their outputs are not written; the others' are). `inputs`: files no
    output may be, besides `sources`. `before()`: what every input needs (the robot), run once after the
    outputs are checked; its errors end the command."""
    import os

    if len(sources) == 1 and not any(_named(o.target) for o in outputs):
        check_outputs(*[(o.target, o.kind, o.label) for o in outputs], inputs=(*inputs, sources[0]))
        if before is not None:
            before()
        return work(sources[0], [o.target for o in outputs])
    paths, folders = _batch_paths(sources, outputs, suffixes)
    check_outputs(*[(folder, "folder", label) for folder, label in folders], inputs=(*inputs, *sources))
    made = [folder for folder, _ in folders if not os.path.isdir(folder)]
    for folder in made:
        os.makedirs(folder)
    try:
        check_outputs(*[(path, o.kind, o.label) for row in paths for path, o in zip(row, outputs)],
                      inputs=(*inputs, *sources))
        if before is not None:
            before()
        if len(sources) == 1:  # one input into a folder (runs/*.bag that matched one bag): its errors are the command's
            return work(sources[0], paths[0])
    except BaseException:
        for folder in made:
            _remove_if_empty(folder, True)
        raise
    failed = _each(ctx, sources, paths, work)
    if failed:
        for folder in made:
            _remove_if_empty(folder, True)
        _failed_inputs(failed, len(sources), [folder for folder, _ in folders])


def _each(ctx, sources, paths, work) -> list:
    """`for_each_input`'s loop over several inputs: the inputs that failed, each said on standard error."""
    from dynlib.errors import DynError

    failed, live = [], show_progress(ctx, False)
    obj = ctx.ensure_object(dict)
    for k, (source, outs) in enumerate(zip(sources, paths), 1):
        if live:
            written = [str(p) for p in outs if p is not None]
            notice(ctx, f"[{k}/{len(sources)}] {source}{' -> ' + ', '.join(written) if written else ''}")
        obj["input"] = source
        try:
            work(source, outs)
        except DynError as exc:
            failed.append(source)
            if str(exc).startswith(source):  # the message names the input already
                obj.pop("input", None)
            notice(ctx, f"error: {exc}")
        finally:
            obj.pop("input", None)
    return failed


def _failed_inputs(failed, n, folders):
    """The InputError (exit 2) that ends a command some of whose several inputs failed."""
    from dynlib.errors import InputError

    shown = ", ".join(failed[:4]) + (f", … ({len(failed) - 4} more)" if len(failed) > 4 else "")
    where = f"were written to {' and '.join(str(f) for f in folders)}" if folders else "ran"
    raise InputError(f"{len(failed)} of {n} inputs failed ({shown}), each said above; the other "
                     f"{n - len(failed)} {where}")


def derivatives_notice(ctx, requested, used):
    """With ``--derivatives auto``, the notice that velocities and accelerations were estimated from q
    (no qdd.* columns: `dynlib.motion.derivatives.motion_from_trajectory`). `used`: the method it chose,
    or the methods of several recordings (identify)."""
    estimated = sorted({used} - {"given"} if isinstance(used, str) else set(used) - {"given"})
    if requested == "auto" and estimated:
        notice(ctx, f"no qdd.* columns: velocities and accelerations by {' and '.join(estimated)} differences of q "
                    "(for a noisy recording use --derivatives savgol)")


def load_robot(ctx, path, floating_base=False, gravity=None, *, warn=True, package_path=(), armature=(), lock=(),
               strict=True):
    """dynlib.load with the command's options (`armature`, `lock`: the --armature and --lock values); its
    warnings go to standard error (unless `warn` is False: `dyn info` lists them in its output).
    `strict=False`: a command that only evaluates the model reads non-physical inertias and friction
    with a warning (`dynlib.load`'s strict)."""
    import dynlib
    from dynlib.files.locks import LockError

    g = None if gravity is None else parse_vector(gravity, 3, "--gravity")
    rotors = armature_values(armature) if armature else None
    locks = lock_values(lock) if lock else None
    try:
        model = dynlib.load(path, floating_base=bool(floating_base), package_path=tuple(package_path), lock=locks,
                            strict=strict)
    except LockError as exc:
        exc.key = "--lock"
        raise
    if g is not None:
        model = model.with_gravity(g)
    if rotors:
        with naming("--armature"):
            model = model.with_armature(rotors, keep=True)  # the other joints keep the URDF's dyn:armature
    if warn:
        model_warnings(ctx, model)
    return model


def model_warnings(ctx, model):
    """The robot's warnings (URDF oddities the reader accepted), once each, on standard error."""
    for w in dict.fromkeys(model.warnings):
        notice(ctx, f"warning: {w}")


def compile_notice(ctx):
    """Say so on standard error when the kernels are compiled: not when ABA and RNEA are in
    dyn's cache (the first run compiles them); otherwise when the first kernel that is not
    in the cache is about to be compiled (numba's own cache, the fallback: right away)."""
    from dynlib._numba.cache import cache_is_warm
    from dynlib._numba.folder import cache_writable
    from dynlib._numba.events import on_first_compile

    def say():
        current = click.get_current_context(silent=True)
        if current is None or current.find_root() is not ctx.find_root():
            return  # the command that asked has finished
        if cache_writable():
            notice(ctx, "compiling the dynamics kernels (first run only; later runs load them from the cache)…")
        else:
            notice(ctx, "compiling the dynamics kernels (no writable kernel cache: every run compiles them)…")
        compile_progress(ctx)

    if not cache_is_warm() and not on_first_compile(say):
        say()


def compile_progress(ctx, task=None):
    """On a terminal (and not with -q), one line on standard error redrawn as numba compiles:
    kernels compiled / kernels expected, and the seconds so far. The total is what `task`
    (default: the command's name) compiled the last time it compiled anything
    (`dynlib._numba.events.expected_compiles`; this run's count is recorded when the command ends),
    and never less than the kernels started (a kernel's callees start while it is typed). The
    line is finished when the total is reached with nothing left compiling, or when the command
    ends."""
    if (ctx.obj or {}).get("quiet") or not sys.stderr.isatty():
        return
    from dynlib._numba.events import expected_compiles, record_compiles, watch_compiles

    task = task or ctx.command.name

    class Progress:
        def __init__(self):
            self.started = self.done = 0
            self.total = expected_compiles(task) or 0
            self.line = StatusLine(True)
            self.stop = watch_compiles(self.on_start, self.on_end)

        def on_start(self):
            self.started += 1
            self.draw()

        def on_end(self):
            self.done += 1
            self.draw()

        def draw(self):
            total = max(self.total, self.started)
            end = self.done == self.started and self.done >= self.total
            self.line.draw(f"kernels compiled {self.done}/{total}, {self.line.seconds():.0f} s", end=end)

        def close(self):
            self.stop()
            self.line.close()
            if self.done:
                record_compiles(task, self.done)

    progress = Progress()
    ctx.find_root().call_on_close(progress.close)


def show_progress(ctx, no_progress):
    """Progress lines only on a terminal, and not with --no-progress or -q."""
    return not no_progress and not (ctx.obj or {}).get("quiet") and sys.stderr.isatty()


class StatusLine:
    """The one progress display of every command: one line on standard error, ``dyn: <text>``, redrawn in
    place (the kernels compiled, a simulation's steps, contact-id's friction cones, a sweep's variants).
    Drawn only when `live` (`show_progress`); not before `delay` seconds (a short run shows nothing), and
    at most once every `every` seconds, but for the final draw. `clear` erases it (before a notice, or to
    leave nothing behind); `close` finishes it with a newline."""

    def __init__(self, live, *, delay=0.0, every=0.0):
        self.live, self.delay, self.every = live, delay, every
        self.t0 = time.monotonic()
        self.last = -math.inf
        self.open = False  # a drawn line not yet finished or cleared

    def seconds(self) -> float:
        return time.monotonic() - self.t0

    def draw(self, text, *, final=False, end=False):
        """Show ``dyn: <text>``; `final`: whatever the delay and the rate; `end`: finish the line."""
        now = self.seconds()
        if not self.live or (not (final or end) and (now < self.delay or now - self.last < self.every)):
            return
        click.echo(f"\rdyn: {text}\x1b[K", err=True, nl=end)
        self.last, self.open = now, not end

    def clear(self):
        if self.open:
            click.echo("\r\x1b[K", err=True, nl=False)
            self.open = False

    def close(self):
        if self.open:
            click.echo("", err=True)
            self.open = False


@contextlib.contextmanager
def progress_counter(ctx, no_progress, what, unit, delay=0.0):
    """Yields the progress(done, total) callback of a long library call (`dynlib.simulate`'s steps,
    contact-id's rows): the `StatusLine` ``dyn: <what>: <done>/<total> <unit> (<percent> %)``, at most ten
    times a second, finished when done reaches total or the block ends (an error's message then starts a
    line of its own); None when progress is not shown (`show_progress`)."""
    if not show_progress(ctx, no_progress):
        yield None
        return
    line = StatusLine(True, delay=delay, every=0.1)
    try:
        yield lambda done, total: line.draw(f"{what}: {done}/{total} {unit} ({100 * done // max(total, 1)} %)",
                                            end=done >= total)
    finally:
        line.close()


def vector_option(values, label):
    """('0.1,0,0.3',) -> [0.1, 0.0, 0.3]; ('a=1', 'b=2') -> {'a': 1.0, 'b': 2.0} (--q0, --qd0, --tau)."""
    out = {}
    for text in values:
        if "=" not in text:
            if len(values) > 1:
                raise click.BadParameter("give either the whole vector once or NAME=VALUE pairs", param_hint=label)
            return parse_vector(text, None, label)
        name, _, val = text.partition("=")
        name = name.strip()
        if not name:
            raise click.BadParameter(f"{text!r}: expected NAME=VALUE", param_hint=label)
        try:
            out[name] = float(val)
        except ValueError:
            raise click.BadParameter(f"{text!r}: {val!r} is not a number", param_hint=label) from None
    return out


class Overrides:
    """Command-line options as scenario overrides ({key path: value}) with their option names,
    so that a bad value is reported against the option that gave it."""

    def __init__(self):
        self.values, self.origins = {}, {}

    def put(self, key, value, label):
        self.values[key] = value
        self.origins[key] = label

    def put_if(self, key, value, label):
        if value is not None:
            self.put(key, value, label)

    def initial_state(self, q0, qd0):
        for key, values, label in ((("initial", "q"), q0, "--q0"), (("initial", "qd"), qd0, "--qd0")):
            given = vector_option(values, label)
            if isinstance(given, list):
                self.put(key, given, label)
            else:
                for name, v in given.items():
                    self.put(key + (name,), v, label)

    def robot(self, floating_base, gravity, armature=(), lock=()):
        if floating_base:
            self.put("floating_base", True, "--floating-base")
        for joint, value in (lock_values(lock) if lock else {}).items():
            self.put(("lock", joint), value, "--lock")
        if gravity is not None:
            self.put("gravity", parse_vector(gravity, 3, "--gravity"), "--gravity")
        for joint, value in (armature_values(armature) if armature else {}).items():
            self.put(("armature", joint), value, "--armature")

    def load(self, source):
        from dynlib.runs.scenario import load_scenario

        return load_scenario(source, self.values, origins=self.origins)


def package_path_option(f):
    """--package-path DIR (repeatable): where package:// meshes and $(find pkg) look first."""
    return click.option("--package-path", "package_path", multiple=True, metavar="DIR",
                        type=click.Path(file_okay=False),
                        help="A ROS package folder, or a folder holding packages, for package:// paths "
                             "(repeatable; searched before ROS_PACKAGE_PATH, AMENT_PREFIX_PATH and the "
                             "folders above the robot file).")(f)


# which recording and its time: inverse, contact-id, identify and view
recording_source_options = _compose(
    click.option("--topic", metavar="TOPIC", default=None,
                 help="The sensor_msgs/JointState topic of a bag or PlotJuggler export (needed when it has several)."),
    click.option("--time-unit", type=click.Choice(["s", "ms", "us", "ns"]), default=None,
                 help="Unit of the time column [default: the format's (ns for ROS); a plain column's is recognised "
                      "from its size: epoch ns, us, ms are never read as seconds]."),
)
resample_option = click.option(
    "--resample", type=click.FloatRange(min=0, min_open=True), default=None, metavar="HZ",
    help="Interpolate the motion onto a uniform grid of HZ samples per second first (on the configuration "
         "manifold): jittery stamps, before --derivatives savgol.")
# inverse and contact-id: the recording, resampled, and its clock
recording_options = _compose(
    recording_source_options,
    resample_option,
    click.option("--joint-order", metavar="A,B,...", default=None,
                 help="The joints of a file without joint names, in the file's order: what {index} in --columns "
                      "counts in (needed by {index} on such a file; the mapping made is printed)."),
    click.option("--clock", type=click.Choice(["header", "log"]), default=None,
                 help="A ROS bag's time (a rostopic echo -p file's too): 'header' (header.stamp, checked for samples "
                      "stamped out of the rhythm) or 'log' (when the bag logged each message) [default: header]."),
    click.option("--absolute-time", is_flag=True,
                 help="Also write time.absolute: the recording's own clock (epoch seconds for ROS)."),
)


def read_motion(ctx, model, source, columns, topic, time_unit, resample, clock=None, joint_order=None):
    """The `dynlib.files.recordings.Recording` of TRAJ; what the reader decided goes to standard error."""
    from dynlib.files.recordings import read_recording

    rec = read_recording(model, source, topic=topic, columns=columns, time_unit=time_unit, resample=resample,
                         clock=clock, joint_order=joint_order)
    for line in rec.notes:
        notice(ctx, line)
    return rec


def floating_base_of_run(ctx, source, floating_base):
    """--floating-base, or the floating base of the dyn run that wrote the Parquet file TRAJ when it is
    not given (said on standard error); a contradicting one is an error."""
    from dynlib.errors import InputError
    from dynlib.files.recordings import run_settings

    run = run_settings(source).get("floating_base")
    if run is None or floating_base is None and not run:
        return floating_base
    if floating_base is None:
        notice(ctx, f"floating base: the run's ({source}'s metadata, dyn.floating_base); the root is 'root'")
        return True
    if bool(floating_base) != run:
        raise InputError(f"--floating-base: the motion in {source} was simulated with a fixed base "
                         "(its metadata, dyn.floating_base); leave --floating-base out", key="--floating-base")
    return floating_base


def model_of_run(ctx, model, rec, gravity, no_joint_friction, friction_smoothing):
    """(model, friction smoothing) under the settings of the dyn run that wrote the recording
    (its Parquet metadata: gravity, joint friction) where the options do not choose them."""
    from click.core import ParameterSource

    from dynlib.files.recordings.dyn_files import model_of_run as under

    if not rec.settings:
        return model, friction_smoothing
    given = ctx.get_parameter_source("friction_smoothing") not in (ParameterSource.DEFAULT, None)
    g = None if gravity is None else parse_vector(gravity, 3, "--gravity")
    model, eps, notes = under(model, rec.settings, gravity=g, joint_friction=not no_joint_friction,
                              friction_smoothing=friction_smoothing if given else None, file=rec.trajectory.path)
    for line in notes:
        notice(ctx, line)
    return model, eps


def write_motion(ctx, output, names, data, source, rec, absolute_time):
    """Write a command's table, ``time`` in seconds from the first sample: the first sample's
    time on the recording's clock goes to a Parquet output's metadata, and with
    --absolute-time to a ``time.absolute`` column (its value at every row)."""
    import numpy as np

    from dynlib.files.columns import TIME, TIME_ABSOLUTE, TIME_START_KEY
    from dynlib.files.recordings.clock import text, utc
    from dynlib.files.trajectory import write_trajectory

    metadata = None
    if rec.start is not None:
        metadata = {TIME_START_KEY: text(rec.start)}
        if absolute_time:
            j = names.index(TIME) + 1
            names = names[:j] + [TIME_ABSOLUTE] + names[j:]
            data = np.insert(np.asarray(data), j, float(rec.start) + np.asarray(data)[:, j - 1], axis=1)
        elif rec.start != 0:
            when = utc(rec.start) if rec.start > 1e8 else ""
            notice(ctx, f"time: seconds from the first sample, which is at {text(rec.start)} s on the recording's "
                        f"clock{f' ({when})' if when else ''}; --absolute-time writes that clock as time.absolute")
    write_trajectory(output, names, data, source=source, metadata=metadata)
