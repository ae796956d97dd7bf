"""The committed GPU results are valid records, plot, and match the README table."""

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from kernelbook import bench, plot, results, stages
from kernelbook.ops import get_op
from kernelbook.cli import main

ROOT = Path(__file__).resolve().parents[1]
STORED = sorted(ROOT.glob("chapters/*/results.json")) + sorted(ROOT.glob("book/results/*.json"))


@pytest.mark.parametrize("path", STORED, ids=lambda p: str(p.relative_to(ROOT)))
def test_stored_results_are_valid_gpu_runs(path):
    record = results.load(path)
    env = record["environment"]
    assert env["device"] != "cpu" and env.get("sms", 0) > 0, "stored results must come from a GPU"
    assert record["verification"], "a stored run must record its correctness checks"
    for case in record["cases"]:
        assert case["torch_copy"]["ms"] > 0
        assert all(r["flagged"] or r["spread"] <= bench.SPREAD_LIMIT for r in case["results"])


@pytest.mark.parametrize("path", STORED, ids=lambda p: str(p.relative_to(ROOT)))
def test_stored_results_plot(path, tmp_path):
    record = results.load(path)
    first = record["cases"][0]
    for fig in (plot.bandwidth(record), plot.ladder(record, mode=None, shape=first["shape"], op=first["op"],
                                                     dtype=first["dtype"])):
        out = tmp_path / "fig.png"
        fig.savefig(out)
        plt.close(fig)  # the test run draws one per stored file: keep pyplot's open-figure count low
        assert out.stat().st_size > 10_000


PUBLISHED = [s for s in stages.cuda_stages() if list(s.path.parent.glob("*.ipynb"))]


def test_every_published_chapter_has_a_stored_gpu_run():
    # A chapter with a notebook renders its stored run on machines without a GPU.
    missing = [s.folder for s in PUBLISHED if not (s.path.parent / "results.json").is_file()]
    assert not missing, missing


@pytest.mark.parametrize("stage", PUBLISHED, ids=lambda s: s.folder)
def test_chapter_records_cover_their_stages_and_torch(stage):
    record = results.load(stage.path.parent / "results.json")
    op = get_op(stage.op)
    for dtype in stage.dtypes:
        case = results.find_case(record, op=stage.op, dtype=dtype)
        names = {r["name"] for r in case["results"]}
        expected = {label for s in stages.cuda_stages(stage.chapter, stage.op, dtype) for label, _ in s.contenders()}
        expected |= set(op.torch_contenders())
        assert expected <= names, expected - names


def test_validation_rejects_inconsistent_records():
    record = results.load(ROOT / "book" / "results" / "ladder.json")
    record["cases"][0]["results"][0]["pct_sol"] *= 2
    with pytest.raises(ValueError, match="pct_sol"):
        results.validate(record)
    record = results.load(ROOT / "book" / "results" / "ladder.json")
    del record["environment"]["device"]
    with pytest.raises(ValueError, match="device"):
        results.validate(record)


def test_readme_table_is_generated_from_committed_results():
    assert main(["readme", "--check", "--results", str(ROOT / "book/results/ladder.json"),
                 "--readme", str(ROOT / "README.md")]) == 0


def test_recorded_commit_is_the_projects_own(tmp_path, monkeypatch):
    # A copy of the tree inside some other git checkout must not record that checkout's HEAD.
    import subprocess

    outer = tmp_path / "outer"
    inner = outer / "copy"
    (inner / "chapters").mkdir(parents=True)
    (inner / "src" / "kernelbook").mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(outer)]
    subprocess.run([*git, "init", "-q"], check=True)
    (outer / "f").write_text("x")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "outer"], check=True)
    monkeypatch.setenv("KERNELBOOK_ROOT", str(inner))
    monkeypatch.delenv("KERNELBOOK_COMMIT", raising=False)
    assert results._git_commit().startswith("unknown")
    monkeypatch.setenv("KERNELBOOK_COMMIT", "0123456789ab")
    assert results._git_commit() == "0123456789ab"
    monkeypatch.delenv("KERNELBOOK_COMMIT")
    monkeypatch.setenv("KERNELBOOK_ROOT", str(ROOT))
    assert not results._git_commit().startswith("unknown")
