"""pytest glue for the model in the loop: options, ini keys, the ``sqleval_predictor`` and ``sqleval_prediction``
fixtures, the per-process runtime (thread pool, look-ahead, response cache) and saving predictions.

Precedence of a case's prediction: a predictions file (``--sqleval-predictions`` or the suite's
``predictions:``) > a model (``--sqleval-model``/ini/suite ``model:``, ``--sqleval-predictor``, or a
``sqleval_predictor`` fixture overridden in conftest.py) > the suite's ``predicted:``.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import pytest

from .options import OptionGroup, number_ini, refuse_empty_options

RUNTIME_KEY = pytest.StashKey["ModelRuntime"]()
SAVED_KEY = pytest.StashKey[str]()
CACHE_MODES = ("use", "refresh", "off", "only")


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a price per 1000 tokens, not {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number, 0 or more, not {text}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    from .options import positive_float, positive_int  # lazy argparse types: settings load only when used

    group = OptionGroup(parser, "sqleval-model", "text-to-SQL evaluation: the model in the loop (pytest-sqleval)")
    group.addoption("--sqleval-model", metavar="NAME", default=None,
                    help="predict with this model through an OpenAI-compatible endpoint (overrides a suite's `model:` name).")
    group.addoption("--sqleval-model-url", metavar="URL", default=None,
                    help="the endpoint's base URL, e.g. http://localhost:8000/v1 (default $OPENAI_BASE_URL, else OpenAI).")
    group.addoption("--sqleval-model-key-env", metavar="VAR", default=None,
                    help="the environment variable holding the API key (default OPENAI_API_KEY).")
    group.addoption("--sqleval-model-concurrency", metavar="N", type=positive_int, default=None,
                    help="model calls at once per process (default 4; each xdist worker has its own).")
    group.addoption("--sqleval-model-timeout", metavar="SECONDS", type=positive_float, default=None,
                    help="timeout of one model request (default 60).")
    group.addoption("--sqleval-model-retries", metavar="N", type=_non_negative_int, default=None,
                    help="retries on 429/5xx/timeouts, with exponential backoff and jitter, honouring Retry-After (default 2).")
    group.addoption("--sqleval-price-per-1k-input", metavar="PRICE", type=_price, default=None,
                    help="price of 1000 prompt tokens, for the cost line.")
    group.addoption("--sqleval-price-per-1k-output", metavar="PRICE", type=_price, default=None,
                    help="price of 1000 completion tokens, for the cost line.")
    group.addoption("--sqleval-price-per-1k-cached-input", metavar="PRICE", type=_price, default=None,
                    help="price of 1000 prompt tokens served from the endpoint's prompt cache "
                         "(default: the input price).")
    group.addoption("--sqleval-predictor", metavar="MODULE:FUNCTION", default=None,
                    help="predict with your own function, called with each case (question, schema, dialect, history, ...).")
    group.addoption("--sqleval-prompt", metavar="FILE", default=None,
                    help="a Jinja2 prompt template (overrides the suites' `prompt:`).")
    group.addoption("--sqleval-cache", metavar="DIR", default=None,
                    help="the response cache directory (default .sqleval_cache in the rootdir).")
    group.addoption("--sqleval-cache-mode", choices=CACHE_MODES, default=None,
                    help="use (default): read and write; refresh: call again and overwrite; off; "
                         "only: never call, an uncached request is a model_error.")
    group.addoption("--sqleval-save-predictions", metavar="PATH", default=None,
                    help="write the model's predictions as JSON Lines, readable by --sqleval-predictions.")
    for name, text in (
        ("sqleval_model", "default for --sqleval-model."),
        ("sqleval_model_url", "default for --sqleval-model-url."),
        ("sqleval_model_key_env", "default for --sqleval-model-key-env."),
        ("sqleval_model_concurrency", "default for --sqleval-model-concurrency."),
        ("sqleval_model_timeout", "default for --sqleval-model-timeout."),
        ("sqleval_model_retries", "default for --sqleval-model-retries."),
        ("sqleval_price_per_1k_input", "default for --sqleval-price-per-1k-input."),
        ("sqleval_price_per_1k_output", "default for --sqleval-price-per-1k-output."),
        ("sqleval_price_per_1k_cached_input", "default for --sqleval-price-per-1k-cached-input."),
        ("sqleval_predictor", "default for --sqleval-predictor."),
        ("sqleval_prompt", "default for --sqleval-prompt."),
        ("sqleval_cache", "default for --sqleval-cache."),
        ("sqleval_cache_mode", "default for --sqleval-cache-mode."),
        ("sqleval_save_predictions", "default for --sqleval-save-predictions."),
    ):
        numeric = name.startswith(("sqleval_model_concurrency", "sqleval_model_timeout", "sqleval_model_retries",
                                   "sqleval_price_"))
        parser.addini(name, **(number_ini() if numeric else {}), help=text)


# --------------------------------------------------------------------------- settings
#: The text options whose explicit empty value (`--sqleval-predictor "$UNSET"`) would read as the option left out:
#: the suites' own predictions scored instead of the model the user meant to evaluate.
_TEXT_OPTIONS = dict.fromkeys(("sqleval_model", "sqleval_model_url", "sqleval_model_key_env", "sqleval_predictor",
                               "sqleval_prompt", "sqleval_cache", "sqleval_cache_mode", "sqleval_save_predictions"),
                              "a value")


def resolve_model_settings(config: pytest.Config):
    """Command line > ini for the run-wide settings (a suite's `model:` sits between, per field)."""
    from .model.config import DEFAULT_CONCURRENCY, ModelConfig, read_prompt_file
    from .model.runtime import ModelSettings
    from .settings import positive_float, positive_int

    def ini(name: str):
        value = config.getini(name)
        return value.strip() if isinstance(value, str) and value.strip() else None

    def ini_number(name: str, parse):
        value = config.getini(name)  # a number in a native TOML config (options.number_ini), else text
        value = str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else ini(name)
        if value is None:
            return None
        try:
            return parse(value)
        except argparse.ArgumentTypeError as exc:
            raise pytest.UsageError(f"ini option {name}: {exc}") from None

    option = config.option
    refuse_empty_options(option, _TEXT_OPTIONS)
    cli = ModelConfig(
        name=option.sqleval_model, url=option.sqleval_model_url, key_env=option.sqleval_model_key_env,
        timeout=option.sqleval_model_timeout, retries=option.sqleval_model_retries,
        price_per_1k_input=option.sqleval_price_per_1k_input, price_per_1k_output=option.sqleval_price_per_1k_output,
        price_per_1k_cached_input=option.sqleval_price_per_1k_cached_input,
    )
    from_ini = ModelConfig(
        name=ini("sqleval_model"), url=ini("sqleval_model_url"), key_env=ini("sqleval_model_key_env"),
        timeout=ini_number("sqleval_model_timeout", positive_float),
        retries=ini_number("sqleval_model_retries", _non_negative_int),
        price_per_1k_input=ini_number("sqleval_price_per_1k_input", _price),
        price_per_1k_output=ini_number("sqleval_price_per_1k_output", _price),
        price_per_1k_cached_input=ini_number("sqleval_price_per_1k_cached_input", _price),
    )
    # the command line's variable wins everywhere: unset, no call can work. The ini's may be overridden by a suite's
    # `key_env:` (or is unused by a predictor): the client says so, once, if a call comes to need it.
    if cli.key_env and not os.environ.get(cli.key_env):
        raise pytest.UsageError(f"--sqleval-model-key-env {cli.key_env}: the environment variable is not set; "
                                f"export {cli.key_env}=... before running pytest")
    cache_mode = option.sqleval_cache_mode or ini("sqleval_cache_mode") or "use"
    if cache_mode not in CACHE_MODES:
        raise pytest.UsageError(f"ini option sqleval_cache_mode: {cache_mode!r} is not one of {', '.join(CACHE_MODES)}")
    rootdir = Path(config.rootpath)

    def ini_path(name: str) -> str | None:  # `~` and `$VARS` expanded, as sqleval_json's (an unset one: an error)
        from .settings import SettingsError, _ini_output_path

        try:
            return _ini_output_path(ini(name), name)
        except SettingsError as exc:
            raise pytest.UsageError(str(exc)) from None

    cache_dir = os.path.expanduser(option.sqleval_cache) if option.sqleval_cache else ini_path("sqleval_cache")
    cache_path = (Path(cache_dir) if cache_dir else rootdir / ".sqleval_cache")
    if not cache_path.is_absolute():
        base = Path(config.invocation_params.dir) if option.sqleval_cache else rootdir
        cache_path = base / cache_path
    prompt = None
    prompt_file = option.sqleval_prompt or ini_path("sqleval_prompt")
    if prompt_file:
        path = Path(prompt_file)
        if not path.is_absolute():
            path = (Path(config.invocation_params.dir) if option.sqleval_prompt else rootdir) / path
        # named as the user set it: an ini file's value is no option of the command line, and is read from the rootdir
        given = f"--sqleval-prompt {prompt_file}" if option.sqleval_prompt else f"ini option sqleval_prompt {prompt_file}"
        if not path.is_file():
            raise pytest.UsageError(f"{given}: file not found ({path})")
        from .errors import SuiteError
        from .model.prompt import PromptTemplate, TemplateProblem

        try:
            prompt = read_prompt_file(path)
            PromptTemplate(prompt)
        except SuiteError as exc:
            raise pytest.UsageError(exc.render()) from None
        except TemplateProblem as exc:
            raise pytest.UsageError(f"{given}: bad prompt template: {exc}\n  fix: {exc.fix}") from None
    save = option.sqleval_save_predictions or ini_path("sqleval_save_predictions")
    from .settings import from_invocation_dir
    return ModelSettings(
        cli=cli, ini=from_ini,
        predictor=option.sqleval_predictor or ini("sqleval_predictor"),
        prompt=prompt,
        cache_dir=cache_path,
        cache_mode=cache_mode,
        concurrency=option.sqleval_model_concurrency or ini_number("sqleval_model_concurrency", positive_int)
        or DEFAULT_CONCURRENCY,
        save_predictions=from_invocation_dir(config, save) if save else None,  # resolved now, as --junitxml's
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    from .state import STATE_KEY

    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    from .model.runtime import ModelRuntime

    settings = resolve_model_settings(config)
    worker = hasattr(config, "workerinput")
    # a worker's own `dist` option is always "no" (xdist resets it): the controller's comes in workerinput
    runtime = ModelRuntime(settings, state, worker=worker,
                           dist=config.workerinput.get("sqleval_dist") if worker else None)
    if settings.predictor:
        runtime.user_function = _load_predictor(config, settings.predictor)
    runtime.skipped = _skipped
    config.stash[RUNTIME_KEY] = runtime


def _skipped(item) -> bool:
    """Will pytest skip this item before its call (a ``skip`` mark, a true ``skipif``, ``xfail(run=False)``)?"""
    try:
        from _pytest.skipping import evaluate_skip_marks, evaluate_xfail_marks

        if evaluate_skip_marks(item) is not None:
            return True
        xfail = evaluate_xfail_marks(item)
        return xfail is not None and not xfail.run and not item.config.option.runxfail
    except Exception:  # noqa: BLE001 - a skipif condition that fails (its setup reports it), or pytest internals moved
        return False


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller: tell each worker the run's ``--dist`` mode (under ``worksteal`` a worker must not call the
    model ahead for items that may be taken back and run by another worker)."""
    node.workerinput["sqleval_dist"] = node.config.getvalue("dist")


def _load_predictor(config: pytest.Config, spec: str):
    from .model.predictors import PredictorSpecError, load_callable

    option = "--sqleval-predictor" if config.option.sqleval_predictor else "ini option sqleval_predictor"
    try:
        return load_callable(spec, search=[Path(config.invocation_params.dir), Path(config.rootpath)], option=option)
    except PredictorSpecError as exc:
        raise pytest.UsageError(f"{exc}\n  fix: give an importable module:function (the module's directory must be on "
                                "sys.path, e.g. the rootdir)") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is not None:
        runtime.close()


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        return None
    s = runtime.settings
    if s.predictor:
        who = f"predictor {s.predictor}"
    elif s.cli.name or s.ini.name:
        model = s.cli.merged_over(s.ini)
        who = f"model {model.name} at {model.endpoint}"
    else:
        return None
    return [f"sqleval model: {who}, {s.concurrency} calls at once per process, cache {s.cache_mode} ({s.cache_dir})"]


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def sqleval_predictor(request: pytest.FixtureRequest):
    """The callable that predicts SQL for a case; override it in conftest.py with your own::

        @pytest.fixture(scope="session")
        def sqleval_predictor():
            def predict(case):          # case.question, case.schema, case.dialect, case.history, case.evidence, ...
                return my_model(case.messages)   # SQL text, None, or {"sql": ..., "tokens": {...}, ...}
            return predict

    The default is ``--sqleval-predictor module:function`` when given, else the built-in OpenAI-compatible client
    for suites that name a model, else None (the suites' ``predicted:`` are scored).
    """
    runtime = request.config.stash.get(RUNTIME_KEY, None)
    if runtime is None:
        given = [f"--sqleval-{name}" for name in ("predictor", "model")
                 if request.config.getoption(f"sqleval_{name}", None)]
        if given:  # asked for on the command line, but the model runs only in a --sqleval run
            pytest.fail(f"sqleval_predictor: {given[0]} is given without --sqleval; the model runs only in a "
                        "--sqleval run: add --sqleval (plain test files run under it too)", pytrace=False)
        return None
    from .model.runtime import DefaultPredictor

    function = getattr(runtime, "user_function", None)
    return DefaultPredictor(runtime, function, runtime.settings.predictor if function is not None else None)


@pytest.fixture
def sqleval_prediction(request: pytest.FixtureRequest, sqleval_predictor):
    """The current case's prediction, resolved in the call phase (the model call may already be under way)."""
    runtime = request.config.stash.get(RUNTIME_KEY, None)
    item = request.node
    from .model.predictors import PredictionResult
    from .model.runtime import PendingPrediction

    if runtime is None or getattr(item, "case", None) is None:
        return PendingPrediction.ready(PredictionResult(getattr(item, "prediction", None), "suite"))
    return runtime.prediction_for(item, sqleval_predictor, request)


# --------------------------------------------------------------------------- saving predictions
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is not None and session.exitstatus == pytest.ExitCode.INTERRUPTED:
        runtime.interrupted = True  # Ctrl-C (or a stop): calls under way are not waited for
    if runtime is None or hasattr(config, "workerinput") or runtime.settings.save_predictions is None:
        return
    from .model.usage import save_predictions
    from .state import STATE_KEY

    state = config.stash[STATE_KEY]
    records = sorted(state.records, key=lambda r: (r["path"], r.get("index", 0)))
    path = runtime.settings.save_predictions
    if not path.is_absolute():
        path = Path(config.invocation_params.dir) / path
    from .model.usage import model_records

    if not model_records(records):  # an empty file (a collection error, no suite naming a model) would replace an
        # earlier run's predictions, and --sqleval-predictions refuses an empty file
        config.stash[SAVED_KEY] = f"no model predictions to save; {path} was not written"
        return
    try:
        count = save_predictions(path, records)
    except OSError as exc:
        config.stash[SAVED_KEY] = f"cannot write the predictions to {path}: {exc}"
        session.exitstatus = pytest.ExitCode.TESTS_FAILED if session.exitstatus == 0 else session.exitstatus
        return
    config.stash[SAVED_KEY] = f"{count} model predictions saved to {path}"


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    message = config.stash.get(SAVED_KEY, None)
    if message:
        terminalreporter.write_line(f"sqleval: {message}")
    runtime = config.stash.get(RUNTIME_KEY, None)
    if runtime is not None and runtime.fatal:
        terminalreporter.write_line(f"sqleval: the session stopped: {runtime.fatal}", red=True, bold=True)
