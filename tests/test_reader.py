"""The side-by-side reader (docs/), checked as generated files and in a real browser: Debian's
Chromium, driven by Selenium (installed from envs/browser.apt.txt like R's packages)."""
import html.parser
import os
from pathlib import Path

import pytest

from runner import environments
from runner.frameworks import RUNNABLE, notebook_name
from runner import reader, regenerate

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.html"))
ALIGNMENT_PX = 2


# ----------------------------------------------------------------------------- the files

def test_the_committed_docs_are_what_the_notebooks_and_records_generate():
    """README's matrix, every machine page, the method page's margins and the reader's pages."""
    stale = regenerate.stale_files(ROOT / "results", ROOT / "README.md", ROOT / "notebooks")
    assert not stale, (f"generated files are out of date ({[str(p.relative_to(ROOT)) for p in stale]}): run "
                       "`python3 run_all.py --docs` and commit README.md and docs/")


def test_there_is_a_page_for_every_task_with_notebooks_and_a_matrix():
    tasks = {task for framework in RUNNABLE.values() for task in framework.tasks}
    assert {path.name for path in PAGES} == {f"{task}.html" for task in tasks} | {"index.html"}


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attributes):
        for name, value in attributes:
            if name in ("href", "src") and value:
                self.found.append(value)


MARKDOWN_PAGES = [ROOT / "README.md"] + sorted(DOCS.glob("*.md")) + sorted((DOCS / "machines").glob("*.md"))


@pytest.mark.parametrize("page", PAGES + MARKDOWN_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_of_the_pages_resolves_to_a_file_of_the_repository(page):
    if page.suffix == ".md":
        import re

        text = page.read_text()
        # Inline links, and the targets of reference links ("[label]: target").
        links = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"^\[[^\]]+\]: (\S+)$", text, re.M)
        if page.name == "README.md":
            assert {"docs/index.html", "docs/method.md", "docs/machines/index.md"} <= set(links)
    else:
        parser = Links()
        parser.feed(page.read_text())
        links = parser.found
    assert links
    for link in links:
        if link.startswith(("#", "https://", "http://")):
            continue
        target = (page.parent / link.split("#")[0]).resolve()
        assert target.is_file(), f"{page.name}: {link} leads nowhere"
        assert ROOT in target.parents


def test_sections_follow_the_skeleton_and_keep_each_notebooks_code():
    sections = reader.notebook_sections(ROOT / "notebooks" / "Gluon_RNN.ipynb")
    assert list(sections) == [key for key, _, _ in reader.SECTIONS]
    assert "rnn.GRU(" in sections["model"]["code"] and "def create_model" in sections["model"]["code"]
    assert sections["parameters"]["code"].startswith("profile = ")
    assert "def train_one_epoch" in sections["train"]["code"]
    assert "run.finish(" in sections["record"]["code"]
    assert sections["about"]["notes"] and not sections["about"]["code"]


def test_highlighting_keeps_every_character_of_the_code():
    code = 'x = np.zeros((2, 3))  # a "comment" <with> & signs\nprint(x)\n'
    highlighted = reader.highlight(code, "python")
    parser = Text()
    parser.feed(highlighted)
    assert "".join(parser.text) == code
    assert '<span class="t n">np</span>' in highlighted


def test_highlighted_code_is_kept_in_the_cache_and_read_back_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv(environments.CACHE_VARIABLE, str(tmp_path))
    code = "y = x · 2  # non-ASCII kept\n"
    first = reader.highlight(code, "python")
    kept = list((tmp_path / "reader").glob("*.html"))
    assert len(kept) == 1 and kept[0].read_bytes().decode("utf-8") == first == reader._highlight(code, "python")
    assert reader.highlight(code, "python") == first
    reader.highlight(code, "r")  # another language, another entry
    assert len(list((tmp_path / "reader").glob("*.html"))) == 2


class Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text = []

    def handle_data(self, data):
        self.text.append(data)


# ----------------------------------------------------------------------------- in a browser

@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    environments.ensure_system_packages("browser")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    # No sandbox as root; no background connections: this machine's network is closed.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium keeps a profile and a certificate store under ~: a home of its own, not the user's.
    home = tmp_path_factory.mktemp("chromium-home")
    service = Service("/usr/bin/chromedriver", env=dict(os.environ, HOME=str(home)))
    driver = webdriver.Chrome(service=service, options=options)
    yield driver
    driver.quit()


def open_page(browser, name, fragment=""):
    browser.set_window_size(1400, 1000)
    browser.get((DOCS / name).as_uri() + fragment)
    browser.get_log("browser")  # what an earlier page logged is not this one's
    browser.refresh()


def columns(browser):
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('#grid .head-cell')).map(c => c.dataset.fw)")


def fragment(browser):
    return browser.execute_script("return location.hash")


@pytest.mark.parametrize("page", [path.name for path in PAGES])
def test_each_page_loads_without_console_errors(browser, page):
    open_page(browser, page)
    errors = [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    if page != "index.html":
        task = page.removesuffix(".html")
        written = [framework.name for framework in reader.frameworks_for(task, ROOT / "notebooks")]
        assert columns(browser) == [name for name in reader.DEFAULT_COLUMNS if name in written]


def test_choosing_frameworks_changes_the_columns_and_the_address(browser):
    open_page(browser, "CNN.html")
    assert fragment(browser) == "#fw=pytorch,tensorflow"
    browser.find_element("css selector", 'input[name="fw"][value="gluon"]').click()
    assert columns(browser) == ["pytorch", "tensorflow", "gluon"]
    assert fragment(browser) == "#fw=pytorch,tensorflow,gluon"
    browser.find_element("css selector", 'input[name="fw"][value="tensorflow"]').click()
    assert columns(browser) == ["pytorch", "gluon"] and fragment(browser) == "#fw=pytorch,gluon"
    # A shared address opens the same columns, in its order.
    open_page(browser, "RNN.html", "#fw=jax_flax,chainer,mxnet")
    assert columns(browser) == ["jax_flax", "chainer", "mxnet"]
    # At most four columns: a fifth is refused, said, and changes nothing.
    for name in ("pytorch", "gluon"):
        browser.find_element("css selector", f'input[name="fw"][value="{name}"]').click()
    assert columns(browser) == ["jax_flax", "chainer", "mxnet", "pytorch"]
    assert "At most 4 columns" in browser.find_element("css selector", ".message").text
    assert not browser.find_element("css selector", 'input[name="fw"][value="gluon"]').is_selected()


@pytest.mark.parametrize("page, chosen", [("CNN.html", "pytorch,gluon,jax_flax"),
                                          ("Inference.html", "onnxruntime,keras_r,tensorflow,chainer"),
                                          ("RNN.html", "lasagne,paddle")])
def test_the_sections_start_on_one_line_across_the_columns(browser, page, chosen, tmp_path, capsys):
    open_page(browser, page, f"#fw={chosen}")
    tops = browser.execute_script("""
        const tops = {};
        for (const cell of document.querySelectorAll('#grid .cell')) {
          (tops[cell.dataset.section] = tops[cell.dataset.section] || []).push(cell.getBoundingClientRect().top);
        }
        return tops;""")
    sections = ["head"] + [key for key, _, _ in reader.SECTIONS]
    assert set(tops) == set(sections)
    for section, values in tops.items():
        assert len(values) == len(chosen.split(","))
        assert max(values) - min(values) <= ALIGNMENT_PX, (section, values)
    starts = [min(tops[section]) for section in sections]
    assert starts == sorted(starts)
    screenshot = tmp_path / f"{page}.png"
    browser.save_screenshot(str(screenshot))
    with capsys.disabled():  # in the test output even when it passes
        print(f"\n[reader] screenshot of {page}#fw={chosen}: {screenshot}")
    assert screenshot.stat().st_size > 10_000


def test_the_difference_toggle_marks_what_differs_from_the_left_column(browser):
    open_page(browser, "CNN.html", "#fw=pytorch,tensorflow")
    marked = "return Array.from(document.querySelectorAll('#grid .t.diff')).map(t => [t.closest('.cell').dataset.fw, t.closest('.cell').dataset.section, t.textContent])"
    assert browser.execute_script(marked) == []
    browser.find_element("css selector", 'input[name="diff"]').click()
    assert fragment(browser) == "#fw=pytorch,tensorflow&diff=1"
    differences = browser.execute_script(marked)
    # `import torch` on the left, `import tensorflow as tf` on the right.
    assert ["tensorflow", "imports", "tensorflow"] in differences
    assert ["tensorflow", "imports", "tf"] in differences
    # Only the right-hand column is marked, and what both share is not.
    assert {fw for fw, _, _ in differences} == {"tensorflow"}
    shared = browser.execute_script(
        "return Array.from(document.querySelectorAll('#grid .cell[data-fw=tensorflow][data-section=imports] .t'))"
        ".filter(t => t.textContent === 'create_model' || t.textContent === 'common').map(t => t.classList.contains('diff'))")
    assert shared and not any(shared)
    model_marks = [token for fw, section, token in differences if section == "model"]
    assert "torch" not in model_marks and model_marks


def test_on_a_narrow_screen_the_columns_stack(browser):
    open_page(browser, "CNN.html", "#fw=pytorch,tensorflow")
    browser.set_window_size(500, 900)
    lefts = browser.execute_script(
        "return Array.from(document.querySelectorAll('#grid .cell')).map(c => Math.round(c.getBoundingClientRect().left))")
    assert len(set(lefts)) == 1


def test_the_matrix_links_every_runnable_cell_into_its_task_page(browser):
    open_page(browser, "index.html")
    links = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.matrix a')).map(a => a.getAttribute('href'))")
    expected = {f"{task}.html#fw=" + ",".join(dict.fromkeys(("pytorch", framework.name)))
                for framework in RUNNABLE.values() for task in framework.tasks}
    assert set(links) == expected
    text = browser.find_element("css selector", "table.matrix").text
    assert "cannot run here: CNTK wheels" in text
    browser.get((DOCS / "index.html").as_uri())
    browser.find_element("css selector", 'a[href="RNN.html#fw=pytorch,gluon"]').click()
    assert browser.current_url.endswith("RNN.html#fw=pytorch,gluon")
    assert columns(browser) == ["pytorch", "gluon"]
