"""The ``sqleval import``, ``sqleval stats`` and ``sqleval generate`` subcommands.

Each ``add_*`` function is an adder for the registry of :mod:`pytest_sqleval.cli` (``adder(subparsers)``:
adds a parser and sets ``handler``, a function of the parsed arguments returning the exit status).
:func:`main` runs them without the rest of the console command (``python -m pytest_sqleval.datasets``).
Exit status: 0 on success, 2 for bad input (a message naming the file and the fix, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

EXIT_OK, EXIT_USAGE = 0, 2


def _fail(command: str, message: str) -> int:
    print(f"sqleval {command}: {message}", file=sys.stderr)
    return EXIT_USAGE


# --------------------------------------------------------------------------- import
def add_import(subparsers) -> None:
    from .importers import DATASETS

    parser = subparsers.add_parser(
        "import", help="convert Spider/SParC/CoSQL/BIRD/LogicCat into *.sqleval.yaml suites (one per database)",
        description="Write one *.sqleval.yaml suite per database of a public dataset (databases and tables.json "
                    "are referenced, never copied) and, with --predictions, a predictions.jsonl converted from "
                    "the official format. Suites are named by db_id (Spider, BIRD, LogicCat) or sparc/<db_id>, "
                    "cosql/<db_id> (SParC, CoSQL), so a Spider and a SParC import run together. "
                    "Run them with: pytest --sqleval DIR [--sqleval-predictions DIR/predictions.jsonl]")
    parser.add_argument("dataset", choices=DATASETS)
    parser.add_argument("src", metavar="SRC", help="the dataset folder or its questions/gold file")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="where to write the suites")
    parser.add_argument("--predictions", metavar="FILE",
                        help="official predictions: one SQL per line (a blank line ends an interaction), "
                             "or BIRD's predict_*.json")
    parser.add_argument("--tables", metavar="tables.json", help="the Spider-style schema file (default: beside SRC)")
    parser.add_argument("--databases", metavar="DIR", help="the database folder (default: beside SRC)")
    parser.add_argument("--split", default="dev", help="which split's files to look for in a folder (default dev)")
    parser.add_argument("--no-official-rewrites", dest="official_rewrites", action="store_false",
                        help="do not apply test-suite-sql-eval's text rewrites (value->1 in predictions, '> =' -> '>=', "
                             "YEAR(CURDATE()) -> 2020) to Spider/SParC/CoSQL")
    parser.set_defaults(handler=import_command)


def import_command(args: argparse.Namespace) -> int:
    from .importers import DatasetError, import_dataset

    try:
        result = import_dataset(args.dataset, args.src, args.output, predictions=args.predictions, tables=args.tables,
                                databases=args.databases, split=args.split, official_rewrites=args.official_rewrites)
    except DatasetError as exc:
        return _fail("import", str(exc))
    except OSError as exc:
        return _fail("import", f"{exc.filename or ''}: {exc.strerror or exc}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {len(result.suites)} suites ({result.cases} cases) to {args.output}")
    if result.predictions_path is not None:
        print(f"wrote {result.predictions} predictions ({result.missing_predictions} cases without one): each suite's "
              f"predictions/<db>.jsonl (its `predictions:` key) and all of them in {result.predictions_path}")
    print(f"run: pytest --sqleval {args.output}")
    return EXIT_OK


# --------------------------------------------------------------------------- stats
def add_stats(subparsers) -> None:
    parser = subparsers.add_parser(
        "stats", help="dataset statistics of suites (MRO paper 2.4: clauses, difficulty, lengths, duplicates, similarity)",
        description="Describe one or more suites: cases, distinct gold SQL, difficulty, clause usage, tables and "
                    "columns per query, SQL and question lengths, exact and near-duplicate questions, and the "
                    "semantic similarity of questions (all-MiniLM-L6-v2 with pytest-sqleval[stats], else lexical).")
    parser.add_argument("suites", nargs="+", metavar="SUITE", help="*.sqleval.yaml files or folders of them")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the statistics as JSON")
    output.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--plot", metavar="PATH", help="save a figure: nearest-neighbour similarity histogram and "
                                                       "clause-usage bars (needs pytest-sqleval[plot])")
    parser.add_argument("--similarity", choices=("auto", "semantic", "lexical"), default="auto",
                        help="auto: all-MiniLM-L6-v2 when installed, else lexical (default auto)")
    parser.add_argument("--near-duplicate", type=float, default=0.9, metavar="T",
                        help="similarity at or above which two questions are near-duplicates (default 0.9)")
    parser.set_defaults(handler=stats_command)


def stats_command(args: argparse.Namespace) -> int:
    from .stats import (
        StatsError,
        compute_stats,
        load_suites,
        plot_format,
        render_markdown,
        render_terminal,
        save_plot,
        to_json,
    )

    try:
        if args.plot:  # a path the figure cannot be written to stops the command before it prints anything
            plot_format(args.plot)
        suites = load_suites(args.suites)
        stats = compute_stats(suites, similarity=args.similarity, near_duplicate=args.near_duplicate)
        if args.json:
            print(to_json(stats))
        elif args.markdown:
            print(render_markdown(stats))
        else:
            print(render_terminal(stats))
        if args.plot:
            save_plot(stats, args.plot)
            print(f"figure written to {args.plot}", file=sys.stderr)
    except StatsError as exc:
        return _fail("stats", str(exc))
    return EXIT_OK


# --------------------------------------------------------------------------- generate
def add_generate(subparsers) -> None:
    parser = subparsers.add_parser(
        "generate", help="generate a suite for your database with an LLM, SQL first (MRO paper pipeline)",
        description="SQL first: the model writes SQL covering --mix from the schema (and sample rows); each query "
                    "runs under the guard and is kept only if it runs, returns 1..--max-result-rows rows, is "
                    "deterministic and is not a duplicate; the model then writes a question per kept query; an "
                    "optional check pass drops question/SQL disagreements. Writes the suite and a report.")
    parser.add_argument("database", metavar="DATABASE", help="a SQLite/DuckDB file or a SQLAlchemy URL")
    parser.add_argument("-o", "--output", required=True, metavar="SUITE.sqleval.yaml")
    parser.add_argument("--count", type=int, default=20, help="how many SQL queries to ask for (default 20)")
    parser.add_argument("--mix", default=None, metavar="SPEC",
                        help="clause types and difficulty classes with weights, e.g. "
                             "'join=3,group_by=2,subquery=1,easy=1,hard=2' (default: an even mix)")
    parser.add_argument("--batch", type=int, default=10, help="queries asked per request (default 10)")
    parser.add_argument("--sample-rows", type=int, default=3, help="sample rows per table in the prompt (0: none)")
    parser.add_argument("--max-result-rows", type=int, default=50, help="drop a query returning more rows (default 50)")
    parser.add_argument("--paraphrases", type=int, default=0, help="paraphrases per question (default 0)")
    parser.add_argument("--check", action="store_true", help="second pass: ask whether question and SQL agree")
    parser.add_argument("--model", help="model name (default $SQLEVAL_MODEL)")
    parser.add_argument("--model-url", help="OpenAI-compatible base URL (default $OPENAI_BASE_URL)")
    parser.add_argument("--model-key-env", help="environment variable holding the API key (default OPENAI_API_KEY)")
    parser.add_argument("--temperature", type=float, default=1.0, help="for writing SQL (default 1.0; the MRO paper used 1.5)")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="sent as the request's `seed` (with the same replies, a rerun writes the same files)")
    parser.add_argument("--cache", default=".sqleval_cache", metavar="DIR", help="response cache (default .sqleval_cache)")
    parser.add_argument("--cache-mode", default="use", choices=("use", "refresh", "off", "only"))
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per query (default 10)")
    parser.add_argument("--allow-function", action="append", metavar="NAME",
                        help="a pure function of your database the guard lets the generated SQL call (repeatable)")
    parser.add_argument("--report", metavar="PATH", help="the generation report (default: OUTPUT with .report.json)")
    parser.set_defaults(handler=generate_command)


def generate_command(args: argparse.Namespace) -> int:
    import os

    from ..errors import DatabaseError
    from .generate import GenerateError, GenerateOptions, generate_suite

    model = args.model or os.environ.get("SQLEVAL_MODEL")
    if not model:
        return _fail("generate", "no model: pass --model NAME (and --model-url URL for a local server)")
    try:
        options = GenerateOptions.from_text(
            count=args.count, mix=args.mix, batch=args.batch, sample_rows=args.sample_rows,
            max_result_rows=args.max_result_rows, paraphrases=args.paraphrases, check=args.check,
            temperature=args.temperature, timeout=args.timeout, seed=args.seed,
            allow_functions=tuple(args.allow_function or ()))
        report = generate_suite(args.database, args.output, options=options, model=model, url=args.model_url,
                                key_env=args.model_key_env, cache_dir=args.cache, cache_mode=args.cache_mode,
                                report_path=args.report)
    except GenerateError as exc:
        return _fail("generate", str(exc))
    except DatabaseError as exc:  # the database failed under the pipeline (e.g. in a query process)
        return _fail("generate", str(exc))
    except OSError as exc:  # the suite or the report cannot be written there
        return _fail("generate", f"cannot write {exc.filename or args.output}: {exc.strerror or exc}")
    print(report.summary())
    return EXIT_OK


# --------------------------------------------------------------------------- standalone entry
ADDERS = {"import": add_import, "stats": add_stats, "generate": add_generate}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sqleval", description="pytest-sqleval datasets: import, stats, generate.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for adder in ADDERS.values():
        adder(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


def run_console(entry: Callable[[], int]) -> None:
    """Exit with ``entry()``'s status (the ``sqleval`` console script, ``python -m pytest_sqleval.datasets``). Output
    piped to a reader that left (``sqleval stats --json | head``) ends the command without a traceback (Python's
    signal module documentation)."""
    import os

    try:
        status = entry()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the flush at exit cannot fail again
        status = 1
    sys.exit(status)


if __name__ == "__main__":  # pragma: no cover
    run_console(main)
