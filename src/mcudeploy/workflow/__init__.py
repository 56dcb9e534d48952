"""The staged deployment workflow (issue 13): a project file and one command that runs every
stage a deployment guide asks for, recording each as a run.

    project = load_project("mcudeploy.toml")          # .project: the checked project file
    outcome = run_deploy(project)                     # .runner: analyze -> ... -> report

Modules: :mod:`.project_keys` (the file's keys, data), :mod:`.project` (checking it),
:mod:`.project_template` (the commented file ``mcudeploy init`` writes), :mod:`.records`
(stage order and results), :mod:`.context` (what the stages share), :mod:`.ladder` (the
optimisation steps of the search stage), :mod:`.stages_model` / :mod:`.stages_code` (the
stages), :mod:`.summary` (the results-table row, the report stage), :mod:`.stage_runs` (one
recorded run per stage), :mod:`.runner` (the order, resume, fallback); its progress bars are
:mod:`mcudeploy.progress`'s.
This stage comes after ``report`` in the pipeline order: it may import every stage before it.
"""
from .project import PROJECT_FILE, Project, load_project, parse_project
from .records import STAGES, StageResult
from .runner import DeployOutcome, run_deploy

__all__ = ["DeployOutcome", "PROJECT_FILE", "Project", "STAGES", "StageResult", "load_project", "parse_project",
           "run_deploy"]
