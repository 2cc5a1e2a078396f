"""`dyn schema`: the scenario format's JSON Schema (for editors), or its reference page."""
import click


@click.command(epilog="""\b
Examples:
  dyn schema -o dyn-scenario.schema.json
  dyn schema --format markdown | head -20""")
@click.option("--format", "fmt", type=click.Choice(["json", "markdown"]), default="json", show_default=True,
              help="json: the JSON Schema (draft 2020-12); markdown: the reference page (docs/scenarios.md).")
@click.option("-o", "--output", metavar="FILE", default=None, help="Write to FILE instead of standard output.")
def schema(fmt, output):
    """Print the JSON Schema of scenario files (every key, type, default and meaning).

    Editors with a YAML language server complete and check scenarios from it:
    see docs/scenarios.md.
    """
    import os

    from dynlib.errors import InputError
    from dynlib.files.output import atomic_output
    from dynlib.runs.scenario.reference import json_text, markdown, written_by_schema

    from .common import check_outputs

    check_outputs((output, "schema" if fmt == "json" else "reference", "-o/--output"))
    if output not in (None, "-") and os.path.isfile(output) and not os.path.islink(output) \
            and os.stat(output).st_size and not written_by_schema(output, fmt):
        raise InputError(f"-o/--output {output}: exists and is not a file dyn schema wrote; dyn schema "
                         "replaces only its own (choose another file name, or remove it)")
    text = json_text() if fmt == "json" else markdown()
    if output in (None, "-"):
        click.echo(text, nl=False)
        return
    with atomic_output(output) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
