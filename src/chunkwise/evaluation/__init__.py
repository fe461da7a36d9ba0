"""Measure retrieval, don't guess: evaluate chunking strategies on queries with known answers.

- :mod:`.datasets`: Chroma's chunking-evaluation layout and the neutral ``docs/`` + ``queries.jsonl`` layout;
- :mod:`.metrics`: Chroma's span metrics (exact, and a corrected set variant), recall@k, nDCG, MRR, bootstrap;
- :mod:`.boundaries`: Pk and WindowDiff against gold segment boundaries;
- :mod:`.spec`: what one run is (:class:`RunSpec`) and how ``--run``/``--config`` describe it;
- :mod:`.runner`: chunk, embed (memoised + persistent cache), exact retrieval (in-memory store), scoring;
- :mod:`.results`: what a run and an evaluation measured, as objects and JSON;
- :mod:`.tune`: grid search writing the best ``--config`` file;
- :mod:`.report`: terminal table, JSON, self-contained HTML.
"""

from .datasets import Dataset, Query, Reference, load_dataset
from .runner import EvaluationReport, Evaluator, RunResult, RunSpec, evaluate, parse_run_spec
from .tune import parse_grid, tune

__all__ = [
    "Dataset",
    "Query",
    "Reference",
    "load_dataset",
    "Evaluator",
    "EvaluationReport",
    "RunResult",
    "RunSpec",
    "evaluate",
    "parse_run_spec",
    "parse_grid",
    "tune",
]
