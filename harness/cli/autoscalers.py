"""``scalearena autoscalers [NAME]``: the registered autoscalers, or every parameter of one.

Kept apart from cli.py: a recipe's placeholders, a legacy autoscaler's reason and the tunable ranges make it the
one listing that grows with the registry.
"""
from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text


@click.command("autoscalers")
@click.argument("name", required=False)
def autoscalers(name: str | None) -> None:
    """List the bundled autoscalers, or every parameter of one (NAME): default, unit, meaning."""
    from scalearena.controllers.llmd import RECIPES
    from scalearena.controllers.registry import REGISTRY
    from scalearena.harness.config.schema_help import params, source_line

    console = Console()
    if name is None:
        table = Table("name", "what it is", "parameters", show_lines=True)
        for e in REGISTRY.entries():
            names = dict.fromkeys(p.path.split(".")[0] for p in params(e.config))
            table.add_row(e.name + (" (legacy)" if e.legacy else ""), e.summary, Text(", ".join(names), overflow="fold"))
        console.print(table)
        for e in REGISTRY.entries():
            if e.legacy:
                console.print(f"{e.name} is legacy: {e.legacy}.", highlight=False)
        console.print("Details of one, with defaults and units: scalearena autoscalers NAME", highlight=False)
        return
    entry = REGISTRY.get(name)
    console.print(Text.assemble((entry.name, "bold"), f": {entry.summary}"))
    upstream = RECIPES[entry.name].source if entry.name in RECIPES else source_line(entry.policy)
    console.print(Text(f"upstream: {upstream}"))
    if entry.legacy:
        console.print(Text(f"legacy: {entry.legacy}"))
    if entry.name in RECIPES:  # a recipe is its objects: what to set is the placeholders
        r = RECIPES[entry.name]
        table = Table("env placeholder", "default", "tune range", "meaning", show_lines=False)
        for var, t in r.tunables.items():
            table.add_row(var, t.default, f"{t.low:g} .. {t.high:g}" + (" (log)" if t.log else ""), t.meaning)
        console.print(table)
        console.print(f"objects: manifests/autoscalers/llm-d/{', '.join(r.files)}; reads {', '.join(r.needs)}; the "
                      "cluster's placeholders (namespace, model, target, bounds, SLOs, peak prefill throughput) come "
                      "from the scenario (docs/autoscalers.md)", highlight=False)
        return
    tunables = {t.path: t for t in REGISTRY.default_config(name).tunables()} if entry.runs_on_defaults else {}
    ranges = {path: t.describe() for path, t in tunables.items()}
    table = Table("parameter", "default", "unit", "meaning", show_lines=False)

    def tuned(path: str) -> str:
        return f"; tune {ranges.pop(path)}" if path in ranges else ""

    for p in params(entry.config):
        table.add_row(Text(p.path, overflow="fold"), Text(p.default, overflow="fold"), p.unit,
                      Text(f"{p.description} ({p.type}{tuned(p.path)})", overflow="fold"))
    for path, t in tunables.items():  # tunables inside lists (an HPA metric's target)
        if path in ranges:
            table.add_row(Text(path, overflow="fold"), Text(str(t.default)), "",
                          Text(f"{t.description} ({t.kind}{tuned(path)})", overflow="fold"))
    console.print(table)
    console.print("tune: the range `scalearena tune` searches by default (--param NAME=LOW:HIGH changes it)",
                  highlight=False)
