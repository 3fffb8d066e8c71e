"""``scalearena tune``: search an autoscaler's parameters on the simulator with Optuna.

space.py (what is searched), objectives.py (what is optimised), trials.py (one trial: its runs over
seeds, averaged), study.py (the Optuna study: storage, sampler, batches), outputs.py (trials and Pareto
front as parquet, the best configuration as a scenario snippet), cli.py (the command).
"""
