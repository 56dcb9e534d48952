"""Design-space sweeps: models x targets x configurations, each cell run independently on Dask.

    spec = load_sweep("sweep.toml")                      # axes, stages, metrics (:mod:`.spec`)
    result = run_sweep(spec, SweepSettings(workers=2))   # an in-process LocalCluster, or
    result = run_sweep(spec, SweepSettings(scheduler="tcp://host:8786"))   # an existing cluster
    result.rows(), result.front(), result.to_json()

A cell is one model (a file, or a generator's parameter set) on one target with one set of
options, quantization, input shapes and search objective; it runs the sweep's stages
(:mod:`.catalogue`) in its own cell process on a Dask worker, its files travel by SHA-256
(:mod:`.blobs`), a cell over its timeout is killed, a lost one retried (:mod:`.executor`),
and each result is one run in the run store, found again by its configuration hash when an
interrupted sweep resumes (:mod:`.recording`). :mod:`.pareto` and :mod:`.plot` give the
front over latency, on-chip RAM and accuracy (what was measured).
"""
from .results import CellResult, SweepResult
from .run import SweepSettings, run_sweep, sweep_cells
from .spec import SweepSpec, load_sweep

__all__ = ["CellResult", "SweepResult", "SweepSettings", "SweepSpec", "load_sweep", "run_sweep", "sweep_cells"]
