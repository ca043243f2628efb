"""Deploy gate, sixth look (issue 10): merges of shards scored under different rules, Markdown inline code that
stays text, and the other inputs nobody tuned for."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from conftest import make_sqlite
from deploygate_support import make_project, run_report
from pytest_sqleval.cli import main
from pytest_sqleval.registry import use_registry


@pytest.fixture(autouse=True)
def _builtin_registry():
    """`sqleval merge|gate` in process adopt a report's own metrics into the registry in force: back to the
    built-ins after each test."""
    yield
    use_registry(None)


# --------------------------------------------------------------------------- merge: one suite, two scoring rules
@pytest.mark.parametrize("edit, what", [
    ("execution: bird", "execution"),
    ("exact_match: spider", "exact_match_profile"),
    ("pass_if: exact_match", "pass_if"),
])
def test_merge_refuses_a_suite_whose_shards_were_scored_under_different_rules(pytester: pytest.Pytester, capsys,
                                                                               edit, what):
    """Shard 2 ran after the suite's comparison profile (or exact-match profile, or pass_if) changed: the merged
    report used to name shard 1's rule for every case of the suite and mix the two scorings into one figure,
    with only a warning that the file's hash differs; no unsharded run gives that report."""
    make_project(pytester)
    run_report(pytester, "s1.json", "--sqleval-shard=1/2")
    suite = pytester.path / "alpha.sqleval.yaml"
    suite.write_text(suite.read_text().replace("timeout: 5\n", f"timeout: 5\n{edit}\n"), encoding="utf-8")
    _, second = run_report(pytester, "s2.json", "--sqleval-shard=2/2")
    assert any(s["name"] == "alpha" and s["cases"] for s in second["suites"])
    out = pytester.path / "all.json"
    capsys.readouterr()
    status = main(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"), "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert not out.exists()
    assert "s2.json" in err and "suite alpha" in err and what in err
    assert "fix:" in err


# --------------------------------------------------------------------------- Markdown: ids inside <code>
#: Markdown a GitHub renderer acts on inside an HTML <code> element (raw HTML does not stop inline parsing):
#: backticks (a code span that swallows the closing </code>), emphasis, links, strikethrough, backslash escapes.
_LIVE_SYNTAX = re.compile(r"[`*\[\]~\\]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def test_markdown_shows_case_ids_and_suite_names_with_markdown_syntax_as_text(pytester: pytest.Pytester):
    """README: text from suites is shown with its Markdown syntax as text. Inside <code>…</code> GitHub still
    parses Markdown: an id `q*1*` rendered as q<em>1</em>, and a backtick
    opened a code span that swallowed the closing tag; a suite named `[r](x.example)` was a live link."""
    make_sqlite(pytester.path / "shop.sqlite")
    ids = ["q*1*", "a`b", "~~gone~~", "_under_", "back\\slash", "x`y`z"]
    cases = "".join(f"  - id: {json.dumps(i)}\n    gold: SELECT id FROM tickets ORDER BY id\n"
                    f"    predicted: SELECT id FROM tickets WHERE id > 1 ORDER BY id\n" for i in ids)
    pytester.makefile(".sqleval.yaml", shop=textwrap.dedent('suite: "s*t`a[r](x.example)"\ndatabase: shop.sqlite\ncases:\n')
                      + cases)
    out = pytester.path / "summary.md"
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", f"--sqleval-markdown={out}")
    assert result.ret == 0
    text = out.read_text(encoding="utf-8")
    spans = re.findall(r"<code>(.*?)</code>", text)
    assert len([s for s in spans if "tickets" not in s]) >= len(ids) + 1
    live = [s for s in spans if _LIVE_SYNTAX.search(s)]
    assert live == []
    for case_id in ids:  # each id is still there, as character references a reader sees as the characters
        import html

        assert html.unescape(f"<code>{case_id}</code>") in {html.unescape(f"<code>{s}</code>") for s in spans}


# --------------------------------------------------------------------------- merge: one metric, two definitions
_METRIC_CONFTEST = """
def pytest_sqleval_register_metrics(registry):
    registry.register("short_sql", kind="rate", label="short SQL", population="scored", direction={direction!r})

def pytest_sqleval_score_case(prediction, record, context):
    record["short_sql"] = float(len(prediction or "") < 60)
"""


@pytest.mark.parametrize("second", ["lower", None], ids=["direction-differs", "metric-missing"])
def test_merge_refuses_shards_whose_registered_metrics_differ(pytester: pytest.Pytester, capsys, second):
    """Shard 2 ran without the conftest.py that registers a metric (or with another definition of it): the merged
    report used to show that metric over shard 1's cases alone beside an overall figure of every case, or kept one
    shard's definition for the record and aggregated with the other's, without a word."""
    make_project(pytester)
    conftest = pytester.path / "conftest.py"
    conftest.write_text(_METRIC_CONFTEST.format(direction="higher"), encoding="utf-8")
    first, _ = run_report(pytester, "s1.json", "--sqleval-shard=1/2")
    if second is None:
        conftest.unlink()
    else:
        conftest.write_text(_METRIC_CONFTEST.format(direction=second), encoding="utf-8")
    run_report(pytester, "s2.json", "--sqleval-shard=2/2")
    reports = [json.loads((pytester.path / f"s{k}.json").read_text()) for k in (1, 2)]
    assert "short_sql" in reports[0]["metric_definitions"]
    out = pytester.path / "all.json"
    capsys.readouterr()
    status = main(["merge", str(pytester.path / "s1.json"), str(pytester.path / "s2.json"), "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert not out.exists()
    assert "short_sql" in err and "s2.json" in err and "s1.json" in err and "fix:" in err


# --------------------------------------------------------------------------- HTML: a case paired with an error
def test_html_does_not_call_a_case_that_errored_in_the_baseline_new(pytester: pytest.Pytester):
    """A case whose gold was broken in the deployed run (outcome error there) and is fixed now is in the baseline:
    the comparison keeps it in `pairs_with_errors`, and the HTML case table used to say its baseline was `new`."""
    make_sqlite(pytester.path / "shop.sqlite")
    suite = pytester.path / "shop.sqleval.yaml"
    text = textwrap.dedent("""\
        suite: shop
        database: shop.sqlite
        cases:
          - id: fine
            gold: SELECT id FROM tickets ORDER BY id
            predicted: SELECT id FROM tickets ORDER BY id
          - id: mended
            gold: {gold}
            predicted: SELECT id FROM tickets ORDER BY id
        """)
    suite.write_text(text.format(gold="SELECT nope FROM tickets"), encoding="utf-8")
    pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-json=deployed.json")
    deployed = json.loads((pytester.path / "deployed.json").read_text())
    assert {c["id"]: c["outcome"] for c in deployed["cases"]} == {"fine": "passed", "mended": "error"}
    suite.write_text(text.format(gold="SELECT id FROM tickets ORDER BY id"), encoding="utf-8")
    result = pytester.runpytest("--sqleval", "-p", "no:cacheprovider", "--sqleval-baseline=deployed.json",
                                "--sqleval-json=now.json", "--sqleval-html=now.html")
    assert result.ret == 0
    now = json.loads((pytester.path / "now.json").read_text())
    assert now["baseline"]["suites"][0]["pairs_with_errors"] == ["mended"]
    page = (pytester.path / "now.html").read_text(encoding="utf-8")
    cells = {}
    for row in re.findall(r'<tr class="case".*?</tr>', page, flags=re.S):
        tds = re.findall(r"<td[^>]*>(.*?)</td>", row.split("<td><details")[0], flags=re.S)
        cells[re.sub(r"</?code>", "", tds[1])] = tds[-1]
    assert cells == {"fine": "passed", "mended": "error"}


# --------------------------------------------------------------------------- sqleval report: a bad input file
def test_sqleval_report_on_a_folder_names_the_file_and_the_fix(tmp_path, capsys):
    """`sqleval merge` and `sqleval gate` say what to pass instead of a folder; `sqleval report` printed Python's
    `[Errno 21] Is a directory: '...'` and no fix."""
    folder = tmp_path / "artifacts"
    folder.mkdir()
    assert main(["report", str(folder), "--markdown", str(tmp_path / "out.md")]) == 2
    err = capsys.readouterr().err
    assert f"{folder}: cannot read it: Is a directory" in err and "[Errno" not in err
    assert "fix: pass the report file itself" in err
    assert not (tmp_path / "out.md").exists()


def test_max_regressed_fails_when_the_baseline_pairs_with_no_case():
    """A baseline of zero cases (or of other case ids) passed `--sqleval-max-regressed 0` as "0 regressed": no pair
    is no figure, and a gate does not pass for want of one."""
    from pytest_sqleval.deploygate import _max_regressed_gate

    empty = {"pairs": {"fixed": [], "regressed": [], "still_missed": [], "still_passed": [], "new": ["s::a"],
                       "removed": []}}
    gate = _max_regressed_gate(empty, 0)
    assert gate["passed"] is False and gate["value"] == 0
    assert gate["message"].startswith("FAIL no case was scored in both this run and the baseline (0 pairs)")
    one = dict(empty, pairs=dict(empty["pairs"], still_missed=["s::b"]))
    assert _max_regressed_gate(one, 0)["passed"] is True
