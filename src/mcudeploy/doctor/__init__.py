"""``mcudeploy doctor``: known failures explained - symptom -> cause -> fix -> the command that checks it.

The knowledge is data (:file:`knowledge.toml`, loaded by :mod:`.knowledge`); :mod:`.diagnose`
matches a text against it, :mod:`.evidence` reads what the user points at (a log file, a
recorded run, a pasted message), :mod:`.render` prints the result.
"""
from .diagnose import Diagnosis, diagnose
from .evidence import Evidence, gather
from .knowledge import Entry, load_knowledge

__all__ = ["Diagnosis", "Entry", "Evidence", "diagnose", "gather", "load_knowledge"]
