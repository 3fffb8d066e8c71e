"""`scalearena paper`: run the reproduction from scratch and write the comparison page."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from scalearena.paper.doc import write
from scalearena.paper.plans import paper_plans
from scalearena.paper.results import index_results


@click.command()
@click.option("--out", type=click.Path(file_okay=False), default="results/paper-repro", show_default=True)
@click.option("--seeds", type=int, default=5, show_default=True, help="Seeds per point (1..N).")
@click.option("--sensitivity/--no-sensitivity", default=True, show_default=True)
@click.option("--hetero/--no-hetero", default=True, show_default=True, help="Heterogeneous pool vs oracle.")
@click.option("--doc", type=click.Path(dir_okay=False), default="docs/paper-reproduction.md", show_default=True)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a field in every scenario.")
@click.option("--jobs", type=int, default=None, help="Parallel runs; default all cores.")
@click.option("--analyse-only", is_flag=True, help="Skip the runs; rewrite the page from existing results.")
@click.option("--report/--no-report", default=True, show_default=True, help="Write the HTML suite report.")
@click.option("--executor", "executor_kind", type=click.Choice(("local", "ray")), default="local", show_default=True,
              help="Where runs execute: this machine's cores, or Ray tasks (pip install 'scalearena[ray]').")
@click.option("--address", default=None, help="With --executor ray: the cluster address; default a local Ray.")
def paper(out: str, seeds: int, sensitivity: bool, hetero: bool, doc: str, overrides: tuple[str, ...],
          jobs: int | None, analyse_only: bool, report: bool, executor_kind: str, address: str | None) -> None:
    """Reproduce the WVA paper: run its experiments over several seeds and write docs/paper-reproduction.md."""
    from scalearena.harness.cli.main import _executor, _jobs, _run_all

    out_dir = Path(out)
    code = 0
    if not analyse_only:
        plans = paper_plans(list(range(1, seeds + 1)), sensitivity, hetero, list(overrides))
        ex = _executor(executor_kind, "sim", _jobs(jobs, "sim"), address)
        code = _run_all(plans, out_dir, "sim", _jobs(jobs, "sim"), "paper-repro", None, report, executor=ex)
    meta = json.loads((out_dir / "suite.json").read_text()) if (out_dir / "suite.json").exists() else {}
    meta["out"] = str(out_dir)
    path = write(index_results(out_dir), meta, Path(doc))
    click.echo(f"wrote {path}")
    sys.exit(code)
