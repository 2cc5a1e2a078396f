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
    from dynlib.files.output import atomic_output
    from dynlib.runs.scenario.reference import json_text, markdown

    text = json_text() if fmt == "json" else markdown()
    if output in (None, "-"):
        click.echo(text, nl=False)
        return
    with atomic_output(output) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
