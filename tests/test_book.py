"""Build the Jupyter Book (offline, warnings as errors) and check the chapter pages."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"


def chapter_notebooks():
    """The .ipynb files listed in book/_toc.yml, relative to the repository root."""
    import yaml  # installed with jupyter-book

    toc = yaml.safe_load((BOOK / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [f for f in files if f.endswith(".ipynb")]


@pytest.mark.skipif(
    not JUPYTER_BOOK.exists(), reason=f"jupyter-book is not installed ({JUPYTER_BOOK} not found)"
)
def test_book_builds(tmp_path):
    cmd = [
        str(JUPYTER_BOOK), "build", str(ROOT),
        "--config", str(BOOK / "_config.yml"),
        "--toc", str(BOOK / "_toc.yml"),
        "--path-output", str(tmp_path),
        "-W", "-n", "--keep-going",
    ]
    result = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    log = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)  # drop colours
    if result.returncode != 0:
        pytest.fail(f"jupyter-book build failed (exit {result.returncode}):\n{log}", pytrace=False)

    html = tmp_path / "_build" / "html"
    notebooks = chapter_notebooks()
    assert notebooks, "book/_toc.yml lists no chapter notebooks"
    missing = [nb for nb in notebooks if not (html / nb).with_suffix(".html").is_file()]
    assert not missing, f"no HTML page built for {missing}\n{log}"
