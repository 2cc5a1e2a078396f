"""The `dyn` group: a lazy command table and the one place errors become exit codes.

Command modules are imported only when their command runs (or when help lists
them); they import dynlib inside their functions, so `dyn --help` loads neither
numba nor pandas. Exit codes: 0 done, 1 a check failed or a simulation
diverged, 2 bad usage or bad input.
"""
import importlib
import sys

import click

# name -> (module, function); order is the order of `dyn --help`
COMMANDS = {
    "info": ("cli.info", "info"),
    "simulate": ("cli.simulate", "simulate"),
    "inverse": ("cli.inverse", "inverse"),
    "contact-id": ("cli.contact_id", "contact_id"),
    "energy-check": ("cli.energy_check", "energy_check"),
    "sweep": ("cli.sweep", "sweep"),
    "plot": ("cli.plot", "plot"),
    "identify": ("cli.identify", "identify"),
    "excite": ("cli.excite", "excite"),
    "view": ("cli.view", "view"),
}

_state = {"verbose": 0}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return [name for name in COMMANDS if self._find(name) is not None]

    def get_command(self, ctx, name):
        return self._find(name)

    @staticmethod
    def _find(name):
        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name]
        try:
            return getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:
            if exc.name == module:  # a command not built yet
                return None
            raise

    def main(self, args=None, prog_name=None, **kw):
        from dynlib.errors import DynError

        try:
            rv = super().main(args=args, prog_name=prog_name or "dyn", standalone_mode=False, **kw)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            hint = f" (see 'dyn {exc.ctx.info_name if exc.ctx and exc.ctx.parent else ''} --help')".replace("  ", " ")
            _fail(f"{exc.format_message()}{hint}", 2)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except click.Abort:
            _fail("interrupted", 130)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except DynError as exc:
            if _state["verbose"]:
                import traceback

                traceback.print_exc()
            _fail(str(exc), exc.exit_code)
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(0)
        except Exception as exc:  # a bug in dyn: one line unless -v
            if _state["verbose"]:
                raise
            _fail(f"internal error ({type(exc).__name__}: {exc}); rerun with -v for the traceback "
                  "and please report it", 3)
        sys.exit(rv if isinstance(rv, int) else 0)


def _fail(message, code):
    click.echo(f"dyn: error: {message}", err=True)
    sys.exit(code)


def _print_version(ctx, _param, value):
    """--version: looked up only when asked (importlib.metadata costs ~15 ms of every start-up)."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("dyn")
    except PackageNotFoundError:
        found = "0+unknown"
    click.echo(f"dyn {found}")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
@click.option("-v", "--verbose", count=True, help="More detail on standard error; tracebacks on errors.")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on standard error (no warnings, no notices).")
@click.pass_context
def dyn(ctx, verbose, quiet):
    """Rigid-body dynamics of URDF robots.

    \b
    Examples:
      dyn info robots/arm6.urdf
      dyn simulate robots/arm6.urdf --steps 1000 -o traj.csv
      dyn inverse robots/arm6.urdf traj.csv -o tau.csv
    """
    _state["verbose"] = verbose
    ctx.obj = {"verbose": verbose, "quiet": quiet}
    _show_cache_warnings(quiet)


def _show_cache_warnings(quiet):
    """The kernel cache's warnings (dynlib.compiled.CacheWarning: a cache that cannot be
    written, a damaged cache file) as one `dyn: warning:` line each, none with -q."""
    import warnings

    from dynlib.compiled import CacheWarning

    warnings.filterwarnings("ignore" if quiet else "always", category=CacheWarning)
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, CacheWarning):
            click.echo(f"dyn: warning: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


if __name__ == "__main__":  # pragma: no cover
    dyn()
