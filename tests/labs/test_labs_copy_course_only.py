"""``rocmlab labs DEST`` copies what a learner needs: the notebooks and the files they read, never the maintainers'
test set-up (conftest.py, nbval_sanitize.cfg), a learner's my-work/ or Jupyter's checkpoints."""

from __future__ import annotations

import os

from rocmlab import catalog
from rocmlab import paths

NOT_FOR_LEARNERS = ("conftest.py", "nbval_sanitize.cfg", "my-work", ".ipynb_checkpoints", "__pycache__")


def test_the_copy_of_a_used_labs_folder_holds_course_files_only(tmp_path):
    src = tmp_path / "labs"
    name = f"{os.urandom(3).hex()}.ipynb"
    for rel in (name, "exercises/01-x.ipynb", "conftest.py", "nbval_sanitize.cfg", "my-work/lab01/wave_sum.hip",
                "exercises/my-work/vector-add/vector_add.hip", f".ipynb_checkpoints/{name}", "__pycache__/conftest.pyc"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(rel)
    copied, kept = catalog.copy_labs(tmp_path / "dest", src=src)
    got = sorted(str(p.relative_to(tmp_path / "dest")) for p in copied)
    assert got == sorted([name, "exercises/01-x.ipynb"]) and kept == []
    # control: a learner's file of another name in a folder of the course is copied
    (src / "exercises" / "data.csv").write_text("1,2")
    copied, kept = catalog.copy_labs(tmp_path / "dest", src=src)
    assert [p.name for p in copied] == ["data.csv"] and len(kept) == 2


def test_the_courses_own_labs_copy_every_notebook_and_no_test_setup(tmp_path):
    copied, _ = catalog.copy_labs(tmp_path / "dest")
    names = {str(p.relative_to(tmp_path / "dest")) for p in copied}
    books = {str(p.relative_to(paths.labs_dir())) for p in paths.labs_dir().rglob("*.ipynb")
             if not any(s in p.parts for s in NOT_FOR_LEARNERS)}
    assert books and books <= names
    assert not [n for n in names if any(s in n.split("/") for s in NOT_FOR_LEARNERS)]
