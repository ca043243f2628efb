"""Fourth look at reporting, the deploy gate and the model loop's usage: a tag holding "|" as a filter of the HTML
report, merge and baseline warnings in the HTML, a baseline written with a byte-order mark (or gzipped), and
cached prompt tokens priced on their own (against a real chat-completions server on 127.0.0.1)."""

from __future__ import annotations

import gzip
import html
import io
import json
import re
import textwrap
import zipfile

import pytest

from chat_server import ChatServer, chat_fixture
from ci_support import full_report
from conftest import make_sqlite, require_module
from deploygate_support import make_deployed_project, make_project, run_report
from pytest_sqleval.cli import main
from pytest_sqleval.model.config import ModelConfig
from pytest_sqleval.report.html import render_html
from test_html import browse, chromium, parse  # noqa: F401 - chromium is the module's fixture

BOM = b"\xef\xbb\xbf"


# --------------------------------------------------------------------------- 1. any tag text is a filter
PROBE = """<script>
function pick(value, name) {
  var el = document.querySelector('#filters [data-filter="' + (name || "tag") + '"]');
  el.value = value;
  el.dispatchEvent(new Event("change"));
  var shown = Array.prototype.filter.call(document.querySelectorAll("#cases tr.case"),
    function (tr) { return !tr.classList.contains("hidden"); }).map(function (tr) { return tr.cells[1].textContent; });
  return [el.value === value, shown.join(",")];
}
var seen = {};
Array.prototype.forEach.call(document.querySelectorAll('#filters [data-filter="tag"] option'), function (o) {
  if (o.value) { seen[o.value] = pick(o.value); }
});
pick("");
seen["suite Shop"] = pick("Shop", "suite"); seen["suite shop"] = pick("shop", "suite"); pick("", "suite");
document.body.setAttribute("data-probe", JSON.stringify(seen));
</script></body>"""


def test_a_tag_holding_a_pipe_or_any_other_text_is_a_working_filter(chromium, tmp_path):  # noqa: F811
    """The rows carried their tags joined with "|" and the filter split on it: the tag `a|b` matched no row, the tag
    `a` also matched the row tagged `a|b`; the options' values were their text, whitespace collapsed (`two  spaces`
    matched nothing), and a tag was lower-cased (`Joins` matched the row tagged `joins`; suites `Shop` and `shop`
    alike)."""
    report = full_report()
    tags = {"a-pass": ["a|b", "Joins"], "b-pass": ["a"], "c-regressed": ["joins", "two  spaces"],
            "d-syntax": ['say "hi", <b>&</b>'], "e-new": ["b", " lead"]}
    for case in report["cases"]:
        case["tags"] = tags.get(case["id"], [])
    report["suites"][1]["name"] = report["cases"][-1]["suite"] = "Shop"  # two suites whose names differ in case
    page = tmp_path / "tags.html"
    page.write_text(render_html(report).replace("</body>", PROBE), encoding="utf-8")
    dumped = browse(chromium, page, tmp_path, "--dump-dom")
    probe = re.search(r'data-probe="([^"]*)"', dumped.stdout)
    assert probe, dumped.stderr[-2000:]
    seen = json.loads(html.unescape(probe.group(1)))
    assert seen == {
        "a|b": [True, "a-pass"],
        "a": [True, "b-pass"],
        "b": [True, "e-new"],
        "Joins": [True, "a-pass"],
        "joins": [True, "c-regressed"],
        "two  spaces": [True, "c-regressed"],
        'say "hi", <b>&</b>': [True, "d-syntax"],
        " lead": [True, "e-new"],
        "suite Shop": [True, "f-other"],
        "suite shop": [True, "a-pass,b-pass,c-regressed,d-syntax,e-new"],
    }
    assert json.loads(parse(dumped.stdout).status["data-errors"]) == []


# --------------------------------------------------------------------------- 2. merge warnings in the HTML
def html_warnings(text: str) -> list[str]:
    block = re.search(r'<div class="warnings" id="warnings">(.*?)</div>\n', text, re.S)
    if not block:
        return []
    return [html.unescape(re.sub(r"<[^>]+>", "", w)).strip() for w in re.findall(r"<div>⚠ (.*?)</div>", block.group(1))]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return make_deployed_project(pytester)


def test_the_html_of_a_merged_report_shows_the_warnings_the_gate_prints(project, capsys):
    """`sqleval merge` of shards 1/3 and 3/3 warned on the terminal, in `sqleval gate` and in the Markdown that
    shard 2/3 is missing; the HTML of the merged report said nothing."""
    run_report(project, "s1.json", "--sqleval-shard=1/3")
    run_report(project, "s3.json", "--sqleval-shard=3/3")
    merged, page, md = (str(project.path / n) for n in ("m.json", "m.html", "m.md"))
    assert main(["merge", str(project.path / "s1.json"), str(project.path / "s3.json"), "-o", merged]) == 0
    capsys.readouterr()
    main(["gate", merged])
    gate_warnings = [line.removeprefix("warning: ") for line in capsys.readouterr().err.splitlines()
                     if line.startswith("warning: ")]
    assert any("shard(s) 2/3 missing" in w for w in gate_warnings)
    assert main(["report", merged, "--html", page, "--markdown", md]) == 0
    shown = html_warnings((project.path / "m.html").read_text(encoding="utf-8"))
    assert shown == gate_warnings


def test_the_html_of_a_run_against_a_shards_baseline_shows_that_warning_once(project):
    """A run compared with one shard's report: the baseline warning (its other shards' cases count as new) is in
    the HTML, beside the run's other warnings, each once."""
    run_report(project, "s1.json", "--sqleval-shard=1/3", predictions="deployed.jsonl")
    result, report = run_report(project, "cand.json", "--sqleval-baseline=s1.json",
                                f"--sqleval-html={project.path / 'cand.html'}")
    shown = html_warnings((project.path / "cand.html").read_text(encoding="utf-8"))
    assert report["baseline"]["warnings"] and shown == report["baseline"]["warnings"]
    assert any("the baseline is shard 1/3 of its run" in w for w in shown)


def test_merge_warnings_are_shown_without_a_baseline_and_escaped():
    report = full_report()
    report.pop("baseline")
    report["run"] = {"merge_warnings": ["shard(s) 2/3 missing: <b>partial</b>"]}
    text = render_html(report)
    assert html_warnings(text) == ["shard(s) 2/3 missing: <b>partial</b>"]  # shown as text, not markup
    assert "<b>partial</b>" not in text


# --------------------------------------------------------------------------- 3. a baseline with a byte-order mark
def rewritten(project, name: str, data: bytes) -> str:
    (project.path / name).write_bytes(data)
    return name


def test_a_baseline_written_with_a_byte_order_mark_is_compared(project, capsys):
    """Windows tools (PowerShell's Out-File -Encoding utf8, Notepad) write UTF-8 with a BOM: `--sqleval-baseline`,
    `sqleval gate --baseline` and `sqleval report` refused it ("not valid JSON: Unexpected UTF-8 BOM")."""
    plain = (project.path / "deployed.json").read_bytes()
    _, expected = run_report(project, "cand-plain.json", "--sqleval-baseline=deployed.json")
    variants = {
        "bom.json": BOM + plain,
        "bom.json.gz": gzip.compress(BOM + plain, mtime=0),
        "crlf-bom.json": BOM + plain.replace(b"\n", b"\r\n"),
        "utf16.json": plain.decode("utf-8").encode("utf-16"),  # PowerShell 5's `>`: UTF-16 with its BOM
    }
    for name, data in variants.items():
        rewritten(project, name, data)
        result, report = run_report(project, "cand.json", f"--sqleval-baseline={name}")
        assert report is not None, (name, result.stderr.str())
        assert report["baseline"]["overall"] == expected["baseline"]["overall"], name
        assert report["gates"] == expected["gates"], name
        capsys.readouterr()
        assert main(["gate", str(project.path / "cand-plain.json"), "--baseline", str(project.path / name),
                     "--max-regressed=100"]) == 0, (name, capsys.readouterr())
        assert main(["report", str(project.path / name), "--markdown", str(project.path / "out.md")]) == 0, name


@pytest.mark.parametrize("data, message", [
    (BOM + b'{"schema": "sqleval-report/1", "suites": [], "cases": [', "the baseline is not valid JSON: * (line 1, column *)"),
    (BOM, "the baseline is not valid JSON: Expecting value (line 1, column 1)"),
    (BOM + b'{"schema": "x"}', "the baseline is not a sqleval-report/1 report (schema: 'x')"),
    (gzip.compress(BOM + b'{"schema": "sqleval-report/1", "cases": []}', mtime=0), "the baseline has no 'suites' list"),
    (gzip.compress(b'{"schema": "sqleval-report/1"}' * 50, mtime=0)[:30], "the baseline is gzipped but cannot be unpacked*"),
    (BOM + b'{"a": "\xff"}', "the baseline is not UTF-8 text (byte 10: *"),  # in the file, BOM included
    (None, "the baseline is a zip archive, not JSON"),
    (b"\xff\xfe{\x00\"", "the baseline is not UTF-16 text, as its byte-order mark says*"),
], ids=["bom-truncated", "bom-only", "bom-other-schema", "gzip-bom-no-suites", "gzip-truncated", "bom-then-latin1",
        "zip-artifact", "utf16-odd"])
def test_bad_baselines_are_still_refused_with_the_fix(pytester, data, message, capsys):
    make_project(pytester)
    if data is None:  # a GitHub Actions artifact as downloaded: a zip holding the report
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("deployed.json", '{"schema": "sqleval-report/1", "suites": [], "cases": []}')
        data = buffer.getvalue()
    (pytester.path / "bad.json").write_bytes(data)
    result, report = run_report(pytester, "cand.json", "--sqleval-baseline=bad.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and report is None
    result.stderr.fnmatch_lines([f"ERROR: --sqleval-baseline bad.json: {message}", "  fix: *"])
    capsys.readouterr()
    assert main(["report", str(pytester.path / "bad.json"), "--markdown", str(pytester.path / "o.md")]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "Traceback" not in err


# --------------------------------------------------------------------------- 4. cached prompt tokens
class CachingChatServer(ChatServer):
    """The loopback chat server, answering as OpenAI does when part of the prompt came from its prompt cache:
    ``usage.prompt_tokens_details.cached_tokens`` = half the prompt tokens (rounded down)."""

    def _handler(self):
        base = super()._handler()

        class Handler(base):
            def _send(self, code, data, headers=None):
                payload = json.loads(data) if code == 200 else None
                if isinstance(payload, dict) and "usage" in payload:
                    usage = payload["usage"]
                    usage["prompt_tokens_details"] = {"cached_tokens": usage["prompt_tokens"] // 2, "audio_tokens": 0}
                    data = json.dumps(payload).encode()
                super()._send(code, data, headers)

        return Handler


chat = chat_fixture({"SHOPS": ["SELECT count(*) FROM shops"]})
caching_chat = chat_fixture({"SHOPS": ["SELECT count(*) FROM shops"]}, server_class=CachingChatServer)

PRICED = """
suite: shop
database: shop.sqlite
model: {name: test-model, price_per_1k_input: 2.0, price_per_1k_output: 8.0%s}
cases:
  - {id: one, question: "SHOPS how many shops are there?", gold: "SELECT count(*) FROM shops"}
  - {id: two, question: "SHOPS count the shops in the whole database please", gold: "SELECT count(*) FROM shops"}
"""


def model_run(pytester, *args):
    path = pytester.path / "report.json"
    result = pytester.runpytest("--sqleval", f"--sqleval-json={path}", "-p", "no:cacheprovider", *args)
    return result, json.loads(path.read_text())


def test_cached_prompt_tokens_are_recorded_priced_and_summed(pytester, caching_chat):
    """The endpoint said half of each prompt came from its cache (billed at a tenth): every prompt token was
    priced at the full input price, and the cached count was lost."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    caching_chat()
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(PRICED % ", price_per_1k_cached_input: 0.2"))
    result, report = model_run(pytester)
    assert result.ret == 0, result.stdout.str()
    cases = {c["id"]: c for c in report["cases"]}
    for case in cases.values():
        tokens = case["tokens"]
        assert tokens["prompt"] > 10 and tokens["cached_prompt"] == tokens["prompt"] // 2
        cached, rest = tokens["cached_prompt"], tokens["prompt"] - tokens["cached_prompt"]
        assert case["cost"] == pytest.approx((rest * 2.0 + cached * 0.2 + tokens["completion"] * 8.0) / 1000)
    block = report["suites"][0]["model"]
    assert block["tokens"]["cached_prompt"] == sum(c["tokens"]["cached_prompt"] for c in cases.values())
    assert block["tokens"]["prompt"] == sum(c["tokens"]["prompt"] for c in cases.values())  # the key kept its meaning
    assert block["cost"] == pytest.approx(sum(c["cost"] for c in cases.values()))
    assert report["run"]["model"]["price_per_1k_cached_input"] == 0.2
    result.stdout.fnmatch_lines([f"*model test-model: 2 calls, 0 cache hits, 0 errors | tokens {block['tokens']['prompt']}"
                                 f" prompt ({block['tokens']['cached_prompt']} cached) + * completion | *"])
    # the response cache keeps the count: a replay records it again, and costs nothing
    again, replay = model_run(pytester)
    assert again.ret == 0
    for case in replay["cases"]:
        assert case["cached"] is True and case["tokens"] == cases[case["id"]]["tokens"] and case["cost"] == 0.0
    assert "cached_prompt" not in replay["suites"][0]["model"]["tokens"]  # no call made, none spent


def test_without_a_cached_price_cached_tokens_cost_the_input_price(pytester, caching_chat):
    """The default keeps the earlier cost: cached tokens are part of the prompt, priced at the input price."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    caching_chat()
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(PRICED % ""))
    result, report = model_run(pytester, "--sqleval-cache-mode=off")
    assert result.ret == 0
    for case in report["cases"]:
        tokens = case["tokens"]
        assert tokens["cached_prompt"] == tokens["prompt"] // 2
        assert case["cost"] == pytest.approx((tokens["prompt"] * 2.0 + tokens["completion"] * 8.0) / 1000)
    # the command line sets the cached price too (and wins over the suite's missing one)
    _, priced = model_run(pytester, "--sqleval-cache-mode=off", "--sqleval-price-per-1k-cached-input=0")
    for case in priced["cases"]:
        tokens = case["tokens"]
        rest = tokens["prompt"] - tokens["cached_prompt"]
        assert case["cost"] == pytest.approx((rest * 2.0 + tokens["completion"] * 8.0) / 1000)


def test_an_endpoint_without_cached_counts_keeps_the_old_records(pytester, chat):
    """vLLM without prefix caching sends no prompt_tokens_details: the record keeps its two token keys, the usage
    line no "(N cached)", and a cached price changes nothing."""
    require_module("openai", "the openai extra is not installed: pip install 'pytest-sqleval[openai]'")
    chat()
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(PRICED % ", price_per_1k_cached_input: 0.2"))
    result, report = model_run(pytester, "--sqleval-cache-mode=off")
    assert result.ret == 0
    for case in report["cases"]:
        assert set(case["tokens"]) == {"prompt", "completion"}
        assert case["cost"] == pytest.approx((case["tokens"]["prompt"] * 2.0 + case["tokens"]["completion"] * 8.0) / 1000)
    assert set(report["suites"][0]["model"]["tokens"]) == {"prompt", "completion"}
    assert "cached)" not in result.stdout.str()


def test_a_bad_cached_price_is_a_suite_error(pytester):
    make_sqlite(pytester.path / "shop.sqlite")
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent(PRICED % ", price_per_1k_cached_input: -1"))
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*`model.price_per_1k_cached_input` must be a number >= 0, not -1*"])


def test_the_cost_of_one_call_by_hand():
    priced = ModelConfig(price_per_1k_input=2.0, price_per_1k_output=8.0, price_per_1k_cached_input=0.5)
    # 1000 prompt tokens of which 600 cached, 100 completion: 400 * 2 + 600 * 0.5 + 100 * 8 = 1900 per 1000
    assert priced.cost(1000, 100, 600) == pytest.approx(1.9)
    assert priced.cost(1000, 100, 5000) == pytest.approx(0.5 + 0.8)  # more cached than sent: all of the prompt
    assert priced.cost(1000, 100, None) == pytest.approx(2.8)
    assert ModelConfig(price_per_1k_input=2.0, price_per_1k_output=8.0).cost(1000, 100, 600) == pytest.approx(2.8)


# --------------------------------------------------------------------------- probing the gate with untuned inputs
def test_a_baseline_merged_without_one_of_its_shards_is_a_warning_of_the_comparison(project, capsys):
    """The deployed model's report was `sqleval merge` of shards 1/3 and 3/3: its merge warned, but a run compared
    with it said nothing, and shard 2/3's cases (regressions included) counted as new."""
    for k in (1, 3):
        run_report(project, f"d{k}.json", f"--sqleval-shard={k}/3", predictions="deployed.jsonl")
    merged = str(project.path / "deployed-merged.json")
    assert main(["merge", str(project.path / "d1.json"), str(project.path / "d3.json"), "-o", merged]) == 0
    _, report = run_report(project, "cand.json", f"--sqleval-baseline={merged}",
                           f"--sqleval-html={project.path / 'cand.html'}")
    expected = "the baseline was merged with a warning: shard(s) 2/3 missing: the merged report covers only part of the suites"
    assert expected in report["baseline"]["warnings"]
    assert expected in html_warnings((project.path / "cand.html").read_text(encoding="utf-8"))
    capsys.readouterr()
    main(["gate", str(project.path / "cand.json"), "--baseline", merged])
    assert f"warning: {expected}" in capsys.readouterr().err


def test_a_baseline_nested_thousands_deep_is_refused_without_a_traceback(pytester, capsys):
    """JSON arrays nested 100,000 deep: json.loads raised RecursionError, a traceback from `--sqleval-baseline`,
    `sqleval gate` and `sqleval report`."""
    make_project(pytester)
    (pytester.path / "deep.json").write_text('{"schema": "sqleval-report/1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                             encoding="utf-8")
    result, report = run_report(pytester, "cand.json", "--sqleval-baseline=deep.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and report is None
    result.stderr.fnmatch_lines(["ERROR: --sqleval-baseline deep.json: the baseline nests its JSON arrays or objects "
                                 "too deeply to be a report", "  fix: *"])
    capsys.readouterr()
    assert main(["gate", str(pytester.path / "deep.json")]) == 2
    assert main(["report", str(pytester.path / "deep.json"), "--markdown", str(pytester.path / "o.md")]) == 2
    err = capsys.readouterr().err
    assert err.count("too deeply") == 2 and "Traceback" not in err


def test_merge_warnings_that_are_not_a_list_are_refused(tmp_path, capsys):
    """A hand-edited `run.merge_warnings: "oops"` was printed one character per warning line."""
    path = tmp_path / "edited.json"
    path.write_text(json.dumps({"schema": "sqleval-report/1", "run": {"merge_warnings": "oops"},
                                "suites": [], "cases": []}), encoding="utf-8")
    assert main(["gate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "has a run.merge_warnings that is not a list (str)" in err and "warning: o" not in err


def test_python_dash_m_cli_reports_bad_input_as_the_console_script_does(tmp_path):
    """`python -m pytest_sqleval.cli gate bad.json` ran the module as __main__, whose CommandError is another
    class than the one the commands raise: a traceback instead of `sqleval gate: ...` and exit 2."""
    import subprocess
    import sys

    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest_sqleval.cli", "gate", str(bad)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("sqleval gate: ") and "Traceback" not in done.stderr
