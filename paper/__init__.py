"""Reproducing the WVA paper: run its experiments, check its claims, write the comparison.

``plans`` builds the runs (the paper suite over several seeds, sensitivity
sweeps, the heterogeneous pool); ``stats`` has the small statistics used;
``claims`` reads the result folders and evaluates each claim of the paper;
``doc`` renders docs/paper-reproduction.md from those evaluations — no
hand-typed result numbers anywhere.
"""
