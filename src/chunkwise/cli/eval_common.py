"""What ``chunkwise eval`` and ``chunkwise tune`` (both its grid and its budgeted search) share between
parsing the flags and running: the dataset they name, the embedder and the evaluator, the run specs the
flags describe (``--run``, the shared chunking flags, the fusion flags), progress lines, and writing files."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import ConfigError
from ..validation import Interval, check_flag
from .options import input_options

#: the settings of how hybrid retrieval fuses: a tune point carries those of its run's fusion only
FUSION_SETTINGS = ("hybrid", "fusion", "rrf_k", "dense_weight")


def _progress(args):
    if getattr(args, "quiet", False):
        return None
    return lambda msg: print(f"chunkwise: {msg}", file=sys.stderr, flush=True)


def _dataset(args):
    from ..evaluation.datasets import load_dataset

    ds = load_dataset(args.dataset, **input_options(args))
    if args.docs or args.limit is not None:
        docs = [d.strip() for d in args.docs.split(",") if d.strip()] if args.docs else None
        check_flag(args.limit, "--limit", [Interval(int, 1, None), None])
        ds = ds.subset(docs, args.limit)
    if ds.problems and not getattr(args, "quiet", False):
        print(
            f"chunkwise: {args.dataset}: skipped {ds.skipped_references} reference(s) and "
            f"{ds.skipped_queries} query(ies):",
            file=sys.stderr,
        )
        for line in ds.problems[:20]:
            print(f"  {line}", file=sys.stderr)
        if len(ds.problems) > 20:
            print(f"  ... and {len(ds.problems) - 20} more (all listed in --format json / the report)", file=sys.stderr)
    return ds


def _embedder(args):
    from ..embeddings import embedder_from_args

    kw = {}
    if args.embed_window is not None:  # the old flag: positions, [CLS]/[SEP] included, minilm only
        name = getattr(args, "embedder", None) or "minilm"
        if name != "minilm":
            raise ConfigError(f"--embed-window applies to the minilm embedder only, not {name!r}")
        if args.model_window is not None:
            raise ConfigError("give --model-window only (--embed-window is its old name)")
        check_flag(args.embed_window, "--embed-window", Interval(int, 3, 512))
        kw["model_window"] = args.embed_window - 2
    if args.model_window is not None:
        kw["model_window"] = args.model_window
    return embedder_from_args(args, **kw)


def _evaluator(args, ds, k=None):
    from ..evaluation.runner import Evaluator

    embedder = _embedder(args)
    llm = None
    if getattr(args, "answers", False):
        from .answers import llm_from_args

        llm = llm_from_args(args, embedder=embedder, stream=False)
    elif getattr(args, "llm_base_url", None) or getattr(args, "llm_model", None):
        raise ConfigError("--llm-base-url and --llm-model need --answers")
    _check_languages(ds, embedder)
    return Evaluator(
        ds,
        embedder,
        k=k or args.k,
        count_tokenizer=args.count_tokenizer,
        n_boot=args.bootstrap,
        seed=args.seed,
        progress=_progress(args),
        answer_llm=llm,
    )


def _check_languages(ds, embedder) -> None:
    """One warning when the corpus looks like a language the embedder does not read (chunkwise.embeddings.
    language); a warning, not a progress line, so it is printed with -q too."""
    from ..embeddings.language import LanguageCheck

    check = LanguageCheck(embedder)
    if check.active:
        for doc in ds.documents.values():
            check.add(doc.text)
        check.warn()


def _shared_flags_given(args) -> bool:
    return any(
        getattr(args, f, None) not in (None, [])
        for f in ("strategy", "config", "max_tokens", "min_tokens", "overlap", "tokenizer", "respect_sections", "param")
    )


def _config_file(path: str):
    """Strategy, params and run options of a ``--config`` JSON file (which must name a strategy)."""
    from .options import load_config

    name, params, run = load_config(path)
    if not name:
        raise ConfigError('the configuration names no "strategy"', source=path)
    return name, params, run


def _shared_spec(args):
    from ..evaluation.spec import spec_from_params
    from .options import strategy_params_from_args

    flag_settings(args)  # a contradiction or a bad value: one line before any work
    run = _config_file(args.config)[2] if args.config else {}
    name, params = strategy_params_from_args(args)
    return spec_from_params(name, params, run=run)


def _specs(args):
    from ..evaluation.spec import parse_run_spec, spec_from_params

    given = flag_settings(args)
    specs = []
    if not args.runs or _shared_flags_given(args):
        shared = _shared_spec(args)
        apply_flag_settings(shared, given, override=True)  # flags override --config, as for search and tune
        specs.append(shared)
    for text in args.runs:
        label, sep, path = text.partition("=")
        if not sep or ":" in label:  # no LABEL= prefix (a spec's own key=value lies after its ':')
            label, path = "", text
        if path.strip().endswith(".json"):  # FILE.json or LABEL=FILE.json, read like --config
            name, params, run = _config_file(path.strip())
            specs.append(spec_from_params(name, params, label=label.strip() or Path(path.strip()).stem, run=run))
        else:
            specs.append(parse_run_spec(text))
    for s in specs:
        apply_flag_settings(s, given)
        if getattr(args, "expand", None) and not s.expand:
            s.expand = s.with_settings(expand=args.expand).expand  # checked: one line on a bad mode
    return specs


def flag_settings(args) -> dict:
    """The settings of ``Index.add`` and ``Index.search`` given as flags, each checked by its declaration
    (``{}`` when none)."""
    from ..pipeline.config import SETTINGS, PipelineConfig
    from .options import settings_given

    checked = {name: SETTINGS[name].check(name, v) for name, v in settings_given(args, "index", "search").items()}
    given = {name: v for name, v in checked.items() if v is not None}
    PipelineConfig().with_settings(flags=True, **given)  # flags that contradict each other, named as flags
    return given


def apply_flag_settings(spec, given: dict, override: bool = False) -> None:
    """The flags ``given`` apply to a run that leaves the same setting at its default (a run's own value,
    from ``--run`` or a configuration file, stands); with ``override``, to every setting they name
    (``eval``'s and ``tune``'s ``--config`` is a starting point that flags change, as for ``search``)."""
    from ..pipeline.config import SETTINGS

    for name, value in given.items():
        if override or getattr(spec, name) == SETTINGS[name].default:
            setattr(spec, name, value)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write ({exc.strerror})", source=path) from None


def _print_leaderboard(result, k: int, top: int) -> None:
    """The first ``top`` rows of a tune result's leaderboard, and how many more there are; ``tune``'s grid and
    its budgeted search print it alike."""
    from ..evaluation.report import format_leaderboard

    lines = format_leaderboard(result, k).splitlines()
    print("\n".join(lines[: 2 + top]))
    if len(lines) > 2 + top:
        print(f"... {len(lines) - 2 - top} more")


def print_question_set(result) -> None:
    """How hard the question set was: one line, a warning on stderr when it is saturated (the warning
    carries the figures), else on stdout."""
    if result.saturation is None:
        return
    warning = result.saturation.warning()
    if warning:
        print(f"chunkwise: {warning}", file=sys.stderr)
    else:
        print(result.saturation.line())


def _finish_tune(args, result, evaluator, metric: str, summary: str, use: tuple[str, str]):
    """What ``tune``'s grid and its budgeted search print and write alike once the result is in: the
    leaderboard, ``summary``, the question set, the chosen configuration written to ``--output`` (``use``:
    the command that reads it besides ``eval``, and what it reads). Returns the chosen row."""
    import json

    from ..evaluation.report import fmt
    from ..evaluation.tune import write_config

    _print_leaderboard(result, evaluator.k, args.top)
    print(summary)
    print_question_set(result)
    config = result.best_config(dataset=str(args.dataset), embedder=evaluator.embedder.model_id)
    chosen = result.chosen
    assert chosen is not None and chosen.score is not None  # best_config raised otherwise
    write_config(args.output, config)
    if result.decision is not None:
        print(result.decision.summary(metric))
    print(
        f"wrote ({metric} = {fmt(metric, chosen.score)}): {json.dumps({k: config[k] for k in config if k != 'tuned'})}"
    )
    print(
        f"wrote {args.output}; use it with: chunkwise {use[0]} --config {args.output} {use[1]} / chunkwise eval "
        f"{args.dataset} --config {args.output}"
    )
    return chosen
