"""`rocmlab lab`'s JupyterLab settings (rocmlab.commands.lab): the course's folder goes first on JUPYTER_PATH and
JUPYTER_CONFIG_PATH (kept once, the user's own paths after it), and what it holds is what JupyterLab reads: a
federated extension whose entry file exists, and a settings default that turns the news pop-up off. The
browser test (tests/browser/test_browser_settings.py) checks both in a real JupyterLab."""

from __future__ import annotations

import json
import os

from rocmlab.commands.lab import JUPYTER_DIR, jupyter_env


def test_the_courses_folder_comes_first_once_and_keeps_the_users_paths():
    mine = f"/tmp/{os.urandom(3).hex()}"
    env = jupyter_env({"JUPYTER_PATH": mine, "HOME": "/h"})
    assert env["JUPYTER_PATH"].split(os.pathsep) == [str(JUPYTER_DIR), mine]
    assert env["JUPYTER_CONFIG_PATH"] == str(JUPYTER_DIR) and env["HOME"] == "/h"
    again = jupyter_env(env)
    assert again["JUPYTER_PATH"] == env["JUPYTER_PATH"]                  # not added twice
    assert jupyter_env({})["JUPYTER_PATH"] == str(JUPYTER_DIR)            # the control: nothing of the user's


def test_the_folder_holds_the_extension_and_the_news_default():
    ext = JUPYTER_DIR / "labextensions" / "rocmlab-hip-highlight"
    pkg = json.loads((ext / "package.json").read_text())
    entry = ext / pkg["jupyterlab"]["_build"]["load"]
    assert pkg["name"] == ext.name and entry.is_file()
    assert f'_JUPYTERLAB["{pkg["name"]}"]' in entry.read_text()        # the container JupyterLab looks up
    over = json.loads((JUPYTER_DIR / "labconfig" / "default_setting_overrides.d" / "rocmlab.json").read_text())
    assert over["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
