"""--sqleval-html: one self-contained file, checked in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ci_support import MISSES, PASSES, full_report, make_shop
from conftest import chromium_executable
from pytest_sqleval.report.html import chart_data, render_html


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    return make_shop(pytester)


def run(pytester: pytest.Pytester, *args: str):
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    return runner("--sqleval", "-p", "no:cacheprovider", *args)


# --------------------------------------------------------------------------- the file
class Page(HTMLParser):
    """What the tests need from the page: case rows, external references, canvases, the status element."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self.external: list[str] = []
        self.canvases: dict[str, dict[str, str]] = {}
        self.status: dict[str, str] = {}
        self.scripts_with_src: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "tr" and "case" in a.get("class", "").split():
            self.rows.append(a)
        for key in ("src", "href"):
            if key in a and not a[key].startswith(("#", "data:")):
                self.external.append(f"{tag} {key}={a[key]}")
        if tag == "link":
            self.external.append(f"link {a}")
        if tag == "canvas":
            self.canvases[a.get("id", "")] = a
        if a.get("id") == "sqleval-errors":
            self.status = a


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    return page


def test_html_of_a_run_is_one_self_contained_file(shop):
    """Serial here; test_html_serial_and_xdist_are_identical covers -n 2."""
    out = shop.path / "out" / "report.html"
    result = run(shop, f"--sqleval-html={out}")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"sqleval HTML report written to {out}"])
    text = out.read_text(encoding="utf-8")
    page = parse(text)
    assert page.external == []  # nothing to fetch: no src, href or <link>
    assert "Chart.js v4" in text  # the chart library is inlined
    assert "default-src 'none'" in text  # and the page forbids any network access
    assert sorted(r["data-outcome"] for r in page.rows) == ["missed"] * 5 + ["passed"] * 2
    assert sorted(r["data-reason"] for r in page.rows if r["data-reason"]) == sorted(MISSES.values())
    assert {r["data-difficulty"] for r in page.rows} == {"easy", "medium", "hard"}


def test_a_directory_is_a_usage_error(shop):
    (shop.path / "out").mkdir()
    result = run(shop, f"--sqleval-html={shop.path / 'out'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--sqleval-html {shop.path / 'out'} is a directory; give a file path, e.g. "
                                 f"{shop.path / 'out' / 'sqleval.html'}*"])


def test_html_serial_and_xdist_are_identical(shop):
    run(shop, f"--sqleval-html={shop.path / 'a.html'}")
    run(shop, f"--sqleval-html={shop.path / 'b.html'}", "-n", "2")
    assert (shop.path / "a.html").read_text(encoding="utf-8") == (shop.path / "b.html").read_text(encoding="utf-8")


def test_chart_data_comes_from_the_report_and_the_baseline_pairs():
    data = chart_data(full_report())
    shop = data["suites"][0]
    assert data["baseline"] is True
    by_label = {label: i for i, label in enumerate(shop["metrics"]["labels"])}  # in the metric registry's order
    ex, f1 = by_label["execution accuracy"], by_label["soft F1"]
    assert ex < f1
    assert [shop["metrics"]["current"][i] for i in (ex, f1)] == [0.4, 0.6]
    assert [shop["metrics"]["baseline"][i] for i in (ex, f1)] == [0.5, 0.55]
    assert shop["by_difficulty"]["labels"] == ["easy", "medium"]
    assert shop["by_difficulty"]["series"]["EX"] == [0.6667, 0.0]
    # paired pass rate: easy has a-pass (passed, passed before), b-pass (passed, missed before), d-syntax (missed,
    # missed before); medium has c-regressed (missed, passed before); e-new has no baseline
    assert shop["by_difficulty"]["paired_pass_rate"] == {"current": [2 / 3, 0.0], "baseline": [1 / 3, 1.0]}
    assert shop["reasons"] == {"row_count": 1, "syntax": 1, "values": 1}
    assert shop["by_turn"] is None  # no interactions in this suite
    assert shop["errors"] == {"syntax": 1}


def test_turn_chart_pairs_turns_with_the_baseline():
    report = full_report()
    report["suites"][0]["by_turn"] = {"1": {"turns": 2, "question_match": 1.0, "execution_accuracy": 1.0},
                                      "2": {"turns": 2, "question_match": 0.0, "execution_accuracy": 0.0},
                                      ">4": {"turns": 1, "question_match": 0.0, "execution_accuracy": 0.0}}
    for case, turn in zip(report["cases"], (1, 1, 2, 2, 7)):
        case["interaction"], case["turn"] = "talk", turn
    turns = chart_data(report)["suites"][0]["by_turn"]
    assert turns["labels"] == ["turn 1", "turn 2", "turn >4"]
    assert turns["series"] == {"question match": [1.0, 0.0, 0.0], "EX": [1.0, 0.0, 0.0]}
    # turn 1: a-pass (passed/passed), b-pass (passed/missed); turn 2: c-regressed (missed/passed), d-syntax
    # (missed/missed); turn 7: e-new, not in the baseline
    assert turns["paired_pass_rate"] == {"current": [1.0, 0.0, None], "baseline": [0.5, 0.5, None]}


def test_text_is_escaped_and_the_data_cannot_close_its_script():
    report = full_report()
    report["cases"][2]["question"] = "</script><script>alert('x')</script>"
    report["cases"][2]["predicted"] = "SELECT '<b>'"
    text = render_html(report)
    assert "<script>alert('x')</script>" not in text
    assert "&lt;/script&gt;&lt;script&gt;alert(" in text
    data = text[text.index('<script id="sqleval-data" type="application/json">'):]
    data = data[data.index(">") + 1:data.index("</script>")]
    assert json.loads(data)["suites"][0]["name"] == "shop"


# --------------------------------------------------------------------------- in the browser
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"]


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_executable()


def browse(chromium: str, page: Path, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *flags, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line and ("Uncaught" in line or "rror" in line)]


def test_the_page_renders_in_a_headless_browser(chromium, tmp_path):
    report = full_report()
    report["suites"][0]["by_turn"] = {"1": {"turns": 3, "question_match": 0.6667, "execution_accuracy": 0.6667},
                                      "2": {"turns": 2, "question_match": 0.0, "execution_accuracy": 0.0}}
    for case, turn in zip(report["cases"], (1, 1, 2, 1, 2)):
        case["interaction"], case["turn"] = "talk", turn
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    dumped = browse(chromium, page, tmp_path, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = parse(dumped.stdout)
    assert dom.status.get("data-ready") == "1", dumped.stderr[-2000:]
    assert json.loads(dom.status["data-errors"]) == []
    assert console_errors(dumped.stderr) == []
    # every chart the first suite has data for is drawn on a canvas of non-zero size
    charts = ["metrics", "by_difficulty", "by_tag", "by_turn", "errors"]
    assert dom.status["data-charts"].split() == charts
    for name in charts:
        canvas = dom.canvases[f"chart-{name}"]
        assert int(canvas["width"]) > 100 and int(canvas["height"]) > 100, (name, canvas)
    assert len(dom.rows) == len(report["cases"])
    assert "showing 6 of 6 cases" in dumped.stdout

    shot = tmp_path / "shot.png"
    taken = browse(chromium, page, tmp_path, f"--screenshot={shot}", "--window-size=1024,1200")
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    width, height, colours = png_colours(shot.read_bytes())
    assert (width, height) == (1024, 1200)
    assert len(colours) > 20  # text, bars and badges: not a blank single-colour page


def test_the_browser_check_sees_script_errors(chromium, tmp_path):
    """The checks above can fail: a page with a broken script is caught by both the page's recorder and the log."""
    page = tmp_path / "broken.html"
    page.write_text(render_html(full_report()).replace(
        "</body>", '<script>console.error("deliberate"); undefinedFunction();</script></body>'), encoding="utf-8")
    dumped = browse(chromium, page, tmp_path, "--dump-dom")
    errors = json.loads(parse(dumped.stdout).status["data-errors"])
    assert errors == ["deliberate", "Uncaught ReferenceError: undefinedFunction is not defined"]
    assert any("undefinedFunction is not defined" in line for line in console_errors(dumped.stderr))


def test_the_table_filters_in_the_browser(chromium, tmp_path):
    """Set the filters the way a user does (change events), then read the visible rows back from the DOM."""
    text = render_html(full_report())
    probe = """<script>
    function pick(name, value) {
      var el = document.querySelector('#filters [data-filter="' + name + '"]');
      if (el.type === "checkbox") { el.checked = value; } else { el.value = value; }
      el.dispatchEvent(new Event(el.type === "search" ? "input" : "change"));
      return Array.prototype.filter.call(document.querySelectorAll("#cases tr.case"),
        function (tr) { return !tr.classList.contains("hidden"); }).map(function (tr) { return tr.cells[1].textContent; }).join(",");
    }
    var seen = {};
    seen.missed = pick("outcome", "missed"); pick("outcome", "");
    seen.values = pick("reason", "values"); pick("reason", "");
    seen.medium = pick("difficulty", "medium"); pick("difficulty", "");
    seen.joins = pick("tag", "joins"); pick("tag", "");
    seen.regressed = pick("regressed", true); pick("regressed", false);
    seen.other = pick("suite", "other"); pick("suite", "");
    seen.search = pick("text", "shops?");
    document.body.setAttribute("data-probe", JSON.stringify(seen));
    </script></body>"""
    page = tmp_path / "probe.html"
    page.write_text(text.replace("</body>", probe), encoding="utf-8")
    dumped = browse(chromium, page, tmp_path, "--dump-dom")
    seen = json.loads(re.search(r'data-probe="([^"]*)"', dumped.stdout).group(1).replace("&quot;", '"'))
    assert seen == {
        "missed": "c-regressed,d-syntax,e-new",
        "values": "c-regressed",
        "medium": "c-regressed,e-new",
        "joins": "a-pass,c-regressed",
        "regressed": "c-regressed",
        "other": "f-other",
        "search": "a-pass",
    }


def test_the_page_of_a_real_run_renders(chromium, shop, tmp_path):
    out = shop.path / "report.html"
    assert run(shop, f"--sqleval-html={out}").ret == 0
    dumped = browse(chromium, out, tmp_path, "--dump-dom")
    dom = parse(dumped.stdout)
    assert json.loads(dom.status["data-errors"]) == [] and console_errors(dumped.stderr) == []
    assert len(dom.rows) == len(MISSES) + len(PASSES)
    assert dom.status["data-charts"].split() == ["metrics", "by_difficulty", "by_tag", "errors"]  # no turns here
    assert "width" not in dom.canvases["chart-by_turn"]


# --------------------------------------------------------------------------- PNG
def png_colours(data: bytes) -> tuple[int, int, set[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG (what chromium writes) and return its size and set of pixel colours."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, header
    bpp = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    previous, colours = bytearray(stride), set()
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        kind, row = line[0], bytearray(line[1:])
        for i in range(stride):
            left = row[i - bpp] if i >= bpp else 0
            up, up_left = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                row[i] = (row[i] + left) & 0xFF
            elif kind == 2:
                row[i] = (row[i] + up) & 0xFF
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 0xFF
        if y % 8 == 0:
            colours.update(bytes(row[x:x + 3]) for x in range(0, stride, bpp * 4))
        previous = row
    return width, height, colours
