"""QA round 9 on the core plugin (issue 2): report paths written as folders, and the summary's breakdown tables
with labels longer than their column, run through pytester as a user runs them."""

from __future__ import annotations

import re

import pytest

from core_support import numbers_shop_fixture, write

SUITE = """\
database: shop.sqlite
cases:
  - id: a
    gold: SELECT n FROM t
    predicted: SELECT n FROM t
"""


shop = numbers_shop_fixture()


# -- (a) a report path that names a folder -----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["cli", "ini"])
def test_a_json_path_ending_in_a_slash_is_refused_before_the_run(shop, where):
    """`--sqleval-json reports/` (a folder not made yet) wrote the report as a *file* named `reports`, and the next
    run's `reports/` then overwrote that file: a path ending in '/' names a folder; it is a usage error naming the
    option and a file path to give instead, before anything runs."""
    write(shop, "s.sqleval.yaml", SUITE)
    if where == "cli":
        result = shop.runpytest("-p", "no:cacheprovider", "--sqleval", "--sqleval-json", "reports/")
        option = "--sqleval-json"
    else:
        write(shop, "pytest.ini", "[pytest]\nsqleval_json = reports/\n")
        result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
        option = "ini option sqleval_json"
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{option} reports/ ends with '/', a folder; give a file path, e.g. reports/report.json" \
        in result.stderr.str()
    assert not (shop.path / "reports").exists()


@pytest.mark.parametrize(("kind", "file"), [("markdown", "sqleval.md"), ("html", "sqleval.html")])
@pytest.mark.parametrize("where", ["cli", "ini"])
def test_a_markdown_or_html_path_ending_in_a_slash_is_refused_before_the_run(shop, kind, file, where):
    """As for the JSON report: `--sqleval-markdown reports/` wrote the page as a file named `reports`; it is a usage
    error naming the option (the ini option when the ini gave it) and a file path in that folder."""
    write(shop, "s.sqleval.yaml", SUITE)
    if where == "cli":
        result = shop.runpytest("-p", "no:cacheprovider", "--sqleval", f"--sqleval-{kind}", "reports/")
        option = f"--sqleval-{kind}"
    else:
        write(shop, "pytest.ini", f"[pytest]\nsqleval_{kind} = reports/\n")
        result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
        option = f"ini option sqleval_{kind}"
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{option} reports/ ends with '/', a folder; give a file path, e.g. reports/{file}" in result.stderr.str()
    assert not (shop.path / "reports").exists()


def test_an_ini_json_path_that_is_a_folder_names_the_ini_option(shop):
    """`sqleval_json = out` in the ini file, `out` an existing folder: the message named `--sqleval-json`, an option
    the user never gave; it names the ini option the value came from."""
    write(shop, "s.sqleval.yaml", SUITE)
    (shop.path / "out").mkdir()
    write(shop, "pytest.ini", "[pytest]\nsqleval_json = out\n")
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini option sqleval_json out is a directory; give a file path, e.g. out/report.json" in result.stderr.str()


# -- (b) the breakdown tables with a label longer than its column --------------------------------------------------


def _cells(text: str) -> int:
    """Terminal cells of a text: an East Asian wide character takes two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _column_ends(line: str) -> list[int]:
    """The terminal column where each space-separated field of a line ends."""
    return [_cells(line[: match.end()]) for match in re.finditer(r"\S+", line)]


def test_every_breakdown_row_lines_up_under_its_header_whatever_its_label(shop):
    """A tag or difficulty label longer than the 13-cell label column (or written in wide characters) pushed its
    row's numbers to the right of their headers: `cases`, `valid`, `EX` ... no longer stood over their values.
    The label column is as wide as its longest label, so every value ends where its header ends."""
    write(
        shop,
        "s.sqleval.yaml",
        """
        database: shop.sqlite
        cases:
          - {id: a, gold: SELECT n FROM t, predicted: SELECT n FROM t,
             tags: [a_tag_name_much_longer_than_the_label_column], difficulty: multi-hop reasoning over joins}
          - {id: b, gold: SELECT max(n) FROM t, predicted: SELECT min(n) FROM t, tags: [x], difficulty: 難しい問題}
        """,
    )
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == 0, result.stdout.str()
    lines = result.stdout.lines
    for title, labels in (("difficulty", ["multi-hop reasoning over joins", "難しい問題"]),
                          ("tag", ["a_tag_name_much_longer_than_the_label_column", "x"])):
        header = next(line for line in lines if line.startswith(f"  by {title} "))
        # the header's fields after "by <title>": cases, valid, errors, EX, soft_f1, EM, then the interval headers
        header_ends = _column_ends(header)[2:8]
        for label in labels:
            row = next(line for line in lines if line.startswith(f"    {label} "))
            value_ends = _column_ends(row[len(f"    {label}"):])[:6]
            offset = _cells(f"    {label}")
            assert [offset + end for end in value_ends] == header_ends, (header, row)


# -- (c) a tag written as people write labels ----------------------------------------------------------------------


@pytest.mark.parametrize(("tag", "name"), [("multi-table", "multi_table"), ("sub query", "sub_query"),
                                           ("2-hop", "tag_2_hop"), ("v1.2", "v1_2")])
def test_a_tag_that_is_no_marker_name_gets_a_name_it_could_have_as_its_fix(shop, tag, name):
    """`tags: [multi-table]` (how labels are often written) was refused with a generic fix ("use letters, digits and
    '_'"); the fix now gives the marker name to write, which `-m` then selects."""
    write(shop, "s.sqleval.yaml", SUITE + f'    tags: ["{tag}"]\n')
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret != 0
    result.stdout.fnmatch_lines([f"*s.sqleval.yaml:6: tag '{tag}' is not a valid marker name",
                                 f"  fix: write it as `{name}` (*letters, digits and '_'*-m*"])
    write(shop, "s.sqleval.yaml", SUITE + f"    tags: [{name}]\n")
    assert shop.runpytest("-p", "no:cacheprovider", "--sqleval", "-m", name).parseoutcomes() == {"passed": 1}


# -- (d) a database path that is nearly right --------------------------------------------------------------------


@pytest.mark.parametrize(("written", "there"), [("Shop.sqlite", "shop.sqlite"), ("shop.sqlite3", "shop.sqlite"),
                                                ("data/SHOP.SQLITE", "data/shop.sqlite")])
def test_a_missing_database_names_the_file_of_nearly_that_name_beside_it(shop, written, there):
    """`database: Shop.sqlite` beside `shop.sqlite` (written on a case-insensitive file system, run on Linux CI)
    said only "check the path"; the fix names the file the folder does hold, so the user sees the one-letter
    difference."""
    (shop.path / "data").mkdir()
    (shop.path / "data" / "shop.sqlite").write_bytes((shop.path / "shop.sqlite").read_bytes())
    write(shop, "s.sqleval.yaml", SUITE.replace("database: shop.sqlite", f"database: {written}"))
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([f"*s.sqleval.yaml:1: database file not found: {shop.path / written}",
                                 f"  fix: the folder holds `{there.rpartition('/')[2]}`: write that path, `{there}`*"])


def test_a_database_path_that_exists_but_is_no_file_is_not_called_missing(shop):
    """`database: /dev/null` (a device, as a FIFO or a socket would be) was "database file not found" although the
    path exists: the message says what it is."""
    write(shop, "s.sqleval.yaml", SUITE.replace("database: shop.sqlite", "database: /dev/null"))
    result = shop.runpytest("-p", "no:cacheprovider", "--sqleval")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*s.sqleval.yaml:1: the database path /dev/null is not a regular file "
                                 "(a device, FIFO or socket)", "  fix: name the database file*"])
    assert "not found" not in result.stdout.str()


# -- (e) predictions read from a pipe ------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_predictions_from_a_pipe_score_the_same_serially_and_in_parallel(shop, workers):
    """`--sqleval-predictions <(jq ... model.json)` (a pipe the shell opens, as a named FIFO is): the serial run read
    it, while under `-n 2` the controller read it and every worker tried to read it again, crashed with a traceback
    ("node down ... cannot read the predictions file") and no case ran. The controller hands the file's text to
    its workers, so both runs score the cases alike."""
    import os
    import threading

    write(shop, "s.sqleval.yaml", SUITE + "  - id: b\n    gold: SELECT max(n) FROM t\n")
    fifo = shop.path / "preds.fifo"
    os.mkfifo(fifo)
    text = '{"id": "a", "sql": "SELECT n FROM t"}\n{"id": "b", "sql": "SELECT min(n) FROM t"}\n'

    def feed() -> None:  # a writer that writes once, as a shell's process substitution does
        with open(fifo, "w", encoding="utf-8") as pipe:
            pipe.write(text)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    result = shop.runpytest_subprocess("-p", "no:cacheprovider", "--sqleval", "--sqleval-predictions", str(fifo),
                                       *workers)
    writer.join(timeout=60)
    assert "node down" not in result.stdout.str() and "Traceback" not in result.stdout.str()
    assert result.parseoutcomes() == {"passed": 1, "missed": 1}
    assert result.ret == pytest.ExitCode.OK
